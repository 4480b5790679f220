"""The fixed, versioned 80-scene catalog and scene lookup by name.

* 48 single rooms (11 kitchens, 11 living rooms, 10 bedrooms, 6 bathrooms, 10 offices) and 32
  apartments of 2-5 rooms (8, 9, 8, 7), about docs/protocol.md section 8's 60/40 mix; 12 scenes have 35
  targets (catalog indices 0, 7, 14, ..., 77) and 68 have 40.
* Scene ``i`` is generated from ``numpy.random.SeedSequence([CATALOG_NAMESPACE, i])``; training
  scenes (:func:`procedural_scene`) use ``TRAIN_NAMESPACE``, so the two streams never coincide.
* Versions: **v3.1** (the default) is v3.0 with every room inside the +-15 m world box the
  camera may move in (five v3.0 apartments, 11, 16, 17, 26 and 31, have walls past x = 15 m and
  move towards the origin; the other 75 scenes keep their plans); **v3.0** has all of ProcTHOR's object types and places them by ProcTHOR's placement
  annotations and receptacles (scenes/placement.py), with v2.0's sizes; **v2.0** sizes objects like
  AI2-THOR's assets and places targets as far from the start as the paper's catalog; **v1.0**
  (hand-set sizes). All four stay loadable and hash-verified and share the 80 recipes and scene
  ids; scenes/sizes.py holds each version's generator rules. A bare id means
  :func:`default_catalog_version` (``3.1``, or ``$SPATIALSCOUT_CATALOG``, which ``--catalog`` sets);
  ``Kitchen_03@1.0`` names a version.
* Frozen: the shipped manifests ``data/catalog_v1.json``, ``catalog_v2.json``, ``catalog_v3.json`` and
  ``catalog_v3_1.json`` list every scene's id, layout, seed, target count, radius and content hash
  (``SceneSpec.content_hash(render_settings(version))``); v2.0's and later also carry ``provenance``
  (see :func:`check_provenance`). :func:`load_scene` regenerates a scene and refuses it when its
  hash differs (the generator code changed the catalog: add a version and freeze it with
  ``spatialscout scenes freeze --catalog X``). :func:`catalog_scene_ids` reads only the manifest,
  so env registration stays fast.
"""

from __future__ import annotations

import copy
import hashlib
import json
import os
from collections import OrderedDict
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

from spatialscout_gym.core.errors import SpatialScoutError
from spatialscout_gym.core.run_files import SCENE_SPEC_FILE
from spatialscout_gym.core.spec import SceneSpec
from spatialscout_gym.core.types import natural_number
from spatialscout_gym.scenes.procedural import (FOV_Y_DEG, IMAGE_SIZE, TRAIN_NAMESPACE, generate_scene,
                                                procedural_scene)
from spatialscout_gym.scenes.placement import PROCTHOR_PLACEMENT_PATH
from spatialscout_gym.scenes.sizes import AI2THOR_SIZES_PATH, RULES, rules_for

__all__ = ["CATALOG_VERSION", "CATALOG_NAMESPACE", "RENDER_SETTINGS", "CatalogEntry", "catalog_entries",
           "catalog_scene_ids", "load_scene", "generate_catalog_scene", "scene_by_name", "manifest",
           "UnknownSceneError", "scene_name_problem", "SCENE_NAME_FORMS", "scene_content_hash",
           "freeze_manifest", "MANIFEST_PATH", "CatalogMismatchError", "procedural_scene", "TRAIN_NAMESPACE",
           "CATALOG_VERSIONS", "DEFAULT_CATALOG_VERSION", "default_catalog_version", "render_settings",
           "manifest_path", "scene_catalog_version", "check_provenance", "generator_fingerprint",
           "asset_fingerprint", "CATALOG_ENV"]

CATALOG_VERSIONS = ("1.0", "2.0", "3.0", "3.1")
DEFAULT_CATALOG_VERSION = "3.1"
CATALOG_VERSION = DEFAULT_CATALOG_VERSION
"""The default catalog version (kept under its old name)."""
CATALOG_ENV = "SPATIALSCOUT_CATALOG"
"""Environment variable naming the catalog version a bare scene id means (``--catalog`` sets it,
so evaluation workers inherit it)."""
CATALOG_NAMESPACE = 0x6361_7461   # "cata"
_RENDER_SETTINGS_V1: dict = {"width": IMAGE_SIZE, "height": IMAGE_SIZE, "fov_y_deg": FOV_Y_DEG,
                             "shader": "minimal", "renderer_settings_version": 1}
