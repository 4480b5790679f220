"""One codec per wire format: the wrapper's ``parse_reply`` and the providers read replies with the
same modules (Anthropic thinking and usage kept, Responses replies readable, malformed usage
unknown rather than an error), and the wrapper's own bounds: B owns the budget (no hidden inner
cap), huge arguments are refused and not kept, events use the injected clock."""

from __future__ import annotations

import json
import warnings

import gymnasium as gym
import pytest

from fakes import FakeRenderer, small_scene
from spatialscout_gym.envs.spatialscout_env import SpatialScoutEnv
from spatialscout_gym.wrappers import ToolCallWrapper as Exported
from spatialscout_gym.conversation.codecs import parse_reply
from spatialscout_gym.conversation.codecs import anthropic_messages
from spatialscout_gym.conversation.codecs import chat_completions
from spatialscout_gym.conversation.codecs import responses
from spatialscout_gym.conversation.messages import MAX_ARGUMENT_CHARS
from spatialscout_gym.wrappers.tool_call import ToolCallWrapper

ANTHROPIC = {"type": "message", "role": "assistant", "stop_reason": "tool_use",
             "content": [{"type": "thinking", "thinking": "look first", "signature": "sig"},
                         {"type": "text", "text": "capturing"},
                         {"type": "tool_use", "id": "tu1", "name": "capture_image", "input": {}}],
             "usage": {"input_tokens": 1200, "output_tokens": 80}}


def _env(**kw):
    spec = small_scene(32, 32)
    return gym.make("SpatialScout/Procedural-v0", scene=spec, renderer=FakeRenderer(spec), resolution=32,
                    image_budget=5, **kw)


def test_parse_reply_keeps_anthropic_thinking_and_usage_like_the_provider():
    reply = parse_reply(ANTHROPIC)
    assert reply == anthropic_messages.parse_response(ANTHROPIC)
    assert reply.usage == {"input_tokens": 1200, "output_tokens": 80}
    assert reply.provider_content[0]["type"] == "thinking" and reply.stop_reason == "tool_use"
    # and the thinking block is sent back verbatim in the next request
    w = ToolCallWrapper(_env())
    w.reset(seed=0)
    w.step(ANTHROPIC)
    msgs = anthropic_messages.to_request(w.messages)["messages"]
    assert msgs[1]["content"][0] == {"type": "thinking", "thinking": "look first", "signature": "sig"}


def test_parse_reply_reads_a_responses_reply():
    raw = {"object": "response", "status": "completed",
           "output": [{"type": "reasoning", "id": "rs_1", "summary": []},
                      {"type": "function_call", "call_id": "c1", "name": "list_entities", "arguments": "{}"}],
           "usage": {"input_tokens": 10, "output_tokens": 2}}
    reply = parse_reply(raw)
    assert [(c.id, c.name) for c in reply.tool_calls] == [("c1", "list_entities")]
    assert reply.usage == {"input_tokens": 10, "output_tokens": 2} and len(reply.provider_content) == 2


@pytest.mark.parametrize("bad", ["many", None, -5, float("nan"), True, [1]])
def test_malformed_usage_is_unknown_not_an_error(bad):
    completion = {"object": "chat.completion", "choices": [{"finish_reason": "tool_calls", "message": {
        "role": "assistant", "content": None, "tool_calls": [
            {"id": "c0", "type": "function", "function": {"name": "list_entities", "arguments": "{}"}}]}}],
        "usage": {"prompt_tokens": bad, "completion_tokens": 7}}
    w = ToolCallWrapper(_env())
    w.reset(seed=0)
    _, _, terminated, _, info = w.step(completion)
    assert info["tool_results"][0]["ok"] and not terminated
    assert w.usage == {"input_tokens": 0, "output_tokens": 7}
    assert [e for e in w.trace() if e["event"] == "model_response"][0]["usage"] == {"output_tokens": 7}


def test_the_wrapper_owns_the_budget_without_a_hidden_tool_call_cap():
    w = ToolCallWrapper(_env())
    w.reset(seed=0)
    _, _, _, _, info = w.step([{"name": "list_entities", "arguments": {}}])
    assert info["calls_left"] == 99 and w.inner_tool_call_cap is None
    assert w.episode.tool_call_budget is None and w.episode.calls_left is None   # no hidden cap inside
    # a cap the user sets is kept
    kept = ToolCallWrapper(_env(tool_call_budget=2))
    kept.reset(seed=0)
    kept.step([{"name": "list_entities", "arguments": {}}] * 3)
    assert kept.inner_tool_call_cap == 2 and kept.end_reason == "tool_call_budget"


def test_a_default_cap_is_lifted_so_more_than_100_tool_calls_run():
    w = ToolCallWrapper(_env(), model_call_budget=3)
    w.reset(seed=0)
    _, _, terminated, truncated, info = w.step([{"name": "list_entities", "arguments": {}}] * 120)
    assert all(r["ok"] for r in info["tool_results"]) and len(info["tool_results"]) == 120
    assert not (terminated or truncated) and w.episode.tool_calls == 120


def test_an_env_built_directly_keeps_its_cap_with_a_warning():
    spec = small_scene(32, 32)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        w = ToolCallWrapper(SpatialScoutEnv(scene=spec, renderer=FakeRenderer(spec), resolution=32))
    assert w.inner_tool_call_cap == 100
    assert any("tool_call_budget=None" in str(c.message) for c in caught)


def test_huge_arguments_are_refused_and_neither_kept_nor_resent():
    w = ToolCallWrapper(_env())
    w.reset(seed=0)
    huge = json.dumps({"label": "y" * 5_000_000})
    msgs, _, _, _, info = w.step([{"name": "capture_image", "arguments": huge},
                                  {"name": "list_entities", "arguments": {}}])
    assert not info["tool_results"][0]["ok"] and str(MAX_ARGUMENT_CHARS) in info["tool_results"][0]["error"]
    assert info["tool_results"][1]["ok"] and w.episode.tool_calls == 1   # the huge one never reached the env
    request = json.dumps(chat_completions.to_request(w.request())["messages"])
    assert len(request) < 100_000 and len(json.dumps(w.trace())) < 100_000


def test_refusals_echo_long_ids_only_in_part():
    w = ToolCallWrapper(_env())
    w.reset(seed=0)
    ids = {("z" * 900) + str(i): [0.0, 0.0, 0.0] for i in range(20)}
    msgs, *_ = w.step([{"name": "submit_positions", "arguments": {"positions": ids}}])
    assert len(msgs[0].text) < 5_000


def test_events_use_the_injected_clock_and_the_wrapper_is_exported():
    assert Exported is ToolCallWrapper
    w = ToolCallWrapper(_env(), clock=lambda: 1234.5)
    w.reset(seed=0)
    w.step([{"name": "list_entities", "arguments": {}}])
    stamps = [e["time_unix_s"] for e in w.trace() if e["event"] in ("model_request", "model_response")]
    assert stamps == [1234.5, 1234.5]


def test_responses_and_chat_defer_tool_images_the_same_way():
    w = ToolCallWrapper(_env())
    w.reset(seed=0)
    w.step([{"name": "capture_image", "arguments": {}}, {"name": "capture_image", "arguments": {}}])
    chat = chat_completions.to_request(w.messages)["messages"]
    items = responses.to_request(w.messages)["input"]
    assert [m["role"] for m in chat[-3:]] == ["tool", "tool", "user"]
    assert [i.get("type", i.get("role")) for i in items[-3:]] == ["function_call_output", "function_call_output", "user"]
    assert len(chat[-1]["content"]) == len(items[-1]["content"]) == 4   # caption and image of each frame
