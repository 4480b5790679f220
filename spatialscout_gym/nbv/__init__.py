"""Next-best-view control (docs/architecture.md "nbv"): settings and spaces, motions, observation
features, the one NBV core and its ports, the Gymnasium wrapper and env, mappers, vector envs, the
registration of the NBV ids, the files beside a trained policy, and PPO training (SB3 and RLlib).

The public names below are this package's face (``from spatialscout_gym.nbv import NBVConfig,
make_nbv_vector_env``). Each is imported from the module that defines it on first use, so that
``import spatialscout_gym`` (which registers the NBV ids through :mod:`spatialscout_gym.nbv.registration`)
stays light: no scene, renderer, Stable-Baselines3 or RLlib is imported until a name is asked for.
"""

from __future__ import annotations

from spatialscout_gym.core.lazy import lazy_exports

__all__ = ["NBVConfig", "NextBestViewWrapper", "NBVObservationLayout", "make_nbv_env", "NBVEnv", "NBVVectorEnv",
           "NBVWorkerVectorEnv", "make_nbv_vector_env", "make_mapper", "SB3VecEnv", "NBVConvModule",
           "load_nbv_config", "save_nbv_config", "register_nbv_envs", "NBV_ID", "NBV_V1_ID", "NBV_V2_ID",
           "NBV_V3_ID"]

_WHERE = {
    "NBVConfig": "spatialscout_gym.nbv.config",
    "NextBestViewWrapper": "spatialscout_gym.nbv.wrapper",
    "NBVObservationLayout": "spatialscout_gym.nbv.wrapper",
    "make_nbv_env": "spatialscout_gym.nbv.wrapper",
    "NBVEnv": "spatialscout_gym.nbv.env",
    "NBVVectorEnv": "spatialscout_gym.nbv.vector",
    "NBVWorkerVectorEnv": "spatialscout_gym.nbv.workers",
    "make_nbv_vector_env": "spatialscout_gym.nbv.workers",
    "make_mapper": "spatialscout_gym.nbv.mappers",
    "SB3VecEnv": "spatialscout_gym.nbv.training.sb3_vec",            # imports Stable-Baselines3 (the rl extra)
    "NBVConvModule": "spatialscout_gym.nbv.training.rllib_module",   # imports RLlib and torch (the rl and ray extras)
    "load_nbv_config": "spatialscout_gym.nbv.policy_files",
    "save_nbv_config": "spatialscout_gym.nbv.policy_files",
    "register_nbv_envs": "spatialscout_gym.nbv.registration",
    "NBV_ID": "spatialscout_gym.envs.registration",
    "NBV_V1_ID": "spatialscout_gym.envs.registration",
    "NBV_V2_ID": "spatialscout_gym.envs.registration",
    "NBV_V3_ID": "spatialscout_gym.envs.registration",
}
"""Public name -> the module that defines it."""

__getattr__, __dir__ = lazy_exports(__name__, _WHERE)
