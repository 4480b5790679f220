"""The episode layer: the ten tools as one renderer-agnostic state machine (docs/protocol.md sections 4-5)."""

from spatialscout_gym.episode.episode import Episode, EpisodeFrame
from spatialscout_gym.episode.tools import TOOL_NAMES, TOOL_SPECS, ToolResult

__all__ = ["Episode", "EpisodeFrame", "ToolResult", "TOOL_NAMES", "TOOL_SPECS"]
