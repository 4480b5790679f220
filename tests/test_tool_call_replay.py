"""Recorded model replies through the Gymnasium ``ToolCallWrapper`` give exactly what the
pre-gymnasium wrapper gave (``tests/data/tool_call_replay.json``, recorded from the old path at
commit 4c46094): the same trace events, the same text and images for every message the model
reads, the same scores, counters, usage and the same OpenAI and Anthropic request bodies.

Changes made on purpose after the recording (see ``tool_call_replay_cases.py``): the replay uses the
recording's wording (``prompt_style="legacy"``) and passive path (``OLD_PASSIVE_PATH``); wrapper
events' ``time_unix_s`` is left out of the comparison; and tool-result texts are now written by
``model_json`` (numbers rounded to 3 decimals, no ``-0.0``), so each recorded tool-result text is
compared as ``model_json(json.loads(recorded))``: the one intended change, nothing else."""

from __future__ import annotations

import dataclasses
import hashlib
import json
from pathlib import Path

import gymnasium as gym
import pytest

from fakes import FakeRenderer, small_scene
from tool_call_replay_cases import CASES, OLD_PASSIVE_PATH
from spatialscout_gym.conversation.codecs import anthropic_messages, chat_completions
from spatialscout_gym.core.scoring import GroundTruth, score_scene
from spatialscout_gym.episode.tools import model_json
from spatialscout_gym.wrappers.tool_call import ModelReply, ToolCall, ToolCallWrapper

EXPECTED = json.loads((Path(__file__).parent / "data" / "tool_call_replay.json").read_text())


def _sha(obj) -> str:
    return hashlib.sha256(json.dumps(obj, sort_keys=True).encode()).hexdigest()


def replay(case: dict, env_wrappers=()) -> tuple[ToolCallWrapper, dict, list]:
    spec = small_scene(case["res"], case["res"])
    env = gym.make("SpatialScout/Procedural-v0", scene=spec, renderer=FakeRenderer(spec), resolution=case["res"],
                   image_budget=case["image_budget"], tool_call_budget=None)
    for wrap in env_wrappers:
        env = wrap(env)
    passive = case.get("passive_views")
    w = ToolCallWrapper(env, model_call_budget=case["model_call_budget"], passive_views=passive,
                        passive_path=OLD_PASSIVE_PATH if passive else None, prompt_style="legacy")
    w.reset(seed=0)
    k = 0
    while not w.done:
        w.request()
        calls = case["replies"][k] if k < len(case["replies"]) else []
        w.step(ModelReply(text=f"step {k}", tool_calls=[ToolCall(f"c{k}_{i}", n, a) for i, (n, a) in
                                                         enumerate(calls)],
                          usage={"input_tokens": 100 + k, "output_tokens": 7}))
        k += 1
    return w, {"spec": spec}, []


def _rounded(text: str) -> str:
    """A recorded tool-result text as ``model_json`` writes it now (the intended change)."""
    return model_json(json.loads(text))


def _with_model_json(message: dict) -> dict:
    """A recorded message (``to_trace`` form) with its tool-result text rounded by ``model_json``."""
    if message.get("role") != "tool":
        return message
    return {**message, "content": [_rounded(message["content"][0]), *message["content"][1:]]}


def _expected_trace(events: list[dict]) -> list[dict]:
    return [{**e, "new_messages": [_with_model_json(m) for m in e["new_messages"]]}
            if e.get("event") == "model_request" else e for e in events]


def _without_times(events: list[dict]) -> list[dict]:
    return [{k: v for k, v in e.items() if k not in ("time_unix_s", "history_sha256")} for e in events]


def test_rounding_is_the_only_change_to_a_tool_result_text():
    """``_rounded`` changes numbers only: a text without long floats or -0.0 is kept as it was."""
    text = '{"ok": false, "error": "move_camera: forward must be finite, got nan (1.23456 m)"}'
    assert _rounded(text) == text
    assert _rounded('{"ok": true, "result": {"p": [-0.0, 0.9659258262890683]}}') == \
        '{"ok": true, "result": {"p": [0.0, 0.966]}}'


@pytest.mark.parametrize("name", sorted(CASES))
def test_replay_matches_the_old_path(name):
    case, want = CASES[name], EXPECTED[name]
    w, ctx, _ = replay(case)
    ep = w.episode
    trace_before_end = json.loads(json.dumps(w.trace()))
    if not ep.done:                       # what the runner does with the wrapper's end reason
        ep.end(w.end_reason)
    trace = json.loads(json.dumps(w.trace()))
    assert all(isinstance(e["time_unix_s"], float) for e in trace
               if e["event"] in ("model_request", "model_response", "tool_call_refused"))
    want_trace = _expected_trace(want["trace"])
    assert _without_times(trace) == want_trace
    assert _without_times(trace_before_end) == want_trace
    got_messages = []
    for m in w.messages:
        d = m.to_trace()
        d["jpeg_sha256"] = [hashlib.sha256(p.jpeg).hexdigest() for p in m.images]
        got_messages.append(d)
    assert got_messages == [_with_model_json(m) for m in want["messages"]]
    metrics = score_scene(GroundTruth.from_spec(ctx["spec"]), ep.accepted_map).metrics()
    assert json.loads(json.dumps(metrics)) == want["metrics"]
    assert ep.counters() == want["counters"]
    assert (w.model_calls, w.usage) == (want["model_calls"], want["usage"])
    # the wire bodies: with the recorded (unrounded) tool texts put back, byte for byte the recording's
    recorded = [dataclasses.replace(m, content=[want["messages"][i]["content"][0], *m.content[1:]])
                if m.role == "tool" else m for i, m in enumerate(w.messages)]
    assert _sha(chat_completions.messages(recorded)) == want["openai_wire_sha256"]
    system, anthropic = anthropic_messages.messages(recorded)
    assert _sha([system, anthropic]) == want["anthropic_wire_sha256"]


def test_the_recording_covers_what_it_claims():
    """The expectations hold every ending, refusals of each kind and nonzero scores (so a replay
    that silently did nothing could not match them)."""
    reasons = {EXPECTED[n]["counters"]["end_reason"] for n in EXPECTED}
    assert reasons == {"finish_mapping", "no_tool_call", "model_call_budget"}
    events = [e for n in EXPECTED for e in EXPECTED[n]["trace"]]
    kinds = {e["refusal"] for e in events if e["event"] == "tool_call_refused"}
    assert kinds == {"unknown_tool", "malformed", "disabled", "skipped"}
    refused_by_episode = [e for e in events if e["event"] == "tool_call" and not e["result"]["ok"]]
    assert len(refused_by_episode) >= 15
    assert EXPECTED["active_finish"]["metrics"]["all"]["mean_iou"] > 0.5
