"""An imported ManiSkill-layout scene rendered with real SAPIEN (software Vulkan in CI): targets
show, hidden candidates never do, and the mesh files themselves are drawn."""

from __future__ import annotations

import numpy as np
import pytest

from maniskill_dataset import ROOM_HALF_M, make_ai2thor_dataset
from spatialscout_gym.core.frames import CameraPose
from spatialscout_gym.scenes import maniskill as ms
from spatialscout_gym.scenes.export import export_scene

pytestmark = [pytest.mark.render, pytest.mark.slow]


@pytest.fixture(scope="module")
def rendered(tmp_path_factory):
    from spatialscout_gym.render.sapien_renderer import SapienRenderer

    asset_dir = tmp_path_factory.mktemp("ms_render")
    make_ai2thor_dataset(asset_dir)
    spec = ms.import_scene("iTHOR", "FloorPlan1_physics", 35, asset_dir=asset_dir)
    renderer = SapienRenderer(spec, 96, 96)
    cam = spec.public.initial_camera
    # the initial view, a panorama from there, and a 3 x 3 grid of top-down views under the ceiling
    poses = [CameraPose(cam.position_world, cam.yaw_deg + 45 * k, cam.pitch_deg) for k in range(8)]
    poses += [CameraPose(np.array([x, y, 2.45]), 90.0, -85.0)
              for x in (-2.7, 0.0, 2.7) for y in (-2.7, 0.0, 2.7)]
    frames = [renderer.capture_privileged(p) for p in poses]
    rgb = renderer.capture_rgb(cam)
    yield spec, frames, rgb
    renderer.close()


def test_targets_show_and_hidden_candidates_never_do(rendered):
    spec, frames, _ = rendered
    seen = set(np.unique(np.concatenate([f.segmentation.ravel() for f in frames])).tolist())
    roles = [o.role for o in spec.private.objects]
    hidden = {i for i, r in enumerate(roles) if r == "hidden"}
    targets = {i for i, r in enumerate(roles) if r == "target"}
    assert len(hidden) == 2 and not (seen & hidden)
    assert targets <= seen, f"targets never seen: {sorted(spec.private.objects[i].id for i in targets - seen)}"
    initial = set(np.unique(frames[0].segmentation).tolist())
    assert len(initial & targets) >= 3  # the initial view faces candidates


def test_mesh_files_are_drawn_not_their_box_proxies(rendered):
    """Pixels of the icosphere 'Statue' lie on its sphere (a box proxy reaches r * sqrt(3))."""
    spec, frames, _ = rendered
    statues = [i for i, o in enumerate(spec.private.objects) if o.category == "Statue" and o.role == "target"]
    checked = 0
    for f in frames:
        for i in statues:
            mask = f.segmentation == i
            if mask.sum() < 5:
                continue
            lo, hi = spec.private.objects[i].aabb_world
            r = np.linalg.norm(f.position_world[mask] - (lo + hi) / 2, axis=1)
            assert np.all(r < 0.2 + 0.01) and np.all(r > 0.2 * 0.95 - 0.01)
            checked += 1
    assert checked >= 3
    # and nothing rendered lies outside the room
    for f in frames:
        p = f.position_world[f.segmentation >= 0]
        assert np.all(np.abs(p[:, :2]) <= ROOM_HALF_M + 0.11)


def test_rgb_is_lit(rendered):
    _, _, rgb = rendered
    assert rgb.shape == (96, 96, 3) and rgb.dtype == np.uint8
    assert 30 < rgb.mean() < 250 and rgb.std() > 5


def test_an_imported_scene_is_a_registered_env(tmp_path, monkeypatch):
    """``$SPATIALSCOUT_SCENE_DIRS`` -> ``SpatialScout/<scene_id>-v0``; reset renders its view."""
    import gymnasium as gym

    from spatialscout_gym.envs.registration import register_envs

    make_ai2thor_dataset(tmp_path / "assets", scene="FloorPlan2_physics", n_candidates=6,
                         n_uncategorised=0)  # an id no other test registers
    spec = ms.import_scene("iTHOR", "FloorPlan2_physics", 5, asset_dir=tmp_path / "assets")
    export_scene(spec, tmp_path / "scenes")
    monkeypatch.setenv(ms.SCENE_DIRS_ENV, str(tmp_path / "scenes"))
    register_envs()
    env = gym.make("SpatialScout/iTHOR_FloorPlan2-v0", resolution=32)
    try:
        obs, _ = env.reset(seed=0)
        assert obs["image"].shape == (32, 32, 3) and obs["image"].std() > 1
        assert int(obs["inventory_mask"].sum()) == 5
    finally:
        env.close()
