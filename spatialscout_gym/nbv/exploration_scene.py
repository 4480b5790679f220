"""Exploration measured against the scene's own geometry, for the trace's ``nbv_step`` events (their
``explored`` field) and through them the run record's ``exploration`` block
(:mod:`spatialscout_gym.core.exploration`).

The scene's geometry is its :class:`~spatialscout_gym.nbv.walls.WallMap` (world frame, z up):

* **Interior** (the free volume the camera may explore): the world-aligned voxels of side
  :data:`VOXEL_M` whose centre lies over a floor box's footprint, above that floor's top and below
  the bottom of the lowest ceiling box over it (no ceiling over it: up to the highest ceiling, else
  :data:`NO_CEILING_M` above the floor), and inside no wall box. Objects standing in a room are not
  subtracted (they are not boxes of the shell).
* **Known voxels**: interior voxels that the rays of the captures so far made free or occupied. The
  rays are those of the ``occupancy`` observation (an ``occupancy_rays`` x ``occupancy_rays`` grid
  of depth samples per capture, up to ``occupancy_range_m``), cast in a world-aligned grid that
  covers the whole interior (not the 16 x 16 x 4 m observation grid).
* **Floor cells**: the world x-y squares of side :data:`FLOOR_CELL_M` whose centre lies over a floor
  footprint; a cell is explored once a depth sample of a capture hit the floor inside it: a surface
  point at most :data:`FLOOR_BAND_M` above the floor's top. Every pixel of the capture's depth is
  a sample (no subsampling).
* **Rooms**: the floor boxes (one per room), numbered in the scene's object order; the camera is in
  the first one whose footprint holds its x-y (None: over no floor).
"""

from __future__ import annotations

import numpy as np

from spatialscout_gym.core.renderer_api import PrivilegedFrame
from spatialscout_gym.nbv.occupancy import OccupancyGrid
from spatialscout_gym.nbv.research import sample_pixels
from spatialscout_gym.nbv.walls import WallMap

__all__ = ["SceneExploration", "VOXEL_M", "FLOOR_CELL_M", "FLOOR_BAND_M", "NO_CEILING_M", "room_of"]

VOXEL_M = 0.25
"""Side of the interior's voxels, metres."""
FLOOR_CELL_M = 0.25
"""Side of the floor cells, metres."""
FLOOR_BAND_M = 0.05
"""A surface point at most this far above the floor's top is on the floor, metres."""
NO_CEILING_M = 3.0
"""Interior height over a floor with no ceiling box in the scene, metres."""


def room_of(floors: np.ndarray, point_world: np.ndarray) -> int | None:
    """Index of the first floor box (``(m, 2, 3)`` AABBs) whose x-y footprint holds the point."""
    xy = np.asarray(point_world, float).reshape(-1)[:2]
    inside = np.all((floors[:, 0, :2] <= xy) & (xy <= floors[:, 1, :2]), axis=1)
    hit = np.flatnonzero(inside)
    return int(hit[0]) if hit.size else None


