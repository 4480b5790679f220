"""The one reader of an evaluation directory's layout (docs/protocol.md sections 5 and 9).

``spatialscout evaluate --out DIR`` writes::

    DIR/evaluate.json                  the settings every episode shares
    DIR/<scene dir>/seed_<k>/          the episode's latest attempt (a run directory: result.json,
                                       trace.jsonl, ground_truth.json, predictions.json, frames/)
    DIR/<scene dir>/seed_<k>/attempts/NN/   earlier attempts of that episode
    DIR/<scene dir>/seed_<k>.failed.json    the episode could not start
    DIR/<scene dir>/seed_<k>.attempts/failed_NN.json   earlier failures (older layout)

:class:`EvalDir` knows that layout: the episodes, their attempts, which episode is **completed**
(an attempt whose ``result.json`` has a status other than ``"failed"``) or **failed** (no such
attempt but a failure record), and the seed spread. A plain run directory (``DIR/result.json``)
is read as an evaluation of one episode. ``report``, ``compare``, ``leaderboard``, ``replay`` and
``verify`` read through it; so may any other reader of run directories (it is public API).

A file that exists but cannot be read as a JSON object raises :class:`EvalDirError` naming it.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
from collections import defaultdict
from pathlib import Path
from typing import Any, Iterable

import numpy as np

from spatialscout_gym.core.errors import SpatialScoutError
from spatialscout_gym.core.files import write_json_atomic, write_text_atomic

__all__ = ["EvalDir", "EvalDirError", "EpisodeDir", "Attempt", "seed_spread", "publish_json", "publish_text", "read_json_object", "read_trace",
           "SETTINGS_FILE", "RESULT_FILE", "TRACE_FILE", "GROUND_TRUTH_FILE", "PREDICTIONS_FILE",
           "FAILED_SUFFIX", "ATTEMPTS_SUFFIX", "ATTEMPTS_DIR", "VERIFY_FILE", "SCENES_FILE", "PLANNED_FILE"]

SETTINGS_FILE = "evaluate.json"
RESULT_FILE = "result.json"
TRACE_FILE = "trace.jsonl"
GROUND_TRUTH_FILE = "ground_truth.json"
PREDICTIONS_FILE = "predictions.json"
VERIFY_FILE = "verify.json"
SCENES_FILE = "scenes.json"
PLANNED_FILE = "planned.json"
FAILED_SUFFIX = ".failed.json"
ATTEMPTS_SUFFIX = ".attempts"
ATTEMPTS_DIR = "attempts"
_SEED_DIR = re.compile(r"seed_(\d+)$")


class EvalDirError(SpatialScoutError, ValueError):
    """An evaluation directory file that exists but is not readable JSON (corrupted or edited)."""


def read_json_object(path: Path) -> dict:
    """``path`` parsed as a JSON object; :class:`EvalDirError` (one line) when it is not one."""
    try:
        d = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise EvalDirError(f"{path}: cannot be read ({exc.__class__.__name__})") from None
    except ValueError as exc:
        raise EvalDirError(f"{path}: not valid JSON ({exc}); the file is corrupted or was edited") from None
    if not isinstance(d, dict):
        raise EvalDirError(f"{path}: expected a JSON object, found {type(d).__name__}")
    return d


def read_trace(path: Path) -> list[dict]:
    """The events of a ``trace.jsonl``; :class:`EvalDirError` naming the line when one is not a
    JSON object."""
    events: list[dict] = []
    n = 0
    try:
        with open(path, encoding="utf-8") as f:
            for n, line in enumerate(f, 1):
                if not line.strip():
                    continue
                e = json.loads(line)
                if not isinstance(e, dict):
                    raise ValueError(f"expected a JSON object, found {type(e).__name__}")
                events.append(e)
    except (ValueError, UnicodeDecodeError) as exc:
        raise EvalDirError(f"{path}: line {n} is not a valid trace event ({exc}); the trace is corrupted "
                           "or was edited") from None
    return events


def publish_text(path: str | os.PathLike, text: str) -> Path:
    """Write an output meant to be read by others (report, leaderboard) atomically, mode 0644."""
    p = write_text_atomic(path, text)
    os.chmod(p, 0o644)
    return p


def publish_json(path: str | os.PathLike, obj: Any) -> Path:
    """:func:`publish_text` of ``obj`` as JSON (non-finite floats refused)."""
    p = write_json_atomic(path, obj)
    os.chmod(p, 0o644)
    return p


@dataclasses.dataclass
class Attempt:
    """One attempt with a run directory: where it lives and its ``result.json``."""

    run_dir: Path
    result: dict

    @property
    def ok(self) -> bool:
        return self.result.get("status", "ok") != "failed"


@dataclasses.dataclass
class EpisodeDir:
    """One (scene, seed) of an evaluation.

    Attributes
    ----------
    key : str
        ``<scene dir>/seed_<k>`` (the run directory's name for a plain run directory).
    path : Path
        ``DIR/<scene dir>/seed_<k>``: where the latest attempt lives.
    attempts : list of Attempt
        ``path`` itself first (when it has a ``result.json``), then ``path/attempts/NN`` in order.
    notes : list of dict
        Failure records without a run directory: archived ``failed_NN.json`` (older layout), then
        the ``.failed.json`` note (the episode could not start).
    """

    key: str
    path: Path
    attempts: list[Attempt]
    notes: list[dict]
    note_is_current: bool

    @property
    def completed(self) -> Attempt | None:
        """The scored attempt: ``path`` when it completed, else the last completed attempt."""
        good = [a for a in self.attempts if a.ok]
        if not good:
            return None
        return good[0] if good[0].run_dir == self.path else good[-1]

    @property
    def failed_results(self) -> list[dict]:
        """Every failure record of the episode, redone or not (each counts as a failed attempt)."""
        out = [a.result for a in self.attempts if not a.ok] + self.notes[:-1 if self.note_is_current else None]
        if self.note_is_current and self.completed is None:
            out.append(self.notes[-1])
        return out

    @property
    def failure(self) -> dict | None:
        """``{"run", "scene", "seed", "error"}`` of a failed episode (its latest failure), else None."""
        if self.completed is not None:
            return None
        top = next((a.result for a in self.attempts if a.run_dir == self.path), None)
        rec = top if top is not None else (self.notes[-1] if self.notes else
                                           (self.attempts[-1].result if self.attempts else {}))
        return {"run": self.key, "scene": rec.get("scene_id", rec.get("scene")), "seed": rec.get("seed"),
                "error": rec.get("error")}


class EvalDir:
    """An evaluation directory (or one run directory) as written by ``spatialscout evaluate``.

    Parameters
    ----------
    root : path
        The directory.

    Examples
    --------
    >>> ev = EvalDir("runs/origin")                             # doctest: +SKIP
    >>> [e.key for e in ev.episodes() if e.completed]            # doctest: +SKIP
    ['procedural_7/seed_0', ...]
    """

    def __init__(self, root: str | os.PathLike) -> None:
        self.root = Path(root)
        self._episodes: list[EpisodeDir] | None = None

    @property
    def is_run_dir(self) -> bool:
        """True when ``root`` is itself one run directory (``root/result.json``)."""
        return (self.root / RESULT_FILE).is_file()

    def settings(self) -> dict | None:
        """``evaluate.json`` (None when absent)."""
        p = self.root / SETTINGS_FILE
        return read_json_object(p) if p.is_file() else None

    @staticmethod
    def key_of(run_dir: Path) -> str:
        """``<scene dir>/seed_<k>`` of a run directory (its own name when not in that layout)."""
        return f"{run_dir.parent.name}/{run_dir.name}" if _SEED_DIR.search(run_dir.name) else run_dir.name

    def _episode_paths(self) -> list[Path]:
        if self.is_run_dir:
            return [self.root]
        r = self.root
        found = {p.parent for p in r.glob(f"*/seed_*/{RESULT_FILE}")}
        found |= {p.parent.parent.parent for p in r.glob(f"*/seed_*/{ATTEMPTS_DIR}/*/{RESULT_FILE}")}
        found |= {p.with_name(p.name[: -len(FAILED_SUFFIX)]) for p in r.glob(f"*/seed_*{FAILED_SUFFIX}")}
        found |= {p.with_name(p.name[: -len(ATTEMPTS_SUFFIX)]) for p in r.glob(f"*/seed_*{ATTEMPTS_SUFFIX}")}
        return sorted(d for d in found if _SEED_DIR.search(d.name))

    def episodes(self) -> list[EpisodeDir]:
        """Every episode, sorted by key (cached)."""
        if self._episodes is None:
            self._episodes = [self._episode(p) for p in self._episode_paths()]
        return self._episodes

    @staticmethod
    def _episode(ep: Path) -> EpisodeDir:
        tries = [ep] + sorted((p.parent for p in (ep / ATTEMPTS_DIR).glob(f"*/{RESULT_FILE}")),
                              key=lambda p: (len(p.name), p.name))
        attempts = [Attempt(d, read_json_object(d / RESULT_FILE)) for d in tries if (d / RESULT_FILE).is_file()]
        notes = [read_json_object(p) for p in sorted(Path(str(ep) + ATTEMPTS_SUFFIX).glob("failed_*.json"))]
        note = Path(str(ep) + FAILED_SUFFIX)
        if note.is_file():
            notes.append(read_json_object(note))
        return EpisodeDir(EvalDir.key_of(ep), ep, attempts, notes, note.is_file())

    def planned(self) -> list[str]:
        """Keys of every episode the evaluation planned, sorted: ``planned.json``'s list, or (an
        evaluation written before it) every scene of ``scenes.json`` times every seed seen in the
        directory (seed 0 when none). A plain run directory plans itself; a directory without
        either file plans nothing beyond what it holds ([]). An unreadable file plans nothing."""
        if self.is_run_dir:
            return [self.key_of(self.root)]
        try:
            p = self.root / PLANNED_FILE
            if p.is_file():
                return sorted({str(k) for k in read_json_object(p).get("episodes") or []})
            p = self.root / SCENES_FILE
            if not p.is_file():
                return []
            scenes = read_json_object(p)
        except EvalDirError:
            return []
        seeds = {int(m.group(1)) for d in self._episode_paths() if (m := _SEED_DIR.search(d.name))} or {0}
        return sorted(f"{s}/seed_{k}" for s in scenes for k in seeds)

    def check_identities(self) -> None:
        """Raise :class:`EvalDirError` (one line) when two completed episodes name the same scene
        and seed in their ``result.json`` (one episode's files copied over another's): their scores
        must not be pooled. (``verify`` also checks each path against its records.)"""
        seen: dict[tuple[str, Any], str] = {}
        for key, a in self.completed():
            if a.result.get("scene_id") is None:
                continue
            ident = (str(a.result.get("scene_id")), a.result.get("seed"))
            if ident in seen:
                raise EvalDirError(f"{self.root}: {seen[ident]} and {key} both hold scene {ident[0]!r} seed "
                                   f"{ident[1]!r}; one episode's files were copied over the other's "
                                   "(`spatialscout verify` names which)")
            seen[ident] = key

    def completed(self) -> list[tuple[str, Attempt]]:
        """``(key, attempt)`` of every completed episode, sorted by key."""
        return [(e.key, e.completed) for e in self.episodes() if e.completed is not None]

    def failed(self) -> list[EpisodeDir]:
        """Episodes with a failure record and no completed attempt."""
        return [e for e in self.episodes() if e.completed is None and (e.attempts or e.notes
                                                                     or Path(str(e.path) + ATTEMPTS_SUFFIX).is_dir())]

    def failed_results(self) -> list[dict]:
        """Every failure record (``result.json`` or note) of every episode, redone or not."""
        return [r for e in self.episodes() for r in e.failed_results]

    def trace_dirs(self) -> list[Path]:
        """Run directories holding a trace: ``root`` itself, or the latest attempt of every episode."""
        if (self.root / TRACE_FILE).is_file():
            return [self.root]
        return sorted(p.parent for p in self.root.glob(f"*/seed_*/{TRACE_FILE}"))


def seed_spread(scores: Iterable[tuple[int, Any]], lam: float) -> dict:
    """Object-micro all-target mean IoU of each seed's scenes and their spread across seeds.

    ``scores`` are ``(seed, SceneScore)``; returns ``{"seeds", "per_seed": {k: mean IoU}, "mean",
    "std"}`` with ``std`` the standard deviation across seeds (``ddof=1``; 0 for one seed).
    """
    from spatialscout_gym.core.scoring import aggregate
    by_seed: dict[int, list] = defaultdict(list)
    for seed, s in scores:
        by_seed[int(seed)].append(s)
    per_seed = {str(k): aggregate(v, lam)["object_micro"]["all"]["mean_iou"] for k, v in sorted(by_seed.items())}
    vals = np.array(list(per_seed.values()))
    return {"seeds": sorted(by_seed), "per_seed": per_seed, "mean": float(vals.mean()),
            "std": float(vals.std(ddof=1)) if len(vals) > 1 else 0.0}

