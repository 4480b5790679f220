"""Register ``SpatialScout/NBV-v0`` (next-best-view; ``gym.make_vec(..., vectorization_mode="vector_entry_point")``
gives :class:`~spatialscout_gym.nbv.vector.NBVVectorEnv`, or with ``num_workers=W``
:class:`~spatialscout_gym.nbv.workers.NBVWorkerVectorEnv`) and ``SpatialScout/NBV-v1`` (the same
task as its own env, :class:`~spatialscout_gym.nbv.env.NBVEnv`, with the shipped policy's recipe
as defaults; ``make_vec`` as for NBV-v0) and ``SpatialScout/NBV-v2`` (NBV-v1 with walls that stop
the camera: ``walls=True``) and ``SpatialScout/NBV-v3`` (NBV-v2 that observes blocked moves and
offers ``action_masks()``: ``blocked_obs=True``).

``import spatialscout_gym`` calls :func:`register_nbv_envs` after the tool-level ids
(:mod:`spatialscout_gym.envs.registration`); entry points stay strings so that nothing here imports
the NBV modules, gymnasium loads them on ``make``.
"""

from __future__ import annotations

from spatialscout_gym.envs.registration import NBV_ID, NBV_V1_ID, NBV_V2_ID, NBV_V3_ID

__all__ = ["register_nbv_envs", "NBV_ID", "NBV_V1_ID", "NBV_V2_ID", "NBV_V3_ID"]

NBV_ENTRY_POINT = "spatialscout_gym.nbv.wrapper:make_nbv_env"
NBV_VECTOR_ENTRY_POINT = "spatialscout_gym.nbv.workers:make_nbv_vector_env"
NBV_V1_ENTRY_POINT = "spatialscout_gym.nbv.env:NBVEnv"
NBV_V1_VECTOR_ENTRY_POINT = "spatialscout_gym.nbv.env:make_nbv_v1_vector_env"
NBV_V2_VECTOR_ENTRY_POINT = "spatialscout_gym.nbv.env:make_nbv_v2_vector_env"
NBV_V3_VECTOR_ENTRY_POINT = "spatialscout_gym.nbv.env:make_nbv_v3_vector_env"


def register_nbv_envs() -> list[str]:
    """Register the next-best-view ids (idempotent); return them."""
    import gymnasium as gym
    if NBV_ID not in gym.registry:  # the next-best-view task: camera motions, automatic mapper
        gym.register(id=NBV_ID, entry_point=NBV_ENTRY_POINT, vector_entry_point=NBV_VECTOR_ENTRY_POINT,
                     kwargs={"scene": "procedural"})
    if NBV_V1_ID not in gym.registry:  # the same task as its own env, the shipped policy's recipe
        gym.register(id=NBV_V1_ID, entry_point=NBV_V1_ENTRY_POINT, vector_entry_point=NBV_V1_VECTOR_ENTRY_POINT)
    if NBV_V2_ID not in gym.registry:  # NBV-v1 with walls that stop the camera (a change in dynamics)
        gym.register(id=NBV_V2_ID, entry_point=NBV_V1_ENTRY_POINT, vector_entry_point=NBV_V2_VECTOR_ENTRY_POINT,
                     kwargs={"walls": True})
    if NBV_V3_ID not in gym.registry:  # NBV-v2 plus the blocked observation and action_masks()
        gym.register(id=NBV_V3_ID, entry_point=NBV_V1_ENTRY_POINT, vector_entry_point=NBV_V3_VECTOR_ENTRY_POINT,
                     kwargs={"walls": True, "blocked_obs": True})
    return [NBV_ID, NBV_V1_ID, NBV_V2_ID, NBV_V3_ID]
