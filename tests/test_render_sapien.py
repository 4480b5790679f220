"""SapienRenderer on the software Vulkan driver: determinism, projection, segmentation vs boxes,
hidden candidates, non-blank images, privileged depth/positions, a renderer after the last one
closed (same bits, also in a forked child)."""

import hashlib
import os
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from render_fixtures import INITIAL_POSE, make_room_spec, make_sphere_spec
from spatialscout_gym.core.camera import project_world_to_pixel
from spatialscout_gym.core.frames import CameraPose
from spatialscout_gym.core.renderer_api import Renderer
from spatialscout_gym.render.sapien_renderer import SapienRenderer

pytestmark = pytest.mark.render


def look_at(eye, target) -> CameraPose:
    d = np.asarray(target, float) - np.asarray(eye, float)
    yaw = np.degrees(np.arctan2(d[1], d[0]))
    pitch = np.degrees(np.arctan2(d[2], np.hypot(d[0], d[1])))
    return CameraPose(np.asarray(eye, float), yaw, pitch)


@pytest.fixture(scope="module")
def room():
    spec = make_room_spec()
    r = SapienRenderer(spec)
    yield spec, r
    r.close()


def test_is_a_renderer_with_the_spec_intrinsics(room):
    spec, r = room
    assert isinstance(r, Renderer)
    assert r.intrinsics == spec.public.intrinsics.scaled(512, 512)
    assert np.isclose(np.degrees(r._camera.fovy), r.intrinsics.fov_y_deg, atol=1e-3)
    K_sapien = r._camera.get_intrinsic_matrix()
    assert np.isclose(K_sapien[0, 2], r.intrinsics.cx + 0.5) and np.isclose(K_sapien[1, 1], r.intrinsics.fy)


def test_rgb_is_not_blank_and_repeats(room):
    _, r = room
    a = r.capture_rgb(INITIAL_POSE)
    assert a.shape == (512, 512, 3) and a.dtype == np.uint8
    assert a.mean() > 30 and a.std() > 15, (a.mean(), a.std())
    r.capture_rgb(CameraPose(np.array([2.0, 1.0, 1.2]), 120.0, 10.0))
    assert np.array_equal(a, r.capture_rgb(INITIAL_POSE))


def test_same_spec_same_image_across_instances(room):
    spec, r = room
    other = SapienRenderer(make_room_spec())
    try:
        h1 = hashlib.sha256(r.capture_rgb(INITIAL_POSE).tobytes()).hexdigest()
        h2 = hashlib.sha256(other.capture_rgb(INITIAL_POSE).tobytes()).hexdigest()
    finally:
        other.close()
    assert h1 == h2


