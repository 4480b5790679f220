"""Wrappers over the SpatialScout envs (docs/architecture.md "wrappers"): next-best-view control for RL,
the vector NBV env and the tool-calling model wrapper (``ToolCallWrapper``). Imported lazily so that
``import spatialscout_gym`` stays light."""

__all__ = ["NextBestViewWrapper", "make_nbv_env", "NBVConfig", "NBVEnv", "NBVVectorEnv", "NBVWorkerVectorEnv",
           "make_nbv_vector_env", "ToolCallWrapper"]

_WHERE = {"NextBestViewWrapper": "spatialscout_gym.nbv.wrapper", "make_nbv_env": "spatialscout_gym.nbv.wrapper",
          "NBVConfig": "spatialscout_gym.nbv.wrapper", "NBVEnv": "spatialscout_gym.nbv.env",
          "NBVVectorEnv": "spatialscout_gym.nbv.vector",
          "NBVWorkerVectorEnv": "spatialscout_gym.nbv.workers",
          "make_nbv_vector_env": "spatialscout_gym.nbv.workers",
          "ToolCallWrapper": "spatialscout_gym.wrappers.tool_call"}
"""Name -> the module that defines it (full paths, so that a move of a module finds them)."""


def __getattr__(name: str):
    if name in _WHERE:
        import importlib
        return getattr(importlib.import_module(_WHERE[name]), name)
    raise AttributeError(f"module 'spatialscout_gym.wrappers' has no attribute {name!r}")
