"""Gymnasium environments over the episode layer (docs/architecture.md "envs").

``SpatialScoutEnv`` is imported lazily so that ``import spatialscout_gym`` stays light.
"""

from spatialscout_gym.envs.registration import register_envs, registered_ids

__all__ = ["SpatialScoutEnv", "register_envs", "registered_ids"]


def __getattr__(name: str):
    if name == "SpatialScoutEnv":
        from spatialscout_gym.envs.spatialscout_env import SpatialScoutEnv
        return SpatialScoutEnv
    raise AttributeError(f"module 'spatialscout_gym.envs' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
