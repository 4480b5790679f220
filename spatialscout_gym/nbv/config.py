"""NBV settings and spaces (docs/protocol.md section 4 bounds): :class:`NBVConfig`, the action and
observation spaces it gives, the names of the discrete motions and map channels, and the
observation layouts other RL libraries expect (:data:`OBS_LAYOUTS`, :func:`layout_observation_space`,
:func:`layout_observation`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from gymnasium import spaces

from spatialscout_gym.envs.registration import NBV_V1_ID, NBV_V2_ID, NBV_V3_ID
from spatialscout_gym.episode.tools import MAX_TRANSLATION_M, PITCH_LIMIT_DEG

__all__ = ["NBVConfig", "N_SECTORS", "DISCRETE_MOTIONS", "MAP_CHANNELS", "MOTIONS", "nbv_action_space",
           "nbv_observation_space", "OBS_LAYOUTS", "VECTOR_KEYS", "check_obs_layout", "layout_observation_space",
           "layout_observation", "RESEARCH_KEYS", "DEPTH_MAX_M", "POINTS_BOUND_M", "MAX_INVENTORY",
           "OCCUPANCY_UNKNOWN", "OCCUPANCY_FREE", "OCCUPANCY_OCCUPIED", "research_observation_space",
           "DYNAMICS_ENV_IDS", "dynamics_env_id", "dynamics_record", "OCCUPANCY_FRAMES", "BLOCK_CAUSES"]

N_SECTORS = 8
"""Yaw sectors (45 degrees each) of the ``sectors`` observation."""

DISCRETE_MOTIONS: tuple[str, ...] = ("forward", "back", "left", "right", "up", "down",
                                     "turn_left", "turn_right", "look_up", "look_down")
"""Names of the discrete actions, in action-index order."""

MAP_CHANNELS: tuple[str, ...] = ("visited", "viewed", "inside")
"""Channels of the egocentric top-down ``map`` observation (see :meth:`ViewHistory.visit_map`)."""



BLOCK_CAUSES: tuple[str, ...] = ("wall", "floor", "ceiling", "off_floor")
"""What stopped a blocked move, in the order of the ``blocked`` observation (``blocked_obs``;
:meth:`~spatialscout_gym.nbv.walls.WallMap.block_cause`): a wall box, the floor slab, the ceiling
slab (the box the move's segment enters first), or the end off every floor footprint."""

MOTIONS: tuple[str, ...] = ("discrete", "continuous", "heading")
"""The NBV action-space kinds (see :class:`NextBestViewWrapper`'s Action Space)."""

OCCUPANCY_FRAMES: tuple[str, ...] = ("task", "gravity")
"""The frames the occupancy grid may live in (``NBVConfig.occupancy_frame``)."""

RESEARCH_KEYS: tuple[str, ...] = ("depth", "segmentation", "points", "occupancy")
"""The research observations ``privileged_obs`` turns on (``True``: all of them), in this order:
built from SAPIEN's privileged buffers of each capture (:mod:`spatialscout_gym.nbv.research`)."""

DEPTH_MAX_M = 100.0
"""Upper bound of the ``depth`` observation, metres: the renderer's far plane (nothing is hit beyond it)."""

POINTS_BOUND_M = 256.0
"""Bound of the ``points`` observation on each task-frame axis, metres (points are clipped to it)."""

MAX_INVENTORY = 40
"""Inventory entries a ``segmentation`` id can name (docs/protocol.md section 8: 35 or 40 targets)."""

OCCUPANCY_UNKNOWN, OCCUPANCY_FREE, OCCUPANCY_OCCUPIED = 0, 1, 2
"""Voxel states of the ``occupancy`` observation."""


@dataclass(frozen=True)
class NBVConfig:
    """Motion and observation settings shared by the wrapper and the NBV agents.

    Attributes
    ----------
    motion : {"discrete", "continuous", "heading"}
        Action space kind (see :class:`NextBestViewWrapper`).
    obs_size : int
        Side of the observed image, pixels (the capture is resized to it).
    move_m : float
        Discrete forward/back/left/right step, metres.
    lift_m : float
        Discrete up/down step, metres.
    turn_deg : float
        Discrete yaw step, degrees (45 aligns with the 8 yaw sectors).
    tilt_deg : float
        Discrete pitch step, degrees.
    max_yaw_deg, max_pitch_deg : float
        Continuous scaling of actions 3 and 4 (``[-1, 1]`` -> degrees).
    cell_m : float
        Side of the floor-grid cell over which the ``sectors`` feature counts captures, metres.
    map_cells : int
        Side of the egocentric ``map`` observation, cells.
    map_cell_m : float
        Side of one ``map`` cell, metres (the map covers ``map_cells * map_cell_m`` metres).
    view_range_m : float
        How far a capture counts as having viewed the floor in the ``map``'s "viewed" channel, metres.
    view_fov_deg : float
        Horizontal field of view of that wedge, degrees (the catalog cameras' 65 degrees); also
        the field of view the ``scan`` observation assumes for the depth of a capture.
    headings : int
        ``motion="heading"``: relative yaws to choose from, evenly spaced (6: every 60 degrees).
    strides_m : tuple of float
        ``motion="heading"``: distances to move along the chosen heading, metres (0 turns only).
    hold_pitch_deg : float
        ``motion="heading"``: the pitch every heading step sets, degrees (elevation, up +).
    scan_bins : int
        Egocentric bins of the ``scan`` observation (0: no ``scan`` key, as in policies trained
        before it existed).
    scan_range_m : float
        Free distance at which ``scan`` saturates to 1, metres.
    scan_radius_m : float
        Captures taken within this floor distance of the camera feed ``scan``, metres.
    reward_submitted_weight : float
        The reward is the change in all-target mean IoU plus this weight times the change in
        submitted mean IoU (docs/protocol.md section 6), both fractions in [0, 1]; 0 (default):
        all-target only. A positive weight values placing mapped targets better against
        mapping more of them (with the surface mapper: second views over first sightings). It
        changes training only: agents are scored by the runner, never by this reward.
    privileged_obs : tuple of str
        Research observations to add (:data:`RESEARCH_KEYS`: ``"depth"``, ``"segmentation"``,
        ``"points"``, ``"occupancy"``); ``True`` gives all four, ``False`` or ``()`` none (default),
        a name or a list of names those. Only the ``"dict"`` and ``"image+vector"`` layouts carry them.
    points : int
        N, rows of the ``points`` observation (task-frame surface points of the latest capture).
    occupancy_cells : tuple of int
        ``(nx, ny, nz)``: voxels of the ``occupancy`` grid along the task frame's x, y, z.
    occupancy_voxel_m : float
        Side of one voxel, metres; the grid is centred on the task-frame origin (the initial
        camera position), so it spans ``[-n v / 2, n v / 2)`` on each axis.
    occupancy_range_m : float
        Rays mark voxels up to this distance from the camera, metres (a hit farther away marks
        free space up to it and nothing occupied).
    occupancy_rays : int
        R: each capture updates the grid along R x R rays, the depth samples of an R x R grid over
        the capture (sampled as the observation grid is; at the 65-degree field of view, 32 rays
        are 16 cm apart 4 m away, closer than the 25 cm voxels).
    reward_blocked_penalty : float
        The reward subtracts this amount on a step whose move walls, floor or ceiling blocked (an
        all-target mean IoU fraction; 0, default: no penalty). It changes training only, like the
        weights above; needs ``walls``.
    reward_occupancy_weight : float
        The reward adds this weight times the occupancy gain of the step: the newly known voxels
        (unknown before, free or occupied after) as a fraction of the grid's voxels, in [0, 1].
        0 (default): no occupancy term. A positive weight keeps the occupancy grid even without
        the ``occupancy`` observation.
    occupancy_frame : str
        The frame of the ``occupancy`` grid: ``"task"`` (default; docs/protocol.md section 2:
        axes the initial camera's forward, left, up, so pitched with the start camera) or
        ``"gravity"`` (origin the initial camera position, x the initial heading projected on the
        floor, y to its left, z world up: floor and ceiling each lie in one layer).
    walls : bool
        Walls stop the camera (``SpatialScout/NBV-v2``'s default; NBV-v0/v1: False): a move whose
        straight segment enters a wall of the scene (inflated by ``wall_margin_m``) or ends off
        the floor is blocked, the camera stays where it was (the rotation still happens) and
        ``info["blocked"]`` is True (:mod:`spatialscout_gym.nbv.walls`).
    wall_margin_m : float
        How close to a wall face a move may bring the camera centre, metres.
    blocked_obs : bool
        Add the ``blocked`` observation (``SpatialScout/NBV-v3``'s default; needs ``walls``): 4
        numbers, one-hot over :data:`BLOCK_CAUSES` when the last step's move was blocked, all 0
        when it was not and after reset.
    mask_guard_m : float or None
        What :meth:`NBVCore.action_masks <spatialscout_gym.nbv.core.NBVCore.action_masks>` gives:
        None (default) the walls' mask (privileged: from wall geometry the policy does not
        observe); a margin in metres, the scan guard's mask with that margin
        (:mod:`spatialscout_gym.nbv.scan_guard`: from the policy's own ``scan`` and ``blocked``
        observations, so not privileged), which is what a ``ppo:PATH`` policy with that
        ``scan_guard_m`` acts through. Training only (``train-nbv --action-mask-guard-m M``): a policy
        trained under it learns the distribution it will sample from. Needs the heading motion.
    """

    motion: str = "discrete"
    obs_size: int = 64
    move_m: float = 0.5
    lift_m: float = 0.25
    turn_deg: float = 45.0
    tilt_deg: float = 15.0
    max_yaw_deg: float = 180.0
    max_pitch_deg: float = 45.0
    cell_m: float = 1.0
    map_cells: int = 16
    map_cell_m: float = 0.75
    view_range_m: float = 4.0
    view_fov_deg: float = 65.0
    headings: int = 6
    strides_m: tuple[float, ...] = (0.0, 1.0, 2.0)
    hold_pitch_deg: float = -20.0
    scan_bins: int = 12
    scan_range_m: float = 6.0
    scan_radius_m: float = 1.0
    reward_submitted_weight: float = 0.0
    privileged_obs: tuple[str, ...] = ()
    points: int = 1024
    occupancy_cells: tuple[int, int, int] = (64, 64, 16)
    occupancy_voxel_m: float = 0.25
    occupancy_range_m: float = 8.0
    occupancy_rays: int = 32
    reward_occupancy_weight: float = 0.0
    occupancy_frame: str = "task"
    walls: bool = False
    wall_margin_m: float = 0.1
    blocked_obs: bool = False
    reward_blocked_penalty: float = 0.0
    mask_guard_m: float | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "privileged_obs", _research_keys(self.privileged_obs))
        object.__setattr__(self, "occupancy_cells", tuple(int(n) for n in np.atleast_1d(self.occupancy_cells)))
        object.__setattr__(self, "walls", bool(self.walls))
        object.__setattr__(self, "blocked_obs", bool(self.blocked_obs))
        if self.blocked_obs and not self.walls:
            raise ValueError("blocked_obs=True needs walls=True (without walls no move is ever blocked)")
        if int(self.points) < 1 or int(self.occupancy_rays) < 1:
            raise ValueError(f"points and occupancy_rays must be >= 1, got {self.points} and {self.occupancy_rays}")
        if len(self.occupancy_cells) != 3 or min(self.occupancy_cells) < 1 or not self.occupancy_voxel_m > 0 \
                or not self.occupancy_range_m > 0:
            raise ValueError(f"occupancy_cells must be 3 counts >= 1 and occupancy_voxel_m, occupancy_range_m "
                             f"> 0 metres; got {list(self.occupancy_cells)}, {self.occupancy_voxel_m}, "
                             f"{self.occupancy_range_m}")
        if not 0.0 <= float(self.reward_occupancy_weight) < float("inf") or not 0.0 <= float(self.wall_margin_m) < 1.0:
            raise ValueError(f"reward_occupancy_weight must be a finite number >= 0 and wall_margin_m in [0, 1) "
                             f"metres; got {self.reward_occupancy_weight} and {self.wall_margin_m}")
        if self.occupancy_frame not in OCCUPANCY_FRAMES:
            raise ValueError(f"occupancy_frame must be one of {', '.join(map(repr, OCCUPANCY_FRAMES))}, got "
                             f"{self.occupancy_frame!r}")
        if self.motion not in MOTIONS:
            raise ValueError(f"motion must be one of {', '.join(map(repr, MOTIONS))}, got {self.motion!r}")
        object.__setattr__(self, "strides_m", tuple(float(x) for x in np.atleast_1d(self.strides_m)))
        if int(self.headings) < 1 or not self.strides_m or min(self.strides_m) < 0 \
                or max(self.strides_m) > 2 * MAX_TRANSLATION_M + 1e-9:
            raise ValueError(f"headings must be >= 1 and strides_m non-empty, each in [0, "
                             f"{2 * MAX_TRANSLATION_M:g}] metres; got {self.headings} and {list(self.strides_m)}")
        if abs(float(self.hold_pitch_deg)) > PITCH_LIMIT_DEG:
            raise ValueError(f"hold_pitch_deg must be within +-{PITCH_LIMIT_DEG:g} degrees, got {self.hold_pitch_deg}")
        if int(self.scan_bins) < 0 or not self.scan_range_m > 0 or not self.scan_radius_m > 0:
            raise ValueError(f"scan_bins must be >= 0 and scan_range_m, scan_radius_m > 0 metres; got "
                             f"{self.scan_bins}, {self.scan_range_m}, {self.scan_radius_m}")
        if not 0.0 <= float(self.reward_blocked_penalty) < float("inf") or (self.reward_blocked_penalty
                                                                            and not self.walls):
            raise ValueError(f"reward_blocked_penalty must be a finite number >= 0, and needs walls=True (without "
                             f"walls no move is ever blocked); got {self.reward_blocked_penalty}")
        if self.mask_guard_m is not None and (isinstance(self.mask_guard_m, bool) or not 0.0 <= float(self.mask_guard_m)
                                              < float("inf") or self.motion != "heading"):
            raise ValueError(f"mask_guard_m must be None or a finite margin >= 0 metres, with motion 'heading'; "
                             f"got {self.mask_guard_m!r} with motion {self.motion!r}")
        if not 0.0 <= float(self.reward_submitted_weight) < float("inf"):
            raise ValueError(f"reward_submitted_weight must be a finite number >= 0, got {self.reward_submitted_weight}")
        if int(self.obs_size) < 8:
            raise ValueError(f"obs_size must be >= 8 pixels, got {self.obs_size}")
        if int(self.map_cells) < 2 or not self.map_cell_m > 0:
            raise ValueError(f"map_cells must be >= 2 and map_cell_m > 0 metres, got {self.map_cells} "
                             f"and {self.map_cell_m}")


