"""Bootstrap intervals, paired differences and rank intervals (``eval/analysis/stats.py``) against small
cases worked out by hand, and against the scorer's own aggregate."""

from __future__ import annotations

import numpy as np
import pytest

from spatialscout_gym.core.scoring import SceneScore, aggregate
from spatialscout_gym.eval.analysis.stats import (FIGURES, bootstrap_intervals, paired_comparison, pairwise_separation,
                                                  rank_intervals, separated)


def score(scene: str, ious, submitted: int | None = None) -> SceneScore:
    """A scored scene with the given per-target IoUs (a target is submitted when its IoU > 0)."""
    iou = np.asarray(ious, float)
    return SceneScore(scene, int((iou > 0).sum()) if submitted is None else submitted, iou,
                      np.where(iou > 0, 0.1, np.nan), ["x" if v > 0 else None for v in iou],
                      np.stack([iou > 0, iou > 0.5, iou > 0.9]))


def test_two_scenes_zero_and_one_give_the_whole_range():
    # resampling two scenes {0, 1}: means 0, 0.5, 1 with probabilities 1/4, 1/2, 1/4, so the
    # 2.5% and 97.5% percentiles are 0 and 1.
    iv = bootstrap_intervals({("s0", 0): score("s0", [0.0]), ("s1", 0): score("s1", [1.0])}, n_resamples=2000)
    f = iv["figures"]["object_micro.all.mean_iou"]
    assert (f["estimate"], f["low"], f["high"]) == (0.5, 0.0, 1.0)
    assert iv["scenes"] == 2 and iv["n_resamples"] == 2000


def test_estimates_equal_the_scorers_aggregate_and_seeds_stay_with_their_scene():
    rng = np.random.default_rng(3)
    cells = {(f"s{i}", k): score(f"s{i}/seed_{k}", rng.uniform(0, 1, 3) * (rng.uniform(size=3) > 0.3))
             for i in range(5) for k in range(2)}
    iv = bootstrap_intervals(cells, n_resamples=500)
    agg = aggregate(list(cells.values()))
    for name in FIGURES:
        family, *path = name.split(".")
        want = agg[family]
        for p in path:
            want = want[p]
        assert iv["figures"][name]["estimate"] == pytest.approx(want, abs=1e-12), name
        assert iv["figures"][name]["low"] <= want + 1e-12 <= iv["figures"][name]["high"] + 2e-12
    assert iv["scenes"] == 5            # ten cells, five scenes: the seeds are resampled with their scene
    again = bootstrap_intervals(cells, n_resamples=500)
    assert again == iv                  # fixed seed


def test_one_scene_has_no_interval():
    iv = bootstrap_intervals({("s0", 0): score("s0", [0.5]), ("s0", 1): score("s0", [0.7])})
    f = iv["figures"]["object_micro.all.mean_iou"]
    assert f["estimate"] == pytest.approx(0.6) and f["low"] is None and f["high"] is None


def test_paired_permutation_p_value_by_hand():
    # B - A per scene: +0.1, +0.2, +0.3 (mean +0.2). Exact paired test: 2**3 = 8 sign patterns,
    # of which (+,+,+) and (-,-,-) reach |mean| >= 0.2, so p = 2/8.
    a = {(f"s{i}", 0): score(f"s{i}", [0.0]) for i in range(3)}
    b = {(f"s{i}", 0): score(f"s{i}", [0.1 * (i + 1)]) for i in range(3)}
    b[("s9", 0)] = score("s9", [1.0])   # not shared: left out, and the cells are named
    p = paired_comparison(a, b)
    f = p["figures"]["object_micro.all.mean_iou"]
    assert f["difference"] == pytest.approx(0.2)
    assert f["p_value"] == pytest.approx(0.25)
    # bootstrap means of {0.1, 0.2, 0.3}: all-0.1 has probability 1/27 > 2.5%, so the bounds are 0.1 and 0.3
    assert (f["low"], f["high"]) == (pytest.approx(0.1), pytest.approx(0.3))
    assert p["cells"] == [["s0", 0], ["s1", 0], ["s2", 0]] and p["scenes"] == 3
    assert not separated(f)             # the interval excludes 0 but p = 0.25


def test_paired_difference_separates_a_clear_gap_over_many_scenes():
    a = {(f"s{i}", 0): score(f"s{i}", [0.2 + 0.01 * i]) for i in range(8)}
    b = {(f"s{i}", 0): score(f"s{i}", [0.5 + 0.01 * i]) for i in range(8)}
    f = paired_comparison(a, b)["figures"]["object_micro.all.mean_iou"]
    assert f["p_value"] == pytest.approx(2 / 2 ** 8) and separated(f)


