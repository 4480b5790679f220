"""The paper's scorer (docs/protocol.md section 6): IoU, assignments, views, aggregation, references."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scoring_cases import IDENTITY, TILTED, exact_map, make_gt, mixed_scene
from spatialscout_gym.core.references import origin_predictions, uniform_ball_predictions
from spatialscout_gym.core.scoring import GroundTruth, aggregate, box_iou, score_scene

ALL_COLUMNS = ("mean_iou", "gt_0", "gt_50", "gt_90")


def columns(m: dict) -> list[float]:
    return [m[view][k] for view in ("all", "submitted") for k in ALL_COLUMNS] + [m["coverage"]]


# ---- the one-axis formula ---------------------------------------------------------------------
@pytest.mark.parametrize("axis", [0, 1, 2])
@pytest.mark.parametrize("frac", [0.0, 0.01, 0.2, 0.5, 0.99, 1.0, 1.5])
def test_one_axis_formula_along_world_axes(axis, frac):
    """Offset along one *world* axis of the box (the task frame is tilted): (l - |d|)/(l + |d|)."""
    size = np.array([0.4, 0.7, 1.3])
    gt = make_gt([("a", "A", [2.0, 0.3, -0.2], size)], TILTED)
    l, d = size[axis], frac * size[axis]
    offset_world = np.zeros(3)
    offset_world[axis] = -d
    p_hat = gt.centers_task[0] + TILTED.direction_to_task(offset_world)
    m = score_scene(gt, {"a": p_hat}).metrics()
    assert m["all"]["mean_iou"] == pytest.approx(max(0.0, (l - d) / (l + d)), abs=1e-12)


def test_task_frame_offset_is_rotated_to_world_axes():
    """The same task-frame offset scores differently when the box is long along another world axis."""
    gt = make_gt([("a", "A", [2.0, 0.0, 0.0], [1.0, 0.1, 0.1])], IDENTITY)
    along = score_scene(gt, {"a": [2.3, 0.0, 0.0]}).metrics()["all"]["mean_iou"]
    across = score_scene(gt, {"a": [2.0, 0.03, 0.0]}).metrics()["all"]["mean_iou"]
    assert along == pytest.approx(0.7 / 1.3)
    assert across == pytest.approx(0.07 / 0.13)


@pytest.mark.parametrize("tau_key,tau,ratio", [("gt_90", 0.9, 1 / 19), ("gt_50", 0.5, 1 / 3)])
def test_threshold_boundaries_l19_and_l3(tau_key, tau, ratio):
    l = 0.37
    gt = make_gt([("a", "A", [1.0, 0.0, 0.0], [l, 0.2, 0.2])], TILTED)
    for factor, expect_hit in [(1 - 1e-6, True), (1 + 1e-6, False)]:
        offset_world = np.array([ratio * l * factor, 0.0, 0.0])
        p_hat = gt.centers_task[0] + TILTED.direction_to_task(offset_world)
        m = score_scene(gt, {"a": p_hat}).metrics()
        assert (m["all"][tau_key] == 1.0) is expect_hit
        assert (m["all"]["mean_iou"] > tau) is expect_hit


def test_thresholds_are_strict():
    # l = 3, |d| = 1 gives IoU = 2/4 = 0.5 exactly; l = 19, |d| = 1 gives 18/20 = 0.9 exactly
    for l, key in [(3.0, "gt_50"), (19.0, "gt_90")]:
        gt = make_gt([("a", "A", [2.0, 0.0, 0.0], [l, 1.0, 1.0])], IDENTITY)
        m = score_scene(gt, {"a": [3.0, 0.0, 0.0]}).metrics()
        assert m["all"]["mean_iou"] == (l - 1) / (l + 1)
        assert m["all"][key] == 0.0
        assert m["all"]["gt_0"] == 1.0
    gt = make_gt([("a", "A", [2.0, 0.0, 0.0], [1.0, 1.0, 1.0])], IDENTITY)
    touching = score_scene(gt, {"a": [3.0, 0.0, 0.0]}).metrics()    # boxes only touch: IoU 0
    assert touching["all"]["gt_0"] == 0.0 and touching["coverage"] == 1.0


def test_equal_box_volume_formula():
    size, d = np.array([0.5, 0.4, 0.3]), np.array([0.1, -0.05, 0.02])
    inter = np.prod(size - np.abs(d))
    assert box_iou(size, size, d) == pytest.approx(inter / (2 * np.prod(size) - inter))


@settings(max_examples=200, deadline=None)
@given(st.tuples(*[st.floats(0.0, 3.0)] * 3), st.tuples(*[st.floats(0.0, 3.0)] * 3),
       st.tuples(*[st.floats(-4.0, 4.0)] * 3))
def test_box_iou_in_unit_interval_and_symmetric(a, b, d):
    iou = float(box_iou(a, b, d))
    assert 0.0 <= iou <= 1.0
    assert iou == pytest.approx(float(box_iou(b, a, -np.array(d))), abs=1e-12)


# ---- exact maps, the floor, id swaps ----------------------------------------------------------
def test_exact_map_scores_100_in_every_column_zero_thickness_included():
    gt = mixed_scene()
    assert gt.sizes[gt.index["poster_0"], 1] == 0.0
    m = score_scene(gt, exact_map(gt)).metrics()
    assert columns(m) == [1.0] * 9
    assert m["center_error_m"]["mean"] == pytest.approx(0.0, abs=1e-12)
    assert m["full_scene_loss_m"] == pytest.approx(0.0, abs=1e-12)


def test_release_compat_has_no_floor():
    gt = mixed_scene()
    s = score_scene(gt, exact_map(gt), compat="release")
    assert s.iou[gt.index["poster_0"]] == 0.0                  # zero thickness never scores
    others = [i for i in range(gt.num_targets) if i != gt.index["poster_0"]]
    np.testing.assert_allclose(s.iou[others], 1.0)
    assert s.metrics()["all"]["gt_0"] == pytest.approx(7 / 8)


def test_thin_target_uses_one_centimetre_floor():
    gt = make_gt([("card", "Card", [1.0, 0.0, 0.0], [0.085, 0.054, 0.0008])], IDENTITY)
    # 2 mm off along world z: without the floor this misses (0.8 mm thick); with it, (10-2)/(10+2)
    m = score_scene(gt, {"card": [1.0, 0.0, 0.002]}).metrics()
    assert m["all"]["mean_iou"] == pytest.approx(8 / 12)
    assert score_scene(gt, {"card": [1.0, 0.0, 0.002]}, compat="release").metrics()["all"]["gt_0"] == 0.0


def rotated_ids(gt: GroundTruth) -> dict[str, list[float]]:
    """Every group's centres handed to the next id of the group (a full swap)."""
    out = {}
    for members in gt.group_members:
        ids = [gt.ids[i] for i in members]
        for k, i in enumerate(members):
            out[ids[(k + 1) % len(ids)]] = gt.centers_task[i].tolist()
    return out


