"""``NBVVectorEnv``: N next-best-view envs in one process, as one ``gymnasium.vector.VectorEnv``.

``gym.make_vec("SpatialScout/NBV-v0", num_envs=N, vectorization_mode="vector_entry_point", **kwargs)`` builds
it (``kwargs`` as for :func:`~spatialscout_gym.nbv.wrapper.make_nbv_env`; with ``num_workers=W``
it is :class:`~spatialscout_gym.nbv.workers.NBVWorkerVectorEnv`, the envs spread over W
processes, one of these per process). Each sub-env is a
:class:`~spatialscout_gym.nbv.wrapper.NextBestViewWrapper` over its own
:class:`~spatialscout_gym.envs.session.EpisodeSession`, stepped with Gymnasium's autoreset
semantics (``autoreset_mode``: next step by default, or same step with the final observation in
``info["final_obs"]``, which the Stable-Baselines3 adapter
:class:`~spatialscout_gym.nbv.training.sb3_vec.SB3VecEnv` uses). Sub-env ``i`` of ``reset(seed=s)`` is
seeded with ``s + i``, so the results equal those of N single envs made with the same arguments and
reset with the same seeds.

A step has three phases when ``batched_render`` is on:

1. every sub-env applies its motion (rotation, moves; no rendering:
   :meth:`~spatialscout_gym.nbv.core.NBVCore.prepare`);
2. one :class:`~spatialscout_gym.render.camera_group.CameraGroup` call renders all sub-envs'
   capture poses and hands each renderer its picture;
3. every sub-env captures (reading the prepared picture: one render per sub-env per step), maps
   and observes; sub-envs that finished are reset (their frame 0 is rendered on their own).

Rendering is one SAPIEN render system per sub-env. ``render_device=None`` (default) uses the
machine's Vulkan device (lavapipe on CPU machines); there the group renders the cameras one after
another and the results are bit-identical to ``batched_render=False`` and to N single envs.
``render_device="cuda"`` puts every sub-env's renderer on ``sapien.Device("cuda")`` (a clear
:class:`~spatialscout_gym.render.device.RenderDeviceError` where SAPIEN finds no CUDA device), and
the group renders all N cameras in one SAPIEN camera-group call (render system group, as ManiSkill3
does). **The CUDA path is untested on a GPU in this repository**: it follows the recipe of
docs/architecture.md "Sessions and fast NBV", verified on an NVIDIA H200 with SAPIEN 3.0.3.

``obs_layout`` (``"dict"``, ``"image"``, ``"flat"``, ``"image+vector"``) is every sub-env's
(:func:`~spatialscout_gym.nbv.wrapper.make_nbv_env`), batched by Gymnasium.

``torch_device="cpu"|"cuda"|...`` returns observations as torch tensors on that device (one
upload per step for the whole batch; the image still passes through host memory).
"""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING, Any, TypeAlias

import gymnasium as gym
import numpy as np
import numpy.typing as npt
from gymnasium.vector import AutoresetMode, SyncVectorEnv
from gymnasium.vector.utils import iterate

from spatialscout_gym.core.frames import CameraPose
from spatialscout_gym.nbv.config import LaidOutObservation, NBVConfig

if TYPE_CHECKING:
    import torch

    from spatialscout_gym.core.renderer_api import FrameSource
    from spatialscout_gym.nbv.wrapper import NextBestViewWrapper
    from spatialscout_gym.render.camera_group import CameraGroup

__all__ = ["NBVVectorEnv"]

VectorObservation: TypeAlias = "LaidOutObservation | torch.Tensor | dict[str, torch.Tensor]"
"""A batch of observations: numpy arrays, or torch tensors on ``torch_device`` when it is set."""


BATCHED_CUDA_UNVERIFIED = (
    "batched_render=True on a CUDA device is unverified: on an NVIDIA H200 the camera-group render gave "
    "pictures that differ from rendering one camera at a time (16% of observation values equal, "
    "scripts/gpu_pixel_check.py) and the batched-render test crashed in RenderSystemGroup; "
    "observations may be wrong (docs/speed.md, the GPU check)")