_RENDER_SETTINGS_V2: dict = {"width": IMAGE_SIZE, "height": IMAGE_SIZE, "fov_y_deg": FOV_Y_DEG,
                             "shader": "minimal", "renderer_settings_version": 2, "texture_library": 1}
_RENDER_SETTINGS = {"1.0": _RENDER_SETTINGS_V1, "2.0": _RENDER_SETTINGS_V2, "3.0": _RENDER_SETTINGS_V2,
                    "3.1": _RENDER_SETTINGS_V2}
RENDER_SETTINGS: dict = _RENDER_SETTINGS[DEFAULT_CATALOG_VERSION]
"""Render settings hashed with every scene of the default catalog (a change re-versions it)."""
_MANIFESTS = {"1.0": "catalog_v1.json", "2.0": "catalog_v2.json", "3.0": "catalog_v3.json",
              "3.1": "catalog_v3_1.json"}
MANIFEST_PATH = Path(__file__).parent / "data" / _MANIFESTS[DEFAULT_CATALOG_VERSION]
PROCEDURAL_PREFIX = "procedural:"


def _check_version(version: str) -> str:
    version = str(version)
    if version not in CATALOG_VERSIONS:
        from spatialscout_gym.core.errors import ConfigError
        raise ConfigError(f"unknown catalog version {version!r}; expected one of {', '.join(CATALOG_VERSIONS)} "
                         f"(e.g. --catalog {DEFAULT_CATALOG_VERSION})")
    return version


def default_catalog_version() -> str:
    """The version a bare catalog id means: ``$SPATIALSCOUT_CATALOG`` when set, else 3.1."""
    return _check_version(os.environ.get(CATALOG_ENV) or DEFAULT_CATALOG_VERSION)


def render_settings(version: str | None = None) -> dict:
    """The render settings catalog ``version`` hashes with its scenes (a copy)."""
    return dict(_RENDER_SETTINGS[_check_version(version or default_catalog_version())])


def manifest_path(version: str | None = None) -> Path:
    """The shipped manifest file of catalog ``version``."""
    return Path(__file__).parent / "data" / _MANIFESTS[_check_version(version or default_catalog_version())]


def _split_version(name: str) -> tuple[str, str | None]:
    """``"Kitchen_01@1.0"`` -> ``("Kitchen_01", "1.0")``; a name without ``@`` -> ``(name, None)``."""
    if "@" in name and not Path(name).exists():
        base, _, ver = name.rpartition("@")
        return base, _check_version(ver)
    return name, None

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
    version: str = DEFAULT_CATALOG_VERSION

    @property
    def seed_sequence(self) -> np.random.SeedSequence:
        return np.random.SeedSequence([CATALOG_NAMESPACE, self.seed])


def catalog_entries(version: str | None = None) -> tuple[CatalogEntry, ...]:
    """The 80 recipes of catalog ``version`` (default :func:`default_catalog_version`), in
    catalog order (singles interleaved by kind, then apartments); every version has the same."""
    return _catalog_entries(_check_version(version or default_catalog_version()))


@lru_cache(maxsize=4)
def _catalog_entries(version: str) -> tuple[CatalogEntry, ...]:
    rows: list[tuple[str, str, int]] = []
    for kind, n in _SINGLE:
        rows += [(f"{kind}_{k + 1:02d}", kind, 1) for k in range(n)]
    k = 0
    for n_rooms, n in _APARTMENT_ROOMS:
        for _ in range(n):
            k += 1
            rows.append((f"Apartment_{k:02d}", "Apartment", n_rooms))
    return tuple(CatalogEntry(sid, lay, nr, i, 35 if i % 7 == 0 else 40, version)
                 for i, (sid, lay, nr) in enumerate(rows))


