"""The NBV speed paths give exactly what the plain computations give: the group cache of
``score_scene``, the reframed ground truth of a turned start, the oracle mapper's seen ids and
cached centres, the env's cached observation parts."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from fakes import FakeRenderer, small_scene
from scoring_cases import mixed_scene
from spatialscout_gym.core.frames import CameraPose
from spatialscout_gym.core.renderer_api import PrivilegedFrame
from spatialscout_gym.core.scoring import THRESHOLDS, GroundTruth, score_scene
from spatialscout_gym.core.spec import SceneSpec
from spatialscout_gym.envs.spatialscout_env import SpatialScoutEnv
from spatialscout_gym.episode.tools import TOOL_NAMES
from spatialscout_gym.nbv.mappers import (OraclePerceptionMapper, _target_index, seen_target_ids,
                                                   seen_targets)


def assert_same_score(a, b) -> None:
    """Bit-identical SceneScores (NaNs in the same places)."""
    assert a.num_submitted == b.num_submitted
    assert a.iou.tobytes() == b.iou.tobytes()
    assert a.center_error_m.tobytes() == b.center_error_m.tobytes()
    assert a.matched_id == b.matched_id
    assert np.array_equal(a.hits, b.hits)
    assert a.metrics() == b.metrics() or repr(a.metrics()) == repr(b.metrics())


@pytest.mark.parametrize("compat", ["paper", "release"])
def test_group_cache_gives_the_full_score_over_a_random_episode(compat):
    """Submissions arrive, get replaced and repeat (as in an episode); with one cache for the
    episode every score equals the uncached one, including ties and multi-instance groups."""
    gt = mixed_scene()
    assert any(len(g) > 1 for g in gt.group_members)
    rng = np.random.default_rng(7)
    cache: dict = {}
    accepted: dict[str, list[float]] = {}
    solved_again = []
    for step in range(60):
        for tid in rng.choice(gt.ids, size=int(rng.integers(1, 4)), replace=False):
            i = gt.index[str(tid)]
            kind = rng.integers(4)
            if kind == 0:     # exact centre
                p = gt.centers_task[i]
            elif kind == 1:   # the centre of another target of the group (ties inside groups)
                same = gt.group_members[gt.group_index[i]]
                p = gt.centers_task[int(rng.choice(same))]
            else:
                p = gt.centers_task[i] + rng.normal(0, 0.3 if kind == 2 else 2.0, 3)
            accepted[str(tid)] = [float(x) for x in p]
        before = len(cache)
        cached = score_scene(gt, accepted, compat=compat, group_cache=cache)
        solved_again.append(len(cache) - before)
        assert_same_score(cached, score_scene(gt, accepted, compat=compat))
    # the cache did its job: most calls re-solved fewer groups than the map has
    multi = sum(len(g) > 1 for g in gt.group_members)
    assert np.mean(solved_again) < multi


def test_group_cache_entries_are_read_only():
    gt = mixed_scene()
    cache: dict = {}
    score_scene(gt, {t.id: t.center_task for t in gt.targets}, group_cache=cache)
    assert cache
    for targets, iou, err, _, hits in cache.values():
        for a in (targets, iou, err, *(h[1] for h in hits), *(h[2] for h in hits)):
            assert not a.flags.writeable
        assert all(0 <= k < len(THRESHOLDS) for k, _, _ in hits)


@pytest.mark.parametrize("yaw", [37.0, -120.5, 179.9])
def test_reframed_ground_truth_equals_the_one_from_the_turned_spec(yaw):
    spec = small_scene(64, 64)
    cam = spec.public.initial_camera
    turned = SceneSpec(dataclasses.replace(spec.public, initial_camera=CameraPose(
        cam.position_world, cam.yaw_deg + yaw, cam.pitch_deg)), spec.private)
    want = GroundTruth.from_spec(turned)
    got = GroundTruth.from_spec(spec).reframed(turned.task_frame)
    assert got.scene_id == want.scene_id and got.radius_m == want.radius_m
    assert got.R_world_task.tobytes() == want.R_world_task.tobytes()
    assert got.origin.tobytes() == want.origin.tobytes()
    for a, b in zip(got.targets, want.targets, strict=True):
        assert (a.id, a.category, a.group) == (b.id, b.category, b.group)
        for f in ("center_task", "box_min", "box_max"):
            assert getattr(a, f).tobytes() == getattr(b, f).tobytes(), f
    assert got.centers_task.tobytes() == want.centers_task.tobytes()
    assert all(np.array_equal(x, y) for x, y in zip(got.group_members, want.group_members))


def test_seen_target_ids_are_the_seen_targets_in_order():
    spec = small_scene(64, 64)
    index = _target_index(spec)
    n = len(spec.private.objects)
    rng = np.random.default_rng(3)
    for min_pixels in (1, 5, 40):
        seg = rng.integers(-1, n, (48, 64)).astype(np.int32)
        seg[rng.random(seg.shape) < 0.5] = -1
        frame = PrivilegedFrame(np.ones(seg.shape, np.float32), seg, np.zeros(seg.shape + (3,), np.float32))
        assert seen_target_ids(frame, index, min_pixels) == list(seen_targets(frame, index, min_pixels))


def test_oracle_mapper_centres_follow_each_turned_start():
    """The mapper keeps the scene's boxes between episodes; its centres must still be the
    turned spec's ``targets`` exactly."""
    spec = small_scene(64, 64)
    mapper = OraclePerceptionMapper()
    cam = spec.public.initial_camera
    for yaw in (0.0, 50.0, -91.0):
        turned = SceneSpec(dataclasses.replace(spec.public, initial_camera=CameraPose(
            cam.position_world, cam.yaw_deg + yaw, cam.pitch_deg)), spec.private)
        mapper.reset(turned)
        want = {t.id: t.center_task for t in turned.targets}
        assert set(mapper._centres) == set(want)
        assert all(mapper._centres[k].tobytes() == np.asarray(want[k], float).tobytes() for k in want)


