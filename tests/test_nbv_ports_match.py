"""One observation for training and evaluation: ``SpatialScout/NBV-v1`` (the NBV core over
``ToolEnvPort``: every call through the tool env's ``step``) and the core over ``EpisodePort`` (the
path of the NBV agents behind ``spatialscout evaluate``, here scored step by step) give
bit-identical observations, rewards and end flags for the same scene, seed and actions.
Real SAPIEN renders at 32 px (catalog and procedural scenes)."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import data_equivalence
from gymnasium.utils.env_match import check_environments_match

import spatialscout_gym  # noqa: F401  (registers the ids)
from spatialscout_gym.nbv.core import NBVCore
from spatialscout_gym.nbv.env import NBVEnv
from spatialscout_gym.nbv.mappers import make_mapper
from spatialscout_gym.nbv.ports import EpisodePort

pytestmark = pytest.mark.render

SETTINGS = {"resolution": 32, "obs_size": 32, "image_budget": 12}
PARTING_ACTIONS = [6, 0, 7, 2, 1, 6, 0, 0, 3, 3]
"""The sequence whose ``map`` observations parted after steps 7 and 10 when the tool env's port
read the camera from the float32 observation."""


class EpisodePortEnv(gym.Env):
    """The NBV core over an :class:`EpisodePort`, as the NBV agents drive an episode (the typed
    methods of ``Episode``), scored step by step. Episodes come from an NBV-v1 twin's tool env
    (its ``reset`` alone: the same scene and start pose for a seed); the twin's own NBV step is
    never used."""

    def __init__(self, **kwargs: Any) -> None:
        self.twin = NBVEnv(**kwargs)
        self.action_space = self.twin.action_space
        self.observation_space = self.twin.observation_space
        self.mapper = make_mapper(kwargs.get("mapper", "oracle"))
        self.core: NBVCore | None = None

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        self.twin.nbv.env.reset(seed=seed, options=options)
        tool = self.twin.tool_env
        port = EpisodePort(tool.episode, tool.scene_spec, tool.renderer, metrics=tool.session.metrics)
        self.core = NBVCore(port, self.mapper, self.twin.config)
        self.core.begin()
        return self.core.observation(), {"all_mean_iou": self.core.score}

    def step(self, action):
        s = self.core.step(action)
        return self.core.observation(), float(s.reward), s.terminated, s.truncated, {}

    def close(self) -> None:
        self.twin.close()


def pair(scene: str, **kwargs: Any) -> tuple[gym.Env, EpisodePortEnv]:
    settings = {**SETTINGS, **kwargs}
    return gym.make("SpatialScout/NBV-v1", scene=scene, **settings), EpisodePortEnv(scene=scene, **settings)


def lockstep(a: gym.Env, b: gym.Env, actions: list[int], seed: int) -> tuple[int, int]:
    """Step both with ``actions`` (resetting both on an end, seeds ``seed``, ``seed + 1``, ...) and
    assert every observation, reward and end flag is exactly equal; returns (steps, episodes)."""
    obs_a, info_a = a.reset(seed=seed)
    obs_b, info_b = b.reset(seed=seed)
    assert data_equivalence(obs_a, obs_b, exact=True), "reset observations differ"
    assert info_a["all_mean_iou"] == info_b["all_mean_iou"]
    episodes = 1
    for step, action in enumerate(actions):
        out_a, out_b = a.step(action), b.step(action)
        for name, x, y in zip(("observation", "reward", "terminated", "truncated"), out_a[:4], out_b[:4]):
            assert data_equivalence(x, y, exact=True), f"step {step} (action {action}): {name} differs: {x} vs {y}"
        if out_a[2] or out_a[3]:
            episodes += 1
            obs_a, _ = a.reset(seed=seed + episodes)
            obs_b, _ = b.reset(seed=seed + episodes)
            assert data_equivalence(obs_a, obs_b, exact=True), f"reset after step {step}: observations differ"
    return len(actions), episodes


@pytest.mark.parametrize("scene", ["LivingRoom_05", "Apartment_05", "procedural"])
def test_nbv_v1_and_episode_port_give_identical_numbers(scene):
    a, b = pair(scene)
    try:
        rng = np.random.default_rng(7)
        actions = PARTING_ACTIONS + [int(x) for x in rng.integers(a.action_space.n, size=110)]
        steps, episodes = lockstep(a, b, actions, seed=3)
        assert steps == 120 and episodes >= 10       # V = 12: at most 11 steps an episode
        # the rewards are real: the tool env's score, the same on both sides
        assert b.core.score == a.unwrapped.tool_env.metrics()["all"]["mean_iou"]
    finally:
        a.close()
        b.close()


def test_parting_sequence_maps_match_and_gymnasium_env_match_agrees():
    """The parting sequence, at V = 20 on a catalog scene, then Gymnasium's own checker
    (random actions, resets with the same seed) over 150 steps."""
    a, b = pair("Apartment_10", image_budget=20)
    try:
        a.reset(seed=0)
        b.reset(seed=0)
        for step, action in enumerate(PARTING_ACTIONS):
            obs_a, *_ = a.step(action)
            obs_b, *_ = b.step(action)
            np.testing.assert_array_equal(obs_a["map"], obs_b["map"], err_msg=f"step {step}")
            np.testing.assert_array_equal(obs_a["pose"], obs_b["pose"], err_msg=f"step {step}")
        assert obs_a["map"][0].sum() > 0
        check_environments_match(a, b, num_steps=150, seed=1, info_comparison="skip")
    finally:
        a.close()
        b.close()


def test_nbv_v3s_blocked_flag_and_masks_match_over_both_ports():
    """NBV-v3's settings (walls, the ``blocked`` observation): the two ports agree on every
    observation and on ``action_masks()`` at every step, and some moves were blocked."""
    a, b = pair("Apartment_05", walls=True, blocked_obs=True)
    try:
        a.reset(seed=4)
        b.reset(seed=4)
        rng = np.random.default_rng(5)
        blocked = 0
        for step, action in enumerate(int(x) for x in rng.integers(a.action_space.n, size=40)):
            np.testing.assert_array_equal(a.unwrapped.action_masks(), b.core.action_masks(), err_msg=f"step {step}")
            out_a, out_b = a.step(action), b.step(action)
            assert data_equivalence(out_a[0], out_b[0], exact=True), f"step {step}: observations differ"
            blocked += int(out_a[0]["blocked"].any())
            if out_a[2] or out_a[3]:
                a.reset(seed=step)
                b.reset(seed=step)
        assert blocked > 0
    finally:
        a.close()
        b.close()