def generate_catalog_scene(entry: CatalogEntry) -> SceneSpec:
    """Generate a catalog scene from its recipe under its version's rules (no manifest check)."""
    return generate_scene(entry.seed_sequence, entry.n_targets, entry.layout, entry.scene_id,
                          n_rooms=entry.n_rooms if entry.layout == "Apartment" else None,
                          source={"generator": "procedural", "stream": "catalog",
                                  "catalog_version": entry.version, "seed": entry.seed},
                          rules=rules_for(entry.version),
                          # v3.0 and earlier are frozen as drawn: five apartments' east walls stand
                          # past the world box; v3.1 moves them inside (scenes/sizes.py)
                          in_world_box=rules_for(entry.version).in_world_box)


def manifest(version: str | None = None) -> dict:
    """The shipped manifest of catalog ``version`` (``data/catalog_v1.json``, ``catalog_v2.json``,
    ``catalog_v3.json``, ``catalog_v3_1.json``)."""
    return _manifest(_check_version(version or default_catalog_version()))


@lru_cache(maxsize=4)
def _manifest(version: str) -> dict:
    path = manifest_path(version)
    try:
        return json.loads(path.read_text())
    except FileNotFoundError:
        raise FileNotFoundError(f"the catalog manifest {path} is missing; reinstall the package or "
                                f"run `spatialscout scenes freeze --catalog {version}`") from None


manifest.cache_clear = _manifest.cache_clear  # type: ignore[attr-defined]  # callers (tests, freeze) clear the cache by this name


def catalog_scene_ids(version: str | None = None) -> list[str]:
    """Every catalog scene id, in catalog order (reads only the manifest).

    A missing manifest (a broken install or a source tree before ``scenes freeze``) gives an
    empty list and a warning rather than an error, so ``import spatialscout_gym`` still works.
    """
    path = manifest_path(version)
    if not path.is_file():
        import warnings
        warnings.warn(f"the catalog manifest {path} is missing, so no catalog scene is "
                      "registered; run `spatialscout scenes freeze` or reinstall the package", stacklevel=2)
        return []
    return [s["scene_id"] for s in manifest(version)["scenes"]]


def scene_catalog_version(spec: SceneSpec) -> str:
    """The catalog version a scene belongs to (a catalog scene), or whose generator rules made it
    (a training scene); the default version for anything else (imported, hand-written)."""
    src = spec.private.source or {}
    v = src.get("catalog_version") or src.get("rules")
    return str(v) if str(v) in CATALOG_VERSIONS else default_catalog_version()


def uses_texture_library(spec: SceneSpec) -> bool:
    """Whether ``spec`` renders with the bounded texture library (its catalog version's render
    settings name it: v2.0, v3.0 and training scenes) or with exact per-seed textures (v1.0, as released)."""
    return "texture_library" in render_settings(scene_catalog_version(spec))


def scene_content_hash(spec: SceneSpec) -> str:
    """The content hash every result file carries: the spec and its catalog
    version's render settings; for a catalog scene it equals the manifest's ``content_hash``."""
    return spec.content_hash(render_settings(scene_catalog_version(spec)))


# ---------------------------------------------------------------- provenance -------
_GENERATOR_FILES = ("categories.py", "furniture.py", "furniture_procthor.py", "geometry.py", "layout.py",
                    "placement.py", "procedural.py", "rooms.py", "sizes.py", "catalog.py")


def _sha256_files(paths) -> str:
    h = hashlib.sha256()
    for p in paths:
        h.update(Path(p).name.encode() + b"\0" + Path(p).read_bytes() + b"\0")
    return h.hexdigest()


def generator_fingerprint() -> str:
    """sha256 over the scene generator's source files (scenes/*.py that shape a scene)."""
    here = Path(__file__).parent
    return _sha256_files(here / f for f in _GENERATOR_FILES)


def asset_fingerprint(version: str | None = None) -> str:
    """sha256 of the data files catalog ``version``'s generator reads: the AI2-THOR size
    reference, and from v3.0 on ProcTHOR's placement rules."""
    version = _check_version(version or default_catalog_version())
    paths = [AI2THOR_SIZES_PATH] + ([PROCTHOR_PLACEMENT_PATH] if version not in ("1.0", "2.0") else [])
    return _sha256_files(paths)


