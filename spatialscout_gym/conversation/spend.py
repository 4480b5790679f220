"""The money a run has spent on model calls, shared by every worker, and the cap on it
(``--max-cost-usd``; docs/models.md, "Cost before and during").

A :class:`SpendLedger` adds each answered call's cost (from the price table) to a small JSON file
(``evaluate`` puts it in the evaluation directory, :data:`SPEND_FILE`) under an exclusive ``flock``,
so the total counts every worker and every earlier run of the same directory (money spent stays
spent across a resume). Before each request the agent asks :meth:`SpendLedger.reached`: once the
total reaches the cap, no request is sent and the episode ends as failed with
:class:`CostCapReached` (redone by a rerun with a higher cap). Calls already in flight when the cap
is reached are paid: the total can pass the cap by at most one call per worker.

Money spent stays spent: a ledger that cannot be read (not JSON, not a finite total >= 0, a link,
a FIFO, a directory) is never reset and never written through; every request of the run is
refused with :class:`SpendLedgerError`, whose one line names the file and the command that rebuilds
it from the run directories' recorded model calls (:func:`rebuild_command`, a lower bound).
"""

from __future__ import annotations

import fcntl
import math
import os
import stat
import threading
from pathlib import Path
from typing import Any

from spatialscout_gym.core.errors import SpatialScoutError
from spatialscout_gym.core.files import MAX_JSON_BYTES, SharedFileError, loads_finite, locked_json_object

__all__ = ["SPEND_FILE", "SpendLedger", "CostCapReached", "SpendLedgerError", "read_spend", "rebuild_command"]

SPEND_FILE = "spend.json"
"""The shared total's file inside an evaluation directory."""


class CostCapReached(SpatialScoutError, RuntimeError):
    """The run's spend reached ``--max-cost-usd``: this episode sent no further request."""


class SpendLedgerError(SpatialScoutError, ValueError):
    """The ledger file cannot be read (not a regular file, a link, or not a total): the run's spend
    is unknown, so no request is sent; the message names the file and the command that rebuilds
    it. The ledger is never reset: money spent stays spent."""


def rebuild_command(eval_dir: str | os.PathLike) -> str:
    """The command that rebuilds ``eval_dir``'s ledger from its recorded model calls."""
    return f"spatialscout spend {os.fspath(eval_dir)} --rebuild"


def _ledger_error(path: Path, problem: str) -> SpendLedgerError:
    return SpendLedgerError(f"{path}: {problem}; the run's spend is unknown, so no request is sent. Rebuild "
                            f"it from the recorded model calls (a lower bound): {rebuild_command(path.parent)}")


def _total_of(path: Path, state: Any) -> dict:
    """``{"usd", "calls"}`` of a ledger's JSON, checked: a finite number of dollars >= 0 and a
    count >= 0 (``{}``, the new file, is 0)."""
    if not isinstance(state, dict):
        raise _ledger_error(path, f"holds a JSON {type(state).__name__}, not the ledger's object")
    usd, calls = state.get("usd", 0.0), state.get("calls", 0)
    if type(usd) not in (int, float) or not math.isfinite(usd) or usd < 0:
        raise _ledger_error(path, f'"usd" is {usd!r}, not a finite number of dollars >= 0')
    if type(calls) is not int or calls < 0:
        raise _ledger_error(path, f'"calls" is {calls!r}, not a count >= 0')
    return {"usd": float(usd), "calls": calls}


class SpendLedger:
    """Total USD spent (and calls priced) by a run, against ``cap_usd``.

    Parameters
    ----------
    cap_usd : float, optional
        The cap (None: only counted).
    path : path, optional
        The shared file; None keeps the total in memory (one process).
    """

    def __init__(self, cap_usd: float | None = None, path: str | os.PathLike | None = None) -> None:
        self.cap_usd = None if cap_usd is None else float(cap_usd)
        self.path = None if path is None else Path(path)
        self._memory = {"usd": 0.0, "calls": 0}
        self._mutex = threading.Lock()

    def _update(self, usd: float) -> dict:
        if self.path is None:
            with self._mutex:
                self._memory["usd"] += usd
                self._memory["calls"] += 1 if usd else 0
                return dict(self._memory)
        try:
            with locked_json_object(self.path) as state:
                old = _total_of(self.path, state)   # raises before anything is written
                total = {"usd": old["usd"] + usd, "calls": old["calls"] + (1 if usd else 0)}
                if usd:
                    state.clear()
                    state.update(total)
                return total
        except SharedFileError as exc:
            raise _ledger_error(self.path, exc.problem) from None

    def add(self, usd: float) -> float:
        """Add one call's cost; the new total."""
        return self._update(float(usd))["usd"]

    def total(self) -> float:
        """USD spent so far."""
        return self._update(0.0)["usd"]

    def reached(self) -> bool:
        """True when a cap is set and the total has reached it."""
        return self.cap_usd is not None and self.total() >= self.cap_usd

    def check(self) -> None:
        """Raise :class:`CostCapReached` when the cap is reached (:class:`SpendLedgerError` when
        the ledger cannot be read)."""
        if self.reached():
            raise CostCapReached(f"the run's spend reached --max-cost-usd {self.cap_usd:g} "
                                 f"(${self.total():.4f} spent); no further request was sent")


def read_spend(path: str | os.PathLike) -> float | None:
    """The total in a ledger file, read under a shared ``flock`` (never a half-written file, and
    nothing created); None when there is no ledger. :class:`SpendLedgerError` (one line) for a
    ledger that cannot be read: a link, a FIFO (never opened: it would block), a directory, a
    device, or text that is not a total."""
    p = Path(path)
    try:
        st = os.lstat(p)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise _ledger_error(p, f"cannot be read ({exc.strerror})") from None
    if stat.S_ISLNK(st.st_mode):
        raise _ledger_error(p, "is a symbolic link; it is not followed")
    if not stat.S_ISREG(st.st_mode):
        raise _ledger_error(p, "is not a regular file")
    try:
        fd = os.open(p, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise _ledger_error(p, f"cannot be read ({exc.strerror})") from None
    with os.fdopen(fd, "rb") as fh:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise _ledger_error(p, "is not a regular file")
        fcntl.flock(fh, fcntl.LOCK_SH)
        try:
            data = fh.read(MAX_JSON_BYTES + 1)
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)
    if len(data) > MAX_JSON_BYTES:
        raise _ledger_error(p, f"holds more than the {MAX_JSON_BYTES} bytes a ledger can")
    try:
        state = loads_finite(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise _ledger_error(p, f"is not a JSON total ({type(exc).__name__})") from None
    return _total_of(p, state)["usd"]