def test_a_renderer_built_after_the_last_one_closed_draws_the_same_bits():
    """SAPIEN's context outlives the last renderer (so the next starts without a warm-up); the
    next renderer's pictures are the same bits as the closed one's. In a fresh process, so that
    no other renderer of this module is alive."""
    code = (
        "import gc, hashlib, sys\n"
        "sys.path.insert(0, sys.argv[1])\n"
        "from render_fixtures import INITIAL_POSE, make_room_spec\n"
        "from spatialscout_gym.render.sapien_renderer import SapienRenderer\n"
        "def picture():\n"
        "    r = SapienRenderer(make_room_spec(), 96, 96)\n"
        "    h = hashlib.sha256(r.capture_rgb(INITIAL_POSE).tobytes()).hexdigest()\n"
        "    r.close()\n"
        "    return h\n"
        "a = picture(); gc.collect(); b = picture()\n"
        "print(a, b)\n")
    out = subprocess.run([sys.executable, "-c", code, str(Path(__file__).parent)], capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    a, b = out.stdout.split()[-2:]
    assert a == b


def test_a_fork_after_the_last_renderer_closed_renders_in_the_child():
    """The held context is let go before a fork when no renderer is open: a child forked from a
    process holding a Vulkan context hangs in the driver (as Gymnasium's ``AsyncVectorEnv`` does
    by default on Linux). The child's picture is the parent's."""
    code = (
        "import hashlib, multiprocessing as mp, sys\n"
        "sys.path.insert(0, sys.argv[1])\n"
        "from render_fixtures import INITIAL_POSE, make_room_spec\n"
        "from spatialscout_gym.render.sapien_renderer import SapienRenderer\n"
        "def picture(q=None):\n"
        "    r = SapienRenderer(make_room_spec(), 64, 64)\n"
        "    h = hashlib.sha256(r.capture_rgb(INITIAL_POSE).tobytes()).hexdigest()\n"
        "    r.close()\n"
        "    if q is None:\n"
        "        return h\n"
        "    q.put(h)\n"
        "if __name__ == '__main__':\n"
        "    a = picture()\n"
        "    ctx = mp.get_context('fork')\n"
        "    q = ctx.Queue()\n"
        "    p = ctx.Process(target=picture, args=(q,), daemon=True)\n"
        "    p.start()\n"
        "    b = q.get(timeout=90)\n"
        "    p.join(30)\n"
        "    print(a, b)\n")
    proc = subprocess.Popen([sys.executable, "-c", code, str(Path(__file__).parent)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        stdout, stderr = proc.communicate(timeout=180)
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)      # a hung child goes with its parent
        except ProcessLookupError:
            pass
    assert proc.returncode == 0, "the forked child did not render:\n" + stderr[-2000:]
    a, b = stdout.split()[-2:]
    assert a == b


def _target_views(spec):
    """A pose 1.3 m from each target, at 1.4 m height, looking at its box centre."""
    room_centre = np.array([3.0, 2.5, 0.0])
    for i, obj in enumerate(spec.private.objects):
        if obj.role != "target":
            continue
        lo, hi = obj.aabb_world
        c = (lo + hi) / 2
        away = room_centre[:2] - c[:2]
        away = away / (np.linalg.norm(away) + 1e-9)
        eye = np.array([*(c[:2] + 1.3 * away), 1.4])
        yield i, obj, lo, hi, look_at(eye, c)


def test_every_target_mask_is_nonempty_and_inside_its_projected_box(room):
    spec, r = room
    K = r.intrinsics
    for index, obj, lo, hi, pose in _target_views(spec):
        frame = r.capture_privileged(pose)
        mask = frame.segmentation == index
        assert mask.sum() > 0, f"{obj.id} not seen from its view"
        corners = np.array([[x, y, z] for x in (lo[0], hi[0]) for y in (lo[1], hi[1]) for z in (lo[2], hi[2])])
        uv, depth = project_world_to_pixel(K, pose, corners)
        assert (depth > 0).all()
        vs, us = np.nonzero(mask)
        tol = 1.0
        assert us.min() >= uv[:, 0].min() - tol and us.max() <= uv[:, 0].max() + tol, obj.id
        assert vs.min() >= uv[:, 1].min() - tol and vs.max() <= uv[:, 1].max() + tol, obj.id
        # positions of the mask's pixels lie in the (slightly padded) box
        p = frame.position_world[mask]
        assert (p >= lo - 0.01).all() and (p <= hi + 0.01).all(), obj.id


def test_hidden_candidates_never_appear(room):
    spec, r = room
    hidden = [i for i, o in enumerate(spec.private.objects) if o.role == "hidden"]
    assert hidden
    apple = spec.private.objects[hidden[0]]
    c = sum(apple.aabb_world) / 2
    poses = [INITIAL_POSE, look_at([2.5, 2.5, 1.3], c), look_at([3.5, 1.6, 1.0], c)]
    for pose in poses:
        seg = r.capture_privileged(pose).segmentation
        assert not np.isin(seg, hidden).any()
        assert (seg >= -1).all() and seg.max() < len(spec.private.objects)


def test_privileged_depth_and_positions_agree_with_geometry(room):
    spec, r = room
    pose = CameraPose(np.array([1.0, 2.5, 1.5]), 10.0, -40.0)
    f = r.capture_privileged(pose)
    floor = [i for i, o in enumerate(spec.private.objects) if o.id == "floor"][0]
    on_floor = f.segmentation == floor
    assert on_floor.sum() > 1000
    assert np.abs(f.position_world[on_floor][:, 2]).max() < 0.005
    # depth is along the optical axis: (p - o) . forward
    d = (f.position_world[on_floor] - pose.position_world) @ pose.forward_world
    assert np.allclose(d, f.depth_m[on_floor], atol=1e-3)


def test_bright_sphere_appears_at_its_projection():
    centre = np.array([2.0, 0.35, -0.25])
    spec = make_sphere_spec(centre, radius=0.02, fov_y_deg=55.0)
    with SapienRenderer(spec) as r:
        for pose in (CameraPose(np.zeros(3), 0.0, 0.0), CameraPose(np.array([0.2, -0.3, 0.1]), 12.0, -7.0)):
            img = r.capture_rgb(pose).astype(float).sum(axis=2)
            vs, us = np.nonzero(img > 100)
            assert len(us) > 4
            uv, _ = project_world_to_pixel(r.intrinsics, pose, centre)
            assert abs(us.mean() - uv[0]) < 1.0 and abs(vs.mean() - uv[1]) < 1.0, (us.mean(), vs.mean(), uv)


def test_principal_point_is_at_the_pixel_centre_convention():
    """docs/protocol.md section 3: integer pixel coordinates at pixel centres, cx = (W - 1) / 2. A small
    sphere's intensity centroid lands on its projection to a small fraction of a pixel (on the
    optical axis: exactly (255.5, 255.5)); SAPIEN's corner-origin principal point set to cx
    instead of cx + 0.5 would move it by half a pixel, which a 1-pixel tolerance cannot see."""
    pose = CameraPose(np.zeros(3), 0.0, 0.0)
    centres = (np.array([2.0, 0.0, 0.0]), np.array([2.0, 0.35, -0.25]))
    with SapienRenderer(make_sphere_spec(centres[0], radius=0.02, fov_y_deg=55.0)) as r:
        v, u = np.mgrid[0:512, 0:512]
        for centre in centres:
            r.set_scene(make_sphere_spec(centre, radius=0.02, fov_y_deg=55.0))
            img = r.capture_rgb(pose).astype(float).sum(axis=2)
            uv, _ = project_world_to_pixel(r.intrinsics, pose, centre)
            cu, cv = (u * img).sum() / img.sum(), (v * img).sum() / img.sum()
            assert abs(cu - uv[0]) < 0.2 and abs(cv - uv[1]) < 0.2, (cu, cv, uv)


def test_non_square_grid_uses_scaled_intrinsics():
    centre = np.array([1.5, -0.2, 0.15])
    spec = make_sphere_spec(centre, radius=0.02)
    with SapienRenderer(spec, width=160, height=120) as r:
        assert r.intrinsics == spec.public.intrinsics.scaled(160, 120)
        img = r.capture_rgb(CameraPose(np.zeros(3), 0.0, 0.0))
        assert img.shape == (120, 160, 3)
        vs, us = np.nonzero(img.astype(float).sum(axis=2) > 100)
        uv, _ = project_world_to_pixel(r.intrinsics, CameraPose(np.zeros(3), 0.0, 0.0), centre)
        assert abs(us.mean() - uv[0]) < 0.3 and abs(vs.mean() - uv[1]) < 0.3, (us.mean(), vs.mean(), uv)


def test_set_scene_rebuilds(room):
    spec, r = room
    before = r.capture_rgb(INITIAL_POSE)
    r.set_scene(make_room_spec(seed=5))
    try:
        changed = r.capture_rgb(INITIAL_POSE)
        assert not np.array_equal(before, changed)  # other texture seeds
    finally:
        r.set_scene(spec)
    assert np.array_equal(before, r.capture_rgb(INITIAL_POSE))


def test_public_render_system_and_camera_accessors(room):
    """A camera group batches renderers through these public accessors (not their privates)."""
    spec, r = room
    assert r.render_system is not None
    assert np.isclose(np.degrees(r.camera.fovy), r.intrinsics.fov_y_deg, atol=1e-3)
    with SapienRenderer(spec, 32, 32) as other:
        system = other.render_system
        assert system is not None and system is not r.render_system
    assert other.render_system is None          # closed: no scene left
