"""Opt-in image history: with ``image_history=K`` each request carries only the last K images,
older ones replaced by a note after their captions; off by default; recorded with the run. Real
OpenAI client against the scripted server on 127.0.0.1, fake renderer."""

from __future__ import annotations

import json

from fakes import FakeRenderer, small_scene
from vlm_scripted import ScriptedServer
from spatialscout_gym.baselines.registry import make_agent
from spatialscout_gym.eval.running.runner import run_episode


def _run(tmp_path, name, **options):
    spec = small_scene(32, 32)
    with ScriptedServer(lambda step, body, fmt: [("capture_image", {})]) as server:
        agent = make_agent("openai:scripted", base_url=server.openai_url, api_key="x", model_call_budget=5,
                           **options)
        result = run_episode(agent, spec, tmp_path / name, renderer=FakeRenderer(spec), resolution=32,
                             image_budget=10)
        return result, list(server.requests)


def _images(request) -> int:
    return sum(1 for m in request["messages"] if isinstance(m["content"], list)
               for p in m["content"] if p["type"] == "image_url")


def test_keeps_the_last_k_images_and_every_caption(tmp_path):
    result, requests = _run(tmp_path, "k2", image_history=2)
    assert result["model"]["image_history"] == 2 and result["counters"]["images_used"] == 6
    assert [_images(r) for r in requests] == [1, 2, 2, 2, 2]
    last = json.dumps(requests[-1])
    for fid in range(5):   # every frame's caption is still sent; the old JPEGs are not
        assert f"Frame {fid}: camera at" in last
    assert "image of frame 0 not resent" in last and "image of frame 2 not resent" in last
    assert "image of frame 3 not resent" not in last
    trace = [json.loads(x) for x in (tmp_path / "k2" / "trace.jsonl").read_text().splitlines()]
    assert sum(1 for e in trace if e["event"] == "capture") == 6      # the episode itself is unchanged


def test_off_by_default_every_image_is_resent(tmp_path):
    result, requests = _run(tmp_path, "all")
    assert result["model"]["image_history"] is None
    assert [_images(r) for r in requests] == [1, 2, 3, 4, 5]
    assert "not resent" not in json.dumps(requests)


def test_cli_records_it_and_refuses_a_negative_count(tmp_path, capsys):
    from spatialscout_gym.cli.main import main
    out = tmp_path / "ev"
    with ScriptedServer(lambda step, body, fmt: [] if step else [("capture_image", {})]) as server:
        rc = main(["evaluate", "--agent", "openai:scripted", "--base-url", server.openai_url, "--api-key", "x",
                   "--scenes", "procedural:11", "--out", str(out), "--resolution", "32", "--image-history", "1",
                   "--no-progress"])
    assert rc == 0, capsys.readouterr()
    assert json.loads((out / "evaluate.json").read_text())["agent_options"]["image_history"] == 1
    capsys.readouterr()
    assert main(["run", "--agent", "openai:m", "--api-key", "x", "--scene", "procedural:11", "--out",
                 str(tmp_path / "bad"), "--image-history", "-1"]) == 2
    err = capsys.readouterr().err
    assert "--image-history must be >= 0" in err and len(err.strip().splitlines()) == 1