def test_rank_intervals_overlap_only_when_runs_are_close():
    base = {(f"s{i}", 0): score(f"s{i}", [0.2 + 0.05 * i]) for i in range(6)}
    good = {(f"s{i}", 0): score(f"s{i}", [0.9]) for i in range(6)}
    near = {(f"s{i}", 0): score(f"s{i}", [0.2 + 0.05 * ((i + 3) % 6)]) for i in range(6)}
    ranks = rank_intervals({"good": good, "base": base, "near": near}, n_resamples=2000)
    assert ranks["good"] == {"rank": 1, "low": 1.0, "high": 1.0}
    assert ranks["base"]["low"] == 2.0 and ranks["near"]["low"] == 2.0   # equal means: both may be 2nd
    assert ranks["base"]["high"] == 3.0 and ranks["near"]["high"] == 3.0


def test_rank_intervals_and_separation_follow_one_rule():
    """B beats A on each of 3 scenes: every scene bootstrap put B first (a rank interval [1, 1]) while
    3 scenes cannot separate two runs (p = 0.25): the ranks come from the paired rule, [1, 2] both."""
    a = {(f"s{i}", 0): score(f"s{i}", [0.1 * i]) for i in range(3)}
    b = {(f"s{i}", 0): score(f"s{i}", [0.1 * i + 0.5]) for i in range(3)}
    pairs = pairwise_separation({"a": a, "b": b})
    assert pairs[("a", "b")]["p_value"] == pytest.approx(0.25) and not pairs[("a", "b")]["separated"]
    assert pairs[("b", "a")]["difference"] == pytest.approx(-0.5) and pairs[("b", "a")]["cells"] == 3
    ranks = rank_intervals({"a": a, "b": b}, pairs=pairs)
    assert ranks == {"a": {"rank": 2, "low": 1.0, "high": 2.0}, "b": {"rank": 1, "low": 1.0, "high": 2.0}}
    # eight scenes: separated (p = 2/256), and each rank is one value
    a8 = {(f"s{i}", 0): score(f"s{i}", [0.05 * i]) for i in range(8)}
    b8 = {(f"s{i}", 0): score(f"s{i}", [0.05 * i + 0.5]) for i in range(8)}
    assert pairwise_separation({"a": a8, "b": b8})[("a", "b")]["separated"]
    assert rank_intervals({"a": a8, "b": b8}) == {"a": {"rank": 2, "low": 2.0, "high": 2.0},
                                                  "b": {"rank": 1, "low": 1.0, "high": 1.0}}


def test_the_paired_interval_resamples_scenes_and_seeds_within_them():
    # B - A is +0.2 on every cell of s0 and s1 but s2's seeds disagree (+0.0 and +0.4): seeds
    # resampled within a drawn scene move the interval below +0.2 and above it
    a = {(f"s{i}", k): score(f"s{i}", [0.1]) for i in range(3) for k in range(2)}
    b = {(f"s{i}", k): score(f"s{i}", [0.3]) for i in range(2) for k in range(2)}
    b[("s2", 0)], b[("s2", 1)] = score("s2", [0.1]), score("s2", [0.5])
    f = paired_comparison(a, b, n_resamples=2000)["figures"]["object_micro.all.mean_iou"]
    assert f["difference"] == pytest.approx(0.2)
    assert f["low"] < 0.2 - 0.02 and f["high"] > 0.2 + 0.02


def test_variance_components_and_scenes_needed_by_hand(tmp_path):
    from spatialscout_gym.eval.analysis.stats import scenes_needed, variance_components
    cells = {("A", 0): score("A", [0.2]), ("A", 1): score("A", [0.4]),
             ("B", 0): score("B", [0.6]), ("B", 1): score("B", [0.8])}
    comp = variance_components(cells)
    # within scenes: (0.1^2 + 0.1^2) twice over 2 degrees of freedom = 0.02; scene means 0.3, 0.7:
    # variance 0.08, less 0.02 / 2 seeds = 0.07
    assert comp["seed_var"] == pytest.approx(0.02) and comp["scene_var"] == pytest.approx(0.07)
    # 10 points on 2 seeds: (1.959964 + 0.841621)^2 * 2 * (0.07 + 0.01) / 0.1^2 = 125.57 -> 126
    assert scenes_needed(comp, 10.0, seeds=2) == 126
    assert scenes_needed(comp, 10.0, seeds=1) == 142      # 7.84888 * 2 * 0.09 / 0.01 = 141.28
