"""``ppo:PATH`` compares the policy's observation and action spaces with its env's at load: the
shipped policy fits; a copy without ``nbv_config.json`` is read with NBV-v1's settings (and fits);
one with a config that does not describe it is refused in one line saying what differs, before any
episode runs."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest
from gymnasium import spaces

from spatialscout_gym.baselines.nbv_agents import space_mismatch
from spatialscout_gym.baselines.registry import make_agent
from spatialscout_gym.core.errors import ConfigError
from spatialscout_gym.nbv.policy_files import SHIPPED_POLICY

SHIPPED = SHIPPED_POLICY


def test_the_shipped_policy_fits_its_env():
    agent = make_agent(f"ppo:{SHIPPED / 'model.zip'}")
    assert agent.config.motion == "heading" and agent.config.scan_bins == 12


def test_a_policy_without_its_config_takes_nbv_v1s_settings(tmp_path):
    """Without nbv_config.json a policy is read as NBV-v1's (the recipes' and trainers' env); the
    shipped policy is one, so a bare copy loads with NBV-v1's heading motion and its own spaces."""
    shutil.copy(SHIPPED / "model.zip", tmp_path / "model.zip")
    agent = make_agent(f"ppo:{tmp_path / 'model.zip'}")   # refuses a policy whose spaces do not fit
    assert agent.config.motion == "heading" and agent.episode_settings == {}   # V and size: not known


def test_a_config_that_does_not_describe_the_policy_is_refused(tmp_path):
    shutil.copy(SHIPPED / "model.zip", tmp_path / "model.zip")
    recipe = json.loads((SHIPPED / "nbv_config.json").read_text())
    (tmp_path / "nbv_config.json").write_text(json.dumps({**recipe, "scan_bins": 0, "map_cells": 8}))
    with pytest.raises(ConfigError) as exc:
        make_agent(f"ppo:{tmp_path / 'model.zip'}")
    msg = str(exc.value)
    assert "does not describe it" in msg and "only the policy has: ['scan']" in msg
    assert "'map' shape (3, 16, 16) (policy) vs (3, 8, 8) (env)" in msg and "actions" not in msg


def test_space_mismatch_accepts_channel_first_images_only():
    env = spaces.Dict({"image": spaces.Box(0, 255, (64, 64, 3), np.uint8)})
    first = spaces.Dict({"image": spaces.Box(0, 255, (3, 64, 64), np.uint8)})
    other = spaces.Dict({"image": spaces.Box(0, 255, (3, 32, 32), np.uint8)})
    act = spaces.Discrete(18)
    assert space_mismatch(first, act, env, act) is None and space_mismatch(env, act, env, act) is None
    assert "'image' shape (3, 32, 32) (policy) vs (64, 64, 3) (env)" in space_mismatch(other, act, env, act)