class SceneExploration:
    """Known interior voxels, explored floor cells and the room of the camera over one episode.

    Parameters
    ----------
    rays : int
        Depth samples per side of a capture's ray grid (the config's ``occupancy_rays``).
    range_m : float
        Longest ray, metres.
    """

    def __init__(self, rays: int, range_m: float) -> None:
        self.rays = int(rays)
        self.range_m = float(range_m)
        self.floors = np.zeros((0, 2, 3))
        self.interior_voxels = 0
        self.floor_cells_total = 0
        self._grid: OccupancyGrid | None = None
        self._centre = np.zeros(3)
        self._interior = np.zeros(0, np.int64)
        self._floor_set: set[tuple[int, int]] = set()
        self._floor_top = 0.0
        self._cells: set[tuple[int, int]] = set()
        self._new: list[tuple[int, int]] = []

    def begin(self, walls: WallMap) -> None:
        """A new episode in the scene of ``walls``."""
        self.floors = walls.floors
        self._cells, self._new = set(), []
        if not len(walls.floors):
            self._grid, self.interior_voxels, self.floor_cells_total, self._floor_set = None, 0, 0, set()
            return
        fl = walls.floors
        self._floor_top = float(fl[:, 1, 2].max())
        tops = fl[:, 1, 2]
        ceil = walls.ceilings
        z_hi = float(ceil[:, 0, 2].max()) if len(ceil) else float(tops.max()) + NO_CEILING_M
        lo = np.array([fl[:, 0, 0].min(), fl[:, 0, 1].min(), float(tops.min())])
        hi = np.array([fl[:, 1, 0].max(), fl[:, 1, 1].max(), z_hi])
        cells = tuple(int(n) for n in np.maximum(np.ceil((hi - lo) / VOXEL_M), 1))
        self._grid = OccupancyGrid(cells, VOXEL_M, self.range_m)   # type: ignore[arg-type]
        self._centre = lo + np.asarray(cells, float) * VOXEL_M / 2.0
        idx = np.indices(cells).reshape(3, -1).T
        centre = lo + (idx + 0.5) * VOXEL_M
        keep = np.zeros(len(centre), bool)
        for box in fl:
            over = np.all((box[0, :2] <= centre[:, :2]) & (centre[:, :2] <= box[1, :2]), axis=1)
            above_ceil = [c for c in ceil if c[0, 2] > box[1, 2]]
            top = np.full(len(centre), z_hi)
            for c in above_ceil:   # the lowest ceiling over each x-y
                under = np.all((c[0, :2] <= centre[:, :2]) & (centre[:, :2] <= c[1, :2]), axis=1)
                top = np.where(under, np.minimum(top, c[0, 2]), top)
            keep |= over & (centre[:, 2] > box[1, 2]) & (centre[:, 2] < top)
        for w in walls.walls:
            keep &= ~np.all((w[0] <= centre) & (centre <= w[1]), axis=1)
        self._interior = np.flatnonzero(keep)
        self.interior_voxels = int(self._interior.size)
        # floor cells: squares whose centre lies over a footprint
        i0, j0 = np.floor(lo[:2] / FLOOR_CELL_M).astype(int)
        i1, j1 = np.ceil(hi[:2] / FLOOR_CELL_M).astype(int)
        ii, jj = np.meshgrid(np.arange(i0, i1), np.arange(j0, j1), indexing="ij")
        xy = (np.stack([ii.ravel(), jj.ravel()], 1) + 0.5) * FLOOR_CELL_M
        over = np.zeros(len(xy), bool)
        for box in fl:
            over |= np.all((box[0, :2] <= xy) & (xy <= box[1, :2]), axis=1)
        self._floor_set = {(int(a), int(b)) for a, b in zip(ii.ravel()[over], jj.ravel()[over])}
        self.floor_cells_total = len(self._floor_set)

    def capture(self, privileged: PrivilegedFrame | None, camera_world: np.ndarray) -> None:
        """One capture's depth, taken from ``camera_world`` (world metres)."""
        if privileged is None or self._grid is None:
            return
        depth = np.asarray(privileged.depth_m)
        world = np.asarray(privileged.position_world, float)
        hit = (depth > 0) & np.all(np.isfinite(world), axis=-1)
        rows, cols = sample_pixels(depth.shape[0], depth.shape[1], self.rays)
        sample = world[rows[:, None], cols[None, :]][hit[rows[:, None], cols[None, :]]]
        self._grid.update(np.asarray(camera_world, float) - self._centre, sample - self._centre)
        pts = world[hit]
        pts = pts[pts[:, 2] <= self._floor_top + FLOOR_BAND_M]
        for c in {(int(a), int(b)) for a, b in np.floor(pts[:, :2] / FLOOR_CELL_M).astype(np.int64)}:
            if c in self._floor_set and c not in self._cells:
                self._cells.add(c)
                self._new.append(c)

    @property
    def known_voxels(self) -> int:
        """Interior voxels known (free or occupied) so far."""
        if self._grid is None:
            return 0
        return int(np.count_nonzero(self._grid.grid.ravel()[self._interior]))

    def scene(self) -> dict:
        """The scene's figures: ``interior_voxels``, ``voxel_m``, ``floor_cells``, ``floor_cell_m``, ``rooms``."""
        return {"interior_voxels": self.interior_voxels, "voxel_m": VOXEL_M,
                "floor_cells": self.floor_cells_total, "floor_cell_m": FLOOR_CELL_M, "rooms": int(len(self.floors))}

    def take(self, camera_world: np.ndarray) -> dict:
        """What changed since the last call: ``known_voxels`` (cumulative), ``floor_cells`` (the newly
        explored cells, sorted ``[i, j]``) and ``room`` (the camera's, at ``camera_world``)."""
        new, self._new = sorted(self._new), []
        return {"known_voxels": self.known_voxels, "floor_cells": [[a, b] for a, b in new],
                "room": room_of(self.floors, camera_world) if len(self.floors) else None}
