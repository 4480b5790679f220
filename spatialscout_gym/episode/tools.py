"""The ten tools of docs/protocol.md section 4: names, argument specs, bounds, and the result record.

Argument validation here is *syntactic* (known argument names, JSON-like types, finite numbers);
the episode applies the semantic bounds (movement limits, world box, budgets). Either way a bad
call becomes a refused :class:`ToolResult`, never an exception.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from spatialscout_gym.core.limits import WORLD_BOX_M
from spatialscout_gym.core.triangulation import MAX_OBSERVATIONS
from spatialscout_gym.core.types import is_finite_number

__all__ = ["TOOL_NAMES", "TOOL_SPECS", "ToolSpec", "ArgSpec", "ToolResult", "validate_args", "safe_repr",
           "argument_size_problem", "to_jsonable", "model_json", "MAX_TRANSLATION_M", "MAX_ROTATION_DEG",
           "PITCH_LIMIT_DEG", "WORLD_BOX_M", "SUBMIT_MARGIN_M", "BOUND_TOLERANCE_M", "MAX_OBSERVATIONS", "MAX_ARG_DEPTH",
           "MAX_ARG_VALUES", "MAX_STRING_CHARS", "MODEL_DECIMALS"]

# ---- bounds (docs/protocol.md section 4, "Movement bounds"; section 2 for the submission radius) ------
MAX_TRANSLATION_M = 1.0
"""Largest ``|(forward, right, up)|`` of one ``move_camera`` call, metres."""
MAX_ROTATION_DEG = 180.0
"""Largest ``|yaw|`` and ``|pitch|`` increment of one ``rotate_camera`` call, degrees."""
PITCH_LIMIT_DEG = 85.0
"""The final pitch is clamped to ``[-85, 85]`` degrees."""
SUBMIT_MARGIN_M = 0.5
"""A submitted centre must satisfy ``|p| <= r + 0.5`` m (task frame)."""
BOUND_TOLERANCE_M = 1e-9
"""Slack, metres, on the length bounds above (a step, the world box, the submission radius): a value
that meets its bound up to floating-point rounding (e.g. a step of exactly 1 m computed as
1.0000000000000002) is accepted; 1e-9 m is far below anything a model can state."""

# ---- argument size bounds (docs/protocol.md section 4, "Argument bounds") -------------------------
# Checked before anything else reads the arguments, without recursion, so that a hostile or broken
# model cannot exhaust the stack or the memory of the process that runs the episode.
MAX_ARG_DEPTH = 6
"""Deepest nesting of objects/arrays in one call's arguments (the arguments object is level 1;
``submit_positions`` needs 3)."""
MAX_ARG_VALUES = 2000
"""Most values (objects, arrays, numbers, strings, keys) in one call's arguments."""
MAX_STRING_CHARS = 1000
"""Longest string (a key or a value) in one call's arguments, characters."""
MODEL_DECIMALS = 3
"""Decimals of the numbers a model reads in a tool result (as in the prompt; mm, 0.001 degree)."""


@dataclass(frozen=True)
class ArgSpec:
    """One tool argument: ``kind`` is ``"number"``, ``"vec3"``, ``"marks"`` or ``"positions"``."""

    name: str
    kind: str
    required: bool
    description: str
    max_items: int | None = None
    """For list kinds: the most items accepted (the schema's ``maxItems``)."""


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
    ToolSpec("triangulate_observations", "Least-squares 3D point (task frame) from 2 to "
             f"{MAX_OBSERVATIONS} marked pixels on captured frames. The point is the surface point at "
             "the marked pixels, not the centre of the object's bounding box.",
             (ArgSpec("observations", "marks", True, f"list of 2 to {MAX_OBSERVATIONS} {{frame_id, u, v}} "
                      "on the render grid", max_items=MAX_OBSERVATIONS),)),
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


_TOO_DEEP = "<nested deeper than {} levels; omitted>"
JSONABLE_MAX_DEPTH = 32
"""Containers deeper than this become a short placeholder string in :func:`to_jsonable`."""


def safe_repr(x: Any, n: int = 200) -> str:
    """``repr(x)`` cut to ``n`` characters, or a note naming the type when ``repr`` itself raises
    (an object a caller made up; docs/protocol.md section 4)."""
    try:
        text = repr(x)
    except Exception:
        return f"<{type(x).__name__} whose repr raised>"
    return text if len(text) <= n else text[:n] + "..."


