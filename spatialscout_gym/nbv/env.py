"""``SpatialScout/NBV-v1``: the next-best-view task as its own ``gymnasium.Env`` (:class:`NBVEnv`),
with the shipped policy's recipe as its defaults; ``SpatialScout/NBV-v2``: the same with walls
that stop the camera (``walls=True``); ``SpatialScout/NBV-v3``: NBV-v2 whose observation says
whether the last move was blocked and by what, with ``action_masks()`` (``blocked_obs=True``).

It holds a :class:`~spatialscout_gym.nbv.wrapper.NextBestViewWrapper` over the tool env and
delegates every step to it, so NBV-v0, NBV-v1, the vector envs and the NBV agents run one step
logic, the NBV core (:class:`~spatialscout_gym.nbv.core.NBVCore`); what NBV-v1 adds is
that ``env.unwrapped`` is the NBV task itself (its spaces, its spec sheet), not the inner tool env.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

import gymnasium as gym
import numpy as np
import numpy.typing as npt

from spatialscout_gym.core.spec import SceneSpec
from spatialscout_gym.nbv.wrapper import NextBestViewWrapper, make_nbv_env
from spatialscout_gym.core.frames import CameraPose
from spatialscout_gym.nbv.config import (LaidOutObservation, NBVConfig, check_obs_layout, layout_observation,
                                         layout_observation_space)
from spatialscout_gym.nbv.core import NBVCore

if TYPE_CHECKING:
    from spatialscout_gym.envs.spatialscout_env import SpatialScoutEnv
    from spatialscout_gym.nbv.mappers import Mapper

__all__ = ["NBVEnv", "NBV_V1_DEFAULTS", "make_nbv_v1_vector_env", "make_nbv_v2_vector_env", "make_nbv_v3_vector_env"]

NBV_V1_DEFAULTS: dict[str, Any] = {"scene": "procedural", "image_budget": 20, "resolution": 64,
                                   "mapper": "oracle", "motion": "heading", "obs_size": 64}
"""The task settings of the shipped policies' recipe (``models/nbv_ppo``, ``models/nbv_ppo_v3`` and
``models/nbv_ppo_v3_blocked``, their ``nbv_config.json``); the other :class:`~spatialscout_gym.nbv.wrapper.NBVConfig` fields keep
their defaults, which are the recipe's observation and motion. The recipe's training-only settings
are not defaults: its reward added 0.5 x the submitted mean IoU (``reward_submitted_weight``) and
was scored with the ``oracle-surface`` mapper (``reward_mapper``)."""


class NBVEnv(gym.Env):
    """Choose camera views in an indoor scene; an automatic mapper turns each capture into
    submissions, scored by the all-target mean IoU (``gym.make("SpatialScout/NBV-v1")``).

    ## Description
    Each step applies one camera motion (a turn to one of 6 relative headings, the pitch set to
    -20 degrees, then a stride of 0, 1 or 2 m along the new heading), captures an image, lets the
    mapper turn the capture into ``submit_positions`` entries and submits them. The default mapper,
    ``"oracle"``, submits the reference centre of every target seen in the capture's privileged
    segmentation, so the task is view planning: the all-target mean IoU (docs/protocol.md section 6)
    equals the fraction of the inventory seen. Scenes are procedural training scenes (a new one
    every 16 resets) unless ``scene`` names a catalog scene. The defaults are the task settings of
    the shipped PPO policies' recipe (:data:`NBV_V1_DEFAULTS`), so ``models/nbv_ppo`` runs in
    ``gym.make("SpatialScout/NBV-v2")`` (the env of its last training phase) and in NBV-v1 with no
    other arguments, and ``models/nbv_ppo_v3`` and ``models/nbv_ppo_v3_blocked`` in
    ``gym.make("SpatialScout/NBV-v3")``.

    The step logic is the NBV core's (:class:`~spatialscout_gym.nbv.core.NBVCore`, as
    :attr:`core`), driven by :class:`~spatialscout_gym.nbv.wrapper.NextBestViewWrapper` (held as
    :attr:`nbv`, over the tool env ``nbv.env``); every tool call it sends goes through the tool
    env's ``step``. Tool calls per step: 1 rotation, 0-4 moves of at most 0.577 m per axis, 1
    capture, 1 submission when the mapper adds entries; the tool-call budget is unlimited.

    ## Action Space
    ``Discrete(18)`` (``headings`` x ``len(strides_m)`` = 6 x 3): action ``a = 3 k + d`` turns by
    ``60 k`` degrees relative to the current heading (wrapped to (-180, 180], left +, about the
    world vertical), sets the pitch to ``hold_pitch_deg`` = -20 degrees (elevation, up +), then moves
    ``strides_m[d]`` = (0, 1, 2)[d] metres forward along the new horizontal heading.

    | a | turn (deg) | stride (m) |
    |---|---|---|
    | 0, 1, 2 | 0 | 0, 1, 2 |
    | 3, 4, 5 | +60 | 0, 1, 2 |
    | 6, 7, 8 | +120 | 0, 1, 2 |
    | 9, 10, 11 | 180 | 0, 1, 2 |
    | 12, 13, 14 | -120 | 0, 1, 2 |
    | 15, 16, 17 | -60 | 0, 1, 2 |

    A move the episode refuses (leaving the +-15 m world box) leaves the camera in place; the
    capture still happens and ``info["refused"]`` holds the refusal (a list of messages).
    ``motion="discrete"`` or ``"continuous"`` give NBV-v0's other action spaces.

    Walls (``walls=True``, NBV-v2's default; off in NBV-v1): a move whose straight world segment
    enters one of the scene's walls, floor or ceiling slabs (their boxes inflated by
    ``wall_margin_m`` = 0.1 m; door openings are gaps, so doorways pass; a vertical move, the
    discrete ``up``/``down`` or a continuous action's third component, stops short of the floor and
    the ceiling) or ends off the floor of the room or apartment is blocked: it is not sent, the camera stays where it was (the turn and pitch still happen, then
    the capture), and ``info["blocked"]`` is True (False for every other step; the key is there
    in NBV-v1 too, always False) (:mod:`spatialscout_gym.nbv.walls`).

    Action masks (NBV-v3; any env with walls): ``env.unwrapped.action_masks()`` is a bool array
    of shape (18,), True for each action whose move the walls would not block from the pose now
    (stride 0 is always True), sb3-contrib's ``MaskablePPO`` convention; the vector envs'
    ``action_masks()`` give shape (num_envs, 18). The mask is computed from the scene's wall,
    floor and ceiling boxes, geometry the agent has not observed, so a policy that reads it at
    evaluation is privileged: the mask shapes training only (``MaskablePPO.learn``), and at
    evaluation the policy acts on the ``blocked`` observation (``predict`` without
    ``action_masks``). A move the episode refuses (the +-15 m world box) is not masked.

    ## Observation Space
    A flat ``Dict`` (task frame of docs/protocol.md section 2: origin at the scene's search centre,
    x along the initial heading, z up; metres and degrees):

    | key | space | meaning |
    |---|---|---|
    | ``image`` | Box(0, 255, (64, 64, 3), uint8) | the latest capture (RGB), area-resized to ``obs_size`` |
    | ``pose`` | Box(-1, 1, (6,), float32) | camera position / (r + 0.5 m) (clipped; r the search radius), sin yaw, cos yaw (yaw from the initial heading), pitch / 85 deg |
    | ``coverage`` | Box(0, 1, (2,), float32) | fraction of the inventory submitted; fraction of the image budget left |
    | ``sectors`` | Box(0, 1, (8,), float32) | 1 where a capture was taken in the current 1 m floor cell with heading in 45-deg sector k (egocentric, k = 0 ahead, counter-clockwise) |
    | ``map`` | Box(0, 1, (3, 16, 16), float32) | egocentric top-down map of 0.75 m cells, heading up: captures per cell / 3, captures whose 65-deg, 4 m view wedge covered the cell / 4, inside the search radius |
    | ``scan`` | Box(0, 1, (12,), float32) | free distance / 6 m per egocentric 30-deg bin, from the privileged depth of captures taken within 1 m (0: not seen yet) |
    | ``blocked`` | Box(0, 1, (4,), float32) | NBV-v3 only (``blocked_obs``): the last step's move was blocked by a wall, the floor, the ceiling, or by ending off the floor (one-hot in that order, ``BLOCK_CAUSES``: the box the move entered first, else off the floor); all 0 when it was not blocked, and at reset |

    Research observations (``privileged_obs=True`` for all, or a list of names; off by default),
    read from SAPIEN's own buffers of the capture's single render (colour, depth and segmentation
    of one picture; :mod:`spatialscout_gym.nbv.research`). The ``s x s`` grid (s = ``obs_size``)
    samples capture pixel ``(floor((i + 1/2) H / s), floor((j + 1/2) W / s))`` of the ``H x W``
    render (the same pixel when ``resolution`` = ``obs_size``):

    | key | space | meaning |
    |---|---|---|
    | ``depth`` | Box(0, 100, (s, s), float32) | distance along the optical axis, metres; 0 where nothing was hit (the privileged frame's ``depth_m`` at the sampled pixels) |
    | ``segmentation`` | Box(-1, 39, (s, s), int32) | index of the target seen at the pixel in the inventory (``list_entities`` order: row i of the tool env's ``positions``); -1 for walls, other objects and nothing |
    | ``points`` | Box(-256, 256, (N, 3), float32) | task-frame surface points, metres, N = ``points`` (1024): row m is the point of valid pixel floor(m V / N) of the V pixels with depth > 0 in row-major order (repeated when V < N; all 0 when V = 0) |
    | ``occupancy`` | Box(0, 2, (64, 64, 16), uint8) | voxels of ``occupancy_voxel_m`` = 0.25 m in the task frame, centred on its origin (x, y in [-8, 8) m, z in [-2, 2) m; ``occupancy_cells``): 0 unknown, 1 free, 2 occupied, ray cast from the depth of every capture so far along a 32 x 32 grid of rays (``occupancy_rays``; free before the hit, occupied at it, occupied final, rays cut at ``occupancy_range_m`` = 8 m) |

    ``obs_layout`` gives the same numbers in the layouts other RL libraries expect (``n`` = 796 =
    6 + 2 + 8 + 3 x 16 x 16 + 12 with the defaults, 800 in NBV-v3; the ``vector`` is ``pose``,
    ``coverage``, ``sectors``, ``map``, ``scan``, ``blocked`` (NBV-v3) flattened C-order in that
    order, each in its own units and bounds above; the map as channel, row, column):

    | ``obs_layout`` | space | for |
    |---|---|---|
    | ``"dict"`` (default) | the Dict above | SB3 ``MultiInputPolicy``, the shipped policy, the NBV agents |
    | ``"image"`` | Box(0, 255, (3, 64, 64), uint8) | the ``image`` key alone, channel-first (RGB): CNN-only policies |
    | ``"image+vector"`` | Dict(image=Box(0, 255, (3, 64, 64), uint8), vector=Box(low, high, (796,), float32)) | a CNN on the image and an MLP on the vector (RLlib: ``spatialscout_gym.nbv.training.rllib_module.NBVConvModule``); the research keys beside them, unchanged |
    | ``"flat"`` | Box(low, high, (12288 + 796,), float32) | the channel-first image / 255 (in [0, 1]) flattened, then the ``vector``: MLP-only libraries |

    ## Rewards
    The change in the all-target mean IoU of the accepted map (docs/protocol.md section 6), so an
    episode's return is its final score minus that of the starting state (frame 0 is mapped at
    reset; ``reset``'s ``info["all_mean_iou"]``).
    ``reward_submitted_weight=w`` (default 0) adds w times the change in submitted mean IoU.
    ``reward_occupancy_weight=w`` (default 0) adds w times the occupancy gain: the voxels of the
    occupancy grid the step's capture made known (unknown before, free or occupied after), as a
    fraction of the grid's voxels (``info["occupancy_gain"]`` counts them; frame 0's are part of
    the starting state).

    ## Starting State
    A new scene per reset seed (procedural; every ``reconfigure_every`` = 16 resets a new layout),
    the camera at the scene's start pose turned by a random yaw, frame 0 captured and mapped.

    ## Episode End
    - Termination: the image budget V = 20 is used up (observed as ``coverage[1] == 0``), or every
      inventory target is in the accepted map.
    - Truncation: none of its own; a ``TimeLimit`` (``max_episode_steps``) truncates.
    At the end ``finish_mapping`` is called and ``info["metrics"]`` holds the scorer's metrics.

    ## Info
    ``reset``'s ``info``: ``scene_id`` (str), ``inventory`` (the target ids to map, list of str),
    ``radius_m`` (the search radius, metres), ``counters`` (below), ``all_mean_iou`` (the starting
    state's all-target mean IoU, frame 0 mapped; fraction in [0, 1]) and ``coverage`` (fraction of
    the inventory in the accepted map). ``step``'s ``info``: ``counters`` (the episode's
    ``tool_calls``, ``images_used``, ``images_left``, ``calls_left``, ``done``, ``end_reason``),
    ``refused`` (the refusal messages of the step's tool calls, list of str; a refused move leaves
    the camera in place), ``submitted`` (target ids the mapper added this step), ``coverage``,
    ``all_mean_iou``, ``blocked`` (walls stopped the step's move; always False without walls),
    ``block_cause`` (NBV-v3: what stopped it, one of ``"wall"``, ``"floor"``, ``"ceiling"``,
    ``"off_floor"``, or None),
    ``occupancy_gain`` (voxels the capture made known; only with the occupancy observation or
    reward), and at the episode's end ``metrics`` (the scorer's metrics dict). Both carry the camera
    now: ``camera_pose_task`` (4 x 4 float64, camera body to task frame: columns 0-2 the camera's
    forward, left and up axes, column 3 its position in metres; the camera looks along its
    forward axis, ``R_world_cam``'s convention of docs/protocol.md section 2) and ``intrinsics``
    (3 x 3 float64 pinhole K of the captures, pixels, at ``resolution``).

    ## Resets and rendering
    ``reset(seed=k)`` seeds the env and, on procedural scenes, builds a new scene from that seed
    (0.6-1.3 s each on a 2-core CPU machine, against milliseconds for a reset on the same scene):
    seed the first reset only and let later ``reset()`` calls draw a new layout every
    ``reconfigure_every`` resets, or seeding every reset runs several times slower.
    ``reset(options={"scene": NAME})`` switches to another scene (a catalog id, ``procedural:<seed>``
    or a spec file); the spaces do not change. ``render()`` (``render_mode="rgb_array"``) returns
    the current view at the render grid, ``resolution`` x ``resolution`` pixels (uint8 RGB), not at
    the observation's ``obs_size``.

    ## Arguments
    ``gym.make("SpatialScout/NBV-v1", scene="procedural", image_budget=20, resolution=64,
    mapper="oracle", motion="heading", obs_size=64, reconfigure_every=16, random_start_yaw=True,
    render_mode=None, render_device=None, obs_layout="dict", **NBVConfig fields)``: ``scene`` is ``"procedural"``, a
    catalog id or a :class:`~spatialscout_gym.core.spec.SceneSpec`; ``image_budget`` V images per
    episode including frame 0; ``resolution`` the render grid in pixels; ``render_device`` the SAPIEN
    render device (e.g. ``"cuda"``); ``renderer`` a renderer object (tests pass a fake one);
    ``obs_layout`` one of ``"dict"``, ``"image"``, ``"image+vector"``, ``"flat"`` (Observation Space;
    the research keys need ``"dict"`` or ``"image+vector"``); ``privileged_obs`` True, False or names
    among ``"depth"``, ``"segmentation"``, ``"points"``, ``"occupancy"``, with ``points``,
    ``occupancy_cells``, ``occupancy_voxel_m``, ``occupancy_range_m``, ``occupancy_rays``,
    ``occupancy_frame`` (``"task"``, or ``"gravity"``: the grid without the start camera's pitch, z up),
    ``reward_occupancy_weight``;
    ``walls`` (NBV-v1: False, NBV-v2 and v3: True) and ``wall_margin_m`` (metres); ``blocked_obs``
    (NBV-v3: True; needs ``walls``).
    ``gym.make_vec("SpatialScout/NBV-v1", num_envs=N, vectorization_mode="vector_entry_point",
    num_workers=W)`` gives the vector env with the same defaults.

    ## Version History
    - v3: the ``blocked`` observation (``blocked_obs=True``), ``info["block_cause"]`` and
      ``action_masks()``; NBV-v2's dynamics, rewards and other keys unchanged. The shipped
      ``models/nbv_ppo_v3`` is ``models/nbv_ppo`` fine-tuned on NBV-v3 without the mask (plain PPO,
      110,592 steps; its ``nbv_config.json`` says ``"env_id": "SpatialScout/NBV-v3"`` and
      ``"init_model": "models/nbv_ppo"``), so ``evaluate --agent ppo:models/nbv_ppo_v3`` runs it under
      NBV-v3; ``models/nbv_ppo`` stays beside it, unchanged. ``models/nbv_ppo_v3_blocked`` is
      ``models/nbv_ppo`` fine-tuned on NBV-v3 in its weights on ``blocked`` alone (``train-nbv
      --train-only-blocked``, 110,592 steps; every other policy weight is ``models/nbv_ppo``'s, so it
      acts as that policy except on the step after a blocked move), acting through the scan guard
      with the scan held back until two blocked moves (``"scan_guard_after_blocked": 2``).
    - v2: walls stop the camera (``walls=True``: a move into a wall, the floor or the ceiling,
      or off the floor's footprint, is blocked, ``info["blocked"]``); otherwise v1. The shipped
      policy's last training phase ran in NBV-v2 (phase 4 of docs/nbv.md, continued from its NBV-v1
      weights; its ``nbv_config.json`` says ``"walls": true`` and ``"env_id": "SpatialScout/NBV-v2"``),
      so ``evaluate --agent ppo:...`` runs it under NBV-v2.
    - v1: its own env (``env.unwrapped`` is this task); defaults are the shipped policy's recipe
      (``motion="heading"``, the ``scan`` observation, V = 20, 64 px); same step logic as v0;
      ``obs_layout`` added (default ``"dict"``, unchanged); the research observations
      (``privileged_obs``), the occupancy reward term and the ``walls`` argument added, all off by
      default (dynamics unchanged); ``info["blocked"]`` added (always False unless ``walls=True``).
    - v0: ``NextBestViewWrapper`` over the tool env (``env.unwrapped`` is the tool env), with
      ``motion="discrete"`` (``Discrete(10)``) by default; unchanged.
    """

    metadata = {"render_modes": ["rgb_array"], "render_fps": 4}

    def __init__(self, scene: str | SceneSpec = NBV_V1_DEFAULTS["scene"], *,
                 image_budget: int = NBV_V1_DEFAULTS["image_budget"],
                 resolution: int = NBV_V1_DEFAULTS["resolution"], mapper: str | Mapper = NBV_V1_DEFAULTS["mapper"],
                 motion: str = NBV_V1_DEFAULTS["motion"], obs_size: int = NBV_V1_DEFAULTS["obs_size"],
                 render_mode: str | None = None, obs_layout: str = "dict", **kwargs: Any) -> None:
        self.obs_layout = check_obs_layout(obs_layout)
        """How observations are laid out (Observation Space); the NBV wrapper :attr:`nbv` keeps the dict."""
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(f"render_mode must be None or 'rgb_array', got {render_mode!r}")
        self.render_mode = render_mode
        nbv = make_nbv_env(scene, image_budget=image_budget, resolution=resolution, mapper=mapper, motion=motion,
                           obs_size=obs_size, render_mode=render_mode, **kwargs)
        assert isinstance(nbv, NextBestViewWrapper)   # obs_layout "dict" (the default): the wrapper itself
        self.nbv = nbv
        """The NBV step logic this env delegates to (over the tool env ``nbv.env``)."""
        self.action_space = self.nbv.action_space
        self.observation_space = layout_observation_space(self.nbv.config, obs_layout)

    @property
    def config(self) -> NBVConfig:
        """The :class:`~spatialscout_gym.nbv.config.NBVConfig` of the motion and observation."""
        return self.nbv.config

    @property
    def core(self) -> NBVCore:
        """The :class:`~spatialscout_gym.nbv.core.NBVCore` that runs the steps."""
        return self.nbv.core

    @property
    def tool_env(self) -> SpatialScoutEnv:
        """The inner :class:`~spatialscout_gym.envs.spatialscout_env.SpatialScoutEnv` (the episode,
        the scene spec, the metrics and the privileged frames live there)."""
        return self.nbv.port.tool_env

    def reset(self, *, seed: int | None = None, options: dict | None = None
              ) -> tuple[LaidOutObservation, dict[str, Any]]:
        super().reset(seed=seed)
        obs, info = self.nbv.reset(seed=seed, options=options)
        return layout_observation(obs, self.obs_layout), info

    def prepare_step(self, action: npt.ArrayLike) -> CameraPose | None:
        """:meth:`~spatialscout_gym.nbv.core.NBVCore.prepare` (the vector env's batched-render
        phase 1)."""
        return self.nbv.prepare_step(action)

    def step(self, action: npt.ArrayLike) -> tuple[LaidOutObservation, float, bool, bool, dict[str, Any]]:
        obs, reward, terminated, truncated, info = self.nbv.step(action)
        return layout_observation(obs, self.obs_layout), reward, terminated, truncated, info

    def action_masks(self) -> np.ndarray:
        """Shape (n,) bool: True for each action whose move the walls would not block (Action
        masks above; privileged: computed from geometry the agent has not observed)."""
        return self.nbv.action_masks()

    def render(self) -> np.ndarray | None:  # type: ignore[override]  # gymnasium types it with an unbound TypeVar
        return cast("np.ndarray | None", self.nbv.render())   # the tool env's rgb_array frame

    def close(self) -> None:
        self.nbv.close()
        super().close()


def make_nbv_v1_vector_env(num_envs: int = 1, **kwargs: Any) -> gym.vector.VectorEnv:
    """The vector entry point of ``SpatialScout/NBV-v1``: NBV-v0's (one process, or ``num_workers``
    processes) with :data:`NBV_V1_DEFAULTS` for the arguments not given."""
    from spatialscout_gym.nbv.workers import make_nbv_vector_env
    return make_nbv_vector_env(num_envs, **{**NBV_V1_DEFAULTS, **kwargs})


def make_nbv_v2_vector_env(num_envs: int = 1, **kwargs: Any) -> gym.vector.VectorEnv:
    """The vector entry point of ``SpatialScout/NBV-v2``: NBV-v1's with ``walls=True`` unless given."""
    return make_nbv_v1_vector_env(num_envs, **{"walls": True, **kwargs})


def make_nbv_v3_vector_env(num_envs: int = 1, **kwargs: Any) -> gym.vector.VectorEnv:
    """The vector entry point of ``SpatialScout/NBV-v3``: NBV-v2's with ``blocked_obs=True`` unless given."""
    return make_nbv_v2_vector_env(num_envs, **{"blocked_obs": True, **kwargs})
