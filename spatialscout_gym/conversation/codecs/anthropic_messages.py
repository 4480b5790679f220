"""The Anthropic messages wire format.

Requests: ``system`` (a system message, if any) and ``messages`` with alternating roles:
consecutive tool results and user messages merge into one user turn (tool results first), and
images travel inside the tool results. An assistant turn with thinking blocks is replayed verbatim
(``Message.provider_content``), as the API requires. Responses: ``content`` blocks (``text``,
``tool_use``, ``thinking``, ``redacted_thinking``), ``usage`` and ``stop_reason``.

Prompt caching: the last content block of each of the last :data:`CACHE_BREAKPOINTS` user turns
carries ``cache_control: {"type": "ephemeral"}``, so each request reads the prefix the one before
it wrote (tools, system and history; the service caches nothing under its minimum length). The
service counts ``usage.input_tokens`` without the cached part; :func:`parse_response` records the
whole input (``input_tokens + cache_creation_input_tokens + cache_read_input_tokens``), as the
OpenAI formats do, and :func:`~spatialscout_gym.conversation.codecs.common.cached_input_tokens` /
:func:`~spatialscout_gym.conversation.codecs.common.cache_write_tokens` read the two parts.
"""

from __future__ import annotations

import base64
from typing import Any, Iterable

from spatialscout_gym.episode.tools import to_jsonable
from spatialscout_gym.conversation.codecs.common import Reading, as_json, call_name, get, usage_counts
from spatialscout_gym.conversation.messages import Message, ModelReply, Part, ToolCall, parse_arguments, token_count
from spatialscout_gym.conversation.schemas import tool_schemas

__all__ = ["tools", "messages", "to_request", "parse_response", "image_tokens", "CACHE_BREAKPOINTS"]

#: User turns whose last block is a prompt-cache breakpoint: the newest (written for the next request)
#: and the one before it (read by this request). The API allows at most 4 per request.
CACHE_BREAKPOINTS = 2


def tools(names: Iterable[str] | None = None) -> list[dict]:
    """The tools (all ten, or those in ``names``) as ``{"name", "description", "input_schema"}``."""
    return [{"name": t["name"], "description": t["description"], "input_schema": t["parameters"]}
            for t in tool_schemas(names)]


def _blocks(parts: list[Part]) -> list[dict]:
    return [{"type": "text", "text": p} if isinstance(p, str) else
            {"type": "image", "source": {"type": "base64", "media_type": "image/jpeg",
                                         "data": base64.b64encode(p.jpeg).decode("ascii")}}
            for p in parts if not (isinstance(p, str) and not p)]


def messages(conversation: list[Message]) -> tuple[str, list[dict]]:
    """The conversation as ``(system, messages)``."""
    system = ""
    out: list[dict] = []

    def add_user(content: list[dict]) -> None:
        if out and out[-1]["role"] == "user":
            out[-1]["content"].extend(content)
        else:
            out.append({"role": "user", "content": list(content)})

    for m in conversation:
        if m.role == "system":
            system = m.text
        elif m.role == "user":
            add_user(_blocks(m.content))
        elif m.role == "tool":
            add_user([{"type": "tool_result", "tool_use_id": m.tool_call_id, "content": _blocks(m.content),
                       "is_error": bool(m.is_error)}])
        elif m.role == "assistant":
            if m.provider_content is not None:
                content = list(m.provider_content)
            else:
                content = [{"type": "text", "text": m.text}] if m.text else []
                for c in m.tool_calls:
                    args, _ = parse_arguments(c.arguments)
                    content.append({"type": "tool_use", "id": c.id, "name": call_name(c),
                                    "input": to_jsonable(args) if args is not None else {}})
            out.append({"role": "assistant", "content": content or [{"type": "text", "text": "(no text)"}]})
        else:
            raise ValueError(f"unknown message role {m.role!r}; expected system, user, assistant or tool")
    return system, out


def to_request(conversation: list[Message], tool_names: Iterable[str] | None = None, *,
               cache_breakpoints: int = 0) -> dict:
    """The conversation and tool fields of a ``messages.create`` request (``system`` only when the
    conversation has a system message), with ``cache_control`` on the last block of each of the last
    ``cache_breakpoints`` user turns (0: none; the text sent is the same either way)."""
    system, msgs = messages(conversation)
    users = [m for m in msgs if m["role"] == "user" and m["content"]]
    for m in users[len(users) - min(cache_breakpoints, len(users)):]:
        m["content"][-1] = {**m["content"][-1], "cache_control": {"type": "ephemeral"}}
    request: dict[str, Any] = {"messages": msgs, "tools": tools(tool_names)}
    if system:
        request["system"] = system
    return request


def parse_response(reply: Any) -> ModelReply:
    """Text, tool calls, usage and stop reason; with thinking blocks, the whole content is kept as
    ``provider_content`` (it must be sent back verbatim). Parts of the wrong kind (``content``
    that is not a list, a block that is not an object, a text that is not a string) are listed in
    :attr:`~spatialscout_gym.conversation.messages.ModelReply.malformed`; nothing raises."""
    r = Reading()
    content = r.items(get(reply, "content") if r.obj(reply, "the message") else None, "the message content")
    texts: list[str] = []
    calls: list = []
    kept: list = []
    replay = False
    for i, block in enumerate(content):
        if not r.obj(block, f"content block {i}"):
            continue
        item = as_json(block)
        kind = get(block, "type")
        if kind == "text":
            texts.append(r.text(get(block, "text"), f"the text of content block {i}"))
        elif kind == "tool_use":
            cid = r.call_id(get(block, "id"), len(calls))
            item["id"] = cid          # a made-up id is replayed too, so the tool result answers it
            calls.append(ToolCall(cid, get(block, "name"), get(block, "input")))
        elif kind in ("thinking", "redacted_thinking"):
            replay = True
        kept.append(item)
    return ModelReply("\n".join(t for t in texts if t), calls, _usage(get(reply, "usage")),
                      provider_content=kept if replay else None, stop_reason=r.stop(get(reply, "stop_reason")),
                      malformed=r.bad)


def _usage(usage: Any) -> dict:
    """``{"input_tokens", "output_tokens"}`` with the input the service answered from its prompt
    cache and wrote to it counted in (Anthropic's ``input_tokens`` leaves both out)."""
    counts = usage_counts(usage, "input_tokens", "output_tokens")
    if usage is not None and "input_tokens" in counts:
        counts["input_tokens"] += sum(token_count(get(usage, k)) or 0
                                      for k in ("cache_creation_input_tokens", "cache_read_input_tokens"))
    return counts


def image_tokens(width: int, height: int) -> int:
    """Input tokens Anthropic counts for one image: width x height / 750 (its vision docs; 197 for
    384 x 384)."""
    import math
    return math.ceil(width * height / 750)
