"""Pinhole intrinsics and pixel conventions (docs/protocol.md section 3; core/camera.py)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from spatialscout_gym.core.camera import (Intrinsics, delivered_to_render, pixel_to_ray_camera,
                                          pixel_to_ray_world, project_world_to_pixel, render_to_delivered)
from spatialscout_gym.core.frames import CameraPose

K512 = Intrinsics.from_fov(512, 512, 60.0)
yaw = st.floats(-180.0, 180.0, allow_nan=False)
pitch = st.floats(-85.0, 85.0, allow_nan=False)
pix = st.floats(-0.5, 511.5, allow_nan=False)


def test_from_fov_principal_point_and_focal():
    K = Intrinsics.from_fov(512, 512, 90.0)
    assert (K.cx, K.cy) == (255.5, 255.5)       # image centre in the pixel-centre convention
    assert K.fx == pytest.approx(256.0)           # tan(45 deg) = 1: half height over f
    assert K.fov_y_deg == pytest.approx(90.0)
    np.testing.assert_allclose(K.K, [[256, 0, 255.5], [0, 256, 255.5], [0, 0, 1]])


@pytest.mark.parametrize("w,h,fov", [(0, 512, 60.0), (512, 512, 0.0), (512, 512, 180.0)])
def test_from_fov_rejects_bad_input(w, h, fov):
    with pytest.raises(ValueError):
        Intrinsics.from_fov(w, h, fov)


def test_pixel_axes_right_and_down():
    # u grows to the right = camera -left; v grows down = camera -up
    right = pixel_to_ray_camera(K512, K512.cx + 100, K512.cy)
    down = pixel_to_ray_camera(K512, K512.cx, K512.cy + 100)
    assert right[1] < 0 and right[2] == pytest.approx(0.0)
    assert down[2] < 0 and down[1] == pytest.approx(0.0)
    # the top edge of the image (v = -0.5) is half the vertical field of view above the axis
    top = pixel_to_ray_camera(K512, K512.cx, -0.5)
    assert np.degrees(np.arctan2(top[2], top[0])) == pytest.approx(30.0)


def test_rays_are_unit_and_batched():
    u = np.array([[0.0, 100.0], [511.0, 255.5]])
    d = pixel_to_ray_camera(K512, u, u.T)
    assert d.shape == (2, 2, 3)
    np.testing.assert_allclose(np.linalg.norm(d, axis=-1), 1.0)


@settings(max_examples=80, deadline=None)
@given(pix, pix, st.floats(0.2, 20.0), yaw, pitch,
       st.tuples(*[st.floats(-5, 5)] * 3).map(np.array))
def test_pixel_ray_project_round_trip(u, v, depth, y, p, position):
    pose = CameraPose(position, y, p)
    o, d = pixel_to_ray_world(K512, pose, u, v)
    np.testing.assert_allclose(o, position)
    point = o + depth * d
    uv, z = project_world_to_pixel(K512, pose, point)
    assert z > 0
    np.testing.assert_allclose(uv, [u, v], atol=1e-6)


def test_project_behind_camera_has_negative_depth():
    pose = CameraPose(np.zeros(3), 0.0, 0.0)
    _, depth = project_world_to_pixel(K512, pose, np.array([[-1.0, 0.0, 0.0], [2.0, 0.0, 0.0]]))
    assert depth[0] < 0 < depth[1]


def test_delivered_to_render_formula():
    # docs/protocol.md section 3: u = (u_d + 1/2) W / W_d - 1/2
    assert delivered_to_render(0.0, 0.0, 384, 384, 512, 512) == pytest.approx((1 / 6, 1 / 6))
    assert delivered_to_render(191.5, 191.5, 384, 384, 512, 512) == pytest.approx((255.5, 255.5))
    # outer edges map to outer edges
    assert delivered_to_render(-0.5, 383.5, 384, 384, 512, 512) == pytest.approx((-0.5, 511.5))
    assert delivered_to_render(10.0, 20.0, 256, 128, 512, 512) == pytest.approx((20.5, 81.5))


@settings(deadline=None)
@given(pix, pix, st.integers(16, 512), st.integers(16, 512))
def test_delivered_render_inverse(u, v, wd, hd):
    ud, vd = render_to_delivered(u, v, 512, 512, wd, hd)
    back = delivered_to_render(ud, vd, wd, hd, 512, 512)
    np.testing.assert_allclose(back, (u, v), atol=1e-9)


@settings(deadline=None)
@given(pix, pix)
def test_scaled_intrinsics_see_the_same_ray(u, v):
    small = K512.scaled(384, 384)
    ud, vd = render_to_delivered(u, v, 512, 512, 384, 384)
    np.testing.assert_allclose(pixel_to_ray_camera(small, ud, vd), pixel_to_ray_camera(K512, u, v),
                               atol=1e-9)


def test_contains_uses_half_pixel_border():
    assert K512.contains(-0.5, 511.5)
    assert not K512.contains(-0.51, 10.0)
    assert not K512.contains(10.0, 511.6)


def test_intrinsics_dict_round_trip():
    assert Intrinsics.from_dict(K512.to_dict()) == K512


def test_docstring_examples():
    import doctest

    from spatialscout_gym.core import camera
    result = doctest.testmod(camera)
    assert result.attempted > 0 and result.failed == 0
