"""ToolCallWrapper over the env on the fake renderer: schemas, budgets and reminders (through the
real OpenAI client and the scripted server), passive mode, and a fuzz test of malformed tool calls."""

from __future__ import annotations

import json

import gymnasium as gym
import jsonschema
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fakes import FakeRenderer, small_scene
from vlm_scripted import ScriptedServer
from spatialscout_gym.baselines.passive import capture_scripted_views, scripted_path
from spatialscout_gym.baselines.registry import make_agent
from spatialscout_gym.conversation.codecs import anthropic_messages, chat_completions
from spatialscout_gym.episode import TOOL_NAMES, Episode
from spatialscout_gym.eval.running.runner import run_episode
from spatialscout_gym.wrappers.tool_call import (CAMERA_TOOLS, PASSIVE_TOOLS, EpisodeOverError, ModelReply, ToolCall,
                                                 ToolCallWrapper)


def _episode(res=32, **kw) -> Episode:
    spec = small_scene(res, res)
    return Episode(spec.public, FakeRenderer(spec), tool_call_budget=None, **kw)


def _wrapper(res=32, image_budget=100, model_call_budget=5, **kw) -> ToolCallWrapper:
    """A ToolCallWrapper over the registered env on the fake renderer, after reset."""
    spec = small_scene(res, res)
    env = gym.make("SpatialScout/Procedural-v0", scene=spec, renderer=FakeRenderer(spec), resolution=res,
                   image_budget=image_budget, tool_call_budget=None)
    w = ToolCallWrapper(env, model_call_budget=model_call_budget, **kw)
    w.reset(seed=0)
    return w


def test_tool_schemas_two_renderings_of_one_source():
    oa, an = chat_completions.tools(), anthropic_messages.tools()
    assert [t["function"]["name"] for t in oa] == [t["name"] for t in an] == list(TOOL_NAMES)
    for o, a in zip(oa, an):
        assert o["type"] == "function" and o["function"]["parameters"] == a["input_schema"]
        jsonschema.Draft202012Validator.check_schema(a["input_schema"])
    schema = {t["name"]: t["input_schema"] for t in an}
    jsonschema.validate({"observations": [{"frame_id": 0, "u": 1.5, "v": 2}] * 2}, schema["triangulate_observations"])
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"positions": {"chair_1": [1, 2]}}, schema["submit_positions"])


def test_budget_edges_and_reminders_through_openai_client(tmp_path):
    """B = 12: reminders before requests 3 and 10 (10 and 3 calls left); the 12th call ends it."""
    spec = small_scene(32, 32)
    with ScriptedServer(lambda step, body, fmt: [("capture_image", "{}")]) as server:
        agent = make_agent("openai:scripted", base_url=server.openai_url, api_key="x", model_call_budget=12)
        result = run_episode(agent, spec, tmp_path / "b", renderer=FakeRenderer(spec), resolution=32,
                             image_budget=8)
    assert result["end_reason"] == "model_call_budget" and len(server.requests) == 12
    with_reminder = [i for i, r in enumerate(server.requests)
                     if "REMINDER" in json.dumps(r["messages"][-1])]
    assert with_reminder == [2, 9]
    assert "10 model calls remain" in json.dumps(server.requests[2]) and "3 model calls remain" in json.dumps(server.requests[9])
    # V = 8: captures 8.. are refused with a reason the model reads, the episode goes on
    assert result["counters"]["images_used"] == 8
    assert "image budget of 8 images" in json.dumps(server.requests[8]["messages"][-1])


def test_hundredth_model_call_ends_and_101st_capture_refused():
    w = _wrapper(image_budget=100, model_call_budget=100)
    for k in range(100):
        assert not w.done
        _, _, terminated, truncated, _ = w.step(ModelReply(tool_calls=[ToolCall(f"c{k}", "capture_image", "{}")]))
    assert (terminated, truncated) == (False, True)
    assert w.end_reason == "model_call_budget" and w.episode.images_used == 100
    last = json.loads(w.messages[-1].text)
    assert not last["ok"] and "image budget of 100" in last["error"]
    with pytest.raises(EpisodeOverError, match="ended"):
        w.step([{"name": "capture_image", "arguments": {}}])


