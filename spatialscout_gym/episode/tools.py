"""The ten tools of docs/protocol.md section 4: names, argument specs, bounds, and the result record.

Argument validation here is *syntactic* (known argument names, JSON-like types, finite numbers);
the episode applies the semantic bounds (movement limits, world box, budgets). Either way a bad
call becomes a refused :class:`ToolResult`, never an exception.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from spatialscout_gym.core.types import is_finite_number

__all__ = ["TOOL_NAMES", "TOOL_SPECS", "ToolSpec", "ArgSpec", "ToolResult", "validate_args",
           "to_jsonable", "MAX_TRANSLATION_M", "MAX_ROTATION_DEG", "PITCH_LIMIT_DEG",
           "WORLD_BOX_M", "SUBMIT_MARGIN_M"]

# ---- bounds (docs/protocol.md section 4, "Movement bounds"; section 2 for the submission radius) ------
MAX_TRANSLATION_M = 1.0
"""Largest ``|(forward, right, up)|`` of one ``move_camera`` call, metres."""
MAX_ROTATION_DEG = 180.0
"""Largest ``|yaw|`` and ``|pitch|`` increment of one ``rotate_camera`` call, degrees."""
PITCH_LIMIT_DEG = 85.0
"""The final pitch is clamped to ``[-85, 85]`` degrees."""
WORLD_BOX_M = 15.0
"""Every world coordinate of the camera stays within ``+-15`` m."""
SUBMIT_MARGIN_M = 0.5
"""A submitted centre must satisfy ``|p| <= r + 0.5`` m (task frame)."""


@dataclass(frozen=True)
class ArgSpec:
    """One tool argument: ``kind`` is ``"number"``, ``"vec3"``, ``"marks"`` or ``"positions"``."""

    name: str
    kind: str
    required: bool
    description: str


@dataclass(frozen=True)
class ToolSpec:
    """A tool's name, one-line description and arguments (the schema a VLM wrapper exposes)."""

    name: str
    description: str
    args: tuple[ArgSpec, ...] = ()

    @property
    def arg_names(self) -> tuple[str, ...]:
        return tuple(a.name for a in self.args)


TOOL_SPECS: tuple[ToolSpec, ...] = (
    ToolSpec("list_entities", "The inventory (id, category, group), the search radius r and the budgets."),
    ToolSpec("get_camera_pose", "Current camera position (task frame, m), yaw (relative to the "
             "initial heading, deg, positive = left), pitch (elevation, deg) and axes."),
    ToolSpec("get_camera_intrinsics", "fx, fy, cx, cy, width, height of the render grid (pixels)."),
    ToolSpec("set_camera_position", "Teleport to an absolute task-frame position; optionally set "
             "yaw (relative to the initial heading) and pitch (elevation), degrees.",
             (ArgSpec("position", "vec3", True, "[x, y, z] in the task frame, metres"),
              ArgSpec("yaw_deg", "number", False, "heading relative to the initial one, degrees"),
              ArgSpec("pitch_deg", "number", False, "elevation above the horizontal, degrees"))),
    ToolSpec("move_camera", "Translate along the horizontal forward/right directions and world "
             "vertical; |(forward, right, up)| <= 1 m.",
             (ArgSpec("forward", "number", False, "metres along the horizontal heading"),
              ArgSpec("right", "number", False, "metres along the horizontal right"),
              ArgSpec("up", "number", False, "metres along world vertical"))),
    ToolSpec("rotate_camera", "Turn by yaw (positive = left, counter-clockwise from above) and "
             "pitch (positive = up), degrees; each |increment| <= 180; pitch clamped to [-85, 85].",
             (ArgSpec("yaw", "number", False, "degrees, positive turns left"),
              ArgSpec("pitch", "number", False, "degrees, positive looks up"))),
    ToolSpec("capture_image", "Render an RGB frame at the current pose; returns its frame id."),
    ToolSpec("triangulate_observations", "Least-squares 3D point (task frame) from >= 2 marked "
             "pixels on captured frames.",
             (ArgSpec("observations", "marks", True, "list of {frame_id, u, v} on the render grid"),)),
    ToolSpec("submit_positions", "Add or replace centre estimates {id: [x, y, z]} (task frame, m); "
             "returns the whole accepted map. An empty batch just returns it.",
             (ArgSpec("positions", "positions", True, "mapping id -> [x, y, z]"),)),
    ToolSpec("finish_mapping", "Freeze the accepted map and end the episode."),
)
TOOL_NAMES: tuple[str, ...] = tuple(t.name for t in TOOL_SPECS)
_SPEC_BY_NAME = {t.name: t for t in TOOL_SPECS}


