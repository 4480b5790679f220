"""The one reply formatter: what a model reads for a tool result, whatever carries it.

Used by :class:`~spatialscout_gym.wrappers.tool_call.ToolCallWrapper` and the MCP server
(:mod:`spatialscout_gym.servers.mcp_server`), so both send the same text for the same tool result:

* :func:`result_text`: the JSON text ``{"ok": true, "result": ...}`` or ``{"ok": false, "error":
  ..., ["result": ...]}`` of a tool result, written by :func:`~spatialscout_gym.episode.tools.model_json`
  (numbers rounded to 3 decimals, no ``-0.0``: what a model reads, docs/protocol.md section 4);
* :func:`refusal_text`: the same payload for a call refused before it reached the tools (unknown tool,
  malformed arguments, a disabled tool, a call after the end);
* :func:`clip_error`: errors longer than :data:`MAX_ERROR_CHARS` are cut with the count stated, and
  strings in a result longer than :data:`MAX_ECHO_CHARS` likewise;
* :func:`unknown_tool_error`: the refusal that lists the valid tools;
* :func:`frame_caption` / :func:`frame_parts`: the caption of a delivered frame (camera pose in the
  task frame and the pixel conversion, docs/protocol.md section 3) and the JPEG itself;
  :func:`withheld_caption`: a frame's caption in blind mode (the pose, and that the image is withheld).
"""

from __future__ import annotations

import json
from typing import Any, Mapping

from spatialscout_gym.episode.tools import TOOL_NAMES, model_json
from spatialscout_gym.conversation.messages import short_repr
from spatialscout_gym.conversation.images import (JPEG_QUALITY, MAX_SIDE_PX, DeliveredImage, conversion_text,
                                              encode_for_model)

__all__ = ["MAX_ERROR_CHARS", "MAX_ECHO_CHARS", "MAX_VALUE_CHARS", "MAX_REFUSED_ENTRIES", "clip_error", "result_text", "refusal_text", "unknown_tool_error",
           "frame_caption", "frame_parts", "withheld_caption", "WITHHELD_TEXT"]

MAX_ERROR_CHARS = 600
"""Longest error text a model receives, characters (the rest is counted, not sent)."""


def clip_error(text: str, n: int = MAX_ERROR_CHARS) -> str:
    """``text`` cut to ``n`` characters, with the number of characters left out stated."""
    return text if len(text) <= n else text[:n] + f"... [{len(text) - n} more characters]"


MAX_ECHO_CHARS = 100
"""Longest key of a tool result echoed back to the model, characters (e.g. an id the model made up);
string values are cut at :data:`MAX_VALUE_CHARS`. Longer ones are cut with their length stated."""
MAX_VALUE_CHARS = 300
MAX_REFUSED_ENTRIES = 50
"""Entries of a ``refused`` map a model reads back; the rest are counted, not listed."""


def _cut(x: str, n: int) -> str:
    return x if len(x) <= n else x[:n] + f"... ({len(x)} chars)"


def _clip_strings(x: Any, key: Any = None) -> Any:
    """``x`` with long keys and strings cut and a long ``refused`` map shortened, so that a refusal
    stays small however many and however long the ids a model sends."""
    if isinstance(x, str):
        return _cut(x, MAX_VALUE_CHARS)
    if isinstance(x, dict):
        items = list(x.items())
        out = {_cut(k, MAX_ECHO_CHARS) if isinstance(k, str) else k: _clip_strings(v, k)
               for k, v in (items[:MAX_REFUSED_ENTRIES] if key == "refused" else items)}
        if key == "refused" and len(items) > MAX_REFUSED_ENTRIES:
            out["..."] = f"{len(items) - MAX_REFUSED_ENTRIES} more refused entries not listed"
        return out
    if isinstance(x, (list, tuple)):
        return [_clip_strings(v) for v in x]
    return x


def result_text(result: Mapping[str, Any]) -> str:
    """The JSON text a model reads for a tool result.

    ``result`` is a :class:`~spatialscout_gym.episode.tools.ToolResult` as a dict (``ok``,
    ``result``, ``error``), e.g. ``info["tool_result"]`` of a SpatialScout env step.
    """
    payload: dict[str, Any] = {"ok": bool(result["ok"])}
    if result["ok"]:
        payload["result"] = _clip_strings(result.get("result") or {})
    else:
        payload["error"] = clip_error(result.get("error") or "refused")
        if result.get("result"):
            payload["result"] = _clip_strings(result["result"])
    return model_json(payload)


def refusal_text(error: str) -> str:
    """The JSON text of a call refused before it reached the tools (``error`` already clipped)."""
    return json.dumps({"ok": False, "error": error})


def unknown_tool_error(name: Any) -> str:
    return f"unknown tool {short_repr(name, 60)}; valid tools: {', '.join(TOOL_NAMES)}"


def _pose_text(frame_id: int, pose_task: Mapping[str, Any]) -> str:
    # + 0.0 turns a rounded -0.0 into 0.0: "-0.000" would depend on the last bit of a sum
    pos = ", ".join(f"{round(float(x), 3) + 0.0:.3f}" for x in pose_task["position"])
    return (f"Frame {frame_id}: camera at [{pos}] m (task frame), yaw {pose_task['yaw_deg']:.1f} deg, pitch "
            f"{pose_task['pitch_deg']:.1f} deg.")


def frame_caption(frame_id: int, pose_task: Mapping[str, Any], image: DeliveredImage) -> str:
    """``Frame k: camera at [x, y, z] m (task frame), yaw .. deg, pitch .. deg.`` plus the conversion
    from delivered to render pixels. ``pose_task`` is the frame's pose in the task frame
    (``position`` in metres, ``yaw_deg``, ``pitch_deg``)."""
    return f"{_pose_text(frame_id, pose_task)} {conversion_text(image)}"


WITHHELD_TEXT = "The image is withheld in this episode."
"""What blind mode says in place of a frame's image."""


def withheld_caption(episode: Any, frame_id: int) -> str:
    """A captured frame of ``episode`` as blind mode sends it: the caption's pose and
    :data:`WITHHELD_TEXT`, no image and no pixel conversion."""
    frame = episode.frames[frame_id]
    return f"{_pose_text(frame_id, episode.task_frame.pose_to_task(frame.pose))} {WITHHELD_TEXT}"


def frame_parts(episode: Any, frame_id: int, *, max_side: int = MAX_SIDE_PX,
                quality: int = JPEG_QUALITY) -> tuple[str, DeliveredImage]:
    """The caption and the delivered JPEG of a captured frame of ``episode``
    (an :class:`~spatialscout_gym.episode.Episode`)."""
    frame = episode.frames[frame_id]
    img = encode_for_model(frame.image, frame_id, max_side=max_side, quality=quality)
    return frame_caption(frame_id, episode.task_frame.pose_to_task(frame.pose), img), img
