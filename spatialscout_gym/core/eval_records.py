"""An evaluation directory's own records as types, read strictly (docs/protocol.md sections 5 and 9).

``planned.json`` (every episode an evaluation set out to run) and ``scenes.json`` (the scene
argument of each scene directory) are read here and nowhere else; the run record
(``result.json``) is :class:`~spatialscout_gym.core.records.RunRecord`, read by
:func:`load_result`. Loading is strict: a file that is not the record (a directory, text
that is not JSON, a field of the wrong type) is one :class:`~spatialscout_gym.core.records.RecordError`
line naming the file and the field.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from spatialscout_gym.core.files import SceneFileError, read_json
from spatialscout_gym.core.records import RecordError, RunRecord, load_run_record
from spatialscout_gym.core.run_files import RESULT_FILE, seed_of_dir

__all__ = ["PLANNED_FILE", "SCENES_FILE", "Plan", "load_planned", "load_scene_args", "load_result",
           "is_episode_key", "PLAN_SCHEMA_VERSION"]

PLANNED_FILE = "planned.json"
SCENES_FILE = "scenes.json"
PLAN_SCHEMA_VERSION = 1
"""``planned.json``'s and ``scenes.json``'s form: one version so far (files carry no version field;
a later form adds one and a migration here)."""


def is_episode_key(key: object) -> bool:
    """True for ``<scene dir>/seed_<k>``: one scene directory, then a seed written in decimal
    without leading zeros."""
    if not isinstance(key, str):
        return False
    scene, _, last = key.rpartition("/")
    k = seed_of_dir(last)
    return k is not None and bool(scene) and "/" not in scene and "\\" not in scene


@dataclass(frozen=True)
class Plan:
    """``planned.json``: the episode keys (``<scene dir>/seed_<k>``) of an evaluation, sorted."""

    episodes: tuple[str, ...]


def _read_object(path: Path) -> dict:
    """``path`` as a JSON object; a non-file (a directory, a FIFO), bad JSON or another JSON value
    is one :class:`RecordError` naming the file. A link to a file is followed: ``verify`` keys its
    cached verdicts on the linked file's contents."""
    try:
        d = read_json(path)
    except SceneFileError as exc:
        raise RecordError(str(exc)) from None
    if not isinstance(d, dict):
        raise RecordError(f"{path}: expected a JSON object, found {type(d).__name__}")
    return d


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def load_planned(root: str | os.PathLike) -> Plan | None:
    """``root/planned.json`` (None when absent). A file that is not ``{"episodes": [key, ...]}``
    (truncated, another field, a string, a list of other things) is a :class:`RecordError`: a
    corrupted plan is never an empty one."""
    path = Path(root) / PLANNED_FILE
    if not path.exists() and not path.is_symlink():
        return None
    d = _read_object(path)
    unknown = sorted(set(d) - {"episodes"})
    if unknown:
        raise RecordError(f"{path}: field {unknown[0]!r} is not a field of this record")
    if "episodes" not in d:
        raise RecordError(f"{path}: field 'episodes' is missing")
    keys = d["episodes"]
    if not isinstance(keys, list):
        raise RecordError(f"{path}: field 'episodes' must be a list of \"<scene dir>/seed_<k>\", got {_short(keys)}")
    bad = next((i for i, k in enumerate(keys) if not is_episode_key(k)), None)
    if bad is not None:
        raise RecordError(f"{path}: field 'episodes[{bad}]' must be \"<scene dir>/seed_<k>\", got {_short(keys[bad])}")
    return Plan(tuple(sorted(set(keys))))


def load_scene_args(root: str | os.PathLike) -> dict[str, str]:
    """``root/scenes.json``: ``{scene dir: scene argument}`` ({} when absent); a value that is not
    a string is a :class:`RecordError` naming it."""
    path = Path(root) / SCENES_FILE
    if not path.exists() and not path.is_symlink():
        return {}
    d = _read_object(path)
    bad = next((k for k, v in d.items() if not isinstance(v, str)), None)
    if bad is not None:
        raise RecordError(f"{path}: field {bad!r} must be a scene argument (a string), got {_short(d[bad])}")
    return d


def load_result(run_dir: str | os.PathLike) -> RunRecord | None:
    """``run_dir/result.json`` as a :class:`RunRecord` (None when absent), strictly
    (:func:`~spatialscout_gym.core.records.load_run_record`)."""
    path = Path(run_dir) / RESULT_FILE
    if not path.exists() and not path.is_symlink():
        return None
    if path.is_dir() and not path.is_symlink():
        raise RecordError(f"{path}: is a directory, expected a file; remove it or rerun the episode")
    return load_run_record(path)
