"""The Ray that ``evaluate --backend ray`` starts for itself listens on loopback only, and nothing of
it outlives the evaluation killed with ``kill -9`` (``cluster/local_ray.py``)."""

from __future__ import annotations

import ipaddress
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("ray")
psutil = pytest.importorskip("psutil")

from spatialscout_gym.cluster.local_ray import SESSION_VAR  # noqa: E402

pytestmark = [pytest.mark.slow, pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc"),
              pytest.mark.xdist_group("ray")]   # Ray: one worker (tests/conftest.py)

REPO = Path(__file__).resolve().parents[1]
AGENTS = ("ray::DashboardAgent", "ray::RuntimeEnvAgent")


def listening(proc: psutil.Process) -> list[str]:
    """The local addresses ``proc`` listens on (TCP), IPv4-mapped IPv6 shown as IPv4."""
    out = []
    for c in proc.net_connections("inet"):
        if c.status == psutil.CONN_LISTEN:
            ip = ipaddress.ip_address(c.laddr.ip)
            out.append(str(getattr(ip, "ipv4_mapped", None) or ip))
    return out


def test_evaluate_backend_ray_listens_on_loopback_and_dies_with_kill_9(tmp_path):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO), *filter(None, [os.environ.get("PYTHONPATH")])]),
               OMP_NUM_THREADS="1", RAY_USAGE_STATS_ENABLED="0")
    env.pop(SESSION_VAR, None)
    proc = subprocess.Popen([sys.executable, "-m", "spatialscout_gym.cli.main", "evaluate", "--agent", "origin",
                             "--scenes", "Kitchen_01", "--seeds", "0", "1", "2", "3", "4", "5", "6", "7", "--resolution", "32", "--backend",
                             "ray", "--workers", "1", "--out", str(tmp_path / "ev"), "--no-progress"],
                            cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            start_new_session=True)
    driver = psutil.Process(proc.pid)
    seen: dict[int, psutil.Process] = {}
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and proc.poll() is None:   # until Ray's agents and a worker are up
            tree = driver.children(recursive=True)
            seen.update((p.pid, p) for p in tree)
            names = [p.name() for p in tree]
            if all(a in names for a in AGENTS) and any(n.startswith("ray::") and n not in AGENTS for n in names):
                break
            time.sleep(0.5)
        assert proc.poll() is None, proc.stderr.read().decode()[-2000:]
        time.sleep(2.0)       # the worker's ports
        tree = driver.children(recursive=True)
        seen.update((p.pid, p) for p in tree)
        assert {p.name() for p in tree} >= {*AGENTS, "gcs_server", "raylet"}
        addresses = {f"{p.name()}[{p.pid}]": listening(p) for p in [driver, *tree]}
        assert sum(len(a) for a in addresses.values()) >= 4, addresses
        assert all(a == "127.0.0.1" for ads in addresses.values() for a in ads), addresses
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
    # nothing the evaluation started is left (the watchdog included): the agents, re-parented to
    # init, are killed by the watchdog
    gone, alive = psutil.wait_procs(list(seen.values()), timeout=30)
    for p in alive:        # do not leave them to the rest of the suite either
        p.kill()
    assert not alive, [f"{p.name()}[{p.pid}]" for p in alive]
