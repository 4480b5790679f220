"""Reading an evaluation directory's files as their checks demand (docs/protocol.md sections 5, 7 and 9).

The file layout itself (which folder is an episode, an attempt, a failure) is
:mod:`spatialscout_gym.eval.layout`; this module reads what those files hold, each error one
:class:`EvalDirError` line naming the file:

* :func:`read_json_object`: a JSON object, from a regular file of bounded size (a FIFO never blocks);
* :func:`read_record`: a ``result.json`` strictly as its run record; :func:`read_failure_note`: a
  failure note strictly as its record;
* :func:`read_trace`: a ``trace.jsonl``'s events; :func:`load_trace`: the same, typed;
* :func:`accepted_positions`: the map an episode accepted, from its trace, with ``predictions.json``
  held to it;
* :func:`check_run_scene` and :func:`check_episode_identities`: the files of one run name one scene,
  and no two episodes hold one scene and seed.
"""

from __future__ import annotations

import io
import json
import os
from pathlib import Path
from typing import Any, Iterable

from spatialscout_gym.core.errors import SpatialScoutError
from spatialscout_gym.core.files import (MAX_TRACE_BYTES, FileTooLargeError, NotRegularFileError, loads_finite,
                                         open_regular, read_text_bounded)
from spatialscout_gym.core.eval_records import FailureNote, load_failure_note
from spatialscout_gym.core.records import RecordError, RunRecord, load_run_record
from spatialscout_gym.core.run_files import PREDICTIONS_FILE, RESULT_FILE, TRACE_FILE
from spatialscout_gym.core.trace_events import Trace, parse_trace

__all__ = ["EvalDirError", "read_json_object", "read_record", "read_failure_note", "read_trace", "load_trace",
           "typed_trace", "accepted_positions", "check_run_scene", "check_episode_identities"]


def check_episode_identities(root: str | os.PathLike, results: Iterable[tuple[str, RunRecord]]) -> None:
    """Raise :class:`EvalDirError` (one line) when two of ``results`` (``(episode key, run record)``
    pairs) name the same scene and seed: one episode's files were copied over the other's, and
    their scores must not be pooled."""
    seen: dict[tuple[str, Any], str] = {}
    for key, result in results:
        ident = (result.scene_id, result.seed)
        if ident in seen:
            raise EvalDirError(f"{root}: {seen[ident]} and {key} both hold scene {ident[0]!r} seed "
                               f"{ident[1]!r}; one episode's files were copied over the other's "
                               "(`spatialscout verify` names which)")
        seen[ident] = key


class EvalDirError(SpatialScoutError, ValueError):
    """An evaluation directory file that exists but is not readable JSON (corrupted or edited)."""


def _json_error(path: Path, exc: BaseException) -> EvalDirError:
    """The one-line error of a file that cannot be read or parsed as JSON."""
    if isinstance(exc, IsADirectoryError):
        return EvalDirError(f"{path}: is a directory, expected a file; remove it or rerun the episode")
    if isinstance(exc, (NotRegularFileError, FileTooLargeError)):
        return EvalDirError(f"{path}: {exc.strerror}; it is not read (replace it with the file written)")
    if isinstance(exc, (OSError, UnicodeDecodeError)):
        return EvalDirError(f"{path}: cannot be read ({exc.__class__.__name__}: {exc})")
    if isinstance(exc, RecursionError):
        return EvalDirError(f"{path}: not valid JSON (arrays or objects nested too deeply); the file is "
                            "corrupted or was edited")
    return EvalDirError(f"{path}: not valid JSON ({exc}); the file is corrupted or was edited")


