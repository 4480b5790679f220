"""``examples/rllib_ppo.py``: RLlib PPO with a convolutional encoder on NBV-v1's image trains for a
few hundred steps, its checkpoint holds the trained policy and its NBV settings, and the RLModule
alone plays a greedy episode on a catalog scene. The recipe is trained once per session
(tests/rl_recipes_trained.py) and shared with the RL journey, which runs it with ``spatialscout
evaluate --agent rllib:DIR``."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("ray.rllib", reason="needs the ray extra with RLlib")

from rl_recipes_trained import IMAGE_BUDGET, RESOLUTION, rllib_recipe

pytestmark = [pytest.mark.render, pytest.mark.slow, pytest.mark.xdist_group("ray")]


def test_rllib_ppo_example_trains_a_cnn_policy_and_plays_it(tmp_path_factory):
    from torch import nn
    trained = rllib_recipe(tmp_path_factory)   # 2 iterations, 2 envs x 64 steps, V = 4, 36 px
    out, printed = trained.returned, trained.printed
    assert out["steps"] == 256 and "iteration 2: 256 env steps" in printed      # 2 x (64 steps x 2 envs)
    module = out["module"]
    # a convolutional encoder on the channel-first image, not an MLP on the flattened pixels
    convs = [m for m in module.modules() if isinstance(m, nn.Conv2d)]
    assert len(convs) == 3 and convs[0].in_channels == 3
    assert module.observation_space["image"].shape == (3, RESOLUTION, RESOLUTION)
    assert all(m.in_features != 3 * RESOLUTION * RESOLUTION for m in module.modules() if isinstance(m, nn.Linear))
    # the checkpoint holds the trained policy: the heads' output biases start at zero, PPO moved them
    assert module.pi[-1].bias.abs().max() > 0 and module.vf[-1].bias.abs().max() > 0
    assert (out["checkpoint"] / "learner_group" / "learner" / "rl_module" / "default_policy").is_dir()
    assert 0.0 < out["coverage"] <= 1.0 and "greedy episode on Kitchen_01: coverage" in printed
    # the checkpoint holds the NBV settings (the RL journey evaluates it with `--agent rllib:DIR`)
    settings = json.loads(next(trained.saved.rglob("nbv_config.json")).read_text())
    assert (settings["image_budget"], settings["resolution"]) == (IMAGE_BUDGET, RESOLUTION)
