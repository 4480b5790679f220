"""The OpenAI Responses wire format.

Requests: ``instructions`` (a system message, if any) and ``input`` items; an assistant turn is
replayed as the output items the API returned (reasoning items, function calls, messages:
``Message.provider_content``), so reasoning carries over between turns; each tool result is a
``function_call_output`` item. Function outputs carry text only, so the images of a run of tool
results follow it in one user message. Responses: ``output`` items, ``usage.input_tokens`` /
``output_tokens`` and ``incomplete_details.reason``.
"""

from __future__ import annotations

from typing import Any, Iterable

from spatialscout_gym.wrappers.codecs.common import (ImageDeferral, as_json, call_name, data_uri, get,
                                                     json_args, usage_counts)
from spatialscout_gym.wrappers.conversation import Message, ModelReply, Part, ToolCall
from spatialscout_gym.wrappers.schemas import tool_schemas

__all__ = ["tools", "input_items", "to_request", "parse_response", "is_response"]


def tools(names: Iterable[str] | None = None) -> list[dict]:
    """The tools (all ten, or those in ``names``) as ``{"type": "function", "name", ...}``."""
    return [{"type": "function", "name": t["name"], "description": t["description"],
             "parameters": t["parameters"], "strict": False} for t in tool_schemas(names)]


def _parts(content: list[Part]) -> list[dict]:
    return [{"type": "input_text", "text": p} if isinstance(p, str)
            else {"type": "input_image", "image_url": data_uri(p), "detail": "auto"} for p in content]


def input_items(conversation: list[Message]) -> tuple[str, list[dict]]:
    """The conversation as ``(instructions, input items)``."""
    instructions = ""
    items: list[dict] = []
    images = ImageDeferral(items, _parts)
    for m in conversation:
        if m.role != "tool":
            images.flush()
        if m.role == "system":
            instructions = m.text
        elif m.role == "user":
            items.append({"role": "user", "content": _parts(m.content)})
        elif m.role == "assistant":
            if m.provider_content is not None:
                items.extend(dict(item) for item in m.provider_content)
            else:
                if m.text:
                    items.append({"role": "assistant", "content": m.text})
                items += [{"type": "function_call", "call_id": c.id, "name": call_name(c),
                           "arguments": json_args(c.arguments)} for c in m.tool_calls]
        elif m.role == "tool":
            items.append({"type": "function_call_output", "call_id": m.tool_call_id,
                          "output": images.tool_text(m)})
        else:
            raise ValueError(f"unknown message role {m.role!r}; expected system, user, assistant or tool")
    images.flush()
    return instructions, items


def to_request(conversation: list[Message], tool_names: Iterable[str] | None = None) -> dict:
    """The conversation and tool fields of a ``responses.create`` request (``instructions`` only
    when the conversation has a system message)."""
    instructions, items = input_items(conversation)
    request: dict[str, Any] = {"input": items, "tools": tools(tool_names), "tool_choice": "auto"}
    if instructions:
        request["instructions"] = instructions
    return request


def is_response(reply: Any) -> bool:
    """Whether ``reply`` looks like a Responses API response (it has a list of ``output`` items)."""
    return isinstance(get(reply, "output"), list)


def parse_response(reply: Any) -> ModelReply:
    """Function calls, output text, usage and the stop reason; the output items are kept as
    ``provider_content`` for replay.

    Raises
    ------
    ValueError
        A response without ``output``.
    """
    output = get(reply, "output")
    if not isinstance(output, list):
        raise ValueError(f"a Responses reply without output: {str(reply)[:300]}")
    texts, calls = [], []
    for item in output:
        kind = get(item, "type")
        if kind == "function_call":
            calls.append(ToolCall(get(item, "call_id"), get(item, "name"), get(item, "arguments")))
        elif kind == "message":
            texts += [get(c, "text", "") for c in (get(item, "content") or []) if get(c, "type") == "output_text"]
    incomplete = get(reply, "incomplete_details")
    stop = get(incomplete, "reason") if incomplete is not None else None
    return ModelReply("\n".join(texts), calls, usage_counts(get(reply, "usage"), "input_tokens", "output_tokens"),
                      stop_reason=stop or get(reply, "status"), provider_content=[as_json(i) for i in output])
