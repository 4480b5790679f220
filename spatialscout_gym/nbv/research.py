"""The research observations of the NBV envs (``privileged_obs``): depth, instance segmentation,
a point cloud and a voxel occupancy map of each capture, read from SAPIEN's privileged buffers of
the capture's own picture (the colour, depth and segmentation of one render:
:meth:`~spatialscout_gym.render.sapien_renderer.SapienRenderer.capture_privileged` after the
capture reads the same picture, so no second render happens).

With ``s`` = ``obs_size`` and the capture at ``H x W`` pixels (``resolution``), the observation
grid samples the capture at pixel ``(rows[i], cols[j])`` with ``rows[i] = floor((i + 1/2) H / s)``
and ``cols[j] = floor((j + 1/2) W / s)`` (:func:`sample_pixels`: the identity when ``s`` equals
the resolution; nearest sampling, never an average across an edge):

* ``depth`` (s, s) float32: distance along the optical axis, metres, at those pixels; 0 where
  nothing was hit.
* ``segmentation`` (s, s) int32: the index of the target seen at the pixel in the episode's
  inventory (``list_entities`` order, the row of the tool env's ``positions``); -1 for anything
  else (walls, furniture not in the inventory, nothing).
* ``points`` (N, 3) float32: task-frame surface points (metres, docs/protocol.md section 2) of
  the pixels with depth > 0, taken evenly over those pixels in row-major order: row m is the point
  of valid pixel ``floor(m V / N)`` of the V valid ones (:func:`point_pixels`), so when V < N
  every valid point repeats (padding by repetition, no made-up points); all zeros when V = 0.
  Clipped to +-256 m.
* ``occupancy`` (nx, ny, nz) uint8: the episode's :class:`~spatialscout_gym.nbv.occupancy.OccupancyGrid`
  after the capture (0 unknown, 1 free, 2 occupied; in the task frame, or gravity-aligned with
  ``occupancy_frame="gravity"``), updated along the rays to the surface points
  of an ``R x R`` grid of depth samples (R = ``occupancy_rays``, 32; sampled as above with R for s).
"""

from __future__ import annotations

import numpy as np

from spatialscout_gym.core.frames import TaskFrame
from spatialscout_gym.core.renderer_api import PrivilegedFrame
from spatialscout_gym.core.spec import SceneSpec
from spatialscout_gym.nbv.config import DEPTH_MAX_M, MAX_INVENTORY, POINTS_BOUND_M, NBVConfig
from spatialscout_gym.nbv.occupancy import OccupancyGrid, grid_frame

__all__ = ["ResearchObservations", "sample_pixels", "point_pixels"]


def sample_pixels(height: int, width: int, size: int) -> tuple[np.ndarray, np.ndarray]:
    """``(rows, cols)``, each (size,): the capture pixels the ``size x size`` observation grid
    reads (nearest to each observation pixel's centre)."""
    i = np.arange(int(size))
    return ((i + 0.5) * int(height) / int(size)).astype(np.int64), ((i + 0.5) * int(width) / int(size)).astype(np.int64)


