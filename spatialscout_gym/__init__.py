"""spatialscout-gym: the SpatialScout benchmark as Gymnasium environments.

Importing this package is light (no SAPIEN, torch or model SDKs); it registers the
``SpatialScout/...`` environment ids with Gymnasium.
"""

__version__ = "0.1.0"
from spatialscout_gym.envs.registration import register_envs as _register_envs  # noqa: E402

_register_envs()