def test_ids_rotated_within_groups_score_100_by_default_and_less_under_release():
    gt = mixed_scene()
    swapped = rotated_ids(gt)
    assert swapped != exact_map(gt)
    paper = score_scene(gt, swapped).metrics()
    assert columns(paper) == [1.0] * 9
    release = score_scene(gt, swapped, compat="release").metrics()
    assert release["all"]["mean_iou"] < 0.8
    assert release["all"]["gt_90"] < paper["all"]["gt_90"]
    # the centre errors do not depend on the compat option
    assert release["center_error_m"] == paper["center_error_m"]


def test_one_centre_under_every_id_of_its_group():
    gt = mixed_scene()
    positions = {}
    for members in gt.group_members:
        first = gt.centers_task[members[0]].tolist()
        positions.update({gt.ids[i]: first for i in members})
    m = score_scene(gt, positions).metrics()
    n_groups = len(gt.group_members)
    assert m["coverage"] == 1.0
    assert m["all"]["mean_iou"] == pytest.approx(n_groups / gt.num_targets)   # instances don't overlap
    assert m["all"]["gt_0"] == pytest.approx(n_groups / gt.num_targets)


# ---- assignments ------------------------------------------------------------------------------
def test_hit_maximising_assignment_finds_hits_the_distance_assignment_misses():
    # A: 4 m cube at x = 0; B: 10 cm cube at x = 1. q1 = 0.95 hits both; q2 = 1.5 hits only A.
    gt = make_gt([("a", "Box", [0.0, 0.0, 0.0], [4.0, 4.0, 4.0]),
                  ("b", "Box", [1.0, 0.0, 0.0], [0.1, 0.1, 0.1])], IDENTITY)
    s = score_scene(gt, {"a": [0.95, 0.0, 0.0], "b": [1.5, 0.0, 0.0]})
    # distance assignment (0.95 + 0.5 < 0.05 + 1.5): q1 -> A, q2 -> B (miss)
    assert s.matched_id == ["a", "b"]
    assert int(np.sum(s.iou > 0)) == 1
    m = s.metrics()
    assert m["all"]["gt_0"] == 1.0                     # q1 -> B and q2 -> A hit both
    assert m["all"]["mean_iou"] == pytest.approx((4 - 0.95) / (4 + 0.95) / 2)


