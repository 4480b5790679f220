"""One seeding rule (``episode_rng``): ``benchmarks/nbv_results.py``'s per-episode cell for a scene
(run on a list of scenes) equals ``spatialscout evaluate --seeds 0`` on that scene alone (real
renders, 32 px, sampling agents so the rng decides the episode)."""

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


def _evaluate(agent: str, scene: str, out: Path) -> dict:
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed), contextlib.redirect_stderr(printed):
        code = main(["evaluate", "--agent", agent, "--scenes", scene, "--seeds", "0", "--image-budget", str(V),
                     "--resolution", str(RES), "--out", str(out), "--no-progress"])
    assert code == 0, printed.getvalue()[-2000:]
    return json.loads((out / scene / "seed_0" / "result.json").read_text())


def test_the_scripts_cells_are_evaluates_cells(tmp_path):
    """The script's JSON cell of an (agent, scene, seed 0) is what ``spatialscout evaluate --seeds 0``
    on that scene alone writes, exactly: a sampling baseline and the sampling NBV-v3 policy."""
    agents = ["random-nbv", "ppo:models/nbv_ppo_v3"]
    table = tmp_path / "table.json"
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed), contextlib.redirect_stderr(printed):
        code = _script().main(["--scenes", str(len(SCENES)), "--image-budget", str(V), "--resolution", str(RES),
                               "--agents", *agents, "--seeds", "0", "--evals", str(tmp_path / "evals"),
                               "--out", str(table), "--no-progress", "--resamples", "99"])
    assert code == 0, printed.getvalue()[-2000:]
    cells = {(c["agent"], c["scene"], c["seed"]): c for c in json.loads(table.read_text())["cells"]}
    assert set(cells) == {(a, s, 0) for a in agents for s in SCENES}
    scene = SCENES[1]      # second in the script's list, alone in evaluate's
    for agent in agents:
        result = _evaluate(agent, scene, tmp_path / agent.replace("/", "_").replace(":", "_"))
        cell = cells[(agent, scene, 0)]
        explored = result["nbv"]["exploration"]
        assert (cell["coverage"], cell["all_mean_iou"], cell["submitted_mean_iou"], cell["num_submitted"],
                cell["images_used"], cell["blocked_moves"], cell["path_length_m"], cell["env_id"]) == \
            (result["coverage"], result["all"]["mean_iou"], result["submitted"]["mean_iou"],
             result["num_submitted"], result["counters"]["images_used"], explored["blocked_moves"],
             explored["path_length_m"], result["nbv"]["env_id"]), (agent, scene)
        assert cell["mapper"] == "oracle" and float(np.mean(cell["iou"])) == pytest.approx(cell["all_mean_iou"])
