"""A Ray started by this process for itself: every port on loopback, and nothing left when the
process dies, ``kill -9`` included (``evaluate --backend ray`` and ``train-nbv --backend rllib``
without an address, ``examples/rllib_ppo.py``).

* **Loopback.** Ray turns a node address of ``127.0.0.1`` into the machine's network address and
  listens there (or on every interface), unless ``RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0``: the
  switch Ray itself uses on macOS and Windows to keep a node on one machine, which makes the node
  address loopback and refuses other nodes. :func:`init_local_ray` sets it for the processes
  Ray starts (they inherit it) and for Ray's already-imported constant, then puts both back, so a
  later ``ray.init(address=...)`` to a real cluster in this process is not affected.
* **Lifetime.** ``ray.init`` ties its GCS and raylet to the driver, but the agents the raylet
  starts (``ray::DashboardAgent``, ``ray::RuntimeEnvAgent``) outlive a driver killed with
  ``SIGKILL``, re-parented to init. So a watchdog process, in its own session, holds a pipe from
  the driver and notes, every :data:`POLL_S` seconds, every process under the ones ``ray.init``
  started (and every process whose environment shows :data:`SESSION_VAR`, which Ray's processes
  inherit; the agents overwrite theirs with their titles); when the pipe
  closes without the word ``done`` (the driver died), it kills each noted process that is still
  the same process (same start time). :func:`stop_local_ray` says ``done`` after
  ``ray.shutdown()``. Linux only (it reads ``/proc``); elsewhere no watchdog is started.
"""

from __future__ import annotations

import os
import secrets
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import IO, Any

from spatialscout_gym.core.types import natural_number

__all__ = ["LOOPBACK_ENV", "SESSION_VAR", "POLL_S", "init_local_ray", "stop_local_ray", "session_pids"]

LOOPBACK_ENV = "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"
"""Set to ``0``: Ray keeps a one-machine node on loopback (see the module docstring)."""

SESSION_VAR = "SPATIALSCOUT_RAY_SESSION"
"""Environment variable marking every process of a Ray started by :func:`init_local_ray`."""

_WATCHDOG: "subprocess.Popen[str] | None" = None


def _processes(proc: Path = Path("/proc")) -> dict[int, tuple[int, int]]:
    """Every process: pid -> (parent pid, start time in clock ticks), from ``/proc/<pid>/stat``."""
    out = {}
    for entry in proc.iterdir():
        if natural_number(entry.name) is not None:
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except (OSError, IndexError):    # gone meanwhile
                continue
            out[int(entry.name)] = (int(fields[1]), int(fields[19]))
    return out


def _children(pid: int, table: dict[int, tuple[int, int]]) -> set[int]:
    return {p for p, (parent, _) in table.items() if parent == pid}


def session_pids(session: str, proc: Path = Path("/proc")) -> list[int]:
    """Pids of the processes whose environment holds ``SESSION_VAR=session`` (a process that
    rewrote its title over its environment, as Ray's agents do, is not found this way)."""
    mark = f"{SESSION_VAR}={session}".encode()
    found = []
    for entry in proc.iterdir():
        if natural_number(entry.name) in (None, os.getpid()):
            continue
        try:
            if mark in (entry / "environ").read_bytes().split(b"\0"):
                found.append(int(entry.name))
        except OSError:    # gone, or not ours to read
            continue
    return found


POLL_S = 0.5
"""How often the watchdog notes the processes of its Ray, seconds."""


def _watch(session: str, roots: list[int], pipe: IO[str]) -> None:
    """The watchdog's body: note the processes under ``roots`` (and those marked with
    ``session``) until the driver's pipe ends; without ``done`` on it, kill them all."""
    import threading
    said: list[str] = []
    reader = threading.Thread(target=lambda: said.append(pipe.read()), daemon=True)
    reader.start()
    noted: dict[int, int] = {}     # pid -> start time

    def note() -> None:
        table = _processes()
        todo = [p for p in {*roots, *session_pids(session), *noted} if p in table]
        while todo:
            pid = todo.pop()
            if pid != os.getpid() and noted.setdefault(pid, table[pid][1]) == table[pid][1]:
                todo.extend(c for c in _children(pid, table) if c not in noted)

    while reader.is_alive():
        note()
        reader.join(POLL_S)
    if "done" in "".join(said):
        return
    for _ in range(20):            # kill, then look again for what they started meanwhile
        note()
        table = _processes()
        alive = [p for p, start in noted.items() if p in table and table[p][1] == start]
        if not alive:
            return
        for pid in alive:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        time.sleep(0.2)


def init_local_ray(**kwargs: Any) -> str:
    """``ray.init`` a Ray of its own on this machine, every port on loopback, that does not outlive
    this process (module docstring); ``kwargs`` go to ``ray.init`` (the dashboard is off unless
    ``include_dashboard`` says otherwise). Returns the session mark."""
    global _WATCHDOG
    import ray
    from ray._private import ray_constants

    session = secrets.token_hex(8)
    before = _children(os.getpid(), _processes()) if sys.platform.startswith("linux") else set()
    saved = {k: os.environ.get(k) for k in (LOOPBACK_ENV, SESSION_VAR)}
    saved_flag = ray_constants.ENABLE_RAY_CLUSTER
    os.environ.update({LOOPBACK_ENV: "0", SESSION_VAR: session})
    ray_constants.ENABLE_RAY_CLUSTER = False       # read when ray was imported: set it as the env says
    try:
        # address "local": a new Ray, never one a `ray start` left running on this machine
        # (``ray.init()`` would join that, through RAY_ADDRESS or /tmp/ray/ray_current_cluster)
        ray.init(**{"address": "local", "include_dashboard": False, "_node_ip_address": "127.0.0.1", **kwargs})
    finally:
        ray_constants.ENABLE_RAY_CLUSTER = saved_flag
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    if sys.platform.startswith("linux"):
        env = {k: v for k, v in os.environ.items() if k != SESSION_VAR}
        package_root = str(Path(__file__).resolve().parents[2])    # the watchdog imports this module
        env["PYTHONPATH"] = os.pathsep.join([package_root, *filter(None, [env.get("PYTHONPATH")])])
        roots = sorted(_children(os.getpid(), _processes()) - before)    # what ray.init started
        _WATCHDOG = subprocess.Popen([sys.executable, "-c", "import sys; from spatialscout_gym.cluster.local_ray "
                                      "import _watch; _watch(sys.argv[1], [int(a) for a in sys.argv[2:]], sys.stdin)",
                                      session, *map(str, roots)],
                                     stdin=subprocess.PIPE, text=True, env=env, start_new_session=True,
                                     cwd=os.getcwd(), close_fds=True)
    return session


def stop_local_ray() -> None:
    """``ray.shutdown()``, then tell the watchdog the driver ended on purpose."""
    global _WATCHDOG
    import ray
    ray.shutdown()
    dog, _WATCHDOG = _WATCHDOG, None
    if dog is not None and dog.stdin is not None:
        try:
            dog.stdin.write("done")
            dog.stdin.close()
        except OSError:
            pass
        dog.wait(timeout=10)
