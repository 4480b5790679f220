"""The model-request cache against a scripted model server on 127.0.0.1 (the real ``openai``
client): a rerun of an attempt that failed at call k sends exactly (calls - k) live requests,
another seed samples anew, and a corrupted or foreign entry is refused."""

from __future__ import annotations

import json

import pytest

from fakes import FakeRenderer, small_scene
from vlm_scripted import ScriptedServer
from spatialscout_gym.baselines.registry import make_agent
from spatialscout_gym.eval.running.runner import run_episode

STEPS = [[("move_camera", {"right": 0.5})], [("capture_image", {})], [("rotate_camera", {"yaw": 10})],
         [("submit_positions", {"positions": {"chair_1": [2.0, 0.0, 0.0]}})], [("finish_mapping", {})]]


def _episode(server, cache, out, seed=0):
    spec = small_scene(32, 32)
    agent = make_agent("openai:scripted", base_url=server.openai_url, api_key="local", model_call_budget=10,
                       attempts=1, request_cache=str(cache))
    return run_episode(agent, spec, out, seed=seed, resolution=32, renderer=FakeRenderer(spec), image_budget=4)


def test_rerun_after_failure_replays_paid_calls_and_continues_live(tmp_path):
    cache = tmp_path / "cache"
    k = 3                                           # the 4th request (call index 3) fails
    with ScriptedServer(lambda step, body, fmt: STEPS[step] if step < len(STEPS) else [], fail={k: "500"}) as server:
        first = _episode(server, cache, tmp_path / "a1")
        assert first["status"] == "failed" and server.http_requests == k + 1
        before = server.http_requests
        second = _episode(server, cache, tmp_path / "a2")
        assert second["status"] == "ok" and second["end_reason"] == "finish_mapping"
        calls = second["model"]["model_calls"]
        assert calls == len(STEPS)
        assert server.http_requests - before == calls - k          # only the unpaid calls go out
        rec = json.loads((tmp_path / "a2" / "request_cache.json").read_text())
        assert [c["cached"] for c in rec["calls"]] == [True] * k + [False] * (calls - k)
        assert second["model"]["request_cache"] == {"cached_calls": k, "live_calls": calls - k}
        trace = [json.loads(line) for line in (tmp_path / "a2" / "trace.jsonl").read_text().splitlines()]
        assert [e["cached"] for e in trace if e["event"] == "model_response"] == [True] * k + [False] * (calls - k)
        assert second["model"]["usage_incurred"]["input_tokens"] < second["model"]["usage"]["input_tokens"]
        assert json.loads((tmp_path / "a2" / "harness.json").read_text())["request_cache"] is True
        # the same episode under another seed samples anew: nothing is answered from the cache
        before = server.http_requests
        third = _episode(server, cache, tmp_path / "b", seed=1)
        assert third["model"]["request_cache"]["cached_calls"] == 0
        assert server.http_requests - before == third["model"]["model_calls"]


@pytest.mark.parametrize("damage", ["truncate", "foreign", "edited"])
def test_corrupted_or_foreign_entries_are_refused(tmp_path, damage):
    cache = tmp_path / "cache"
    with ScriptedServer(lambda step, body, fmt: STEPS[step] if step < len(STEPS) else []) as server:
        assert _episode(server, cache, tmp_path / "a")["status"] == "ok"
        entries = sorted(cache.glob("*.json"))
        victim = entries[0]
        text = victim.read_text()
        if damage == "truncate":
            victim.write_text(text[: len(text) // 2])
        elif damage == "foreign":
            victim.write_text(json.dumps({**json.loads(text), "key": "0" * 64}))
        else:
            e = json.loads(text)
            e["response"]["choices"][0]["message"]["content"] = "edited"
            victim.write_text(json.dumps(e))
        damaged = victim.read_text()
        again = _episode(server, cache, tmp_path / "b")
    assert again["status"] == "failed" and "RequestCacheError" in again["error"]
    assert str(victim.name) in again["error"] and victim.read_text() == damaged     # refused, not replaced



def test_a_fully_cached_rerun_needs_no_live_endpoint(tmp_path, capsys):
    """With the server gone, the CLI's endpoint check still runs whatever the cache holds (a wrong
    --base-url is one line), is skipped only offline (and says so), and the rerun answers every
    request from the cache: 0 live requests, the same scores."""
    from spatialscout_gym.cli.options import preflight
    from spatialscout_gym.conversation.providers import PreflightError
    cache = tmp_path / "cache"
    with ScriptedServer(lambda step, body, fmt: STEPS[step] if step < len(STEPS) else []) as server:
        first = _episode(server, cache, tmp_path / "live")
        url, live = server.openai_url, len(server.requests)
    assert live == len(STEPS) and first["end_reason"] == "finish_mapping"

    def agent(cache_dir):
        return make_agent("openai:scripted", base_url=url, api_key="local", model_call_budget=10, attempts=1,
                          request_cache=str(cache_dir))

    preflight(agent(cache), str(cache), offline=True)         # the server is down: no error offline
    assert "offline: no endpoint check" in capsys.readouterr().out
    for cache_dir in (cache, tmp_path / "empty"):              # checked whatever the cache holds
        with pytest.raises(PreflightError, match="cannot reach") as refused:
            preflight(agent(cache_dir), str(cache_dir))
        assert f"cannot reach {url} " in str(refused.value)   # the endpoint as typed (it holds no secret)
    spec = small_scene(32, 32)
    result = run_episode(agent(cache), spec, tmp_path / "replayed", resolution=32, renderer=FakeRenderer(spec),
                         image_budget=4)
    assert result["status"] == "ok" and result["model"]["request_cache"] == {"cached_calls": live, "live_calls": 0}
    assert result["all"] == first["all"] and result["end_reason"] == "finish_mapping"


def test_a_responses_reply_without_optional_usage_fields_replays(tmp_path):
    """A Responses reply that leaves out fields the SDK declares (``cache_write_tokens``, as
    OpenAI-compatible servers do) is stored with them as None and replayed as the SDK read it live."""
    spec = small_scene(32, 32)

    def episode(server, out):
        agent = make_agent("openai-responses:scripted", base_url=server.openai_url, api_key="local",
                           model_call_budget=4, attempts=1, request_cache=str(tmp_path / "cache"))
        return run_episode(agent, spec, out, resolution=32, renderer=FakeRenderer(spec), image_budget=4)

    with ScriptedServer(lambda step, body, fmt: STEPS[1:][step] if step < 4 else []) as server:
        live = episode(server, tmp_path / "live")
        sent = server.http_requests
        replayed = episode(server, tmp_path / "replay")
        assert server.http_requests == sent      # every request answered from the cache
    assert live["status"] == replayed["status"] == "ok", replayed.get("error")
    assert replayed["model"]["usage"] == live["model"]["usage"] and replayed["all"] == live["all"]
