"""A voxel occupancy grid in the task frame, updated from depth by ray casting: the ``occupancy``
observation and the occupancy-gain reward term of the NBV envs.

The grid has ``(nx, ny, nz)`` voxels of side ``v`` metres, axis-aligned in the task frame
(docs/protocol.md section 2: origin at the initial camera position, axes the initial camera's
forward, left, up; or, with ``occupancy_frame="gravity"``, in that frame without the start
camera's pitch, z world up: :func:`grid_frame`) and centred on its origin: voxel ``(i, j, k)`` spans
``x in [-nx v / 2 + i v, -nx v / 2 + (i + 1) v)`` and likewise in y and z. Each voxel is
unknown (0), free (1) or occupied (2) (:data:`~spatialscout_gym.nbv.config.OCCUPANCY_FREE` ...).

An update casts rays from the camera centre to the surface points of the depth samples: the voxel
holding each point becomes occupied, and the voxels a ray crosses before its point become free
(sampled every half voxel, all rays at once: no per-ray loop). Samples whose points lie in one
voxel share one free-space ray, the first of them (neighbours ending in one voxel cross the same
voxels), so the work grows with the surface voxels seen, not with the pixels. Occupied is final (a later
ray grazing an occupied voxel does not clear it). Rays are cut at ``range_m``: a farther hit marks
free space up to the range and nothing occupied; a ray that hit nothing (depth 0) marks nothing.
"""

from __future__ import annotations

import numpy as np

from spatialscout_gym.core.frames import TaskFrame
from spatialscout_gym.nbv.config import OCCUPANCY_FREE, OCCUPANCY_OCCUPIED, OCCUPANCY_UNKNOWN

__all__ = ["OccupancyGrid", "grid_frame"]


def grid_frame(task_frame: TaskFrame, frame: str) -> TaskFrame:
    """The frame the grid lives in (``NBVConfig.occupancy_frame``): the task frame itself for
    ``"task"``; for ``"gravity"`` the task frame's origin with x the initial heading on the floor,
    y to its left and z world up (the task frame without the start camera's pitch)."""
    if frame == "task":
        return task_frame
    yaw = np.radians(float(task_frame.initial_yaw_deg))
    c, s = np.cos(yaw), np.sin(yaw)
    return TaskFrame(np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]]), task_frame.origin_world.copy(),
                     float(task_frame.initial_yaw_deg))


class OccupancyGrid:
    """Unknown / free / occupied voxels in the task frame (see the module docstring).

    Parameters
    ----------
    cells : tuple of int
        ``(nx, ny, nz)`` voxels along the task frame's x, y, z.
    voxel_m : float
        Side of one voxel, metres.
    range_m : float
        Longest ray, metres.
    """

    def __init__(self, cells: tuple[int, int, int], voxel_m: float, range_m: float) -> None:
        self.cells = tuple(int(n) for n in cells)
        self.voxel_m = float(voxel_m)
        self.range_m = float(range_m)
        self.lower_m = -np.asarray(self.cells, float) * self.voxel_m / 2.0
        """Task-frame corner of voxel (0, 0, 0), metres."""
        self._flat = np.zeros(int(np.prod(self.cells)), np.uint8)
        self._known = 0

    @property
    def grid(self) -> np.ndarray:
        """The states, shape ``cells``, uint8 (a view: copy before keeping it)."""
        return self._flat.reshape(self.cells)

    @property
    def known(self) -> int:
        """Voxels that are free or occupied."""
        return self._known

    @property
    def size(self) -> int:
        """Voxels in the grid."""
        return self._flat.size

    def reset(self) -> None:
        """Every voxel unknown."""
        self._flat[:] = OCCUPANCY_UNKNOWN
        self._known = 0

    def voxel_of(self, points_task: np.ndarray) -> np.ndarray:
        """Integer ``(i, j, k)`` of task-frame points, shape (..., 3) (outside the grid where any
        index is out of ``[0, cells)``)."""
        return np.floor((np.asarray(points_task, float) - self.lower_m) / self.voxel_m).astype(np.int64)

    def _linear(self, points_task: np.ndarray) -> np.ndarray:
        """Flat indices of the points inside the grid (the others dropped)."""
        ijk = self.voxel_of(points_task)
        inside = np.all((ijk >= 0) & (ijk < np.asarray(self.cells)), axis=-1)
        ijk = ijk[inside]
        return (ijk[:, 0] * self.cells[1] + ijk[:, 1]) * self.cells[2] + ijk[:, 2]

    def update(self, origin_task: np.ndarray, points_task: np.ndarray) -> int:
        """Cast rays from ``origin_task`` (3,) to each of ``points_task`` (R, 3), task-frame metres
        (rows with a non-finite coordinate: no hit, skipped); return the newly known voxels."""
        o = np.asarray(origin_task, float).reshape(3)
        p = np.asarray(points_task, float).reshape(-1, 3)
        p = p[np.all(np.isfinite(p), axis=1)]
        if not len(p):
            return 0
        ray = p - o
        dist = np.linalg.norm(ray, axis=1)
        keep = dist > 1e-9
        ray, dist, p = ray[keep] / dist[keep, None], dist[keep], p[keep]
        hit = dist <= self.range_m
        end = np.where(hit[:, None], p, o + ray * self.range_m)
        # one free-space ray per distinct end voxel (the first sample ending there): neighbouring
        # samples ending in one voxel cross the same voxels on their way, up to the last one
        key = np.clip(self.voxel_of(end), -1024, 1023) + 1024
        _, first = np.unique((key[:, 0] * 2048 + key[:, 1]) * 2048 + key[:, 2], return_index=True)
        ray_f, reach = ray[first], np.minimum(dist[first], self.range_m)
        step = self.voxel_m / 2.0
        # free samples every half voxel, up to half a voxel short of the surface point (or the range)
        t = (np.arange(int(np.ceil(float(reach.max()) / step)), dtype=np.float32) * step)         # (K,)
        stop = (reach - np.where(hit[first], step, 0.0)).astype(np.float32)
        # voxel coordinates (in voxels from the grid corner) of every sample, in float32
        g0 = ((o - self.lower_m) / self.voxel_m).astype(np.float32)
        g = g0 + (ray_f / self.voxel_m).astype(np.float32)[:, None, :] * t[None, :, None]          # (R', K, 3)
        ok = (t[None, :] < stop[:, None]) & np.all((g >= 0) & (g < np.asarray(self.cells, np.float32)), axis=2)
        ijk = g[ok].astype(np.int64)
        free = (ijk[:, 0] * self.cells[1] + ijk[:, 1]) * self.cells[2] + ijk[:, 2]
        occupied = self._linear(p[hit])
        before = self._known
        flat = self._flat
        mark = np.zeros(flat.size, bool)
        mark[free] = True
        mark &= flat != OCCUPANCY_OCCUPIED
        flat[mark] = OCCUPANCY_FREE
        flat[occupied] = OCCUPANCY_OCCUPIED
        self._known = int(np.count_nonzero(flat))
        return self._known - before
