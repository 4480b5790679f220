"""The two ways the NBV core (:class:`~spatialscout_gym.nbv.core.NBVCore`) reaches an
episode (its :class:`~spatialscout_gym.nbv.core.NBVPort`):

* :class:`ToolEnvPort`: every tool call is an action of a tool env's ``step`` (a
  :class:`~spatialscout_gym.envs.spatialscout_env.SpatialScoutEnv`, possibly wrapped), so wrappers
  inside see each call; the evaluator-only data (scene, privileged frame, metrics) come from
  ``env.unwrapped``;
* :class:`EpisodePort`: the typed methods of an :class:`~spatialscout_gym.episode.episode.Episode`;
  scored step by step only when given the scorer (``metrics``), as the NBV agents are not.

Both feed the core the same numbers, bit for bit, for the same scene, seed and actions (one
observation for training and evaluation): the camera pose, budgets and coverage are read from the
episode itself (:func:`camera_task`, :func:`capture_pose_task`: the float64 task-frame pose that
``get_camera_pose`` reports, docs/protocol.md section 2), never from the tool env's float32
observation, and the tool env gets the motion and submission arguments at float64, the precision
the episode's typed methods take (its ``step`` accepts any numeric dtype of the field's shape).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, SupportsFloat, cast

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from spatialscout_gym.core.camera import Intrinsics
from spatialscout_gym.core.frames import CameraPose, TaskFrame
from spatialscout_gym.core.renderer_api import FrameSource, PrivilegedFrame
from spatialscout_gym.core.spec import SceneSpec
from spatialscout_gym.episode.episode import Episode, EpisodeFrame
from spatialscout_gym.episode.tools import TOOL_NAMES, ToolResult

if TYPE_CHECKING:
    from spatialscout_gym.envs.spatialscout_env import SpatialScoutEnv

__all__ = ["ToolEnvPort", "EpisodePort", "camera_task", "capture_pose_task"]


def camera_task(episode: Episode) -> tuple[np.ndarray, float, float]:
    """``(position (3,), yaw_deg, pitch_deg)`` of the episode's camera now, task frame, as
    ``get_camera_pose`` reports it (float64, rounded to 6 decimals)."""
    pose = episode.pose_task()
    return np.asarray(pose["position"], float), float(pose["yaw_deg"]), float(pose["pitch_deg"])


def capture_pose_task(episode: Episode) -> tuple[np.ndarray, float]:
    """``(position (3,), yaw_deg)`` of the episode's latest capture, task frame (as :func:`camera_task`)."""
    pose = episode.pose_task(episode.frames[max(episode.frames)].pose)
    return np.asarray(pose["position"], float), float(pose["yaw_deg"])


def _coverage(episode: Episode) -> float:
    return len(episode.accepted_map) / max(1, len(episode.inventory_ids))


class _EpisodeReads:
    """What both ports read from the episode itself, so the NBV core gets the same numbers over
    either (the float64 task pose: docs/protocol.md section 2)."""

    @property
    def episode(self) -> Episode:
        raise NotImplementedError

    @property
    def pose_world(self) -> CameraPose:
        return self.episode.pose

    @property
    def intrinsics(self) -> Intrinsics:
        return self.episode.intrinsics

    def camera(self) -> tuple[np.ndarray, float, float]:
        return camera_task(self.episode)

    def pitch_deg(self) -> float:
        return float(self.episode.pose.pitch_deg)

    def capture_pose_task(self) -> tuple[np.ndarray, float]:
        return capture_pose_task(self.episode)