def read_json_object(path: Path) -> dict:
    """``path`` parsed as a JSON object; :class:`EvalDirError` (one line naming the file) when it
    cannot be read (a directory, undecodable bytes), is not JSON (including nesting too deep for
    the parser) or is not an object. Every reader of an evaluation directory's JSON goes through it
    (or :func:`read_result`, :func:`read_trace`), which open regular files only, of a bounded size
    (:func:`~spatialscout_gym.core.files.open_regular`: a FIFO in a file's place never blocks)."""
    try:
        d = loads_finite(read_text_bounded(path))
    except (OSError, UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise _json_error(path, exc) from None
    if not isinstance(d, dict):
        raise EvalDirError(f"{path}: expected a JSON object, found {type(d).__name__}")
    return d


def _short(value: Any) -> str:
    text = json.dumps(value)
    return text if len(text) <= 40 else text[:37] + "..."


def read_record(path: Path) -> RunRecord:
    """A ``result.json`` as a :class:`~spatialscout_gym.core.records.RunRecord`, strictly
    (:func:`~spatialscout_gym.core.records.load_run_record`); :class:`EvalDirError` (one line
    naming the file and the field) when it is not one."""
    if Path(path).is_dir() and not Path(path).is_symlink():
        raise EvalDirError(f"{path}: is a directory, expected a file; remove it or rerun the episode")
    try:
        return load_run_record(path)
    except RecordError as exc:
        raise EvalDirError(f"{exc}; the file is corrupted or was edited (rerun the episode)") from None


def read_failure_note(path: Path) -> FailureNote:
    """A failure note (``seed_<k>.failed.json``, ``attempts/NN/failed.json``) as its
    :class:`~spatialscout_gym.core.eval_records.FailureNote`, strictly; :class:`EvalDirError` (one
    line naming the file and the field) when it is not one."""
    try:
        return load_failure_note(path)
    except RecordError as exc:
        raise EvalDirError(f"{exc}; the file is corrupted or was edited (rerun the episode)") from None


def read_trace(path: Path) -> list[dict]:
    """The events of a ``trace.jsonl``; :class:`EvalDirError` naming the file (and the line) when
    it cannot be read or a line is not a JSON object."""
    events: list[dict] = []
    n = 0
    try:
        with io.TextIOWrapper(open_regular(path, MAX_TRACE_BYTES), encoding="utf-8") as f:
            for n, line in enumerate(f, 1):
                if not line.strip():
                    continue
                e = json.loads(line)
                if not isinstance(e, dict):
                    raise ValueError(f"expected a JSON object, found {type(e).__name__}")
                if not isinstance(e.get("event"), str):
                    raise ValueError(f"field 'event' must be a string, found {_short(e.get('event'))}")
                events.append(e)
    except (OSError, RecursionError) as exc:
        raise _json_error(path, exc) from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise EvalDirError(f"{path}: line {n} is not a valid trace event ({exc}); the trace is corrupted "
                           "or was edited") from None
    return events


def load_trace(path: Path) -> Trace:
    """A ``trace.jsonl`` read strictly as its typed events (:func:`read_trace`, then
    :func:`~spatialscout_gym.core.trace_events.parse_trace`); :class:`EvalDirError` naming the file,
    the event and the field when it cannot be."""
    return typed_trace(read_trace(path), path)


def typed_trace(events: list[dict], path: Path) -> Trace:
    """The events :func:`read_trace` read from ``path``, typed as :func:`load_trace` types them (for
    a reader that also needs them as written)."""
    try:
        return parse_trace(events)
    except RecordError as exc:
        raise EvalDirError(f"{path}: {str(exc).removeprefix('trace.jsonl, ')}; the trace is corrupted or was "
                           "edited") from None


def accepted_positions(run_dir: str | os.PathLike, gt: Any) -> dict[str, list[float]]:
    """The accepted map to score for a run directory: the one its trace records
    (:meth:`~spatialscout_gym.core.trace_events.Trace.accepted_map`), after checking that
    ``predictions.json`` holds exactly that map (:class:`EvalDirError` naming the first difference
    when not: an edited file is refused, never scored). A directory without a trace (``spatialscout score`` input) scores ``predictions.json``."""
    from spatialscout_gym.core.files import load_predictions
    run_dir = Path(run_dir)
    pred = {k: [float(x) for x in v] for k, v in load_predictions(run_dir, gt).items()}
    if not (run_dir / TRACE_FILE).exists():
        return pred
    try:
        accepted = load_trace(run_dir / TRACE_FILE).accepted_map()
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise EvalDirError(f"{run_dir / TRACE_FILE}: a submit_positions event is malformed ({type(exc).__name__}); "
                           "the trace was edited") from None
    if pred != accepted:
        k = next(k for k in sorted(set(pred) | set(accepted)) if pred.get(k) != accepted.get(k))
        raise EvalDirError(f"{run_dir / PREDICTIONS_FILE}: {k} is {_short(pred.get(k, '(absent)'))}, but the map the "
                           f"episode accepted (trace.jsonl) has {_short(accepted.get(k, '(absent)'))}; the file was "
                           "edited, so the run is not scored (`spatialscout verify` names every difference)")
    return accepted


def check_run_scene(run_dir: str | os.PathLike, result: RunRecord) -> None:
    """The scene ``result.json`` names must be the one the trace's start event and
    ``ground_truth.json`` name; :class:`EvalDirError` (one line) when not: a result edited to name
    another scene, or files gathered from several episodes, are never shown or scored. Every
    reader of a run's scores (``report``, ``compare``, ``leaderboard``, ``view``) calls it."""
    from spatialscout_gym.core.run_files import GROUND_TRUTH_FILE
    run_dir = Path(run_dir)
    sid = result.scene_id
    named: list[tuple[str, Any]] = []
    if (run_dir / TRACE_FILE).exists():
        start = load_trace(run_dir / TRACE_FILE).start
        named.append((f"{TRACE_FILE}'s start event", None if start is None else start.scene_id))
    if (run_dir / GROUND_TRUTH_FILE).exists():
        named.append((GROUND_TRUTH_FILE, read_json_object(run_dir / GROUND_TRUTH_FILE).get("scene_id")))
    for where, other in named:
        if other != sid:
            raise EvalDirError(f"{run_dir / RESULT_FILE}: names scene {_short(sid)}, but {where} names "
                               f"{_short(other)}; the files are not of one episode (edited or copied), so the run "
                               "is not shown or scored (`spatialscout verify` names every difference)")