def nbv_action_space(config: NBVConfig) -> spaces.Space:
    """``Discrete(10)`` (``DISCRETE_MOTIONS``), ``Discrete(headings x len(strides_m))`` or
    ``Box(-1, 1, (5,), float32)``."""
    if config.motion == "discrete":
        return spaces.Discrete(len(DISCRETE_MOTIONS))
    if config.motion == "heading":
        return spaces.Discrete(int(config.headings) * len(config.strides_m))
    return spaces.Box(-1.0, 1.0, (5,), np.float32)


def nbv_observation_space(config: NBVConfig) -> spaces.Dict:
    """The flat observation Dict (see :class:`NextBestViewWrapper`)."""
    s = int(config.obs_size)
    keys: dict[str, spaces.Space] = {
        "image": spaces.Box(0, 255, (s, s, 3), np.uint8),
        "pose": spaces.Box(-1.0, 1.0, (6,), np.float32),
        "coverage": spaces.Box(0.0, 1.0, (2,), np.float32),
        "sectors": spaces.Box(0.0, 1.0, (N_SECTORS,), np.float32),
        "map": spaces.Box(0.0, 1.0, (len(MAP_CHANNELS), int(config.map_cells), int(config.map_cells)), np.float32),
    }
    if int(config.scan_bins) > 0:
        keys["scan"] = spaces.Box(0.0, 1.0, (int(config.scan_bins),), np.float32)
    if config.blocked_obs:
        keys["blocked"] = spaces.Box(0.0, 1.0, (len(BLOCK_CAUSES),), np.float32)
    keys.update(research_observation_space(config))
    return spaces.Dict(keys)


