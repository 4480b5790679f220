"""Joining a Ray cluster that cannot be joined is one line and exit 2, and leaves nothing behind
(``cluster/join.py``); ``evaluate --help`` names the address forms."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("ray")

from spatialscout_gym.cluster.join import join_ray
from spatialscout_gym.core.errors import ConfigError

pytestmark = pytest.mark.xdist_group("ray")   # Ray and the shared RL recipes: one worker (tests/conftest.py)

REPO = Path(__file__).resolve().parents[1]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_an_address_nothing_answers_at_is_one_line_and_writes_nothing(tmp_path):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO), *filter(None, [os.environ.get("PYTHONPATH")])]))
    address = f"127.0.0.1:{free_port()}"
    r = subprocess.run([sys.executable, "-m", "spatialscout_gym.cli.main", "evaluate", "--agent", "origin",
                        "--scenes", "procedural:1", "--backend", "ray", "--ray-address", address,
                        "--out", str(tmp_path / "ev"), "--no-progress"],
                       env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 2
    assert r.stderr.strip().count("\n") == 0 and f"--ray-address {address}: nothing answers there" in r.stderr
    assert not (tmp_path / "ev").exists()


@pytest.mark.parametrize("raised, said", [
    ("version", "Version mismatch: The cluster was started with: Ray: 2.59.0"),
    ("auth", "the cluster refused the token (this process's token: "),
])
def test_a_version_mismatch_or_a_refused_token_is_one_line(monkeypatch, raised, said):
    import ray
    from ray.exceptions import AuthenticationError

    def refuse(**kwargs):
        if raised == "version":
            raise RuntimeError("Version mismatch: The cluster was started with:\n    Ray: 2.59.0\n    Python: 3.11.7\n"
                               "This process on node 10.0.0.2 was started with:\n    Ray: 2.60.0\n    Python: 3.11.7\n")
        raise AuthenticationError("Token authentication is enabled but no authentication token was found")

    monkeypatch.setattr(ray, "init", refuse)
    with pytest.raises(ConfigError) as info:
        join_ray("auto")
    assert said in str(info.value) and "\n" not in str(info.value)


RAY_REFUSAL_LOG = ("[2026-12-04 09:00:00,000 E 4242 4242] gcs_client.cc:106: Failed to get cluster ID from GCS "
                   "server: Unauthenticated: InvalidAuthToken: the token provided does not match the cluster's\n")


@pytest.mark.parametrize("token", ["wrong", None])
def test_a_refused_token_is_said_as_such_and_rays_retry_lines_stay_off_the_terminal(monkeypatch, capfd, token):
    """Ray's client logs a score of ``InvalidAuthToken`` retries on file descriptor 2 (its C++
    logger), then raises a ``ConnectionError`` that never names the token; the one line says it."""
    import ray
    monkeypatch.setenv("HOME", "/nonexistent")
    monkeypatch.delenv("RAY_AUTH_TOKEN_PATH", raising=False)
    if token is None:
        monkeypatch.delenv("RAY_AUTH_TOKEN", raising=False)
    else:
        monkeypatch.setenv("RAY_AUTH_TOKEN", token)

    def refuse(**kwargs):
        for _ in range(20):
            os.write(2, RAY_REFUSAL_LOG.encode())
        raise ConnectionError("Failed to connect to GCS at address 127.0.0.1:6379 within 5 seconds")

    monkeypatch.setattr(ray, "init", refuse)
    with pytest.raises(ConfigError) as info:
        join_ray("auto")
    said = str(info.value)
    assert "the cluster refused the token" in said and "\n" not in said
    assert ("RAY_AUTH_TOKEN)" in said) if token else ("none: RAY_AUTH_TOKEN is unset" in said)
    out, err = capfd.readouterr()
    assert "InvalidAuthToken" not in out + err and "gcs_client" not in err


def test_a_head_that_does_not_answer_is_still_cannot_join(monkeypatch, capfd):
    import ray

    def unreachable(**kwargs):
        os.write(2, b"[2026-12-04 09:00:00,000 W 4242 4242] rpc_client.h:153: Failed to connect to GCS\n")
        raise ConnectionError("Failed to connect to GCS at address 127.0.0.1:6379 within 5 seconds")

    monkeypatch.setattr(ray, "init", unreachable)
    with pytest.raises(ConfigError, match="cannot join that Ray cluster") as info:
        join_ray("auto")
    assert "token" not in str(info.value).split(";")[0] and "rpc_client" not in capfd.readouterr().err


def test_evaluate_help_lists_the_address_forms():
    from spatialscout_gym.cli.main import build_parser
    text = " ".join(build_parser()._subparsers._group_actions[0].choices["evaluate"].format_help().split())
    for form in ("auto", "HOST:PORT", "ray://HOST:10001", "RAY_AUTH_TOKEN", "--ray-timeout"):
        assert form in text, form


def recipe_head_command() -> list[str]:
    """docs/rllib.md's ``ray start --head ... --include-dashboard=true`` line, as written."""
    import shlex
    text = (REPO / "docs" / "rllib.md").read_text()
    [line] = [ln.strip() for ln in text.splitlines() if ln.strip().startswith("ray start --head")
              and "--include-dashboard=true" in ln]
    return shlex.split(line.split("#")[0])


