"""Honest runs of every kind verify with ``--no-cache`` in a fresh process with a trimmed
environment (``env -i PATH=/usr/bin:/bin HOME=$HOME``, as the MCP launchers run it): chat
completions with a waited-out 429 and the service's prompt cache, the Responses API, ``anthropic:``
with cache-write and cache-read tokens, a request-cache replay with the server gone, a deterministic
model over three seeds (``repeated``), a reference agent and an NBV agent. Each record is the one its
trace derives (docs/verify.md); the cached and cache-write tokens it prices come from the trace.
Scripted servers on 127.0.0.1 with the real ``openai`` and ``anthropic`` clients; fake pixels for
the model and reference runs, a real SAPIEN render at 32 px for the NBV run."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from fakes import FakeRenderer
from spatialscout_gym.eval.running.evaluate import evaluate
from spatialscout_gym.eval.running.tasks import EvalSettings

REPO = Path(__file__).resolve().parents[1]
PRICES = {"scripted": {"input_per_mtok": 2.0, "output_per_mtok": 8.0, "cached_input_per_mtok": 0.5,
                       "cache_write_per_mtok": 2.5}}


def _policy(step: int, body: dict, fmt: str) -> list:
    """Capture, list, finish: chosen by how many assistant turns the conversation holds (any wire)."""
    msgs = body.get("messages") or body.get("input") or []
    k = sum(isinstance(m, dict) and m.get("role") == "assistant" for m in msgs)
    if fmt == "responses":
        k = step
    return [("capture_image", {})] if k == 0 else [("list_entities", {})] if k == 1 else []


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _model_run(d: Path, agent: str, url: str, seeds: int = 1, **agent_options) -> Path:
    settings = EvalSettings(agent, 3, None, 32, agent_options={"model_call_budget": 4, "price_table": PRICES,
                                                               **agent_options},
                            runtime_options={"base_url": url, "api_key": "local"})
    summary = evaluate(d, settings, ["procedural:6"], seeds=seeds, workers=1, progress=False,
                       renderer_factory=FakeRenderer, write_report=False)
    assert summary.total == seeds and not summary.failed, summary
    return d


@pytest.fixture(scope="module")
def kinds(tmp_path_factory) -> dict[str, Path]:
    import spatialscout_gym.conversation.providers as providers
    from vlm_scripted import ScriptedServer
    root = tmp_path_factory.mktemp("kinds")
    mp = pytest.MonkeyPatch()
    mp.setattr(providers.time, "sleep", lambda s: None)       # the 429's wait, recorded, not slept
    try:
        out: dict[str, Path] = {}
        with ScriptedServer(_policy, fail={1: "429:1"}) as server:
            out["chat, 429 waited out, prompt cache"] = _model_run(
                root / "chat", "openai:scripted", server.openai_url, request_cache=str(root / "cache"))
            assert len(server.arrivals) == 4            # three answered calls and one 429
        with ScriptedServer(_policy) as server:
            out["responses"] = _model_run(root / "responses", "openai-responses:scripted", server.openai_url)
        with ScriptedServer(_policy) as server:
            out["anthropic, cache tokens"] = _model_run(root / "anthropic", "anthropic:scripted",
                                                        server.anthropic_url)
        with ScriptedServer(_policy) as server:
            out["repeated over three seeds"] = _model_run(root / "repeated", "openai:scripted", server.openai_url,
                                                          seeds=3)
        # the request cache answers every call: no server listens at this address
        out["request-cache replay"] = _model_run(root / "replay", "openai:scripted",
                                                 f"http://127.0.0.1:{_closed_port()}/v1",
                                                 request_cache=str(root / "cache"))
        ref = evaluate(root / "reference", EvalSettings("oracle-explorer", 3, 8, 32), ["procedural:6"], seeds=1,
                       workers=1, progress=False, renderer_factory=FakeRenderer, write_report=False)
        assert ref.total == 1 and not ref.failed
        out["reference"] = root / "reference"
        return out
    finally:
        mp.undo()


def _verify_trimmed(d: Path) -> tuple[int, dict]:
    env = {"PATH": "/usr/bin:/bin", "HOME": os.environ.get("HOME", "/tmp"), "PYTHONPATH": str(REPO)}
    p = subprocess.run([sys.executable, "-m", "spatialscout_gym.cli.main", "verify", str(d), "--json", "--no-cache",
                        "--no-progress"], cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
    assert p.stdout.strip(), p.stderr[-2000:]
    return p.returncode, json.loads(p.stdout)


def _results(d: Path) -> list[dict]:
    return [json.loads(p.read_text()) for p in sorted(d.glob("*/seed_*/result.json"))]


@pytest.mark.parametrize("kind", ["chat, 429 waited out, prompt cache", "responses", "anthropic, cache tokens",
                                  "repeated over three seeds", "request-cache replay", "reference"])
def test_every_honest_kind_verifies_in_a_trimmed_environment(kinds, kind):
    d = kinds[kind]
    code, out = _verify_trimmed(d)
    statuses = [e["status"] for e in out["dirs"][str(d)]]
    assert code == 0 and out["verified"], (kind, out)
    assert statuses == (["repeated"] * 3 if kind.startswith("repeated") else ["verified"]), statuses


def test_the_waited_429_and_the_cache_tokens_are_in_the_record(kinds):
    chat = _results(kinds["chat, 429 waited out, prompt cache"])[0]["model"]
    claude = _results(kinds["anthropic, cache tokens"])[0]["model"]
    replay = _results(kinds["request-cache replay"])[0]["model"]
    assert chat["cached_input_tokens"] > 0 and claude["cache_write_input_tokens"] > 0
    assert claude["cached_input_tokens"] > 0
    # on an all-live episode what was paid is what the episode costs, cached tokens priced alike
    assert chat["cost_incurred_usd"] == pytest.approx(chat["cost_usd"], rel=1e-12)
    # the same token totals as the chat run; the 1,100 cache-write tokens at their own price
    assert claude["cost_usd"] == pytest.approx(chat["cost_usd"] + 1100 * (2.5 - 2.0) / 1e6, rel=1e-12)
    # a replay from the request cache pays nothing, and its episode costs what the live one did
    assert replay["cost_incurred_usd"] == 0 and replay["cost_usd"] == pytest.approx(chat["cost_usd"], rel=1e-12)


@pytest.mark.render
def test_an_nbv_run_verifies_in_a_trimmed_environment(tmp_path):
    d = tmp_path / "nbv"
    summary = evaluate(d, EvalSettings("random-nbv", 6, None, 32), ["Apartment_13"], seeds=1, workers=1,
                       progress=False, write_report=False)
    assert summary.total == 1 and not summary.failed
    code, out = _verify_trimmed(d)
    assert code == 0 and [e["status"] for e in out["dirs"][str(d)]] == ["verified"], out


def test_a_misspelt_price_is_refused_not_priced_at_the_input_rate(tmp_path, capsys):
    """A price-table key the pricing function does not read would be dropped, and the tokens it
    names priced at the input rate: the file is refused in one line naming the entry and the key."""
    from spatialscout_gym.cli.main import main
    table = tmp_path / "prices.json"
    table.write_text(json.dumps({"scripted": {"input_per_mtok": 2.0, "output_per_mtok": 8.0,
                                              "cache_write_input_per_mtok": 2.5}}))
    code = main(["evaluate", "--agent", "openai:scripted", "--price-table", str(table), "--scenes", "procedural:6",
                 "--base-url", f"http://127.0.0.1:{_closed_port()}/v1", "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert code == 2 and "'cache_write_input_per_mtok'" in err and "'scripted'" in err, err
    assert len(err.strip().splitlines()) == 1 and not (tmp_path / "out").exists()
