"""Money spent stays spent (docs/models.md, "Cost before and during"): the cap holds at its exact
boundary; a ``spend.json`` that cannot be read (not JSON, not a finite total >= 0, a FIFO, a
directory, a link) stops the run in one line naming it and the command that rebuilds it, is never
reset and never written through; ``spatialscout spend DIR --rebuild`` rebuilds it from the recorded
calls. The same for ``rate_limit.json``: entries out of range are dropped with a note, a wrong
shape or a link is refused. The evaluations run the real ``openai`` client against the scripted
server on 127.0.0.1, which counts the requests; fake renderer."""

from __future__ import annotations

import json
import os
import threading

import pytest

from fakes import SCRIPTED_PRICES, FakeRenderer, small_scene, write_price_table
from vlm_scripted import ScriptedServer, capture_submit_finish
from spatialscout_gym.cli.main import main
from spatialscout_gym.conversation.rate_limits import RateLimiter, RateLimitFileError
from spatialscout_gym.conversation.spend import CostCapReached, SpendLedger, SpendLedgerError, read_spend

PRICE = SCRIPTED_PRICES
BAD_TEXTS = ["zz", "[]", '{"usd": 0.9', '{"usd": NaN}', '{"usd": -Infinity}', '{"usd": -100}',
             '{"usd": "abc"}', '{"usd": null}', "null", "", '{"usd": 1e999}', '{"usd": 0.5, "calls": -1}']


def _bounded(fn, *args):
    """``fn(*args)`` in a thread: its exception or result, or a failure when it is still running
    after a generous while (a read that blocks on a FIFO)."""
    box: dict = {}

    def go() -> None:
        try:
            box["value"] = fn(*args)
        except BaseException as exc:  # handed to the test
            box["error"] = exc
    t = threading.Thread(target=go, daemon=True)
    t.start()
    t.join(30)
    assert not t.is_alive(), f"{fn.__name__} blocked"
    if "error" in box:
        raise box["error"]
    return box.get("value")


def _check(path):
    SpendLedger(cap_usd=1.0, path=path).check()


@pytest.mark.parametrize("usd, reached", [(0.5, True), (0.75, True), (0.4999999, False)])
def test_the_cap_is_reached_at_exactly_its_amount(tmp_path, usd, reached):
    path = tmp_path / "spend.json"
    path.write_text(json.dumps({"usd": usd, "calls": 2}))
    ledger = SpendLedger(cap_usd=0.5, path=path)
    assert ledger.reached() is reached
    memory = SpendLedger(cap_usd=0.5)
    memory.add(0.25)
    memory.add(usd - 0.25)
    assert memory.reached() is reached
    if reached:
        with pytest.raises(CostCapReached):
            ledger.check()


@pytest.mark.parametrize("text", BAD_TEXTS)
def test_an_unreadable_ledger_is_refused_in_one_line_and_never_reset(tmp_path, text):
    path = tmp_path / "spend.json"
    path.write_text(text)
    for fn in (_check, lambda p: SpendLedger(cap_usd=1.0, path=p).add(0.01), read_spend):
        with pytest.raises(SpendLedgerError) as err:
            fn(path)
        message = str(err.value)
        assert "\n" not in message and str(path) in message
        assert f"spatialscout spend {tmp_path} --rebuild" in message
    assert path.read_text() == text                # nothing written over it


@pytest.mark.parametrize("kind", ["fifo", "directory", "link", "dangling link", "device link"])
def test_a_ledger_that_is_not_a_regular_file_is_refused_and_never_followed(tmp_path, kind):
    path = tmp_path / "spend.json"
    notes = tmp_path / "notes.txt"
    notes.write_text("my notes\n")
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "directory":
        path.mkdir()
    elif kind == "link":
        path.symlink_to(notes)
    elif kind == "dangling link":
        path.symlink_to(tmp_path / "nowhere.json")
    else:
        path.symlink_to("/dev/zero")
    for fn in (_check, lambda p: SpendLedger(cap_usd=1.0, path=p).add(0.5), read_spend):
        with pytest.raises(SpendLedgerError) as err:
            _bounded(fn, path)
        assert "\n" not in str(err.value) and str(path) in str(err.value)
    assert notes.read_text() == "my notes\n" and not (tmp_path / "nowhere.json").exists()


def _scenes(tmp_path, n):
    out = []
    for i in range(n):
        path = tmp_path / f"room_{i}.json"
        path.write_text(small_scene(32, 32, scene_id=f"room-{i}").to_json())
        out.append(str(path))
    return out


def _evaluate(tmp_path, server, scenes, out, **options):
    from spatialscout_gym.eval.running.evaluate import EvalSettings, evaluate
    prices = write_price_table(tmp_path)
    settings = EvalSettings("openai:scripted", 4, None, 32,
                            agent_options={"model_call_budget": 6, "price_table": str(prices), **options},
                            runtime_options={"base_url": server.openai_url, "api_key": "x"})
    return evaluate(out, settings, scenes, progress=False, renderer_factory=FakeRenderer)


