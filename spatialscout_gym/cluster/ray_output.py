"""Lines Ray writes into the driver's terminal that tell the user nothing: the raylet's
``[state-dump]`` lines (its periodic debug state, which reaches the driver with the error messages
Ray shows when a worker node dies, a score of lines at a time). :func:`without_state_dumps` drops
them from file descriptors 1 and 2 for a block, whoever writes them (Ray's C++ logger, its Python
threads, a process started meanwhile); every other byte passes unchanged, a progress bar's
unfinished line at once."""

from __future__ import annotations

import contextlib
import os
import sys
import threading
from typing import Iterator

__all__ = ["STATE_DUMP", "without_state_dumps"]

STATE_DUMP = b"[state-dump]"
"""What marks a raylet state-dump line."""

_HELD_STARTS = (b"(", b"[", b"\x1b")
"""An unfinished line starting so may become a Ray log line (``(raylet) ...``, ``[time ...]``, a
colour code): held until its end. Anything else (a progress bar's ``\\r...``) passes at once."""


def _write_all(fd: int, data: bytes) -> None:
    while data:
        data = data[os.write(fd, data):]


def _pump(source: int, sink: int) -> None:
    """Copy ``source`` to ``sink`` until end of file, without the state-dump lines."""
    held = b""
    while True:
        try:
            chunk = os.read(source, 65536)
        except OSError:
            chunk = b""
        if not chunk:
            break
        *lines, held = (held + chunk).split(b"\n")
        out = b"".join(line + b"\n" for line in lines if STATE_DUMP not in line)
        if held and not held.startswith(_HELD_STARTS):
            out, held = out + held, b""
        with contextlib.suppress(OSError):
            _write_all(sink, out)
    if held and STATE_DUMP not in held:
        with contextlib.suppress(OSError):
            _write_all(sink, held)
    os.close(source)


@contextlib.contextmanager
def without_state_dumps(fds: tuple[int, ...] = (1, 2)) -> Iterator[None]:
    """For the block, ``fds`` go through a filter that drops :data:`STATE_DUMP` lines."""
    sys.stdout.flush()
    sys.stderr.flush()
    saved: dict[int, int] = {}
    pumps: list[threading.Thread] = []
    try:
        for fd in fds:
            read_end, write_end = os.pipe()
            saved[fd] = os.dup(fd)
            os.dup2(write_end, fd)
            os.close(write_end)
            pump = threading.Thread(target=_pump, args=(read_end, saved[fd]), daemon=True,
                                    name=f"ray-output-{fd}")
            pump.start()
            pumps.append(pump)
        yield
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        for fd, original in saved.items():
            os.dup2(original, fd)     # the pipe's last writer here closes: its pump ends
        for pump in pumps:
            # a process started in the block (a local Ray's) may still hold the pipe: its pump keeps
            # copying into the original descriptor, which therefore stays open
            pump.join(timeout=2.0)
        for fd, original in saved.items():
            if not any(p.is_alive() for p in pumps):
                os.close(original)