def _research_keys(value: Any) -> tuple[str, ...]:
    """``privileged_obs`` as a tuple of :data:`RESEARCH_KEYS` (in that order), or a one-line ``ValueError``."""
    if value is True:
        return RESEARCH_KEYS
    if value is False or value is None:
        return ()
    names = [value] if isinstance(value, str) else list(value)
    bad = [n for n in names if n not in RESEARCH_KEYS]
    if bad:
        raise ValueError(f"privileged_obs must be True, False or names among {', '.join(map(repr, RESEARCH_KEYS))}; "
                         f"got {bad[0]!r}")
    return tuple(k for k in RESEARCH_KEYS if k in names)


def research_observation_space(config: NBVConfig) -> dict[str, spaces.Box]:
    """The research keys ``config.privileged_obs`` turns on (``s`` = ``obs_size``, ``N`` =
    ``points``, ``(nx, ny, nz)`` = ``occupancy_cells``): ``depth`` Box(0, 100, (s, s), float32)
    metres; ``segmentation`` Box(-1, 39, (s, s), int32) inventory index; ``points`` Box(-256, 256,
    (N, 3), float32) task-frame metres; ``occupancy`` Box(0, 2, (nx, ny, nz), uint8) unknown / free
    / occupied (meanings in :mod:`spatialscout_gym.nbv.research`)."""
    s, keys = int(config.obs_size), config.privileged_obs
    out: dict[str, spaces.Box] = {}
    if "depth" in keys:
        out["depth"] = spaces.Box(0.0, DEPTH_MAX_M, (s, s), np.float32)
    if "segmentation" in keys:
        out["segmentation"] = spaces.Box(-1, MAX_INVENTORY - 1, (s, s), np.int32)
    if "points" in keys:
        out["points"] = spaces.Box(-POINTS_BOUND_M, POINTS_BOUND_M, (int(config.points), 3), np.float32)
    if "occupancy" in keys:
        out["occupancy"] = spaces.Box(OCCUPANCY_UNKNOWN, OCCUPANCY_OCCUPIED, config.occupancy_cells, np.uint8)
    return out