@pytest.mark.parametrize("plant", ['{"usd": 0.9', '{"usd": -100}', "link"])
def test_evaluate_with_a_cap_and_a_broken_ledger_sends_no_request(tmp_path, capsys, plant):
    out = tmp_path / "ev"
    out.mkdir()
    notes = tmp_path / "notes.txt"
    notes.write_text("my notes\n")
    if plant == "link":
        (out / "spend.json").symlink_to(notes)
    else:
        (out / "spend.json").write_text(plant)
    prices = write_price_table(tmp_path)
    scenes = _scenes(tmp_path, 2)
    with ScriptedServer(capture_submit_finish) as server:
        code = main(["evaluate", "--agent", "openai:scripted", "--base-url", server.openai_url, "--api-key", "x",
                     "--scenes", *scenes, "--out", str(out), "--resolution", "32", "--image-budget", "4",
                     "--call-budget", "6", "--price-table", str(prices), "--no-progress", "--max-cost-usd", "1"])
        err = capsys.readouterr().err.strip()
        assert code == 2 and server.http_requests == 0
        assert len(err.splitlines()) == 1 and "spend.json" in err and "--rebuild" in err
        # the library entry point, past the CLI's check: the first episode's refusal stops the run
        from spatialscout_gym.eval.running.evaluate import BatchStoppedError
        with pytest.raises(BatchStoppedError, match="SpendLedgerError"):
            _evaluate(tmp_path, server, scenes, out, max_cost_usd=1.0)
        assert server.http_requests == 0
    assert notes.read_text() == "my notes\n"
    assert (out / "spend.json").is_symlink() if plant == "link" else (out / "spend.json").read_text() == plant


def test_the_rebuild_restores_the_recorded_spend_and_replaces_a_link_not_its_target(tmp_path, capsys):
    out = tmp_path / "ev"
    scenes = _scenes(tmp_path, 2)
    with ScriptedServer(capture_submit_finish) as server:
        summary = _evaluate(tmp_path, server, scenes, out, max_cost_usd=5.0)
    assert summary.ran == 2
    paid = json.loads((out / "spend.json").read_text())["usd"]
    recorded = sum(json.loads((out / f"room_{k}" / "seed_0" / "result.json").read_text())["model"]["cost_usd"]
                   for k in range(2))
    assert paid > 0 and abs(paid - recorded) < 1e-9
    notes = tmp_path / "notes.txt"
    notes.write_text("my notes\n")
    (out / "spend.json").unlink()
    (out / "spend.json").symlink_to(notes)
    assert main(["spend", str(out)]) == 0 and "unreadable" in capsys.readouterr().out
    assert main(["spend", str(out), "--rebuild"]) == 0
    assert not (out / "spend.json").is_symlink() and notes.read_text() == "my notes\n"
    assert abs(read_spend(out / "spend.json") - recorded) < 1e-9
    # a ledger that can be read is never lowered by a rebuild
    (out / "spend.json").write_text(json.dumps({"usd": 7.5, "calls": 9}))
    assert main(["spend", str(out), "--rebuild"]) == 0 and read_spend(out / "spend.json") == 7.5


def test_a_rate_window_with_entries_out_of_range_drops_them_with_a_note(tmp_path, capsys):
    path = tmp_path / "rate_limit.json"
    path.write_text('{"events": [[4e9, 10, "a"], [1e18, 10, "b"], [Infinity, 10, "c"], [5.0, 1e400, "d"], '
                    '"junk", [99.0, 10, "kept"]], "last_tokens": 0, "stray": NaN}')
    slept: list[float] = []
    limiter = RateLimiter(requests_per_minute=2, path=path, sleep=slept.append, clock=lambda: 100.0)
    key, waits = limiter.acquire(10)
    assert waits == [] and slept == []           # the entry of the last minute left room for this one
    kept = json.loads(path.read_text())["events"]
    assert [e[2] for e in kept] == ["kept", key] and "stray" not in json.loads(path.read_text())
    assert "dropped 5 entries" in capsys.readouterr().err


@pytest.mark.parametrize("plant", ['{"events": 5}', '{"last_tokens": "x"}', "zz", "[]", "link", "fifo"])
def test_a_rate_window_of_the_wrong_shape_or_a_link_is_refused_in_one_line(tmp_path, plant):
    path = tmp_path / "rate_limit.json"
    notes = tmp_path / "notes.txt"
    notes.write_text("my notes\n")
    if plant == "link":
        path.symlink_to(notes)
    elif plant == "fifo":
        os.mkfifo(path)
    else:
        path.write_text(plant)
    limiter = RateLimiter(requests_per_minute=5, path=path, sleep=lambda s: None)
    with pytest.raises(RateLimitFileError) as err:
        _bounded(limiter.acquire, 10)
    assert "\n" not in str(err.value) and str(path) in str(err.value)
    assert notes.read_text() == "my notes\n"
    if plant not in ("link", "fifo"):
        assert path.read_text() == plant
