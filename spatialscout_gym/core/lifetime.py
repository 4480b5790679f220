"""Helper processes end with the process that started them, ``kill -9`` included.

A process killed with ``SIGKILL`` runs no clean-up, so its pool workers, ``multiprocessing``
manager and NBV workers would live on as orphans. Each such child calls :func:`exit_with_parent`
first: on Linux the kernel sends it ``SIGKILL`` when its parent dies (``prctl(PR_SET_PDEATHSIG)``,
asked for only when the parent started it from its main thread: the signal follows the starting
*thread*), and everywhere a daemon thread polls the parent id and ends the process
(``os._exit``, no clean-up that could hang) once the child has been re-parented.
"""

from __future__ import annotations

import os
import sys
import threading
import time

__all__ = ["exit_with_parent", "PARENT_POLL_S", "started_from_main_thread"]

PARENT_POLL_S = 0.5
"""How often the watch thread checks that the parent is still alive, seconds."""

_PR_SET_PDEATHSIG = 1   # <linux/prctl.h>


def started_from_main_thread() -> bool:
    """Whether the calling thread is the main one: pass it to a child as ``exit_with_parent``'s
    ``death_signal`` (a death signal tied to a short-lived thread would kill the child early)."""
    return threading.current_thread() is threading.main_thread()


def _set_death_signal() -> bool:
    try:
        import ctypes
        import signal
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0) == 0
    except (OSError, AttributeError, ImportError):
        return False


def exit_with_parent(parent_pid: int, death_signal: bool = True) -> None:
    """End this process when ``parent_pid`` (the process that started it) ends.

    Parameters
    ----------
    parent_pid : int
        The parent's pid, as the parent saw it (``os.getpid()`` there).
    death_signal : bool
        Also ask Linux for ``SIGKILL`` at the parent's death (only when the parent started this
        process from its main thread, see :func:`started_from_main_thread`).
    """
    if death_signal and sys.platform.startswith("linux"):
        _set_death_signal()

    def watch() -> None:
        while os.getppid() == parent_pid:
            time.sleep(PARENT_POLL_S)
        os._exit(1)

    if os.getppid() != parent_pid:   # the parent died before this process got here
        os._exit(1)
    threading.Thread(target=watch, name="exit-with-parent", daemon=True).start()
