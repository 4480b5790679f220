"""Joining a Ray cluster that cannot be joined is one line and exit 2, and leaves nothing behind
(``cluster/join.py``); ``evaluate --help`` names the address forms."""

from __future__ import annotations

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
    ("auth", "the cluster refused this process's token"),
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


def test_evaluate_help_lists_the_address_forms():
    from spatialscout_gym.cli.main import build_parser
    text = " ".join(build_parser()._subparsers._group_actions[0].choices["evaluate"].format_help().split())
    for form in ("auto", "HOST:PORT", "ray://HOST:10001", "RAY_AUTH_TOKEN", "--ray-timeout"):
        assert form in text, form
