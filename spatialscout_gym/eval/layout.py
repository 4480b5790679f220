"""The one reader of an evaluation directory's layout (docs/protocol.md sections 5 and 9).

``spatialscout evaluate --out DIR`` writes::

    DIR/evaluate.json                  the settings every episode shares
    DIR/<scene dir>/seed_<k>/          the episode's latest attempt (a run directory: result.json,
                                       trace.jsonl, ground_truth.json, predictions.json, frames/)
    DIR/<scene dir>/seed_<k>/attempts/NN/   earlier attempts of that episode (a run directory, or
                                       failed.json: the note of an attempt that wrote none)
    DIR/<scene dir>/seed_<k>.failed.json    the episode could not start
    DIR/<scene dir>/seed_<k>.attempts/failed_NN.json   earlier failures (older layout)

:class:`EvalDir` knows that layout: the episodes, their attempts, which episode is **completed**
(an attempt whose ``result.json`` has a status other than ``"failed"``) or **failed** (no such
attempt but a failure record), and the seed spread. A plain run directory (``DIR/result.json``)
is read as an evaluation of one episode. ``report``, ``compare``, ``leaderboard``, ``replay`` and
``verify`` read through it; so may any other reader of run directories (it is public API).

A file that exists but cannot be read as a JSON object raises :class:`EvalDirError` naming it
(the readers are :mod:`spatialscout_gym.eval.reading`, re-exported here).
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from typing import Any, Iterable


from spatialscout_gym.core.eval_records import (EVALUATE_FILE, PLANNED_FILE, SCENES_FILE, EvaluationRecord, FailureNote,
                                                load_evaluation,
                                                load_planned, load_scene_args)
from spatialscout_gym.core.files import write_json_atomic, write_text_atomic
from spatialscout_gym.core.records import RecordError, RunRecord, parse_run_record
from spatialscout_gym.core.run_files import (ATTEMPTS_DIR, RESULT_FILE, SEED_DIR_PREFIX, TRACE_FILE,
                                             seed_dir_name, seed_of_dir)
from spatialscout_gym.core.types import natural_number
# the readers of the files this layout names live in eval/reading.py; re-exported, the public API they were
from spatialscout_gym.eval.reading import (EvalDirError, accepted_positions, check_episode_identities,
                                           check_run_scene, load_trace, read_failure_note, read_json_object, read_record, read_trace,
                                           typed_trace)

__all__ = ["EvalDir", "check_episode_identities", "EvalDirError", "EpisodeDir", "Attempt", "publish_json", "publish_text",
           "read_json_object", "read_trace", "load_trace", "typed_trace", "read_record", "read_failure_note", "read_run_record", "attempt_dirs", "archive_failed_attempt",
           "read_scene_args", "record_scene_args", "evaluation_file", "PRICE_TABLE_FILE", "is_run_dir", "find_run_dirs", "seed_dir_name", "seed_of_dir",
           "split_episode_key",
           "SETTINGS_FILE", "SCENES_FILE", "SEED_DIR_PREFIX", "FAILED_SUFFIX", "FAILED_NOTE_FILE", "ATTEMPTS_SUFFIX", "VERIFY_FILE", "PLANNED_FILE",
           "record_planned", "read_planned", "accepted_positions", "check_run_scene", "scene_source",
           "scene_sources", "spec_file_note"]

# An evaluation directory's own files (a run directory's are in core/run_files.py).
SETTINGS_FILE = EVALUATE_FILE
VERIFY_FILE = "verify.json"
PRICE_TABLE_FILE = "price_table.json"
"""The evaluation's copy of its price table (``evaluate.json`` names it by this relative name)."""
FAILED_SUFFIX = ".failed.json"
FAILED_NOTE_FILE = "failed.json"
"""An archived failure note, ``seed_<k>/attempts/NN/failed.json``: an attempt that wrote no run
directory (it could not start, or its worker died)."""
ATTEMPTS_SUFFIX = ".attempts"
def split_episode_key(key: str) -> tuple[str, int | None]:
    """``(scene, k)`` of an episode key ``<scene>/seed_<k>``; ``(key, None)`` for a key without a
    seed (a plain run directory's name, a report row of a scene run once)."""
    scene, sep, last = key.rpartition("/")
    seed = seed_of_dir(last) if sep else None
    return (scene, seed) if seed is not None else (key, None)




























