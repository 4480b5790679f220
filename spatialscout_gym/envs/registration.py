"""Register ``SpatialScout/<scene_id>-v0`` for every catalog scene, ``SpatialScout/Procedural-v0``,
and for every scene imported into a directory listed in ``$SPATIALSCOUT_SCENE_DIRS`` (``os.pathsep``
separated; ``spatialscout scenes import-maniskill`` writes such directories).

Light on purpose (it runs on ``import spatialscout_gym``): entry points are strings, the catalog's
scene ids are read from its manifest JSON without importing the scene generator, and the importer
of ManiSkill scenes is loaded only when ``$SPATIALSCOUT_SCENE_DIRS`` is set; no scene is built and
SAPIEN is not imported. The next-best-view ids (:data:`NBV_ID`, :data:`NBV_V1_ID`, :data:`NBV_V2_ID`, :data:`NBV_V3_ID`) are named here
and registered by the NBV layer above (:mod:`spatialscout_gym.nbv.registration`), so that
this layer names no module above it; ``import spatialscout_gym`` registers them.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

__all__ = ["register_envs", "registered_ids", "ENTRY_POINT", "NAMESPACE", "NBV_ID", "NBV_V1_ID", "NBV_V2_ID",
           "NBV_V3_ID"]

NAMESPACE = "SpatialScout"
ENTRY_POINT = "spatialscout_gym.envs.spatialscout_env:SpatialScoutEnv"
NBV_ID = f"{NAMESPACE}/NBV-v0"
NBV_V1_ID = f"{NAMESPACE}/NBV-v1"
NBV_V2_ID = f"{NAMESPACE}/NBV-v2"
NBV_V3_ID = f"{NAMESPACE}/NBV-v3"


def env_id_for_scene(scene_id: str) -> str:
    """``SpatialScout/<scene_id>-v0``."""
    return f"{NAMESPACE}/{scene_id}-v0"


CATALOG_ENV = "SPATIALSCOUT_CATALOG"
"""The catalog version a bare scene id means (``spatialscout_gym.scenes.catalog.CATALOG_ENV``)."""
SCENE_DIRS_ENV = "SPATIALSCOUT_SCENE_DIRS"
"""Directories of imported scenes (``spatialscout_gym.scenes.maniskill.SCENE_DIRS_ENV``)."""
_DEFAULT_CATALOG_VERSION = "3.1"
"""``spatialscout_gym.scenes.catalog.DEFAULT_CATALOG_VERSION``, restated to keep this import light (a test checks they agree)."""
_MANIFEST_DIR = Path(__file__).resolve().parents[1] / "scenes" / "data"


def _manifest_ids(version: str) -> list[str] | None:
    """The scene ids in the shipped manifest of catalog ``version``: ``catalog_v<major>.json`` for
    "<major>.0", ``catalog_v<major>_<minor>.json`` otherwise, read as plain JSON; None when the
    version or file is not of that form (the catalog module then decides, with its own warning or
    error)."""
    m = re.fullmatch(r"([1-9][0-9]*)\.(0|[1-9][0-9]*)", version)
    path = (_MANIFEST_DIR / (f"catalog_v{m.group(1)}.json" if m.group(2) == "0" else
                             f"catalog_v{m.group(1)}_{m.group(2)}.json")) if m else None
    if path is None or not path.is_file():
        return None
    data = json.loads(path.read_text(encoding="utf-8"))
    if str(data.get("catalog_version")) != version:
        return None
    return [str(s["scene_id"]) for s in data["scenes"]]


def _catalog_ids() -> list[str]:
    ids = _manifest_ids(os.environ.get(CATALOG_ENV) or _DEFAULT_CATALOG_VERSION)
    if ids is not None:
        return ids
    from spatialscout_gym.scenes.catalog import catalog_scene_ids   # heavy: the scene generator
    return list(catalog_scene_ids())


def _imported_scenes() -> list[tuple[str, str]]:
    """``(spec JSON path, env id)`` of scenes imported into ``$SPATIALSCOUT_SCENE_DIRS``
    (``spatialscout scenes import-maniskill``). Catalog ids win over imported ones."""
    if not os.environ.get(SCENE_DIRS_ENV, "").strip():
        return []
    from spatialscout_gym.scenes.maniskill import imported_scene_paths
    return [(str(path), env_id_for_scene(sid)) for sid, path in imported_scene_paths().items()]


def register_envs() -> list[str]:
    """Register the tool-level env ids (idempotent); return them."""
    import gymnasium as gym
    ids = []
    for scene_id, env_id in [("procedural", f"{NAMESPACE}/Procedural-v0")] + [
            (s, env_id_for_scene(s)) for s in _catalog_ids()] + _imported_scenes():
        if env_id not in gym.registry:
            gym.register(id=env_id, entry_point=ENTRY_POINT, kwargs={"scene": scene_id},
                         disable_env_checker=False)
        ids.append(env_id)
    return ids


def registered_ids() -> list[str]:
    """Every ``SpatialScout/...`` id in Gymnasium's registry."""
    import gymnasium as gym
    return sorted(k for k in gym.registry if k.startswith(NAMESPACE + "/"))
