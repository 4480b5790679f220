"""The fixed, versioned 80-scene catalog (issue 3, items 3 and 7) and scene lookup by name.

* 48 single rooms (11 kitchens, 11 living rooms, 10 bedrooms, 6 bathrooms, 10 offices) and 32
  apartments of 2-5 rooms (8, 9, 8, 7), about docs/protocol.md section 8's 60/40 mix; 12 scenes have 35
  targets (catalog indices 0, 7, 14, ..., 77) and 68 have 40.
* Scene ``i`` is generated from ``numpy.random.SeedSequence([CATALOG_NAMESPACE, i])``; training
  scenes (:func:`procedural_scene`) use ``TRAIN_NAMESPACE``, so the two streams never coincide.
* Frozen: the shipped manifest ``data/catalog_v1.json`` lists every scene's id, layout, seed,
  target count, radius and content hash (``SceneSpec.content_hash(RENDER_SETTINGS)``).
  :func:`load_scene` regenerates a scene and refuses it when its hash differs (the generator code
  changed the catalog: bump :data:`CATALOG_VERSION` and re-freeze with ``spatialscout scenes
  freeze``). :func:`catalog_scene_ids` reads only the manifest, so env registration stays fast.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

from spatialscout_gym.core.errors import SpatialScoutError
from spatialscout_gym.core.spec import SceneSpec
from spatialscout_gym.scenes.procedural import (FOV_Y_DEG, IMAGE_SIZE, TRAIN_NAMESPACE, generate_scene,
                                                procedural_scene)

__all__ = ["CATALOG_VERSION", "CATALOG_NAMESPACE", "RENDER_SETTINGS", "CatalogEntry", "catalog_entries",
           "catalog_scene_ids", "load_scene", "generate_catalog_scene", "scene_by_name", "manifest",
           "UnknownSceneError", "scene_name_problem", "SCENE_NAME_FORMS", "scene_content_hash",
           "freeze_manifest", "MANIFEST_PATH", "CatalogMismatchError", "procedural_scene", "TRAIN_NAMESPACE"]

CATALOG_VERSION = "1.0"
CATALOG_NAMESPACE = 0x6361_7461   # "cata"
RENDERER_SETTINGS_VERSION = 1
RENDER_SETTINGS: dict = {"width": IMAGE_SIZE, "height": IMAGE_SIZE, "fov_y_deg": FOV_Y_DEG,
                         "shader": "minimal", "renderer_settings_version": RENDERER_SETTINGS_VERSION}
"""Render settings hashed with every catalog scene (a change re-versions the catalog)."""
MANIFEST_PATH = Path(__file__).parent / "data" / "catalog_v1.json"
PROCEDURAL_PREFIX = "procedural:"

_SINGLE = [("Kitchen", 11), ("LivingRoom", 11), ("Bedroom", 10), ("Bathroom", 6), ("Office", 10)]
_APARTMENT_ROOMS = [(2, 8), (3, 9), (4, 8), (5, 7)]


class CatalogMismatchError(SpatialScoutError, RuntimeError):
    """A regenerated catalog scene does not match the frozen manifest."""


@dataclass(frozen=True)
class CatalogEntry:
    """One catalog scene's recipe: id, layout, rooms, generator seed index, target count."""

    scene_id: str
    layout: str
    n_rooms: int
    seed: int
    n_targets: int

    @property
    def seed_sequence(self) -> np.random.SeedSequence:
        return np.random.SeedSequence([CATALOG_NAMESPACE, self.seed])


@lru_cache(maxsize=1)
def catalog_entries() -> tuple[CatalogEntry, ...]:
    """The 80 recipes, in catalog order (singles interleaved by kind, then apartments)."""
    rows: list[tuple[str, str, int]] = []
    for kind, n in _SINGLE:
        rows += [(f"{kind}_{k + 1:02d}", kind, 1) for k in range(n)]
    k = 0
    for n_rooms, n in _APARTMENT_ROOMS:
        for _ in range(n):
            k += 1
            rows.append((f"Apartment_{k:02d}", "Apartment", n_rooms))
    return tuple(CatalogEntry(sid, lay, nr, i, 35 if i % 7 == 0 else 40) for i, (sid, lay, nr) in enumerate(rows))