def is_run_dir(path: str | os.PathLike) -> bool:
    """A run directory holds ``trace.jsonl`` and ``result.json`` (present, in any form: a file that
    cannot be read is reported by whoever reads it, never skipped here).

    The one rule of every command: the readers list such directories, ``run``/``play --overwrite``
    replace only such a directory. Both files, not either: the writer
    (:func:`~spatialscout_gym.envs.run_dir.write_run`) always writes both at once, so a folder with
    one of them is not a run this package wrote (another tool's ``result.json``) and is neither
    read as a run nor deleted."""
    path = Path(path)
    return (path / TRACE_FILE).exists() and (path / RESULT_FILE).exists()


def find_run_dirs(root: str | os.PathLike) -> list[Path]:
    """Every run directory at or under ``root``, at any depth and sorted: an evaluation's episodes,
    a folder of ``run``, ``play`` or Inspect runs, or ``root`` itself. Earlier attempts
    (``attempts/``) are left out; :class:`EvalDir` reads them as attempts of their episode."""
    root = Path(root)
    if is_run_dir(root):
        return [root]
    return sorted(p.parent for p in root.rglob(RESULT_FILE)
                  if is_run_dir(p.parent) and ATTEMPTS_DIR not in p.relative_to(root).parts)


def read_run_record(run_dir: str | os.PathLike) -> RunRecord | None:
    """``run_dir/result.json`` as its :class:`~spatialscout_gym.core.records.RunRecord` through
    :func:`read_record` (None when absent; a directory or a link there is an error, not "absent")."""
    path = Path(run_dir) / RESULT_FILE
    return read_record(path) if path.exists() or path.is_symlink() else None


def attempt_dirs(run_dir: str | os.PathLike) -> list[Path]:
    """The earlier attempts ``run_dir/attempts/NN/`` of an episode, in attempt order. A move that a
    killed run left half done (``attempts/.NN.partial``) is not an attempt until
    :func:`archive_failed_attempt` finishes it."""
    root = Path(run_dir) / ATTEMPTS_DIR
    if not root.is_dir():
        return []
    return sorted((p for p in root.iterdir() if p.is_dir() and natural_number(p.name) is not None),
                  key=lambda p: int(p.name))


def archive_failed_attempt(run_dir: Path, redo: bool = False) -> int:
    """Before a failed episode is redone, move its failed attempt (trace, map snapshots, frames,
    records, result) from ``run_dir`` into ``run_dir/attempts/NN/``, and its failure note
    (``seed_<k>.failed.json``: an attempt that wrote no run directory, a worker that died) into
    ``run_dir/attempts/NN/failed.json``; return the number of the attempt about to run (1 when
    ``run_dir`` holds none). With ``redo`` a finished attempt moves too (a resume found it
    incomplete or made under other settings).

    The files move into ``attempts/.NN.partial`` (``result.json`` last) and that folder is renamed
    to ``NN``, so a killed move is finished by the next call and never loses a file.
    """
    root = run_dir / ATTEMPTS_DIR

    def move_into(dest: Path) -> None:
        dest.mkdir(parents=True, exist_ok=True)
        for entry in sorted(run_dir.iterdir(), key=lambda e: e.name == RESULT_FILE):
            if entry.name != ATTEMPTS_DIR:
                os.replace(entry, dest / entry.name)
        os.replace(dest, root / dest.name[1:-len(".partial")])

    for partial in sorted(root.glob(".*.partial")) if root.is_dir() else []:
        move_into(partial)   # finish a move a killed run left half done
    result = read_run_record(run_dir)
    if result is not None and (redo or result.status == "failed"):
        move_into(root / f".{len(attempt_dirs(run_dir)) + 1:02d}.partial")
    note = Path(str(run_dir) + FAILED_SUFFIX)
    if note.is_file():
        dest = root / f"{len(attempt_dirs(run_dir)) + 1:02d}"
        part = root / f".{dest.name}.note"   # a killed move leaves this, never a half attempt
        part.mkdir(parents=True, exist_ok=True)
        os.replace(note, part / FAILED_NOTE_FILE)
        os.replace(part, dest)
    for part in sorted(root.glob(".*.note")) if root.is_dir() else []:   # a note a killed move left
        if (part / FAILED_NOTE_FILE).is_file() and not note.exists():
            os.replace(part / FAILED_NOTE_FILE, note)
            part.rmdir()
            return archive_failed_attempt(run_dir)
    return len(attempt_dirs(run_dir)) + 1


