"""``occupancy_frame="gravity"``: the occupancy grid without the start camera's pitch (z world up),
so a floor seen from a camera pitched 20 degrees down fills one voxel layer, where the task-frame
grid (the default) spreads it over several; an unknown frame is refused."""

from __future__ import annotations

import numpy as np
import pytest

from fakes import small_scene
from spatialscout_gym.core.frames import CameraPose, TaskFrame
from spatialscout_gym.core.renderer_api import PrivilegedFrame
from spatialscout_gym.nbv.config import NBVConfig
from spatialscout_gym.nbv.research import ResearchObservations


def occupied_layers(frame: str) -> set[int]:
    config = NBVConfig(privileged_obs=("occupancy",), occupancy_rays=8, occupancy_frame=frame)
    research = ResearchObservations(config)
    research.begin(small_scene(32, 32))
    start = CameraPose(np.array([0.0, 0.0, 1.5]), 30.0, -20.0)
    task = TaskFrame.from_initial_pose(start)
    xs, ys = np.meshgrid(np.linspace(0.5, 3.5, 8), np.linspace(-1.5, 1.5, 8), indexing="ij")
    floor = np.stack([xs, ys, np.full_like(xs, 0.1)], axis=-1).astype(np.float32)   # 8 x 8 points on the floor
    priv = PrivilegedFrame(np.ones((8, 8), np.float32), np.full((8, 8), -1, np.int32), floor)
    research.record(priv, task, np.zeros(3))
    grid = research.observation()["occupancy"]
    return {int(k) for k in np.argwhere(grid == 2)[:, 2]}


def test_a_floor_seen_pitched_fills_one_layer_in_the_gravity_frame_only():
    assert occupied_layers("gravity") == {int(np.floor((0.1 - 1.5 + 2.0) / 0.25))}    # z = 0.1 m: layer 2
    assert len(occupied_layers("task")) >= 3


def test_an_unknown_occupancy_frame_is_refused():
    with pytest.raises(ValueError, match="occupancy_frame must be one of 'task', 'gravity'"):
        NBVConfig(occupancy_frame="world")
