"""One codec per model-service wire format (docs/protocol.md section 5): the neutral conversation
(:mod:`spatialscout_gym.wrappers.conversation`) to a request, and a response back to a
:class:`~spatialscout_gym.wrappers.conversation.ModelReply`.

* :mod:`.chat_completions`: OpenAI chat completions (and compatible servers);
* :mod:`.responses`: OpenAI Responses;
* :mod:`.anthropic_messages`: Anthropic messages.

Each module has ``to_request(messages, tool_names)`` (the request body's conversation and tool
fields, as keyword arguments of the SDK call) and ``parse_response(response)`` (an SDK object or its
JSON dict). The wrapper's :func:`~spatialscout_gym.wrappers.conversation.parse_reply`, the VLM
agents' providers and the MCP path all read replies through these modules.
"""

__all__ = ["chat_completions", "responses", "anthropic_messages"]
