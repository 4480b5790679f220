"""Triangulation (docs/protocol.md section 4): the point, every refusal and every warning."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from spatialscout_gym.core.camera import Intrinsics, project_world_to_pixel
from spatialscout_gym.core.frames import CameraPose, TaskFrame
from spatialscout_gym.core.triangulation import FrameGeometry, triangulate_marks, triangulate_rays

K = Intrinsics.from_fov(512, 512, 60.0)
FRAME = TaskFrame.from_initial_pose(CameraPose(np.array([1.0, -2.0, 1.4]), 25.0, -10.0))


def look_at(position_task, target_task) -> CameraPose:
    """A world pose at task position ``position_task`` whose optical axis passes through ``target_task``."""
    pos_w, tgt_w = FRAME.to_world(position_task), FRAME.to_world(target_task)
    d = tgt_w - pos_w
    yaw = np.degrees(np.arctan2(d[1], d[0]))
    pitch = np.degrees(np.arctan2(d[2], np.hypot(d[0], d[1])))
    return CameraPose(pos_w, yaw, pitch)


def capture(point_task, positions_task, aim_offset=(0.0, 0.0, 0.0)):
    """Frames looking near ``point_task`` and the render-grid pixel of the point in each."""
    frames, marks = {}, []
    for fid, pos in enumerate(positions_task):
        pose = look_at(np.asarray(pos, float), np.asarray(point_task, float) + aim_offset)
        frames[fid] = FrameGeometry.from_pose(FRAME, pose, K)
        (u, v), depth = project_world_to_pixel(K, pose, FRAME.to_world(point_task))
        assert depth > 0 and K.contains(u, v)
        marks.append((fid, float(u), float(v)))
    return frames, marks


def test_recovers_known_point_from_exact_rays():
    p = np.array([2.0, 0.5, -0.3])
    frames, marks = capture(p, [[0, 0, 0], [0.5, 1.5, 0.2], [-0.4, -1.0, 0.5]], aim_offset=(0.1, -0.2, 0.05))
    res = triangulate_marks(marks, frames, radius_m=3.0)
    assert res.ok, res.reason
    np.testing.assert_allclose(res.point_task, p, atol=1e-9)
    assert res.residual_m == pytest.approx(0.0, abs=1e-9)
    assert res.warnings == []
    out = res.to_dict()
    assert out["ok"] is True and out["num_observations"] == 3
    assert out["point"] == [2.0, 0.5, -0.3]
    assert set(out) == {"ok", "point", "residual_m", "max_angle_deg", "num_observations", "warnings"}


def test_accepts_mark_dicts():
    p = np.array([1.5, 0.0, 0.0])
    frames, marks = capture(p, [[0, 0, 0], [0, 1, 0]])
    res = triangulate_marks([{"frame_id": f, "u": u, "v": v} for f, u, v in marks], frames, None)
    assert res.ok
    np.testing.assert_allclose(res.point_task, p, atol=1e-9)


@settings(max_examples=40, deadline=None)
@given(st.tuples(*[st.floats(-2, 2)] * 3), st.floats(0.5, 3.0), st.floats(20, 160))
def test_recovers_point_property(offset, dist, spread_deg):
    p = np.array([3.0, 0.0, 0.0]) + np.array(offset)
    a = np.radians(spread_deg) / 2
    c1 = p + dist * np.array([-np.cos(a), np.sin(a), 0.1])
    c2 = p + dist * np.array([-np.cos(a), -np.sin(a), -0.1])
    frames, marks = capture(p, [c1, c2])
    res = triangulate_marks(marks, frames, radius_m=10.0)
    assert res.ok
    np.testing.assert_allclose(res.point_task, p, atol=1e-7)
    assert res.max_angle_deg == pytest.approx(np.degrees(np.arccos(np.dot(
        (p - c1) / np.linalg.norm(p - c1), (p - c2) / np.linalg.norm(p - c2)))), abs=1e-6)


def test_residual_and_angle_of_skew_rays():
    # two perpendicular lines 0.2 m apart: the point is midway, each ray 0.1 m away
    res = triangulate_rays([[0, -1, 0.1], [-1, 0, -0.1]], [[0, 1, 0], [1, 0, 0]])
    assert res.ok
    np.testing.assert_allclose(res.point_task, [0, 0, 0], atol=1e-12)
    assert res.residual_m == pytest.approx(0.1)
    assert res.max_angle_deg == pytest.approx(90.0)
    assert res.warnings == []          # 0.1 m is not *above* 0.1 m


# ---- refusals ---------------------------------------------------------------------------------
def refused(res, *words):
    assert not res.ok and res.point_task is None and res.reason
    for w in words:
        assert w in res.reason, res.reason
    assert res.to_dict() == {"ok": False, "reason": res.reason, "num_observations": res.num_observations}


def test_refuses_fewer_than_two_observations():
    frames, marks = capture([2, 0, 0], [[0, 0, 0], [0, 1, 0]])
    refused(triangulate_marks(marks[:1], frames, 3.0), "at least 2", "got 1")
    refused(triangulate_marks([], frames, 3.0), "got 0")
    refused(triangulate_rays([[0, 0, 0]], [[1, 0, 0]]), "at least 2")


def test_refuses_camera_centres_within_5cm():
    frames, marks = capture([2, 0, 0], [[0, 0, 0], [0, 0.03, 0], [0.02, -0.01, 0.01]])
    refused(triangulate_marks(marks, frames, 3.0), "within 5 cm")
    # the same rays from 6 cm apart are accepted
    frames, marks = capture([2, 0, 0], [[0, 0, 0], [0, 0.06, 0]])
    assert triangulate_marks(marks, frames, 3.0).ok


def test_refuses_ill_conditioned_rays():
    # parallel rays from centres 1 m apart: sum(A_k) is singular
    refused(triangulate_rays([[0, 0, 0], [0, 1, 0]], [[1, 0, 0], [1, 0, 0]]), "condition number")
    # 0.05 deg apart: condition number 2 / (1 - cos) ~ 5e6 > 1e6
    a = np.radians(0.05)
    refused(triangulate_rays([[0, 0, 0], [0, 1, 0]], [[1, 0, 0], [np.cos(a), -np.sin(a), 0]]),
            "condition number")


def test_refuses_point_behind_a_camera():
    # the rays diverge: their closest point lies behind both cameras
    refused(triangulate_rays([[0, -1, 0], [0, 1, 0]], [[1, -1, 0], [1, 1, 0]]), "behind",
            "observation(s) 0, 1 ")
    # the second ray starts on the first one and leads away from it: behind the second camera only
    refused(triangulate_rays([[0, -1, 0], [2, 1, 0]], [[1, 1, 0], [1, 1, 0.2]]), "behind",
            "observation(s) 1 ")


def test_refuses_unknown_frame_id():
    frames, marks = capture([2, 0, 0], [[0, 0, 0], [0, 1, 0]])
    bad = [marks[0], (7, marks[1][1], marks[1][2])]
    refused(triangulate_marks(bad, frames, 3.0), "unknown frame id 7", "0, 1")
    refused(triangulate_marks([marks[0], (True, 10.0, 10.0)], frames, 3.0), "unknown frame id")


@pytest.mark.parametrize("u,v", [(float("nan"), 10.0), (10.0, float("inf"))])
def test_refuses_non_finite_pixel(u, v):
    frames, marks = capture([2, 0, 0], [[0, 0, 0], [0, 1, 0]])
    refused(triangulate_marks([marks[0], (1, u, v)], frames, 3.0), "observation 1", "not finite")


@pytest.mark.parametrize("u,v", [(-0.6, 10.0), (511.6, 10.0), (10.0, 600.0)])
def test_refuses_out_of_image_pixel(u, v):
    frames, marks = capture([2, 0, 0], [[0, 0, 0], [0, 1, 0]])
    refused(triangulate_marks([(0, u, v), marks[1]], frames, 3.0), "observation 0", "outside")


def test_refuses_malformed_mark():
    frames, marks = capture([2, 0, 0], [[0, 0, 0], [0, 1, 0]])
    refused(triangulate_marks([marks[0], (1, 2.0)], frames, 3.0), "observation 1")
    refused(triangulate_marks([marks[0], (1, "left", 3.0)], frames, 3.0), "observation 1")


# ---- warnings ---------------------------------------------------------------------------------
def test_warns_on_narrow_angle():
    # 2 cameras 0.2 m apart looking at a point 5 m away: about 2.3 degrees
    frames, marks = capture([5, 0, 0], [[0, -0.1, 0], [0, 0.1, 0]])
    res = triangulate_marks(marks, frames, 6.0)
    assert res.ok and res.max_angle_deg < 3.0
    assert len(res.warnings) == 1 and "angle" in res.warnings[0]
    np.testing.assert_allclose(res.point_task, [5, 0, 0], atol=1e-6)


def test_warns_on_large_residual():
    res = triangulate_rays([[0, -1, 0.15], [-1, 0, -0.15]], [[0, 1, 0], [1, 0, 0]])
    assert res.ok and res.residual_m == pytest.approx(0.15)
    assert len(res.warnings) == 1 and "0.150 m" in res.warnings[0]


def test_warns_beyond_search_radius():
    frames, marks = capture([4, 0, 0], [[0, -1, 0], [0, 1, 0]])
    assert triangulate_marks(marks, frames, radius_m=3.6).warnings == []       # 4.0 <= 3.6 + 0.5
    res = triangulate_marks(marks, frames, radius_m=3.4)                       # 4.0 > 3.9
    assert res.ok and len(res.warnings) == 1 and "r + 0.5 m = 3.90 m" in res.warnings[0]
    assert res.to_dict()["warnings"] == res.warnings


def test_frame_geometry_dict_round_trip():
    g = FrameGeometry.from_pose(FRAME, CameraPose(np.array([0.2, 0.1, 1.0]), 10.0, 5.0), K)
    back = FrameGeometry.from_dict(g.to_dict())
    np.testing.assert_allclose(back.R_task_cam, g.R_task_cam)
    np.testing.assert_allclose(back.position_task, g.position_task)
    assert back.intrinsics == K


def test_docstring_examples():
    import doctest

    from spatialscout_gym.core import triangulation
    result = doctest.testmod(triangulation)
    assert result.attempted > 0 and result.failed == 0
