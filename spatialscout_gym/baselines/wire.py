"""The model services' wire formats under their earlier names (kept for callers of this module):
each is one function of its codec in :mod:`spatialscout_gym.conversation.codecs`, where the formats
live (Chat Completions, Responses, Anthropic Messages)."""

from __future__ import annotations

from spatialscout_gym.conversation.codecs import anthropic_messages
from spatialscout_gym.conversation.codecs import chat_completions
from spatialscout_gym.conversation.codecs import responses

__all__ = ["openai_tools", "anthropic_tools", "responses_tools", "to_openai_messages", "to_anthropic_messages",
           "to_responses_input"]

openai_tools = chat_completions.tools
anthropic_tools = anthropic_messages.tools
responses_tools = responses.tools
to_openai_messages = chat_completions.messages
to_anthropic_messages = anthropic_messages.messages
to_responses_input = responses.input_items