def point_pixels(valid: np.ndarray, n: int) -> np.ndarray:
    """Flat (row-major) indices into the observation grid of the ``n`` rows of ``points``, given
    the grid's mask of pixels with depth > 0; empty when no pixel is valid."""
    flat = np.flatnonzero(np.asarray(valid).ravel())
    if not flat.size:
        return flat
    return flat[(np.arange(int(n)) * flat.size) // int(n)]


class ResearchObservations:
    """The research keys of one episode (see the module docstring); the NBV core calls
    :meth:`begin` at reset and :meth:`record` after every capture."""

    def __init__(self, config: NBVConfig) -> None:
        self.config = config
        self.keys = tuple(config.privileged_obs)
        keep_grid = "occupancy" in self.keys or float(config.reward_occupancy_weight) > 0
        self.occupancy = (OccupancyGrid(config.occupancy_cells, config.occupancy_voxel_m, config.occupancy_range_m)
                          if keep_grid else None)
        """The episode's occupancy grid (None when neither the observation nor the reward needs it)."""
        self.gain = 0
        """Voxels the latest :meth:`record` made known (0 before any)."""
        s = int(config.obs_size)
        self._depth = np.zeros((s, s), np.float32)
        self._seg = np.full((s, s), -1, np.int32)
        self._points = np.zeros((int(config.points), 3), np.float32)
        self._lut = np.full(1, -1, np.int32)

    @property
    def needed(self) -> bool:
        """Whether captures must be read (some key is on, or the occupancy reward is)."""
        return bool(self.keys) or self.occupancy is not None

    def begin(self, spec: SceneSpec) -> None:
        """A new episode in ``spec``: forget the last one's captures and grid."""
        inventory = {e.id: i for i, e in enumerate(spec.public.inventory)}
        # privileged object index -> inventory index; one more -1 at the end for "nothing" (-1)
        self._lut = np.array([inventory.get(o.id, -1) for o in spec.private.objects] + [-1], np.int32)
        self._lut[self._lut >= MAX_INVENTORY] = -1
        self._depth[:] = 0.0
        self._seg[:] = -1
        self._points[:] = 0.0
        self.gain = 0
        if self.occupancy is not None:
            self.occupancy.reset()

    def record(self, privileged: PrivilegedFrame, task_frame: TaskFrame, camera_task: np.ndarray) -> None:
        """Read the latest capture's :class:`~spatialscout_gym.core.renderer_api.PrivilegedFrame`
        (taken at task-frame position ``camera_task``, metres)."""
        depth = np.asarray(privileged.depth_m)
        rows, cols = sample_pixels(depth.shape[0], depth.shape[1], int(self.config.obs_size))
        d = np.clip(depth[rows[:, None], cols[None, :]], 0.0, DEPTH_MAX_M).astype(np.float32)
        self._depth = d
        if "segmentation" in self.keys:
            seg = np.asarray(privileged.segmentation)[rows[:, None], cols[None, :]]
            self._seg = self._lut.take(seg, mode="wrap")   # -1 wraps to the last entry (-1)
        if "points" in self.keys:
            world = np.asarray(privileged.position_world)[rows[:, None], cols[None, :]]    # (s, s, 3)
            valid = d > 0
            pick = point_pixels(valid, int(self.config.points))
            if pick.size:
                task = task_frame.to_task(world.reshape(-1, 3)[pick].astype(np.float64))
                self._points = np.clip(task, -POINTS_BOUND_M, POINTS_BOUND_M).astype(np.float32)
            else:
                self._points = np.zeros((int(self.config.points), 3), np.float32)
        if self.occupancy is not None:
            r_rows, r_cols = sample_pixels(depth.shape[0], depth.shape[1], int(self.config.occupancy_rays))
            hit = depth[r_rows[:, None], r_cols[None, :]] > 0
            world = np.asarray(privileged.position_world)[r_rows[:, None], r_cols[None, :]][hit]
            frame = grid_frame(task_frame, self.config.occupancy_frame)
            camera = np.asarray(camera_task, float)
            if frame is not task_frame:
                camera = frame.to_task(task_frame.to_world(camera))
            self.gain = self.occupancy.update(camera, frame.to_task(world.astype(np.float64)))

    def no_capture(self) -> None:
        """A step that captured nothing: no gain."""
        self.gain = 0

    def observation(self) -> dict[str, np.ndarray]:
        """The research keys that are on, as copies."""
        out: dict[str, np.ndarray] = {}
        if "depth" in self.keys:
            out["depth"] = self._depth.copy()
        if "segmentation" in self.keys:
            out["segmentation"] = self._seg.copy()
        if "points" in self.keys:
            out["points"] = self._points.copy()
        if "occupancy" in self.keys:
            assert self.occupancy is not None   # kept whenever the key is on (see __init__)
            out["occupancy"] = self.occupancy.grid.copy()
        return out