OBS_LAYOUTS: tuple[str, ...] = ("dict", "image", "flat", "image+vector")
"""The observation layouts of the NBV envs (``obs_layout=``); ``"dict"`` is the default and the one
the NBV core and agents speak (see :func:`layout_observation_space`)."""

VECTOR_KEYS: tuple[str, ...] = ("pose", "coverage", "sectors", "map", "scan", "blocked")
"""The ``dict`` keys that make the flat ``vector`` of the ``"flat"`` and ``"image+vector"`` layouts,
in this order, each flattened C-order (``map`` as channel, row, column); ``scan`` only when
``scan_bins > 0``, ``blocked`` only with ``blocked_obs``."""


LaidOutObservation = dict[str, np.ndarray] | np.ndarray
"""An NBV observation in one of :data:`OBS_LAYOUTS` (:func:`layout_observation`): a dict of arrays
(``"dict"``, ``"image+vector"``) or one array (``"image"``, ``"flat"``)."""


def check_obs_layout(layout: str) -> str:
    """``layout`` when it is one of :data:`OBS_LAYOUTS`, else a ``ValueError`` naming them."""
    if layout not in OBS_LAYOUTS:
        raise ValueError(f"obs_layout must be one of {', '.join(map(repr, OBS_LAYOUTS))}, got {layout!r}")
    return layout


