"""``kill -9`` of a multi-process command leaves no process behind: ``evaluate --max-concurrency``
(its pool workers, the ``multiprocessing`` manager holding the semaphore, the resource tracker) and
the NBV worker vector env. Each test starts the command in its own process, waits until its
helper processes exist, kills it with ``SIGKILL`` and checks with psutil that every descendant is
gone within 10 s."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import psutil
import pytest

REPO = Path(__file__).resolve().parents[1]
GRACE_S = 10.0


def _env() -> dict:
    return dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO), str(REPO / "tests"),
                                                        os.environ.get("PYTHONPATH", "")]))


def _kill_and_wait_for_descendants(proc: subprocess.Popen, min_children: int, what: str) -> None:
    parent = psutil.Process(proc.pid)
    deadline = time.monotonic() + 120
    kids: list[psutil.Process] = []
    while time.monotonic() < deadline:
        assert proc.poll() is None, f"{what} ended before it was killed:\n{proc.stderr.read()}"
        kids = parent.children(recursive=True)
        if len(kids) >= min_children:
            break
        time.sleep(0.2)
    assert len(kids) >= min_children, f"{what} started {len(kids)} helper processes, expected {min_children}"
    time.sleep(2.0)          # let the helpers get into their work
    kids = parent.children(recursive=True)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(10)
    gone, alive = psutil.wait_procs(kids, timeout=GRACE_S)
    survivors = [f"{p.pid} {' '.join(p.cmdline())[:120]}" for p in alive if p.is_running()
                 and p.status() != psutil.STATUS_ZOMBIE]
    for p in alive:          # do not leave them to the next test
        try:
            p.kill()
        except psutil.NoSuchProcess:
            pass
    assert not survivors, f"alive {GRACE_S:.0f} s after kill -9 of {what}: {survivors}"


SLOW_EVALUATE = textwrap.dedent("""
    import sys, time
    from pathlib import Path
    from fakes import FakeRenderer, small_scene
    from spatialscout_gym.eval.running.evaluate import EvalSettings, evaluate

    class SlowRenderer(FakeRenderer):
        # a worker's renderer that takes minutes to start: the workers are busy when killed
        def __init__(self, *a, **k):
            time.sleep(300)
            super().__init__(*a, **k)

    if __name__ == "__main__":
        tmp = Path(sys.argv[1])
        scenes = []
        for k in range(2):
            p = tmp / f"fake-{k}.json"
            p.write_text(small_scene(32, 32, scene_id=f"fake-{k}").to_json())
            scenes.append(str(p))
        evaluate(tmp / "E", EvalSettings("uniform-ball", 5, 20, 32), scenes, seeds=2, workers=2,
                 progress=False, max_concurrency=2, renderer_factory=SlowRenderer)
""")


def test_kill_9_of_evaluate_with_max_concurrency_leaves_no_process(tmp_path):
    script = tmp_path / "slow_evaluate.py"
    script.write_text(SLOW_EVALUATE)
    proc = subprocess.Popen([sys.executable, str(script), str(tmp_path)], env=_env(), cwd=tmp_path,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        # resource tracker + manager + 2 pool workers
        _kill_and_wait_for_descendants(proc, 4, "evaluate --workers 2 --max-concurrency 2")
    finally:
        if proc.poll() is None:
            proc.kill()


@pytest.mark.render
def test_kill_9_of_the_cli_evaluate_with_max_concurrency_leaves_no_process(tmp_path):
    proc = subprocess.Popen([sys.executable, "-m", "spatialscout_gym.cli.main", "evaluate", "--agent", "uniform-ball",
                             "--scenes", "procedural:1", "procedural:2", "--seeds", "0", "1", "--workers", "2",
                             "--max-concurrency", "2", "--resolution", "32", "--out", str(tmp_path / "E"),
                             "--no-progress"], env=_env(), cwd=REPO,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        _kill_and_wait_for_descendants(proc, 4, "spatialscout evaluate --max-concurrency 2")
    finally:
        if proc.poll() is None:
            proc.kill()


NBV = textwrap.dedent("""
    import time
    import gymnasium as gym
    import spatialscout_gym  # noqa: F401
    from render_fixtures import render_device_kwargs

    if __name__ == "__main__":
        venv = gym.make_vec("SpatialScout/NBV-v0", num_envs=2, vectorization_mode="vector_entry_point",
                            num_workers=2, resolution=32, obs_size=36, image_budget=4, **render_device_kwargs())
        venv.reset(seed=0)
        print("ready", flush=True)
        while True:
            venv.step(venv.action_space.sample())
""")


@pytest.mark.render
@pytest.mark.parametrize("when", ["starting", "stepping"])
def test_kill_9_of_the_nbv_worker_env_parent_leaves_no_worker(tmp_path, when):
    script = tmp_path / "nbv_parent.py"
    script.write_text(NBV)
    proc = subprocess.Popen([sys.executable, str(script)], env=_env(), cwd=tmp_path,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        if when == "stepping":
            assert proc.stdout.readline().strip() == "ready", proc.stderr.read()
        # 2 workers, killed while they build their renderers (seconds on a CPU) or while they step
        _kill_and_wait_for_descendants(proc, 2, f"a process holding an NBV worker env ({when})")
    finally:
        if proc.poll() is None:
            proc.kill()
