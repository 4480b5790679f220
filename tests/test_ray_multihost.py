"""``evaluate --backend ray`` across three hosts: a head and two worker hosts, each in a network
namespace of its own on this machine (veth pairs on a bridge, private addresses made here), token
authentication on, and worker hosts that cannot see the evaluation directory (a tmpfs over it in
their mount namespace). One worker host is killed mid-run: the evaluation finishes with that
episode as a failed attempt, a rerun resumes it, and every episode's files are a local run's bytes
(``result.json`` adds the node; the redone episode is attempt 2), none lost, none twice. The host
dies during its first episode, while most episodes are still to give out and the other host's one
CPU is busy: an episode given to the replacement actor, which cannot be placed, would never end,
and the test fails by its bound.

Needs root (``ip netns``, ``mount``): skipped with the reason elsewhere, failed where ``CI=true``.
Every wait is bounded; the namespaces and every process started here go in the fixture's teardown.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

pytest.importorskip("ray")
psutil = pytest.importorskip("psutil")

pytestmark = [pytest.mark.slow, pytest.mark.render, pytest.mark.xdist_group("ray")]

REPO = Path(__file__).resolve().parents[1]
SEEDS = 6
MARK = "SPATIALSCOUT_TEST_HOST"
"""Environment variable marking every process of one test host (Ray's processes inherit it)."""
EVAL_BOUND_S = 420
"""The evaluation must end within this; an episode given to an actor that never starts would hang."""


def run(cmd: list[str], timeout: float = 30) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=True)


def cannot_make_namespaces() -> str | None:
    if not sys.platform.startswith("linux"):
        return "network namespaces are Linux only"
    if os.geteuid() != 0:
        return "making network namespaces needs root"
    if shutil.which("ip") is None or shutil.which("unshare") is None:
        return "the ip and unshare tools are not installed"
    return None


class Host:
    """One host: a network namespace, its address, and the Ray node started in it."""

    def __init__(self, name: str, ns: str, ip: str) -> None:
        self.name, self.ns, self.ip = name, ns, ip
        self.proc: subprocess.Popen | None = None

    def pids(self) -> set[int]:
        """Every live process of this host: the Ray node's tree and every process carrying its mark."""
        found: set[int] = set()
        if self.proc is not None:
            try:
                found |= {self.proc.pid, *(c.pid for c in psutil.Process(self.proc.pid).children(recursive=True))}
            except psutil.NoSuchProcess:
                pass
        mark = f"{MARK}={self.ns}".encode()
        for p in psutil.process_iter():
            try:
                if mark in Path(f"/proc/{p.pid}/environ").read_bytes().split(b"\0"):
                    found.add(p.pid)
            except OSError:
                continue
        return found

    def running_an_episode(self) -> bool:
        """True while an evaluation actor of this host runs an episode (Ray titles its process so)."""
        for pid in self.pids():
            try:
                if "_RayWorker.run" in " ".join(psutil.Process(pid).cmdline()):
                    return True
            except psutil.Error:
                continue
        return False

    def kill(self) -> None:
        """Kill -9 every process of the host (the host is lost), and wait (bounded) until they are gone."""
        for _ in range(10):
            pids = self.pids()
            if not pids:
                return
            for pid in pids:
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass
            psutil.wait_procs([psutil.Process(p) for p in pids if psutil.pid_exists(p)], timeout=5)
        assert not self.pids(), f"{self.name}: processes left after kill -9"


@pytest.fixture
def hosts(tmp_path):
    why = cannot_make_namespaces()
    if why:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"the multi-host test must run in CI: {why}")
        pytest.skip(why)
    tag = secrets.token_hex(3)
    net = f"10.{100 + secrets.randbelow(100)}.{secrets.randbelow(250)}"
    switch = f"ss{tag}sw"
    made = [Host(n, f"ss{tag}{n}", f"{net}.{k + 1}") for k, n in enumerate(("h", "w1", "w2"))]
    namespaces: list[str] = []
    try:
        for ns in (switch, *(h.ns for h in made)):
            run(["ip", "netns", "add", ns])
            namespaces.append(ns)
        run(["ip", "-n", switch, "link", "add", "br0", "type", "bridge"])
        run(["ip", "-n", switch, "link", "set", "br0", "up"])
        for h in made:
            run(["ip", "-n", switch, "link", "add", f"v{h.name}", "type", "veth", "peer", "name", "eth0",
                 "netns", h.ns])
            run(["ip", "-n", switch, "link", "set", f"v{h.name}", "master", "br0", "up"])
            run(["ip", "-n", h.ns, "addr", "add", f"{h.ip}/24", "dev", "eth0"])
            run(["ip", "-n", h.ns, "link", "set", "eth0", "up"])
            run(["ip", "-n", h.ns, "link", "set", "lo", "up"])
        yield made
    finally:
        for h in made:
            h.kill()
            if h.proc is not None:
                h.proc.wait(timeout=10)
        for ns in namespaces:
            subprocess.run(["ip", "netns", "del", ns], capture_output=True, timeout=30)


