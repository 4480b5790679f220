"""The verdict cache of ``verify`` (docs/protocol.md section 7; docs/verify.md, "Threat model").

A verdict is kept outside the directory it judged, under a key that names **everything** the
verdict depends on, each through a canonical manifest (one ``[relative path, size, SHA-256]``
entry per file, serialised as JSON, so no two different sets of files give the same bytes):

* the run directory's files, its earlier attempts included (verify counts them);
* the package: its version and every file of it, code and data alike (``scenes/data/*.json``: the
  catalog manifests, size tables; the viewer's static files), so a verdict given by other code or
  other data is never reused;
* every file outside the run that verification reads: ``evaluate.json``, ``scenes.json``, the
  spec file ``scenes.json`` names for the episode's scene, and the price table ``evaluate.json``
  names (its bytes, or that it is absent here), with ``$SPATIALSCOUT_SCENE_DIRS``;
* the episode key and whether images were re-rendered.

A directory holding anything but regular files and folders (a link, a FIFO) has no key: it is
always re-executed (and refused there).
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
from pathlib import Path
from typing import Any, Iterable

from spatialscout_gym.core.run_files import SCENE_SPEC_FILE

__all__ = ["run_files", "manifest", "manifest_digest", "files_digest", "code_digest", "package_manifest", "cache_dir", "cache_key",
           "SCENE_DIRS_ENV"]

SCENE_DIRS_ENV = "SPATIALSCOUT_SCENE_DIRS"


def run_files(run_dir: Path) -> list[Path]:
    """Every entry of a run directory, its earlier attempts included (verify counts them), sorted
    (frames included)."""
    if not run_dir.is_dir():
        return []
    return sorted(run_dir.rglob("*"))


def _file_entry(name: str, path: Path) -> list[Any]:
    """``[name, size, sha256]`` of a regular file; ``[name, -1, "absent"]`` when there is none; a
    link is entered as what reading it gives (its target's bytes, as verification reads them) with
    the target's name, so an edit behind a link changes the key."""
    if path.is_symlink():
        return [name, -2, f"link to {os.readlink(path)}", _file_entry(name, path.resolve())[1:]]
    if not path.is_file():
        return [name, -1, "absent"]
    h = hashlib.sha256()
    size = 0
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
            size += len(block)
    return [name, size, h.hexdigest()]


def manifest(entries: Iterable[tuple[str, Path]]) -> list[list[Any]]:
    """The canonical manifest of ``(name, path)`` pairs: ``[name, size, sha256]`` sorted by name."""
    return sorted(_file_entry(name, path) for name, path in entries)


def manifest_digest(rows: Any) -> str:
    """SHA-256 of a manifest (or any JSON value holding manifests) as canonical JSON: every name
    is a quoted, escaped JSON string, so no concatenation of names and contents is ambiguous."""
    text = json.dumps(rows, sort_keys=True, ensure_ascii=True, separators=(",", ":"))
    return hashlib.sha256(text.encode("ascii")).hexdigest()


def files_digest(run_dir: Path) -> str:
    """The digest of a run directory's manifest (relative path, size, SHA-256 of every regular file,
    earlier attempts included): any change to any file, frames included, or any file added,
    removed or renamed changes it."""
    return manifest_digest(manifest((p.relative_to(run_dir).as_posix(), p) for p in run_files(run_dir)
                                    if p.is_file() and not p.is_symlink()))


def package_manifest() -> list[list[Any]]:
    """The manifest of every file of the package, code and data (compiled caches left out)."""
    package = Path(__file__).resolve().parents[2]
    return manifest((p.relative_to(package).as_posix(), p) for p in package.rglob("*")
                    if p.is_file() and "__pycache__" not in p.parts and p.suffix not in (".pyc", ".pyo"))


@functools.lru_cache(maxsize=1)
def code_digest() -> str:
    """The version and :func:`package_manifest`: a verdict given by another release, an edited
    replay, scorer or catalog manifest is never reused."""
    from spatialscout_gym import __version__
    return manifest_digest({"version": __version__, "files": package_manifest()})


def cache_dir(root: Path) -> Path | None:
    """Where verdicts are kept between commands: ``$SPATIALSCOUT_VERIFY_CACHE``, else
    ``$XDG_CACHE_HOME/spatialscout/verify`` (``~/.cache``). None when that is inside the directory
    being verified (a submission cannot bring its own)."""
    base = os.environ.get("SPATIALSCOUT_VERIFY_CACHE") or str(
        Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "spatialscout" / "verify")
    cache = Path(base).resolve()
    if cache == root.resolve() or root.resolve() in cache.parents:
        return None
    return cache


def _read_inputs(root: Path, run_dir: Path, scene_args: dict[str, str]) -> list[list[Any]]:
    """The manifest of the files outside the run that verifying it reads (see the module docstring)."""
    from spatialscout_gym.core.eval_records import load_evaluation
    from spatialscout_gym.core.records import RecordError
    from spatialscout_gym.eval.layout import SCENES_FILE, SETTINGS_FILE
    entries: list[tuple[str, Path]] = [(SETTINGS_FILE, root / SETTINGS_FILE), (SCENES_FILE, root / SCENES_FILE)]
    for base in (root, run_dir):        # a lone run directory may carry its own evaluate.json
        if not (base / SETTINGS_FILE).is_file():
            continue
        try:                            # regular files only, bounded (a FIFO never blocks)
            settings = load_evaluation(base)
        except RecordError:
            continue
        table = settings.option("price_table") if settings is not None else None
        if isinstance(table, str):
            from spatialscout_gym.eval.layout import evaluation_file
            path = evaluation_file(base, table)
            entries.append((f"price table {path.resolve()}", path))
    arg = scene_args.get(run_dir.parent.name)
    if arg:
        spec = Path(arg)
        if spec.is_dir():
            spec = spec / SCENE_SPEC_FILE
        if spec.suffix == ".json" or spec.exists():
            entries.append((f"scene spec {spec.resolve()}", spec))
    return manifest(entries)


def cache_key(root: Path, run_dir: Path, key: str, scene_args: dict[str, str], images: bool) -> str | None:
    """The key of one episode's verdict (see the module docstring); None when the run directory
    holds an entry that is not a regular file or folder (never cached)."""
    entries = run_files(run_dir)
    if any(p.is_symlink() or not (p.is_file() or p.is_dir()) for p in entries):
        return None
    return manifest_digest({"code": code_digest(), "episode": key, "images": bool(images),
                            "run": files_digest(run_dir), "inputs": _read_inputs(root, run_dir, scene_args),
                            "scene_dirs": os.environ.get(SCENE_DIRS_ENV, "")})