def _reference_observation(env: SpatialScoutEnv) -> dict:
    """The env observation built from the episode state the plain way."""
    ep = env.episode
    pose = ep.task_frame.pose_to_task(ep.pose)
    K = ep.intrinsics
    amap = np.zeros((40, 3), np.float32)
    sub = np.zeros(40, np.int8)
    inv = np.zeros(40, np.int8)
    for i, tid in enumerate(ep.inventory_ids):
        inv[i] = 1
        if tid in ep.accepted_map:
            amap[i] = ep.accepted_map[tid]
            sub[i] = 1
    return {"image": ep.latest_image, "camera_position": np.asarray(pose["position"], np.float32),
            "camera_yaw_pitch": np.array([pose["yaw_deg"], pose["pitch_deg"]], np.float32),
            "intrinsics": np.array([K.fx, K.fy, K.cx, K.cy, K.width, K.height], np.float32),
            "accepted_map": amap, "submitted": sub, "inventory_mask": inv,
            "budgets": np.array([ep.images_left, 1e6 if ep.calls_left is None else ep.calls_left], np.float32)}


def test_env_observation_parts_follow_the_episode_and_are_never_shared():
    spec = small_scene(64, 64)
    env = SpatialScoutEnv(spec, resolution=64, image_budget=6, tool_call_budget=None,
                          renderer=FakeRenderer(spec))
    rng = np.random.default_rng(0)
    ids = [e.id for e in spec.public.inventory]
    seen = []
    for episode in range(2):
        obs, _ = env.reset(seed=episode)
        for _ in range(25):
            action = {k: np.zeros(sp.shape, sp.dtype) for k, sp in env.action_space.spaces.items()}
            tool = rng.choice(["move_camera", "rotate_camera", "capture_image", "submit_positions"])
            action["tool"] = np.int64(TOOL_NAMES.index(tool))
            action["translation"] = rng.uniform(-0.5, 0.5, 3)
            action["rotation"] = rng.uniform(-60, 60, 2)
            action["positions"] = rng.uniform(-1, 1, (40, 3))
            action["submit_mask"] = (rng.random(40) < 0.3).astype(np.int8)
            obs, _, term, _, _ = env.step(action)
            want = _reference_observation(env)
            for k, v in want.items():
                assert np.array_equal(obs[k], v), k
                assert obs[k].dtype == v.dtype, k
            for prev in seen:
                for k in obs:
                    assert not np.shares_memory(obs[k], prev[k]), k
            seen = [obs]
            obs["accepted_map"][:] = 99.0    # scribbling on an observation changes nothing later
            obs["inventory_mask"][:] = 0
            obs["intrinsics"][:] = 0
            if term:
                break
    assert any(ids)


