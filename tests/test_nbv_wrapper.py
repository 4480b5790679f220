"""NextBestViewWrapper: both env checkers, spaces, rewards summing to the final score, episode end,
and the continuous motion scaling (docs/protocol.md section 4 move bound). Uses the Vulkan-free fake
renderer, whose privileged capture ray-casts the fixture's boxes."""

from __future__ import annotations

import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env as gym_check_env
from hypothesis import given, settings
from hypothesis import strategies as st

from fakes import FakeRenderer, small_scene
from spatialscout_gym.episode.tools import MAX_TRANSLATION_M
from spatialscout_gym.wrappers.nbv import DISCRETE_MOTIONS, NBVConfig, make_nbv_env, motion_args


def fake_nbv(motion="discrete", image_budget=6, **kw):
    spec = small_scene(64, 64)
    return make_nbv_env(spec, image_budget=image_budget, resolution=64, motion=motion,
                        renderer=FakeRenderer(spec), **kw)


@pytest.mark.parametrize("motion", ["discrete", "continuous"])
def test_wrapper_passes_gymnasium_and_sb3_checkers(motion):
    from stable_baselines3.common.env_checker import check_env as sb3_check_env
    env = fake_nbv(motion)
    gym_check_env(env, skip_render_check=True)
    sb3_check_env(env, warn=True)
    assert env.observation_space["image"].dtype == np.uint8
    assert env.observation_space["image"].shape == (64, 64, 3)


def test_rewards_sum_to_final_all_target_mean_iou_and_budget_terminates():
    env = fake_nbv(image_budget=5, mapper="oracle-surface")
    obs, info = env.reset(seed=3)
    start = info["all_mean_iou"]
    rng = np.random.default_rng(0)
    total, steps = 0.0, 0
    while True:
        obs, r, terminated, truncated, info = env.step(int(rng.integers(len(DISCRETE_MOTIONS))))
        total += r
        steps += 1
        assert not truncated
        if terminated:
            break
    final = info["metrics"]["all"]["mean_iou"]
    assert total + start == pytest.approx(final, abs=1e-9)
    ep = env.unwrapped.episode
    assert ep.done and ep.end_reason == "finish_mapping"
    assert steps == 4 or info["coverage"] == 1.0          # V - 1 steps unless all targets mapped
    assert obs["coverage"][1] == pytest.approx(ep.images_left / 5)


def test_oracle_mapper_score_equals_coverage():
    env = fake_nbv(image_budget=8)
    env.reset(seed=0)
    for a in [6, 6, 6, 7]:
        _, _, terminated, _, info = env.step(a)
        assert info["all_mean_iou"] == pytest.approx(info["coverage"])
        if terminated:
            break


def test_discrete_turn_changes_yaw_and_sectors_feature():
    env = fake_nbv(image_budget=6)
    obs, _ = env.reset(seed=0)
    assert obs["sectors"][0] == 1 and obs["sectors"].sum() == 1   # only the initial heading
    yaw0 = env.unwrapped.episode.pose.yaw_deg
    obs, *_ = env.step(DISCRETE_MOTIONS.index("turn_left"))
    assert env.unwrapped.episode.pose.yaw_deg == pytest.approx(yaw0 + 45.0)
    # the heading just captured is sector 0; the initial one is now 45 degrees clockwise (k = 7)
    assert obs["sectors"][0] == 1 and obs["sectors"][7] == 1 and obs["sectors"].sum() == 2


@settings(max_examples=50, deadline=None)
@given(st.lists(st.floats(-1, 1), min_size=5, max_size=5))
def test_continuous_motion_respects_move_bound(action):
    spec = small_scene(64, 64)
    env = make_nbv_env(spec, image_budget=3, resolution=64, motion="continuous",
                       renderer=FakeRenderer(spec))
    env.reset(seed=0)
    (yaw, pitch), move = motion_args(env.config, np.array(action, np.float32))
    assert np.linalg.norm(move) <= MAX_TRANSLATION_M
    assert abs(yaw) <= 180.0 and abs(pitch) <= 45.0
    _, _, _, _, info = env.step(np.array(action, np.float32))
    assert info["refused"] == []                      # a scaled action is never out of bounds here


def test_bad_arguments_say_what_was_expected():
    with pytest.raises(ValueError, match="motion must be 'discrete' or 'continuous'"):
        NBVConfig(motion="teleport")
    env = fake_nbv()
    env.reset(seed=0)
    with pytest.raises(ValueError, match=r"in \[0, 9\]"):
        motion_args(env.config, 12)
    with pytest.raises(ValueError, match="unknown mapper"):
        fake_nbv(mapper="psychic")