def generate_catalog_scene(entry: CatalogEntry) -> SceneSpec:
    """Generate a catalog scene from its recipe (no manifest check)."""
    return generate_scene(entry.seed_sequence, entry.n_targets, entry.layout, entry.scene_id,
                          n_rooms=entry.n_rooms if entry.layout == "Apartment" else None,
                          source={"generator": "procedural", "stream": "catalog",
                                  "catalog_version": CATALOG_VERSION, "seed": entry.seed})


@lru_cache(maxsize=1)
def manifest() -> dict:
    """The shipped manifest (``data/catalog_v1.json``) as a dict."""
    try:
        return json.loads(MANIFEST_PATH.read_text())
    except FileNotFoundError:
        raise FileNotFoundError(f"the catalog manifest {MANIFEST_PATH} is missing; reinstall the package or "
                                "run `spatialscout scenes freeze`") from None


def catalog_scene_ids() -> list[str]:
    """Every catalog scene id, in catalog order (reads only the manifest).

    A missing manifest (a broken install or a source tree before ``scenes freeze``) gives an
    empty list and a warning rather than an error, so ``import spatialscout_gym`` still works.
    """
    if not MANIFEST_PATH.is_file():
        import warnings
        warnings.warn(f"the catalog manifest {MANIFEST_PATH} is missing, so no catalog scene is "
                      "registered; run `spatialscout scenes freeze` or reinstall the package", stacklevel=2)
        return []
    return [s["scene_id"] for s in manifest()["scenes"]]


def scene_content_hash(spec: SceneSpec) -> str:
    """The content hash every result file carries (issue 3, item 7): the spec and the catalog's
    render settings; for a catalog scene it equals the manifest's ``content_hash``."""
    return spec.content_hash(RENDER_SETTINGS)


