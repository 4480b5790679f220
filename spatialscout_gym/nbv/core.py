"""The one NBV core: an NBV step is motion -> capture -> map -> observe -> reward -> end rule.

:class:`NBVCore` owns that sequence, the episode's :class:`~spatialscout_gym.nbv.features.ViewHistory`
and the score; it reaches the episode through a port (:class:`NBVPort`, implemented in
:mod:`spatialscout_gym.nbv.ports`):

* :class:`~spatialscout_gym.nbv.ports.ToolEnvPort` sends every tool call through a tool
  env's ``step`` (so wrappers inside see each call): :class:`~spatialscout_gym.nbv.wrapper.NextBestViewWrapper`,
  ``SpatialScout/NBV-v1`` and the vector envs;
* :class:`~spatialscout_gym.nbv.ports.EpisodePort` calls an
  :class:`~spatialscout_gym.episode.episode.Episode` directly: the NBV agents of
  ``spatialscout run/evaluate`` (:class:`NBVController`).

The end rule (docs/protocol.md section 5 budgets): the episode is over when the image budget is
used up, every inventory target is in the accepted map, a step captured nothing, or the episode
ended otherwise (the tool-call budget, ``finish_mapping``); a time limit inside the port is
truncation. When the rule ends it, the core calls ``finish_mapping``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

import numpy as np
import numpy.typing as npt

from spatialscout_gym.core.camera import Intrinsics
from spatialscout_gym.core.frames import CameraPose, TaskFrame, wrap_degrees
from spatialscout_gym.core.renderer_api import FrameSource, PrivilegedFrame
from spatialscout_gym.core.spec import SceneSpec
from spatialscout_gym.episode.episode import Episode, EpisodeFrame
from spatialscout_gym.episode.tools import PITCH_LIMIT_DEG
from spatialscout_gym.nbv.config import BLOCK_CAUSES, NBVConfig, nbv_action_space
from spatialscout_gym.nbv.exploration import ExplorationTally
from spatialscout_gym.nbv.features import ViewHistory, depth_rays, nbv_observation, yaw_sector
from spatialscout_gym.nbv.motion import motion_args, move_parts
from spatialscout_gym.nbv.ports import EpisodePort
from spatialscout_gym.nbv.research import ResearchObservations
from spatialscout_gym.nbv.walls import WallMap

if TYPE_CHECKING:
    from spatialscout_gym.nbv.mappers import Mapper

__all__ = ["NBVCore", "NBVPort", "NBVStep", "NBVController"]


class NBVPort(Protocol):
    """How the core reaches one episode. Poses are task-frame (docs/protocol.md section 2): metres,
    yaw from the initial heading and pitch (elevation, up +), degrees."""

    @property
    def spec(self) -> SceneSpec:
        """The episode's scene (the mapper's oracle data; never observed by the policy)."""

    @property
    def done(self) -> bool:
        """The episode ended (or a time limit inside cut it short); no more tool calls."""

    @property
    def truncated(self) -> bool:
        """The episode was cut short by a time limit inside the port (not over by its own rules)."""

    @property
    def radius_m(self) -> float:
        """The scene's search radius r, metres (docs/protocol.md section 1)."""

    @property
    def images_left(self) -> float:
        """Images left in the budget."""

    @property
    def image_budget(self) -> int:
        """V, images per episode including frame 0."""

    @property
    def task_frame(self) -> TaskFrame:
        """The episode's :class:`~spatialscout_gym.core.frames.TaskFrame`."""

    @property
    def pose_world(self) -> CameraPose:
        """The camera's :class:`~spatialscout_gym.core.frames.CameraPose` now (world frame)."""

    @property
    def intrinsics(self) -> Intrinsics:
        """The capture's pinhole :class:`~spatialscout_gym.core.camera.Intrinsics` (pixels)."""

    def camera(self) -> tuple[np.ndarray, float, float]:
        """``(position (3,), yaw_deg, pitch_deg)`` of the camera now, task frame."""

    def pitch_deg(self) -> float:
        """The camera's pitch now, degrees (what the heading motion turns from)."""

    def capture_pose_task(self) -> tuple[np.ndarray, float]:
        """``(position (3,), yaw_deg)`` of the latest capture, task frame."""

    def latest_image(self) -> np.ndarray:
        """The latest capture, (H, W, 3) uint8."""

    def latest_frame(self) -> EpisodeFrame | None:
        """The latest :class:`~spatialscout_gym.episode.episode.EpisodeFrame`, or None where the
        port sees only the tool env's observations."""

    def privileged(self) -> PrivilegedFrame:
        """Evaluator-only :class:`~spatialscout_gym.core.renderer_api.PrivilegedFrame` of the latest capture."""

    def coverage(self) -> float:
        """Fraction of the inventory in the accepted map."""

    def rotate(self, yaw_deg: float, pitch_deg: float) -> str | None:
        """``rotate_camera``; the refusal message or None."""

    def move(self, translation_m: np.ndarray) -> str | None:
        """``move_camera`` by (forward, right, up) metres; the refusal message or None."""

    def capture(self) -> str | None:
        """``capture_image``; the refusal message or None."""

    def submit(self, positions: dict[str, np.ndarray]) -> list[str]:
        """``submit_positions`` of task-frame centres (metres) by target id; the accepted ids."""

    def finish(self) -> None:
        """``finish_mapping``."""

    def mean_iou(self) -> float | None:
        """The all-target mean IoU of the accepted map (docs/protocol.md section 6), or None where
        the port does not score (the NBV agents: the runner scores the episode at its end)."""

    def metrics(self) -> dict:
        """The scorer's metrics dict of the accepted map (docs/protocol.md section 6); asked for only
        where :meth:`mean_iou` scores."""