def check_provenance(version: str | None = None) -> list[str]:
    """Compare catalog ``version``'s manifest ``provenance`` with this installation.

    What a run **refuses** (:class:`CatalogMismatchError` from :func:`load_scene`): a scene whose
    content hash (the spec and the render settings) differs from the manifest's, render settings
    that differ from the manifest's, and an asset fingerprint (the data the generator reads)
    that differs. These change what the agent sees or what is scored.

    What is only **recorded** (and returned here as notes, which ``spatialscout scenes verify``
    and ``doctor``-style tools can print): the generator code fingerprint (a refactor that leaves
    every scene's hash unchanged is harmless, and the per-scene hash catches one that does not),
    dependency versions (a numpy or SAPIEN bump must not make every scene unusable; the hashes
    prove the scenes are unchanged), rendering backends and the delivered-image encoding (JPEG
    quality, maximum side), which the VLM wrapper records with every run.

    Returns
    -------
    list of str
        One note per recorded difference (empty when everything matches or the manifest has
        no provenance, as v1.0's).
    """
    version = _check_version(version or default_catalog_version())
    prov = manifest(version).get("provenance")
    if not prov:
        return []
    notes = []
    if prov.get("generator_fingerprint") not in (None, generator_fingerprint()):
        notes.append(f"catalog v{version}: the generator code differs from the one that froze it "
                     "(recorded only; each scene's content hash is still verified)")
    deps = prov.get("dependencies", {})
    for name, frozen in sorted(deps.items()):
        now = _dependency_version(name)
        if now != frozen:
            notes.append(f"catalog v{version}: {name} {now} here, {frozen} when frozen (recorded only)")
    return notes


def _refusals(version: str) -> str | None:
    m = manifest(version)
    if m.get("render_settings") is not None and m["render_settings"] != render_settings(version):
        return (f"catalog v{version}'s manifest froze render settings {m['render_settings']}, but this code "
                f"uses {render_settings(version)}")
    prov = m.get("provenance") or {}
    if prov.get("asset_fingerprint") not in (None, asset_fingerprint(version)):
        return (f"catalog v{version} was frozen with generator data (scenes/data/ai2thor_sizes.json, "
                f"procthor_placement.json) of fingerprint {prov['asset_fingerprint'][:12]}..., this installation has "
                f"{asset_fingerprint(version)[:12]}...; reinstall the package or restore those files")
    return None


def _dependency_version(name: str) -> str | None:
    if name == "python":
        import platform
        return platform.python_version()
    from importlib import metadata
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


DEPENDENCIES = ("python", "numpy", "gymnasium", "sapien", "pillow", "trimesh")
"""Distributions whose versions a frozen manifest records (recorded only, never refused)."""


