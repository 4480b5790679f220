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
