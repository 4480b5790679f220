"""The RL recipes in examples/ train on ``SpatialScout/NBV-v2`` for a few hundred steps (real
SAPIEN renders, small settings) and leave a policy that loads and acts, with its NBV settings
beside it (`nbv_config.json`). The SB3 recipe is trained once per session (tests/rl_recipes_trained.py)
and shared with the RL journey, which evaluates it with `spatialscout evaluate --agent ppo:PATH`."""

from __future__ import annotations

import json
import math

import gymnasium as gym
import numpy as np
import pytest

import spatialscout_gym  # noqa: F401  (registers the ids)
from rl_recipes_trained import IMAGE_BUDGET, RESOLUTION, load_example, sb3_recipe

pytestmark = [pytest.mark.render, pytest.mark.xdist_group("ray")]   # Ray and the shared RL recipes: one worker (tests/conftest.py)


def test_cleanrl_ppo_trains_counts_its_steps_and_saves_an_agent_that_acts(tmp_path):
    import torch
    ex = load_example("cleanrl_ppo")
    torch.set_num_threads(2)
    args = ex.Args(total_timesteps=256, num_envs=2, num_steps=64, num_minibatches=2, update_epochs=1,
                   image_budget=6, resolution=32, obs_size=32, save_dir=str(tmp_path))
    summary = ex.main(args)
    assert torch.get_num_threads() == 1                            # one torch thread by default (docs/rl.md)
    assert summary["global_step"] == 256                           # 2 iterations x 2 envs x 64 steps
    # V = 6: an episode is at most 5 steps, so each env finished at least 128 // 5 of them
    assert summary["episodes"] >= 2 * (128 // 5)
    assert 0.0 <= summary["mean_return"] <= 1.0                   # change of a mean IoU, reward weight 0
    assert all(math.isfinite(v) for v in summary["losses"].values())
    assert json.loads((tmp_path / "summary.json").read_text()) == summary
    # the NBV settings beside the weights, as train-nbv writes them
    settings = json.loads((tmp_path / "nbv_config.json").read_text())
    assert (settings["motion"], settings["obs_size"], settings["image_budget"], settings["resolution"]) == \
        ("heading", 32, 6, 32)

    saved = torch.load(tmp_path / "agent.pt", weights_only=False)
    env = gym.make("SpatialScout/NBV-v1", image_budget=6, resolution=32, obs_size=32)
    try:
        agent = ex.Agent(env.observation_space, int(env.action_space.n))
        agent.load_state_dict(saved["state_dict"])
        obs, _ = env.reset(seed=0)
        with torch.no_grad():
            batch = {k: torch.as_tensor(v)[None] for k, v in obs.items()}
            action, logprob, _, value = agent.get_action_and_value(batch)
        assert env.action_space.contains(int(action[0])) and torch.isfinite(value).all()
        assert float(logprob[0]) <= 0.0
        env.step(int(action[0]))
    finally:
        env.close()


def test_sb3_make_vec_env_recipe_trains_saves_and_the_policy_acts(tmp_path_factory):
    from stable_baselines3 import PPO
    trained = sb3_recipe(tmp_path_factory)     # 256 steps, 2 SubprocVecEnv envs, V = 4, 36 px render
    model = trained.returned
    assert model.num_timesteps >= 256
    assert trained.torch_threads == 1                              # one torch thread by default (docs/rl.md)
    assert type(model.env.unwrapped).__name__ == "SubprocVecEnv"
    loaded = PPO.load(str(trained.saved), device="cpu")
    for a, b in zip(model.policy.parameters(), loaded.policy.parameters()):
        assert np.array_equal(a.detach().cpu().numpy(), b.detach().cpu().numpy())
    env = gym.make("SpatialScout/NBV-v1", image_budget=IMAGE_BUDGET, resolution=RESOLUTION)
    try:
        obs, _ = env.reset(seed=0)
        action, _ = loaded.predict(obs, deterministic=True)
        assert env.action_space.contains(int(action))
        _, reward, *_ = env.step(int(action))
        assert 0.0 <= reward <= 1.0
    finally:
        env.close()
    # the recipe's nbv_config.json names what it trained with (the RL journey evaluates the policy)
    settings = json.loads((trained.saved.parent / "nbv_config.json").read_text())
    assert (settings["image_budget"], settings["resolution"]) == (IMAGE_BUDGET, RESOLUTION)
