"""Exploration metrics of one NBV episode, for ``result.json``'s ``nbv`` block (``exploration``)
and the ``compare``/``report`` tables: what active-mapping papers report beside the map's score.

* ``known_occupancy_fraction``: voxels of an :class:`~spatialscout_gym.nbv.occupancy.OccupancyGrid`
  (the config's ``occupancy_cells`` x ``occupancy_voxel_m``, task frame, centred on the start)
  that are free or occupied after every capture of the episode, frame 0 included, as a fraction
  of the grid's voxels; each capture casts the rays of the ``occupancy`` observation (an
  ``occupancy_rays`` x ``occupancy_rays`` grid of depth samples).
* ``explored_floor_m2``: the area of the world x-y cells (:data:`FLOOR_CELL_M` squares on the
  world grid) in which one of those depth samples hit the floor: a surface point at most
  :data:`FLOOR_BAND_M` above the floor's top (world z; the scene's ``"Floor"`` boxes, else z = 0)
  over a floor footprint.
* ``path_length_m``: the camera centre's travel over the episode's steps, world metres (a blocked
  or refused move adds nothing).
* ``blocked_moves``: steps whose move walls stopped (``info["blocked"]``).
* ``black_frames``: captures (frame 0 included) whose every RGB value is at most
  :data:`BLACK_LEVEL` (of 255): the camera saw nothing lit, e.g. from outside the rooms.
"""

from __future__ import annotations

import numpy as np

from spatialscout_gym.core.frames import TaskFrame
from spatialscout_gym.core.renderer_api import PrivilegedFrame
from spatialscout_gym.nbv.config import NBVConfig
from spatialscout_gym.nbv.exploration_scene import SceneExploration
from spatialscout_gym.nbv.occupancy import OccupancyGrid
from spatialscout_gym.nbv.research import sample_pixels
from spatialscout_gym.nbv.walls import WallMap

__all__ = ["ExplorationTally", "FLOOR_CELL_M", "FLOOR_BAND_M", "BLACK_LEVEL", "EXPLORATION_KEYS"]

FLOOR_CELL_M = 0.25
"""Side of the world x-y cells ``explored_floor_m2`` counts, metres."""

FLOOR_BAND_M = 0.05
"""A surface point at most this far above the floor's top is on the floor, metres."""

BLACK_LEVEL = 8
"""A capture whose every RGB value is at most this is a black frame."""

EXPLORATION_KEYS = ("known_occupancy_fraction", "explored_floor_m2", "path_length_m", "blocked_moves",
                    "black_frames")
"""The metrics, in the order tables show them."""


class ExplorationTally:
    """The exploration metrics of one episode (see the module docstring); the NBV core feeds it.

    Parameters
    ----------
    config : NBVConfig
        The occupancy grid's and rays' settings.
    """

    def __init__(self, config: NBVConfig) -> None:
        self.config = config
        self.grid = OccupancyGrid(config.occupancy_cells, config.occupancy_voxel_m, config.occupancy_range_m)
        self._floors = WallMap(np.zeros((0, 2, 3)), np.zeros((0, 2, 3)))
        self._floor_top = 0.0
        self._cells: set[tuple[int, int]] = set()
        self.path_length_m = 0.0
        self.blocked_moves = 0
        self.black_frames = 0
        self.scene = SceneExploration(config.occupancy_rays, config.occupancy_range_m)
        """The same captures measured against the scene's interior, floor and rooms
        (:mod:`spatialscout_gym.nbv.exploration_scene`), for the trace's step events."""

    def begin(self, floors: WallMap) -> None:
        """A new episode whose floors (footprints and tops) are ``floors``' ``floors`` (and whose
        walls and ceilings bound the interior :attr:`scene` measures)."""
        self.grid.reset()
        self._floors = floors
        self._floor_top = float(floors.floors[:, 1, 2].max()) if len(floors.floors) else 0.0
        self._cells = set()
        self.path_length_m = 0.0
        self.blocked_moves = 0
        self.black_frames = 0
        self.scene.begin(floors)

    def capture(self, image: np.ndarray, privileged: PrivilegedFrame | None, task_frame: TaskFrame,
                camera_task: np.ndarray) -> None:
        """One capture: its RGB ``image`` and its privileged buffers, taken at task-frame position
        ``camera_task`` (metres)."""
        if int(np.asarray(image).max(initial=0)) <= BLACK_LEVEL:
            self.black_frames += 1
        if privileged is None:
            return
        self.scene.capture(privileged, task_frame.to_world(np.asarray(camera_task, float).reshape(1, 3))[0])
        depth = np.asarray(privileged.depth_m)
        rows, cols = sample_pixels(depth.shape[0], depth.shape[1], int(self.config.occupancy_rays))
        hit = depth[rows[:, None], cols[None, :]] > 0
        world = np.asarray(privileged.position_world, float)[rows[:, None], cols[None, :]][hit]
        world = world[np.all(np.isfinite(world), axis=1)]
        self.grid.update(np.asarray(camera_task, float), task_frame.to_task(world))
        floor = world[world[:, 2] <= self._floor_top + FLOOR_BAND_M]
        for p in floor:
            if self._floors.on_floor(p):
                self._cells.add((int(np.floor(p[0] / FLOOR_CELL_M)), int(np.floor(p[1] / FLOOR_CELL_M))))

    def step(self, before_world: np.ndarray, after_world: np.ndarray, blocked: bool) -> None:
        """One step's move: the camera centre before and after it (world, metres), and whether walls
        stopped it."""
        self.path_length_m += float(np.linalg.norm(np.asarray(after_world, float) - np.asarray(before_world, float)))
        self.blocked_moves += int(bool(blocked))

    def metrics(self) -> dict[str, float | int]:
        """The metrics of :data:`EXPLORATION_KEYS` so far."""
        return {"known_occupancy_fraction": self.grid.known / self.grid.size,
                "explored_floor_m2": len(self._cells) * FLOOR_CELL_M ** 2,
                "path_length_m": self.path_length_m, "blocked_moves": self.blocked_moves,
                "black_frames": self.black_frames}
