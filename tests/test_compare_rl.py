"""The figures an RL paper reports (``eval/analysis/stats.py``): the interquartile mean against
``scipy.stats.trim_mean``, its two-stage bootstrap (scenes, then seeds within them, checked
against an independent numpy resampling), paired IQM differences and per-scene differences; and
``compare`` over three evaluations: every pair, or every run against ``--baseline``, with figures
recomputed from each run's ``result.json``."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
from scipy.stats import trim_mean

from fakes import FakeRenderer, small_scene
from test_stats import score
from spatialscout_gym.cli.main import main
from spatialscout_gym.eval.running.evaluate import EvalSettings, evaluate
from spatialscout_gym.eval.pages.report import compare_reports
from spatialscout_gym.eval.analysis.stats import (CONFIDENCE, hierarchical_bootstrap, iqm, iqm_summary, paired_iqm,
                                                  per_scene_differences, stratified_bootstrap)


def cells_of(matrix: np.ndarray) -> dict:
    """``{(scene, seed): SceneScore}`` with one target per episode scoring ``matrix[scene, seed]``."""
    return {(f"s{i}", k): score(f"s{i}", [v]) for i, row in enumerate(matrix) for k, v in enumerate(row)}


def test_iqm_is_scipys_trimmed_mean_and_the_middle_half_by_hand():
    x = np.array([0.9, 0.0, 0.2, 0.4, 1.0, 0.3, 0.6, 0.5])
    assert iqm(x) == pytest.approx(np.mean([0.3, 0.4, 0.5, 0.6]))          # the middle 4 of 8
    rng = np.random.default_rng(7)
    y = rng.random((5, 13))
    assert np.allclose(iqm(y, axis=-1), trim_mean(y, 0.25, axis=-1))
    s = iqm_summary(cells_of(y))
    assert s["iqm"] == pytest.approx(trim_mean(y.ravel(), 0.25)) and s["episodes"] == 65 and s["scenes"] == 5


def test_the_iqm_interval_resamples_scenes_then_seeds_within_them():
    rng = np.random.default_rng(11)
    few = rng.random((6, 3))
    s = iqm_summary(cells_of(few), n_resamples=2000)
    assert s["low"] < s["iqm"] < s["high"]
    flat = few.ravel()
    within = stratified_bootstrap([3] * 6, lambda idx: iqm(flat[idx], axis=-1), 2000)
    assert s["high"] - s["low"] > within[1] - within[0]      # the scenes' own variation is in it
    # one seed per scene: the scenes are still resampled, so there is an interval
    one = iqm_summary(cells_of(few[:, :1]))
    assert one["iqm"] == pytest.approx(trim_mean(few[:, 0], 0.25)) and one["low"] < one["iqm"] < one["high"]
    assert iqm_summary(cells_of(few[:1]))["low"] is None      # one scene: nothing to resample at the unit


def test_a_deterministic_agent_gets_the_width_its_scenes_give():
    # every scene's seeds agree (a deterministic agent): resampling seeds alone gave a zero-width
    # interval; resampling the scenes gives the spread between them
    const = np.repeat(np.array([[0.1], [0.4], [0.7], [0.9]]), 3, axis=1)
    s = iqm_summary(cells_of(const), n_resamples=999)
    assert s["high"] - s["low"] > 0.2
    # the interval agrees with an independent two-stage resampling (numpy Generator, trim_mean)
    rng = np.random.default_rng(3)
    data = [rng.random(k) for k in (2, 5, 1, 4)]                 # unequal seeds; one scene of one
    flat = np.concatenate(data)
    low, high = hierarchical_bootstrap([len(d) for d in data], lambda idx: iqm(flat[idx], axis=-1), 4000)
    gen = np.random.default_rng(0)
    draws = [trim_mean(np.concatenate([data[k][gen.integers(0, len(data[k]), len(data[k]))]
                                       for k in gen.integers(0, len(data), len(data))]), 0.25) for _ in range(4000)]
    ref_low, ref_high = np.quantile(draws, [(1 - CONFIDENCE) / 2, (1 + CONFIDENCE) / 2])
    assert low == pytest.approx(ref_low, abs=0.03) and high == pytest.approx(ref_high, abs=0.03)


def test_paired_iqm_resamples_the_same_cells_of_both_runs():
    rng = np.random.default_rng(5)
    a = rng.random((5, 4))
    q = paired_iqm(cells_of(a), cells_of(a + 0.1), n_resamples=999)
    # B is A shifted by 0.1 in every cell: every paired resample differs by exactly 0.1
    assert q["difference"] == pytest.approx(0.1) and q["low"] == pytest.approx(0.1) and q["high"] == pytest.approx(0.1)
    b = rng.random((5, 4))
    q = paired_iqm(cells_of(a), cells_of(b), n_resamples=999)
    assert q["difference"] == pytest.approx(trim_mean(b.ravel(), 0.25) - trim_mean(a.ravel(), 0.25))
    assert q["low"] <= q["difference"] <= q["high"] and (q["cells"], q["scenes"]) == (20, 5)


def test_per_scene_differences_by_hand():
    a = {("k", 0): score("k", [0.2, 0.4]), ("k", 1): score("k", [0.6, 0.0]), ("l", 0): score("l", [1.0])}
    b = {("k", 0): score("k", [0.5, 0.5]), ("k", 1): score("k", [0.9, 0.9]), ("m", 0): score("m", [1.0])}
    assert per_scene_differences(a, b) == [
        {"scene": "k", "seeds": 2, "a": pytest.approx(0.3), "b": pytest.approx(0.7), "difference": pytest.approx(0.4)}]


@pytest.fixture(scope="module")
def three_runs(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("rl")
    scenes = []
    for k in range(3):
        p = tmp / f"fake-{k}.json"
        p.write_text(small_scene(32, 32, yaw_deg=20.0 + 25 * k, scene_id=f"fake-{k}").to_json())
        scenes.append(str(p))
    for agent in ("origin", "uniform-ball", "oracle-explorer"):
        evaluate(tmp / agent, EvalSettings(agent, 5, 20, 32), scenes, seeds=2, progress=False,
                 renderer_factory=FakeRenderer)
    return tmp


def _episode_iou(d) -> dict[tuple[str, int], float]:
    out = {}
    for p in d.glob("*/seed_*/result.json"):
        r = json.loads(p.read_text())
        out[(r["scene_id"], r["seed"])] = r["all"]["mean_iou"]
    return out


def test_compare_pairs_every_run_and_reports_iqm_and_per_scene_differences(three_runs, capsys):
    dirs = [three_runs / a for a in ("origin", "uniform-ball", "oracle-explorer")]
    text, reports = compare_reports(dirs)
    headers = re.findall(r"^## Paired: (\S+) - (\S+) on", text, re.M)
    assert headers == [("uniform-ball", "origin"), ("oracle-explorer", "origin"), ("oracle-explorer", "uniform-ball")]
    ious = {d.name: _episode_iou(d) for d in dirs}
    for name in ious:   # each run's IQM is scipy's trimmed mean of its episodes, from result.json
        assert reports[name]["iqm"]["iqm"] == pytest.approx(trim_mean(list(ious[name].values()), 0.25))
        assert reports[name]["iqm"]["low"] <= reports[name]["iqm"]["iqm"] <= reports[name]["iqm"]["high"]
        assert re.search(rf"^\| {re.escape(name)} \| 6 \| 3 \| {100 * reports[name]['iqm']['iqm']:.2f} \[", text, re.M)
    pair = reports["oracle-explorer"]["pairs"]["uniform-ball"]
    for row in pair["per_scene"]:   # scene, mean A, mean B, difference from the run directories
        ma = np.mean([v for (s, _), v in ious["uniform-ball"].items() if s == row["scene"]])
        mb = np.mean([v for (s, _), v in ious["oracle-explorer"].items() if s == row["scene"]])
        assert (row["a"], row["b"], row["difference"]) == pytest.approx((ma, mb, mb - ma))
        assert f"| {row['scene']} | 2 | {100 * ma:.2f} | {100 * mb:.2f} | {100 * (mb - ma):+.2f} |" in text
    assert [r["scene"] for r in pair["per_scene"]] == ["fake-0", "fake-1", "fake-2"]
    assert pair["iqm"]["difference"] == pytest.approx(reports["oracle-explorer"]["iqm"]["iqm"]
                                                      - reports["uniform-ball"]["iqm"]["iqm"])
    # --baseline: every other run against it, the baseline as A
    assert main(["compare", str(dirs[0]), str(dirs[2]), "--baseline", str(dirs[1])]) == 0
    out = capsys.readouterr().out
    assert re.findall(r"^## Paired: (\S+) - (\S+) on", out, re.M) == [("origin", "uniform-ball"),
                                                                     ("oracle-explorer", "uniform-ball")]