class UnknownSceneError(SpatialScoutError, KeyError):
    """A scene name that is neither a catalog id, ``procedural:<seed>``, a spec file nor an
    imported id. A ``KeyError`` whose message prints without the quotes ``KeyError`` adds."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


SCENE_NAME_FORMS = ("a catalog id (`spatialscout scenes list`), procedural:<seed>, a scene_spec.json "
                    "file or directory, or an id imported into $SPATIALSCOUT_SCENE_DIRS")


def _looks_like_path(name: str) -> bool:
    return name.endswith(".json") or "/" in name or "\\" in name or name.startswith(".")


def _unknown_scene_message(name: str) -> str:
    """Why ``name`` names no scene: a missing file, or an unknown id with close matches and any
    ``$SPATIALSCOUT_SCENE_DIRS`` entry that does not exist."""
    import difflib

    from spatialscout_gym.scenes.maniskill import imported_scene_paths, missing_scene_dirs
    path = Path(name)
    if _looks_like_path(name):
        if path.is_dir():
            return f"scene directory {name!r} has no scene_spec.json (write one with `spatialscout scenes export`)"
        return f"scene file {name!r} does not exist"
    ids = list(catalog_scene_ids()) + list(imported_scene_paths())
    by_lower = {i.lower(): i for i in ids}
    close = difflib.get_close_matches(name.lower(), list(by_lower), n=3, cutoff=0.6)
    msg = f"unknown scene {name!r}"
    msg += ("; did you mean " + " or ".join(repr(by_lower[c]) for c in close) + "?") if close else "."
    msg += f" A scene is {SCENE_NAME_FORMS}"
    missing = missing_scene_dirs()
    if missing:
        msg += (f" (note: $SPATIALSCOUT_SCENE_DIRS lists {', '.join(map(str, missing))}, which does not "
                "exist)")
    return msg


def scene_name_problem(name: str) -> str | None:
    """Why ``name`` cannot be resolved by :func:`scene_by_name`, or None; cheap (builds nothing)."""
    if name.startswith(PROCEDURAL_PREFIX):
        seed = name[len(PROCEDURAL_PREFIX):]
        return None if seed.isdigit() else \
            f"expected 'procedural:<non-negative integer seed>', got {name!r}"
    path = Path(name)
    if (path.suffix == ".json" and path.is_file()) or (path / "scene_spec.json").is_file():
        return None
    if name in catalog_scene_ids():
        return None
    from spatialscout_gym.scenes.maniskill import imported_scene_paths
    if name in imported_scene_paths():
        return None
    return _unknown_scene_message(name)


def _read_spec(path: Path) -> SceneSpec:
    from spatialscout_gym.core.errors import message_of
    from spatialscout_gym.core.files import SceneFileError
    try:
        return SceneSpec.from_json(path.read_text())
    except (ValueError, KeyError, TypeError) as exc:
        raise SceneFileError(f"{path}: not a valid scene spec ({message_of(exc)})") from exc


def load_scene(scene_id: str) -> SceneSpec:
    """Regenerate catalog scene ``scene_id`` and verify its content hash against the manifest.

    Raises
    ------
    KeyError
        ``scene_id`` is not in the catalog.
    CatalogMismatchError
        The regenerated scene differs from the frozen one.
    """
    rows = {s["scene_id"]: s for s in manifest()["scenes"]}
    if scene_id not in rows:
        raise UnknownSceneError(f"{scene_id!r} is not a catalog scene; `spatialscout scenes list` "
                                f"shows the {len(rows)} ids (e.g. {next(iter(rows))})")
    entry = {e.scene_id: e for e in catalog_entries()}.get(scene_id)
    if entry is None:
        raise CatalogMismatchError(f"{scene_id!r} is in the manifest but not in this code's catalog plan; "
                                   "the code changed the catalog: bump CATALOG_VERSION and re-freeze")
    spec = generate_catalog_scene(entry)
    h = scene_content_hash(spec)
    if h != rows[scene_id]["content_hash"]:
        raise CatalogMismatchError(
            f"catalog scene {scene_id!r} regenerated with content hash {h[:12]}..., but catalog "
            f"v{manifest()['catalog_version']} froze {rows[scene_id]['content_hash'][:12]}...: the code "
            "changed the catalog. Bump CATALOG_VERSION and run `spatialscout scenes freeze`, "
            "or restore the generator.")
    return spec


def scene_by_name(name: str) -> SceneSpec:
    """A scene from a catalog id (``Kitchen_03``), ``procedural:<seed>`` (a training scene), a
    path to a scene-spec JSON file (``scene_spec.json`` as ``scenes export`` writes it), or the id
    of a scene imported into ``$SPATIALSCOUT_SCENE_DIRS`` (``scenes import-maniskill``)."""
    if name.startswith(PROCEDURAL_PREFIX):
        seed = name[len(PROCEDURAL_PREFIX):]
        if not seed.isdigit():
            from spatialscout_gym.core.errors import ConfigError
            raise ConfigError(f"expected 'procedural:<non-negative integer seed>', got {name!r}")
        return procedural_scene(int(seed))
    path = Path(name)
    if path.suffix == ".json" and path.is_file():
        return _read_spec(path)
    if path.is_dir() and (path / "scene_spec.json").is_file():
        return _read_spec(path / "scene_spec.json")
    if name not in catalog_scene_ids():  # an imported scene id ($SPATIALSCOUT_SCENE_DIRS, issue 8)
        from spatialscout_gym.scenes.maniskill import imported_scene_paths
        imported = imported_scene_paths().get(name)
        if imported is not None:
            return _read_spec(imported)
        raise UnknownSceneError(_unknown_scene_message(name))
    return load_scene(name)


def freeze_manifest(path: Path | None = None, progress: bool = False) -> dict:
    """Regenerate every catalog scene and write the manifest (maintainer command)."""
    rows = []
    entries = catalog_entries()
    it = entries
    if progress:
        from tqdm import tqdm
        it = tqdm(entries, desc="freezing catalog", unit="scene")
    for e in it:
        spec = generate_catalog_scene(e)
        rows.append({"scene_id": e.scene_id, "layout": e.layout, "n_rooms": e.n_rooms,
                     "rooms": spec.public.description.get("rooms", []),
                     "seed": e.seed, "seed_sequence": [CATALOG_NAMESPACE, e.seed],
                     "n_targets": e.n_targets, "radius_m": round(spec.public.radius_m, 6),
                     "content_hash": scene_content_hash(spec)})
    data = {"catalog_version": CATALOG_VERSION, "render_settings": RENDER_SETTINGS,
            "generator": "spatialscout_gym.scenes.procedural", "scenes": rows}
    out = Path(path) if path is not None else MANIFEST_PATH
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(data, indent=1) + "\n")
    manifest.cache_clear()
    return data
