"""``spatialscout score`` imports neither the scene generator, the episode, the renderer nor
scipy.optimize for ordinary maps (small groups are assigned by enumeration when the optimum is unique), and the
results are exactly those of scipy's assignment."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest
from scipy.optimize import linear_sum_assignment

import spatialscout_gym.core.scoring as scoring
from fakes import small_scene
from spatialscout_gym.core.scoring import GroundTruth, assign, score_scene


def _hits(w, rows, cols):
    return {(int(r), int(c)) for r, c in zip(rows, cols) if w[r, c] > 1.0}


def test_assign_matches_scipy_including_ties_and_zero_rows():
    rng = np.random.default_rng(0)
    for trial in range(400):
        a, b = rng.integers(1, 6, size=2)
        c = rng.random((a, b))
        if trial % 3 == 0:
            c = np.round(c * 2) / 2                # many ties
        for maximize in (False, True):
            r1, c1 = assign(c, maximize)
            r2, c2 = linear_sum_assignment(c, maximize=maximize)
            assert c[r1, c1].sum() == pytest.approx(c[r2, c2].sum())
            if np.array_equal(r1, r2) is False or np.array_equal(c1, c2) is False:
                # only a tie may differ, and then assign must have used scipy itself
                raise AssertionError((c, maximize, r1, c1, r2, c2))
        # hit weights with zero rows/columns: the hit pairs equal scipy's on the whole matrix
        iou = np.where(rng.random((a, b)) < 0.5, 0.0, rng.random((a, b)))
        w = scoring._hit_weights(iou, 0.5)
        r3, c3 = scoring._hit_assignment(w)
        r4, c4 = linear_sum_assignment(w, maximize=True)
        assert _hits(w, r3, c3) == _hits(w, r4, c4)


def test_scores_equal_the_scipy_path(monkeypatch):
    spec = small_scene()
    gt = GroundTruth.from_spec(spec)
    rng = np.random.default_rng(1)
    maps = [{tid: (gt.centers_task[i] + rng.normal(0, s, 3)).tolist() for i, tid in enumerate(gt.ids)
             if rng.random() < 0.8} for s in (0.01, 0.05, 0.2, 1.0) for _ in range(10)]
    fast = [score_scene(gt, m).metrics() for m in maps]
    monkeypatch.setattr(scoring, "_ENUMERATE_MAX", 0)          # every assignment through scipy
    slow = [score_scene(gt, m).metrics() for m in maps]
    assert fast == slow


def test_score_command_loads_only_the_scorer(tmp_path):
    spec = small_scene()
    gt = GroundTruth.from_spec(spec)
    d = tmp_path / "s"
    d.mkdir()
    (d / "ground_truth.json").write_text(json.dumps(spec.ground_truth_dict()))
    pos = {tid: (gt.centers_task[i] + 0.02).tolist() for i, tid in enumerate(gt.ids)}
    (d / "predictions.json").write_text(json.dumps({"positions": pos}))
    code = ("import sys; from spatialscout_gym.cli.main import main; rc = main(['score', sys.argv[1]]); "
            "print('HEAVY', [m for m in ('scipy.optimize', 'matplotlib', 'torch', "
            "'spatialscout_gym.scenes.procedural', 'spatialscout_gym.scenes.catalog', 'spatialscout_gym.episode', "
            "'spatialscout_gym.render', 'spatialscout_gym.baselines') if m in sys.modules])")
    out = subprocess.run([sys.executable, "-c", code, str(d)], capture_output=True, text=True, check=True).stdout
    assert "HEAVY []" in out and "object-micro" in out, out

