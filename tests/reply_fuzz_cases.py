"""Seeded generators of model replies of every shape, right and wrong, per wire format (chat
completions, Responses, Anthropic messages, SDK objects of the three), for the reply fuzz: each
field is, at random, well formed or any other JSON-ish value (non-strings where text belongs,
scalars where lists belong, oversize arguments, lone surrogates, missing or unhashable ids)."""

from __future__ import annotations

import json
import random
from typing import Any, Callable

from spatialscout_gym.episode.tools import TOOL_NAMES

OVERSIZE = json.dumps({"forward": 0.1, "pad": "x" * 20_500})
CHEAP_TOOLS = ("get_camera_pose", "get_camera_intrinsics", "list_entities", "move_camera", "rotate_camera")


def junk(rng: random.Random, depth: int = 0) -> Any:
    """Any value of the kinds a service could send in a field, nested up to two levels."""
    k = rng.randrange(13 if depth < 2 else 10)
    if k == 0:
        return None
    if k == 1:
        return rng.choice([True, False])
    if k == 2:
        return rng.choice([0, 5, -1, 128, 10 ** 30])
    if k == 3:
        return rng.choice([0.5, float("nan"), float("inf"), -0.0])
    if k == 4:
        return rng.choice(["", "text", "a\udc80b", "\ud800", "\x00", "x" * 300])
    if k == 5:
        return rng.choice(["{}", "{bad", OVERSIZE, "[1]", '{"forward": 0.2}'])
    if k == 6:
        return b"bytes"
    if k == 7:
        return rng.choice([(), (1, 2)])
    if k == 8:
        return rng.choice([[], [None], {}])
    if k == 9:
        return {"type": rng.choice(["text", "tool_use", "function_call", "message", 5])}
    if k == 10:
        return [junk(rng, depth + 1) for _ in range(rng.randrange(3))]
    if k == 11:
        return {rng.choice(["text", "type", "id", "name", "content"]): junk(rng, depth + 1)
                for _ in range(rng.randrange(3))}
    return {"k": [junk(rng, depth + 1)]}


def maybe(rng: random.Random, good: Callable[[], Any], p_bad: float = 0.25) -> Any:
    return junk(rng) if rng.random() < p_bad else good()


def _name(rng: random.Random) -> Any:
    return maybe(rng, lambda: rng.choice(CHEAP_TOOLS if rng.random() < 0.9 else TOOL_NAMES), 0.15)


def _args(rng: random.Random, as_text: bool) -> Any:
    def good() -> Any:
        a = rng.choice([{}, {"forward": 0.1}, {"yaw": 5}, {"pad": "x" * 20_500}, {"s": "\udc80"}])
        return json.dumps(a) if as_text and "\udc80" not in str(a) else a
    return maybe(rng, good, 0.3)


def _id(rng: random.Random, i: int) -> Any:
    # one call in ten repeats the first call's id "c0": a service may send an id twice
    good = (lambda: "c0") if rng.random() < 0.1 else (lambda: f"c{i}")
    return maybe(rng, good, 0.25) if rng.random() < 0.9 else rng.choice([None, [1], {"a": 1}])


def chat_reply(rng: random.Random) -> Any:
    def call(i: int) -> Any:
        return maybe(rng, lambda: {"id": _id(rng, i), "type": "function",
                                   "function": maybe(rng, lambda: {"name": _name(rng),
                                                                   "arguments": _args(rng, True)}, 0.1)}, 0.1)

    def message() -> Any:
        m = {"role": maybe(rng, lambda: "assistant", 0.1),
             "content": maybe(rng, lambda: rng.choice([None, "thinking", [{"type": "text", "text": "hi"}]]))}
        if rng.random() < 0.85:
            m["tool_calls"] = maybe(rng, lambda: [call(i) for i in range(rng.randrange(1, 4))], 0.2)
        return m

    if rng.random() < 0.5:
        return message()
    return {"object": maybe(rng, lambda: "chat.completion", 0.1),
            "choices": maybe(rng, lambda: [maybe(rng, lambda: {"message": maybe(rng, message, 0.1),
                                                              "finish_reason": "tool_calls"}, 0.1)], 0.2),
            "usage": maybe(rng, lambda: {"prompt_tokens": 3, "completion_tokens": 1})}


def responses_reply(rng: random.Random) -> Any:
    def item(i: int) -> Any:
        kind = rng.randrange(3)
        if kind == 0:
            return maybe(rng, lambda: {"type": "function_call", "call_id": _id(rng, i), "name": _name(rng),
                                       "arguments": _args(rng, True)}, 0.1)
        if kind == 1:
            return maybe(rng, lambda: {"type": "message", "role": "assistant", "content": maybe(
                rng, lambda: [maybe(rng, lambda: {"type": "output_text", "text": maybe(rng, lambda: "ok")}, 0.1)],
                0.2)}, 0.1)
        return {"type": "reasoning", "id": f"rs_{i}", "summary": maybe(rng, list, 0.2)}

    return {"object": "response", "status": maybe(rng, lambda: "completed", 0.1),
            "output": maybe(rng, lambda: [item(i) for i in range(rng.randrange(1, 4))], 0.15),
            "incomplete_details": maybe(rng, lambda: None, 0.1),
            "usage": maybe(rng, lambda: {"input_tokens": 3, "output_tokens": 1})}


def anthropic_reply(rng: random.Random) -> Any:
    def block(i: int) -> Any:
        kind = rng.randrange(3)
        if kind == 0:
            return maybe(rng, lambda: {"type": "tool_use", "id": _id(rng, i), "name": _name(rng),
                                       "input": _args(rng, False)}, 0.1)
        if kind == 1:
            return maybe(rng, lambda: {"type": "text", "text": maybe(rng, lambda: "ok")}, 0.1)
        return {"type": "thinking", "thinking": maybe(rng, lambda: "hmm", 0.2), "signature": "s"}

    return {"type": "message", "role": "assistant",
            "content": maybe(rng, lambda: [block(i) for i in range(rng.randrange(1, 4))], 0.15),
            "stop_reason": maybe(rng, lambda: "tool_use", 0.1),
            "usage": maybe(rng, lambda: {"input_tokens": 3, "output_tokens": 1})}


def sdk_reply(rng: random.Random, wire_format: str) -> Any:
    """A reply of ``wire_format`` as the SDK builds it from a server's JSON: ``model_construct``
    (no validation; nested objects become SDK objects by their field types), so lone surrogates,
    non-string texts and scalars where lists belong arrive as the server sent them."""
    raw = GENERATORS[wire_format](rng)
    if wire_format == "chat_completions":
        from openai.types.chat import ChatCompletion, ChatCompletionMessage
        cls = ChatCompletion if isinstance(raw, dict) and "choices" in raw else ChatCompletionMessage
    elif wire_format == "responses":
        from openai.types.responses import Response as cls
    else:
        from anthropic.types import Message as cls
    return cls.model_construct(**raw) if isinstance(raw, dict) else raw


GENERATORS = {"chat_completions": chat_reply, "responses": responses_reply, "messages": anthropic_reply}
