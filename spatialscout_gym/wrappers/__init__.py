"""Gymnasium wrappers over the SpatialScout envs (docs/architecture.md "wrappers"): the tool-calling
model wrapper (:class:`~spatialscout_gym.wrappers.tool_call.ToolCallWrapper`) and the encoding of a
tool call as an env action. The next-best-view stack is :mod:`spatialscout_gym.nbv`. Imported lazily
so that ``import spatialscout_gym`` stays light."""

from __future__ import annotations

from typing import Any

__all__ = ["ToolCallWrapper", "encode_call"]

_WHERE = {"ToolCallWrapper": "spatialscout_gym.wrappers.tool_call",
          "encode_call": "spatialscout_gym.wrappers.encode"}
"""Public name -> the module that defines it."""


def __getattr__(name: str) -> Any:
    if name in _WHERE:
        import importlib
        value = getattr(importlib.import_module(_WHERE[name]), name)
        globals()[name] = value   # looked up once
        return value
    raise AttributeError(f"module 'spatialscout_gym.wrappers' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