def _vector_box(keys: spaces.Dict) -> spaces.Box:
    boxes = [box for k in VECTOR_KEYS if isinstance(box := keys.spaces.get(k), spaces.Box)]   # every key is a Box
    low = np.concatenate([box.low.ravel() for box in boxes]).astype(np.float32)
    high = np.concatenate([box.high.ravel() for box in boxes]).astype(np.float32)
    return spaces.Box(low, high, dtype=np.float32)


def layout_observation_space(config: NBVConfig, layout: str = "dict") -> spaces.Space:
    """The observation space of ``layout`` (``s`` = ``obs_size``; the ``dict`` keys as in
    :func:`nbv_observation_space`; ``n`` = 796 with the default settings: 6 pose + 2 coverage + 8
    sectors + 3 x 16 x 16 map + 12 scan):

    * ``"dict"``: :func:`nbv_observation_space`, unchanged.
    * ``"image"``: ``Box(0, 255, (3, s, s), uint8)``, the ``image`` key alone, channel-first (RGB).
    * ``"image+vector"``: ``Dict(image=Box(0, 255, (3, s, s), uint8), vector=Box(low, high, (n,),
      float32))``: the channel-first image, and the other keys flattened in :data:`VECTOR_KEYS`
      order, each with its own bounds and units; the research keys of ``privileged_obs``
      (:func:`research_observation_space`) beside them, unchanged.
    * ``"flat"``: ``Box(low, high, (3 s s + n,), float32)``: the channel-first image scaled to
      [0, 1] (pixel value / 255) and flattened C-order, then the ``vector``.
    """
    keys = nbv_observation_space(config)
    if check_obs_layout(layout) == "dict":
        return keys
    if config.privileged_obs and layout in ("image", "flat"):
        raise ValueError(f"privileged_obs {list(config.privileged_obs)} needs a Dict layout: obs_layout 'dict' or "
                         f"'image+vector', got {layout!r}")
    s = int(config.obs_size)
    image = spaces.Box(0, 255, (3, s, s), np.uint8)
    if layout == "image":
        return image
    vector = _vector_box(keys)
    if layout == "image+vector":
        return spaces.Dict({"image": image, "vector": vector, **research_observation_space(config)})
    n = 3 * s * s
    return spaces.Box(np.concatenate([np.zeros(n, np.float32), vector.low]),
                      np.concatenate([np.ones(n, np.float32), vector.high]), dtype=np.float32)


