"""Next-best-view (NBV) control: each step is a camera motion followed by a capture, and a mapper
turns captures into submissions.

Two drivers share the motion table (:func:`motion_args`), the view history behind the ``sectors``
feature (:class:`ViewHistory`) and the observation (:func:`nbv_observation`), so a policy sees the
same observations and actions in both:

* :class:`NextBestViewWrapper` (RL; ``gym.make("SpatialScout/NBV-v0")``) sends every tool call
  through the inner env's ``step``, so wrappers placed inside it see each call;
* :class:`NBVController` drives an :class:`Episode` directly, for the NBV agents of
  :mod:`spatialscout_gym.baselines.nbv_agents` run by ``spatialscout run/evaluate``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from spatialscout_gym.core.spec import SceneSpec
from spatialscout_gym.episode.episode import Episode
from spatialscout_gym.episode.tools import MAX_TRANSLATION_M, PITCH_LIMIT_DEG, SUBMIT_MARGIN_M, TOOL_NAMES

__all__ = ["NextBestViewWrapper", "NBVController", "NBVConfig", "DISCRETE_MOTIONS", "N_SECTORS",
           "make_nbv_env", "nbv_observation_space", "nbv_action_space", "motion_args", "ViewHistory",
           "nbv_observation", "MAP_CHANNELS", "move_parts", "depth_rays", "TRANSLATION_AXIS_M"]

N_SECTORS = 8
"""Yaw sectors (45 degrees each) of the ``sectors`` observation."""

DISCRETE_MOTIONS: tuple[str, ...] = ("forward", "back", "left", "right", "up", "down",
                                     "turn_left", "turn_right", "look_up", "look_down")
"""Names of the discrete actions, in action-index order."""

MAP_CHANNELS: tuple[str, ...] = ("visited", "viewed", "inside")
"""Channels of the egocentric top-down ``map`` observation (see :meth:`ViewHistory.visit_map`)."""

TRANSLATION_AXIS_M = MAX_TRANSLATION_M / np.sqrt(3.0)
"""Per-axis bound of one ``move_camera`` call in an NBV step (the inner env's ``translation`` box),
metres: a longer motion is sent as :func:`move_parts` equal calls, by both drivers alike."""


MOTIONS: tuple[str, ...] = ("discrete", "continuous", "heading")
"""The NBV action-space kinds (see :class:`NextBestViewWrapper`'s Action Space)."""


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

    def __post_init__(self) -> None:
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
    keys = {
        "image": spaces.Box(0, 255, (s, s, 3), np.uint8),
        "pose": spaces.Box(-1.0, 1.0, (6,), np.float32),
        "coverage": spaces.Box(0.0, 1.0, (2,), np.float32),
        "sectors": spaces.Box(0.0, 1.0, (N_SECTORS,), np.float32),
        "map": spaces.Box(0.0, 1.0, (len(MAP_CHANNELS), int(config.map_cells), int(config.map_cells)), np.float32),
    }
    if int(config.scan_bins) > 0:
        keys["scan"] = spaces.Box(0.0, 1.0, (int(config.scan_bins),), np.float32)
    return spaces.Dict(keys)


def _resize(image: np.ndarray, size: int) -> np.ndarray:
    """Area-resize an (H, W, 3) uint8 image to (size, size, 3)."""
    h, w = image.shape[:2]
    if (h, w) == (size, size):
        return image.copy()
    if h % size == 0 and w % size == 0:
        fh, fw = h // size, w // size
        blocks = image.reshape(size, fh, size, fw, 3).astype(np.float32).mean(axis=(1, 3))
        return np.rint(blocks).astype(np.uint8)
    from PIL import Image
    return np.asarray(Image.fromarray(image).resize((size, size), Image.BILINEAR), dtype=np.uint8)


def motion_args(config: NBVConfig, action, pitch_deg: float = 0.0
                ) -> tuple[tuple[float, float], tuple[float, float, float]]:
    """``((yaw_deg, pitch_deg), (forward_m, right_m, up_m))`` for ``action``; the rotation is
    applied first, so forward/right refer to the new heading. ``pitch_deg`` is the camera's pitch
    now (the heading motion turns it to ``hold_pitch_deg``). Raises ``ValueError`` for an action
    outside the action space (saying what was expected)."""
    c = config
    if c.motion == "heading":
        n = int(c.headings) * len(c.strides_m)
        arr = np.asarray(action)
        if arr.size != 1 or not np.issubdtype(arr.dtype, np.number) or not np.isfinite(arr).all() \
                or float(arr.item()) != int(arr.item()) or not 0 <= int(arr.item()) < n:
            raise ValueError(f"heading NBV action must be one integer in [0, {n - 1}] (heading index x "
                             f"{len(c.strides_m)} + stride index), got {np.asarray(action).tolist()!r}")
        k, d = divmod(int(arr.item()), len(c.strides_m))
        yaw = (360.0 / int(c.headings)) * k
        yaw = yaw - 360.0 if yaw > 180.0 else yaw
        pitch = float(c.hold_pitch_deg) - float(pitch_deg)
        return (float(yaw), pitch if abs(pitch) > 1e-9 else 0.0), (float(c.strides_m[d]), 0.0, 0.0)
    if c.motion == "discrete":
        arr = np.asarray(action)
        if arr.size != 1 or not np.issubdtype(arr.dtype, np.number) or not np.isfinite(arr).all() \
                or float(arr.item()) != int(arr.item()):
            raise ValueError(f"discrete NBV action must be one integer in [0, {len(DISCRETE_MOTIONS) - 1}] "
                             f"({', '.join(DISCRETE_MOTIONS)}), got {np.asarray(action).tolist()!r}")
        a = int(arr.item())
        if not 0 <= a < len(DISCRETE_MOTIONS):
            raise ValueError(f"discrete NBV action must be in [0, {len(DISCRETE_MOTIONS) - 1}] "
                             f"({', '.join(DISCRETE_MOTIONS)}), got {a}")
        name = DISCRETE_MOTIONS[a]
        rot = {"turn_left": (c.turn_deg, 0.0), "turn_right": (-c.turn_deg, 0.0),
               "look_up": (0.0, c.tilt_deg), "look_down": (0.0, -c.tilt_deg)}.get(name, (0.0, 0.0))
        move = {"forward": (c.move_m, 0, 0), "back": (-c.move_m, 0, 0), "left": (0, -c.move_m, 0),
                "right": (0, c.move_m, 0), "up": (0, 0, c.lift_m),
                "down": (0, 0, -c.lift_m)}.get(name, (0.0, 0.0, 0.0))
        return rot, tuple(float(x) for x in move)
    a = np.asarray(action, dtype=float).reshape(-1)
    if a.shape != (5,) or not np.all(np.isfinite(a)):
        raise ValueError(f"continuous NBV action must be 5 finite numbers in [-1, 1] (forward, "
                         f"right, up, yaw, pitch), got {np.asarray(action).tolist()}")
    a = np.clip(a, -1.0, 1.0)
    t = a[:3] * MAX_TRANSLATION_M
    norm = float(np.linalg.norm(t))
    if norm > MAX_TRANSLATION_M:
        t = t * (MAX_TRANSLATION_M / norm) * (1 - 1e-9)
    return (float(a[3] * c.max_yaw_deg), float(a[4] * c.max_pitch_deg)), tuple(float(x) for x in t)


def move_parts(move) -> int:
    """How many equal ``move_camera`` calls carry ``move`` (forward, right, up; metres): each
    stays within :data:`TRANSLATION_AXIS_M` per axis (so within the 1 m move bound)."""
    return max(1, int(np.ceil(float(np.max(np.abs(move))) / TRANSLATION_AXIS_M - 1e-9)))


def depth_rays(depth_m: np.ndarray, fov_deg: float, columns: int = 16) -> tuple[np.ndarray, np.ndarray]:
    """Free space ahead of a capture, from its depth: ``(angles_deg, free_m)``, each (columns,).

    The central band of rows (35-65% of the height) is split into ``columns`` vertical strips;
    a strip's free distance is the median range (depth / cos of the strip's angle) of its hits,
    metres, or infinity where nothing was hit. ``angles_deg`` is each strip's horizontal angle
    from the optical axis (left +), for a horizontal field of view ``fov_deg``.
    """
    depth = np.asarray(depth_m, float)
    h, w = depth.shape
    band = depth[int(0.35 * h):int(0.65 * h) + 1]
    edges = np.linspace(0, w, int(columns) + 1).round().astype(int)
    f = (w / 2.0) / np.tan(np.deg2rad(float(fov_deg)) / 2.0)
    centres = (edges[:-1] + edges[1:]) / 2.0
    angles = np.arctan((w / 2.0 - centres) / f)
    n = int(columns)
    if w % n == 0:   # equal strips: all medians from one sort (misses sorted last as infinity)
        strips = band.reshape(band.shape[0], n, w // n).transpose(1, 0, 2).reshape(n, -1)
        k = (strips > 0).sum(axis=1)
        ordered = np.sort(np.where(strips > 0, strips, np.inf), axis=1)
        lo, hi = ordered[np.arange(n), np.maximum(k - 1, 0) // 2], ordered[np.arange(n), k // 2 % strips.shape[1]]
        median = np.where(k % 2 == 1, lo, (lo + hi) / 2.0)
        free = np.where(k > 0, median / np.cos(angles), np.inf)
        return np.rad2deg(angles), free
    free = np.full(n, np.inf)
    for i in range(n):
        hits = band[:, edges[i]:edges[i + 1]]
        hits = hits[hits > 0]
        if hits.size:
            free[i] = float(np.median(hits)) / np.cos(angles[i])
    return np.rad2deg(angles), free


def _sector(yaw_deg: float) -> int:
    return int(np.floor(((yaw_deg + 22.5) % 360.0) / 45.0)) % N_SECTORS


class ViewHistory:
    """Where and with which heading every capture of the episode was taken: the memory behind the
    ``sectors`` and ``map`` observations.

    Positions are task-frame metres (docs/protocol.md section 2), of which only the x-y plane is used;
    headings are yaws relative to the initial heading, degrees. ``sectors`` counts captures per
    ``cell_m`` floor cell and 45-degree yaw sector.
    """

    def __init__(self, cell_m: float) -> None:
        self.cell_m = float(cell_m)
        self._visits: dict[tuple[int, int], np.ndarray] = {}
        self._xy: list[tuple[float, float]] = []
        self._yaw: list[float] = []
        self._rays: list[tuple[np.ndarray, np.ndarray]] = []   # per capture: heading (deg), free (m)

    def _cell(self, position_task) -> tuple[int, int]:
        return (int(np.floor(float(position_task[0]) / self.cell_m)),
                int(np.floor(float(position_task[1]) / self.cell_m)))

    def record(self, position_task, yaw_deg: float, rays: tuple[np.ndarray, np.ndarray] | None = None) -> None:
        """Note a capture at ``position_task`` (metres) with heading ``yaw_deg``; ``rays`` is its
        :func:`depth_rays` (angles relative to the heading, free distances), for ``scan``."""
        counts = self._visits.setdefault(self._cell(position_task), np.zeros(N_SECTORS))
        counts[_sector(yaw_deg)] += 1
        self._xy.append((float(position_task[0]), float(position_task[1])))
        self._yaw.append(float(yaw_deg))
        empty = (np.zeros(0), np.zeros(0))
        self._rays.append(empty if rays is None else (np.asarray(rays[0], float) + float(yaw_deg),
                                                      np.asarray(rays[1], float)))

    def scan(self, position_task, yaw_deg: float, config: "NBVConfig") -> np.ndarray:
        """Shape (``scan_bins``,): a pseudo laser scan, in [0, 1]. Bin k covers egocentric headings
        ``[k - 1/2, k + 1/2] * 360 / scan_bins`` degrees (k = 0 ahead, counter-clockwise); its value
        is the median free distance (:func:`depth_rays`) of the rays of captures taken within
        ``scan_radius_m`` of ``position_task`` that fall in it, / ``scan_range_m``, clipped to 1;
        0 where no such ray exists (unknown)."""
        n = int(config.scan_bins)
        out = np.zeros(n, np.float32)
        if not self._xy:
            return out
        d = np.linalg.norm(np.asarray(self._xy, float) - np.asarray(position_task, float)[:2], axis=1)
        near = [self._rays[i] for i in np.flatnonzero(d <= float(config.scan_radius_m))]
        if not near:
            return out
        heading = np.concatenate([r[0] for r in near]) - float(yaw_deg)
        free = np.minimum(np.concatenate([r[1] for r in near]), float(config.scan_range_m))
        bins = np.floor(((heading + 180.0 / n) % 360.0) / (360.0 / n)).astype(int) % n
        for k in np.unique(bins):
            out[k] = np.median(free[bins == k]) / float(config.scan_range_m)
        return np.clip(out, 0.0, 1.0)

    def sectors(self, position_task, yaw_deg: float) -> np.ndarray:
        """Shape (8,): 1 where a capture was taken in the cell of ``position_task`` with a heading
        in sector k, egocentric (k = 0 the current heading, counter-clockwise in 45-degree steps)."""
        counts = self._visits.get(self._cell(position_task), np.zeros(N_SECTORS))
        return np.roll(counts > 0, -_sector(yaw_deg)).astype(np.float32)

    def visit_map(self, position_task, yaw_deg: float, radius_m: float, config: "NBVConfig") -> np.ndarray:
        """The egocentric top-down ``map``, shape (3, M, M) with M = ``config.map_cells``, in [0, 1].

        Cell (i, j) is centred ``((M - 1) / 2 - i) * s`` metres ahead of the camera and
        ``(j - (M - 1) / 2) * s`` metres to its right (s = ``map_cell_m``; row 0 is farthest ahead,
        the camera sits at the centre, heading up). Channels (:data:`MAP_CHANNELS`):

        * ``visited``: captures taken in the cell, / 3, clipped to 1;
        * ``viewed``: captures whose horizontal view wedge (``view_fov_deg`` wide, ``view_range_m``
          deep, walls ignored) holds the cell centre, / 4, clipped to 1;
        * ``inside``: 1 where the cell centre is within the search radius ``radius_m`` + 0.5 m of
          the task origin (the public extent of the scene, docs/protocol.md section 1).
        """
        m, s = int(config.map_cells), float(config.map_cell_m)
        off = (np.arange(m) - (m - 1) / 2.0) * s
        yaw = np.deg2rad(float(yaw_deg))
        ahead, right = np.array([np.cos(yaw), np.sin(yaw)]), np.array([np.sin(yaw), -np.cos(yaw)])
        fwd, rgt = -off[:, None, None], off[None, :, None]          # (M, 1, 1), (1, M, 1)
        centres = np.asarray(position_task, float)[:2] + fwd * ahead + rgt * right   # (M, M, 2)
        out = np.zeros((len(MAP_CHANNELS), m, m), np.float32)
        if self._xy:
            caps = np.asarray(self._xy, float)                           # (K, 2)
            d = caps - np.asarray(position_task, float)[:2]
            row = np.floor(((m / 2.0) * s - d @ ahead) / s).astype(int)
            col = np.floor((d @ right + (m / 2.0) * s) / s).astype(int)
            ok = (row >= 0) & (row < m) & (col >= 0) & (col < m)
            np.add.at(out[0], (row[ok], col[ok]), 1.0 / 3.0)
            v = centres[:, :, None, :] - caps[None, None, :, :]         # (M, M, K, 2)
            dist = np.linalg.norm(v, axis=-1)
            rel = np.rad2deg(np.arctan2(v[..., 1], v[..., 0])) - np.asarray(self._yaw)
            rel = (rel + 180.0) % 360.0 - 180.0
            seen = (dist <= config.view_range_m) & ((np.abs(rel) <= config.view_fov_deg / 2.0) | (dist < s))
            out[1] = seen.sum(axis=-1) / 4.0
        out[2] = np.linalg.norm(centres, axis=-1) <= float(radius_m) + SUBMIT_MARGIN_M
        return np.clip(out, 0.0, 1.0)


def nbv_observation(config: NBVConfig, image: np.ndarray, position_task, yaw_deg: float, pitch_deg: float,
                    radius_m: float, coverage: float, images_left_fraction: float,
                    history: ViewHistory) -> dict[str, np.ndarray]:
    """The observation of :func:`nbv_observation_space` (copies, never views): the camera's
    task-frame pose (metres, degrees), the search radius (metres), the inventory fraction mapped
    so far, the image-budget fraction left and the episode's :class:`ViewHistory`."""
    scale = float(radius_m) + SUBMIT_MARGIN_M
    pos = np.clip(np.asarray(position_task, float) / scale, -1.0, 1.0)
    yaw = np.deg2rad(float(yaw_deg))
    pose_feat = np.array([*pos, np.sin(yaw), np.cos(yaw), float(pitch_deg) / PITCH_LIMIT_DEG], np.float32)
    cov = np.array([coverage, images_left_fraction], np.float32)
    return {"image": _resize(np.asarray(image), int(config.obs_size)),
            "pose": np.clip(pose_feat, -1.0, 1.0),
            "coverage": np.clip(cov, 0.0, 1.0),
            "sectors": history.sectors(position_task, yaw_deg),
            "map": history.visit_map(position_task, yaw_deg, radius_m, config),
            **({"scan": history.scan(position_task, yaw_deg, config)} if int(config.scan_bins) > 0 else {})}


class NBVController:
    """Runs NBV steps (motion, capture, mapping, submission) on one :class:`Episode` (the NBV
    agents' driver; RL goes through :class:`NextBestViewWrapper`).

    Parameters
    ----------
    episode : Episode
        A fresh episode (frame 0 captured).
    spec : SceneSpec
        The episode's scene (the mapper's oracle data; never observed by the policy).
    renderer : Renderer
        For privileged captures when ``mapper.needs_privileged``.
    mapper : Mapper
        See :mod:`spatialscout_gym.wrappers.nbv_mappers`.
    config : NBVConfig
    """

    def __init__(self, episode: Episode, spec: SceneSpec, renderer: Any, mapper: Any,
                 config: NBVConfig) -> None:
        self.episode = episode
        self.spec = spec
        self.renderer = renderer
        self.mapper = mapper
        self.config = config
        self.radius_m = float(episode.public.radius_m)
        self.history = ViewHistory(config.cell_m)
        self.last_privileged = None
        self.mapper.reset(spec)
        self._after_capture(max(episode.frames))

    def motion_args(self, action) -> tuple[tuple[float, float], tuple[float, float, float]]:
        """:func:`motion_args` with this controller's config and the camera's pitch now."""
        return motion_args(self.config, action, pitch_deg=float(self.episode.pose.pitch_deg))

    def step(self, action) -> dict:
        """Move (rotate, then translate), capture, map, submit. Returns a dict: ``refused`` (list
        of refusal messages; a refused part leaves the camera where it was), ``captured`` (bool),
        ``submitted`` (ids submitted in this step)."""
        ep = self.episode
        (yaw, pitch), (f, r, u) = self.motion_args(action)
        refused = []
        if yaw or pitch:
            res = ep.rotate_camera(yaw=yaw, pitch=pitch)
            if not res.ok:
                refused.append(res.error)
        parts = move_parts((f, r, u))
        for _ in range(parts if (f or r or u) else 0):
            if not ep.done:
                res = ep.move_camera(forward=f / parts, right=r / parts, up=u / parts)
                if not res.ok:
                    refused.append(res.error)
        captured, submitted = False, []
        if not ep.done and ep.images_left > 0:
            res = ep.capture_image()
            if res.ok:
                captured = True
                submitted = self._after_capture(res.frame_id)
            else:
                refused.append(res.error)
        return {"refused": refused, "captured": captured, "submitted": submitted}

    def _after_capture(self, frame_id: int) -> list[str]:
        ep = self.episode
        frame = ep.frames[frame_id]
        pose = ep.task_frame.pose_to_task(frame.pose)
        priv = None
        if getattr(self.mapper, "needs_privileged", False) or self.config.scan_bins > 0:
            priv = self.renderer.capture_privileged(frame.pose)
        rays = depth_rays(priv.depth_m, self.config.view_fov_deg) if self.config.scan_bins > 0 else None
        self.history.record(pose["position"], pose["yaw_deg"], rays)
        self.last_privileged = priv
        new = self.mapper.observe(frame, priv, ep.task_frame)
        if not new or ep.done:
            return []
        res = ep.submit_positions({k: [float(x) for x in v] for k, v in new.items()})
        return list(res.result.get("accepted", [])) if res.ok else []

    # ---- features (world-frame helpers kept for the frontier heuristic's own bookkeeping) ----
    def cell(self, position_world: np.ndarray) -> tuple[int, int]:
        """The ``(i, j)`` index of the ``config.cell_m`` grid cell holding a world-frame position
        (metres, x and y), used by the frontier heuristic's visit counts."""
        return (int(np.floor(position_world[0] / self.config.cell_m)),
                int(np.floor(position_world[1] / self.config.cell_m)))

    @staticmethod
    def _sector(yaw_deg: float) -> int:
        return _sector(yaw_deg)

    def coverage(self) -> float:
        """Fraction of the inventory in the accepted map."""
        return len(self.episode.accepted_map) / max(1, len(self.episode.inventory_ids))

    def observation(self) -> dict[str, np.ndarray]:
        """The observation of :func:`nbv_observation_space`."""
        ep = self.episode
        pose = ep.task_frame.pose_to_task(ep.pose)
        return nbv_observation(self.config, ep.latest_image, pose["position"], pose["yaw_deg"],
                               pose["pitch_deg"], self.radius_m, self.coverage(),
                               ep.images_left / ep.image_budget, self.history)


class NextBestViewWrapper(gym.Wrapper, gym.utils.RecordConstructorArgs):
    """Choose camera views; an automatic mapper turns each capture into submissions.

    ## Description
    Wraps a :class:`~spatialscout_gym.envs.spatialscout_env.SpatialScoutEnv` (possibly wrapped,
    e.g. ``gym.make("SpatialScout/Procedural-v0")``). Each step applies one camera motion
    (rotation first, then translation along the new heading), captures an image, lets the mapper
    turn the capture into ``submit_positions`` entries and submits them. Every one of these is a
    tool call sent through the inner env's ``step`` (so wrappers inside this one see them); the
    mapper reads the evaluator-only data it needs (the scene's target table, the privileged frame
    of each capture) from ``env.unwrapped`` (``scene_spec``, ``privileged_frame()``).

    How an NBV step counts against the inner episode's budgets: 1 tool call for the rotation (if
    any), 1 or more for the translation (if any: it is sent as :func:`move_parts` equal calls, each
    within the inner action space's per-axis bound of 0.577 m, so 1-2 for a continuous motion and
    up to 4 for a 2 m heading stride), 1 for the capture and 1 image (while images are left), and 1
    for the submission (when the mapper adds entries): 1 to 7 tool calls and 1 image.
    ``make_nbv_env`` and ``SpatialScout/NBV-v0`` make the inner tool-call budget unlimited, so the
    image budget alone ends the episode.
    The default mapper, ``"oracle"``
    (:class:`~spatialscout_gym.wrappers.nbv_mappers.OraclePerceptionMapper`), submits the reference
    centre of every target seen in the capture's privileged segmentation, so the task reduces to
    view planning: the all-target mean IoU equals the fraction of the inventory seen.

    ## Action Space
    ``motion="discrete"`` (default): ``Discrete(10)``, :data:`DISCRETE_MOTIONS`:

    | index | motion | amount |
    |---|---|---|
    | 0, 1 | forward, back (horizontal heading) | ``move_m`` = 0.5 m |
    | 2, 3 | left, right (horizontal) | ``move_m`` = 0.5 m |
    | 4, 5 | up, down (world vertical) | ``lift_m`` = 0.25 m |
    | 6, 7 | turn left, turn right (yaw) | ``turn_deg`` = 45 deg |
    | 8, 9 | look up, look down (pitch) | ``tilt_deg`` = 15 deg |

    ``motion="heading"``: ``Discrete(headings x len(strides_m))`` (6 x 3 = 18 by default); action
    ``a = k * len(strides_m) + d`` turns by ``k * 360 / headings`` degrees (k = 0 keeps the heading;
    wrapped to (-180, 180], left +), sets the pitch to ``hold_pitch_deg`` (-20), then moves
    ``strides_m[d]`` metres (0, 1 or 2) forward along the new heading: a turn-in-place or a stride
    through the room and its doorways with one image per step.

    ``motion="continuous"``: ``Box(-1, 1, (5,), float32)`` = (forward, right, up) in metres
    (the vector is shortened to 1 m if longer: docs/protocol.md section 4's move bound), yaw x
    ``max_yaw_deg`` (180) and pitch x ``max_pitch_deg`` (45) in degrees, relative.
    A motion the episode refuses (leaving the +-15 m world box; pitch is clamped to [-85, 85])
    leaves the camera in place; the capture still happens.

    ## Observation Space
    A flat ``Dict``:

    | key | space | meaning |
    |---|---|---|
    | ``image`` | Box(0, 255, (S, S, 3), uint8) | the latest capture, area-resized to S = ``obs_size`` (64) |
    | ``pose`` | Box(-1, 1, (6,), float32) | task-frame position / (r + 0.5 m) (clipped), sin yaw, cos yaw (yaw relative to the initial heading), pitch / 85 deg |
    | ``coverage`` | Box(0, 1, (2,), float32) | fraction of the inventory submitted; fraction of the image budget left |
    | ``sectors`` | Box(0, 1, (8,), float32) | 1 where an image was captured in the current 1 m floor cell with heading in 45-deg sector k (egocentric, k = 0 ahead, counter-clockwise) |
    | ``map`` | Box(0, 1, (3, M, M), float32) | egocentric top-down map, M = ``map_cells`` (16) cells of ``map_cell_m`` (0.75 m), heading up: captures taken per cell, captures whose view wedge covered the cell, inside the search radius (:meth:`ViewHistory.visit_map`) |
    | ``scan`` | Box(0, 1, (B,), float32) | B = ``scan_bins`` (12; absent when 0): a pseudo laser scan, the free distance / 6 m per egocentric 30-degree bin, from the privileged depth of the captures taken within 1 m (0 = not yet seen; :meth:`ViewHistory.scan`), the same depth the ``frontier-nbv`` heuristic steers by |

    ## Rewards
    The change in all-target mean IoU (docs/protocol.md section 6, paper scoring) of the accepted map, so
    an episode's return is its final all-target mean IoU minus that of the starting state: frame
    0's map is part of the starting state and not rewarded (``reset`` reports it as
    ``info["all_mean_iou"]``).

    ## Starting State
    The inner env's reset (a new ``SpatialScout/Procedural-v0`` scene per reset seed, or a fixed
    scene), with frame 0 captured and already mapped.

    ## Episode End
    - Termination: the image budget is used up (it is observed: ``coverage[1] == 0``, so the state
      is Markov and the episode is over, not cut short).
    - Termination: every inventory target is in the accepted map (nothing more to gain with the
      oracle mapper).
    - Termination: the inner episode ended for another reason (e.g. the inner env's tool-call
      budget; use ``tool_call_budget=None`` to avoid it, as :func:`make_nbv_env` does).
    - Truncation: none (add ``gymnasium.wrappers.TimeLimit`` for a shorter horizon).
    At the end the wrapper calls ``finish_mapping`` and ``info["metrics"]`` holds the scorer's
    metrics dict.

    ## Arguments
    ``NextBestViewWrapper(env, mapper="oracle", motion="discrete", obs_size=64, **NBVConfig fields)``;
    ``mapper`` is a name (``"oracle"``, ``"oracle-surface"``) or an object with the
    :class:`~spatialscout_gym.wrappers.nbv_mappers.Mapper` interface.
    ``gym.make("SpatialScout/NBV-v0", scene="procedural", image_budget=20, resolution=64,
    mapper="oracle", motion="discrete", obs_size=64, reconfigure_every=16, random_start_yaw=True)``
    (= :func:`make_nbv_env`) builds the inner env too; ``scene`` is ``"procedural"`` or a catalog id.

    ## Version History
    - v0: initial version; the ``map`` observation, the ``scan`` observation and the ``heading``
      motion added (``scan_bins=0`` gives the observation space without ``scan``).
    - ``SpatialScout/NBV-v1`` (:class:`~spatialscout_gym.wrappers.nbv_env.NBVEnv`) is this task as its
      own env with the shipped policy's recipe as defaults; it holds this wrapper and delegates to it.
    """

    def __init__(self, env: gym.Env, mapper: Any = "oracle", motion: str = "discrete",
                 obs_size: int = 64, **config: Any) -> None:
        gym.utils.RecordConstructorArgs.__init__(self, mapper=mapper, motion=motion, obs_size=obs_size, **config)
        gym.Wrapper.__init__(self, env)
        inner = env.unwrapped
        if not all(hasattr(inner, a) for a in ("privileged_frame", "scene_spec", "metrics", "task_frame")):
            raise TypeError(f"NextBestViewWrapper wraps a SpatialScoutEnv (gym.make('SpatialScout/...')); "
                            f"got {type(inner).__name__}")
        if not isinstance(env.action_space, spaces.Dict) or "tool" not in env.action_space.spaces:
            raise TypeError(f"NextBestViewWrapper needs the tool-call Dict action space of a SpatialScoutEnv "
                            f"directly inside it (no action wrapper in between); got {env.action_space}")
        self.config = NBVConfig(motion=motion, obs_size=int(obs_size), **config)
        if isinstance(mapper, str):
            from spatialscout_gym.wrappers.nbv_mappers import make_mapper
            mapper = make_mapper(mapper)
        self.mapper = mapper
        self.action_space = nbv_action_space(self.config)
        self.observation_space = nbv_observation_space(self.config)
        self._template = {k: np.zeros(sp.shape, sp.dtype) for k, sp in env.action_space.spaces.items()}
        for v in self._template.values():
            v.setflags(write=False)  # shared by every call's action (see _call)
        self._inv_index: dict[str, int] = {}
        self._history: ViewHistory | None = None
        self._last: dict | None = None
        self._score = 0.0
        self._pending: tuple[np.ndarray, list] | None = None   # (action, refused) after prepare_step

    # ---- inner tool calls ----------------------------------------------------------------------
    def _call(self, tool: str, **fields: Any):
        """One tool call through the inner env's ``step``; returns its five-tuple."""
        action = dict(self._template)   # unused fields: the read-only zero arrays, not copies
        action["tool"] = np.int64(TOOL_NAMES.index(tool))
        for k, v in fields.items():
            action[k] = np.asarray(v, dtype=self._template[k].dtype).reshape(self._template[k].shape)
        out = self.env.step(action)
        self._last, self._last_info = out[0], out[4]
        self._inner_done = bool(out[2] or out[3])
        # a time limit inside is truncation, reported as such (PPO bootstraps from truncated steps)
        self._inner_truncated = bool(out[3] and not out[2])
        return out

    @staticmethod
    def _note(refused: list[str], out: tuple) -> None:
        """Add an inner step's refusal message (if its tool call was refused) to ``refused``."""
        res = out[4]["tool_result"]
        if not res.get("ok"):
            refused.append(res.get("error"))

    def _after_capture(self) -> list[str]:
        """Record the view, run the mapper on the new frame and submit what it adds."""
        obs = self._last
        inner = self.env.unwrapped
        scan = self.config.scan_bins > 0
        priv = inner.privileged_frame() if getattr(self.mapper, "needs_privileged", False) or scan else None
        rays = depth_rays(priv.depth_m, self.config.view_fov_deg) if scan else None
        self._history.record(obs["camera_position"], float(obs["camera_yaw_pitch"][0]), rays)
        new = self.mapper.observe(None, priv, inner.task_frame)
        if not new or self._inner_done:
            return []
        positions = np.zeros(self._template["positions"].shape, np.float32)
        mask = np.zeros(self._template["submit_mask"].shape, np.int8)
        for tid, centre in new.items():
            i = self._inv_index[tid]
            positions[i] = centre
            mask[i] = 1
        _, _, _, _, info = self._call("submit_positions", positions=positions, submit_mask=mask)
        res = info["tool_result"]
        return list(res.get("result", {}).get("accepted", [])) if res.get("ok") else []

    def _observation(self) -> dict[str, np.ndarray]:
        obs = self._last
        images_left = float(obs["budgets"][0])
        position, (yaw, pitch) = obs["camera_position"], obs["camera_yaw_pitch"]
        return nbv_observation(self.config, obs["image"], position, float(yaw), float(pitch), self._radius_m,
                               self._coverage(), images_left / self._image_budget, self._history)

    def _coverage(self) -> float:
        obs = self._last
        return float(np.sum(obs["submitted"])) / max(1, int(np.sum(obs["inventory_mask"])))

    # ---- gymnasium API -------------------------------------------------------------------------
    def reset(self, *, seed: int | None = None, options: dict | None = None):
        obs, info = self.env.reset(seed=seed, options=options)
        inner = self.env.unwrapped
        spec = inner.scene_spec
        self._last, self._last_info, self._inner_done = obs, info, False
        self._inner_truncated = False
        self._pending = None
        self._radius_m = float(spec.public.radius_m)
        self._image_budget = int(inner.image_budget)
        self._inv_index = {e.id: i for i, e in enumerate(spec.public.inventory)}
        self._history = ViewHistory(self.config.cell_m)
        self.mapper.reset(spec)
        self._after_capture()  # frame 0's map is part of the starting state
        self._score = float(inner.metrics()["all"]["mean_iou"])
        info = dict(info, all_mean_iou=self._score, coverage=self._coverage())
        return self._observation(), info

    def prepare_step(self, action) -> Any:
        """Phase 1 of :meth:`step`: apply ``action``'s motion (rotation and moves; no rendering) and
        return the camera pose the step's capture will render at (a
        :class:`~spatialscout_gym.core.frames.CameraPose`), or None when the step captures nothing.

        The next :meth:`step` must get the same action; it then only captures, maps and observes,
        with the results ``step`` alone gives. :class:`~spatialscout_gym.wrappers.nbv_vector.NBVVectorEnv`
        uses this to render all sub-envs' captures in one batched call between the two phases."""
        if self._history is None:
            raise RuntimeError("call reset() before step()")
        if self._inner_done:
            raise RuntimeError("the episode has ended; call reset()")
        if self._pending is not None:
            raise RuntimeError("prepare_step() was already called for this step; call step(action) next")
        (yaw, pitch), move = motion_args(self.config, action, float(self._last["camera_yaw_pitch"][1]))
        refused: list[str] = []

        if yaw or pitch:
            self._note(refused, self._call("rotate_camera", rotation=[yaw, pitch]))
        move = np.asarray(move, float)
        if np.any(move) and not self._inner_done:
            parts = move_parts(move)
            for _ in range(parts):
                if not self._inner_done:
                    self._note(refused, self._call("move_camera", translation=move / parts))
        self._pending = (np.array(action, copy=True), refused)
        return self.capture_pose()

    def capture_pose(self) -> Any:
        """The camera pose this step's capture renders at, or None when it captures nothing (the
        inner episode ended or no image is left)."""
        if self._inner_done or self._last["budgets"][0] <= 0:
            return None
        return self.env.unwrapped.episode.pose

    def step(self, action):
        if self._pending is None:
            self.prepare_step(action)
        elif not np.array_equal(self._pending[0], np.asarray(action)):
            raise ValueError(f"step() got action {np.asarray(action).tolist()!r} but prepare_step() applied "
                             f"{self._pending[0].tolist()!r}; pass the same action")
        refused = self._pending[1]
        self._pending = None

        submitted: list[str] = []
        if not self._inner_done and self._last["budgets"][0] > 0:
            out = self._call("capture_image")
            self._note(refused, out)
            if out[4]["tool_result"].get("ok"):
                submitted = self._after_capture()
        inner = self.env.unwrapped
        score = float(inner.metrics()["all"]["mean_iou"]) if submitted else self._score
        reward = score - self._score
        self._score = score
        obs = self._last
        coverage = self._coverage()
        truncated = self._inner_truncated
        terminated = bool(not truncated and (self._inner_done or obs["budgets"][0] <= 0 or coverage >= 1.0))
        if terminated and not self._inner_done:
            self._call("finish_mapping")
        # the last inner step's info (counters; metrics and wrappers' keys such as "episode" at the end)
        info: dict[str, Any] = {k: v for k, v in self._last_info.items() if k != "tool_result"}
        info.update(refused=refused, submitted=submitted, coverage=coverage, all_mean_iou=score)
        if terminated or truncated:
            info["metrics"] = inner.metrics()
        return self._observation(), float(reward), terminated, truncated, info


def make_nbv_env(scene: str | SceneSpec = "procedural", *, image_budget: int = 20, resolution: int = 64,
                 mapper: Any = "oracle", motion: str = "discrete", obs_size: int = 64,
                 reconfigure_every: int = 16, random_start_yaw: bool = True, renderer: Any = None,
                 render_mode: str | None = None, render_device: str | None = None, **config: Any) -> gym.Env:
    """``gym.make("SpatialScout/NBV-v0", ...)``: :class:`NextBestViewWrapper` over
    ``gym.make("SpatialScout/Procedural-v0" or "SpatialScout/<scene>-v0")`` with an unlimited
    tool-call budget (the inner env checker is off: the wrapper's own checks cover its calls).

    Parameters
    ----------
    scene : str or SceneSpec
        ``"procedural"`` (a new training scene every ``reconfigure_every`` resets), a catalog id
        or a spec.
    image_budget : int
        V, images per episode including the initial one.
    resolution : int
        Render grid, pixels (the observation is resized to ``obs_size``).
    reconfigure_every : int
        Resets per procedural training scene (see ``SpatialScoutEnv``'s Starting State).
    random_start_yaw : bool
        Turn the start camera by a random yaw per episode (procedural scenes only; a catalog scene
        always starts from its own initial camera, as in evaluation).
    renderer : Renderer, optional
        Passed to the inner env (tests pass a fake one).
    render_device : str, optional
        SAPIEN render device of the inner env's renderer (e.g. ``"cuda"``); None: SAPIEN's default.
    """
    from spatialscout_gym.envs.registration import NAMESPACE, env_id_for_scene, register_envs
    register_envs()
    procedural = isinstance(scene, str) and scene == "procedural"
    env_id = f"{NAMESPACE}/Procedural-v0" if procedural or isinstance(scene, SceneSpec) else env_id_for_scene(scene)
    if env_id not in gym.registry:  # a spec path or procedural:<seed>: the generic entry point
        env_id = f"{NAMESPACE}/Procedural-v0"
    env = gym.make(env_id, scene=scene, resolution=resolution, image_budget=image_budget, tool_call_budget=None,
                   renderer=renderer, reconfigure_every=reconfigure_every, render_mode=render_mode,
                   random_start_yaw=bool(random_start_yaw) and procedural, disable_env_checker=True,
                   **({} if render_device is None else {"render_device": str(render_device)}))
    return NextBestViewWrapper(env, mapper=mapper, motion=motion, obs_size=obs_size, **config)
