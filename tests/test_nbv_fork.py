"""Gymnasium's ``AsyncVectorEnv`` with its default start method (fork, on Linux) while an NBV env is
open in the parent: the forked worker would hang in the inherited Vulkan context, so it fails at
once with one line naming ``context="spawn"`` (``render/sapien_renderer.py``)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

# slow: a fresh interpreter imports the package and builds the parent's renderer (10-50 s on 2 cores)
pytestmark = [pytest.mark.render, pytest.mark.slow, pytest.mark.skipif(not sys.platform.startswith("linux"),
                                                      reason="fork is the default start method on Linux")]

REPO = Path(__file__).resolve().parents[1]

SCRIPT = textwrap.dedent("""
    import time
    import gymnasium as gym
    import spatialscout_gym  # noqa: F401

    def make():
        return gym.make("SpatialScout/NBV-v1", scene="Kitchen_01", resolution=16, obs_size=16, image_budget=3)

    env = make()
    env.reset(seed=0)                   # the parent's renderer is open (and has drawn)
    t0 = time.monotonic()
    try:
        venv = gym.vector.AsyncVectorEnv([make])        # default context: fork
        venv.reset(seed=0)
        print("completed", flush=True)
        venv.close()
    except Exception as exc:
        print(f"failed {type(exc).__name__}", flush=True)
    print(f"seconds {time.monotonic() - t0:.1f}", flush=True)
    env.close()
""")


def test_async_vector_env_forked_from_an_open_nbv_env_fails_at_once_in_one_line():
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO), *filter(None, [os.environ.get("PYTHONPATH")])]),
               OMP_NUM_THREADS="1")
    proc = subprocess.Popen([sys.executable, "-c", SCRIPT], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=env, cwd=REPO, start_new_session=True)
    try:
        stdout, stderr = proc.communicate(timeout=120)    # process start and the parent's env included
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)              # the hung worker too
        proc.communicate()
        pytest.fail("AsyncVectorEnv forked from an open NBV env hung")
    done = subprocess.CompletedProcess(proc.args, proc.returncode, stdout, stderr)
    out = done.stdout.splitlines()
    assert done.returncode == 0 and len(out) == 2, (done.stdout, done.stderr[-2000:])
    if out[0] != "completed":
        said = [line for line in done.stderr.splitlines() if 'context="spawn"' in line]
        assert len(said) == 1 and "forked while its parent had a SAPIEN renderer open" in said[0], done.stderr
        assert "Traceback" not in done.stderr, done.stderr        # the worker's line alone, no traceback