def test_distance_assignment_minimises_total_distance():
    gt = make_gt([(f"c{i}", "Chair", [2.0 + i, 0.0, 0.0], [0.5, 0.5, 0.5]) for i in range(3)], IDENTITY)
    s = score_scene(gt, {"c0": [4.1, 0.0, 0.0], "c1": [2.1, 0.0, 0.0], "c2": [3.1, 0.0, 0.0]})
    assert s.matched_id == ["c1", "c2", "c0"]
    np.testing.assert_allclose(s.center_error_m, 0.1)


def test_partial_group_leaves_far_targets_unmatched():
    gt = make_gt([(f"c{i}", "Chair", [2.0 + i, 0.0, 0.0], [0.5, 0.5, 0.5]) for i in range(3)]
                 + [("lamp", "Lamp", [0.0, 2.0, 0.0], [0.3, 0.3, 0.3])], IDENTITY)
    s = score_scene(gt, {"c0": [3.9, 0.0, 0.0], "c2": [3.05, 0.0, 0.0]})
    assert s.matched_id == [None, "c2", "c0", None]
    assert np.isnan(s.center_error_m[[0, 3]]).all()
    m = s.metrics()
    assert m["num_submitted"] == 2 and m["coverage"] == 0.5
    assert m["center_error_m"]["mean"] == pytest.approx(0.075)
    assert m["all"]["mean_iou"] == pytest.approx(m["submitted"]["mean_iou"] / 2)


def test_ties_are_broken_reproducibly():
    # two identical targets; both predictions on the mid-plane: every assignment ties
    gt = make_gt([("x", "Cup", [2.0, 0.5, 0.0], [0.4, 0.4, 0.4]),
                  ("y", "Cup", [2.0, -0.5, 0.0], [0.4, 0.4, 0.4])], IDENTITY)
    p, q = [2.1, 0.0, 0.0], [1.9, 0.0, 0.0]
    a = score_scene(gt, {"x": p, "y": q})
    b = score_scene(gt, {"y": p, "x": q})
    c = score_scene(gt, {"x": q, "y": p})
    np.testing.assert_array_equal(a.center_error_m, b.center_error_m)
    np.testing.assert_array_equal(a.center_error_m, c.center_error_m)
    assert a.metrics() == b.metrics() == c.metrics()
    # canonical order: prediction (1.9, ...) first, target (2.0, -0.5) first
    assert a.center_error_m[gt.index["y"]] == pytest.approx(np.hypot(0.1, 0.5))
    assert a.matched_id[gt.index["y"]] == "y" and c.matched_id[gt.index["y"]] == "x"


group_sizes = st.lists(st.integers(1, 4), min_size=1, max_size=6)