class UnknownSceneError(SpatialScoutError, KeyError):
    """A scene name that is neither a catalog id, ``procedural:<seed>``, a spec file nor an
    imported id. A ``KeyError`` whose message prints without the quotes ``KeyError`` adds."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


SCENE_NAME_FORMS = ("a catalog id (`spatialscout scenes list`), procedural:<seed>, a scene_spec.json "
                    "file or directory, or an id imported into $SPATIALSCOUT_SCENE_DIRS")


MAX_SCENE_NAME_CHARS = 4096
"""Longest scene name or path, characters (the longest path Linux opens)."""


def _shown(name: str, n: int = 80) -> str:
    """``repr(name)``, cut to ``n`` characters with the length stated (a message stays one line)."""
    return repr(name) if len(name) <= n else repr(name[:n]) + f"... ({len(name)} characters)"


def _is_file(path: Path) -> bool:
    """``path.is_file()``, False where the name cannot be a file (too long, a NUL byte)."""
    try:
        return path.is_file()
    except (OSError, ValueError):
        return False


def _is_dir(path: Path) -> bool:
    try:
        return path.is_dir()
    except (OSError, ValueError):
        return False


def _name_form_problem(name: object) -> str | None:
    """Why ``name`` cannot name a scene whatever it is (not a string, too long, a seed of more digits
    than an integer reads), or None."""
    if not isinstance(name, str):
        return f"a scene name must be a string, got {type(name).__name__}"
    if len(name) > MAX_SCENE_NAME_CHARS:
        return f"a scene name or path has at most {MAX_SCENE_NAME_CHARS} characters, got {len(name)}"
    if name.startswith(PROCEDURAL_PREFIX) and natural_number(name[len(PROCEDURAL_PREFIX):]) is None:
        return f"expected 'procedural:<non-negative integer seed>', got {_shown(name)}"
    return None


def _looks_like_path(name: str) -> bool:
    return name.endswith(".json") or "/" in name or "\\" in name or name.startswith(".")


def _unknown_scene_message(name: str) -> str:
    """Why ``name`` names no scene: a missing file, or an unknown id with close matches and any
    ``$SPATIALSCOUT_SCENE_DIRS`` entry that does not exist."""
    import difflib

    from spatialscout_gym.scenes.maniskill import imported_scene_paths, missing_scene_dirs
    path = Path(name)
    if _looks_like_path(name):
        if _is_dir(path):
            return f"scene directory {_shown(name)} has no scene_spec.json (write one with `spatialscout scenes export`)"
        return f"scene file {_shown(name)} does not exist"
    ids = list(catalog_scene_ids()) + list(imported_scene_paths())
    by_lower = {i.lower(): i for i in ids}
    close = difflib.get_close_matches(name.lower(), list(by_lower), n=3, cutoff=0.6)
    msg = f"unknown scene {_shown(name)}"
    msg += ("; did you mean " + " or ".join(repr(by_lower[c]) for c in close) + "?") if close else "."
    msg += f" A scene is {SCENE_NAME_FORMS}"
    missing = missing_scene_dirs()
    if missing:
        msg += (f" (note: $SPATIALSCOUT_SCENE_DIRS lists {', '.join(map(str, missing))}, which does not "
                "exist)")
    return msg


def scene_name_problem(name: str) -> str | None:
    """Why ``name`` cannot be resolved by :func:`scene_by_name`, or None; cheap (builds nothing)."""
    problem = _name_form_problem(name)
    if problem is not None or name.startswith(PROCEDURAL_PREFIX):
        return problem
    path = Path(name)
    if (path.suffix == ".json" and _is_file(path)) or _is_file(path / SCENE_SPEC_FILE):
        return None
    try:
        base, ver = _split_version(name)
    except ValueError as exc:
        return str(exc)
    if base in catalog_scene_ids(ver):
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
        raise SceneFileError(path, f"not a valid scene spec ({message_of(exc)})") from exc


def load_scene(scene_id: str, version: str | None = None) -> SceneSpec:
    """Regenerate catalog scene ``scene_id`` of catalog ``version`` (default
    :func:`default_catalog_version`; ``Kitchen_01@1.0`` also names it) and verify its content
    hash against that version's manifest (:func:`check_provenance` says what else is refused).

    Raises
    ------
    KeyError
        ``scene_id`` is not in the catalog.
    CatalogMismatchError
        The regenerated scene differs from the frozen one.
    """
    scene_id, named = _split_version(scene_id)
    version = _check_version(named or version or default_catalog_version())
    rows = {s["scene_id"]: s for s in manifest(version)["scenes"]}
    if scene_id not in rows:
        raise UnknownSceneError(f"{scene_id!r} is not a catalog scene; `spatialscout scenes list` "
                                f"shows the {len(rows)} ids (e.g. {next(iter(rows))})")
    refusal = _refusals(version)
    if refusal:
        raise CatalogMismatchError(refusal)
    entry = {e.scene_id: e for e in catalog_entries(version)}.get(scene_id)
    if entry is None:
        raise CatalogMismatchError(f"{scene_id!r} is in the manifest but not in this code's catalog plan; "
                                   "the code changed the catalog: bump CATALOG_VERSION and re-freeze")
    key = (version, scene_id, rows[scene_id]["content_hash"])
    spec = _verified.get(key)
    if spec is None:
        spec = generate_catalog_scene(entry)
        h = scene_content_hash(spec)
        if h != rows[scene_id]["content_hash"]:
            raise CatalogMismatchError(
                f"catalog scene {scene_id!r} regenerated with content hash {h[:12]}..., but catalog "
                f"v{version} froze {rows[scene_id]['content_hash'][:12]}...: the code "
                "changed the catalog. Bump CATALOG_VERSION (add a version) and run `spatialscout scenes freeze`, "
                "or restore the generator.")
        _verified[key] = spec
        while len(_verified) > VERIFIED_SCENES_KEPT:
            _verified.popitem(last=False)
    return copy.deepcopy(spec)     # the caller may change its copy; the kept one stays as verified


VERIFIED_SCENES_KEPT = 32
"""Catalog scenes :func:`load_scene` keeps once regenerated and verified, per process (a copy is
returned each time: 15 ms instead of 0.3 s of regeneration for an 80-object apartment)."""

_verified: OrderedDict[tuple[str, str, str], SceneSpec] = OrderedDict()
"""(version, scene id, frozen content hash) -> the scene regenerated under that key and verified."""


def scene_by_name(name: str, catalog_version: str | None = None) -> SceneSpec:
    """A scene from a catalog id (``Kitchen_03`` in ``catalog_version``, default
    :func:`default_catalog_version`; ``Kitchen_03@1.0`` names the version), ``procedural:<seed>``
    (a training scene under that version's rules), a
    path to a scene-spec JSON file (``scene_spec.json`` as ``scenes export`` writes it), or the id
    of a scene imported into ``$SPATIALSCOUT_SCENE_DIRS`` (``scenes import-maniskill``)."""
    problem = _name_form_problem(name)
    if problem is not None:
        if isinstance(name, str) and name.startswith(PROCEDURAL_PREFIX) and len(name) <= MAX_SCENE_NAME_CHARS:
            from spatialscout_gym.core.errors import ConfigError
            raise ConfigError(problem)
        raise UnknownSceneError(problem)
    if name.startswith(PROCEDURAL_PREFIX):
        seed = natural_number(name[len(PROCEDURAL_PREFIX):])
        assert seed is not None   # _name_form_problem read it
        return procedural_scene(seed, catalog_version=catalog_version or default_catalog_version())
    path = Path(name)
    if path.suffix == ".json" and _is_file(path):
        return _read_spec(path)
    if _is_dir(path) and _is_file(path / SCENE_SPEC_FILE):
        return _read_spec(path / SCENE_SPEC_FILE)
    base, named = _split_version(name)
    if base not in catalog_scene_ids(named or catalog_version):  # an imported scene id
        from spatialscout_gym.scenes.maniskill import imported_scene_paths
        imported = imported_scene_paths().get(name)
        if imported is not None:
            return _read_spec(imported)
        raise UnknownSceneError(_unknown_scene_message(name))
    return load_scene(base, named or catalog_version)


def freeze_manifest(path: Path | None = None, progress: bool = False, version: str | None = None,
                    provenance: dict | None = None) -> dict:
    """Regenerate every scene of catalog ``version`` and write its manifest (maintainer command).

    ``provenance`` (v2.0 on): what the freezing installation records beside the hashes
    (image encoding, backends; the CLI gathers them); generator and asset fingerprints and
    :data:`DEPENDENCIES` versions are added here. :func:`check_provenance` says which
    differences a run refuses and which are only recorded.
    """
    version = _check_version(version or default_catalog_version())
    rows = []
    entries = catalog_entries(version)
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
                     "content_hash": spec.content_hash(render_settings(version))})
    data = {"catalog_version": version, "render_settings": render_settings(version),
            "generator": "spatialscout_gym.scenes.procedural"}
    if version != "1.0":   # v1.0's manifest predates provenance and stays byte-identical
        data["generator_rules"] = {k: (list(v) if isinstance(v, tuple) else v)
                                   for k, v in RULES[version].__dict__.items()}
        data["provenance"] = {**(provenance or {}), "generator_fingerprint": generator_fingerprint(),
                              "asset_fingerprint": asset_fingerprint(version),
                              "dependencies": {d: _dependency_version(d) for d in DEPENDENCIES}}
    data["scenes"] = rows
    out = Path(path) if path is not None else manifest_path(version)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(data, indent=1) + "\n")
    _manifest.cache_clear()
    return data
