"""``spatialscout train-nbv --backend rllib`` on a Ray cluster: the test starts a one-node cluster
on 127.0.0.1 (``ray start --head``, 2 CPUs), trains PPO with two env runners placed on it, checks
the run record (args, progress, learning curve, checkpoints, where the runners ran), then
``spatialscout evaluate --agent rllib:RUN`` runs the trained policy on one scene, and ``spatialscout
compare`` sets it beside ``frontier-nbv`` on the same settings (the journey docs/rllib.md describes,
to its last step). Every port the
cluster's processes listen on is on 127.0.0.1. The cluster is
stopped by the process ids it started (``ray stop`` would stop every Ray on the machine), and the
test checks that none survives."""

from __future__ import annotations

import csv
import ipaddress
import json
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pytest

pytest.importorskip("ray.rllib", reason="needs the ray extra with RLlib")
psutil = pytest.importorskip("psutil")

pytestmark = [pytest.mark.render, pytest.mark.slow, pytest.mark.xdist_group("ray")]

REPO = Path(__file__).resolve().parents[1]
RAY = str(Path(sys.executable).with_name("ray"))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def listening(proc: psutil.Process) -> list[str]:
    """The local addresses ``proc`` listens on (TCP), IPv4-mapped IPv6 shown as IPv4."""
    out = []
    try:
        for c in proc.net_connections("inet"):
            if c.status == psutil.CONN_LISTEN:
                ip = ipaddress.ip_address(c.laddr.ip)
                out.append(str(getattr(ip, "ipv4_mapped", None) or ip))
    except psutil.NoSuchProcess:
        pass
    return out


TOKEN = secrets.token_hex(16)
"""The test cluster's own authentication token (``RAY_AUTH_MODE=token``, turned on explicitly)."""


def env_with_repo() -> dict:
    """This checkout first on every Ray process's path (the cluster's workers import the package),
    the cluster's token for the head and the driver, and every Ray port on loopback (Ray's switch
    for a one-machine node, as docs/rllib.md's one-machine command sets it)."""
    path = os.pathsep.join([str(REPO), *filter(None, [os.environ.get("PYTHONPATH")])])
    return dict(os.environ, PYTHONPATH=path, OMP_NUM_THREADS="1", RAY_USAGE_STATS_ENABLED="0",
                RAY_AUTH_MODE="token", RAY_AUTH_TOKEN=TOKEN, RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER="0")


