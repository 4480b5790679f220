"""``--backend ray`` on a local Ray instance gives the local backend's report."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fakes import FakeRenderer, small_scene
from spatialscout_gym.eval.running.evaluate import EvalSettings, evaluate

ray = pytest.importorskip("ray")   # the [ray] extra; installed in CI


pytestmark = pytest.mark.xdist_group("ray")   # Ray and the shared RL recipes: one worker (tests/conftest.py)

@pytest.mark.slow
def test_ray_backend_matches_local(tmp_path):
    scenes = []
    for k in range(3):
        p = tmp_path / f"fake-{k}.json"
        p.write_text(small_scene(32, 32, yaw_deg=15.0 * k, scene_id=f"fake-{k}").to_json())
        scenes.append(str(p))
    settings = EvalSettings("uniform-ball", 3, 10, 32)
    local = evaluate(tmp_path / "local", settings, scenes, seeds=2, workers=1, progress=False,
                     renderer_factory=FakeRenderer)
    tests_dir = str(Path(__file__).parent)   # Ray workers import the fake renderer from here
    ray.init(num_cpus=1, include_dashboard=False, log_to_driver=False,
             runtime_env={"env_vars": {"PYTHONPATH": tests_dir}})
    try:
        remote = evaluate(tmp_path / "ray", settings, scenes, seeds=2, workers=1, backend="ray",
                          max_concurrency=1, progress=False, renderer_factory=FakeRenderer)
    finally:
        ray.shutdown()
    assert remote.ran == 6 and not remote.failed
    for key in ("object_micro", "scene_macro", "scenes", "categories", "seeds", "counters", "scene_hashes"):
        assert getattr(remote.report, key) == getattr(local.report, key), key
    for k in range(3):
        for s in range(2):
            a = tmp_path / "local" / f"fake-{k}" / f"seed_{s}"
            b = tmp_path / "ray" / f"fake-{k}" / f"seed_{s}"
            shipped = json.loads((b / "result.json").read_text())
            node = shipped.pop("node")             # where it ran; the rest is the local run's
            assert len(node["id"]) == 56 and node["address"].count(".") == 3, node
            assert json.loads((a / "result.json").read_text()) == shipped
            assert (a / "trace.jsonl").read_bytes() == (b / "trace.jsonl").read_bytes()


@pytest.mark.slow
def test_more_workers_than_cpus_is_capped_and_finishes(tmp_path, capfd):
    """``--workers 3`` on a 2-CPU Ray: two actors run every episode (a third would never be placed),
    one line says so, and the run directories are written by the driver from what actors sent."""
    scenes = []
    for k in range(2):
        p = tmp_path / f"fake-{k}.json"
        p.write_text(small_scene(32, 32, yaw_deg=15.0 * k, scene_id=f"fake-{k}").to_json())
        scenes.append(str(p))
    tests_dir = str(Path(__file__).parent)
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False,
             runtime_env={"env_vars": {"PYTHONPATH": tests_dir}})
    try:
        summary = evaluate(tmp_path / "ray", EvalSettings("uniform-ball", 3, 10, 32), scenes, seeds=2, workers=3,
                           backend="ray", progress=False, renderer_factory=FakeRenderer, ray_timeout_s=300)
    finally:
        ray.shutdown()
    assert summary.ran == 4 and not summary.failed
    assert "--workers 3 is more than the Ray cluster's 2 CPUs: running 2 actors" in capfd.readouterr().err
    nodes = {json.loads(p.read_text())["node"]["id"] for p in (tmp_path / "ray").glob("*/seed_*/result.json")}
    assert len(nodes) == 1 and len(next(iter(nodes))) == 56


# ---------------------------------------------------------------------------------------------
# What a worker sends and where it fails: one local Ray for the tests below
# ---------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def one_cpu_ray():
    from spatialscout_gym.cluster.local_ray import init_local_ray, stop_local_ray
    init_local_ray(num_cpus=1, log_to_driver=False, runtime_env={"env_vars": {"PYTHONPATH": str(Path(__file__).parent)}})
    yield
    stop_local_ray()


def hostile_ship(task, state, execute):
    """A worker that runs the episode, then names files outside its run directory (seeds 0 and 1)
    or answers for another run directory (seed 2), as a hostile or broken worker could."""
    import dataclasses
    import hashlib

    from spatialscout_gym.eval.running.shipping import ship_task
    outcome = ship_task(task, state, execute)
    root = Path(task.run_dir).parents[2]           # the folder above --out
    if task.seed == 2:
        return dataclasses.replace(outcome, task=dataclasses.replace(task, run_dir=str(root / "victim" / "seed_0")))
    name = str(root / "absolute.txt") if task.seed == 0 else "../../../escaped.txt"
    run = dict(outcome.files.run, **{name: b"planted"})
    digests = {k: hashlib.sha256(v).hexdigest() for k, v in run.items()}
    return dataclasses.replace(outcome, files=dataclasses.replace(outcome.files, run=run, digests=digests))


def files_under(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.mark.slow
def test_a_hostile_worker_writes_and_deletes_nothing_outside_out(tmp_path, one_cpu_ray):
    from spatialscout_gym.eval.running.backends import RayBackend, Work
    from spatialscout_gym.eval.running.evaluate import WorkerState, crashed_outcome, execute_task, plan_tasks
    from spatialscout_gym.eval.running.shipping import land_outcome, prepare_task
    victim = tmp_path / "victim" / "seed_0"
    victim.mkdir(parents=True)
    (victim / "precious.txt").write_text("keep me")
    scene = tmp_path / "fake-0.json"
    scene.write_text(small_scene(32, 32, scene_id="fake-0").to_json())
    outside = files_under(tmp_path)
    tasks = plan_tasks(tmp_path / "ev", [str(scene)], [0, 1, 2])
    outcomes = []
    RayBackend(1).run(tasks, EvalSettings("uniform-ball", 3, 10, 32), outcomes.append,
                      work=Work(WorkerState, execute_task, crashed_outcome, prepare_task, hostile_ship, land_outcome),
                      renderer_factory=FakeRenderer)
    assert files_under(tmp_path) == {**outside, **{k: v for k, v in files_under(tmp_path).items() if k.startswith("ev/")}}
    assert (victim / "precious.txt").read_text() == "keep me" and sorted(files_under(tmp_path / "victim")) == ["seed_0/precious.txt"]
    assert sorted(o.task.seed for o in outcomes) == [0, 1, 2] and not any(o.ok for o in outcomes)
    for o in outcomes:
        assert "sent files the driver refused" in o.error and " at 127.0.0.1" in o.error, o.error
        assert not (Path(o.task.run_dir) / "result.json").exists()
        assert "refused" in json.loads(o.task.failed_file.read_text())["error"]


class FullDisk:
    """A renderer factory on a node whose scratch disk is full."""

    def __call__(self, spec, width=None, height=None):
        import errno
        import os
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


@pytest.mark.slow
def test_failures_name_their_node_and_a_node_with_two_disk_errors_draws_no_more(tmp_path, one_cpu_ray, capfd):
    from spatialscout_gym.core.errors import SpatialScoutError
    from spatialscout_gym.eval.running.backends import RayBackend, Work
    from spatialscout_gym.eval.running.evaluate import WorkerState, crashed_outcome, execute_task, plan_tasks
    from spatialscout_gym.eval.running.shipping import land_outcome, prepare_task, ship_task
    scene = tmp_path / "fake-0.json"
    scene.write_text(small_scene(32, 32, scene_id="fake-0").to_json())
    tasks = plan_tasks(tmp_path / "ev", [str(scene)], 5)
    outcomes = []
    with pytest.raises(SpatialScoutError, match="draws no more: 3 episodes not run"):
        RayBackend(1).run(tasks, EvalSettings("uniform-ball", 3, 10, 32), outcomes.append,
                          work=Work(WorkerState, execute_task, crashed_outcome, prepare_task, ship_task, land_outcome),
                          renderer_factory=FullDisk())
    [node] = [n["NodeID"] for n in ray.nodes() if n.get("Alive")]
    assert len(outcomes) == 2                                   # the node's third episode never started
    for o in outcomes:
        assert "[Errno 28]" in o.error and f"on node {node[:12]} at 127.0.0.1" in o.error, o.error
        note = json.loads(o.task.failed_file.read_text())
        assert note["node"]["id"] == node and f"on node {node[:12]}" in note["error"]
    assert not any(t.failed_file.exists() or Path(t.run_dir).exists() for t in tasks if t.seed >= 2)
    err = [ln for ln in capfd.readouterr().err.splitlines() if "draws no more" in ln]
    assert len(err) == 1 and f"node {node[:12]} at 127.0.0.1: 2 episodes failed with a disk error" in err[0], err


class FakeRef:
    def __init__(self, value=None, ready=True):
        self.value, self.ready = value, ready


class FakeMethod:
    def __init__(self, make):
        self.make = make

    def options(self, **kwargs):
        return self

    def remote(self, *args):
        return self.make(*args)


class FakeActor:
    def __init__(self, node):
        self.place = FakeMethod(lambda: FakeRef(node))
        self.run = FakeMethod(lambda task: FakeRef(ready=False))    # an episode that keeps running


class FakeRayAfterTheHead:
    """The parts of ``ray`` the backend uses, on a cluster whose head stops answering after the
    first read of the node table (``ray.nodes()`` then blocks, as Ray's does); episodes run on
    worker nodes that are still up, so their results never come."""

    exceptions = ray.exceptions

    def __init__(self):
        import threading
        self.reads, self.killed, self.forever = 0, [], threading.Event()
        self.nodes_up = [{"NodeID": f"{k:02d}" * 28, "NodeManagerAddress": f"127.0.0.{k}", "Alive": True} for k in (2, 3)]

    def cluster_resources(self):
        return {"CPU": 2}

    def remote(self, **options):
        nodes = iter(self.nodes_up)
        return lambda cls: FakeMethod(lambda *args: FakeActor({"id": (n := next(nodes))["NodeID"],
                                                                 "address": n["NodeManagerAddress"]}))

    def wait(self, refs, num_returns=1, timeout=None):
        return [r for r in refs if r.ready][:num_returns], [r for r in refs if not r.ready]

    def get(self, ref):
        return ref.value

    def kill(self, actor):
        self.killed.append(actor)

    def nodes(self):
        self.reads += 1
        if self.reads > 1:      # Ray's client retries for a minute, then the driver exits
            self.forever.wait(20)
            raise ray.exceptions.RpcError("Timed out while waiting for GCS to become available.")
        return self.nodes_up

    def get_runtime_context(self):
        import types
        return types.SimpleNamespace(gcs_address="127.0.0.1:6379")


def test_a_head_that_stops_answering_ends_the_run_with_the_running_episodes_recorded(tmp_path, monkeypatch):
    from spatialscout_gym.eval.running import backends
    from spatialscout_gym.eval.running.evaluate import WorkerState, crashed_outcome, execute_task, plan_tasks
    monkeypatch.setattr(backends, "HEAD_LOST_S", 0.5)
    monkeypatch.setattr(backends, "NODE_POLL_S", 0.05)
    fake = FakeRayAfterTheHead()
    tasks = plan_tasks(tmp_path / "ev", ["procedural:1"], 3)
    outcomes = []
    backend = backends.RayBackend(2, "127.0.0.1:6379", timeout_s=600)
    with pytest.raises(backends.RayHeadLostError) as info:
        backend._run(fake, tasks, EvalSettings("uniform-ball", 3, 10, 32), outcomes.append,
                     backends.Work(WorkerState, execute_task, crashed_outcome), None, None)
    fake.forever.set()
    said = str(info.value)
    assert "lost the Ray cluster's head at 127.0.0.1:6379: it answered nothing for 0.5 s" in said and "\n" not in said
    assert "1 not started" in said and "rerun the same command to resume" in said
    assert sorted(o.task.seed for o in outcomes) == [0, 1] and not any(o.ok for o in outcomes)
    for o, node in zip(sorted(outcomes, key=lambda o: o.task.seed), ("0202020202020", "0303030303030")):
        note = json.loads(o.task.failed_file.read_text())
        assert note["error"] == o.error and "the cluster's head at 127.0.0.1:6379 stopped answering" in o.error
        assert f"on node {node[:12]} at 127.0.0." in o.error, o.error
    assert not fake.killed and backend._head_lost         # no call that would wait for the lost head
    assert not tasks[2].failed_file.exists()