@settings(max_examples=60, deadline=None)
@given(group_sizes, st.integers(0, 2**32 - 1), st.data())
def test_scores_stay_in_unit_interval_and_ignore_id_permutations_within_groups(sizes, seed, data):
    rng = np.random.default_rng(seed)
    targets = []
    for g, k in enumerate(sizes):
        for i in range(k):
            targets.append((f"g{g}_{i}", f"G{g}", rng.uniform(-3, 3, 3), rng.uniform(0.0, 0.8, 3)))
    gt = make_gt(targets, TILTED)
    submitted = [t[0] for t in targets if data.draw(st.booleans())]
    positions = {i: (gt.centers_task[gt.index[i]] + rng.normal(0, 0.3, 3)).tolist() for i in submitted}
    # a permutation of ids within each group (positions stay in their group)
    permuted = {}
    for members in gt.group_members:
        ids = [gt.ids[i] for i in members if gt.ids[i] in positions]
        perm = data.draw(st.permutations(ids))
        permuted.update({new: positions[old] for old, new in zip(ids, perm)})
    s, sp = score_scene(gt, positions), score_scene(gt, permuted)
    assert np.all((s.iou >= 0) & (s.iou <= 1))
    np.testing.assert_array_equal(s.iou, sp.iou)
    np.testing.assert_array_equal(s.hits, sp.hits)
    m = s.metrics()
    assert m == sp.metrics()
    for view in ("all", "submitted"):
        assert all(0.0 <= m[view][k] <= 1.0 for k in ALL_COLUMNS)
        assert m[view]["gt_0"] >= m[view]["gt_50"] >= m[view]["gt_90"]
    # the all-target view is the submitted view times coverage
    for k in ALL_COLUMNS:
        assert m["all"][k] == pytest.approx(m["coverage"] * m["submitted"][k])
    # hit-maximising assignments never find fewer hits than the distance assignment
    for k, tau in zip(("gt_0", "gt_50", "gt_90"), (0.0, 0.5, 0.9)):
        assert m["all"][k] * gt.num_targets >= np.sum(s.iou > tau) - 1e-9


# ---- maps of every size, centre errors, loss --------------------------------------------------
def test_empty_map():
    gt = mixed_scene()
    m = score_scene(gt, {}).metrics()
    assert columns(m) == [0.0] * 9
    assert m["num_submitted"] == 0
    assert m["center_error_m"] == {"mean": None, "median": None, "rmse": None}
    assert m["full_scene_loss_m"] == 5.0
    assert score_scene(gt, {}, lam=2.0).metrics()["full_scene_loss_m"] == 2.0


def test_partial_map_views_and_loss():
    gt = mixed_scene()
    m = score_scene(gt, {"sofa_0": gt.centers_task[gt.index["sofa_0"]] + [0.3, 0.0, 0.0],
                         "lamp_0": gt.centers_task[gt.index["lamp_0"]]}).metrics(lam=4.0)
    assert m["coverage"] == 2 / 8
    assert m["submitted"]["gt_0"] == 1.0 and m["all"]["gt_0"] == 0.25
    assert m["submitted"]["gt_90"] == 0.5
    assert m["center_error_m"]["mean"] == pytest.approx(0.15)
    assert m["center_error_m"]["median"] == pytest.approx(0.15)
    assert m["center_error_m"]["rmse"] == pytest.approx(np.sqrt(0.09 / 2))
    assert m["full_scene_loss_m"] == pytest.approx(0.25 * 0.15 + 0.75 * 4.0)


def test_center_error_statistics():
    gt = make_gt([(f"t{i}", f"T{i}", [float(i), 1.0, 0.0], [0.2] * 3) for i in range(3)], IDENTITY)
    s = score_scene(gt, {"t0": [0.0, 1.1, 0.0], "t1": [1.0, 1.0, 0.2], "t2": [2.0, 1.0, -0.6]})
    m = s.metrics()["center_error_m"]
    assert m["mean"] == pytest.approx(0.3)
    assert m["median"] == pytest.approx(0.2)
    assert m["rmse"] == pytest.approx(np.sqrt((0.01 + 0.04 + 0.36) / 3))