def resolve_batched_render(batched_render: bool | str, render_device: str | None) -> bool:
    """Whether an :class:`NBVVectorEnv` renders its sub-envs' captures in one camera group.

    ``"auto"`` is False: the GPU check found SAPIEN's batched CUDA camera group wrong on an H200
    (docs/speed.md), so nothing turns it on unasked. ``True`` on a CUDA device still runs it, with a
    ``RuntimeWarning``; on the CPU it is the sequential path and bit-identical to ``False``."""
    if batched_render not in (True, False, "auto"):
        raise ValueError(f"batched_render must be True, False or 'auto', got {batched_render!r}")
    on = batched_render is True
    if on and render_device is not None and str(render_device).startswith("cuda"):
        warnings.warn(BATCHED_CUDA_UNVERIFIED, RuntimeWarning, stacklevel=3)
    return on


class NBVVectorEnv(SyncVectorEnv):
    """N :func:`~spatialscout_gym.nbv.wrapper.make_nbv_env` envs stepped in one process.

    Parameters
    ----------
    num_envs : int
        Number of sub-envs (scenes held at once).
    autoreset_mode : AutoresetMode or str
        ``"NextStep"`` (Gymnasium's default) or ``"SameStep"``.
    torch_device : str, optional
        Return observations as torch tensors on this device (needs torch); None: numpy arrays.
    batched_render : bool or "auto"
        Render all sub-envs' captures of a step in one :class:`~spatialscout_gym.render.camera_group.CameraGroup`
        call (True), or each inside its own step (False). "auto" (default): False, the path that
        passes the pixel check everywhere (:func:`resolve_batched_render` says why).
    render_device : str, optional
        SAPIEN render device of every sub-env's renderer, e.g. ``"cuda"``; None: SAPIEN's default.
    **kwargs
        Passed to every sub-env (:func:`~spatialscout_gym.nbv.wrapper.make_nbv_env`).
    """

    def __init__(self, num_envs: int = 1, *, autoreset_mode: AutoresetMode | str = AutoresetMode.NEXT_STEP,
                 torch_device: str | None = None, batched_render: bool | str = "auto",
                 render_device: str | None = None, **kwargs: Any) -> None:
        if int(num_envs) < 1:
            raise ValueError(f"num_envs must be >= 1, got {num_envs}")
        batched = resolve_batched_render(batched_render, render_device)   # before any sub-env is built
        max_steps = kwargs.pop("max_episode_steps", None)
        from spatialscout_gym.nbv.wrapper import NextBestViewWrapper, make_nbv_env
        if render_device is not None:
            kwargs["render_device"] = render_device

        def thunk() -> gym.Env:
            env = make_nbv_env(**kwargs)
            return env if max_steps is None else gym.wrappers.TimeLimit(env, int(max_steps))

        super().__init__([thunk] * int(num_envs), autoreset_mode=AutoresetMode(autoreset_mode))
        self.torch_device = torch_device
        self.render_device = render_device
        self.batched_render = batched
        self._nbv: list[NextBestViewWrapper] = []
        for env in self.envs:
            e = env
            while not isinstance(e, NextBestViewWrapper):
                if not hasattr(e, "env"):
                    raise TypeError(f"sub-env {env} holds no NextBestViewWrapper")
                e = e.env
            self._nbv.append(e)
        self._group: CameraGroup | None = None
        # which sub-envs Gymnasium resets instead of stepping next step (NextStep mode): kept here
        # rather than read from SyncVectorEnv's private state
        self._due = np.zeros(self.num_envs, bool)
        if torch_device is not None:
            import torch  # optional
            self._torch = torch

    def _to_device(self, obs: LaidOutObservation) -> VectorObservation:
        if self.torch_device is None:
            return obs
        if not isinstance(obs, dict):     # obs_layout "image" or "flat": one array
            return self._torch.as_tensor(obs, device=self.torch_device)
        return {k: self._torch.as_tensor(v, device=self.torch_device) for k, v in obs.items()}

    @property
    def config(self) -> NBVConfig:
        """The sub-envs' :class:`~spatialscout_gym.nbv.config.NBVConfig` (all alike)."""
        return self._nbv[0].config

    def action_masks(self) -> np.ndarray:
        """Shape (num_envs, n) bool: each sub-env's :meth:`NBVCore.action_masks
        <spatialscout_gym.nbv.core.NBVCore.action_masks>` (privileged: from unobserved wall geometry)."""
        return np.stack([nbv.core.action_masks() for nbv in self._nbv])

    @property
    def autoreset_due(self) -> np.ndarray:
        """Shape (num_envs,) bool: the sub-envs the next :meth:`step` resets instead of stepping
        (``autoreset_mode="NextStep"``: those whose episode ended in the last step; never in
        ``"SameStep"``). A copy."""
        return self._due.copy()

    # reset and step ignore [override]: SyncVectorEnv types them with TypeVars it never binds
    def reset(self, *, seed: int | list[int | None] | None = None, options: dict | None = None  # type: ignore[override]
              ) -> tuple[VectorObservation, dict[str, Any]]:
        mask = None if options is None else options.get("reset_mask")   # Gymnasium pops it
        obs: LaidOutObservation
        obs, info = super().reset(seed=seed, options=options)
        if mask is None:
            self._due[:] = False
        else:
            self._due[np.asarray(mask, bool)] = False
        return self._to_device(obs), info

    @property
    def camera_group(self) -> CameraGroup | None:
        """The :class:`~spatialscout_gym.render.camera_group.CameraGroup` over the sub-envs'
        renderers (None before the first batched step or with ``batched_render=False``)."""
        return self._group

    def _renderers(self) -> list[FrameSource]:
        renderers = [nbv.port.tool_env.session.renderer for nbv in self._nbv]
        if self._group is not None and all(a is b for a, b in zip(renderers, self._group.renderers)):
            return renderers
        if not all(hasattr(r, "prepare") for r in renderers) or len({id(r) for r in renderers}) != len(renderers):
            raise TypeError(f"batched_render needs each sub-env to own a SapienRenderer (no shared_renderer, "
                            f"no custom renderer); got {sorted({type(r).__name__ for r in renderers})}. "
                            f"Pass batched_render=False.")
        from spatialscout_gym.render.camera_group import CameraGroup  # render layer, heavy
        on_cuda = self.render_device is not None and str(self.render_device).startswith("cuda")
        self._group = CameraGroup(renderers, mode="cuda" if on_cuda else "sequential")
        return renderers

    def _prepare(self, actions: npt.ArrayLike | torch.Tensor) -> None:
        """Phases 1 and 2: every stepping sub-env moves, then one group render of their poses."""
        todo = [(i, a) for i, a in enumerate(iterate(self.action_space, actions)) if not self._due[i]]
        for i, action in todo:  # every action is checked before any sub-env moves: a bad one moves none
            self._nbv[i].core.check_action(action)
        poses: list[CameraPose | None] = [None] * self.num_envs
        for i, action in todo:
            poses[i] = self._nbv[i].core.prepare(action)
        self._renderers()
        assert self._group is not None   # built by _renderers
        self._group.render(poses)

    def step(self, actions: npt.ArrayLike | torch.Tensor  # type: ignore[override]
             ) -> tuple[VectorObservation, np.ndarray, np.ndarray,
                        np.ndarray, dict[str, Any]]:
        if self.torch_device is not None and hasattr(actions, "detach"):
            actions = actions.detach().cpu().numpy()
        if self.batched_render:
            self._prepare(actions)
        obs: LaidOutObservation
        rewards: np.ndarray
        terminated: np.ndarray
        truncated: np.ndarray
        obs, rewards, terminated, truncated, infos = super().step(actions)
        if self.autoreset_mode == AutoresetMode.NEXT_STEP:   # as SyncVectorEnv decides it
            self._due = np.logical_or(terminated, truncated)
        return self._to_device(obs), rewards, terminated, truncated, infos