def node_env(host: Host, token: str | None) -> dict[str, str]:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO), *filter(None, [os.environ.get("PYTHONPATH")])]),
               OMP_NUM_THREADS="1", RAY_USAGE_STATS_ENABLED="0", RAY_AUTH_MODE="token", **{MARK: host.ns})
    env.pop("RAY_AUTH_TOKEN", None)
    env.pop("RAY_ADDRESS", None)
    if token is not None:
        env["RAY_AUTH_TOKEN"] = token
    return env


def start_node(host: Host, head: Host, cpus: int, token: str, temp: Path, hide: Path | None, log: Path,
               full_scratch: Path | None = None) -> None:
    ray = str(Path(sys.executable).with_name("ray"))
    cmd = [ray, "start", "--block", "--node-ip-address", host.ip, "--num-cpus", str(cpus), "--disable-usage-stats",
           "--temp-dir", str(temp / host.name)]
    cmd += (["--head", "--port", "6379", "--include-dashboard", "false"] if host is head
            else ["--address", f"{head.ip}:6379"])
    env = node_env(host, token)
    mounts = []
    if hide is not None:   # this host cannot see the evaluation directory: a tmpfs over it, in its own mounts
        mounts.append(f"mount -t tmpfs none '{hide}'")
    if full_scratch is not None:
        # its scratch disk (TMPDIR, where episodes run) is full: a tmpfs of 16 pages with one left, so
        # Python's probe of TMPDIR (one small file) passes and the episode's files do not fit
        full_scratch.mkdir(parents=True, exist_ok=True)
        mounts.append(f"mount -t tmpfs -o size=64k none '{full_scratch}' && "
                      f"dd if=/dev/zero of='{full_scratch}/fill' bs=4096 count=15 2>/dev/null")
        env["TMPDIR"] = str(full_scratch)
    if mounts:
        cmd = ["unshare", "-m", "--propagation", "private", "sh", "-c", " && ".join(mounts) + ' && exec "$@"', "sh",
               *cmd]
    host.proc = subprocess.Popen(["ip", "netns", "exec", host.ns, *cmd], env=env,
                                 stdout=log.open("w"), stderr=subprocess.STDOUT, start_new_session=True)


def wait_for_cpus(head: Host, token: str, cpus: int) -> None:
    """Until ``ray status`` on the head shows ``cpus`` CPUs (readiness polls, 2 s apart)."""
    status = [str(Path(sys.executable).with_name("ray")), "status", "--address", f"{head.ip}:6379"]
    seen = ""
    for _ in range(90):   # the nodes come up when they come up
        try:
            st = subprocess.run(["ip", "netns", "exec", head.ns, *status], env=node_env(head, token),
                                capture_output=True, text=True, timeout=30)
            seen = st.stdout + st.stderr
        except subprocess.TimeoutExpired:
            seen = "`ray status` did not answer"
        if f"/{cpus}.0 CPU" in seen:
            return
        time.sleep(2)
    pytest.fail(f"the cluster did not come up after 90 polls of `ray status`: {seen[-1500:]}")


def evaluate_cmd(head: Host, out: Path, *extra: str) -> list[str]:
    return ["ip", "netns", "exec", head.ns, sys.executable, "-m", "spatialscout_gym.cli.main", "evaluate",
            "--agent", "origin", "--scenes", "procedural:1", "--seeds", f"0:{SEEDS}", "--resolution", "32",
            "--out", str(out), "--no-progress", *extra]


def results(out: Path) -> dict[str, dict]:
    found = {}
    for p in out.glob("procedural_1/seed_*/result.json"):
        try:
            found[p.parent.name] = json.loads(p.read_text())
        except (OSError, ValueError):
            continue
    return found