@dataclass
class NBVStep:
    """What one NBV step did.

    Attributes
    ----------
    refused : list of str
        Refusal messages of the step's tool calls (a refused motion leaves the camera in place).
    captured : bool
        Whether the step captured an image.
    submitted : list of str
        Target ids the mapper added to the accepted map in this step.
    reward : float
        Change of the all-target mean IoU, plus ``config.reward_submitted_weight`` times the change
        of the submitted mean IoU, plus ``config.reward_occupancy_weight`` times the occupancy gain
        as a fraction of the grid's voxels (0 where the port does not score).
    score : float or None
        The all-target mean IoU after the step (None where the port does not score).
    coverage : float
        Fraction of the inventory in the accepted map.
    terminated, truncated : bool
        The end rule's verdict (see the module docstring).
    blocked : bool
        ``config.walls``: the move entered a wall or left the floor, so it was not sent (the
        camera stayed; :mod:`spatialscout_gym.nbv.walls`).
    block_cause : str or None
        What blocked it (one of :data:`~spatialscout_gym.nbv.config.BLOCK_CAUSES`), None when not blocked.
    occupancy_gain : int
        Voxels of the occupancy grid the step's capture made known (0 without a grid).
    """

    refused: list[str] = field(default_factory=list)
    captured: bool = False
    submitted: list[str] = field(default_factory=list)
    reward: float = 0.0
    score: float | None = None
    coverage: float = 0.0
    terminated: bool = False
    truncated: bool = False
    blocked: bool = False
    occupancy_gain: int = 0
    block_cause: str | None = None


