"""``SB3VecEnv`` takes every form of SB3's ``indices`` (None, an int, any iterable of ints), also
over a vector env whose sub-envs live in worker processes (no ``envs`` to reach)."""

from __future__ import annotations

import numpy as np
import pytest
from gymnasium import spaces
from gymnasium.vector import AutoresetMode, VectorEnv

pytest.importorskip("stable_baselines3")


class _RemoteSubEnvs(VectorEnv):
    """A vector env with no ``envs`` attribute, as ``NBVWorkerVectorEnv`` (its sub-envs are elsewhere)."""

    def __init__(self, num_envs: int) -> None:
        self.num_envs = num_envs
        self.metadata = {"autoreset_mode": AutoresetMode.SAME_STEP}
        self.single_observation_space = spaces.Box(0.0, 1.0, (2,), np.float32)
        self.single_action_space = spaces.Discrete(3)


@pytest.mark.parametrize(("indices", "expected"), [(None, [False] * 3), (1, [False]), ([0, 2], [False] * 2),
                                                   (iter([0, 2]), [False] * 2), ((i for i in range(3)), [False] * 3)])
def test_env_is_wrapped_takes_any_iterable_of_indices(indices, expected):
    import gymnasium as gym

    from spatialscout_gym.nbv.training.sb3_vec import SB3VecEnv
    assert SB3VecEnv(_RemoteSubEnvs(3)).env_is_wrapped(gym.Wrapper, indices=indices) == expected