@pytest.fixture
def ray_cluster():
    """``HOST:PORT`` of a fresh head node; afterwards every process it started is gone."""
    port = free_port()
    temp = tempfile.mkdtemp(prefix="ray", dir="/tmp")        # short: Ray's socket paths have a limit
    head = subprocess.Popen(
        [RAY, "start", "--head", "--block", "--port", str(port), "--num-cpus", "2", "--node-ip-address",
         "127.0.0.1", "--include-dashboard=false", "--disable-usage-stats", "--temp-dir", temp,
         "--ray-client-server-port", str(free_port()), "--dashboard-agent-listen-port", str(free_port()),
         "--min-worker-port", "0", "--max-worker-port", "0"],
        env=env_with_repo(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
    started: dict[int, psutil.Process] = {}

    ports: dict[str, list[str]] = {}

    def note_children() -> None:
        """Notes the cluster's processes and the addresses they listen on."""
        try:
            for p in psutil.Process(head.pid).children(recursive=True):
                started.setdefault(p.pid, p)
                ports.setdefault(f"{p.name()}[{p.pid}]", []).extend(
                    a for a in listening(p) if a not in ports.get(f"{p.name()}[{p.pid}]", []))
        except psutil.NoSuchProcess:
            pass

    address = f"127.0.0.1:{port}"
    lines: list[str] = []
    up = threading.Event()

    def read_head() -> None:      # `ray start --block` says when the node is up, then keeps running
        for line in iter(head.stdout.readline, b""):
            lines.append(line.decode(errors="replace"))
            if "Ray runtime started" in lines[-1]:
                up.set()

    threading.Thread(target=read_head, daemon=True).start()
    if not up.wait(timeout=180):
        os.killpg(head.pid, signal.SIGKILL)
        pytest.fail("ray start --head did not come up within 180 s:\n" + "".join(lines)[-3000:])
    note_children()
    try:
        yield address, note_children
    finally:
        note_children()
        os.killpg(head.pid, signal.SIGTERM)   # `ray start --block` stops the node's processes on SIGTERM
        try:
            head.wait(timeout=10)             # its own shutdown waits about 30 s; ours ends it sooner
        except subprocess.TimeoutExpired:
            os.killpg(head.pid, signal.SIGKILL)
            head.wait(timeout=10)
        # what the head left behind is asked to stop, then killed: only processes this cluster
        # started, by pid (waiting on them unasked took half a minute)
        for p in started.values():
            try:
                p.terminate()
            except psutil.NoSuchProcess:
                pass
        gone, alive = psutil.wait_procs(list(started.values()), timeout=10)
        for p in alive:
            p.kill()
        gone, alive = psutil.wait_procs(alive, timeout=10)
        shutil.rmtree(temp, ignore_errors=True)
        assert not alive, f"Ray processes survived: {[p.pid for p in alive]}"
        # GCS, raylet, client server, agents and workers: every port on loopback
        assert sum(len(a) for a in ports.values()) >= 4, ports
        assert all(a == "127.0.0.1" for ads in ports.values() for a in ads), ports


def test_train_nbv_rllib_on_a_cluster_then_evaluate_and_compare(ray_cluster, tmp_path, capsys):
    address, note_children = ray_cluster
    out = tmp_path / "runs"
    cmd = [sys.executable, "-m", "spatialscout_gym.cli.main", "train-nbv", "--backend", "rllib",
           "--ray-address", address, "--num-env-runners", "2", "--num-envs", "2", "--num-steps", "64",
           "--batch-size", "64", "--update-epochs", "2", "--total-timesteps", "200", "--image-budget", "4",
           "--resolution", "32", "--obs-size", "36", "--reconfigure-every", "4", "--checkpoint-every", "128",
           "--out", str(out), "--run-name", "r", "--no-progress-bar", "--seed", "3"]
    proc = subprocess.Popen(cmd, cwd=REPO, env=env_with_repo(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    while proc.poll() is None:     # the env runners' worker processes, for the teardown's check
        note_children()
        time.sleep(1.0)
    stdout, stderr = proc.communicate()
    assert proc.returncode == 0, stderr[-3000:]
    run = out / "r"
    last = stdout.strip().splitlines()[-1]
    # two rollouts of 64 steps x 2 envs pass 200 steps: 256 sampled
    assert last.startswith("train-nbv: 256 steps in ") and f"--agent rllib:{run / 'checkpoint'}" in last
    # episodes, not iterations: 128 steps per env, 3 steps an episode (V = 4), two envs
    episodes = int(re.search(r", (\d+) episodes, ", last).group(1))
    assert 2 * (128 // 3) - 2 <= episodes <= 2 * (128 // 3), last

    # the two env runners were actors on the cluster, in processes of their own, not the driver's
    record = json.loads((run / "rllib_runners.json").read_text())
    assert record["ray_address_given"] == address and record["nodes"] == 1
    assert record["iteration"] == 0 and record["replaced"] == []      # no runner was restored meanwhile
    assert "[state-dump]" not in stderr
    assert record["ray_address"].rsplit(":", 1)[1].isdigit() and record["ray_address"] != "auto"
    assert all(r["address"] == "127.0.0.1" and len(r["node_id"]) == 56 for r in record["env_runners"])
    pids = {r["pid"] for r in record["env_runners"]}
    assert [r["worker_index"] for r in record["env_runners"]] == [1, 2] and len(pids) == 2
    assert record["driver"]["pid"] not in pids

    # the run record of the SB3 trainer: args, progress.csv (same columns), curve, tensorboard
    assert json.loads((run / "args.json").read_text())["backend"] == "rllib"
    rows = list(csv.DictReader((run / "progress.csv").open()))
    assert [int(r["time/total_timesteps"]) for r in rows] == [128, 256]
    finished = [r for r in rows if r["charts/coverage"]]
    assert finished, "no episode finished"          # V = 4: an episode is 3 steps
    for r in finished:
        assert 0.0 <= float(r["charts/coverage"]) <= 1.0 and float(r["charts/episodic_length"]) == 3.0
        assert 0.0 <= float(r["charts/all_mean_iou"]) <= 1.0
    assert all(r["losses/policy_loss"] and r["losses/value_loss"] for r in rows)
    assert (run / "learning_curve.png").stat().st_size > 10_000
    assert list(run.glob("events.out.tfevents.*"))
    saved = json.loads((run / "nbv_config.json").read_text())
    assert (saved["obs_layout"], saved["image_budget"], saved["resolution"], saved["obs_size"]) == \
        ("image+vector", 4, 32, 36)

    # checkpoints: every 128 steps and at the end; training changed the policy between them
    assert sorted(p.name for p in (run / "checkpoints").iterdir()) == ["128", "256"]
    from spatialscout_gym.baselines.rllib_agent import RLlibNBVAgent
    early, final = RLlibNBVAgent(str(run / "checkpoints" / "128")), RLlibNBVAgent(str(run))
    a, b = early.module.state_dict(), final.module.state_dict()
    assert set(a) == set(b) and any(not (a[k] == b[k]).all() for k in a)
    assert any(type(m).__name__ == "Conv2d" and m.in_channels == 3 for m in final.module.modules())

    # evaluate runs the RLlib policy as an agent, with the settings it was trained with
    from spatialscout_gym.cli.main import main
    ev = tmp_path / "eval"
    assert main(["evaluate", "--agent", f"rllib:{run}", "--scenes", "Kitchen_01", "--out", str(ev),
                 "--no-progress"]) == 0
    settings = json.loads((ev / "evaluate.json").read_text())
    assert (settings["agent"], settings["image_budget"], settings["resolution"], settings["tool_call_budget"]) \
        == (f"rllib:{run}", 4, 32, None)
    report = json.loads((ev / "report.json").read_text())
    assert report["episodes"]["completed"] == 1 and report["episodes"]["end_reasons"] == {"finish_mapping": 1}
    episode = json.loads(next((ev / "Kitchen_01").rglob("result.json")).read_text())
    assert episode["counters"]["images_used"] == 4 or episode["coverage"] == 1.0

    # and on the cluster: the same policy as the agent of `evaluate --backend ray`, in the cluster's
    # workers, gives the same episode as the local run
    ev_ray = tmp_path / "eval_ray"
    done = subprocess.run([sys.executable, "-m", "spatialscout_gym.cli.main", "evaluate", "--agent", f"rllib:{run}",
                           "--scenes", "Kitchen_01", "--backend", "ray", "--ray-address", address, "--workers", "2",
                           "--out", str(ev_ray), "--no-progress"], cwd=REPO, env=env_with_repo(),
                          capture_output=True, text=True, timeout=600)
    note_children()
    assert done.returncode == 0, done.stderr[-3000:]
    local, on_cluster = ev / "Kitchen_01" / "seed_0", ev_ray / "Kitchen_01" / "seed_0"
    assert (on_cluster / "predictions.json").read_bytes() == (local / "predictions.json").read_bytes()
    a, b = (json.loads((d / "result.json").read_text()) for d in (local, on_cluster))
    assert a["all"] == b["all"] and a["counters"] == b["counters"]

    # the journey's last step: the policy beside frontier-nbv on the same scene and settings, no --force
    reference = tmp_path / "frontier-nbv"
    assert main(["evaluate", "--agent", "frontier-nbv", "--scenes", "Kitchen_01", "--image-budget", "4",
                 "--resolution", "32", "--out", str(reference), "--no-progress"]) == 0
    capsys.readouterr()
    assert main(["compare", str(reference), str(ev)]) == 0
    text = capsys.readouterr().out
    assert re.findall(r"^## Paired: (\S+) - (\S+) on 1 shared", text, re.M) == [("eval", "frontier-nbv")], text
    f = json.loads((reference / "Kitchen_01" / "seed_0" / "result.json").read_text())["all"]["mean_iou"]
    p = a["all"]["mean_iou"]
    row = f"| Kitchen_01 | 1 | {100 * f:.2f} | {100 * p:.2f} | {round(100 * (p - f), 2) + 0.0:+.2f} |"
    assert row in text.splitlines(), (row, text)


class FakeRunnerGroup:
    """An env runner group whose runner 2 RLlib restored on another node after iteration 1."""

    def __init__(self):
        self.calls = 0

    def foreach_env_runner(self, func, local_env_runner=False):
        self.calls += 1
        first = self.calls <= 2
        return [{"node_id": "a" * 56, "address": "127.0.0.2", "host": "h2", "pid": 11, "worker_index": 1},
                {"node_id": ("b" if first else "c") * 56, "address": "127.0.0.3" if first else "127.0.0.4",
                 "host": "h3" if first else "h4", "pid": 12 if first else 13, "worker_index": 2}]


def test_rllib_runners_json_follows_a_runner_restored_elsewhere(tmp_path, monkeypatch):
    import types

    import ray

    from spatialscout_gym.nbv.training import rllib
    monkeypatch.setattr(ray, "get_runtime_context", lambda: types.SimpleNamespace(gcs_address="127.0.0.1:6379"))
    monkeypatch.setattr(ray, "nodes", lambda: [{"Alive": True}, {"Alive": True}, {"Alive": False}])
    monkeypatch.setattr(rllib, "_runner_place", lambda runner: {"node_id": "d" * 56, "pid": 10})
    algo = types.SimpleNamespace(env_runner_group=FakeRunnerGroup())
    path = tmp_path / rllib.RUNNERS_FILE
    first = rllib._record_runners(tmp_path, algo, False, "127.0.0.1:6379", 0, None)
    assert json.loads(path.read_text()) == first and first["iteration"] == 0 and first["replaced"] == []
    mtime = path.stat().st_mtime_ns
    assert rllib._record_runners(tmp_path, algo, False, "127.0.0.1:6379", 1, first) is first
    assert path.stat().st_mtime_ns == mtime                  # nothing moved: not rewritten
    later = rllib._record_runners(tmp_path, algo, False, "127.0.0.1:6379", 2, first)
    on_disk = json.loads(path.read_text())
    assert on_disk == later and on_disk["iteration"] == 2 and on_disk["nodes"] == 2
    assert [r["address"] for r in on_disk["env_runners"]] == ["127.0.0.2", "127.0.0.4"]     # the dead host is gone
    assert [r["address"] for r in on_disk["replaced"]] == ["127.0.0.3"] and on_disk["driver"]["pid"] == 10


def test_raylet_state_dump_lines_stay_off_the_drivers_terminal(capfd):
    """What ``train-nbv --backend rllib`` runs under: the raylet's ``[state-dump]`` lines (28 of
    them when a worker node dies), from Ray's Python threads, its C++ logger or a process started
    meanwhile, are dropped; every other line, and a progress bar's unfinished one, passes."""
    from spatialscout_gym.cluster.ray_output import without_state_dumps
    with without_state_dumps():
        os.write(1, b"\x1b[36m(raylet)\x1b[0m [state-dump] NodeManager:\n" * 28)
        os.write(2, b"(raylet) A worker died or was killed while executing a task\n")
        print("train-nbv: 256 steps", flush=True)
        os.write(2, b"\rtrain-nbv (rllib):  50%")
        subprocess.run([sys.executable, "-c", "import sys; sys.stderr.write('[2026-12-04 09:00:00,000 I 1 1] "
                        "node_manager.cc:1 [state-dump] Event stats:\\n[state-dump] \\tqueued\\nkept\\n')"], check=True)
    out, err = capfd.readouterr()
    assert "state-dump" not in out + err
    assert out == "train-nbv: 256 steps\n", out
    assert err == ("(raylet) A worker died or was killed while executing a task\n\rtrain-nbv (rllib):  50%kept\n"), err
