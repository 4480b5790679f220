"""``info`` carries the camera's 4 x 4 task-frame pose and the captures' intrinsics: the pose
matches the episode's own camera (position and axes, as ``get_camera_pose`` reports them), K is
the render grid's; NBV-v2 on a fake renderer, 32 px."""

from __future__ import annotations

import gymnasium as gym
import numpy as np

import spatialscout_gym  # noqa: F401  (registers the ids)
from fakes import FakeRenderer, small_scene


def test_info_holds_the_task_frame_camera_pose_and_intrinsics():
    spec = small_scene(32, 32)
    env = gym.make("SpatialScout/NBV-v2", scene=spec, renderer=FakeRenderer(spec, 32, 32), resolution=32,
                   obs_size=32, image_budget=6)
    _, info = env.reset(seed=0)
    np.testing.assert_allclose(info["camera_pose_task"], np.eye(4), atol=1e-9)   # the task frame's origin
    episode = env.unwrapped.tool_env.episode
    np.testing.assert_allclose(info["intrinsics"], episode.intrinsics.K)
    assert info["intrinsics"][0, 2] == 15.5
    for action in (4, 7, 14):          # turns and strides
        _, _, _, _, info = env.step(action)
        pose = info["camera_pose_task"]
        frame = episode.task_frame
        np.testing.assert_allclose(pose[:3, 3], frame.to_task(episode.pose.position_world), atol=1e-9)
        np.testing.assert_allclose(pose[:3, :3], frame.R_world_task.T @ episode.pose.R_world_cam, atol=1e-9)
        np.testing.assert_allclose(pose[:3, :3] @ pose[:3, :3].T, np.eye(3), atol=1e-9)
        np.testing.assert_allclose(pose[3], [0, 0, 0, 1])
    reported = episode.get_camera_pose().result   # the tool's own report of the same pose
    for column, key in enumerate(("forward", "left", "up", "position")):
        np.testing.assert_allclose(pose[:3, column], reported[key], atol=1e-5)
    env.close()