def test_library_images_equal_the_broadcast_formula_for_every_kind():
    """texture_image's per-channel mix gives the bytes of ``_rgba(A c1 + B c2 + C)``."""
    from spatialscout_gym.render import textures as tx
    rng = np.random.default_rng(5)
    for kind in sorted(tx.TEXTURE_KINDS):
        for variant in (0, 7):
            A, B, C = tx._fields(kind, variant)
            for _ in range(2):
                c1, c2 = (np.round(rng.random(3) * 64) / 64).astype(np.float32), \
                    (np.round(rng.random(3) * 64) / 64).astype(np.float32)
                rgb = A.astype(np.float32)[..., None] * c1 + B.astype(np.float32)[..., None] * c2
                if C is not None:
                    rgb += C.astype(np.float32)
                want = tx._rgba(rgb)
                got = tx._library_rgba(A, B, C, c1, c2)
                assert got.dtype == np.uint8 and not got.flags.writeable
                assert np.array_equal(got, want), (kind, variant)


def _box_mesh_one_face_at_a_time(half_size, tile_m):
    """The face-by-face construction box_mesh replaced (the reference for its bytes)."""
    h = np.asarray(half_size, dtype=float)
    ex = np.eye(3)
    verts, tris, norms, uvs = [], [], [], []
    for axis in range(3):
        for sign in (1.0, -1.0):
            n = sign * ex[axis]
            up = ex[2] if axis != 2 else ex[1]
            right = np.cross(up, n)
            hr, hu = float(np.abs(right) @ h), float(np.abs(up) @ h)
            c = n * h[axis]
            verts += [c - right * hr - up * hu, c + right * hr - up * hu,
                      c + right * hr + up * hu, c - right * hr + up * hu]
            if tile_m is None:
                uv = [(0, 1), (1, 1), (1, 0), (0, 0)]
            else:
                su, sv = 2 * hr / tile_m, 2 * hu / tile_m
                uv = [(0, sv), (su, sv), (su, 0), (0, 0)]
            base = len(norms)
            norms += [n] * 4
            uvs += uv
            tris += [(base, base + 1, base + 2), (base, base + 2, base + 3)]
    return (np.asarray(verts, np.float32), np.asarray(tris, np.uint32), np.asarray(norms, np.float32),
            np.asarray(uvs, np.float32))


def test_box_mesh_bytes_equal_the_face_by_face_construction():
    from spatialscout_gym.render.meshes import box_mesh
    rng = np.random.default_rng(2)
    cases = [([0.5, 0.5, 0.5], None), ([0.0, 0.3, 1.2], 0.6), ([1e-4, 2.0, 0.0], None)]
    cases += [(rng.uniform(0, 3, 3), float(t)) for t in rng.uniform(0.1, 2, 30)]
    cases += [(rng.uniform(0, 3, 3), None) for _ in range(10)]
    for half, tile in cases:
        got, want = box_mesh(np.asarray(half), tile), _box_mesh_one_face_at_a_time(half, tile)
        for g, w in zip(got, want, strict=True):
            assert g.dtype == w.dtype and g.shape == w.shape
            assert g.tobytes() == w.tobytes()       # signed zeros included
