"""Journey: train a next-best-view policy with a recipe, evaluate it as an agent, and compare it with
the ``frontier-nbv`` baseline (docs/rl.md, docs/rllib.md, README "Train a next-best-view policy").

    python examples/sb3_ppo.py ...   (or examples/rllib_ppo.py ...)
    spatialscout evaluate --agent ppo:runs/sb3_ppo/model.zip --scenes Kitchen_01 --out runs/eval_sb3
    spatialscout evaluate --agent frontier-nbv --scenes Kitchen_01 --image-budget V --resolution R --out runs/frontier
    spatialscout compare runs/frontier runs/eval_sb3

The recipes are trained once per session at their smallest sizes (tests/rl_recipes_trained.py,
shared with tests/test_examples.py and tests/test_example_rllib_ppo.py), as is the ``frontier-nbv``
run. ``evaluate`` adopts the policy's image budget and resolution with no other flag; ``compare``
takes the two runs with no ``--force`` and shows the scene's scores as each run's ``result.json``
holds them. (``train-nbv --backend rllib`` walks the same path in tests/test_rllib_train.py.)"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from rl_recipes_trained import IMAGE_BUDGET, RESOLUTION, SCENE, frontier_reference, rllib_recipe, sb3_recipe
from spatialscout_gym.cli.main import main

pytestmark = [pytest.mark.render, pytest.mark.slow, pytest.mark.xdist_group("ray")]


def _evaluate_and_compare(agent: str, out: Path, reference: Path, capsys) -> str:
    """``evaluate --agent AGENT`` with no settings flag, then ``compare REFERENCE OUT``; what a user
    checks: the settings adopted, the episode finished, and the comparison's figures."""
    capsys.readouterr()
    assert main(["evaluate", "--agent", agent, "--scenes", SCENE, "--out", str(out), "--no-progress"]) == 0
    settings = json.loads((out / "evaluate.json").read_text())
    assert (settings["image_budget"], settings["resolution"]) == (IMAGE_BUDGET, RESOLUTION)  # from the policy
    report = json.loads((out / "report.json").read_text())
    assert report["episodes"]["completed"] == 1 and report["episodes"]["end_reasons"] == {"finish_mapping": 1}
    capsys.readouterr()

    assert main(["compare", str(reference), str(out)]) == 0
    text = capsys.readouterr().out
    assert re.findall(r"^## Paired: (\S+) - (\S+) on 1 shared", text, re.M) == [(out.name, reference.name)], text
    a, b = (json.loads((d / SCENE / "seed_0" / "result.json").read_text())["all"]["mean_iou"] for d in (reference, out))
    row = f"| {SCENE} | 1 | {100 * a:.2f} | {100 * b:.2f} | {round(100 * (b - a), 2) + 0.0:+.2f} |"
    assert row in text.splitlines(), (row, text)
    return text


def test_sb3_recipe_policy_is_evaluated_and_compared_with_frontier_nbv(tmp_path_factory, tmp_path, capsys):
    trained = sb3_recipe(tmp_path_factory)
    reference = frontier_reference(tmp_path_factory)
    _evaluate_and_compare(f"ppo:{trained.saved}", tmp_path / "sb3-ppo", reference, capsys)


def test_rllib_recipe_policy_is_evaluated_and_compared_with_frontier_nbv(tmp_path_factory, tmp_path, capsys):
    pytest.importorskip("ray.rllib", reason="needs the ray extra with RLlib")
    trained = rllib_recipe(tmp_path_factory)
    reference = frontier_reference(tmp_path_factory)
    _evaluate_and_compare(f"rllib:{trained.saved}", tmp_path / "rllib-ppo", reference, capsys)