@dataclass
class ToolResult:
    """The outcome of one tool call.

    Attributes
    ----------
    tool : str
        The tool's name as called.
    ok : bool
        False when the call was refused; then ``error`` says why and the state is unchanged.
    result : dict
        JSON-serialisable reply (empty on most refusals; ``submit_positions`` always carries the
        accepted map).
    error : str or None
        A readable reason naming the argument or bound at fault.
    frame_id : int or None
        The new frame's id for a successful ``capture_image``.
    """

    tool: str
    ok: bool
    result: dict = field(default_factory=dict)
    error: str | None = None
    frame_id: int | None = None

    def to_dict(self) -> dict:
        return {"tool": self.tool, "ok": self.ok, "result": self.result, "error": self.error,
                "frame_id": self.frame_id}


def to_jsonable(x: Any) -> Any:
    """Convert numpy scalars/arrays, tuples and nested containers to plain JSON types.

    Anything else that JSON cannot hold (a set, an object) becomes its ``repr``, so a trace of a
    refused call with odd Python arguments still writes as ``trace.jsonl``."""
    if isinstance(x, dict):
        return {str(k): to_jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [to_jsonable(v) for v in x]
    if isinstance(x, np.ndarray):
        return to_jsonable(x.tolist())
    if isinstance(x, np.bool_):
        return bool(x)
    if isinstance(x, np.integer):
        return int(x)
    if isinstance(x, np.floating):
        x = float(x)
    if isinstance(x, float) and not math.isfinite(x):
        return repr(x)  # JSON has no NaN/inf; keep the trace valid and readable
    if x is None or isinstance(x, (str, int, float)):
        return x
    return repr(x)


def _check_arg(tool: str, spec: ArgSpec, value: Any) -> str | None:
    if spec.kind == "number":
        if not is_finite_number(value):
            return f"{tool}: argument {spec.name!r} must be a finite number ({spec.description}), got {value!r}"
    elif spec.kind == "vec3":
        if isinstance(value, np.ndarray):
            value = value.tolist()
        if not (isinstance(value, (list, tuple)) and len(value) == 3 and all(is_finite_number(v) for v in value)):
            return (f"{tool}: argument {spec.name!r} must be three finite numbers [x, y, z] "
                    f"({spec.description}), got {value!r}")
    elif spec.kind == "marks":
        if not isinstance(value, (list, tuple)):
            return (f"{tool}: argument 'observations' must be a list of {{frame_id, u, v}} objects, "
                    f"got {type(value).__name__}")
        for i, m in enumerate(value):
            if not isinstance(m, dict) or set(m) != {"frame_id", "u", "v"}:
                got = sorted(m) if isinstance(m, dict) else type(m).__name__
                return (f"{tool}: observation {i} must be an object with exactly the keys "
                        f"frame_id, u, v; got {got}")
            fid = m["frame_id"]
            if isinstance(fid, (bool, np.bool_)) or not (
                    isinstance(fid, (int, np.integer)) or (is_finite_number(fid) and float(fid).is_integer())):
                return f"{tool}: observation {i}: frame_id must be an integer, got {fid!r}"
            for key in ("u", "v"):
                if not is_finite_number(m[key]):
                    return f"{tool}: observation {i}: {key} must be a finite number (pixels), got {m[key]!r}"
    elif spec.kind == "positions":
        if not isinstance(value, dict):
            return (f"{tool}: argument 'positions' must be an object mapping target id to [x, y, z], "
                    f"got {type(value).__name__}")
    return None


def validate_args(tool: str, args: Any) -> str | None:
    """Return None when ``tool`` exists and ``args`` are well-formed, else a readable reason.

    The reason lists the valid tools (unknown tool) or the valid argument names (unknown or
    missing argument).
    """
    spec = _SPEC_BY_NAME.get(tool)
    if spec is None:
        return f"unknown tool {tool!r}; valid tools: {', '.join(TOOL_NAMES)}"
    if args is None:
        args = {}
    if not isinstance(args, dict):
        return f"{tool}: arguments must be an object (dict), got {type(args).__name__}"
    valid = spec.arg_names
    unknown = sorted(set(map(str, args)) - set(valid))
    if unknown:
        listing = ", ".join(valid) if valid else "none (call it with {})"
        return f"{tool}: unknown argument(s) {', '.join(map(repr, unknown))}; valid arguments: {listing}"
    for a in spec.args:
        if a.name not in args or args[a.name] is None:
            if a.required:
                return f"{tool}: missing required argument {a.name!r} ({a.description})"
            continue
        reason = _check_arg(tool, a, args[a.name])
        if reason:
            return reason
    return None
