"""Progress of evaluations still being written (``spatialscout leaderboard --watch``): per
directory, the planned episodes, those finished and failed, the spend so far, the rate-limit waits,
and an estimate of the time left, from the files alone.

Nothing half-written is read: a run directory appears by one rename (``write_run``), so a
``result.json`` found is whole; ``planned.json`` and ``evaluate.json`` are replaced atomically; the
spend ledger is read under its shared lock (:func:`~spatialscout_gym.conversation.spend.read_spend`).
Each ``result.json`` is read as its record type (:mod:`spatialscout_gym.core.eval_records`). A
ledger or result that cannot be read (a FIFO, a directory, a device, text where a number belongs)
is shown as unreadable with one line saying why, never a traceback, and the watch goes on.
A directory is *running* while an ``evaluate`` holds its lock file.
"""

from __future__ import annotations

import fcntl
import os
import time
from pathlib import Path
from typing import Sequence

from spatialscout_gym.conversation.spend import SPEND_FILE, SpendLedgerError, read_spend
from spatialscout_gym.core.errors import SpatialScoutError
from spatialscout_gym.core.run_files import RESULT_FILE
from spatialscout_gym.core.eval_records import load_result
from spatialscout_gym.eval.layout import SETTINGS_FILE, read_planned
from spatialscout_gym.eval.running.evaluate import _LOCK_FILE as LOCK_FILE

__all__ = ["progress_row", "progress_table", "is_running"]


def is_running(eval_dir: str | os.PathLike) -> bool:
    """True while an ``evaluate`` holds ``DIR/.evaluate.lock`` (a killed run's stale file is not)."""
    try:
        fd = os.open(Path(eval_dir) / LOCK_FILE, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    return False


def progress_row(eval_dir: str | os.PathLike, now: float | None = None) -> dict:
    """``{"dir", "planned", "done", "failed", "spend_usd", "waits", "eta_s", "running"}`` of one
    evaluation directory; ``eta_s`` None until an episode has finished (or when nothing is left)."""
    root = Path(eval_dir)
    now = time.time() if now is None else now
    planned = read_planned(root) or []
    done = failed = waits = 0
    spend = 0.0
    finished_at: list[float] = []
    unreadable = 0   # result.json files or recorded costs that cannot be read: counted, never fatal
    for key in planned:
        try:
            record = load_result(root / key)
        except (SpatialScoutError, OSError):   # not a run record (strict): counted, never fatal
            unreadable += 1
            continue
        if record is None:
            continue
        if record.model is not None:
            cost = record.model.cost_usd
            unreadable += cost is not None and cost < 0
            spend += max(cost or 0.0, 0.0)
            waits += record.model.rate_limit_waits
        if record.status == "failed":
            failed += 1
        else:
            done += 1
            finished_at.append((root / key / RESULT_FILE).stat().st_mtime)
    try:
        ledger = read_spend(root / SPEND_FILE)   # counts calls of running episodes and earlier attempts too
        ledger_problem = None
    except SpendLedgerError as exc:   # shown in the row; the watch goes on
        ledger, ledger_problem = None, str(exc).split("; the run's spend", 1)[0]
    settings = root / SETTINGS_FILE
    left = len(planned) - done
    eta = None
    if finished_at and left > 0 and settings.is_file():
        elapsed = max(finished_at) - settings.stat().st_mtime
        eta = max(0.0, elapsed / len(finished_at) * left - (now - max(finished_at)))
    return {"dir": str(root), "planned": len(planned), "done": done, "failed": failed,
            "spend_usd": None if ledger_problem else ledger if ledger is not None else spend,
            "waits": waits, "eta_s": eta, "running": is_running(root),
            "ledger_problem": ledger_problem, "unreadable": unreadable}


def _duration(s: float | None) -> str:
    if s is None:
        return "-"
    s = int(round(s))
    return f"{s // 3600}h{s % 3600 // 60:02d}m" if s >= 3600 else f"{s // 60}m{s % 60:02d}s"


def progress_table(rows: Sequence[dict]) -> str:
    """The rows as a fixed-width text table (fits 80 columns)."""
    lines = [f"{'evaluation':28s} {'done':>9} {'failed':>6} {'spend':>10} {'waits':>5} {'ETA':>7}  state"]
    for r in rows:
        name = Path(r["dir"]).name
        name = name if len(name) <= 28 else name[:27] + "~"
        state = ("running" if r["running"] else "waiting" if r.get("waiting")   # a presets run's later model
                 else "complete" if r["done"] == r["planned"] else "stopped")
        count = f"{r['done']}/{r['planned']}"
        spend = "unreadable" if r["spend_usd"] is None else f"${r['spend_usd']:.4f}"
        lines.append(f"{name:28s} {count:>9} {r['failed']:>6} {spend:>10} {r['waits']:>5} "
                     f"{_duration(r['eta_s']):>7}  {state}")
    notes = [f"  {r['ledger_problem']}" for r in rows if r.get("ledger_problem")]
    notes += [f"  {r['dir']}: {r['unreadable']} recorded figures or result files unreadable, left out"
              for r in rows if r.get("unreadable")]
    return "\n".join(lines + notes)
