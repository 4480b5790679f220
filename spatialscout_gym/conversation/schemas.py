"""The ten tools as JSON Schema, from one source (:data:`spatialscout_gym.episode.tools.TOOL_SPECS`).

:func:`tool_schemas` gives ``{"name", "description", "parameters"}``; the model services' wire
formats (one codec each, :mod:`spatialscout_gym.conversation.codecs`) and the MCP server render these.
"""

from __future__ import annotations

from typing import Iterable

from spatialscout_gym.episode.tools import TOOL_SPECS, ArgSpec
from spatialscout_gym.conversation.prompt import CAMERA_TOOLS, PASSIVE_TOOLS

__all__ = ["tool_schemas", "CAMERA_TOOLS", "PASSIVE_TOOLS"]

_VEC3 = {"type": "array", "items": {"type": "number"}, "minItems": 3, "maxItems": 3}


def _arg_schema(a: ArgSpec) -> dict:
    if a.kind == "number":
        return {"type": "number", "description": a.description}
    if a.kind == "vec3":
        return {**_VEC3, "description": a.description}
    if a.kind == "marks":
        return {"type": "array", "minItems": 2, **({"maxItems": a.max_items} if a.max_items else {}),
                "description": a.description + " (render-grid pixels; "
                "convert from delivered images first)",
                "items": {"type": "object", "additionalProperties": False,
                          "required": ["frame_id", "u", "v"],
                          "properties": {"frame_id": {"type": "integer", "description": "a captured frame id"},
                                         "u": {"type": "number", "description": "pixel column, right"},
                                         "v": {"type": "number", "description": "pixel row, down"}}}}
    if a.kind == "positions":
        return {"type": "object", "description": a.description + "; ids from list_entities",
                "additionalProperties": {**_VEC3, "description": "[x, y, z] task frame, metres"}}
    raise ValueError(f"unknown argument kind {a.kind!r} of {a.name!r}; expected number, vec3, marks or positions")


def tool_schemas(names: Iterable[str] | None = None) -> list[dict]:
    """The ten tools (or those in ``names``, in tool-list order; passive mode offers
    :data:`PASSIVE_TOOLS`) as ``{"name", "description", "parameters"}`` with JSON Schema parameters."""
    keep = None if names is None else set(names)
    out = []
    for spec in TOOL_SPECS:
        if keep is not None and spec.name not in keep:
            continue
        params = {"type": "object", "properties": {a.name: _arg_schema(a) for a in spec.args},
                  "required": [a.name for a in spec.args if a.required], "additionalProperties": False}
        out.append({"name": spec.name, "description": spec.description, "parameters": params})
    return out