def files_of(run_dir: Path) -> dict[str, bytes]:
    return {p.relative_to(run_dir).as_posix(): p.read_bytes() for p in sorted(run_dir.rglob("*"))
            if p.is_file() and "attempts" not in p.relative_to(run_dir).parts}


def test_evaluation_across_hosts_survives_a_lost_host_and_matches_a_local_run(hosts, tmp_path):
    head, w1, w2 = hosts
    token = secrets.token_hex(16)
    temp = Path(f"/tmp/ss{secrets.token_hex(3)}")     # short: Ray's socket paths must stay under 108 bytes
    out, ref = tmp_path / "ev", tmp_path / "ref"
    out.mkdir()
    local_env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO), *filter(None, [os.environ.get("PYTHONPATH")])]),
                     OMP_NUM_THREADS="1")
    reference = subprocess.Popen([sys.executable, "-m", "spatialscout_gym.cli.main", "evaluate", "--agent", "origin",
                                  "--scenes", "procedural:1", "--seeds", f"0:{SEEDS}", "--resolution", "32",
                                  "--out", str(ref), "--no-progress"], env=local_env,
                                 stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        start_node(head, head, 0, token, temp, None, tmp_path / "head.log")   # no CPU: episodes go to the workers
        time.sleep(3)
        for w in (w1, w2):
            start_node(w, head, 1, token, temp, out, tmp_path / f"{w.name}.log")
        wait_for_cpus(head, token, 2)

        # a driver without the token: one line, exit 2, nothing written
        bare = dict(node_env(head, None), HOME=str(tmp_path / "home"))
        refused = subprocess.run(evaluate_cmd(head, tmp_path / "refused", "--backend", "ray", "--ray-address",
                                              f"{head.ip}:6379"), env=bare, capture_output=True, text=True, timeout=120)
        assert refused.returncode == 2, refused.stderr[-2000:]
        lines = [ln for ln in refused.stderr.splitlines() if ln.strip() and "WARNING" not in ln]
        assert len(lines) == 1 and "token" in lines[0], refused.stderr[-2000:]
        assert not (tmp_path / "refused").exists()

        cmd = evaluate_cmd(head, out, "--backend", "ray", "--ray-address", f"{head.ip}:6379", "--workers", "2",
                           "--ray-timeout", "300")
        proc = subprocess.Popen(cmd, env=node_env(head, token), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True, start_new_session=True)
        killed_at = None
        try:
            deadline = time.monotonic() + EVAL_BOUND_S
            while proc.poll() is None and time.monotonic() < deadline:
                if killed_at is None and w1.running_an_episode():
                    # the host is lost during its first episode, with most of the work still to give out:
                    # an episode given to the replacement actor (no CPU left for it) would never end
                    killed_at = len(results(out))
                    w1.kill()
                time.sleep(0.5)
            assert proc.poll() is not None, (f"the evaluation did not finish within {EVAL_BOUND_S} s after a worker "
                                             "host was lost")
            stdout, stderr = proc.communicate(timeout=30)
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=30)
        assert killed_at is not None and killed_at < SEEDS - 2, f"w1 ran no episode before the end: {stdout}"
        assert f"{SEEDS} episodes: 0 already done, {SEEDS - 1} run now, 1 failed" in stdout, stdout + stderr[-2000:]
        assert proc.returncode == 1
        assert "Traceback" not in stderr, stderr[-3000:]

        rerun = subprocess.run(cmd, env=node_env(head, token), capture_output=True, text=True, timeout=EVAL_BOUND_S)
        assert rerun.returncode == 0, rerun.stdout + rerun.stderr[-2000:]
        assert f"{SEEDS} episodes: {SEEDS - 1} already done, 1 run now, 0 failed" in rerun.stdout
        assert "7 attempts, 1 failed" in rerun.stdout

        _, err = reference.communicate(timeout=EVAL_BOUND_S)
        assert reference.returncode == 0, err[-2000:]
    finally:
        if reference.poll() is None:
            reference.kill()
            reference.wait(timeout=30)
        shutil.rmtree(temp, ignore_errors=True)

    # nothing lost, nothing twice: one run directory per seed, no notes or temp dirs left
    names = sorted(p.name for p in (out / "procedural_1").iterdir())
    assert names == [f"seed_{k}" for k in range(SEEDS)], names
    got = results(out)
    crashed = [k for k, r in got.items() if r["attempt"] == 2]
    assert len(crashed) == 1 and all(r["attempt"] == 1 for k, r in got.items() if k not in crashed)
    note = json.loads((out / "procedural_1" / crashed[0] / "attempts" / "01" / "failed.json").read_text())
    assert "WorkerCrash" in note["error"] and f" at {w1.ip}" in note["error"], note   # it ran on w1
    assert {r["node"]["address"] for r in got.values()} == {w2.ip}      # the rest, and the redo, on w2
    for k in range(SEEDS):
        a, b = files_of(ref / "procedural_1" / f"seed_{k}"), files_of(out / "procedural_1" / f"seed_{k}")
        assert sorted(a) == sorted(b), k
        for name in a:
            if name == "result.json":
                x, y = json.loads(a[name]), json.loads(b[name])
                y.pop("node")
                assert {**x, "attempt": 0} == {**y, "attempt": 0}, k
            else:
                assert a[name] == b[name], (k, name)


