"""Register ``SpatialScout/<scene_id>-v0`` for every catalog scene, ``SpatialScout/Procedural-v0``,
``SpatialScout/NBV-v0`` (next-best-view; ``gym.make_vec(..., vectorization_mode="vector_entry_point")`` gives
:class:`~spatialscout_gym.wrappers.nbv_vector.NBVVectorEnv`, or with ``num_workers=W``
:class:`~spatialscout_gym.wrappers.nbv_workers.NBVWorkerVectorEnv`), ``SpatialScout/NBV-v1`` (the
same task as its own env, :class:`~spatialscout_gym.wrappers.nbv_env.NBVEnv`, with the shipped
policy's recipe as defaults; ``make_vec`` as for NBV-v0),
and for every scene imported into a directory listed in ``$SPATIALSCOUT_SCENE_DIRS`` (``os.pathsep``
separated; ``spatialscout scenes import-maniskill`` writes such directories).

Light on purpose (it runs when ``spatialscout_gym`` and ``gymnasium`` are both imported): entry
points are strings and the catalog's scene ids come from its manifest only; no scene is built and
SAPIEN is not imported. gymnasium is imported inside the functions, so that importing this module
never triggers the package's register-after-gymnasium hook half-way through.
"""

from __future__ import annotations

__all__ = ["register_envs", "registered_ids", "ENTRY_POINT", "NAMESPACE", "NBV_ID", "NBV_V1_ID"]

NAMESPACE = "SpatialScout"
ENTRY_POINT = "spatialscout_gym.envs.spatialscout_env:SpatialScoutEnv"
NBV_ID = f"{NAMESPACE}/NBV-v0"
NBV_ENTRY_POINT = "spatialscout_gym.wrappers.nbv:make_nbv_env"
NBV_VECTOR_ENTRY_POINT = "spatialscout_gym.wrappers.nbv_workers:make_nbv_vector_env"
NBV_V1_ID = f"{NAMESPACE}/NBV-v1"
NBV_V1_ENTRY_POINT = "spatialscout_gym.wrappers.nbv_env:NBVEnv"
NBV_V1_VECTOR_ENTRY_POINT = "spatialscout_gym.wrappers.nbv_env:make_nbv_v1_vector_env"


def env_id_for_scene(scene_id: str) -> str:
    """``SpatialScout/<scene_id>-v0``."""
    return f"{NAMESPACE}/{scene_id}-v0"


def _catalog_ids() -> list[str]:
    try:
        from spatialscout_gym.scenes.catalog import catalog_scene_ids
    except ImportError:  # the catalog module is optional at import time (e.g. a partial checkout)
        return []
    return list(catalog_scene_ids())


def _imported_scenes() -> list[tuple[str, str]]:
    """``(spec JSON path, env id)`` of scenes imported into ``$SPATIALSCOUT_SCENE_DIRS``
    (``spatialscout scenes import-maniskill``). Catalog ids win over imported ones."""
    from spatialscout_gym.scenes.maniskill import imported_scene_paths
    return [(str(path), env_id_for_scene(sid)) for sid, path in imported_scene_paths().items()]


def register_envs() -> list[str]:
    """Register every env id (idempotent); return the ids."""
    import gymnasium as gym
    ids = []
    for scene_id, env_id in [("procedural", f"{NAMESPACE}/Procedural-v0")] + [
            (s, env_id_for_scene(s)) for s in _catalog_ids()] + _imported_scenes():
        if env_id not in gym.registry:
            gym.register(id=env_id, entry_point=ENTRY_POINT, kwargs={"scene": scene_id},
                         disable_env_checker=False)
        ids.append(env_id)
    if NBV_ID not in gym.registry:  # the next-best-view task: camera motions, automatic mapper
        gym.register(id=NBV_ID, entry_point=NBV_ENTRY_POINT, vector_entry_point=NBV_VECTOR_ENTRY_POINT,
                     kwargs={"scene": "procedural"})
    ids.append(NBV_ID)
    if NBV_V1_ID not in gym.registry:  # the same task as its own env, the shipped policy's recipe
        gym.register(id=NBV_V1_ID, entry_point=NBV_V1_ENTRY_POINT, vector_entry_point=NBV_V1_VECTOR_ENTRY_POINT)
    ids.append(NBV_V1_ID)
    return ids


def registered_ids() -> list[str]:
    """Every ``SpatialScout/...`` id in Gymnasium's registry."""
    import gymnasium as gym
    return sorted(k for k in gym.registry if k.startswith(NAMESPACE + "/"))
