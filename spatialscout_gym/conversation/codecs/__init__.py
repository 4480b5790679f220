"""One codec per model-service wire format (docs/protocol.md section 5): the neutral conversation
(:mod:`spatialscout_gym.conversation.messages`) to a request, and a response back to a
:class:`~spatialscout_gym.conversation.messages.ModelReply`.

* :mod:`.chat_completions`: OpenAI chat completions (and compatible servers);
* :mod:`.responses`: OpenAI Responses;
* :mod:`.anthropic_messages`: Anthropic messages.

Each module has ``to_request(messages, tool_names)`` (the request body's conversation and tool
fields, as keyword arguments of the SDK call) and ``parse_response(response)`` (an SDK object or its
JSON dict). The wrapper's :func:`parse_reply` and the VLM agents' providers read replies through
these modules (an MCP client calls the tools itself: no reply reaches the server).
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

from spatialscout_gym.conversation.codecs import anthropic_messages
from spatialscout_gym.conversation.codecs import chat_completions
from spatialscout_gym.conversation.codecs import responses
from spatialscout_gym.conversation.messages import WIRE_FORMATS, ModelReply, ToolCall, short_repr, unique_id

__all__ = ["chat_completions", "responses", "anthropic_messages", "CODECS", "codec_of", "parse_reply",
           "wire_format_of"]

CODECS: dict[str, ModuleType] = {"chat_completions": chat_completions, "responses": responses,
                                 "messages": anthropic_messages}
"""Wire format (:data:`WIRE_FORMATS`) -> its codec module: the one map from a format to its codec."""


def codec_of(wire_format: str) -> ModuleType:
    """The codec module of ``wire_format``; ``ValueError`` naming the known formats otherwise."""
    if wire_format not in CODECS:
        raise ValueError(f"unknown wire format {wire_format!r}; expected one of {', '.join(WIRE_FORMATS)}")
    return CODECS[wire_format]


def _sdk_format(reply: Any) -> str | None:
    """The wire format an SDK object declares by its type (``openai.types.chat``, ...)."""
    module = type(reply).__module__
    if module.startswith("openai.types.chat"):
        return "chat_completions"
    if module.startswith("openai.types.responses"):
        return "responses"
    if module.startswith("anthropic.types"):
        return "messages"
    return None


def wire_format_of(reply: Any) -> str | None:
    """The wire format a reply declares: its SDK type, or a dict's ``object`` (``chat.completion``,
    ``response``) or ``type`` (``message``: Anthropic); a dict that declares none and holds
    ``choices``, ``output`` or ``role`` is a chat completion, a Responses response or a chat message.
    Never decided by the shape of ``content`` (a chat message may hold a list of parts too)."""
    if not isinstance(reply, dict):
        return _sdk_format(reply)
    obj, kind = reply.get("object"), reply.get("type")
    if obj == "chat.completion":
        return "chat_completions"
    if obj == "response":
        return "responses"
    if kind == "message":
        return "messages"
    if "choices" in reply:
        return "chat_completions"
    if "output" in reply:
        return "responses"
    if "role" in reply or "tool_calls" in reply:
        return "chat_completions"
    return None


def parse_reply(reply: Any, wire_format: str | None = None) -> ModelReply:
    """One model reply in neutral form, read by the codec of its wire format
    (the modules of this package).

    Accepts a :class:`ModelReply`; an OpenAI chat completion (its first choice, finish reason and
    usage) or assistant message; an OpenAI Responses response (``output`` items); an Anthropic
    message (``content`` blocks: text, tool use, thinking; usage); or a plain list of
    ``{"name": str, "arguments": dict | JSON str}`` (ids are made up as ``call_0, call_1, ...``).
    SDK objects and their JSON dicts are both read; malformed usage counts are left out (unknown).

    ``wire_format`` (one of :data:`WIRE_FORMATS`: the format of the provider in use) decodes every
    reply with that codec, whatever its shape: a reply of the wrong shape is read as far as it
    goes, the rest listed in :attr:`ModelReply.malformed`. Without it, the format is the one the
    reply declares (:func:`wire_format_of`).

    Raises
    ------
    TypeError
        No ``wire_format`` and the reply declares none of these forms.
    """
    if isinstance(reply, ModelReply):
        return reply
    if isinstance(reply, (list, tuple)) and wire_format is None:
        calls: list[ToolCall] = []
        bad: list[str] = []
        seen: dict[str, int] = {}
        for i, c in enumerate(reply):
            if not isinstance(c, dict) or "name" not in c:
                bad.append(f"item {i} is {short_repr(c, 60)}, not {{'name': str, 'arguments': object}}")
                continue
            cid = c.get("id")
            calls.append(ToolCall(unique_id(cid if isinstance(cid, str) and cid else f"call_{i}", seen), c["name"],
                                  c.get("arguments")))
        return ModelReply(tool_calls=calls, malformed=bad)
    if wire_format is None:
        wire_format = wire_format_of(reply)
        if wire_format is None:
            raise TypeError(f"cannot read a model reply from {type(reply).__name__}: expected an OpenAI message "
                            f"or completion, a Responses response, an Anthropic message, a list of "
                            f"{{'name', 'arguments'}} or a ModelReply")
    return codec_of(wire_format).parse_response(reply)
