"""Gymnasium spaces of the tool-calling conversation: what :class:`~spatialscout_gym.wrappers.tool_call.ToolCallWrapper`
observes (a list of :class:`~spatialscout_gym.conversation.messages.Message`) and takes (one model
reply in any form :func:`~spatialscout_gym.conversation.codecs.parse_reply` reads).

Neither is a fixed-shape space, so neither flattens for a neural policy; they exist so that
``observation_space.contains(obs)`` and ``action_space.contains(reply)`` hold for what the wrapper
really returns and accepts, and Gymnasium's env checker can sample and check them.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np
from gymnasium import spaces

from spatialscout_gym.episode.tools import TOOL_NAMES
from spatialscout_gym.conversation.codecs import parse_reply
from spatialscout_gym.conversation.messages import DeliveredImage, Message

__all__ = ["MessagesSpace", "ReplySpace", "ROLES"]

ROLES: tuple[str, ...] = ("system", "user", "assistant", "tool")
"""Roles of a :class:`Message`."""


class MessagesSpace(spaces.Space):
    """A list of :class:`Message` (text and delivered JPEG parts, docs/protocol.md section 3): the
    messages to send a model next. ``sample`` gives one user message with a short text."""

    def __init__(self, seed: int | np.random.Generator | None = None) -> None:
        super().__init__(None, None, seed)

    @property
    def is_np_flattenable(self) -> bool:
        return False

    def contains(self, x: Any) -> bool:
        return isinstance(x, list) and all(
            isinstance(m, Message) and m.role in ROLES
            and all(isinstance(p, (str, DeliveredImage)) for p in m.content) for m in x)

    def sample(self, mask: Any = None, probability: Any = None) -> list[Message]:
        return [Message("user", [f"message {int(self.np_random.integers(1000))}"])]

    def __repr__(self) -> str:
        return "MessagesSpace()"

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, MessagesSpace)


class ReplySpace(spaces.Space):
    """One model reply: anything :func:`parse_reply` reads (an OpenAI or Anthropic message, SDK
    object or dict, a :class:`~spatialscout_gym.conversation.messages.ModelReply`, or a list of
    ``{"name", "arguments"}``). ``sample`` gives a list of one call of a random tool with empty
    arguments (which the episode may refuse with its reason, as it would a model's)."""

    def __init__(self, tools: Sequence[str] = TOOL_NAMES, seed: int | np.random.Generator | None = None) -> None:
        self.tools = tuple(tools)
        super().__init__(None, None, seed)

    @property
    def is_np_flattenable(self) -> bool:
        return False

    def contains(self, x: Any) -> bool:
        try:
            parse_reply(x)
        except (TypeError, ValueError):
            return False
        return True

    def sample(self, mask: Any = None, probability: Any = None) -> list[dict]:
        return [{"name": self.tools[int(self.np_random.integers(len(self.tools)))], "arguments": {}}]

    def __repr__(self) -> str:
        return f"ReplySpace(tools={len(self.tools)})"

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, ReplySpace) and other.tools == self.tools
