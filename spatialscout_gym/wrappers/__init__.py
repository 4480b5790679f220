"""Wrappers over the SpatialScout envs (docs/architecture.md "wrappers"): next-best-view control for RL,
the vector NBV env and the tool-calling model wrapper (``ToolCallWrapper``). Imported lazily so that
``import spatialscout_gym`` stays light."""

__all__ = ["NextBestViewWrapper", "make_nbv_env", "NBVConfig", "NBVEnv", "NBVVectorEnv", "NBVWorkerVectorEnv",
           "make_nbv_vector_env", "ToolCallWrapper"]

_WHERE = {"NextBestViewWrapper": "nbv", "make_nbv_env": "nbv", "NBVConfig": "nbv", "NBVEnv": "nbv_env",
          "NBVVectorEnv": "nbv_vector", "NBVWorkerVectorEnv": "nbv_workers", "make_nbv_vector_env": "nbv_workers",
          "ToolCallWrapper": "tool_call"}


def __getattr__(name: str):
    if name in _WHERE:
        import importlib
        return getattr(importlib.import_module(f"spatialscout_gym.wrappers.{_WHERE[name]}"), name)
    raise AttributeError(f"module 'spatialscout_gym.wrappers' has no attribute {name!r}")
