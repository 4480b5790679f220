"""The model services' wire formats: the neutral conversation and the ten tools as OpenAI
chat-completions, OpenAI Responses and Anthropic messages requests (used by
:mod:`spatialscout_gym.baselines.providers`).

The tools come from one source (:func:`spatialscout_gym.wrappers.schemas.tool_schemas`); the
conversation is :class:`~spatialscout_gym.wrappers.conversation.Message` as
:class:`~spatialscout_gym.wrappers.tool_call.ToolCallWrapper` keeps it.
"""

from __future__ import annotations

import base64
import json
from typing import Any, Iterable

from spatialscout_gym.episode.tools import to_jsonable
from spatialscout_gym.wrappers.conversation import Message, Part, parse_arguments
from spatialscout_gym.wrappers.images import DeliveredImage
from spatialscout_gym.wrappers.schemas import tool_schemas

__all__ = ["openai_tools", "anthropic_tools", "responses_tools", "to_openai_messages", "to_anthropic_messages",
           "to_responses_input"]


def openai_tools(names: Iterable[str] | None = None) -> list[dict]:
    """The tools (all ten, or those in ``names``) in the OpenAI chat-completions format
    ``{"type": "function", "function": {...}}``."""
    return [{"type": "function", "function": t} for t in tool_schemas(names)]


def anthropic_tools(names: Iterable[str] | None = None) -> list[dict]:
    """The tools (all ten, or those in ``names``) in the Anthropic messages format
    ``{"name", "description", "input_schema"}``."""
    return [{"name": t["name"], "description": t["description"], "input_schema": t["parameters"]}
            for t in tool_schemas(names)]


def responses_tools(names: Iterable[str] | None = None) -> list[dict]:
    """The tools (all ten, or those in ``names``) in the OpenAI Responses format
    ``{"type": "function", "name", "description", "parameters"}``."""
    return [{"type": "function", "name": t["name"], "description": t["description"],
             "parameters": t["parameters"], "strict": False} for t in tool_schemas(names)]


def _data_uri(img: DeliveredImage) -> str:
    return "data:image/jpeg;base64," + base64.b64encode(img.jpeg).decode("ascii")


def _json_args(raw: Any) -> str:
    if isinstance(raw, str):
        return raw
    try:
        return json.dumps(to_jsonable(raw if raw is not None else {}))
    except (TypeError, ValueError):
        return json.dumps(repr(raw))


def _name(c: Any) -> str:
    return c.name if isinstance(c.name, str) else repr(c.name)


def to_openai_messages(messages: list[Message]) -> list[dict]:
    """The conversation in the OpenAI chat-completions format.

    Tool messages carry text only in this format, so the images of a run of tool results follow
    it in one user message, each after its caption.
    """
    out: list[dict] = []
    pending: list[dict] = []

    def flush() -> None:
        if pending:
            out.append({"role": "user", "content": list(pending)})
            pending.clear()

    def user_parts(parts: list[Part]) -> list[dict]:
        return [{"type": "text", "text": p} if isinstance(p, str)
                else {"type": "image_url", "image_url": {"url": _data_uri(p)}} for p in parts]

    for m in messages:
        if m.role != "tool":
            flush()
        if m.role == "system":
            out.append({"role": "system", "content": m.text})
        elif m.role == "user":
            out.append({"role": "user", "content": user_parts(m.content)})
        elif m.role == "assistant":
            d: dict[str, Any] = {"role": "assistant", "content": m.text or None}
            if m.tool_calls:
                d["tool_calls"] = [{"id": c.id, "type": "function", "function": {
                    "name": _name(c), "arguments": _json_args(c.arguments)}} for c in m.tool_calls]
            out.append(d)
        elif m.role == "tool":
            text = m.text
            if m.images:
                text += f" (image of frame {m.images[0].frame_id} follows in the next user message)"
                pending.extend(user_parts(m.content[1:]))
            out.append({"role": "tool", "tool_call_id": m.tool_call_id, "content": text})
        else:
            raise ValueError(f"unknown message role {m.role!r}; expected system, user, assistant or tool")
    flush()
    return out