@pytest.mark.slow
def test_the_dashboard_recipe_of_the_rllib_doc_runs_with_the_ray_extra(tmp_path):
    """The recipe's commands (token, head with its dashboard) with what ``pip install
    spatialscout-gym[ray]`` installs: the dashboard answers on 127.0.0.1. Ports are free ones, the
    node on loopback; the head is stopped by its own processes' ids (``ray stop`` ends every Ray on
    the machine, other users' runs included)."""
    import shutil
    import signal
    import tempfile
    import time
    import urllib.error
    import urllib.request

    import psutil
    ray_cli = str(Path(sys.executable).with_name("ray"))
    temp = tempfile.mkdtemp(prefix="ray", dir="/tmp")        # short: Ray's socket paths have a limit
    env = dict(os.environ, HOME=str(tmp_path), RAY_AUTH_MODE="token", RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER="0",
               RAY_USAGE_STATS_ENABLED="0")
    env.pop("RAY_AUTH_TOKEN", None)
    subprocess.run([ray_cli, "get-auth-token", "--generate"], env=env, check=True, capture_output=True, timeout=60)
    token_file = tmp_path / ".ray" / "auth_token"
    token_file.chmod(0o600)
    dashboard = free_port()
    command = recipe_head_command()
    assert command[:3] == ["ray", "start", "--head"] and "--dashboard-host" in command
    head = [ray_cli, *command[1:], "--port", str(free_port()), "--num-cpus", "1", "--dashboard-port", str(dashboard),
            "--node-ip-address", "127.0.0.1", "--temp-dir", temp, "--disable-usage-stats",
            "--ray-client-server-port", str(free_port()), "--dashboard-agent-listen-port", str(free_port()),
            "--min-worker-port", "0", "--max-worker-port", "0"]
    try:
        started = subprocess.run(head, env=env, capture_output=True, text=True, timeout=180)
        assert started.returncode == 0, (started.stdout + started.stderr)[-3000:]
        answer = None
        for _ in range(120):       # the dashboard comes up after `ray start` returns
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{dashboard}/api/version", timeout=5) as r:
                    answer = r.status
            except urllib.error.HTTPError as exc:     # it answered (token authentication may refuse us)
                answer = exc.code
            except OSError:
                time.sleep(0.5)
                continue
            break
        assert answer in (200, 401, 403), answer
    finally:
        # the recipe's `ray stop`, for this head only: its processes name its temp dir or ports
        # (and what those started: the agents rewrite their command lines with their titles)
        mine = {p.pid: p for p in psutil.process_iter(["cmdline"]) if temp in " ".join(p.info["cmdline"] or [])}
        for p in list(mine.values()):
            with contextlib.suppress(psutil.NoSuchProcess):
                mine.update((c.pid, c) for c in p.children(recursive=True))
        names = set()
        for p in mine.values():
            with contextlib.suppress(psutil.NoSuchProcess):
                names.add(p.name())
        for p in mine.values():
            with contextlib.suppress(psutil.NoSuchProcess):
                p.send_signal(signal.SIGKILL)
        gone, alive = psutil.wait_procs(list(mine.values()), timeout=10)
        shutil.rmtree(temp, ignore_errors=True)
    assert not alive and names >= {"gcs_server", "raylet", "ray::DashboardAgent"}, names