class NBVCore:
    """Runs NBV steps on one episode through ``port``.

    Parameters
    ----------
    port : NBVPort
        The episode (see :mod:`spatialscout_gym.nbv.ports`).
    mapper : Mapper
        See :mod:`spatialscout_gym.nbv.mappers`.
    config : NBVConfig
    """

    def __init__(self, port: NBVPort, mapper: Mapper, config: NBVConfig) -> None:
        self.port = port
        self.mapper = mapper
        self.config = config
        self.radius_m = 0.0
        """The scene's search radius, metres (set by :meth:`begin`)."""
        self.history: ViewHistory | None = None
        """The episode's :class:`ViewHistory` (None before :meth:`begin`)."""
        self.score: float | None = None
        """The all-target mean IoU of the accepted map (None where the port does not score)."""
        self._objective: float | None = None   # what the reward is the change of
        self._last_privileged: PrivilegedFrame | None = None
        self._pending: tuple[np.ndarray, list[str], str | None] | None = None   # (action, refused, block cause)
        self.block_cause: str | None = None
        """What blocked the last step's move (:data:`~spatialscout_gym.nbv.config.BLOCK_CAUSES`), None
        when it was not blocked or no step was taken since :meth:`begin`: the ``blocked`` observation."""
        self._over = False
        self._blocked_from: list[tuple[np.ndarray, float]] = []   # the scan guard's memory (config.mask_guard_m)
        self.research = ResearchObservations(config)
        """The research observations (``config.privileged_obs``) and the occupancy grid."""
        self.walls: WallMap | None = None
        """The episode's walls and floor (``config.walls``; None otherwise)."""
        self._walls_of: SceneSpec | None = None   # the spec self.walls was built from
        self.exploration: ExplorationTally | None = None
        """The episode's exploration metrics (:mod:`spatialscout_gym.nbv.exploration`), kept when
        set before :meth:`begin` (the NBV agents' :class:`NBVController` does; None otherwise)."""

    # ---- episode start ---------------------------------------------------------------------
    def begin(self) -> None:
        """Start on the port's fresh episode (frame 0 captured): map frame 0, which is part of the
        starting state (not rewarded), and note the score."""
        self.radius_m = float(self.port.radius_m)
        self.history = ViewHistory(self.config.cell_m)
        self._last_privileged = None
        self._pending = None
        self.block_cause = None
        self._blocked_from = []
        self._over = False
        self.mapper.reset(self.port.spec)
        self.research.begin(self.port.spec)
        if self.config.walls and self._walls_of is not self.port.spec:
            self.walls = WallMap.from_spec(self.port.spec, self.config.wall_margin_m)
            self._walls_of = self.port.spec
        if self.exploration is not None:
            self.exploration.begin(self.walls if self.walls is not None
                                   else WallMap.from_spec(self.port.spec, self.config.wall_margin_m))
        self._after_capture()
        self.score = self.port.mean_iou()
        self._objective = self._objective_now()

    # ---- public state ----------------------------------------------------------------------
    @property
    def last_privileged(self) -> PrivilegedFrame | None:
        """Evaluator-only :class:`~spatialscout_gym.core.renderer_api.PrivilegedFrame` of the latest
        capture (None when neither the mapper nor the ``scan`` feature needs one)."""
        return self._last_privileged

    @property
    def pending(self) -> bool:
        """:meth:`prepare` applied a motion whose capture :meth:`step` has not taken yet."""
        return self._pending is not None

    @property
    def pose_world(self) -> CameraPose:
        """The camera's world-frame :class:`~spatialscout_gym.core.frames.CameraPose` now."""
        return self.port.pose_world

    @property
    def ended(self) -> bool:
        """The end rule holds: nothing more to step (then :meth:`finish`)."""
        p = self.port
        return self._over or p.done or p.images_left <= 0 or self.coverage() >= 1.0

    def coverage(self) -> float:
        """Fraction of the inventory in the accepted map."""
        return self.port.coverage()

    def camera_info(self) -> dict[str, np.ndarray]:
        """The camera now, for ``info``: ``camera_pose_task``, its 4 x 4 pose in the task frame
        (docs/protocol.md section 2: columns 0-2 the camera's forward, left and up axes, column 3
        its position in metres; maps camera-body coordinates to task coordinates), and
        ``intrinsics``, the 3 x 3 pinhole matrix K of the captures (pixels, docs/protocol.md
        section 3)."""
        frame, pose = self.port.task_frame, self.port.pose_world
        T = np.eye(4)
        T[:3, :3] = frame.R_world_task.T @ pose.R_world_cam
        T[:3, 3] = frame.to_task(pose.position_world)
        return {"camera_pose_task": T, "intrinsics": np.asarray(self.port.intrinsics.K, float)}

    def sector(self, yaw_deg: float) -> int:
        """The 45-degree yaw sector (0-7, counter-clockwise) of a heading in degrees, as the
        ``sectors`` feature counts it."""
        return yaw_sector(yaw_deg)

    def cell(self, position_world: np.ndarray) -> tuple[int, int]:
        """The ``(i, j)`` index of the ``config.cell_m`` floor-grid cell holding a world-frame
        position (metres, x and y), for heuristics' own bookkeeping."""
        return (int(np.floor(position_world[0] / self.config.cell_m)),
                int(np.floor(position_world[1] / self.config.cell_m)))

    def check_action(self, action: npt.ArrayLike) -> None:
        """Raise the one-line ``ValueError`` of :func:`motion_args` when ``action`` is outside the
        action space (nothing moves)."""
        motion_args(self.config, action)

    def observation(self) -> dict[str, np.ndarray]:
        """The observation of :func:`~spatialscout_gym.nbv.config.nbv_observation_space`."""
        p = self.port
        position, yaw, pitch = p.camera()
        if self.history is None:
            raise RuntimeError("call reset() first")
        obs = nbv_observation(self.config, p.latest_image(), position, yaw, pitch, self.radius_m,
                              self.coverage(), p.images_left / p.image_budget, self.history)
        if self.config.blocked_obs:
            blocked = np.zeros(len(BLOCK_CAUSES), np.float32)
            if self.block_cause is not None:
                blocked[BLOCK_CAUSES.index(self.block_cause)] = 1.0
            obs["blocked"] = blocked
        if self.research.keys:
            obs.update(self.research.observation())
        return obs

    def action_masks(self) -> np.ndarray:
        """Shape (n,) bool, one per action of the ``Discrete(n)`` action space: True where the
        action's move would not be blocked by the walls from the camera pose now (sb3-contrib's
        ``MaskablePPO`` convention: True = allowed). Computed from the scene's wall geometry, which
        the policy does not observe: a policy that reads it is privileged (train with it, evaluate
        on the ``blocked`` observation). All True without walls, before :meth:`begin` or once the
        episode has ended; a move the episode would refuse (the world box) is not masked.

        With ``config.mask_guard_m`` set it is instead the scan guard's mask with that margin, from
        the policy's own observations (not privileged): exactly what a ``ppo:PATH`` policy with that
        ``scan_guard_m`` acts through (:mod:`spatialscout_gym.nbv.scan_guard`)."""
        space = nbv_action_space(self.config)
        if not hasattr(space, "n"):
            raise ValueError(f"action_masks needs a discrete NBV action space (motion 'heading' or 'discrete'), "
                             f"got motion {self.config.motion!r}")
        n = int(space.n)
        mask = np.ones(n, bool)
        p = self.port
        if self.config.mask_guard_m is not None:
            return self._guard_mask(mask)
        if self.walls is None or self.history is None or p.done:
            return mask
        pose, pitch_now = p.pose_world, p.pitch_deg()
        for a in range(n):
            (yaw, pitch), move_args = motion_args(self.config, np.int64(a), pitch_now)
            move = np.asarray(move_args, float)
            if not np.any(move):
                continue
            # the pose after the step's rotation, as rotate_camera sets it (the move runs from there)
            turned = CameraPose(pose.position_world, wrap_degrees(pose.yaw_deg + yaw),
                                float(np.clip(pose.pitch_deg + pitch, -PITCH_LIMIT_DEG, PITCH_LIMIT_DEG)))
            mask[a] = not self.walls.blocks(turned, move)
        return mask

    def _guard_mask(self, everything: np.ndarray) -> np.ndarray:
        """The scan guard's mask now (``config.mask_guard_m``); ``everything`` before :meth:`begin`
        or once the episode has ended."""
        from spatialscout_gym.nbv.scan_guard import closed_headings, scan_guard_mask
        p = self.port
        if self.history is None or p.done or self.config.mask_guard_m is None:
            return everything
        position, yaw, _ = p.camera()
        scan = self.history.scan(position, yaw, self.config)   # the scan observation, as the policy sees it
        pose = p.pose_world
        closed = closed_headings(self._blocked_from, pose.position_world, float(pose.yaw_deg), self.config)
        return scan_guard_mask(scan, self.config, float(self.config.mask_guard_m), closed)

    def capture_pose(self) -> CameraPose | None:
        """The world pose this step's capture renders at, or None when it captures nothing (the
        episode ended or no image is left)."""
        if self.port.done or self.port.images_left <= 0:
            return None
        return self.port.pose_world

    # ---- the step --------------------------------------------------------------------------
    def prepare(self, action: npt.ArrayLike) -> CameraPose | None:
        """Phase 1 of :meth:`step`: apply ``action``'s motion (rotation, then moves; no rendering)
        and return :meth:`capture_pose`. The next :meth:`step` must get the same action; it then
        captures, maps and observes. The vector env renders all sub-envs' captures in one batched
        call between the two phases."""
        if self.history is None:
            raise RuntimeError("call reset() before step()")
        if self.port.done:
            raise RuntimeError("the episode has ended; call reset()")
        if self._pending is not None:
            raise RuntimeError("prepare_step() was already called for this step; call step(action) next")
        p = self.port
        (yaw, pitch), move_args = motion_args(self.config, action, p.pitch_deg())
        refused: list[str] = []
        if yaw or pitch:
            self._note(refused, p.rotate(yaw, pitch))
        move = np.asarray(move_args, float)
        cause = self.walls.block_cause(p.pose_world, move) \
            if np.any(move) and not p.done and self.walls is not None else None
        blocked = cause is not None
        before = p.pose_world.position_world.copy() if self.exploration is not None else None
        if np.any(move) and not p.done and not blocked:
            parts = move_parts(move)
            for _ in range(parts):
                if not p.done:
                    self._note(refused, p.move(move / parts))
        if self.exploration is not None and before is not None:
            self.exploration.step(before, p.pose_world.position_world, blocked)
        self._pending = (np.array(action, copy=True), refused, cause)
        return self.capture_pose()

    def step(self, action: npt.ArrayLike) -> NBVStep:
        """Move, capture, map and submit, score, and apply the end rule (calling ``finish_mapping``
        when it ends the episode)."""
        if self._pending is None:
            self.prepare(action)
        elif not np.array_equal(self._pending[0], np.asarray(action)):
            raise ValueError(f"step() got action {np.asarray(action).tolist()!r} but prepare_step() applied "
                             f"{self._pending[0].tolist()!r}; pass the same action")
        assert self._pending is not None   # set by prepare() (or before this step)
        refused, cause = self._pending[1], self._pending[2]
        blocked = cause is not None
        self.block_cause = cause
        self._pending = None
        p = self.port
        if blocked and self.config.blocked_obs:   # what a guarded agent remembers from its blocked observation
            self._blocked_from.append((np.array(p.pose_world.position_world, float), float(p.pose_world.yaw_deg)))
        captured, submitted = False, []
        self.research.no_capture()
        if not p.done and p.images_left > 0:
            error = p.capture()
            self._note(refused, error)
            if error is None:
                captured = True
                submitted = self._after_capture()
        before = self._objective
        if before is not None and submitted:
            self.score = p.mean_iou()
            self._objective = self._objective_now()
        coverage = self.coverage()
        truncated = p.truncated
        # no capture happens only when the episode ended or the image budget is used up
        terminated = bool(not truncated and (p.done or p.images_left <= 0 or coverage >= 1.0 or not captured))
        if terminated and not p.done:
            p.finish()
        self._over = terminated or truncated
        # the objective is None exactly when the port does not score (before is then None too)
        reward = 0.0 if before is None or self._objective is None else self._objective - before
        gain = self.research.gain
        occupancy = self.research.occupancy
        if before is not None and gain and self.config.reward_occupancy_weight and occupancy is not None:
            reward += float(self.config.reward_occupancy_weight) * gain / occupancy.size
        if blocked and self.config.reward_blocked_penalty:
            reward -= float(self.config.reward_blocked_penalty)
        return NBVStep(refused, captured, submitted, reward, self.score, coverage, terminated, truncated,
                       blocked=blocked, occupancy_gain=gain, block_cause=cause)

    def finish(self) -> None:
        """``finish_mapping`` unless the episode has ended already (after the last step, or when
        the starting state already meets the end rule)."""
        if not self.port.done:
            self.port.finish()

    def _objective_now(self) -> float | None:
        """All-target mean IoU plus ``config.reward_submitted_weight`` x submitted mean IoU of the
        accepted map now (None where the port does not score)."""
        if self.score is None:
            return None
        weight = float(self.config.reward_submitted_weight)
        if not weight:
            return self.score
        return self.score + weight * float(self.port.metrics()["submitted"]["mean_iou"])

    @staticmethod
    def _note(refused: list[str], error: str | None) -> None:
        if error is not None:
            refused.append(error)

    def _after_capture(self) -> list[str]:
        """Record the latest capture in the history, run the mapper on it and submit what it adds;
        returns the accepted ids."""
        p = self.port
        scan = self.config.scan_bins > 0
        research = self.research.needed
        tally = self.exploration
        priv = p.privileged() if getattr(self.mapper, "needs_privileged", False) or scan or research \
            or tally is not None else None
        rays = depth_rays(priv.depth_m, self.config.view_fov_deg) if priv is not None and scan else None
        position, yaw = p.capture_pose_task()
        if self.history is None:
            raise RuntimeError("call begin() first")
        self.history.record(position, yaw, rays)
        if research and priv is not None:   # read above whenever research is on
            self.research.record(priv, p.task_frame, position)
        if tally is not None:
            tally.capture(p.latest_image(), priv, p.task_frame, position)
        self._last_privileged = priv
        new = self.mapper.observe(p.latest_frame(), priv, p.task_frame)
        if not new or p.done:
            return []
        return p.submit(new)


class NBVController(NBVCore):
    """The NBV core over an :class:`~spatialscout_gym.episode.episode.Episode` (fresh, frame 0
    captured), started at construction: the NBV agents' driver. ``renderer`` renders the
    evaluator-only privileged frames; the episode is not scored step by step (rewards are 0); its
    exploration metrics are kept (:attr:`exploration`).

    Parameters
    ----------
    episode : Episode
    spec : SceneSpec
        The episode's scene (the mapper's oracle data; never observed by the policy).
    renderer : Renderer
    mapper : Mapper
    config : NBVConfig
    """

    def __init__(self, episode: Episode, spec: SceneSpec, renderer: FrameSource, mapper: Mapper,
                 config: NBVConfig) -> None:
        super().__init__(EpisodePort(episode, spec, renderer), mapper, config)
        self.episode = episode
        """The episode driven (its frames and poses are public)."""
        self.exploration = ExplorationTally(config)
        self.begin()