def to_anthropic_messages(messages: list[Message]) -> tuple[str, list[dict]]:
    """The conversation in the Anthropic messages format: ``(system, messages)``.

    Consecutive tool results and user messages merge into one user turn (tool results first), as
    the format requires alternating roles; images travel inside the tool results.
    """
    system = ""
    out: list[dict] = []

    def blocks(parts: list[Part]) -> list[dict]:
        return [{"type": "text", "text": p} if isinstance(p, str) else
                {"type": "image", "source": {"type": "base64", "media_type": "image/jpeg",
                                             "data": base64.b64encode(p.jpeg).decode("ascii")}}
                for p in parts if not (isinstance(p, str) and not p)]

    def add_user(content: list[dict]) -> None:
        if out and out[-1]["role"] == "user":
            out[-1]["content"].extend(content)
        else:
            out.append({"role": "user", "content": list(content)})

    for m in messages:
        if m.role == "system":
            system = m.text
        elif m.role == "user":
            add_user(blocks(m.content))
        elif m.role == "tool":
            add_user([{"type": "tool_result", "tool_use_id": m.tool_call_id, "content": blocks(m.content),
                       "is_error": bool(m.is_error)}])
        elif m.role == "assistant":
            if m.provider_content is not None:
                content = list(m.provider_content)
            else:
                content = [{"type": "text", "text": m.text}] if m.text else []
                for c in m.tool_calls:
                    args, _ = parse_arguments(c.arguments)
                    content.append({"type": "tool_use", "id": c.id, "name": _name(c),
                                    "input": to_jsonable(args) if args is not None else {}})
            out.append({"role": "assistant", "content": content or [{"type": "text", "text": "(no text)"}]})
        else:
            raise ValueError(f"unknown message role {m.role!r}; expected system, user, assistant or tool")
    return system, out


def to_responses_input(messages: list[Message]) -> tuple[str, list[dict]]:
    """The conversation in the OpenAI Responses format: ``(instructions, input items)``.

    An assistant turn is replayed as the output items the API returned (reasoning items, function
    calls, messages: ``Message.provider_content``), so reasoning carries over between turns; each
    tool result is a ``function_call_output`` item for its ``call_id``. Function outputs carry text,
    so the images of a run of tool results follow it in one user message, each after its caption.
    """
    instructions = ""
    items: list[dict] = []
    pending: list[dict] = []

    def flush() -> None:
        if pending:
            items.append({"role": "user", "content": list(pending)})
            pending.clear()

    def parts(content: list[Part]) -> list[dict]:
        return [{"type": "input_text", "text": p} if isinstance(p, str)
                else {"type": "input_image", "image_url": _data_uri(p), "detail": "auto"} for p in content]

    for m in messages:
        if m.role != "tool":
            flush()
        if m.role == "system":
            instructions = m.text
        elif m.role == "user":
            items.append({"role": "user", "content": parts(m.content)})
        elif m.role == "assistant":
            if m.provider_content is not None:
                items.extend(dict(item) for item in m.provider_content)
            else:
                if m.text:
                    items.append({"role": "assistant", "content": m.text})
                items += [{"type": "function_call", "call_id": c.id, "name": _name(c),
                           "arguments": _json_args(c.arguments)} for c in m.tool_calls]
        elif m.role == "tool":
            text = m.text
            if m.images:
                text += f" (image of frame {m.images[0].frame_id} follows in the next user message)"
                pending.extend(parts(m.content[1:]))
            items.append({"type": "function_call_output", "call_id": m.tool_call_id, "output": text})
        else:
            raise ValueError(f"unknown message role {m.role!r}; expected system, user, assistant or tool")
    flush()
    return instructions, items
