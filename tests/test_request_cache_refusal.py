"""A cached rerun is offline even after a refused reasoning effort: the refused first request is
cached too (as a refusal), so ``evaluate`` with the same request cache into a new directory, whose
run has not heard of the refusal, completes with the endpoint down. Real ``openai`` client
against a scripted server on 127.0.0.1 that refuses the effort and is then stopped; the fake
renderer at 32 px."""

from __future__ import annotations

import json

from fakes import FakeRenderer, small_scene
from vlm_scripted import ScriptedServer, capture_finish
from spatialscout_gym.eval.running.evaluate import EvalSettings, evaluate


def test_a_cached_rerun_after_a_refused_effort_needs_no_endpoint(tmp_path, monkeypatch):
    import spatialscout_gym.conversation.providers as providers
    monkeypatch.setattr(providers.time, "sleep", lambda s: None)      # a live call would fail fast, not hang
    scenes = []
    for k in range(3):
        p = tmp_path / f"room-{k}.json"
        p.write_text(small_scene(32, 32, yaw_deg=15.0 * k, scene_id=f"room-{k}").to_json())
        scenes.append(str(p))
    cache = tmp_path / "cache"

    def settings(url: str) -> EvalSettings:
        return EvalSettings("openai:scripted", 4, None, 32,
                            agent_options={"model_call_budget": 4, "request_cache": str(cache)},
                            runtime_options={"base_url": url, "api_key": "x"})

    with ScriptedServer(capture_finish, refuse_params={"reasoning_effort"}) as server:
        first = evaluate(tmp_path / "live", settings(server.openai_url), scenes, progress=False,
                         renderer_factory=FakeRenderer)
        url = server.openai_url
        assert len(server.refused_requests) == 1                       # refused once in the run
    assert first.ran == 3 and not first.failed
    refusals = [e for p in cache.glob("*.json") if (e := json.loads(p.read_text())).get("refusal")]
    assert len(refusals) == 1 and refusals[0]["response"]["status"] == 400
    # the server is gone: a new directory, the same cache
    again = evaluate(tmp_path / "offline", settings(url), scenes, progress=False, renderer_factory=FakeRenderer)
    assert again.ran == 3 and not again.failed, [o.error for o in again.failed]
    for k in range(3):
        live = json.loads((tmp_path / "live" / f"room-{k}" / "seed_0" / "result.json").read_text())
        off = json.loads((tmp_path / "offline" / f"room-{k}" / "seed_0" / "result.json").read_text())
        assert off["model"]["request_cache"]["live_calls"] == 0
        assert off["all"] == live["all"] and off["counters"] == live["counters"]
    refused_first = json.loads((tmp_path / "offline" / "reasoning_effort.json").read_text())["refused"]
    assert list(refused_first) == ["reasoning_effort"]                 # learnt from the cached refusal
