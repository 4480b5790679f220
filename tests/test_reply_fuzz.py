"""Model replies of the wrong shape never crash the wrapper: a seeded fuzz per wire format (chat
completions, Responses, Anthropic messages, and SDK objects of the three; 10,000 replies each)
counts 0 internal exceptions through ``ToolCallWrapper.step``, the next request as an SDK would
send it (JSON, UTF-8) and the trace as the runner writes it; and one test per cause the fuzz first
found: a text that is not a string, ``tool_calls`` that is not a list, ``choices`` that is not a
list, a Responses output item that is not an object, an SDK tool call without an id with oversize
arguments, an unhashable call id with oversize arguments, lone surrogates in SDK objects. Each is a
malformed reply the model is told about, and the episode goes on."""

from __future__ import annotations

import json
import random
import traceback
import warnings

import gymnasium as gym
import pytest

from fakes import FakeRenderer, small_scene
from reply_fuzz_cases import GENERATORS, OVERSIZE, sdk_reply
from spatialscout_gym.conversation.codecs import anthropic_messages
from spatialscout_gym.conversation.codecs import chat_completions
from spatialscout_gym.conversation.codecs import responses
from spatialscout_gym.conversation.codecs import parse_reply
from spatialscout_gym.conversation.codecs.common import call_name
from spatialscout_gym.conversation.messages import Message, bound_reply
from spatialscout_gym.wrappers.tool_call import ToolCallWrapper

CODECS = {"chat_completions": chat_completions, "responses": responses, "messages": anthropic_messages}
REPLIES = 10_000
STEPPED = 1_000
"""Of the replies, those also run through ``ToolCallWrapper.step`` (env steps cost more than reading)."""


def _wrapper(wire_format: str | None, budget: int = 10 ** 6) -> ToolCallWrapper:
    spec = small_scene(16, 16)
    env = gym.make("SpatialScout/Procedural-v0", scene=spec, renderer=FakeRenderer(spec), resolution=16,
                   image_budget=3, tool_call_budget=None)
    w = ToolCallWrapper(env, model_call_budget=budget, wire_format=wire_format)
    w.reset(seed=0)
    return w


def _sent(w: ToolCallWrapper, wire_format: str) -> None:
    """What would leave the machine: the next request body and the trace, as JSON in UTF-8 (what
    the SDKs' HTTP client and the runner write; a lone surrogate cannot be encoded)."""
    json.dumps(CODECS[wire_format].to_request(w.messages), ensure_ascii=False).encode("utf-8")
    json.dumps(w.trace(), ensure_ascii=False).encode("utf-8")


def _read_and_send(w: ToolCallWrapper, reply, wire_format: str) -> int:
    """The reading half of ``step`` for one reply (decode with the wire format's codec, make safe,
    bound the arguments) and the request that would carry it back; returns 1 when malformed."""
    parsed = bound_reply(w._read(reply))
    ids = [c.id for c in parsed.tool_calls]
    assert len(set(ids)) == len(ids), f"tool-call ids sent back twice: {ids}"
    turn = [Message("assistant", [parsed.text] if parsed.text else [], tool_calls=parsed.tool_calls,
                    provider_content=parsed.provider_content)]
    turn += [Message("tool", ['{"ok": true}'], tool_call_id=c.id, tool_name=call_name(c)) for c in parsed.tool_calls]
    json.dumps(CODECS[wire_format].to_request(turn), ensure_ascii=False).encode("utf-8")
    json.dumps([c.to_trace() for c in parsed.tool_calls] + parsed.malformed, ensure_ascii=False).encode("utf-8")
    return int(bool(parsed.malformed))


def _fuzz(make_reply, wire_format: str, n: int, stepped: int) -> tuple[list[str], int]:
    """``n`` generated replies: every one read and sent back, the first ``stepped`` of them run
    through ``step`` of one wrapper (reset when an episode ends). Returns the internal exceptions
    (one line each) and the replies found malformed."""
    rng = random.Random(wire_format)
    w = _wrapper(wire_format)
    errors, malformed = [], 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for i in range(n):
            reply = make_reply(rng)
            try:
                malformed += _read_and_send(w, reply, wire_format)
                if i < stepped:
                    if w.done or len(w.messages) > 40:
                        _sent(w, wire_format)
                        w.reset(seed=0)
                    out, *_ = w.step(reply)
                    told = [m for m in out if m.role == "user" and "malformed" in m.text]
                    assert bool(told) == bool(w._read(reply).malformed) or w.done
            except Exception as exc:   # the count is the test: every escape is listed
                where = traceback.extract_tb(exc.__traceback__)[-1]
                errors.append(f"reply {i}: {type(exc).__name__} at {where.name}:{where.lineno}: {exc}"[:300])
                w.reset(seed=0)
        _sent(w, wire_format)
    return errors, malformed


