"""Over-deep/over-large arguments are refused before anything walks
them, triangulation takes a bounded number of observations, and the JSON a model reads is rounded."""

from __future__ import annotations

import json
import tracemalloc

import gymnasium as gym

from fakes import FakeRenderer, small_scene
from spatialscout_gym.core.triangulation import MAX_OBSERVATIONS, triangulate_marks, triangulate_rays
from spatialscout_gym.episode import Episode
from spatialscout_gym.episode.tools import (MAX_ARG_DEPTH, MAX_ARG_VALUES, argument_size_problem, model_json,
                                            to_jsonable)
from spatialscout_gym.episode.trace import write_jsonl
from spatialscout_gym.conversation.codecs import anthropic_messages, chat_completions
from spatialscout_gym.wrappers.tool_call import ModelReply, ToolCall, ToolCallWrapper


def make_episode(tool_call_budget=20):
    spec = small_scene()
    return Episode(spec.public, FakeRenderer(spec), image_budget=10, tool_call_budget=tool_call_budget)


def make_wrapper(model_call_budget=5) -> ToolCallWrapper:
    """A ToolCallWrapper over the registered env on the fake renderer, after reset."""
    spec = small_scene(48, 48)
    env = gym.make("SpatialScout/Procedural-v0", scene=spec, renderer=FakeRenderer(spec), resolution=48,
                   image_budget=10, tool_call_budget=20)
    w = ToolCallWrapper(env, model_call_budget=model_call_budget)
    w.reset(seed=0)
    return w


def nested(depth: int):
    x: list = [1.0]
    for _ in range(depth):
        x = [x]
    return x


def test_600_deep_argument_is_refused_and_the_episode_goes_on(tmp_path):
    ep = make_episode()
    res = ep.call("move_camera", {"forward": nested(600)})
    assert not res.ok and "nested more than" in res.error and str(MAX_ARG_DEPTH) in res.error
    assert ep.tool_calls == 1 and not ep.done           # counted like any refusal, episode goes on
    assert ep.move_camera(forward=0.5).ok
    write_jsonl(ep.trace, tmp_path / "trace.jsonl")     # the trace still writes (no RecursionError)
    assert "omitted" in (tmp_path / "trace.jsonl").read_text()


def test_deep_argument_through_the_wrapper_and_both_wire_formats():
    w = make_wrapper()
    ep = w.episode
    deep = {"positions": {"chair_1": nested(600)}}
    w.step(ModelReply("", [ToolCall("c1", "submit_positions", deep)]))
    assert not w.done and ep.tool_calls == 1
    messages = w.request()
    chat_completions.messages(messages)                          # neither raises RecursionError
    system, msgs = anthropic_messages.messages(messages)
    assert "nested more than" in json.dumps(msgs)


def test_to_jsonable_is_depth_bounded():
    out = to_jsonable(nested(5000))
    assert "omitted" in json.dumps(out)


def test_large_and_long_arguments_are_refused():
    assert argument_size_problem({"positions": {f"id{i}": [0, 0, 0] for i in range(40)}}) is None
    assert "more than" in argument_size_problem({"x": list(range(MAX_ARG_VALUES + 1))})
    assert "characters" in argument_size_problem({"x": "a" * 5000})
    assert "characters" in argument_size_problem({"a" * 5000: 1})


def test_6000_observations_are_refused_fast_with_bounded_memory():
    ep = make_episode()
    ep.move_camera(right=0.5)
    ep.capture_image()
    marks = [{"frame_id": i % 2, "u": 10.0, "v": 10.0} for i in range(6000)]
    tracemalloc.start()
    res = ep.triangulate_observations(marks)
    direct = triangulate_marks(marks, {f: fr.geometry for f, fr in ep.frames.items()}, 3.0)
    rays = triangulate_rays([[0, 0, 0]] * 6000, [[1, 0, 0]] * 6000)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert not res.ok and not direct.ok and not rays.ok
    assert str(MAX_OBSERVATIONS) in direct.reason and str(MAX_OBSERVATIONS) in rays.reason
    # refused before any solve: no 6000-ray system was built (its time: benchmarks/bench_answers.py)
    assert peak < 20e6, peak


def test_observation_cap_just_above_and_at_the_limit():
    ep = make_episode()
    ep.move_camera(right=0.5)
    ep.capture_image()
    over = [{"frame_id": i % 2, "u": 30.0, "v": 20.0} for i in range(MAX_OBSERVATIONS + 1)]
    res = ep.triangulate_observations(over)
    assert not res.ok and f"at most {MAX_OBSERVATIONS} observations" in res.error
    at = over[:MAX_OBSERVATIONS]
    assert "at most" not in (ep.triangulate_observations(at).error or "")


def test_schema_states_the_observation_cap():
    tri = next(t["function"] for t in chat_completions.tools() if t["function"]["name"] == "triangulate_observations")
    obs = tri["parameters"]["properties"]["observations"]
    assert obs["maxItems"] == MAX_OBSERVATIONS
    assert f"2 to {MAX_OBSERVATIONS}" in tri["description"]


def test_model_json_rounds_like_the_prompt():
    text = model_json({"p": [-0.0, -1e-9, 0.123456789, 12.3456], "n": 7, "s": "x"})
    assert text == '{"p": [0.0, 0.0, 0.123, 12.346], "n": 7, "s": "x"}'


def test_tool_result_the_model_reads_has_no_long_floats_or_negative_zero():
    w = make_wrapper()
    out, *_ = w.step(ModelReply("", [ToolCall("c1", "rotate_camera", {"yaw": 33.3333333}),
                                     ToolCall("c2", "get_camera_pose", {})]))
    text = " ".join(p for m in out for p in m.content if isinstance(p, str))
    assert "-0.0," not in text and "-0.0]" not in text
    import re
    assert not re.search(r"\d\.\d{4,}", text), text
