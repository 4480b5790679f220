"""One codec per model-service wire format (docs/protocol.md section 5): the neutral conversation
(:mod:`spatialscout_gym.wrappers.conversation`) to a request, and a response back to a
:class:`~spatialscout_gym.wrappers.conversation.ModelReply`.

* :mod:`.chat_completions`: OpenAI chat completions (and compatible servers);
* :mod:`.responses`: OpenAI Responses;
* :mod:`.anthropic_messages`: Anthropic messages.

Each module has ``to_request(messages, tool_names)`` (the request body's conversation and tool
fields, as keyword arguments of the SDK call) and ``parse_response(response)`` (an SDK object or its
JSON dict). The wrapper's :func:`parse_reply`, the VLM
agents' providers and the MCP path all read replies through these modules.
"""

from __future__ import annotations

from typing import Any

from spatialscout_gym.wrappers.codecs import anthropic_messages, chat_completions, responses
from spatialscout_gym.wrappers.conversation import ModelReply, ToolCall, short_repr

__all__ = ["chat_completions", "responses", "anthropic_messages", "parse_reply"]


def parse_reply(reply: Any) -> ModelReply:
    """One model reply in neutral form, read by the codec of its wire format
    (the modules of this package).

    Accepts a :class:`ModelReply`; an OpenAI chat completion (its first choice, finish reason and
    usage) or assistant message; an OpenAI Responses response (``output`` items); an Anthropic
    message (``content`` blocks: text, tool use, thinking; usage); or a plain list of
    ``{"name": str, "arguments": dict | JSON str}`` (ids are made up as ``call_0, call_1, ...``).
    SDK objects and their JSON dicts are both read; malformed usage counts are left out (unknown).

    Raises
    ------
    TypeError
        The reply has none of these forms.
    """
    if isinstance(reply, ModelReply):
        return reply
    if isinstance(reply, (list, tuple)):
        calls = []
        for i, c in enumerate(reply):
            if not isinstance(c, dict) or "name" not in c:
                raise TypeError(f"a reply given as a list must hold {{'name': str, 'arguments': dict | JSON "
                                f"str}} items; item {i} is {short_repr(c)}")
            calls.append(ToolCall(str(c.get("id") or f"call_{i}"), c["name"], c.get("arguments")))
        return ModelReply(tool_calls=calls)
    for codec in (responses, anthropic_messages, chat_completions):
        if codec.is_response(reply):
            try:
                return codec.parse_response(reply)
            except ValueError as exc:
                raise TypeError(str(exc)) from exc
    raise TypeError(f"cannot read a model reply from {type(reply).__name__}: expected an OpenAI message or "
                    f"completion, a Responses response, an Anthropic message, a list of {{'name', 'arguments'}} "
                    f"or a ModelReply")