@pytest.mark.parametrize("wire_format", sorted(GENERATORS))
def test_reply_fuzz_per_wire_format_has_no_internal_exception(wire_format):
    errors, malformed = _fuzz(GENERATORS[wire_format], wire_format, REPLIES, STEPPED)
    assert errors == [], f"{len(errors)} internal exceptions over {REPLIES} replies, e.g. {errors[:3]}"
    assert malformed > REPLIES // 10    # the generator does produce malformed replies


@pytest.mark.parametrize("k,wire_format", list(enumerate(sorted(GENERATORS))))
def test_reply_fuzz_of_sdk_objects_has_no_internal_exception(k, wire_format):
    """SDK objects of the three formats, 10,000 over the three tests (a few seconds each)."""
    n = REPLIES // len(GENERATORS) + (1 if k < REPLIES % len(GENERATORS) else 0)
    errors, malformed = _fuzz(lambda rng: sdk_reply(rng, wire_format), wire_format, n, STEPPED // 3)
    assert errors == [], f"{wire_format}: {len(errors)} internal exceptions over {n} SDK replies: {errors[:3]}"
    assert malformed > n // 10


# ---- one test per cause -----------------------------------------------------------------------------
def _told(w: ToolCallWrapper, reply, wire_format: str | None = None) -> tuple[list, str]:
    """Step ``reply``; the episode must go on and the model be told what was malformed. Returns the
    tool results and the note."""
    _, _, terminated, truncated, info = w.step(reply)
    assert not (terminated or truncated) and not w.done
    notes = [m.text for m in w.messages if m.role == "user" and "malformed" in m.text]
    assert len(notes) == 1
    event = [e for e in w.trace() if e["event"] == "model_response"][-1]
    assert event["malformed"]
    json.dumps(w.trace(), ensure_ascii=False).encode("utf-8")
    if wire_format is not None:
        _sent(w, wire_format)
    return info["tool_results"], notes[0]


@pytest.mark.parametrize("wire_format,reply", [
    ("messages", {"type": "message", "role": "assistant", "content": [{"type": "text", "text": 5}]}),
    ("responses", {"object": "response", "output": [
        {"type": "message", "content": [{"type": "output_text", "text": 5}]}]}),
])
def test_a_text_that_is_not_a_string_is_malformed(wire_format, reply):
    _, note = _told(_wrapper(None), reply, wire_format)
    assert "not a string" in note and "int 5" in note


def test_tool_calls_that_are_not_a_list_are_malformed():
    _, note = _told(_wrapper(None), {"role": "assistant", "tool_calls": 128}, "chat_completions")
    assert "tool_calls is int 128, not a list" in note


def test_choices_that_are_not_a_list_are_malformed():
    _, note = _told(_wrapper(None), {"object": "chat.completion", "choices": True}, "chat_completions")
    assert "choices is bool True, not a list" in note


def test_a_responses_output_item_that_is_not_an_object_is_malformed():
    w = _wrapper(None)
    _, note = _told(w, {"output": [5]}, "responses")
    assert "output item 0 is int 5, not an object" in note
    assert w.messages[-2].provider_content == []    # not replayed


def test_an_sdk_tool_call_without_id_and_oversize_arguments_is_refused_and_answered():
    from openai.types.responses import Response
    reply = Response.model_construct(object="response", output=[
        {"type": "function_call", "name": "move_camera", "arguments": OVERSIZE}])
    w = _wrapper("responses")
    _, _, terminated, _, info = w.step(reply)
    assert not terminated and not info["tool_results"][0]["ok"] and "exceed" in info["tool_results"][0]["error"]
    items = responses.to_request(w.messages)["input"]
    call = [i for i in items if i.get("type") == "function_call"][0]
    answer = [i for i in items if i.get("type") == "function_call_output"][0]
    assert call["call_id"] == answer["call_id"] == "call_0" and len(call["arguments"]) < 200


def test_an_unhashable_call_id_with_oversize_arguments_is_refused():
    reply = {"type": "message", "role": "assistant", "content": [
        {"type": "tool_use", "id": [1], "name": "move_camera", "input": json.loads(OVERSIZE)},
        {"type": "tool_use", "id": {"a": 1}, "name": "get_camera_pose", "input": {}}]}
    w = _wrapper("messages")
    _, _, terminated, _, info = w.step(reply)
    assert not terminated and [r["ok"] for r in info["tool_results"]] == [False, True]
    msgs = anthropic_messages.to_request(w.messages)["messages"]
    ids = [b["id"] for b in msgs[1]["content"] if b["type"] == "tool_use"]
    answered = [b["tool_use_id"] for b in msgs[2]["content"] if b["type"] == "tool_result"]
    assert ids == answered == ["call_0", "call_1"]


def test_lone_surrogates_in_sdk_objects_are_replaced():
    from anthropic.types import Message as AnthropicMessage
    reply = AnthropicMessage.model_construct(type="message", role="assistant", content=[
        {"type": "thinking", "thinking": "x\udc80", "signature": "s\ud800"},
        {"type": "text", "text": "look \udc80"},
        {"type": "tool_use", "id": "t\udc801", "name": "move_camera", "input": {"forward": 0.1, "k\udc80": "\ud800"}}])
    w = _wrapper("messages")
    _, _, _, _, info = w.step(reply)
    _sent(w, "messages")      # the request and the trace encode as UTF-8
    said = [m for m in w.messages if m.role == "assistant"][-1]
    assert said.text == "look \ufffd" and said.tool_calls[0].id == "t\ufffd1"
    assert said.provider_content[0] == {"type": "thinking", "thinking": "x\ufffd", "signature": "s\ufffd"}
    assert not info["tool_results"][0]["ok"] and "k\ufffd" in info["tool_results"][0]["error"]


def test_a_chat_message_with_a_content_list_keeps_its_tool_calls():
    """The wire format is not guessed from the content's shape: a chat message whose content is a
    list of parts is a chat message (not an Anthropic message that would lose its tool calls)."""
    message = {"role": "assistant", "content": [{"type": "text", "text": "moving"}], "tool_calls": [
        {"id": "c0", "type": "function", "function": {"name": "move_camera", "arguments": '{"forward": 0.25}'}}]}
    reply = parse_reply(message)
    assert [c.name for c in reply.tool_calls] == ["move_camera"] and reply.text == "moving" and not reply.malformed
    w = _wrapper("chat_completions")
    _, _, _, _, info = w.step(message)
    assert info["tool_results"][0]["ok"]
    # pinned to the provider's format: an Anthropic message sent to a chat-completions episode is
    # read as a chat message (its tool_use blocks are not read) and the model is told
    anthropic = {"type": "message", "role": "assistant", "content": [
        {"type": "tool_use", "id": "t", "name": "list_entities", "input": {}}]}
    _, note = _told(w, anthropic)
    assert "content part 0 has type 'tool_use', not text" in note


def test_a_malformed_reply_from_a_real_server_is_told_and_the_episode_completes(tmp_path):
    """Through the OpenAI client against a server on 127.0.0.1: ``choices: true`` and then a
    text part that is not a string are malformed replies the model is told about; the episode
    ends by finish_mapping and is not failed."""
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
    import threading

    from spatialscout_gym.baselines.registry import make_agent
    from spatialscout_gym.eval.running.runner import run_episode
    answers = [{"object": "chat.completion", "choices": True},
               {"object": "chat.completion", "choices": [{"index": 0, "finish_reason": "stop", "message": {
                   "role": "assistant", "content": [{"type": "text", "text": 5}]}}]},
               {"object": "chat.completion", "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
                   "role": "assistant", "content": None, "tool_calls": [{"id": "f", "type": "function", "function": {
                       "name": "finish_mapping", "arguments": "{}"}}]}}]}]
    bodies = []

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *a):
            pass

        def do_GET(self):
            self.send_response(404)
            self.end_headers()

        def do_POST(self):
            bodies.append(json.loads(self.rfile.read(int(self.headers["Content-Length"]))))
            data = json.dumps({"id": "x", "created": 0, "model": "m", **answers[min(len(bodies), 3) - 1]}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        spec = small_scene(32, 32)
        agent = make_agent("openai:m", base_url=f"http://127.0.0.1:{server.server_port}/v1", api_key="local")
        result = run_episode(agent, spec, tmp_path / "run", renderer=FakeRenderer(spec), resolution=32)
    finally:
        server.shutdown()
        server.server_close()
    assert result["status"] == "ok" and result["end_reason"] == "finish_mapping"
    assert len(bodies) == 3
    last_user = [m for m in bodies[1]["messages"] if m["role"] == "user"][-1]
    assert "malformed" in json.dumps(last_user) and "choices" in json.dumps(last_user)


# ---- ids repeated, nesting too deep, numbers too long ---------------------------------------------
def _dup_reply(wire_format: str, n: int) -> dict:
    """``n`` capture_image calls that all carry the id ``same``."""
    if wire_format == "chat_completions":
        return {"role": "assistant", "tool_calls": [
            {"id": "same", "type": "function", "function": {"name": "get_budget", "arguments": "{}"}}] * n}
    if wire_format == "responses":
        return {"object": "response", "output": [
            {"type": "function_call", "call_id": "same", "name": "get_budget", "arguments": "{}"}] * n}
    return {"type": "message", "role": "assistant", "content": [
        {"type": "thinking", "thinking": "t", "signature": "s"}] + [
        {"type": "tool_use", "id": "same", "name": "get_budget", "input": {}}] * n}


@pytest.mark.parametrize("n", [2, 1000])
@pytest.mark.parametrize("wire_format", sorted(CODECS))
def test_calls_sharing_an_id_are_answered_under_unique_ids(wire_format, n):
    """The next request answers each call once under its own id (the Anthropic API refuses a turn
    answering one id twice), the replayed provider content carries the same ids, and the trace
    records them."""
    w = _wrapper(wire_format)
    w.step(_dup_reply(wire_format, n))
    request = json.dumps(CODECS[wire_format].to_request(w.messages))
    body = json.loads(request)
    if wire_format == "chat_completions":
        asked = [c["id"] for m in body["messages"] if m.get("tool_calls") for c in m["tool_calls"]]
        answered = [m["tool_call_id"] for m in body["messages"] if m["role"] == "tool"]
    elif wire_format == "responses":
        asked = [i["call_id"] for i in body["input"] if i.get("type") == "function_call"]
        answered = [i["call_id"] for i in body["input"] if i.get("type") == "function_call_output"]
    else:
        blocks = [b for m in body["messages"] if isinstance(m["content"], list) for b in m["content"]]
        asked = [b["id"] for b in blocks if b["type"] == "tool_use"]
        answered = [b["tool_use_id"] for b in blocks if b["type"] == "tool_result"]
    assert len(asked) == n and len(set(asked)) == n and asked[0] == "same" and "same_2" in asked
    assert answered == asked
    traced = [c["id"] for e in w.trace() if e["event"] == "model_response" for c in e.get("tool_calls", [])]
    assert traced == asked


def test_a_content_block_nested_100000_deep_is_refused_not_a_recursion_error():
    block: dict = {"type": "text", "text": "a"}
    for _ in range(100_000):
        block = {"type": "text", "text": block}
    _, note = _told(_wrapper(None), {"type": "message", "role": "assistant", "content": [block]}, "messages")
    assert "content block 0 is dict <dict that cannot be shown>, not a string" in note


def test_an_anthropic_input_with_a_5000_digit_number_is_a_refused_call():
    w = _wrapper("messages")
    _, _, _, _, info = w.step({"type": "message", "role": "assistant", "content": [
        {"type": "tool_use", "id": "a", "name": "move_camera", "input": {"forward": 10 ** 5000}}]})
    (res,) = info["tool_results"]
    assert not res["ok"] and "the arguments exceed" in res["error"]
    traced = [c for e in w.trace() if e["event"] == "model_response" for c in e["tool_calls"]]
    assert "cannot be written as JSON" in traced[0]["arguments"]
    _sent(w, "messages")


HANG_S = 20
"""A step still running after this many seconds walks without end (one takes well under a second)."""


class _Hung(BaseException):
    """Raised in a step that runs past :data:`HANG_S` (no ``Exception`` handler may swallow it)."""


def _hung(*_):
    raise _Hung(f"step still running after {HANG_S} s")


@pytest.mark.parametrize("wire_format", [None, "chat_completions", "messages"])
def test_cyclic_arguments_are_refused_in_bounded_work(wire_format):
    """``a = {"forward": 0.1}; a["self"] = a`` as a call's arguments (a Python caller can hand over
    any object; Episode.call refuses it at once): refused like any over-deep argument, the trace
    and the next request written; a self-sharing object (2^32 paths) in the provider content too."""
    import signal
    a: dict = {"forward": 0.1}
    a["self"] = a
    shared: list = [1.0]
    for _ in range(40):
        shared = [shared, shared]
    from spatialscout_gym.wrappers.tool_call import ModelReply, ToolCall
    w = _wrapper(wire_format)
    previous = signal.signal(signal.SIGALRM, _hung)
    signal.alarm(HANG_S)
    try:
        _, _, _, _, info = w.step(ModelReply("", [ToolCall("c1", "move_camera", a)], provider_content=[shared]))
        _sent(w, wire_format or "chat_completions")
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
    (res,) = info["tool_results"]
    traced = [e for e in w.trace() if e["event"] == "model_response"][0]
    assert not res["ok"] and "nested more than" in traced["tool_calls"][0]["arguments"]
    assert not w.done and w.episode.tool_calls == 1
    assert w.step(ModelReply("", [ToolCall("c2", "move_camera", {"forward": 0.1})]))[4]["tool_results"][0]["ok"]