class ToolEnvPort(_EpisodeReads):
    """The NBV core's port over a tool env (``env``'s action space is the tool-call ``Dict``).

    A ``TimeLimit`` inside ends the episode as truncation (:attr:`truncated`)."""

    def __init__(self, env: gym.Env) -> None:
        self.env = env
        if not isinstance(env.action_space, spaces.Dict):
            raise TypeError(f"ToolEnvPort needs a tool env's Dict action space; got {env.action_space}")
        self._template: dict[str, np.ndarray] = {k: np.zeros(sp.shape or (), sp.dtype)
                                                 for k, sp in env.action_space.spaces.items()}
        for v in self._template.values():
            v.setflags(write=False)  # shared by every call's action (see call)
        self._spec: SceneSpec | None = None
        self.last_obs: dict | None = None
        """The tool env's latest observation."""
        self.last_info: dict = {}
        """The tool env's latest info (its ``reset``'s, then its latest ``step``'s)."""
        self._done = self._truncated = False
        self._inv_index: dict[str, int] = {}
        self._image_budget = 0
        self.radius_m = 0.0

    @property
    def tool_env(self) -> SpatialScoutEnv:
        """``env.unwrapped``: the :class:`~spatialscout_gym.envs.spatialscout_env.SpatialScoutEnv`
        (:class:`~spatialscout_gym.nbv.wrapper.NextBestViewWrapper` checks it has its evaluator-only
        reads)."""
        return cast("SpatialScoutEnv", self.env.unwrapped)

    @property
    def spec(self) -> SceneSpec:
        """The current episode's scene (evaluator-only; set by :meth:`reset`)."""
        if self._spec is None:
            raise RuntimeError("call reset() first")
        return self._spec

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[dict, dict]:
        """The tool env's ``reset``; returns its ``(obs, info)``."""
        obs, info = self.env.reset(seed=seed, options=options)
        inner = self.tool_env
        spec = inner.scene_spec
        assert spec is not None   # the tool env's reset loads a scene
        self._spec = spec
        self.last_obs, self.last_info = obs, info
        self._done = self._truncated = False
        self._image_budget = int(inner.image_budget)
        self.radius_m = float(spec.public.radius_m)
        self._inv_index = {e.id: i for i, e in enumerate(spec.public.inventory)}
        return obs, info

    def call(self, tool: str, **fields: Any) -> tuple[dict, SupportsFloat, bool, bool, dict[str, Any]]:
        """One tool call through the tool env's ``step``; returns its five-tuple."""
        action = dict(self._template)   # unused fields: the read-only zero arrays, not copies
        action["tool"] = np.int64(TOOL_NAMES.index(tool))
        for k, v in fields.items():
            t = self._template[k]
            # real-valued fields at float64, as EpisodePort passes them (a float32 cast would move
            # the camera and the submitted centres off the evaluation path's numbers)
            dtype = np.float64 if np.issubdtype(t.dtype, np.floating) else t.dtype
            action[k] = np.asarray(v, dtype=dtype).reshape(t.shape)
        out = self.env.step(action)
        self.last_obs, self.last_info = out[0], out[4]
        self._done = bool(out[2] or out[3])
        # a time limit inside is truncation, reported as such (PPO bootstraps from truncated steps)
        self._truncated = bool(out[3] and not out[2])
        return out

    def _error(self, tool: str, **fields: Any) -> str | None:
        res = self.call(tool, **fields)[4]["tool_result"]
        return None if res.get("ok") else (res.get("error") or f"{tool} was refused")

    # ---- state -------------------------------------------------------------------------------
    @property
    def done(self) -> bool:
        return self._done

    @property
    def truncated(self) -> bool:
        return self._truncated

    @property
    def episode(self) -> Episode:
        """The tool env's current :class:`Episode` (read-only here: every call goes through ``step``)."""
        episode = self.tool_env.episode
        if episode is None:
            raise RuntimeError("call reset() first")
        return episode

    @property
    def images_left(self) -> int:
        return self.episode.images_left

    @property
    def image_budget(self) -> int:
        return self._image_budget

    @property
    def task_frame(self) -> TaskFrame:
        return self.episode.task_frame

    def latest_image(self) -> np.ndarray:
        if self.last_obs is None:
            raise RuntimeError("call reset() first")
        return self.last_obs["image"]   # a wrapper inside may change what the policy sees

    def latest_frame(self) -> None:
        return None   # the tool env shows observations, not episode frames

    def privileged(self) -> PrivilegedFrame:
        frame: PrivilegedFrame = self.tool_env.privileged_frame()
        return frame

    def coverage(self) -> float:
        return _coverage(self.episode)

    # ---- tool calls --------------------------------------------------------------------------
    def rotate(self, yaw_deg: float, pitch_deg: float) -> str | None:
        return self._error("rotate_camera", rotation=[yaw_deg, pitch_deg])

    def move(self, translation_m: np.ndarray) -> str | None:
        return self._error("move_camera", translation=translation_m)

    def capture(self) -> str | None:
        return self._error("capture_image")

    def submit(self, positions: dict[str, np.ndarray]) -> list[str]:
        values = np.zeros(self._template["positions"].shape, np.float64)   # as EpisodePort submits
        mask = np.zeros(self._template["submit_mask"].shape, np.int8)
        for tid, centre in positions.items():
            i = self._inv_index[tid]
            values[i] = centre
            mask[i] = 1
        res = self.call("submit_positions", positions=values, submit_mask=mask)[4]["tool_result"]
        return list(res.get("result", {}).get("accepted", [])) if res.get("ok") else []

    def finish(self) -> None:
        self.call("finish_mapping")

    # ---- scoring (evaluator-only) ------------------------------------------------------------
    def mean_iou(self) -> float:
        return float(self.tool_env.metrics()["all"]["mean_iou"])

    def metrics(self) -> dict:
        """The scorer's metrics dict of the accepted map (docs/protocol.md section 6)."""
        return self.tool_env.metrics()