def layout_observation(obs: dict[str, np.ndarray], layout: str = "dict") -> LaidOutObservation:
    """``obs`` (a ``dict`` observation, or a batch of them with leading axes) in ``layout``
    (:func:`layout_observation_space`); the numbers are the dict's, only moved, flattened and (the
    ``"flat"`` image) scaled to [0, 1]. ``"dict"`` returns ``obs`` itself."""
    if check_obs_layout(layout) == "dict":
        return obs
    image = np.moveaxis(np.asarray(obs["image"]), -1, -3)       # (..., H, W, 3) -> (..., 3, H, W)
    if layout == "image":
        return np.ascontiguousarray(image)
    lead = image.shape[:-3]
    vector = np.concatenate([np.asarray(obs[k], np.float32).reshape(*lead, -1)
                             for k in VECTOR_KEYS if k in obs], axis=-1)
    if layout == "image+vector":
        return {"image": np.ascontiguousarray(image), "vector": vector,
                **{k: obs[k] for k in RESEARCH_KEYS if k in obs}}
    pixels = image.reshape(*lead, -1).astype(np.float32) / np.float32(255.0)
    return np.concatenate([pixels, vector], axis=-1)


DYNAMICS_ENV_IDS: dict[bool, str] = {False: NBV_V1_ID, True: NBV_V2_ID}
"""The env id whose dynamics a config steps under, by ``walls``: NBV-v1 (the camera passes walls,
floor and ceiling; NBV-v0 moves the same) or NBV-v2 (walls, floor and ceiling stop it)."""


def dynamics_env_id(config: NBVConfig) -> str:
    """The env id of ``config``'s dynamics (:data:`DYNAMICS_ENV_IDS`), NBV-v3 where the config also
    observes blocked moves (``blocked_obs``: NBV-v2's dynamics, one more observation key)."""
    return NBV_V3_ID if config.blocked_obs else DYNAMICS_ENV_IDS[bool(config.walls)]


def dynamics_record(config: NBVConfig) -> dict[str, Any]:
    """What an NBV episode ran under, for ``result.json``'s ``nbv`` block: the dynamics (``env_id``,
    ``walls``, ``wall_margin_m``), the motion kind and the observation keys the agent was given."""
    return {"env_id": dynamics_env_id(config), "walls": bool(config.walls),
            "wall_margin_m": float(config.wall_margin_m), "motion": str(config.motion),
            "observation_keys": sorted(nbv_observation_space(config).spaces)}