def test_reply_without_tool_call_ends_and_finish_skips_rest():
    w = _wrapper()
    _, _, terminated, _, info = w.step(ModelReply(tool_calls=[
        ToolCall("a", "submit_positions", {"positions": {"chair_1": [1, 1, 0]}}),
        ToolCall("b", "finish_mapping", "{}"), ToolCall("c", "capture_image", "{}")]))
    assert terminated and w.end_reason == "finish_mapping" and w.episode.end_reason == "finish_mapping"
    assert w.episode.images_used == 1 and "metrics" in info
    assert "skipped" in w.messages[-1].text
    w2 = _wrapper()
    _, _, terminated, truncated, info = w2.step(ModelReply(text="I think I am done"))
    assert (terminated, truncated) == (True, False) and w2.end_reason == info["end_reason"] == "no_tool_call"


def test_passive_views_same_for_every_run_and_camera_tools_refused():
    a, b = _episode(res=48), _episode(res=48)
    fa, fb = capture_scripted_views(a, 12), capture_scripted_views(b, 12)
    assert fa == fb == list(range(12))
    assert all(np.array_equal(a.frames[i].image, b.frames[i].image) for i in fa)
    assert len({a.frames[i].image.tobytes() for i in fa}) == 12  # 12 distinct views
    w = _wrapper(res=48, passive_views=12, passive_path=scripted_path())   # the same views, as env steps
    assert sorted(w.episode.frames) == fa
    assert all(np.array_equal(a.frames[i].image, w.episode.frames[i].image) for i in fa)
    assert len(w.messages[1].images) == 12 and "from 12 fixed images" in w.messages[0].text
    assert not any(t in w.messages[0].text for t in CAMERA_TOOLS)   # passive mode's own prompt
    assert w.tool_names == PASSIVE_TOOLS
    results, *_ = w.step(ModelReply(tool_calls=[ToolCall(str(i), t, "{}") for i, t in enumerate(CAMERA_TOOLS)]
                                    + [ToolCall("p", "get_camera_pose", "{}")]))
    assert all(m.is_error and "disabled in passive mode" in m.text for m in results[:-1])
    assert not results[-1].is_error and w.episode.images_used == 12


def test_adapters_keep_provider_rules():
    w = _wrapper(prompt_style="detailed")
    w.step(ModelReply(tool_calls=[ToolCall("x", "capture_image", "{}"), ToolCall("y", "get_camera_pose", "")]))
    oa = chat_completions.messages(w.messages)
    assert [m["role"] for m in oa] == ["system", "user", "assistant", "tool", "tool", "user"]
    assert oa[-1]["content"][-1]["type"] == "image_url"
    system, an = anthropic_messages.messages(w.messages)
    assert system.startswith("You are mapping") and [m["role"] for m in an] == ["user", "assistant", "user"]
    types = [b["type"] for b in an[-1]["content"]]
    assert types == ["tool_result", "tool_result"]
    assert any(b["type"] == "image" for b in an[-1]["content"][0]["content"])


_junk = st.recursive(st.none() | st.booleans() | st.integers(-10**12, 10**12) | st.floats(allow_nan=True)
                     | st.text(max_size=8), lambda c: st.lists(c, max_size=5) | st.dictionaries(st.text(max_size=6), c, max_size=4),
                     max_leaves=12)
_names = st.sampled_from(list(TOOL_NAMES) + ["fly", "", "finish", "SUBMIT_POSITIONS"])
_args = st.one_of(_junk, st.text(max_size=30), st.dictionaries(
    st.sampled_from(["position", "forward", "right", "up", "yaw", "pitch", "yaw_deg", "observations",
                     "positions", "extra"]), _junk, max_size=3),
    st.builds(lambda ids, v: {"positions": {i: v for i in ids}},
              st.lists(st.sampled_from(["chair_1", "chair_2", "table_1", "lamp_1", "vase_9", "nope"]), max_size=4), _junk),
    st.builds(lambda obs: {"observations": obs}, st.lists(st.fixed_dictionaries(
        {"frame_id": st.integers(-2, 3) | st.floats(), "u": st.floats(), "v": st.floats()}), max_size=4)))


