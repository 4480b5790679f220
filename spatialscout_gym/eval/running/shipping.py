"""Episodes whose worker shares no disk with the driver (``--backend ray``): the worker runs the
episode into a scratch directory of its own and sends the run's files back as bytes; the driver
archives earlier attempts before the episode starts, writes the files into ``DIR`` (atomically, as
the runner does) and checks that what it wrote is what the worker read. The files are the same
bytes as a local run's, but for ``result.json``'s ``node`` (where the episode ran).

Three steps, given to the Ray backend in its :class:`~spatialscout_gym.eval.running.backends.Work`:
:func:`prepare_task` (driver, before dispatch), :func:`ship_task` (worker), :func:`land_outcome`
(driver, as the outcome arrives).
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import shutil
import tempfile
from pathlib import Path
from typing import Callable

from spatialscout_gym.core.errors import SpatialScoutError
from spatialscout_gym.core.files import write_json_atomic
from spatialscout_gym.core.run_files import ATTEMPTS_DIR, RESULT_FILE
from spatialscout_gym.eval.layout import archive_failed_attempt, read_run_result
from spatialscout_gym.eval.running.tasks import EpisodeTask, Outcome, Shipment, WorkerState

__all__ = ["prepare_task", "ship_task", "land_outcome", "ShippedFilesError"]


class ShippedFilesError(SpatialScoutError):
    """The files the driver wrote are not those the worker sent (a disk that lost them)."""


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
        here = Path(local.run_dir)
        if state.node is not None and (here / RESULT_FILE).is_file():
            result = read_run_result(here) or {}
            result["node"] = state.node
            write_json_atomic(here / RESULT_FILE, result)
            if outcome.result is not None:
                outcome.result["node"] = state.node
        files = {p.relative_to(here).as_posix(): p.read_bytes() for p in sorted(here.rglob("*"))
                 if p.is_file() and ATTEMPTS_DIR not in p.relative_to(here).parts} if here.is_dir() else {}
        note = local.failed_file.read_bytes() if local.failed_file.is_file() else None
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    shipment = Shipment(files, note, {k: _digest(v) for k, v in files.items()})
    return dataclasses.replace(outcome, task=task, files=shipment)


def land_outcome(outcome: Outcome) -> Outcome:
    """Driver side: write the shipped run directory into ``DIR`` (earlier attempts kept), or the
    failure note; remove a note an earlier attempt left once a run directory replaces it.

    Raises
    ------
    ShippedFilesError
        A file read back differs from what the worker sent.
    """
    shipped = outcome.files
    if shipped is None:
        return outcome
    task = outcome.task
    out = Path(task.run_dir)
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
    return dataclasses.replace(outcome, files=None)   # the bytes are on disk; the driver keeps no copy
