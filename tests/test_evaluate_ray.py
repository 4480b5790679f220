"""``--backend ray`` on a local Ray instance gives the local backend's report."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fakes import FakeRenderer, small_scene
from spatialscout_gym.eval.running.evaluate import EvalSettings, evaluate

ray = pytest.importorskip("ray")   # the [ray] extra; installed in CI


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
            assert json.loads((a / "result.json").read_text()) == json.loads((b / "result.json").read_text())
            assert (a / "trace.jsonl").read_bytes() == (b / "trace.jsonl").read_bytes()
