"""The cost cap keeps what was paid for (docs/models.md, "Cost before and during"): with 2 workers,
an episode whose last request is in flight when the other worker's episode ends at the cap
finishes and is kept; no episode starts after the cap; every answered request is in a kept
episode or failed attempt, and the ledger is their cost. Raising the cap resumes the evaluation
to completion; a resume with another protocol setting is refused naming that setting alone.
Real ``openai`` client against the scripted server on 127.0.0.1; fake renderer at 32 px."""

from __future__ import annotations

import hashlib
import json
import threading
import time

import pytest

from fakes import SCRIPTED_PRICES, FakeRenderer, small_scene, write_price_table
from vlm_scripted import CAPTURE, FINISH, SUBMIT_CHAIR, ScriptedServer, replies_by_turn

PRICE = SCRIPTED_PRICES   # a call: $0.012 + $0.00001 x step
CAP = 0.14   # reached by the 12th answered call ($0.1447), not by the 11th ($0.1326)
TURNS = [CAPTURE, *[SUBMIT_CHAIR] * 6, FINISH]   # 8 model calls


def _scenes(tmp_path, n):
    out = []
    for i in range(n):
        path = tmp_path / f"room_{i}.json"
        path.write_text(small_scene(32, 32, scene_id=f"room-{i}").to_json())
        out.append(str(path))
    return out


def _settings(tmp_path, server, **options):
    from spatialscout_gym.eval.running.evaluate import EvalSettings
    prices = write_price_table(tmp_path)
    digest = hashlib.sha256(prices.read_bytes()).hexdigest()   # as the CLI records it: verify reads the table
    return EvalSettings("openai:scripted", 4, None, 32,
                        agent_options={"model_call_budget": 8, "price_table": str(prices),
                                       "price_table_sha256": digest, **options},
                        runtime_options={"base_url": server.openai_url, "api_key": "x"})


def _results(out):
    """Every result.json kept: latest attempts and archived ones."""
    return [json.loads(p.read_text()) for p in sorted(out.rglob("result.json"))]


def _held_last_call(out):
    """A policy that holds the first episode to reach its 8th (last) call until the other episode
    has ended at the cap (its failed run directory written), then a second more: the old driver
    killed the held episode's worker meanwhile. The second episode's first call waits until the
    first has sent its last one, so one runs ahead: two workers in lockstep would reach the cap
    together, before either sends its last call."""
    base = replies_by_turn(*TURNS)
    held = threading.Event()
    openings = []
    lock = threading.Lock()

    def policy(step, body, fmt):
        turn = sum(1 for m in body.get("messages", []) if m.get("role") == "assistant")
        if turn == 0:
            with lock:
                openings.append(step)
                second = len(openings) == 2
            if second:
                held.wait(120)
        if turn == 7 and not held.is_set():
            held.set()
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline and not any(
                    r.get("status") == "failed" for r in _results(out)):
                time.sleep(0.05)
            time.sleep(1.0)
        return base(step, body, fmt)
    return policy


def test_a_capped_run_keeps_every_answered_episode_and_a_higher_cap_resumes(tmp_path):
    from spatialscout_gym.conversation.spend import read_spend
    from spatialscout_gym.eval.analysis.recorded_spend import recorded_spend
    from spatialscout_gym.eval.running.evaluate import SettingsMismatchError, evaluate
    scenes, out = _scenes(tmp_path, 3), tmp_path / "ev"
    with ScriptedServer(_held_last_call(out)) as server:
        summary = evaluate(out, _settings(tmp_path, server, max_cost_usd=CAP), scenes, workers=2, progress=False,
                           renderer_factory=FakeRenderer)
        answered = len(server.requests)
        kept = _results(out)
        assert summary.cost_capped
        # 7 calls of the held episode + 5 of the other reach the cap; the held 8th is answered too
        assert answered == 13
        assert sum(r["model"]["model_calls"] for r in kept) == answered     # every answered call is kept
        assert sorted(r["status"] for r in kept) == ["failed", "ok"]
        failed = next(r for r in kept if r["status"] == "failed")
        assert failed["error_type"] == "CostCapReached" and (out / failed["scene_id"].replace("-", "_")
                                                             / "seed_0" / "trace.jsonl").is_file()
        assert not (out / "room_2").exists()                                # nothing started after the cap
        ledger = read_spend(out / "spend.json")
        assert ledger >= CAP and ledger == pytest.approx(recorded_spend(out).usd, rel=1e-12)
        report = (out / "report.md").read_text()
        assert "Stopped at the cap" in report and "1 planned episode(s) were not started (missing)" in report
        assert "1 planned episode(s) missing" in report and "diverged" not in report

        # another protocol setting (and another cap) is refused naming that setting alone
        with pytest.raises(SettingsMismatchError) as refused:
            evaluate(out, _settings(tmp_path, server, max_cost_usd=1.0, prompt_style="detailed"), scenes,
                     progress=False, renderer_factory=FakeRenderer)
        msg = str(refused.value)
        assert "agent_options.prompt_style" in msg and "--prompt " in msg and "\n" not in msg
        assert "max_cost_usd" not in msg and "--agent" not in msg and "model_call_budget" not in msg

        # a higher cap is a runtime limit: the evaluation resumes to completion
        again = evaluate(out, _settings(tmp_path, server, max_cost_usd=1.0), scenes, workers=2, progress=False,
                         renderer_factory=FakeRenderer)
        answered = len(server.requests)
    assert not again.cost_capped and not again.failed and again.skipped == 1 and again.ran == 2
    assert json.loads((out / "evaluate.json").read_text())["agent_options"]["max_cost_usd"] == 1.0
    kept = _results(out)
    assert sum(r["model"]["model_calls"] for r in kept) == answered
    assert [r["status"] for r in kept].count("ok") == 3 and len(kept) == 4      # the capped attempt archived
    assert read_spend(out / "spend.json") == pytest.approx(recorded_spend(out).usd, rel=1e-12)
    assert "Stopped at the cap" not in (out / "report.md").read_text()


def test_the_report_of_a_run_capped_before_any_episode_completed_counts_missing_as_missing(tmp_path):
    from spatialscout_gym.eval.running.evaluate import evaluate
    scenes, out = _scenes(tmp_path, 2), tmp_path / "ev"
    with ScriptedServer(replies_by_turn(*TURNS)) as server:
        summary = evaluate(out, _settings(tmp_path, server, max_cost_usd=0.001), scenes, progress=False,
                           renderer_factory=FakeRenderer)
        assert len(server.requests) == 1                    # the first call reached the cap; nothing after it
    assert summary.cost_capped and summary.ran == 0
    report = (out / "report.md").read_text()
    assert "Stopped at the cap" in report and "1 episode(s) ended at the cap" in report
    assert "1 planned episode(s) were not started (missing)" in report
    assert "Verified: nothing to re-execute (no completed episode); 1 planned episode(s) missing" in report
    assert "diverged" not in report and "catalog version: None" not in report
    assert json.loads((out / "report.json").read_text())["cost_cap"]["reached"] is True