# ---- aggregation ------------------------------------------------------------------------------
def test_object_micro_pools_targets_and_scene_macro_averages_scenes():
    small = make_gt([("a", "A", [1, 0, 0], [0.2] * 3), ("b", "B", [0, 1, 0], [0.2] * 3)],
                    IDENTITY, "small")
    big = make_gt([(f"t{i}", f"T{i}", [i, 2.0, 0.0], [0.2] * 3) for i in range(4)], IDENTITY, "big")
    empty = make_gt([("z", "Z", [0, 0, 1], [0.2] * 3)], IDENTITY, "empty")
    scores = [score_scene(small, {"a": [1.1, 0, 0]}), score_scene(big, exact_map(big)),
              score_scene(empty, {})]
    out = aggregate(scores)
    micro, macro = out["object_micro"], out["scene_macro"]
    assert set(out["scenes"]) == {"small", "big", "empty"}
    assert micro["num_targets"] == 7 and micro["num_submitted"] == 5
    assert micro["coverage"] == pytest.approx(5 / 7)
    iou_a = (0.2 - 0.1) / (0.2 + 0.1)
    assert micro["all"]["mean_iou"] == pytest.approx((iou_a + 4) / 7)
    assert micro["submitted"]["mean_iou"] == pytest.approx((iou_a + 4) / 5)
    assert macro["coverage"] == pytest.approx((0.5 + 1.0 + 0.0) / 3)
    assert macro["all"]["mean_iou"] == pytest.approx((iou_a / 2 + 1.0 + 0.0) / 3)
    assert macro["submitted"]["mean_iou"] == pytest.approx((iou_a + 1.0 + 0.0) / 3)   # empty map: 0
    # pooled centre errors: 0.1 and four zeros; macro leaves the empty scene out
    assert micro["center_error_m"]["mean"] == pytest.approx(0.1 / 5)
    assert micro["center_error_m"]["median"] == pytest.approx(0.0)
    assert macro["center_error_m"]["mean"] == pytest.approx((0.1 + 0.0) / 2)
    assert micro["full_scene_loss_m"] == pytest.approx(5 / 7 * 0.02 + 2 / 7 * 5.0)
    assert macro["full_scene_loss_m"] == pytest.approx(((0.5 * 0.1 + 0.5 * 5.0) + 0.0 + 5.0) / 3)
    assert aggregate(scores, lam=1.0)["scene_macro"]["full_scene_loss_m"] == \
        pytest.approx(((0.5 * 0.1 + 0.5) + 0.0 + 1.0) / 3)


def test_aggregate_rejects_empty_and_duplicate_scenes():
    gt = mixed_scene()
    with pytest.raises(ValueError, match="at least one"):
        aggregate([])
    with pytest.raises(ValueError, match="more than once"):
        aggregate([score_scene(gt, {}), score_scene(gt, {})])


# ---- validation -------------------------------------------------------------------------------
@pytest.mark.parametrize("positions,match", [
    ({"nope": [0, 0, 0]}, "unknown target id 'nope'"),
    ({"lamp_0": [0, float("nan"), 0]}, "three finite numbers"),
    ({"lamp_0": [0, 0]}, "three finite numbers"),
    ({"lamp_0": [0, True, 0]}, "three finite numbers"),
])
def test_score_scene_rejects_bad_input(positions, match):
    with pytest.raises(ValueError, match=match):
        score_scene(mixed_scene(), positions)


def test_score_scene_rejects_bad_options():
    with pytest.raises(ValueError, match="compat"):
        score_scene(mixed_scene(), {}, compat="v2")
    with pytest.raises(ValueError, match="lambda"):
        score_scene(mixed_scene(), {}, lam=float("inf"))


