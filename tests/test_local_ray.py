"""The Ray that ``evaluate --backend ray`` starts for itself listens on loopback only, joins no
cluster an environment names, and nothing of it outlives the evaluation killed with ``kill -9``
(``cluster/local_ray.py``). The test holds the run open with an episode waiting on a gate
(``tests/ray_gate.py``)."""

from __future__ import annotations

import contextlib
import ipaddress
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
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


def gate_env() -> dict:
    """This checkout and ``tests/`` (the gate renderer) on the driver's path; Ray's workers inherit it."""
    path = os.pathsep.join([str(REPO), str(REPO / "tests"), *filter(None, [os.environ.get("PYTHONPATH")])])
    env = dict(os.environ, PYTHONPATH=path, OMP_NUM_THREADS="1", RAY_USAGE_STATS_ENABLED="0")
    env.pop(SESSION_VAR, None)
    return env


def wait_for(path: Path, proc: subprocess.Popen, limit_s: float = 120) -> None:
    """Until ``path`` exists (an episode started), failing if the driver ends first."""
    deadline = time.monotonic() + limit_s
    while not path.exists() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.2)
    assert path.exists(), (proc.poll(), proc.stderr.read().decode()[-2000:] if proc.poll() is not None else "")


def test_evaluate_backend_ray_listens_on_loopback_and_dies_with_kill_9(tmp_path):
    gate = tmp_path / "gate"
    gate.mkdir()
    # a cluster address left in the environment (a `ray start` elsewhere) is not joined: a Ray of its own
    env = dict(gate_env(), RAY_ADDRESS="127.0.0.1:9")
    # the episode waits on a gate this test never opens: the run is held open while the test looks
    proc = subprocess.Popen([sys.executable, str(REPO / "tests" / "ray_gate.py"), str(tmp_path / "ev"), str(gate)],
                            cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            start_new_session=True)
    driver = psutil.Process(proc.pid)
    seen: dict[int, psutil.Process] = {}
    try:
        wait_for(gate / "started", proc)      # a worker is in its episode: Ray's agents and ports are up
        tree = driver.children(recursive=True)
        seen.update((p.pid, p) for p in tree)
        names = {p.name() for p in tree}
        assert names >= {*AGENTS, "gcs_server", "raylet"}, names
        assert any(n.startswith("ray::") and n not in AGENTS for n in names), names    # the episode's worker
        addresses = {f"{p.name()}[{p.pid}]": listening(p) for p in [driver, *tree]}
        assert sum(len(a) for a in addresses.values()) >= 4, addresses
        assert all(a == "127.0.0.1" for ads in addresses.values() for a in ads), addresses
        # still held: the driver runs and no episode has finished, so nothing above raced the run's end
        assert proc.poll() is None and not list((tmp_path / "ev").glob("*/seed_*/result.json"))
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
    # nothing the evaluation started is left (the watchdog included): the agents, re-parented to
    # init, are killed by the watchdog
    gone, alive = psutil.wait_procs(list(seen.values()), timeout=30)
    for p in alive:        # do not leave them to the rest of the suite either
        p.kill()
    assert not alive, [f"{p.name()}[{p.pid}]" for p in alive]


RAY = str(Path(sys.executable).with_name("ray"))


def free_port() -> int:
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_losing_the_head_mid_run_ends_in_one_line_with_the_running_episode_recorded(tmp_path):
    """A head (``ray start --head`` on loopback) whose GCS dies while the driver's episode is held
    open: the driver ends itself (before Ray's own exit, which says only ``rpc_client.h:204``), in
    one line of the package's, and the running episode is a failed attempt naming its node."""
    env = dict(gate_env(), RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER="0", RAY_AUTH_MODE="disabled", HOME=str(tmp_path))
    port = free_port()
    temp = tempfile.mkdtemp(prefix="ray", dir="/tmp")        # short: Ray's socket paths have a limit
    head = subprocess.Popen(
        [RAY, "start", "--head", "--block", "--port", str(port), "--num-cpus", "1", "--node-ip-address", "127.0.0.1",
         "--include-dashboard=false", "--disable-usage-stats", "--temp-dir", temp,
         "--ray-client-server-port", str(free_port()), "--dashboard-agent-listen-port", str(free_port()),
         "--min-worker-port", "0", "--max-worker-port", "0"],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
    started: dict[int, psutil.Process] = {}
    gate = tmp_path / "gate"
    gate.mkdir()
    driver = None
    try:
        for line in iter(head.stdout.readline, b""):     # `ray start --block` says when the node is up
            if b"Ray runtime started" in line:
                break
        driver = subprocess.Popen([sys.executable, str(REPO / "tests" / "ray_gate.py"), str(tmp_path / "ev"), str(gate),
                                   f'{{"ray_address": "127.0.0.1:{port}"}}'],
                                  cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  start_new_session=True)
        wait_for(gate / "started", driver)
        started.update((p.pid, p) for p in psutil.Process(head.pid).children(recursive=True))
        [gcs] = [p for p in started.values() if p.name() == "gcs_server"]
        gcs.kill()
        out, err = driver.communicate(timeout=180)   # a bound only: Ray alone exits after 60 s, with its own line
    finally:
        for proc in filter(None, [driver, head]):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)
        for p in started.values():
            with contextlib.suppress(psutil.NoSuchProcess):
                p.kill()
        psutil.wait_procs(list(started.values()), timeout=10)
        shutil.rmtree(temp, ignore_errors=True)
    text = err.decode()
    package = [ln for ln in text.splitlines() if ln.startswith("spatialscout:")]
    assert driver.returncode == 2 and len(package) == 1, text[-3000:]
    assert f"lost the Ray cluster's head at 127.0.0.1:{port}" in package[0], package
    assert "the episodes that were running are recorded as failed attempts" in package[0], package
    assert "1 not started" in package[0] and "rerun the same command" in package[0], package
    assert "rpc_client.h:204" not in text                        # not Ray's own exit
    [note] = [json.loads(p.read_text()) for p in (tmp_path / "ev").glob("*/seed_0.failed.json")]
    # its actor, on the head's node, lost the head with it, or the driver gave the episode up
    assert note["error"].startswith("WorkerCrash: Ray actor on node ") and " at 127.0.0.1" in note["error"], note
