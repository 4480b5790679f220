"""SB3's env checker on NBV-v2's documented layouts (plain, and with every research observation)
warns only as docs/nbv.md's table "SB3's env checker" says: per observation key, the kinds listed
there and no other. Fake renderer, 64 px (the image key draws no warning there)."""

from __future__ import annotations

import re
import warnings
from pathlib import Path

import gymnasium as gym
import pytest

import spatialscout_gym  # noqa: F401  (registers the ids)
from fakes import FakeRenderer, small_scene

DOC = Path(__file__).resolve().parents[1] / "docs" / "nbv.md"
EXPECTED = {   # observation key -> the warnings the doc explains for it
    "map": {"dtype", "bounds", "resolution"}, "depth": {"shape"}, "segmentation": {"shape"},
    "points": {"shape"}, "occupancy": {"bounds"}}


def kind_of(message: str) -> tuple[str, str]:
    """(observation key or "any", kind) of one SB3 checker warning."""
    key = re.search(r"observation (?:space )?(\w+)", message)
    for kind, phrase in (("dtype", "dtype"), ("bounds", "upper and lower bounds"), ("shape", "unconventional shape"),
                         ("resolution", "minimal resolution")):
        if phrase in message:
            return (key.group(1) if key and kind != "resolution" else "map"), kind
    return "any", message[:80]


@pytest.mark.parametrize("research", [(), True])
def test_the_checker_warns_only_as_the_spec_sheet_explains(research):
    from stable_baselines3.common.env_checker import check_env
    spec = small_scene(64, 64)
    env = gym.make("SpatialScout/NBV-v2", scene=spec, renderer=FakeRenderer(spec), image_budget=4,
                   privileged_obs=research)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        check_env(env.unwrapped, warn=True)
    env.close()
    got = {kind_of(str(w.message)) for w in caught if w.filename.endswith("env_checker.py")}
    keys = set(env.unwrapped.observation_space.spaces)
    want = {(k, kind) for k, kinds in EXPECTED.items() if k in keys for kind in kinds}
    assert got == want
    table = DOC.read_text().split("**SB3's env checker.**")[1].split("**Walls.**")[0]
    for k in {k for k, _ in got}:
        assert f"`{k}`" in table
