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
        assert remote.report[key] == local.report[key], key
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