def evaluation_file(root: str | os.PathLike, recorded: str) -> Path:
    """A file ``evaluate.json`` names (the price table): a relative name is inside the evaluation
    directory ``root``, wherever the command runs; an absolute one is as written (evaluations made
    before the table was copied in)."""
    p = Path(recorded)
    return p if p.is_absolute() else Path(root) / p


def read_scene_args(root: str | os.PathLike) -> dict[str, str]:
    """``DIR/scenes.json``: ``{scene dir: scene argument}`` of every episode ``evaluate`` planned
    ({} when absent); readers rebuild scene specs from it."""
    try:
        return load_scene_args(root)
    except RecordError as exc:
        raise EvalDirError(f"{exc}; the file was edited") from None


def scene_source(scene_arg: str | None, result: RunRecord) -> str:
    """Where an episode's scene came from, by the scene argument ``evaluate`` recorded for its
    scene directory (else the recorded id): ``"procedural"``, ``"spec file"`` (a scene-spec JSON
    file or a directory holding one), ``"catalog"`` (a catalog id of the recorded catalog
    version; ``verify`` refuses one whose contents are not that catalog scene) or ``"imported"``."""
    arg = scene_arg or result.scene_id
    if arg.startswith("procedural:") or (scene_arg is None and arg.startswith("procedural_")):
        return "procedural"
    if arg.endswith(".json") or Path(arg).is_dir():
        return "spec file"
    from spatialscout_gym.scenes.catalog import CATALOG_VERSIONS, catalog_scene_ids
    version = result.catalog_version
    base = arg.rpartition("@")[0] or arg
    return "catalog" if version in CATALOG_VERSIONS and base in catalog_scene_ids(version) else "imported"


def scene_sources(ev: "EvalDir") -> dict[str, dict]:
    """``{scene id: {"source", "content_hash"}}`` of an evaluation's completed episodes
    (:func:`scene_source`): pages show a spec-file scene as one, with its hash, never as a catalog
    scene."""
    try:
        args = read_scene_args(ev.root)
    except EvalDirError:
        args = {}
    out: dict[str, dict] = {}
    for _, a in ev.completed():
        arg = None if ev.is_run_dir else args.get(a.run_dir.parent.name)
        out[a.record.scene_id] = {"source": scene_source(arg, a.record), "content_hash": a.record.scene_content_hash}
    return dict(sorted(out.items()))


def spec_file_note(sources: dict[str, dict]) -> str | None:
    """One sentence naming the scenes that came from spec files, each with its content hash (None
    when there are none): they are not catalog scenes, whatever their ids."""
    spec = [f"{k} (content hash {str(v.get('content_hash'))[:16]})" for k, v in sources.items()
            if v.get("source") == "spec file"]
    if not spec:
        return None
    return (f"{len(spec)} scene(s) from spec files, not catalog scenes: " + ", ".join(spec[:10])
            + (", ..." if len(spec) > 10 else ""))


def record_scene_args(root: str | os.PathLike, scene_args: dict[str, str]) -> None:
    """Merge ``{scene dir: scene argument}`` into ``DIR/scenes.json``."""
    known = read_scene_args(root)
    known.update(scene_args)
    write_json_atomic(Path(root) / SCENES_FILE, dict(sorted(known.items())))


def read_planned(root: str | os.PathLike) -> list[str] | None:
    """``DIR/planned.json``'s episode keys, sorted (None when absent). A file that is not
    ``{"episodes": ["<scene dir>/seed_<k>", ...]}`` (truncated, nested too deeply, a string, a
    list of other things) raises :class:`EvalDirError`: a corrupted plan is never an empty one."""
    try:
        plan = load_planned(root)
    except RecordError as exc:
        raise EvalDirError(f"{exc}; the file is corrupted or was edited") from None
    return None if plan is None else list(plan.episodes)


