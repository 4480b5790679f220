"""The OpenAI chat-completions wire format (also what OpenAI-compatible servers speak).

Requests: ``messages`` (system, user, assistant with ``tool_calls``, ``tool`` results) and ``tools``
as ``{"type": "function", "function": {...}}``. Tool messages carry text only, so the images of a
run of tool results follow it in one user message. Responses: a whole completion (its first choice
and ``usage.prompt_tokens`` / ``completion_tokens``) or one assistant message.
"""

from __future__ import annotations

from typing import Any, Iterable

from spatialscout_gym.conversation.codecs.common import (ImageDeferral, Reading, call_name, data_uri, get, json_args,
                                                     usage_counts)
from spatialscout_gym.conversation.messages import Message, ModelReply, Part, ToolCall, short_repr
from spatialscout_gym.conversation.schemas import tool_schemas

__all__ = ["tools", "messages", "to_request", "parse_response", "image_tokens"]


def tools(names: Iterable[str] | None = None) -> list[dict]:
    """The tools (all ten, or those in ``names``) as ``{"type": "function", "function": {...}}``."""
    return [{"type": "function", "function": t} for t in tool_schemas(names)]


def _user_parts(parts: list[Part]) -> list[dict]:
    return [{"type": "text", "text": p} if isinstance(p, str)
            else {"type": "image_url", "image_url": {"url": data_uri(p)}} for p in parts]


def messages(conversation: list[Message]) -> list[dict]:
    """The conversation as chat-completions ``messages``."""
    out: list[dict] = []
    images = ImageDeferral(out, _user_parts)
    for m in conversation:
        if m.role != "tool":
            images.flush()
        if m.role == "system":
            out.append({"role": "system", "content": m.text})
        elif m.role == "user":
            out.append({"role": "user", "content": _user_parts(m.content)})
        elif m.role == "assistant":
            d: dict[str, Any] = {"role": "assistant", "content": m.text or None}
            if m.tool_calls:
                d["tool_calls"] = [{"id": c.id, "type": "function", "function": {
                    "name": call_name(c), "arguments": json_args(c.arguments)}} for c in m.tool_calls]
            out.append(d)
        elif m.role == "tool":
            out.append({"role": "tool", "tool_call_id": m.tool_call_id, "content": images.tool_text(m)})
        else:
            raise ValueError(f"unknown message role {m.role!r}; expected system, user, assistant or tool")
    images.flush()
    return out


def to_request(conversation: list[Message], tool_names: Iterable[str] | None = None) -> dict:
    """The conversation and tool fields of a ``chat.completions.create`` request."""
    return {"messages": messages(conversation), "tools": tools(tool_names), "tool_choice": "auto"}


def parse_response(reply: Any) -> ModelReply:
    """A completion (first choice, finish reason, usage) or an assistant message, in neutral form.
    Parts of the wrong kind (``choices`` that is not a non-empty list, ``tool_calls`` that is not a
    list, a call that is not an object, a text that is not a string) are listed in
    :attr:`~spatialscout_gym.conversation.messages.ModelReply.malformed`; nothing raises."""
    r = Reading()
    if get(reply, "choices") is not None or get(reply, "object") == "chat.completion":
        choices = r.items(get(reply, "choices"), "the completion's choices")
        if not choices and not r.bad:
            r.bad.append("the completion has no choices")
        choice = choices[0] if choices and r.obj(choices[0], "choice 0") else None
        message = get(choice, "message") if choice is not None else None
        parsed = _message(message if message is not None else {"role": "assistant"}, r)
        parsed.stop_reason = r.stop(get(choice, "finish_reason")) if choice is not None else None
        parsed.usage = usage_counts(get(reply, "usage"), "prompt_tokens", "completion_tokens")
        return parsed
    return _message(reply, r)


def _message(message: Any, r: Reading) -> ModelReply:
    if not r.obj(message, "the message"):
        return ModelReply(malformed=r.bad)
    calls: list = []
    for i, tc in enumerate(r.items(get(message, "tool_calls"), "tool_calls")):
        if not r.obj(tc, f"tool call {i}"):
            continue
        fn = get(tc, "function")
        if r.obj(fn, f"the function of tool call {i}"):
            calls.append(ToolCall(r.call_id(get(tc, "id"), len(calls)), get(fn, "name"), get(fn, "arguments")))
    content = get(message, "content")
    if isinstance(content, (list, tuple)):   # content parts: text (and refusal) parts are read
        texts = []
        for i, part in enumerate(content):
            kind = get(part, "type") if r.obj(part, f"content part {i}") else None
            if kind in ("text", "refusal"):
                texts.append(r.text(get(part, kind), f"the {kind} of content part {i}"))
            elif kind is not None:
                r.bad.append(f"content part {i} has type {short_repr(kind, 40)}, not text")
        text = "\n".join(t for t in texts if t)
    else:
        text = r.text(content, "the message content")
    return ModelReply(text, calls, malformed=r.bad)


def image_tokens(width: int, height: int) -> int:
    """Input tokens OpenAI counts for one image at high detail: fit in 2048 x 2048, shortest side
    down to 768, then 85 + 170 per 512-px tile (OpenAI's vision pricing rule; 255 for 384 x 384)."""
    import math
    w, h = float(width), float(height)
    s = min(1.0, 2048 / max(w, h))
    w, h = w * s, h * s
    s = min(1.0, 768 / min(w, h))
    w, h = w * s, h * s
    return 85 + 170 * math.ceil(w / 512) * math.ceil(h / 512)
