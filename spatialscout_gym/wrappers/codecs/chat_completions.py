"""The OpenAI chat-completions wire format (also what OpenAI-compatible servers speak).

Requests: ``messages`` (system, user, assistant with ``tool_calls``, ``tool`` results) and ``tools``
as ``{"type": "function", "function": {...}}``. Tool messages carry text only, so the images of a
run of tool results follow it in one user message. Responses: a whole completion (its first choice
and ``usage.prompt_tokens`` / ``completion_tokens``) or one assistant message.
"""

from __future__ import annotations

from typing import Any, Iterable

from spatialscout_gym.wrappers.codecs.common import (ImageDeferral, call_name, data_uri, get, json_args,
                                                     usage_counts)
from spatialscout_gym.wrappers.conversation import Message, ModelReply, Part, ToolCall
from spatialscout_gym.wrappers.schemas import tool_schemas

__all__ = ["tools", "messages", "to_request", "parse_response", "is_response"]


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


def is_response(reply: Any) -> bool:
    """Whether ``reply`` looks like a completion or an assistant message of this format."""
    return bool(get(reply, "choices")) or get(reply, "role") == "assistant" or get(reply, "tool_calls") is not None


def parse_response(reply: Any) -> ModelReply:
    """A completion (first choice, finish reason, usage) or an assistant message, in neutral form.

    Raises
    ------
    ValueError
        A completion without choices.
    """
    if get(reply, "choices") is not None or get(reply, "object") == "chat.completion":
        choices = get(reply, "choices")
        if not choices:
            raise ValueError(f"a chat completion without choices: {str(reply)[:300]}")
        parsed = parse_response(get(choices[0], "message") or {"role": "assistant"})
        parsed.stop_reason = get(choices[0], "finish_reason")
        parsed.usage = usage_counts(get(reply, "usage"), "prompt_tokens", "completion_tokens")
        return parsed
    calls = []
    for tc in get(reply, "tool_calls") or []:
        fn = get(tc, "function")
        if fn is not None:
            calls.append(ToolCall(get(tc, "id"), get(fn, "name"), get(fn, "arguments")))
    content = get(reply, "content")
    return ModelReply(content if isinstance(content, str) else "", calls)