class EpisodePort(_EpisodeReads):
    """The NBV core's port over an :class:`Episode` (``renderer`` renders the privileged frames).

    ``metrics``, when given, returns the scorer's metrics dict of the episode's accepted map
    (docs/protocol.md section 6; e.g. :meth:`~spatialscout_gym.envs.session.EpisodeSession.metrics`):
    then the core scores step by step and rewards as over :class:`ToolEnvPort`; without it (the
    NBV agents: the runner scores the episode at its end) rewards are 0."""

    def __init__(self, episode: Episode, spec: SceneSpec, renderer: FrameSource,
                 metrics: Callable[[], dict] | None = None) -> None:
        self._episode = episode
        self.spec = spec
        self.renderer = renderer
        self.radius_m = float(episode.public.radius_m)
        self._metrics = metrics

    @staticmethod
    def _error(res: ToolResult) -> str | None:
        return None if res.ok else (res.error or f"{res.tool} was refused")

    # ---- state -------------------------------------------------------------------------------
    @property
    def episode(self) -> Episode:
        """The episode driven (its typed methods take every tool call)."""
        return self._episode

    @property
    def done(self) -> bool:
        return self.episode.done

    @property
    def truncated(self) -> bool:
        return False   # no time limit inside an Episode

    @property
    def images_left(self) -> int:
        return self.episode.images_left

    @property
    def image_budget(self) -> int:
        return self.episode.image_budget

    @property
    def task_frame(self) -> TaskFrame:
        return self.episode.task_frame

    def latest_image(self) -> np.ndarray:
        return self.episode.latest_image

    def latest_frame(self) -> EpisodeFrame:
        ep = self.episode
        return ep.frames[max(ep.frames)]

    def privileged(self) -> PrivilegedFrame:
        return self.renderer.capture_privileged(self.latest_frame().pose)

    def coverage(self) -> float:
        return _coverage(self.episode)

    # ---- tool calls --------------------------------------------------------------------------
    def rotate(self, yaw_deg: float, pitch_deg: float) -> str | None:
        return self._error(self.episode.rotate_camera(yaw=yaw_deg, pitch=pitch_deg))

    def move(self, translation_m: np.ndarray) -> str | None:
        f, r, u = (float(x) for x in translation_m)
        return self._error(self.episode.move_camera(forward=f, right=r, up=u))

    def capture(self) -> str | None:
        return self._error(self.episode.capture_image())

    def submit(self, positions: dict[str, np.ndarray]) -> list[str]:
        res = self.episode.submit_positions({k: [float(x) for x in v] for k, v in positions.items()})
        return list(res.result.get("accepted", [])) if res.ok else []

    def finish(self) -> None:
        self.episode.finish_mapping()

    def mean_iou(self) -> float | None:
        return None if self._metrics is None else float(self._metrics()["all"]["mean_iou"])

    def metrics(self) -> dict:
        """The scorer's metrics dict of the accepted map (only with ``metrics`` given)."""
        if self._metrics is None:
            raise RuntimeError("this EpisodePort does not score: pass metrics= to score step by step")
        return self._metrics()
