"""Named scene splits: ``train``, ``val`` and ``test`` (docs/nbv.md "Named splits").

* ``test``: every catalog scene, of every catalog version (``Kitchen_01``, ``Kitchen_01@2.0``): the
  benchmark. Catalog scenes come from their own seed stream, apart from procedural ones.
* ``val``: the procedural scenes ``procedural:<seed>`` with seed in :data:`VAL_SEEDS`
  (10,000,000 to 19,999,999); ``benchmarks/nbv_results.py --procedural N`` validates on the first N.
* ``train``: every other procedural scene (``procedural:<seed>`` outside :data:`VAL_SEEDS`), and
  ``procedural``, the random draws of a training env (one seed of 2**31 per new scene: a given
  validation seed is drawn with probability 1 / (2**31 - 1) per new scene).

Scene lists are asked for as ``split:<name>`` or ``split:<name>:<n>`` (the first n scenes of the
split; ``train`` and ``val`` need n), the form ``spatialscout evaluate --scenes`` and
``benchmarks/nbv_results.py`` take; training (``train-nbv --scenes``, the recipes) accepts only
train-split scenes (:func:`check_training_scene`).
"""

from __future__ import annotations

from spatialscout_gym.core.errors import ConfigError
from spatialscout_gym.core.types import natural_number

__all__ = ["SPLITS", "SPLIT_PREFIX", "VAL_SEEDS", "split_of", "split_scenes", "expand_split",
           "check_training_scene"]

SPLITS: tuple[str, ...] = ("train", "val", "test")
SPLIT_PREFIX = "split:"
VAL_SEEDS = range(10_000_000, 20_000_000)
"""The procedural seeds of the ``val`` split (the held-out validation scenes)."""
PROCEDURAL = "procedural"
PROCEDURAL_PREFIX = "procedural:"


def _catalog_ids() -> set[str]:
    from spatialscout_gym.scenes.catalog import CATALOG_VERSIONS, catalog_scene_ids
    return {s for v in CATALOG_VERSIONS for s in catalog_scene_ids(v)}


def split_of(scene: str) -> str | None:
    """The split ``scene`` (a scene name: ``procedural``, ``procedural:<seed>``, a catalog id with or
    without ``@<version>``) belongs to; None for a name outside the splits (a spec file, an imported
    scene)."""
    if scene == PROCEDURAL:
        return "train"
    if scene.startswith(PROCEDURAL_PREFIX):
        seed = natural_number(scene[len(PROCEDURAL_PREFIX):])
        if seed is None:
            return None
        return "val" if seed in VAL_SEEDS else "train"
    base = scene.rpartition("@")[0] if "@" in scene else scene
    return "test" if base in _catalog_ids() else None


def split_scenes(split: str, n: int | None = None) -> list[str]:
    """The first ``n`` scenes of ``split`` (all of ``test`` when None): ``train`` is
    ``procedural:0`` on, ``val`` ``procedural:10000000`` on, ``test`` the default catalog's ids in
    catalog order."""
    if split not in SPLITS:
        raise ConfigError(f"unknown split {split!r}; the splits are {', '.join(SPLITS)}")
    if n is not None and n < 1:
        raise ConfigError(f"split:{split}:{n}: the number of scenes must be >= 1")
    if split == "test":
        from spatialscout_gym.scenes.catalog import catalog_scene_ids
        ids = catalog_scene_ids()
        return ids if n is None else ids[:n]
    if n is None:
        raise ConfigError(f"split:{split} has as many scenes as seeds; name how many: split:{split}:<n>")
    if split == "val":
        if n > len(VAL_SEEDS):
            raise ConfigError(f"split:val:{n}: the val split has {len(VAL_SEEDS)} scenes")
        return [f"{PROCEDURAL_PREFIX}{VAL_SEEDS.start + i}" for i in range(n)]
    return [f"{PROCEDURAL_PREFIX}{i}" for i in range(min(n, VAL_SEEDS.start))] + \
        [f"{PROCEDURAL_PREFIX}{VAL_SEEDS.stop + i}" for i in range(max(0, n - VAL_SEEDS.start))]


def expand_split(token: str) -> list[str] | None:
    """The scenes of a ``split:<name>[:<n>]`` token, or None when ``token`` is no such token."""
    if not token.startswith(SPLIT_PREFIX):
        return None
    name, _, count = token[len(SPLIT_PREFIX):].partition(":")
    n = natural_number(count) if count else None
    if count and n is None:
        raise ConfigError(f"{token!r}: expected split:<name> or split:<name>:<number of scenes>")
    return split_scenes(name, n)


def check_training_scene(scene: str) -> str:
    """``scene`` when a policy may train on it (the ``train`` split, or a scene outside the splits),
    else the one-line :class:`ConfigError` that names its split; ``split:train`` is ``procedural``."""
    if scene == f"{SPLIT_PREFIX}train":
        return PROCEDURAL
    if scene.startswith(SPLIT_PREFIX):
        raise ConfigError(f"training scenes {scene!r}: only the train split trains (split:train, procedural or "
                          f"procedural:<seed> outside the val seeds {VAL_SEEDS.start}-{VAL_SEEDS.stop - 1})")
    split = split_of(scene)
    if split in ("val", "test"):
        raise ConfigError(f"scene {scene!r} is in the {split} split; a policy may not train on it (the train "
                          f"split: split:train, procedural, or procedural:<seed> outside {VAL_SEEDS.start}-"
                          f"{VAL_SEEDS.stop - 1})")
    return scene