def to_jsonable(x: Any, ndigits: int | None = None, _depth: int = 0) -> Any:
    """Convert numpy scalars/arrays, tuples and nested containers to plain JSON types.

    Anything else that JSON cannot hold (a set, an object) becomes its ``repr``, so a trace of a
    refused call with odd Python arguments still writes as ``trace.jsonl``. Containers nested more
    than :data:`JSONABLE_MAX_DEPTH` levels become a placeholder string, so a pathological argument
    can never raise ``RecursionError`` here. With ``ndigits``, floats are rounded to that many
    decimals and ``-0.0`` becomes ``0.0`` (what a model reads; see :func:`model_json`).
    """
    t = type(x)  # exact-type fast paths first: traces hold mostly plain floats, ints and strings
    if t is float:
        if not math.isfinite(x):
            return repr(x)
        return x if ndigits is None else round(x, ndigits) + 0.0
    if t is str or t is int or t is bool or x is None:
        return x
    if isinstance(x, (dict, list, tuple, np.ndarray)) and _depth >= JSONABLE_MAX_DEPTH:
        return _TOO_DEEP.format(JSONABLE_MAX_DEPTH)
    if isinstance(x, dict):
        return {str(k): to_jsonable(v, ndigits, _depth + 1) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [to_jsonable(v, ndigits, _depth + 1) for v in x]
    if isinstance(x, np.ndarray):
        return to_jsonable(x.tolist(), ndigits, _depth)
    if isinstance(x, np.bool_):
        return bool(x)
    if isinstance(x, np.integer):
        return int(x)
    if isinstance(x, np.floating):
        x = float(x)
    if isinstance(x, float) and not math.isfinite(x):
        return repr(x)  # JSON has no NaN/inf; keep the trace valid and readable
    if isinstance(x, float) and ndigits is not None:
        return round(x, ndigits) + 0.0  # + 0.0 turns -0.0 into 0.0
    if x is None or isinstance(x, (str, int, float)):
        return x
    return safe_repr(x, 2000)


def model_json(payload: Any) -> str:
    """The JSON text a model reads for a tool result: numbers rounded to :data:`MODEL_DECIMALS`
    decimals like the prompt (no ``-0.0``, no 14-digit floats), compact separators.

    >>> model_json({"x": -0.00001, "y": 1.23456789, "n": 3})
    '{"x": 0.0, "y": 1.235, "n": 3}'
    """
    return json.dumps(to_jsonable(payload, MODEL_DECIMALS), allow_nan=False)


def argument_size_problem(args: Any) -> str | None:
    """None when ``args`` is within the size bounds, else a readable reason.

    Walks the arguments iteratively and stops at the first bound crossed, so the cost is at most
    :data:`MAX_ARG_VALUES` steps whatever arrives: nesting deeper than :data:`MAX_ARG_DEPTH`, more
    than :data:`MAX_ARG_VALUES` values, or a string longer than :data:`MAX_STRING_CHARS`.
    """
    stack: list[tuple[Any, int]] = [(args, 1)]
    seen = 1  # values pushed so far; each is looked at once
    while stack:
        x, depth = stack.pop()
        if isinstance(x, str):
            if len(x) > MAX_STRING_CHARS:
                return (f"a string in the arguments has {len(x)} characters (at most {MAX_STRING_CHARS}); "
                        f"arguments are numbers, ids and short keys")
            continue
        if isinstance(x, (bytes, bytearray, memoryview)):
            if len(x) > MAX_STRING_CHARS:   # bytes are never an argument; bound them like strings
                return (f"a bytes value in the arguments has {len(x)} bytes (at most {MAX_STRING_CHARS}); "
                        f"arguments are numbers, ids and short keys")
            continue
        if isinstance(x, np.ndarray):
            # an array counts as its elements (size is O(1)); .tolist() of 10^7 elements would not be
            seen += int(x.size)
            if seen > MAX_ARG_VALUES:
                return (f"the arguments hold more than {MAX_ARG_VALUES} values (an array of {x.size}); "
                        f"no tool needs that many; send smaller calls")
            if x.ndim + depth - 1 > MAX_ARG_DEPTH:
                return (f"the arguments are nested more than {MAX_ARG_DEPTH} levels deep (an array of "
                        f"{x.ndim} dimensions)")
            continue
        if not isinstance(x, (dict, list, tuple)):
            continue
        if depth > MAX_ARG_DEPTH:
            return (f"the arguments are nested more than {MAX_ARG_DEPTH} levels deep; no tool takes "
                    f"more than 3 (e.g. {{\"positions\": {{\"id\": [x, y, z]}}}})")
        seen += 2 * len(x) if isinstance(x, dict) else len(x)
        if seen > MAX_ARG_VALUES:
            return (f"the arguments hold more than {MAX_ARG_VALUES} values; no tool needs that many "
                    f"(triangulate_observations takes at most {MAX_OBSERVATIONS} observations, "
                    f"submit_positions one [x, y, z] per inventory id); send smaller calls")
        if isinstance(x, dict):
            for k, v in x.items():
                stack.append((k, depth + 1))
                stack.append((v, depth + 1))
        else:
            stack.extend((v, depth + 1) for v in x)
    return None


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
        if spec.max_items is not None and len(value) > spec.max_items:
            return (f"{tool}: at most {spec.max_items} observations per call, got {len(value)}; a few "
                    f"well-separated views of the same point are enough")
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
