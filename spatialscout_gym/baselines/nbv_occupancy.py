"""``nbv-occupancy-frontier``: a frontier-exploration baseline on the occupancy grid, in the learned
policies' action space (``SpatialScout/NBV-v1``/``v2``'s heading motion, ``Discrete(18)``).

Each step it reads the episode's ``occupancy`` observation (unknown / free / occupied voxels, task
frame; :mod:`spatialscout_gym.nbv.occupancy`) and marks the **frontier**: unknown voxels next to a
free one (6-neighbourhood). For each of the 18 actions (6 relative headings x strides 0, 1, 2 m)
it counts the frontier voxels the capture after it would face: within ``view_range_m`` of the end
position, within half the horizontal field of view (``view_fov_deg``) of the new heading and within
the vertical field of view around the held pitch. An action whose straight path crosses an occupied
voxel, or that the walls would block (NBV-v2's dynamics), is not taken. It takes the action facing
the most frontier (ties: the shorter stride, then ``rng``); when no action faces any, it strides
towards the nearest frontier voxel, and without a frontier it draws a random action.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from spatialscout_gym.baselines.nbv_agents import NBVAction, NBVAgent
from spatialscout_gym.baselines.registry import register_agent
from spatialscout_gym.core.frames import CameraPose
from spatialscout_gym.nbv.config import OCCUPANCY_FREE, OCCUPANCY_OCCUPIED, OCCUPANCY_UNKNOWN, NBVConfig
from spatialscout_gym.nbv.core import NBVController
from spatialscout_gym.nbv.occupancy import grid_frame

__all__ = ["OccupancyFrontierAgent", "frontier_mask"]

VERTICAL_FOV_DEG = 65.0
"""Vertical field of view counted, degrees (the renders are square at the 65-degree horizontal one)."""


def frontier_mask(grid: np.ndarray) -> np.ndarray:
    """Unknown voxels with a free 6-neighbour, same shape as ``grid`` (bool)."""
    free = grid == OCCUPANCY_FREE
    near = np.zeros_like(free)
    for axis in range(3):
        for shift in (1, -1):
            rolled = np.roll(free, shift, axis=axis)
            edge: list[slice | int] = [slice(None)] * 3
            edge[axis] = 0 if shift == 1 else -1
            rolled[tuple(edge)] = False          # no wrap-around
            near |= rolled
    return (grid == OCCUPANCY_UNKNOWN) & near


@register_agent("nbv-occupancy-frontier", kind="nbv")
class OccupancyFrontierAgent(NBVAgent):
    """Frontier exploration on the occupancy grid (see the module docstring).

    Parameters
    ----------
    mapper : str
        Mapper name.
    **config
        :class:`NBVConfig` fields (the heading motion and the ``occupancy`` observation are always
        on; ``walls=True`` unless given: NBV-v2's dynamics).
    """

    def __init__(self, mapper: str = "oracle", **config: Any) -> None:
        keys = tuple(dict.fromkeys((*config.pop("privileged_obs", ()), "occupancy")))
        super().__init__(NBVConfig(**{"walls": True, **config, "motion": "heading", "privileged_obs": keys}),
                         mapper=mapper)

    def begin(self, controller: NBVController, rng: np.random.Generator) -> None:
        g = controller.research.occupancy
        assert g is not None   # the occupancy observation is on
        idx = np.stack(np.meshgrid(*[np.arange(n) for n in g.cells], indexing="ij"), axis=-1).reshape(-1, 3)
        centres_task = g.lower_m + (idx + 0.5) * g.voxel_m
        self._frame = grid_frame(controller.port.task_frame, self.config.occupancy_frame)
        self._centres = self._frame.to_world(centres_task)   # world, one row per voxel

    def _clear(self, grid: np.ndarray, ctl: NBVController, start: np.ndarray, end: np.ndarray) -> bool:
        """No occupied voxel on the straight path from ``start`` to ``end`` (world), sampled every
        half voxel."""
        g = ctl.research.occupancy
        assert g is not None
        n = max(2, int(np.ceil(np.linalg.norm(end - start) / (g.voxel_m / 2))) + 1)
        pts = start + np.linspace(0.0, 1.0, n)[:, None] * (end - start)
        ijk = g.voxel_of(self._frame.to_task(pts))
        inside = np.all((ijk >= 0) & (ijk < np.asarray(g.cells)), axis=1)
        ijk = ijk[inside]
        return not np.any(grid[ijk[:, 0], ijk[:, 1], ijk[:, 2]] == OCCUPANCY_OCCUPIED)

    def act(self, obs: dict[str, np.ndarray], ctl: NBVController, rng: np.random.Generator) -> NBVAction:
        c = self.config
        grid = obs["occupancy"]
        front = self._centres[frontier_mask(grid).ravel()]
        n_actions = int(c.headings) * len(c.strides_m)
        if not len(front):
            return int(rng.integers(n_actions))
        pose = ctl.pose_world
        here = pose.position_world
        half_h, half_v = np.radians(c.view_fov_deg / 2), np.radians(VERTICAL_FOV_DEG / 2)
        pitch = np.radians(c.hold_pitch_deg)
        best: tuple[float, float, float] | None = None
        best_action = None
        towards: tuple[float, int] | None = None
        nearest = front[np.argmin(np.linalg.norm(front[:, :2] - here[:2], axis=1))]
        for a in range(n_actions):
            k, d = divmod(a, len(c.strides_m))
            yaw = np.radians(pose.yaw_deg + 360.0 / int(c.headings) * k)
            stride = float(c.strides_m[d])
            heading = np.array([np.cos(yaw), np.sin(yaw), 0.0])
            end = here + stride * heading
            if stride > 0:
                turned = CameraPose(here, float(np.degrees(yaw)), float(c.hold_pitch_deg))
                if (ctl.walls is not None and ctl.walls.blocks(turned, np.array([stride, 0.0, 0.0]))) \
                        or not self._clear(grid, ctl, here, end):
                    continue
            rel = front - end
            dist = np.linalg.norm(rel, axis=1)
            bearing = np.arctan2(rel[:, 1], rel[:, 0]) - yaw
            bearing = (bearing + np.pi) % (2 * np.pi) - np.pi
            elevation = np.arctan2(rel[:, 2], np.linalg.norm(rel[:, :2], axis=1)) - pitch
            seen = int(np.count_nonzero((dist <= c.view_range_m) & (np.abs(bearing) <= half_h)
                                        & (np.abs(elevation) <= half_v)))
            key = (-float(seen), stride, float(rng.random()))
            if seen and (best is None or key < best):
                best, best_action = key, a
            if stride > 0:   # fallback: the stride that gets closest to the nearest frontier voxel
                gap = float(np.linalg.norm(nearest[:2] - end[:2]))
                if towards is None or gap < towards[0]:
                    towards = (gap, a)
        if best_action is not None:
            return int(best_action)
        return int(towards[1]) if towards is not None else int(rng.integers(n_actions))
