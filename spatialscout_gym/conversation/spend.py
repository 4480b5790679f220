"""The money a run has spent on model calls, shared by every worker, and the cap on it
(``--max-cost-usd``; docs/models.md, "Cost before and during").

A :class:`SpendLedger` adds each answered call's cost (from the price table) to a small JSON file
(``evaluate`` puts it in the evaluation directory, :data:`SPEND_FILE`) under an exclusive ``flock``,
so the total counts every worker and every earlier run of the same directory (money spent stays
spent across a resume). Before each request the agent asks :meth:`SpendLedger.reached`: once the
total reaches the cap, no request is sent and the episode ends as failed with
:class:`CostCapReached` (redone by a rerun with a higher cap). Calls already in flight when the cap
is reached are paid: the total can pass the cap by at most one call per worker.
"""

from __future__ import annotations

import fcntl
import json
import os
import threading
from pathlib import Path

from spatialscout_gym.core.errors import SpatialScoutError
from spatialscout_gym.core.files import locked_json_object

__all__ = ["SPEND_FILE", "SpendLedger", "CostCapReached", "read_spend"]

SPEND_FILE = "spend.json"
"""The shared total's file inside an evaluation directory."""


class CostCapReached(SpatialScoutError, RuntimeError):
    """The run's spend reached ``--max-cost-usd``: this episode sent no further request."""


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
        with locked_json_object(self.path) as state:
            total = {"usd": float(state.get("usd", 0.0)) + usd, "calls": int(state.get("calls", 0)) + (1 if usd else 0)}
            if usd:
                state.clear()
                state.update(total)
            return total

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
        """Raise :class:`CostCapReached` when the cap is reached."""
        if self.reached():
            raise CostCapReached(f"the run's spend reached --max-cost-usd {self.cap_usd:g} "
                                 f"(${self.total():.4f} spent); no further request was sent")


def read_spend(path: str | os.PathLike) -> float | None:
    """The total in a ledger file, read under a shared ``flock`` (never a half-written file, and
    nothing created); None when there is no ledger."""
    try:
        fh = open(path)
    except FileNotFoundError:
        return None
    with fh:
        fcntl.flock(fh, fcntl.LOCK_SH)
        try:
            text = fh.read()
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)
    try:
        return float(json.loads(text or "{}").get("usd", 0.0))
    except (ValueError, AttributeError):
        return None
