"""``SpatialScout/NBV-v1``: its own env (``env.unwrapped`` is the NBV task), both checkers on it and
on its ``unwrapped``, the shipped policy's recipe as defaults, the shipped policy running a whole
episode with no arguments (real SAPIEN on lavapipe), the same steps as NBV-v0 given the same
settings, and ``make_vec`` as for NBV-v0."""

from __future__ import annotations

import json

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env as gym_check_env

import spatialscout_gym  # noqa: F401  (registers the ids)
from fakes import FakeRenderer, small_scene
from spatialscout_gym.nbv.wrapper import NBVConfig, NextBestViewWrapper
from spatialscout_gym.nbv.env import NBV_V1_DEFAULTS, NBVEnv
from spatialscout_gym.nbv.policy_files import SHIPPED_POLICY

SHIPPED = SHIPPED_POLICY


def fake_v1(**kw):
    spec = small_scene(64, 64)
    return gym.make("SpatialScout/NBV-v1", scene=spec, renderer=FakeRenderer(spec), **kw)


def test_unwrapped_is_the_nbv_task_with_its_spec_sheet():
    env = fake_v1()
    assert isinstance(env.unwrapped, NBVEnv) and env.unwrapped.unwrapped is env.unwrapped
    assert env.unwrapped.action_space == gym.spaces.Discrete(18)          # heading motion
    assert env.unwrapped.observation_space == env.observation_space
    assert "scan" in env.observation_space.spaces
    assert isinstance(env.unwrapped.nbv, NextBestViewWrapper)             # the one NBV step logic
    doc = env.unwrapped.__doc__
    for section in ("## Action Space", "## Observation Space", "## Rewards", "## Episode End",
                    "## Arguments", "## Version History", "- v1:", "- v0:"):
        assert section in doc
    env.close()


def test_defaults_are_the_shipped_recipe():
    recipe = json.loads((SHIPPED / "nbv_config.json").read_text())
    assert recipe["env_id"] == "SpatialScout/NBV-v2"             # the shipped policy's env: NBV-v1 with walls
    spec = small_scene(64, 64)
    env = gym.make(recipe["env_id"], scene=spec, renderer=FakeRenderer(spec))
    config = env.unwrapped.config
    # the training reward (reward_mapper, reward_submitted_weight) is how the policy learnt, not
    # how it acts: NBV-v2's defaults (NBV-v1's, walls on) are the acting settings
    fields = set(NBVConfig.__dataclass_fields__) - {"reward_submitted_weight"}
    for key, value in recipe.items():
        if key in fields:
            got = getattr(config, key)
            assert (list(got) if isinstance(got, tuple) else got) == value, key
    assert NBV_V1_DEFAULTS["image_budget"] == recipe["image_budget"] == env.unwrapped.tool_env.image_budget
    assert NBV_V1_DEFAULTS["resolution"] == recipe["resolution"]
    assert NBV_V1_DEFAULTS["mapper"] == recipe["mapper"]
    env.close()


def test_both_checkers_pass_on_the_env_and_on_its_unwrapped():
    from stable_baselines3.common.env_checker import check_env as sb3_check_env
    env = fake_v1(image_budget=4)
    for e in (env, env.unwrapped):
        gym_check_env(e, skip_render_check=True)
        sb3_check_env(e, warn=True)
    env.close()


def test_v1_steps_equal_v0_steps_with_the_same_settings():
    spec = small_scene(64, 64)
    v1 = gym.make("SpatialScout/NBV-v1", scene=spec, renderer=FakeRenderer(spec), image_budget=6)
    v0 = gym.make("SpatialScout/NBV-v0", scene=spec, renderer=FakeRenderer(spec), image_budget=6,
                  motion="heading")
    a, _ = v1.reset(seed=4)
    b, _ = v0.reset(seed=4)
    assert all(np.array_equal(a[k], b[k]) for k in a)
    for action in [3, 1, 16, 0, 8]:
        oa, ra, ta, tra, _ = v1.step(action)
        ob, rb, tb, trb, _ = v0.step(action)
        assert all(np.array_equal(oa[k], ob[k]) for k in oa) and (ra, ta, tra) == (rb, tb, trb)
        if ta:
            break


@pytest.mark.render
def test_shipped_policy_runs_a_whole_episode_with_no_arguments():
    from stable_baselines3 import PPO
    model = PPO.load(str(SHIPPED / "model.zip"), device="cpu")
    env = gym.make("SpatialScout/NBV-v2")                         # the env it was trained on
    assert model.action_space == env.action_space                 # 18 heading actions, not NBV-v0's 10
    assert set(model.observation_space.spaces) == set(env.observation_space.spaces)   # with "scan"
    obs, info = env.reset(seed=0)
    steps, ret, done = 0, 0.0, False
    while not done:
        action, _ = model.predict(obs, deterministic=True)
        obs, reward, terminated, truncated, info = env.step(action)
        ret += reward
        steps += 1
        assert not info["refused"] or all(isinstance(m, str) for m in info["refused"])
        done = terminated or truncated
    assert terminated and not truncated
    assert steps == 19 or info["coverage"] == 1.0                     # V - 1 = 19 steps unless all mapped
    assert env.unwrapped.tool_env.episode.images_used == steps + 1
    assert info["metrics"]["all"]["mean_iou"] == pytest.approx(info["all_mean_iou"])
    assert 0.0 < info["all_mean_iou"] <= 1.0
    env.close()


@pytest.mark.render
def test_make_vec_works_like_nbv_v0():
    from spatialscout_gym.nbv import NBVVectorEnv
    kw = dict(resolution=32, obs_size=32, image_budget=3)
    venv = gym.make_vec("SpatialScout/NBV-v1", num_envs=2, vectorization_mode="vector_entry_point", **kw)
    single = gym.make("SpatialScout/NBV-v1", **kw)
    assert isinstance(venv, NBVVectorEnv)
    assert venv.single_action_space == single.action_space == gym.spaces.Discrete(18)
    assert venv.single_observation_space == single.observation_space
    obs, _ = venv.reset(seed=7)
    ref, _ = single.reset(seed=7)
    assert all(np.array_equal(obs[k][0], ref[k]) for k in ref)
    out = venv.step(np.array([4, 9]))
    one = single.step(4)
    assert all(np.array_equal(out[0][k][0], one[0][k]) for k in ref) and out[1][0] == one[1]
    venv.close()
    single.close()


@pytest.mark.render
def test_both_checkers_pass_on_the_real_renderer():
    from stable_baselines3.common.env_checker import check_env as sb3_check_env
    env = gym.make("SpatialScout/NBV-v1", resolution=32, obs_size=32, image_budget=3)
    for e in (env, env.unwrapped):
        gym_check_env(e, skip_render_check=True)
        sb3_check_env(e, warn=False)
    obs, _ = env.reset(seed=2)
    assert obs["image"].std() > 0 and env.spec.id == "SpatialScout/NBV-v1"
    env.close()
