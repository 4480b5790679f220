"""``SB3VecEnv``: a Gymnasium ``VectorEnv`` seen as a Stable-Baselines3 ``VecEnv``.

SB3 resets a finished sub-env inside the same ``step`` and hands the last observation over as
``info["terminal_observation"]``; a Gymnasium vector env in ``AutoresetMode.SAME_STEP`` does the
same with ``info["final_obs"]``. This adapter translates one into the other, and adds SB3's
``info["episode"] = {"r", "l", "t"}`` (return, length, seconds since start) for every finished
episode, as SB3's ``Monitor`` would, plus ``TimeLimit.truncated``. The info of a finished
episode is its final step's info (for NBV: ``coverage``, ``all_mean_iou``, ``metrics``).
"""

from __future__ import annotations

import time
from typing import Any, Sequence

import numpy as np
from gymnasium.vector import AutoresetMode, VectorEnv
from stable_baselines3.common.vec_env.base_vec_env import VecEnv, VecEnvIndices, VecEnvObs, VecEnvStepReturn

__all__ = ["SB3VecEnv"]


def _unbatch(info: dict, i: int) -> dict:
    """Sub-env ``i``'s part of a Gymnasium vector info dict (values batched per key, with a
    ``"_key"`` mask of the sub-envs that reported it; nested dicts likewise)."""
    out = {}
    for k, v in info.items():
        if k.startswith("_"):
            continue
        mask = info.get("_" + k)
        if mask is not None and not mask[i]:
            continue
        out[k] = _unbatch(v, i) if isinstance(v, dict) else v[i]
    return out


class SB3VecEnv(VecEnv):
    """Adapt ``venv`` (a ``gymnasium.vector.VectorEnv`` in ``AutoresetMode.SAME_STEP``)."""

    def __init__(self, venv: VectorEnv) -> None:
        mode = venv.metadata.get("autoreset_mode")
        if mode != AutoresetMode.SAME_STEP:
            raise ValueError(f"SB3VecEnv needs a vector env with autoreset_mode=AutoresetMode.SAME_STEP "
                             f"(SB3 resets in the same step); got {mode!r}")
        self.venv = venv  # before VecEnv.__init__, which reads the sub-envs' render_mode
        super().__init__(venv.num_envs, venv.single_observation_space, venv.single_action_space)
        self._actions: np.ndarray | None = None
        self._returns = np.zeros(self.num_envs)
        self._lengths = np.zeros(self.num_envs, dtype=int)
        self._t0 = time.time()

    def reset(self) -> VecEnvObs:
        seeds = [None if s is None else int(s) for s in self._seeds] if any(
            s is not None for s in self._seeds) else None
        # gymnasium's VectorEnv.reset says seed: int | None; its vector envs (and ours) take a list too
        obs, _ = self.venv.reset(seed=seeds,  # type: ignore[arg-type]
                                 options=self._options[0] if self._options else None)
        self._reset_seeds()
        self._reset_options()
        self._returns[:] = 0.0
        self._lengths[:] = 0
        return obs

    def step_async(self, actions: np.ndarray) -> None:
        self._actions = actions

    def step_wait(self) -> VecEnvStepReturn:
        obs, rewards, terminated, truncated, info = self.venv.step(self._actions)
        dones = np.logical_or(terminated, truncated)
        self._returns += rewards
        self._lengths += 1
        infos: list[dict] = []
        for i in range(self.num_envs):
            d = _unbatch(info, i)
            final_obs, final_info = d.pop("final_obs", None), d.pop("final_info", None)
            if dones[i]:
                d = dict(final_info or {})
                d["terminal_observation"] = final_obs
                d["TimeLimit.truncated"] = bool(truncated[i] and not terminated[i])
                d["episode"] = {"r": float(self._returns[i]), "l": int(self._lengths[i]),
                                "t": round(time.time() - self._t0, 6)}
                self._returns[i], self._lengths[i] = 0.0, 0
            infos.append(d)
        return obs, rewards.astype(np.float32), dones, infos

    def close(self) -> None:
        self.venv.close()

    # ---- attribute access on the sub-envs (SB3's VecEnv interface) ------------------------------
    def _targets(self, indices: VecEnvIndices) -> list:
        envs = getattr(self.venv, "envs", None)
        if envs is None:
            raise AttributeError(f"{type(self.venv).__name__} keeps its sub-envs in worker processes; "
                                 f"their attributes and methods cannot be reached from here")
        return [envs[i] for i in self._get_indices(indices)]

    def get_attr(self, attr_name: str, indices: VecEnvIndices = None) -> list[Any]:
        return [getattr(e, attr_name) for e in self._targets(indices)]

    def set_attr(self, attr_name: str, value: Any, indices: VecEnvIndices = None) -> None:
        for e in self._targets(indices):
            setattr(e, attr_name, value)

    def has_attr(self, attr_name: str) -> bool:
        if attr_name == "action_masks" and hasattr(self.venv, "action_masks"):   # MaskablePPO's check: the
            return True   # vector env answers for every sub-env (worker processes too, unreachable one by one)
        return super().has_attr(attr_name)

    def env_method(self, method_name: str, *method_args: Any, indices: VecEnvIndices = None, **method_kwargs: Any) -> list[Any]:
        if method_name == "action_masks" and hasattr(self.venv, "action_masks"):   # MaskablePPO asks for it;
            masks = self.venv.action_masks()   # the vector env answers for every sub-env, worker processes too
            return [masks[i] for i in self._get_indices(indices)]
        return [getattr(e, method_name)(*method_args, **method_kwargs) for e in self._targets(indices)]

    def env_is_wrapped(self, wrapper_class: type, indices: VecEnvIndices = None) -> list[bool]:
        if getattr(self.venv, "envs", None) is None:   # sub-envs in worker processes: SB3 asks
            return [False] * len(list(self._get_indices(indices)))   # for Monitor; they carry none
        out = []
        for e in self._targets(indices):
            found = False
            while hasattr(e, "env"):
                if isinstance(e, wrapper_class):
                    found = True
                    break
                e = e.env
            out.append(found or isinstance(e, wrapper_class))
        return out

    def get_images(self) -> Sequence[np.ndarray | None]:
        return [None] * self.num_envs
