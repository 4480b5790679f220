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

from spatialscout_gym.conversation.codecs.common import (ImageDeferral, Reading, as_json, call_name, data_uri, get,
                                                     json_args, usage_counts)
from spatialscout_gym.conversation.messages import Message, ModelReply, Part, ToolCall
from spatialscout_gym.conversation.schemas import tool_schemas

__all__ = ["tools", "input_items", "to_request", "parse_response", "image_tokens"]


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


def parse_response(reply: Any) -> ModelReply:
    """Function calls, output text, usage and the stop reason; the output items are kept as
    ``provider_content`` for replay. Parts of the wrong kind (``output`` that is not a list, an item
    that is not an object, a text that is not a string) are listed in
    :attr:`~spatialscout_gym.conversation.messages.ModelReply.malformed` (and not replayed);
    nothing raises."""
    r = Reading()
    output = get(reply, "output") if r.obj(reply, "the response") else None
    if output is None and not r.bad:
        r.bad.append("the response has no output")
    texts: list[str] = []
    calls: list = []
    replay: list = []
    for i, item in enumerate(r.items(output, "the response's output")):
        if not r.obj(item, f"output item {i}"):
            continue
        kept = as_json(item)
        kind = get(item, "type")
        if kind == "function_call":
            cid = r.call_id(get(item, "call_id"), len(calls))
            kept["call_id"] = cid     # a made-up id is replayed too, so the output answers it
            calls.append(ToolCall(cid, get(item, "name"), get(item, "arguments")))
        elif kind == "message":
            for j, c in enumerate(r.items(get(item, "content"), f"the content of output item {i}")):
                if r.obj(c, f"content part {j} of output item {i}") and get(c, "type") == "output_text":
                    texts.append(r.text(get(c, "text"), f"the text of content part {j} of output item {i}"))
        replay.append(kept)
    incomplete = get(reply, "incomplete_details")
    stop = r.stop(get(incomplete, "reason")) if incomplete is not None else None
    return ModelReply("\n".join(t for t in texts if t), calls,
                      usage_counts(get(reply, "usage"), "input_tokens", "output_tokens"),
                      stop_reason=stop or r.stop(get(reply, "status")), provider_content=replay, malformed=r.bad)


def image_tokens(width: int, height: int) -> int:
    """Input tokens of one image: the Responses API counts images as Chat Completions does."""
    from spatialscout_gym.conversation.codecs.chat_completions import image_tokens as chat_image_tokens
    return chat_image_tokens(width, height)
