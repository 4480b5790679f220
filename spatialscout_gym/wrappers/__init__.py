"""Gymnasium wrappers over the SpatialScout envs (docs/architecture.md "wrappers"): the tool-calling
model wrapper (:class:`~spatialscout_gym.wrappers.tool_call.ToolCallWrapper`) and the encoding of a
tool call as an env action. The next-best-view stack is :mod:`spatialscout_gym.nbv`. Imported lazily
so that ``import spatialscout_gym`` stays light."""

from __future__ import annotations

from spatialscout_gym.core.lazy import lazy_exports

__all__ = ["ToolCallWrapper", "encode_call"]

_WHERE = {"ToolCallWrapper": "spatialscout_gym.wrappers.tool_call",
          "encode_call": "spatialscout_gym.wrappers.encode"}
"""Public name -> the module that defines it."""

__getattr__, __dir__ = lazy_exports(__name__, _WHERE)
