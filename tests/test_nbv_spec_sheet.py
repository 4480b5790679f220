"""NBV-v1's spec sheet (``help(NBVEnv)``) names every key of ``reset``'s and ``step``'s ``info``,
and ``render()`` is at ``resolution``, not ``obs_size``, as it says (fake renderer: no Vulkan)."""

from __future__ import annotations

import re

import gymnasium as gym

import spatialscout_gym  # noqa: F401  (registers the ids)
from fakes import FakeRenderer, small_scene
from spatialscout_gym.nbv.env import NBVEnv


def section(name: str) -> str:
    doc = NBVEnv.__doc__
    return doc.split(f"## {name}", 1)[1].split("\n    ## ", 1)[0]


def test_the_spec_sheet_names_every_info_key_and_render_is_at_resolution():
    named = set(re.findall(r"``(\w+)``", section("Info")))
    spec = small_scene(64, 64)
    env = gym.make("SpatialScout/NBV-v1", scene=spec, renderer=FakeRenderer(spec, 48, 48), image_budget=3,
                   resolution=48, obs_size=36, render_mode="rgb_array")
    try:
        _, info = env.reset(seed=0)
        keys = set(info)
        done = False
        while not done:
            _, _, terminated, truncated, info = env.step(1)
            keys |= set(info) | set(info["counters"])
            done = terminated or truncated
        assert "metrics" in info
        assert keys <= named, f"info keys the spec sheet does not name: {sorted(keys - named)}"
        assert env.render().shape == (48, 48, 3)
        assert env.observation_space["image"].shape == (36, 36, 3)
    finally:
        env.close()
    for phrase in ('reset(options={"scene": NAME})', "reset(seed=k)", "``resolution`` x ``resolution``"):
        assert phrase in section("Resets and rendering")