def record_planned(root: str | os.PathLike, keys: Iterable[str]) -> None:
    """Merge episode keys (``<scene dir>/seed_<k>``) into ``DIR/planned.json``: every episode an
    evaluation set out to run, so a missing one is reported rather than silently left out."""
    path = Path(root) / PLANNED_FILE
    planned = set(read_planned(root) or [])
    write_json_atomic(path, {"episodes": sorted(planned | set(keys))})


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
    """One attempt with a run directory: where it lives and its ``result.json`` as its record."""

    run_dir: Path
    record: RunRecord

    @property
    def ok(self) -> bool:
        return self.record.status != "failed"


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
    notes : list of RunRecord or FailureNote
        Failure records without a run directory: archived ``failed_NN.json`` (older layout: a failed
        attempt's ``result.json``, or a note), then
        the notes archived as ``attempts/NN/failed.json``, then the ``.failed.json`` note (the
        episode could not start, or its worker died).
    """

    key: str
    path: Path
    attempts: list[Attempt]
    notes: list[RunRecord | FailureNote]
    note_is_current: bool

    @property
    def completed(self) -> Attempt | None:
        """The scored attempt: ``path`` when it completed, else the last completed attempt."""
        good = [a for a in self.attempts if a.ok]
        if not good:
            return None
        return good[0] if good[0].run_dir == self.path else good[-1]

    @property
    def failed_results(self) -> list[RunRecord | FailureNote]:
        """Every failure record of the episode, redone or not (each counts as a failed attempt)."""
        out: list[RunRecord | FailureNote] = [a.record for a in self.attempts if not a.ok]
        out += self.notes[:-1 if self.note_is_current else None]
        if self.note_is_current and self.completed is None:
            out.append(self.notes[-1])
        return out

    @property
    def failure(self) -> dict | None:
        """``{"run", "scene", "seed", "error", "error_type"}`` of a failed episode (its latest
        failure), else None."""
        if self.completed is not None:
            return None
        top = next((a.record for a in self.attempts if a.run_dir == self.path), None)
        rec = top if top is not None else (self.notes[-1] if self.notes else
                                           (self.attempts[-1].record if self.attempts else None))
        if rec is None:
            return {"run": self.key, "scene": None, "seed": None, "error": None, "error_type": None}
        scene = rec.scene_id if isinstance(rec, RunRecord) else rec.scene
        return {"run": self.key, "scene": scene, "seed": rec.seed, "error": rec.error, "error_type": rec.error_type}


def _archived_failure(path: Path) -> RunRecord | FailureNote:
    """An older layout's ``seed_<k>.attempts/failed_NN.json``: a failed attempt's ``result.json``
    (it records a ``status``) or a failure note, each read strictly as its record."""
    d = read_json_object(path)
    if "status" not in d:
        return read_failure_note(path)
    try:
        return parse_run_record(d, str(path))
    except RecordError as exc:
        raise EvalDirError(f"{exc}; the file is corrupted or was edited (rerun the episode)") from None


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
        """True when ``root`` is itself one run directory (:func:`is_run_dir`)."""
        return is_run_dir(self.root)

    def settings(self) -> EvaluationRecord | None:
        """``evaluate.json`` as its record (None when absent; a file that cannot be read as it is a
        :class:`~spatialscout_gym.core.records.RecordError`)."""
        return load_evaluation(self.root)

    @staticmethod
    def key_of(run_dir: Path) -> str:
        """``<scene dir>/seed_<k>`` of a run directory (its own name when not in that layout)."""
        return f"{run_dir.parent.name}/{run_dir.name}" if seed_of_dir(run_dir.name) is not None else run_dir.name

    def _episode_paths(self) -> list[Path]:
        if self.is_run_dir:
            return [self.root]
        r = self.root
        seed = f"*/{SEED_DIR_PREFIX}*"
        found = {p.parent for p in r.glob(f"{seed}/{RESULT_FILE}")}
        found |= {p.parent.parent.parent for p in r.glob(f"{seed}/{ATTEMPTS_DIR}/[0-9]*/{RESULT_FILE}")}
        found |= {p.parent.parent.parent for p in r.glob(f"{seed}/{ATTEMPTS_DIR}/[0-9]*/{FAILED_NOTE_FILE}")}
        found |= {p.with_name(p.name[: -len(FAILED_SUFFIX)]) for p in r.glob(f"{seed}{FAILED_SUFFIX}")}
        found |= {p.with_name(p.name[: -len(ATTEMPTS_SUFFIX)]) for p in r.glob(f"{seed}{ATTEMPTS_SUFFIX}")}
        return sorted(d for d in found if seed_of_dir(d.name) is not None)

    def episodes(self) -> list[EpisodeDir]:
        """Every episode, sorted by key (cached)."""
        if self._episodes is None:
            self._episodes = [self._episode(p) for p in self._episode_paths()]
        return self._episodes

    @staticmethod
    def _episode(ep: Path) -> EpisodeDir:
        tries = [ep] + attempt_dirs(ep)
        attempts = [Attempt(d, read_record(d / RESULT_FILE)) for d in tries if (d / RESULT_FILE).is_file()]
        notes: list[RunRecord | FailureNote] = [_archived_failure(p) for p in
                                                sorted(Path(str(ep) + ATTEMPTS_SUFFIX).glob("failed_*.json"))]
        notes += [read_failure_note(d / FAILED_NOTE_FILE) for d in tries[1:]
                  if not (d / RESULT_FILE).is_file() and (d / FAILED_NOTE_FILE).is_file()]
        note = Path(str(ep) + FAILED_SUFFIX)
        if note.is_file():
            notes.append(read_failure_note(note))
        return EpisodeDir(EvalDir.key_of(ep), ep, attempts, notes, note.is_file())

    def planned(self) -> list[str]:
        """Keys of every episode the evaluation planned, sorted: ``planned.json``'s list, or (an
        evaluation written before it) every scene of ``scenes.json`` times every seed seen in the
        directory (seed 0 when none). A plain run directory plans itself; a directory without
        either file plans nothing beyond what it holds ([]). A file that cannot be read as a plan
        raises :class:`EvalDirError` (never an empty plan)."""
        if self.is_run_dir:
            return [self.key_of(self.root)]
        keys = read_planned(self.root)
        if keys is not None:
            return keys
        scenes = read_scene_args(self.root)
        if not scenes:
            return []
        seeds = {k for d in self._episode_paths() if (k := seed_of_dir(d.name)) is not None} or {0}
        return sorted(f"{s}/{seed_dir_name(k)}" for s in scenes for k in seeds)

    def check_identities(self) -> None:
        """Raise :class:`EvalDirError` (one line) when two completed episodes name the same scene
        and seed in their ``result.json`` (one episode's files copied over another's): their scores
        must not be pooled. (``verify`` also checks each path against its records.)"""
        check_episode_identities(self.root, ((key, a.record) for key, a in self.completed()))

    def completed(self) -> list[tuple[str, Attempt]]:
        """``(key, attempt)`` of every completed episode, sorted by key."""
        return [(e.key, e.completed) for e in self.episodes() if e.completed is not None]

    def failed(self) -> list[EpisodeDir]:
        """Episodes with a failure record and no completed attempt."""
        return [e for e in self.episodes() if e.completed is None and (e.attempts or e.notes
                                                                     or Path(str(e.path) + ATTEMPTS_SUFFIX).is_dir())]

    def failed_results(self) -> list[RunRecord | FailureNote]:
        """Every failure record (``result.json`` or note) of every episode, redone or not."""
        return [r for e in self.episodes() for r in e.failed_results]

    def run_dirs(self) -> list[Path]:
        """Run directories holding a result: ``root`` itself, or the latest attempt of every episode."""
        if self.is_run_dir:
            return [self.root]
        return [e.path for e in self.episodes() if e.attempts and e.attempts[0].run_dir == e.path]

    def trace_dirs(self) -> list[Path]:
        """Run directories holding a trace: ``root`` itself, or the latest attempt of every episode."""
        if (self.root / TRACE_FILE).is_file():
            return [self.root]
        return sorted(p.parent for p in self.root.glob(f"*/{SEED_DIR_PREFIX}*/{TRACE_FILE}")
                      if seed_of_dir(p.parent.name) is not None)

