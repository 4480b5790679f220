"""``NBVVectorEnv``: N next-best-view envs in one process, as one ``gymnasium.vector.VectorEnv``.

``gym.make_vec("SpatialScout/NBV-v0", num_envs=N, vectorization_mode="vector_entry_point", **kwargs)`` builds
it (``kwargs`` as for :func:`~spatialscout_gym.wrappers.nbv.make_nbv_env`). Each sub-env is a
:class:`~spatialscout_gym.wrappers.nbv.NextBestViewWrapper` over its own
:class:`~spatialscout_gym.envs.session.EpisodeSession`, stepped in a loop with Gymnasium's
autoreset semantics (``autoreset_mode``: next step by default, or same step with the final
observation in ``info["final_obs"]``, which the Stable-Baselines3 adapter
:class:`~spatialscout_gym.baselines.sb3_vec.SB3VecEnv` uses). Sub-env ``i`` of
``reset(seed=s)`` is seeded with ``s + i``, so the results equal those of N single envs made
with the same arguments and reset with the same seeds.

``torch_device="cpu"|"cuda"|...`` returns observations as torch tensors on that device (one
upload per step for the whole batch). Rendering is one SAPIEN render system per sub-env on the
machine's Vulkan device (lavapipe on CPU machines); the cameras are rendered one after another.
Batching all cameras into one SAPIEN camera-group call on a CUDA device (as ManiSkill3 does) is
not implemented yet: it needs a GPU to build and verify.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium.vector import AutoresetMode, SyncVectorEnv

__all__ = ["NBVVectorEnv"]


class NBVVectorEnv(SyncVectorEnv):
    """N :func:`~spatialscout_gym.wrappers.nbv.make_nbv_env` envs stepped in one process.

    Parameters
    ----------
    num_envs : int
        Number of sub-envs (scenes held at once).
    autoreset_mode : AutoresetMode or str
        ``"NextStep"`` (Gymnasium's default) or ``"SameStep"``.
    torch_device : str, optional
        Return observations as torch tensors on this device (needs torch); None: numpy arrays.
    **kwargs
        Passed to every sub-env (:func:`~spatialscout_gym.wrappers.nbv.make_nbv_env`).
    """

    def __init__(self, num_envs: int = 1, *, autoreset_mode: AutoresetMode | str = AutoresetMode.NEXT_STEP,
                 torch_device: str | None = None, **kwargs: Any) -> None:
        if int(num_envs) < 1:
            raise ValueError(f"num_envs must be >= 1, got {num_envs}")
        max_steps = kwargs.pop("max_episode_steps", None)
        from spatialscout_gym.wrappers.nbv import make_nbv_env

        def thunk() -> gym.Env:
            env = make_nbv_env(**kwargs)
            return env if max_steps is None else gym.wrappers.TimeLimit(env, int(max_steps))

        super().__init__([thunk] * int(num_envs), autoreset_mode=AutoresetMode(autoreset_mode))
        self.torch_device = torch_device
        if torch_device is not None:
            import torch  # noqa: PLC0415 (optional)
            self._torch = torch

    def _to_device(self, obs: dict[str, np.ndarray]) -> Any:
        if self.torch_device is None:
            return obs
        return {k: self._torch.as_tensor(v, device=self.torch_device) for k, v in obs.items()}

    def reset(self, *, seed: int | list[int | None] | None = None, options: dict | None = None):
        obs, info = super().reset(seed=seed, options=options)
        return self._to_device(obs), info

    def step(self, actions):
        if self.torch_device is not None and hasattr(actions, "detach"):
            actions = actions.detach().cpu().numpy()
        obs, rewards, terminated, truncated, infos = super().step(actions)
        return self._to_device(obs), rewards, terminated, truncated, infos
