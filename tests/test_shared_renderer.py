"""A privileged frame belongs to its scene, and the shared renderer pool never mixes devices or
shaders (real SAPIEN renders on this machine's Vulkan device)."""

import numpy as np
import pytest

from render_fixtures import make_room_spec, make_sphere_spec
from spatialscout_gym.envs import session as session_mod
from spatialscout_gym.envs.session import EpisodeSession, sapien_factory
from spatialscout_gym.envs.spatialscout_env import SpatialScoutEnv
from spatialscout_gym.render.device import RenderDeviceError
from spatialscout_gym.render.sapien_renderer import StaleFrameError

RES = 32


def _reference(spec):
    """The privileged buffers of ``spec``'s first frame from a renderer of its own."""
    env = SpatialScoutEnv(spec, resolution=RES, privileged_obs=True)
    try:
        obs, _ = env.reset()
        frame = env.privileged_frame()
        return obs["segmentation"].copy(), obs["depth"].copy(), frame.position_world.copy()
    finally:
        env.close()


def test_a_late_privileged_frame_renders_in_its_own_scene_on_a_shared_renderer():
    room, sphere = make_room_spec("room-a"), make_sphere_spec([2.0, 0.0, 0.0], radius=0.5)
    seg_ref, depth_ref, pos_ref = _reference(room)
    assert (seg_ref >= 0).mean() > 0.9          # the room fills the view: a wrong scene shows
    a = SpatialScoutEnv(room, resolution=RES, shared_renderer=True)
    b = SpatialScoutEnv(sphere, resolution=RES, shared_renderer=True)
    try:
        assert a.session._renderer is b.session._renderer
        a.reset()
        late = a.privileged_frame()             # lazy: nothing read yet
        b.reset()                               # the shared renderer now shows the sphere scene
        np.testing.assert_array_equal(late.segmentation, seg_ref)
        b.step({"tool": 6})                     # capture_image in b's scene moves the camera on
        np.testing.assert_allclose(late.depth_m, depth_ref, atol=1e-5)
        np.testing.assert_allclose(late.position_world, pos_ref, atol=1e-4)
        _, _, _, _, info = b.step({"tool": 6})  # and b still renders its own scene afterwards
        assert info["tool_result"]["ok"]
        seg_b = b.renderer.capture_privileged(b.episode.pose).segmentation
        assert set(np.unique(seg_b)) <= {-1, 0}
    finally:
        a.close()
        b.close()


def test_a_frame_read_after_its_renderer_switched_scene_is_refused():
    room = make_room_spec("room-c")
    env = SpatialScoutEnv(room, resolution=RES)
    try:
        env.reset()
        frame = env.privileged_frame()
        env.renderer.set_scene(make_sphere_spec([2.0, 0.0, 0.0]))
        with pytest.raises(StaleFrameError, match="captured in scene 'room-c', but its renderer now shows 'sphere'"):
            frame.segmentation
        env.renderer.set_scene(room)             # the frame's own scene again: it renders there
        seg_ref, _, _ = _reference(room)
        np.testing.assert_array_equal(frame.segmentation, seg_ref)
    finally:
        env.close()


def test_shared_pool_is_keyed_by_what_changes_the_pixels():
    room = make_room_spec("room-pool")
    base = EpisodeSession(resolution=RES, image_budget=2, shared=True)
    same = EpisodeSession(resolution=RES, image_budget=2, shared=True, renderer_factory=sapien_factory(None))
    lit = EpisodeSession(resolution=RES, image_budget=2, shared=True,
                         renderer_factory=sapien_factory(shader="default"))
    try:
        base.load(room)
        same.load(room)
        lit.load(room)
        assert same._renderer is base._renderer           # equal factories share one renderer
        assert lit._renderer is not base._renderer and lit._renderer.shader == "default"
        assert base._renderer.shader == "minimal"
        assert session_mod.shared_renderer(RES) is base._renderer
        cuda = SpatialScoutEnv(room, resolution=RES, shared_renderer=True, render_device="cuda")
    except RenderDeviceError as exc:          # a machine without CUDA refuses instead of pooling
        assert "'cuda'" in str(exc)
    else:                                     # a CUDA machine gets a renderer on that device
        try:
            assert cuda.session._renderer is not base._renderer
            assert cuda.session._renderer.device == "cuda"
        finally:
            cuda.close()
    finally:
        for s in (base, same, lit):
            s.close()
    assert session_mod.shared_renderer(RES) is None


def test_shared_pool_refuses_an_unhashable_factory():
    class Factory:
        __hash__ = None

        def __call__(self, spec, w, h):
            raise AssertionError("never built")

    with pytest.raises(ValueError, match="must be hashable"):
        EpisodeSession(resolution=RES, shared=True, renderer_factory=Factory())
