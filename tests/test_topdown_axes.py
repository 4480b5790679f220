"""The top-down map (world x/y) overlays the task frame's axes, so predictions,
which are task coordinates, can be read off it."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image

from fakes import small_scene
from spatialscout_gym.core.frames import TaskFrame
from spatialscout_gym.render.pictures import task_axes_xy, topdown_map


def test_task_axes_follow_the_initial_heading_even_when_pitched():
    spec = small_scene(yaw_deg=30.0, pitch_deg=-25.0)
    axes = task_axes_xy(spec)
    assert axes["origin"] == pytest.approx([-1.0, 0.5])
    a = np.radians(30.0)
    assert axes["x"] == pytest.approx([np.cos(a), np.sin(a)])          # forward, projected
    assert axes["y"] == pytest.approx([-np.sin(a), np.cos(a)])         # left
    # a task-frame point on the +x axis lands on the drawn axis, at its distance
    tf = TaskFrame.from_initial_pose(spec.public.initial_camera)
    w = tf.to_world(np.array([2.0, 0.0, 0.0]))
    along = np.dot(w[:2] - np.array(axes["origin"]), axes["x"])
    assert along == pytest.approx(2.0 * np.cos(np.radians(25.0)))   # pitched axis, seen from above


def test_topdown_map_draws_the_task_axes(tmp_path):
    spec = small_scene(yaw_deg=30.0)
    info = topdown_map(spec, tmp_path / "map.png", dpi=80)
    assert "task +x" in info["labels"] and "task +y" in info["labels"]
    assert "+1" in info["labels"] and "-1" in info["labels"]            # metre ticks
    img = np.asarray(Image.open(tmp_path / "map.png").convert("RGB")).astype(int)
    red = (img[..., 0] > 150) & (img[..., 1] < 90) & (img[..., 2] < 90)   # not tab20 orange
    assert red.sum() > 50                                                # the dashed x axis is drawn
