"""Gymnasium environments over the episode layer (docs/architecture.md "envs").

``SpatialScoutEnv`` is imported lazily so that ``import spatialscout_gym`` stays light.
"""

from spatialscout_gym.core.lazy import lazy_exports
from spatialscout_gym.envs.registration import register_envs, registered_ids

__all__ = ["SpatialScoutEnv", "register_envs", "registered_ids"]

_WHERE = {"SpatialScoutEnv": "spatialscout_gym.envs.spatialscout_env"}
"""Public name -> the module that defines it (imported on first use)."""

__getattr__, __dir__ = lazy_exports(__name__, _WHERE)
