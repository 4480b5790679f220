"""What the model service said about the reasoning-effort parameters, shared by every provider of
one run (docs/protocol.md section 10.2): a refused parameter is sent once per run, not once per
episode or per worker.

The record is a JSON file in the evaluation directory (:data:`EFFORT_RECORD_FILE`). While it is
empty, the service's answer is unknown: the first request that carries an effort parameter is sent
while holding an exclusive ``flock`` on the file, so a second worker waits for that answer instead
of sending the parameter itself. Once a request with the parameters has been answered (accepted,
or refused and resent without them) the file holds ``{"refused": {wire name: the service's words}}``
and every later provider reads it before its first request and never sends a refused parameter.
Nothing else is locked, and no separate lock file is left behind: the record itself is the lock.
"""

from __future__ import annotations

import fcntl
import json
import os
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterator

__all__ = ["EFFORT_RECORD_FILE", "EffortRecord"]

EFFORT_RECORD_FILE = "reasoning_effort.json"
"""File name of the shared record inside an evaluation directory."""


class EffortRecord:
    """The run's shared answer about effort parameters, kept in ``path`` (a JSON file).

    Parameters
    ----------
    path : path
        The record file (created, with its directory, on first use).
    """

    def __init__(self, path: str | os.PathLike) -> None:
        self.path = Path(path)

    def known(self) -> dict[str, str] | None:
        """The refused parameters (wire name -> the service's words), ``{}`` when the service took
        them all, None while no request with them has been answered. Reads without locking: a
        record is written once, atomically enough for a reader (one small ``write``)."""
        try:
            text = self.path.read_text()
        except FileNotFoundError:
            return None
        return _parse(text)

    @contextmanager
    def probing(self) -> Iterator[tuple[dict[str, str] | None, Callable[[dict[str, str]], None]]]:
        """Hold the record exclusively: yields what is known (None: nothing yet) and a callable
        ``settle(refused)`` that writes the answer. Other workers' ``probing`` waits meanwhile."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.path, "a+") as fh:
            fcntl.flock(fh, fcntl.LOCK_EX)
            try:
                fh.seek(0)
                known = _parse(fh.read())

                def settle(refused: dict[str, str]) -> None:
                    fh.seek(0)
                    fh.truncate()
                    fh.write(json.dumps({"refused": dict(refused)}, indent=2, sort_keys=True) + "\n")
                    fh.flush()
                    os.fsync(fh.fileno())

                yield known, settle
            finally:
                fcntl.flock(fh, fcntl.LOCK_UN)



def _parse(text: str) -> dict[str, str] | None:
    if not text.strip():
        return None
    try:
        value = json.loads(text)
    except ValueError:
        return None
    refused = value.get("refused") if isinstance(value, dict) else None
    if not isinstance(refused, dict):
        return None
    return {str(k): str(v) for k, v in refused.items()}