def test_a_host_whose_scratch_disk_is_full_draws_no_more_episodes_and_each_failure_names_it(hosts, tmp_path):
    """w1's scratch disk is full: its episodes fail with ``[Errno 28]``, each failure names w1 (the
    summary and ``failed.json``), and after two it draws no more (one line); w2 runs the rest.

    w2 joins only once w1 is barred: with both up from the start, a w1 slow to place its actor
    could fail one episode while w2 ran the other five, and the bar would never be reached."""
    head, w1, w2 = hosts
    token = secrets.token_hex(16)
    temp = Path(f"/tmp/ss{secrets.token_hex(3)}")     # short: Ray's socket paths must stay under 108 bytes
    out = tmp_path / "ev"
    out.mkdir()
    out_lines: list[str] = []
    err_lines: list[str] = []
    try:
        start_node(head, head, 0, token, temp, None, tmp_path / "head.log")   # no CPU: episodes go to the workers
        time.sleep(3)
        start_node(w1, head, 1, token, temp, out, tmp_path / "w1.log", full_scratch=tmp_path / "scratch")
        wait_for_cpus(head, token, 1)
        proc = subprocess.Popen(evaluate_cmd(head, out, "--backend", "ray", "--ray-address", f"{head.ip}:6379",
                                             "--workers", "1", "--ray-timeout", "300"),
                                env=node_env(head, token), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                start_new_session=True)
        readers = [threading.Thread(target=lines.extend, args=(pipe,), daemon=True)
                   for lines, pipe in ((out_lines, proc.stdout), (err_lines, proc.stderr))]
        for r in readers:
            r.start()
        try:
            deadline, w2_started = time.monotonic() + EVAL_BOUND_S, False
            while proc.poll() is None and time.monotonic() < deadline:
                if not w2_started and any("draws no more episodes" in ln for ln in list(err_lines)):
                    # the replacement actor cannot be placed until a node with a CPU joins
                    start_node(w2, head, 1, token, temp, out, tmp_path / "w2.log")
                    w2_started = True
                time.sleep(0.5)
            assert proc.poll() is not None, f"the evaluation did not finish within {EVAL_BOUND_S} s: {err_lines[-20:]}"
            for r in readers:
                r.join(timeout=30)
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=30)
    finally:
        shutil.rmtree(temp, ignore_errors=True)
    done = subprocess.CompletedProcess(proc.args, proc.returncode, "".join(out_lines), "".join(err_lines))
    assert w2_started, done.stdout + done.stderr[-2000:]
    failed = [ln for ln in done.stdout.splitlines() if ln.startswith("  failed ")]
    assert f"{SEEDS} episodes: 0 already done, {SEEDS - 2} run now, 2 failed" in done.stdout, done.stdout + done.stderr[-2000:]
    assert len(failed) == 2 and all("[Errno 28]" in ln and f" at {w1.ip}" in ln for ln in failed), failed
    barred = [ln for ln in done.stderr.splitlines() if "draws no more episodes" in ln]
    assert len(barred) == 1 and f" at {w1.ip}: 2 episodes failed with a disk error" in barred[0], done.stderr[-2000:]
    notes = [json.loads(p.read_text()) for p in out.glob("procedural_1/seed_*.failed.json")]
    assert len(notes) == 2 and all(f" at {w1.ip}" in n["error"] for n in notes), notes
    assert {r["node"]["address"] for r in results(out).values()} == {w2.ip} and len(results(out)) == SEEDS - 2
