"""Episodes whose worker shares no disk with the driver (``--backend ray``): the worker runs the
episode into a scratch directory of its own and sends the run's files back as bytes; the driver
archives earlier attempts before the episode starts, writes the files into ``DIR`` (atomically, as
the runner does) and checks that what it wrote is what the worker read. The files are the same
bytes as a local run's, but for ``result.json``'s ``node`` (where the episode ran: a claimed input
of the record the run writes, :func:`~spatialscout_gym.eval.running.evaluate.execute_task`).

Three steps, given to the Ray backend in its :class:`~spatialscout_gym.eval.running.backends.Work`:
:func:`prepare_task` (driver, before dispatch), :func:`ship_task` (worker), :func:`land_outcome`
(driver, as the outcome arrives).

The driver trusts nothing a worker names (docs/architecture.md "Scale"): the files land in the run
directory the driver planned for the episode, never one the worker's outcome names, and every
file name must be a plain relative path inside it (:func:`shipped_name_problem`), so a hostile or
broken worker writes and deletes nothing outside ``DIR``.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Callable

from spatialscout_gym.core.errors import SpatialScoutError
from spatialscout_gym.core.run_files import ATTEMPTS_DIR
from spatialscout_gym.eval.layout import archive_failed_attempt
from spatialscout_gym.eval.running.tasks import EpisodeTask, Outcome, Shipment, WorkerState

__all__ = ["prepare_task", "ship_task", "land_outcome", "shipped_name_problem", "ShippedFilesError"]


class ShippedFilesError(SpatialScoutError):
    """The files the driver wrote are not those the worker sent (a disk that lost them), or the
    worker sent names the driver refuses (outside the run directory, another episode's)."""


def shipped_name_problem(name: object) -> str | None:
    """Why ``name`` may not be a file of a shipped run directory, or None: it must be a relative
    POSIX path whose parts are plain names (no ``..``, ``.``, empty part, backslash or NUL) and
    not under ``attempts/`` (the driver keeps the earlier attempts itself)."""
    if not isinstance(name, str) or not name:
        return f"{name!r} is not a file name"
    if name.startswith("/"):
        return f"{name[:80]!r} is absolute"
    if "\\" in name or "\0" in name:
        return f"{name[:80]!r} holds a backslash or NUL"
    parts = name.split("/")
    if any(part in ("", ".", "..") for part in parts):
        return f"{name[:80]!r} is not a plain path inside the run directory"
    if parts[0] == ATTEMPTS_DIR:
        return f"{name[:80]!r} is under {ATTEMPTS_DIR}/, which the driver keeps"
    return None


def _refuse_names(shipped: Shipment, out: Path) -> None:
    """One :class:`ShippedFilesError` naming the first name the driver refuses."""
    if not (isinstance(shipped.run, dict) and isinstance(shipped.digests, dict)
            and all(isinstance(d, bytes) for d in shipped.run.values())
            and (shipped.note is None or isinstance(shipped.note, bytes))):
        raise ShippedFilesError(f"{out}: the worker sent files that are not bytes; nothing was written")
    names = set(shipped.run)
    if set(shipped.digests) != names:
        raise ShippedFilesError(f"{out}: the worker's file list and its digests differ; nothing was written")
    for name in sorted(names, key=str):
        why = shipped_name_problem(name)
        if why is None and any("/".join(name.split("/")[:k]) in names for k in range(1, name.count("/") + 1)):
            why = f"{name[:80]!r} lies under another shipped file"
        if why is not None:
            raise ShippedFilesError(f"{out}: the worker sent a file name the driver refuses ({why}); nothing "
                                    "was written")


def prepare_task(task: EpisodeTask) -> EpisodeTask:
    """Driver side: move the episode's failed attempt (and failure note) into ``attempts/`` and
    give the task the number of the attempt about to run."""
    return dataclasses.replace(task, attempt=archive_failed_attempt(Path(task.run_dir)))


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def ship_task(task: EpisodeTask, state: WorkerState,
              execute: Callable[[EpisodeTask, WorkerState], Outcome]) -> Outcome:
    """Worker side: run ``task`` with ``execute``
    (:func:`~spatialscout_gym.eval.running.evaluate.execute_task`) in a scratch copy of its
    directory layout, and return the outcome with the files it wrote."""
    run_dir = Path(task.run_dir)
    scratch = Path(tempfile.mkdtemp(prefix="spatialscout-episode-"))
    try:
        local = dataclasses.replace(task, run_dir=str(scratch / run_dir.parent.name / run_dir.name))
        outcome = execute(local, state)
        here = Path(local.run_dir)   # result.json names the node already (a claimed input of the record)
        files = {p.relative_to(here).as_posix(): p.read_bytes() for p in sorted(here.rglob("*"))
                 if p.is_file() and ATTEMPTS_DIR not in p.relative_to(here).parts} if here.is_dir() else {}
        note = local.failed_file.read_bytes() if local.failed_file.is_file() else None
        if state.node is not None and not outcome.ok:   # a failure names the node it happened on
            where = f" (on node {str(state.node.get('id'))[:12]} at {state.node.get('address')})"
            outcome = dataclasses.replace(outcome, error=f"{outcome.error}{where}")
            if note is not None:
                from spatialscout_gym.core.eval_records import load_failure_note
                from spatialscout_gym.core.records import RayNode
                failed = load_failure_note(local.failed_file)
                failed = dataclasses.replace(failed, error=f"{failed.error}{where}",
                                             node=RayNode(str(state.node.get("id")), str(state.node.get("address"))))
                note = (json.dumps(failed.to_json(), indent=2) + "\n").encode()
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    shipment = Shipment(files, note, {k: _digest(v) for k, v in files.items()})
    return dataclasses.replace(outcome, task=task, files=shipment)


def land_outcome(outcome: Outcome, planned: EpisodeTask | None = None) -> Outcome:
    """Driver side: write the shipped run directory into ``DIR`` (earlier attempts kept), or the
    failure note; remove a note an earlier attempt left once a run directory replaces it.

    ``planned`` is the task the driver sent (its run directory, inside ``DIR``, is where the files
    land); the outcome's own task, which came back from the worker, must name the same one. None:
    the outcome's task (a caller that made it itself).

    Raises
    ------
    ShippedFilesError
        A file read back differs from what the worker sent, or the worker named another run
        directory or a file outside it (nothing is written).
    """
    shipped = outcome.files
    task = outcome.task if planned is None else planned
    if planned is not None and (not isinstance(outcome.task, EpisodeTask) or outcome.task.run_dir != planned.run_dir):
        claimed = getattr(outcome.task, "run_dir", outcome.task)
        raise ShippedFilesError(f"{planned.run_dir}: the worker answered for another run directory "
                                f"({str(claimed)[:200]!r}); nothing was written")
    if shipped is None:
        return dataclasses.replace(outcome, task=task)
    if not isinstance(shipped, Shipment):
        raise ShippedFilesError(f"{task.run_dir}: the worker sent no file list the driver can read; nothing was written")
    out = Path(task.run_dir)
    _refuse_names(shipped, out)
    if shipped.run:
        out.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.", suffix=".tmp", dir=out.parent))
        try:
            for name, data in shipped.run.items():
                path = tmp / name
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_bytes(data)
                os.chmod(path, 0o644)
            bad = [n for n, d in shipped.digests.items() if _digest((tmp / n).read_bytes()) != d]
            if bad or set(shipped.digests) != set(shipped.run):
                raise ShippedFilesError(f"{out}: the files written differ from those the worker sent "
                                        f"({', '.join(bad[:3]) or 'the file list'}); check the disk and rerun")
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        # earlier attempts move into the new directory, as the runner does; a crash between the two
        # renames leaves them in the temp dir, from where evaluate's clean-up moves them back
        if out.exists():
            if (out / ATTEMPTS_DIR).is_dir():
                os.replace(out / ATTEMPTS_DIR, tmp / ATTEMPTS_DIR)
            shutil.rmtree(out)
        os.replace(tmp, out)
        task.failed_file.unlink(missing_ok=True)
    elif shipped.note is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        tmp_note = task.failed_file.with_name(task.failed_file.name + ".tmp")
        tmp_note.write_bytes(shipped.note)
        os.replace(tmp_note, task.failed_file)
    return dataclasses.replace(outcome, task=task, files=None)   # the bytes are on disk; the driver keeps no copy
