"""A ``ppo:PATH`` policy without ``nbv_config.json``: NBV-v1's settings are assumed, and a policy
that does not fit them is refused in one line naming what differs and the line that writes the
settings its spaces call for (after which it loads). Untrained policies over spaces-only envs:
no rendering."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest

pytest.importorskip("stable_baselines3")

from spatialscout_gym.baselines.registry import make_agent
from spatialscout_gym.core.errors import ConfigError
from spatialscout_gym.nbv.config import NBVConfig, nbv_action_space, nbv_observation_space

REPO = Path(__file__).resolve().parents[1]


class SpacesOnly(gym.Env):
    """The spaces of an NBV env of ``config``, nothing else (PPO needs an env to build a policy)."""

    def __init__(self, config: NBVConfig) -> None:
        self.observation_space = nbv_observation_space(config)
        self.action_space = nbv_action_space(config)

    def reset(self, *, seed=None, options=None):
        return self.observation_space.sample(), {}

    def step(self, action):
        return self.observation_space.sample(), 0.0, True, False, {}


def save_untrained(config: NBVConfig, directory: Path) -> Path:
    from stable_baselines3 import PPO
    model = PPO("MultiInputPolicy", SpacesOnly(config), n_steps=8, batch_size=8, device="cpu")
    directory.mkdir(parents=True)
    model.save(str(directory / "model.zip"))
    return directory / "model.zip"


def test_a_policy_without_settings_is_taken_as_nbv_v1s(tmp_path):
    path = save_untrained(NBVConfig(motion="heading"), tmp_path / "v1")
    agent = make_agent(f"ppo:{path}")
    assert (agent.config.motion, agent.config.obs_size, agent.config.scan_bins) == ("heading", 64, 12)
    assert agent.episode_settings == {}        # unknown: run/evaluate use V = 20 and 64 px, NBV-v1's
    obs = nbv_observation_space(agent.config).sample()
    assert 0 <= int(agent.act(obs, None, np.random.default_rng(0))) < 18


def test_a_misfit_names_what_differs_and_the_line_that_fixes_it(tmp_path):
    path = save_untrained(NBVConfig(motion="discrete", obs_size=48, scan_bins=0), tmp_path / "v0")
    with pytest.raises(ConfigError) as err:
        make_agent(f"ppo:{path}")
    msg = str(err.value)
    assert len(msg.splitlines()) == 1 and "SpatialScout/NBV-v1's settings were assumed" in msg
    assert "actions Discrete(10) (policy) vs Discrete(18) (env)" in msg
    assert "observation keys only the env has: ['scan']" in msg
    assert "observation 'image' shape (3, 48, 48) (policy) vs (64, 64, 3) (env)" in msg
    fix = msg.split("NBVConfig field it was trained with): ", 1)[1]
    argv = shlex.split(fix)
    assert argv[:2] == ["python", "-c"] and len(argv) == 3
    assert "motion='discrete'" in fix and "obs_size=48" in fix and "scan_bins=0" in fix
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO), *filter(None, [os.environ.get("PYTHONPATH")])]))
    done = subprocess.run([sys.executable, *argv[1:]], capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr
    agent = make_agent(f"ppo:{path}")          # now it loads, with the settings written
    assert (agent.config.motion, agent.config.obs_size, agent.config.scan_bins) == ("discrete", 48, 0)
