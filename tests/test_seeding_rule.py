"""One seeding rule (``episode_rng``): ``benchmarks/nbv_results.py``'s cell for a scene equals
``spatialscout evaluate --seeds 0`` on that scene, and does not change when the script runs on a
subset of its scene list (real renders, 32 px, a sampling agent so the rng decides the episode)."""

from __future__ import annotations

import contextlib
import importlib.util
import io
import json
from pathlib import Path

import numpy as np
import pytest

from spatialscout_gym.cli.main import main
from spatialscout_gym.eval.running.runner import episode_rng

pytestmark = pytest.mark.render
ROOT = Path(__file__).resolve().parents[1]
SCENES = ["Kitchen_01", "Kitchen_02"]
V, RES = 6, 32


def _script():
    spec = importlib.util.spec_from_file_location("nbv_results", ROOT / "benchmarks" / "nbv_results.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_rule_is_the_seed_alone():
    a, b = episode_rng(7).integers(1 << 30, size=4), np.random.default_rng(7).integers(1 << 30, size=4)
    np.testing.assert_array_equal(a, b)


def test_a_scripts_cell_is_evaluates_cell_whatever_the_list(tmp_path):
    from spatialscout_gym.render.sapien_renderer import SapienRenderer
    from spatialscout_gym.scenes.catalog import scene_by_name
    m = _script()
    renderer = SapienRenderer(scene_by_name(SCENES[0]), RES, RES)
    try:
        both = m.evaluate("random-nbv", SCENES, seed=0, image_budget=V, resolution=RES, renderer=renderer,
                          walls=True)["per_scene"]
        alone = m.evaluate("random-nbv", SCENES[1:], seed=0, image_budget=V, resolution=RES, renderer=renderer,
                           walls=True)["per_scene"]
    finally:
        renderer.close()
    assert alone[SCENES[1]] == both[SCENES[1]]                 # the second scene's cell, with or without the first
    for scene in SCENES:
        printed = io.StringIO()
        out = tmp_path / scene
        with contextlib.redirect_stdout(printed), contextlib.redirect_stderr(printed):
            code = main(["evaluate", "--agent", "random-nbv", "--scenes", scene, "--seeds", "0", "--image-budget",
                         str(V), "--resolution", str(RES), "--out", str(out), "--no-progress"])
        assert code == 0, printed.getvalue()[-2000:]
        result = json.loads((out / scene / "seed_0" / "result.json").read_text())
        cell = both[scene]
        assert result["num_submitted"] == cell["M"]
        assert result["all"]["mean_iou"] == pytest.approx(float(np.mean(cell["iou"])), abs=1e-6)
