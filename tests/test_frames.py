"""Task frame and camera poses (docs/protocol.md section 2; core/frames.py)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from spatialscout_gym.core.frames import CameraPose, TaskFrame, quat_mul, rotation_world_from_camera, wrap_degrees

finite = st.floats(-10.0, 10.0, allow_nan=False, allow_infinity=False)
vec3 = st.tuples(finite, finite, finite).map(np.array)
yaw = st.floats(-360.0, 360.0, allow_nan=False)
pitch = st.floats(-85.0, 85.0, allow_nan=False)


def test_rotation_columns_are_forward_left_up():
    R = rotation_world_from_camera(90.0, 0.0)
    # yaw 90: looking along world +y; left is world -x; up is world +z
    np.testing.assert_allclose(R[:, 0], [0, 1, 0], atol=1e-12)
    np.testing.assert_allclose(R[:, 1], [-1, 0, 0], atol=1e-12)
    np.testing.assert_allclose(R[:, 2], [0, 0, 1], atol=1e-12)
    R = rotation_world_from_camera(0.0, 30.0)   # pitched up: forward rises, up tilts back
    np.testing.assert_allclose(R[:, 0], [np.cos(np.pi / 6), 0, 0.5], atol=1e-12)
    np.testing.assert_allclose(R[:, 2], [-0.5, 0, np.cos(np.pi / 6)], atol=1e-12)


@settings(deadline=None)
@given(yaw, pitch)
def test_rotation_is_proper(y, p):
    R = rotation_world_from_camera(y, p)
    np.testing.assert_allclose(R.T @ R, np.eye(3), atol=1e-12)
    assert np.linalg.det(R) == pytest.approx(1.0)
    assert R[2, 1] == pytest.approx(0.0, abs=1e-12)   # roll 0: left stays horizontal


def test_task_frame_axes_are_initial_camera_axes():
    pose = CameraPose(np.array([1.0, 2.0, 1.5]), 90.0, 0.0)
    frame = TaskFrame.from_initial_pose(pose)
    np.testing.assert_allclose(frame.to_task(pose.position_world), 0.0, atol=1e-12)
    # one metre in front of the initial camera is task +x; one metre to its left is task +y
    np.testing.assert_allclose(frame.to_task([1.0, 3.0, 1.5]), [1, 0, 0], atol=1e-12)
    np.testing.assert_allclose(frame.to_task([0.0, 2.0, 1.5]), [0, 1, 0], atol=1e-12)
    np.testing.assert_allclose(frame.to_task([1.0, 2.0, 2.5]), [0, 0, 1], atol=1e-12)


def test_pitched_initial_camera_tilts_task_z():
    frame = TaskFrame.from_initial_pose(CameraPose(np.zeros(3), 0.0, -20.0))
    world_up_in_task = frame.direction_to_task([0.0, 0.0, 1.0])
    assert world_up_in_task[2] == pytest.approx(np.cos(np.deg2rad(20.0)))
    # looking down, world up leans against the optical axis: negative task x
    assert world_up_in_task[0] == pytest.approx(-np.sin(np.deg2rad(20.0)))


@settings(max_examples=60, deadline=None)
@given(vec3, yaw, pitch, st.lists(vec3, min_size=1, max_size=5))
def test_world_task_round_trip(origin, y, p, points):
    frame = TaskFrame.from_initial_pose(CameraPose(origin, y, p))
    pts = np.array(points)
    np.testing.assert_allclose(frame.to_world(frame.to_task(pts)), pts, atol=1e-9)
    np.testing.assert_allclose(frame.to_task(frame.to_world(pts)), pts, atol=1e-9)
    # distances are preserved (rigid transform)
    np.testing.assert_allclose(np.linalg.norm(frame.to_task(pts) - frame.to_task(origin), axis=1),
                               np.linalg.norm(pts - origin, axis=1), atol=1e-9)
    d = frame.direction_to_task(pts)
    np.testing.assert_allclose(frame.direction_to_world(d), pts, atol=1e-9)


@settings(max_examples=60, deadline=None)
@given(vec3, yaw, st.floats(-30, 30), vec3, yaw, pitch)
def test_pose_to_task_and_back(origin, y0, p0, pos_task, rel_yaw, p):
    frame = TaskFrame.from_initial_pose(CameraPose(origin, y0, p0))
    pose = frame.pose_from_task(pos_task, rel_yaw, p)
    reported = frame.pose_to_task(pose)
    np.testing.assert_allclose(reported["position"], pos_task, atol=1e-5)
    dy = (reported["yaw_deg"] - rel_yaw) % 360.0
    assert min(dy, 360.0 - dy) < 1e-5
    assert reported["pitch_deg"] == pytest.approx(p, abs=1e-5)
    again = frame.pose_from_task(reported["position"], reported["yaw_deg"], reported["pitch_deg"])
    np.testing.assert_allclose(again.R_world_cam, pose.R_world_cam, atol=1e-5)
    np.testing.assert_allclose(again.position_world, pose.position_world, atol=1e-5)
    # reported axes are the camera axes in the task frame
    R_task_cam = frame.R_world_task.T @ pose.R_world_cam
    np.testing.assert_allclose(reported["forward"], R_task_cam[:, 0], atol=1e-5)


def test_initial_pose_reports_zero():
    pose = CameraPose(np.array([3.0, -1.0, 1.2]), 37.0, -12.0)
    frame = TaskFrame.from_initial_pose(pose)
    r = frame.pose_to_task(pose)
    assert r["position"] == [0.0, 0.0, 0.0]
    assert r["yaw_deg"] == 0.0 and r["pitch_deg"] == pytest.approx(-12.0)
    np.testing.assert_allclose(r["forward"], [1, 0, 0], atol=1e-6)
    np.testing.assert_allclose(r["left"], [0, 1, 0], atol=1e-6)


def test_task_frame_dict_round_trip():
    frame = TaskFrame.from_initial_pose(CameraPose(np.array([0.5, 0.2, 1.4]), -120.0, 10.0))
    back = TaskFrame.from_dict(frame.to_dict())
    np.testing.assert_allclose(back.R_world_task, frame.R_world_task)
    np.testing.assert_allclose(back.origin_world, frame.origin_world)
    assert back.initial_yaw_deg == pytest.approx(-120.0)


def test_horizontal_move_directions_ignore_pitch():
    pose = CameraPose(np.zeros(3), 30.0, 60.0)
    f, r = pose.horizontal_forward_world, pose.horizontal_right_world
    assert f[2] == 0.0 and r[2] == 0.0
    assert np.dot(f, r) == pytest.approx(0.0)
    # right = forward x up (right-handed, z up)
    np.testing.assert_allclose(np.cross(f, [0, 0, 1]), r, atol=1e-12)


@settings(deadline=None)
@given(yaw, pitch)
def test_quaternion_matches_matrix(y, p):
    w, x, yq, z = CameraPose(np.zeros(3), y, p).quat_wxyz()
    R = np.array([
        [1 - 2 * (yq * yq + z * z), 2 * (x * yq - w * z), 2 * (x * z + w * yq)],
        [2 * (x * yq + w * z), 1 - 2 * (x * x + z * z), 2 * (yq * z - w * x)],
        [2 * (x * z - w * yq), 2 * (yq * z + w * x), 1 - 2 * (x * x + yq * yq)],
    ])
    np.testing.assert_allclose(R, rotation_world_from_camera(y, p), atol=1e-9)


def _matrix(q):
    w, x, y, z = np.asarray(q, dtype=float) / np.linalg.norm(q)
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
                     [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
                     [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)]])


def test_quat_mul_composes_rotations_and_is_the_one_product_scenes_use():
    import spatialscout_gym.scenes.geometry as geometry
    import spatialscout_gym.scenes.maniskill as maniskill
    rng = np.random.default_rng(0)
    for _ in range(50):
        a, b = rng.normal(size=4), rng.normal(size=4)
        a, b = a / np.linalg.norm(a), b / np.linalg.norm(b)
        np.testing.assert_allclose(_matrix(quat_mul(a, b)), _matrix(a) @ _matrix(b), atol=1e-12)
    np.testing.assert_array_equal(quat_mul([1, 0, 0, 0], b), b)
    # one home: the scene builders use core's product, not a copy of their own
    assert geometry.quat_mul is quat_mul and maniskill._qmul is quat_mul


@settings(deadline=None)
@example(-180.00000000000003)  # (a + 180) % 360 rounds to 360.0: must wrap to -180, not 180
@example(-540.0000000000001)
@given(st.floats(-1e4, 1e4, allow_nan=False))
def test_wrap_degrees_range(a):
    w = wrap_degrees(a)
    assert -180.0 <= w < 180.0
    assert np.isclose(np.cos(np.deg2rad(w)), np.cos(np.deg2rad(a)), atol=1e-6)


def test_pose_rejects_bad_shape():
    with pytest.raises(ValueError, match=r"shape \(3,\)"):
        CameraPose(np.zeros(2), 0.0, 0.0)


def test_docstring_examples():
    import doctest

    from spatialscout_gym.core import frames
    result = doctest.testmod(frames)
    assert result.attempted > 0 and result.failed == 0
