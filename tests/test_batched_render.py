"""Batched rendering of the NBV vector env: two-phase steps, CameraGroup, prepared pictures.

Runs on lavapipe: the group renders one camera after another; the CUDA camera-group branch needs a
GPU and is not exercised here (only its clear error where CUDA is absent)."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from render_fixtures import render_device_kwargs

import spatialscout_gym  # noqa: F401  (registers the ids)
from spatialscout_gym.core.frames import CameraPose

pytestmark = pytest.mark.render

KW = dict(resolution=32, obs_size=32, image_budget=4, reconfigure_every=2,
          **render_device_kwargs())


class CountingCamera:
    """Wraps a SAPIEN camera component and counts ``take_picture`` calls."""

    def __init__(self, camera) -> None:
        self._camera, self.pictures = camera, 0

    def take_picture(self) -> None:
        self.pictures += 1
        self._camera.take_picture()

    def __getattr__(self, name):
        return getattr(self._camera, name)


def _equal(a, b) -> bool:
    """Deep equality of observations / infos (arrays bit for bit)."""
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(_equal(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(_equal(x, y) for x, y in zip(a, b))
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        a, b = np.asarray(a), np.asarray(b)
        if a.dtype == object or b.dtype == object:   # e.g. info["final_obs"]: one dict (or None) per env
            return a.shape == b.shape and all(_equal(x, y) for x, y in zip(a.ravel(), b.ravel()))
        return a.shape == b.shape and a.dtype == b.dtype and np.array_equal(a, b, equal_nan=a.dtype.kind == "f")
    return a == b or (a != a and b != b)


def _count_cameras(venv) -> list[CountingCamera]:
    cams = []
    for nbv in venv._nbv:
        r = nbv.env.unwrapped.session.renderer
        if not isinstance(r._camera, CountingCamera):
            r._camera = CountingCamera(r._camera)
        cams.append(r._camera)
    return cams


@pytest.mark.parametrize("mode", ["NextStep", "SameStep"])
def test_batched_equals_unbatched_and_renders_once_per_step(mode, monkeypatch):
    from spatialscout_gym.render.camera_group import CameraGroup
    from spatialscout_gym.nbv import NBVVectorEnv
    n = 3
    batched = NBVVectorEnv(n, autoreset_mode=mode, batched_render=True, **KW)
    plain = NBVVectorEnv(n, autoreset_mode=mode, batched_render=False, **KW)
    assert batched.batched_render and not plain.batched_render
    ob, ib = batched.reset(seed=21)
    op, ip = plain.reset(seed=21)
    assert _equal(ob, op) and _equal(ib, ip)
    cams = _count_cameras(batched)
    after_group: list[int] = []
    original = CameraGroup.render

    def spy(self, poses):
        original(self, poses)
        after_group[:] = [c.pictures for c in cams]
    monkeypatch.setattr(CameraGroup, "render", spy)

    rng = np.random.default_rng(3)
    scenes = [set() for _ in range(n)]
    resets = stepping = 0
    for _ in range(9):                  # V = 4: episode ends at steps 3, 6, 9; reconfigure every 2 resets
        actions = rng.integers(10, size=n)
        before = [c.pictures for c in cams]
        due = batched.autoreset_due
        assert mode == "NextStep" or not due.any()
        stepping += int(not due.all())
        out_b = batched.step(actions)
        out_p = plain.step(actions)
        # the env's own bookkeeping names exactly the sub-envs Gymnasium reset instead of stepping
        # (a reset's info has no "refused"; SameStep resets the ended ones within the step)
        reset_now = ~out_b[4].get("_refused", np.zeros(n, bool))
        np.testing.assert_array_equal(reset_now, due if mode == "NextStep" else out_b[2] | out_b[3])
        for x, y in zip(out_b, out_p):
            assert _equal(x, y)
        for i, c in enumerate(cams):
            if due[i]:
                assert c.pictures - before[i] == 1          # the reset's frame 0, rendered on its own
                resets += 1
            else:
                assert after_group[i] - before[i] == 1      # the step's capture: in the group render
            if not due[i] and mode == "NextStep":
                assert c.pictures == after_group[i]         # capture + privileged frame read the prepared picture
            scenes[i].add(batched._nbv[i].env.unwrapped.session.spec.scene_id)
    assert all(len(s) >= 2 for s in scenes)                  # a scene reconfiguration happened in every sub-env
    assert mode == "SameStep" or resets == 2 * n
    assert batched.camera_group.calls == stepping            # one group render per step with a capture
    batched.close()
    plain.close()


def test_batched_equals_single_envs_for_the_same_seeds():
    from spatialscout_gym.nbv import NBVVectorEnv
    venv = gym.make_vec("SpatialScout/NBV-v0", num_envs=2, vectorization_mode="vector_entry_point",
                        batched_render=True, **KW)
    assert isinstance(venv, NBVVectorEnv) and venv.batched_render
    singles = [gym.make("SpatialScout/NBV-v0", **KW) for _ in range(2)]
    obs, _ = venv.reset(seed=7)
    for i, e in enumerate(singles):
        assert _equal({k: v[i] for k, v in obs.items()}, e.reset(seed=7 + i)[0])
    rng = np.random.default_rng(0)
    done_before = np.zeros(2, bool)
    for _ in range(7):
        actions = rng.integers(10, size=2)
        obs, rew, term, trunc, _ = venv.step(actions)
        for i, e in enumerate(singles):
            o, r, t = (e.reset()[0], 0.0, False) if done_before[i] else e.step(int(actions[i]))[:3]
            assert _equal({k: v[i] for k, v in obs.items()}, o)
            assert rew[i] == r and term[i] == t
        done_before = term | trunc
    venv.close()
    for e in singles:
        e.close()


def test_prepared_picture_is_read_only_at_its_exact_pose():
    from spatialscout_gym.render.sapien_renderer import SapienRenderer
    from spatialscout_gym.scenes import catalog
    spec = catalog.load_scene(sorted(catalog.catalog_scene_ids())[0])
    p0 = spec.public.initial_camera
    p1 = CameraPose(p0.position_world + np.array([0.3, 0.0, 0.0]), p0.yaw_deg + 40.0, p0.pitch_deg)
    r, ref = SapienRenderer(spec, 32, 32), SapienRenderer(spec, 32, 32)
    try:
        r.prepare(p0)                                            # sequential path: renders here
        assert r.render_count == 1
        assert np.array_equal(r.capture_rgb(p0), ref.capture_rgb(p0)) and r.render_count == 1
        # a picture rendered elsewhere (as the CUDA group hands over): read at its pose only
        fake = np.zeros((32, 32, 4), np.float32)
        fake[..., 1] = 1.0
        r.prepare(p1, {"Color": fake})
        assert r.render_count == 1
        img = r.capture_rgb(p1)
        assert (img[..., 1] == 255).all() and (img[..., [0, 2]] == 0).all() and r.render_count == 1
        # a target the prepared picture lacks (depth) is rendered on the renderer's own camera
        depth = r.capture_privileged(p1).depth_m
        assert r.render_count == 2 and np.array_equal(depth, ref.capture_privileged(p1).depth_m)
        # pose mismatch: a fresh render, the true picture
        r.prepare(p1, {"Color": fake})
        assert np.array_equal(r.capture_rgb(p0), ref.capture_rgb(p0)) and r.render_count == 3
        # set_scene forgets the prepared picture
        r.prepare(p0, {"Color": fake})
        r.set_scene(spec)
        assert np.array_equal(r.capture_rgb(p0), ref.capture_rgb(p0)) and r.render_count == 4
    finally:
        r.close()
        ref.close()


def test_prepare_step_then_step_equals_step():
    a, b = (gym.make("SpatialScout/NBV-v0", **KW) for _ in range(2))
    oa, _ = a.reset(seed=3)
    ob, _ = b.reset(seed=3)
    wa = a
    while not hasattr(wa, "prepare_step"):
        wa = wa.env
    pose = wa.prepare_step(0)
    assert pose is not None and np.allclose(pose.position_world, a.unwrapped.episode.pose.position_world)
    with pytest.raises(RuntimeError, match="already called"):
        wa.prepare_step(0)
    with pytest.raises(ValueError, match="same action"):
        a.step(1)
    assert _equal(a.step(0), b.step(0))
    a.close()
    b.close()


def _cuda_present() -> bool:
    import sapien
    try:
        sapien.Device("cuda")
    except RuntimeError:
        return False
    return True


@pytest.mark.skipif(_cuda_present(), reason="checks the error where SAPIEN has no CUDA device")
def test_cuda_requested_without_cuda_fails_clearly():
    from spatialscout_gym.render.camera_group import CameraGroup
    from spatialscout_gym.render.device import RenderDeviceError
    from spatialscout_gym.render.sapien_renderer import SapienRenderer
    from spatialscout_gym.scenes import catalog
    from spatialscout_gym.nbv import NBVVectorEnv
    with pytest.raises(RenderDeviceError, match="'cuda' was requested"):
        venv = NBVVectorEnv(1, render_device="cuda", **KW)
        venv.reset(seed=0)
    r = SapienRenderer(catalog.load_scene(sorted(catalog.catalog_scene_ids())[0]), 32, 32)
    try:
        with pytest.raises(RenderDeviceError, match="CUDA device"):
            CameraGroup([r], mode="cuda")
        assert CameraGroup([r]).mode == "sequential"
    finally:
        r.close()
    with pytest.raises(ValueError, match="batched_render"):
        NBVVectorEnv(1, batched_render="yes", **KW)


def test_a_bad_action_moves_no_sub_env():
    """Every action of a batched step is checked before any sub-env moves, so a bad one leaves
    all sub-envs where they were and the next good step works."""
    venv = gym.make_vec("SpatialScout/NBV-v0", num_envs=2, vectorization_mode="vector_entry_point",
                        batched_render=True, **KW)
    venv.reset(seed=3)
    poses = [nbv.env.unwrapped.episode.pose for nbv in venv._nbv]
    with pytest.raises(ValueError, match=r"in \[0, 9\]"):
        venv.step(np.array([0, 12]))
    assert [nbv.env.unwrapped.episode.pose for nbv in venv._nbv] == poses
    assert not any(nbv.core.pending for nbv in venv._nbv)
    _, rew, *_ = venv.step(np.array([0, 6]))
    assert rew.shape == (2,)
    venv.close()


def test_autoreset_bookkeeping_follows_reset_and_reset_mask():
    """``autoreset_due`` (kept by the env, not read from Gymnasium's private state) is the ended
    sub-envs after a step, and clears for the sub-envs a ``reset`` (``reset_mask`` too) resets:
    the next batched step then steps them, rendered in the group call."""
    from spatialscout_gym.nbv import NBVVectorEnv
    venv = NBVVectorEnv(2, autoreset_mode="NextStep", batched_render=True, **KW)
    venv.reset(seed=8)
    assert not venv.autoreset_due.any()
    ended = np.zeros(2, bool)
    for _ in range(3):                              # V = 4: both episodes end by the third step
        _, _, terminated, truncated, _ = venv.step(np.array([6, 7]))
        ended = terminated | truncated
        np.testing.assert_array_equal(venv.autoreset_due, ended)
        if ended.any():
            break
    assert ended.any()
    venv.reset(options={"reset_mask": ended.copy()})
    assert not venv.autoreset_due.any()
    calls = venv.camera_group.calls
    _, _, _, _, info = venv.step(np.array([6, 7]))
    assert info["_refused"].all()                   # every sub-env stepped, none was reset
    assert venv.camera_group.calls == calls + 1
    assert not any(nbv.core.pending for nbv in venv._nbv)
    venv.close()


def test_auto_never_batches_and_batched_cuda_warns_that_it_failed_the_pixel_check():
    """The GPU check found SAPIEN's batched CUDA camera group wrong on an H200, so "auto" stays off
    everywhere and only an explicit True on a CUDA device runs it, with a warning."""
    import warnings

    from spatialscout_gym.nbv.vector import resolve_batched_render
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert resolve_batched_render("auto", "cuda") is False
        assert resolve_batched_render("auto", None) is False
        assert resolve_batched_render(True, None) is True      # CPU: the sequential path
        assert resolve_batched_render(False, "cuda:0") is False
    with pytest.warns(RuntimeWarning, match="unverified.*pixel"):
        assert resolve_batched_render(True, "cuda:0") is True
    with pytest.raises(ValueError, match="batched_render must be"):
        resolve_batched_render("yes", None)
