"""Trace events of one episode (docs/protocol.md section 7).

Every event is a JSON-serialisable dict with an ``"event"`` key:

==============  ==============================================================================
``start``       scene id, budgets, initial pose (world) and intrinsics
``tool_call``   ``index`` (0-based tool-call count), ``tool``, ``args``, ``result`` (ToolResult dict);
                with ``started_unix_s`` and ``execution_s`` (seconds) when the episode has a clock
                (model agents set one)
``capture``     ``frame_id``, ``pose_world``, ``pose_task``, ``intrinsics``, ``images_used``,
                ``tool_call_index`` (None for the initial image)
``map``         ``accepted_map`` (id -> task-frame [x, y, z]), ``tool_call_index``, ``images_used``
                after every successful ``submit_positions`` (empty batches included)
``end``         ``reason``, ``tool_calls``, ``images_used``
==============  ==============================================================================

The wrappers and agents add their own kinds (model requests and replies, refused tool calls, NBV
steps, the failure); :mod:`spatialscout_gym.core.trace_events` holds every kind as a type, and what
reads a trace reads it through those types. No event carries private scene data.
"""

from __future__ import annotations

import io
import json
import os
from typing import Any, Iterable

from spatialscout_gym.core.files import MAX_TRACE_BYTES, open_regular
from spatialscout_gym.episode.tools import to_jsonable

__all__ = ["event", "write_jsonl", "read_jsonl"]


def event(kind: str, **fields: Any) -> dict:
    """A trace event ``{"event": kind, **fields}`` with every value made JSON-serialisable."""
    return {"event": kind, **to_jsonable(fields)}


def write_jsonl(events: Iterable[dict], path: str | os.PathLike) -> None:
    """Write events one JSON object per line."""
    with open(path, "w", encoding="utf-8") as f:
        for e in events:
            f.write(json.dumps(e) + "\n")


def read_jsonl(path: str | os.PathLike) -> list[dict]:
    """The JSON lines of ``path``, a regular file of a bounded size (never a FIFO that blocks)."""
    with io.TextIOWrapper(open_regular(path, MAX_TRACE_BYTES), encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]
