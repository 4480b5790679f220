"""``spatialscout evaluate`` with a model agent: the model options reach the workers, the model
counters reach the report, and no API key is written to disk. Real ``openai`` client, scripted
model server on 127.0.0.1, SAPIEN on software Vulkan."""

from __future__ import annotations

import json

from vlm_scripted import ScriptedServer
from spatialscout_gym.cli.main import main

SECRET = "sk-test-not-a-real-key-123"


def _policy(step: int, body: dict, fmt: str):
    # one capture, then submit the origin for the first inventory id, then answer without tools
    if step == 0:
        return [("capture_image", {})]
    if step == 1:
        return [("list_entities", {})]
    return []


def test_evaluate_passes_model_options_and_keeps_the_key_off_disk(tmp_path, capsys):
    out = tmp_path / "ev"
    with ScriptedServer(_policy) as server:
        rc = main(["evaluate", "--agent", "openai:scripted", "--base-url", server.openai_url,
                   "--api-key", SECRET, "--scenes", "procedural:11", "--out", str(out),
                   "--resolution", "64", "--image-budget", "5", "--call-budget", "6",
                   "--reasoning-effort", "low", "--no-progress"])
        requests = list(server.requests)
    assert rc == 0, capsys.readouterr()
    # the model was really asked (three model calls: capture, list, a text answer that ends it)
    assert len(requests) == 3
    assert all(r.get("reasoning_effort") == "low" for r in requests)
    settings = json.loads((out / "evaluate.json").read_text())
    assert settings["agent_options"]["reasoning_effort"] == "low"
    assert settings["agent_options"]["model_call_budget"] == 6
    report = json.loads((out / "report.json").read_text())
    assert report["object_micro"]["num_targets"] > 0
    assert report["counters"]["model_calls"] == 3
    for path in out.rglob("*"):
        if path.is_file() and path.suffix in (".json", ".jsonl", ".md", ".txt"):
            assert SECRET not in path.read_text(), f"API key written to {path}"


def test_spend_of_a_failed_attempt_survives_the_redo(tmp_path, capsys, monkeypatch):
    import spatialscout_gym.conversation.providers as providers
    monkeypatch.setattr(providers.time, "sleep", lambda s: None)   # no real backoff waits
    out = tmp_path / "ev"
    argv = ["evaluate", "--agent", "openai:scripted", "--api-key", "local", "--scenes", "procedural:11",
            "--out", str(out), "--resolution", "32", "--image-budget", "3", "--call-budget", "4",
            "--no-progress"]
    # first run: the service fails all 3 HTTP attempts of the first model call -> a failed episode
    with ScriptedServer(_policy, fail={0: "500", 1: "500", 2: "500"}) as server:
        assert main(argv + ["--base-url", server.openai_url]) == 1
    first = json.loads((out / "report.json").read_text()) if (out / "report.json").is_file() else None
    assert first is None or first["failed_attempts_spend"]["episodes"] == 1
    # rerun: the episode is redone and succeeds; the failed attempt's spend is kept apart
    with ScriptedServer(_policy) as server:
        assert main(argv + ["--base-url", server.openai_url]) == 0
    assert "completed 1 of 1 episodes (100.0%), failed 0 (0.0%); 2 attempts, 1 failed" in capsys.readouterr().out
    report = json.loads((out / "report.json").read_text())
    assert report["counters"]["episodes"] == 1 and report["failures"] == []
    spent = report["failed_attempts_spend"]
    assert spent["episodes"] == 1 and spent["http_attempts"] == 3
    run = out / "procedural_11" / "seed_0"
    kept = run / "attempts" / "01"   # the failed attempt, complete, next to the successful rerun
    assert json.loads((kept / "result.json").read_text())["status"] == "failed"
    assert (kept / "trace.jsonl").is_file() and (kept / "harness.json").is_file()
    assert json.loads((run / "result.json").read_text())["attempt"] == 2
    assert report["episodes"]["attempts"] == 2 and report["episodes"]["failed_attempts"] == 1
    assert "Failed attempts (scored nowhere, but spent): 1 episodes" in (out / "report.md").read_text()