def test_ground_truth_validation():
    d = mixed_scene().to_dict()
    GroundTruth.from_dict(d)
    bad = mixed_scene().to_dict()
    bad["targets"][2]["center"][0] += 0.1
    with pytest.raises(ValueError, match=r"targets\[2\].*not the task-frame centre"):
        GroundTruth.from_dict(bad)
    bad = mixed_scene().to_dict()
    bad["targets"][1]["box_max"][2] = bad["targets"][1]["box_min"][2] - 1
    with pytest.raises(ValueError, match="below box_min"):
        GroundTruth.from_dict(bad)
    bad = mixed_scene().to_dict()
    bad["targets"][1]["id"] = bad["targets"][0]["id"]
    with pytest.raises(ValueError, match="more than once"):
        GroundTruth.from_dict(bad)
    bad = mixed_scene().to_dict()
    del bad["world_from_task"]
    with pytest.raises(ValueError, match="world_from_task"):
        GroundTruth.from_dict(bad)


def test_ground_truth_from_scene_spec():
    from spatialscout_gym.core.camera import Intrinsics
    from spatialscout_gym.core.frames import CameraPose
    from spatialscout_gym.core.spec import Light, Part, SceneObject, SceneSpec

    def box(oid, group, pos, half):
        return SceneObject(oid, group, group, "target",
                           [Part("box", np.array(pos, float), half_size=np.array(half, float))])
    spec = SceneSpec.from_objects(
        "spec_scene", [box("t0", "Cup", [2, 1, 0.8], [0.05, 0.05, 0.06]),
                       box("t1", "Cup", [3, -1, 0.8], [0.04, 0.04, 0.05]),
                       box("t2", "Table", [2.5, 0, 0.4], [0.6, 0.4, 0.4])],
        CameraPose(np.array([0.0, 0.0, 1.5]), 10.0, -15.0), Intrinsics.from_fov(512, 512, 60),
        [Light("directional", (1.0, 1.0, 1.0), direction_world=np.array([0, 0, -1.0]))])
    gt = GroundTruth.from_spec(spec)
    assert gt.ids == ("t0", "t1", "t2") and gt.radius_m == pytest.approx(spec.public.radius_m)
    np.testing.assert_allclose(gt.sizes[2], [1.2, 0.8, 0.8])
    assert columns(score_scene(gt, rotated_ids(gt)).metrics()) == [1.0] * 9


# ---- inventory-only references ----------------------------------------------------------------
def test_origin_reference_loss_is_mean_target_distance():
    gt = mixed_scene()
    preds = origin_predictions(gt)
    assert set(preds) == set(gt.ids) and all(p == [0.0, 0.0, 0.0] for p in preds.values())
    m = score_scene(gt, preds).metrics()
    dist = np.linalg.norm(gt.centers_task, axis=1)
    assert m["coverage"] == 1.0
    # within a group the assignment may pair the origin with any instance: same distances
    assert m["full_scene_loss_m"] == pytest.approx(dist.mean())
    assert origin_predictions(["a", {"id": "b"}]) == {"a": [0.0] * 3, "b": [0.0] * 3}


def test_uniform_ball_reference_is_seeded_and_uniform():
    ids = [f"t{i}" for i in range(20000)]
    a = uniform_ball_predictions(ids, 3.0, np.random.default_rng(7))
    b = uniform_ball_predictions(ids, 3.0, np.random.default_rng(7))
    c = uniform_ball_predictions(ids, 3.0, np.random.default_rng(8))
    assert a == b and a != c
    pts = np.array(list(a.values()))
    r = np.linalg.norm(pts, axis=1)
    assert r.max() <= 3.0
    # uniform in volume: (r / R)^3 is Uniform[0, 1]; directions are isotropic
    u = (r / 3.0) ** 3
    assert abs(u.mean() - 0.5) < 0.01 and abs(np.median(r) - 3.0 * 0.5 ** (1 / 3)) < 0.03
    np.testing.assert_allclose((pts / r[:, None]).mean(axis=0), 0.0, atol=0.02)


def test_docstring_examples():
    import doctest

    from spatialscout_gym.core import references, scoring, table
    for module in (scoring, references, table):
        result = doctest.testmod(module)
        assert result.attempted > 0 and result.failed == 0, module.__name__