_FUZZ_ENV = _wrapper(res=16, image_budget=5, model_call_budget=1000)


@pytest.mark.slow
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(_names, _args), min_size=25, max_size=45))
def test_fuzz_malformed_calls_never_escape(calls):
    """300 examples x 25-45 calls (about 10,000 calls a run): no exception escapes and the accepted
    map changes only through valid submissions."""
    w = _FUZZ_ENV
    w.reset()
    ep = w.episode
    w.step(ModelReply(tool_calls=[ToolCall(str(i), n, a) for i, (n, a) in enumerate(calls)]))
    bound = float(ep.public.radius_m) + 0.5
    for tid, p in ep.accepted_map.items():
        assert tid in ep.inventory_ids and np.all(np.isfinite(p)) and np.linalg.norm(p) <= bound + 1e-9
    accepted = set(ep.accepted_map)
    submitted_ok = set()
    for e in ep.trace:
        if e["event"] == "tool_call" and e["tool"] == "submit_positions" and e["result"]["ok"]:
            submitted_ok |= set(e["result"]["result"]["accepted"])
    assert accepted == submitted_ok
    for m in w.messages[2:]:
        json.loads(m.content[0]) if m.role == "tool" else None


@pytest.mark.parametrize("name,args", [
    ("move_camera", '{"forward": 1' + "0" * 400 + "}"),                         # int beyond float range
    ("submit_positions", {"positions": {"chair_1": [10 ** 400, 0, 0]}}),          # same, as an object
    ("rotate_camera", '{"yaw": ' + "9" * 5000 + "}"),                            # beyond Python's digit limit
    ("set_camera_position", {"position": [0, 0, -(10 ** 309)]}),
])
def test_huge_integers_are_tool_errors_not_exceptions(name, args):
    """JSON allows integers of any length; they must become readable tool errors, not an
    OverflowError/ValueError that fails the episode."""
    w = _wrapper()
    ep = w.episode
    (bad, ok), *_ = w.step(ModelReply(tool_calls=[ToolCall("big", name, args), ToolCall("ok", "get_camera_pose", "{}")]))
    assert bad.is_error and not json.loads(bad.text)["ok"] and name in json.loads(bad.text)["error"]
    assert not ok.is_error and not ep.done and ep.accepted_map == {}


def test_mcp_session_refuses_huge_integers():
    from spatialscout_gym.servers.mcp_server import McpEpisode
    import tempfile
    spec = small_scene(32, 32)
    with tempfile.TemporaryDirectory() as d:
        session = McpEpisode(spec, d + "/run", renderer=FakeRenderer(spec), resolution=32)
        blocks, err = session.call("move_camera", {"forward": 10 ** 400})
        assert blocks[0]["text"] == "Initial image of this episode:" and blocks[2]["type"] == "image"
        assert err and "beyond the float range" in json.loads(blocks[3]["text"])["error"]
        assert not session.episode.done


def test_prompt_names_what_the_call_budget_counts():
    from spatialscout_gym.conversation.prompt import task_prompt
    spec = small_scene()
    K = spec.public.intrinsics
    budget = lambda **kw: next(l for l in task_prompt(spec.public, K, model_call_budget=7,  # noqa: E731
                                                      image_budget=5, style="detailed", **kw).splitlines()
                                if l.startswith("BUDGETS"))
    assert "B = 7 model calls" in budget() and "tool calls (every" not in budget()
    mcp = budget(budget_counts_tool_calls=True)   # the MCP server cannot see model calls
    assert "B = 7 tool calls" in mcp and "model calls" not in mcp
    default = task_prompt(spec.public, K, model_call_budget=7, image_budget=5, budget_counts_tool_calls=True)
    assert "Budgets: tool calls 7; images 5" in default and "model calls" not in default
