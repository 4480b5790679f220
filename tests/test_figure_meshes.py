"""Figure 4 with the scene's own meshes: targets move to the submitted centres
matched to them, omitted ones are hidden, a perfect map looks like the reference. SAPIEN on
software Vulkan at 48 px."""

from __future__ import annotations

import numpy as np
import pytest

from spatialscout_gym.core.scoring import GroundTruth
from spatialscout_gym.eval.pages.figures import iou_color, mesh_scene, scene_figure
from spatialscout_gym.scenes.catalog import scene_by_name


@pytest.fixture(scope="module")
def spec():
    return scene_by_name("procedural:11")


def test_mesh_scene_moves_matched_targets_and_hides_the_rest(spec):
    first, second = spec.targets[0], spec.targets[1]
    goal = (first.box_min + first.box_max) / 2 + np.array([0.3, -0.2, 0.1])
    moved = mesh_scene(spec, {first.id: goal, second.id: (second.box_min + second.box_max) / 2})
    by_id = {o.id: o for o in moved.private.objects}
    lo, hi = by_id[first.id].aabb_world
    assert np.allclose((lo + hi) / 2, goal) and np.allclose(hi - lo, first.box_max - first.box_min)
    lo, hi = by_id[second.id].aabb_world
    assert np.allclose(lo, second.box_min) and np.allclose(hi, second.box_max)
    roles = {o.id: o.role for o in moved.private.objects}
    assert all(roles[t.id] == "hidden" for t in spec.targets[2:])
    assert [o.id for o in moved.private.objects] == [o.id for o in spec.private.objects]   # segmentation indices kept
    static_before = [o for o in spec.private.objects if o.role == "static"]
    assert [o for o in moved.private.objects if o.role == "static"] == static_before


def test_iou_colours():
    assert iou_color(0.0) == (255, 0, 0) and iou_color(1.0) == (0, 200, 0) and iou_color(0.5) == (255, 200, 0)


@pytest.mark.render
def test_a_perfect_map_renders_like_the_reference_and_outlines_show_iou(spec):
    from spatialscout_gym.render.sapien_renderer import SapienRenderer
    gt = GroundTruth.from_spec(spec)
    ref = {t.id: (t.box_min + t.box_max) / 2 for t in spec.targets}
    pose = spec.public.initial_camera
    px = 48
    with SapienRenderer(spec, px, px) as r:
        reference = r.capture_rgb(pose)
        r.set_scene(mesh_scene(spec, ref))                 # every target at its own centre
        assert np.array_equal(r.capture_rgb(pose), reference)
        r.set_scene(mesh_scene(spec, {}))                  # every target hidden
        assert not np.array_equal(r.capture_rgb(pose), reference)
        perfect = {t.id: t.center_task.tolist() for t in spec.targets}
        # sideways by more than the box in any horizontal direction: IoU 0, meshes mostly in view
        shifted = {t.id: (t.center_task + np.array([0.0, 2 * t.size.max() + 0.05, 0.0])).tolist()
                   for t in spec.targets}
        good = np.asarray(scene_figure(spec.public, gt, perfect, spec, r, px))
        bad = np.asarray(scene_figure(spec.public, gt, shifted, spec, r, px))
    head = good.shape[0] - 2 * px - 4

    def bottom(img):   # the prediction row
        return img[head + px + 4:head + 2 * px + 4]

    def count(img, rgb):
        return int(np.all(bottom(img) == rgb, axis=-1).sum())

    assert count(good, (0, 200, 0)) > 20 and count(good, (255, 0, 0)) == 0    # IoU 1: green outlines
    assert count(bad, (255, 0, 0)) > 20 and count(bad, (0, 200, 0)) == 0      # IoU 0: red outlines
    assert np.array_equal(good[head:head + px], bad[head:head + px])          # same reference row
