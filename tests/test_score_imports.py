"""``spatialscout score`` loads only the scorer (the subprocess check is in test_score_lazy.py): the
CLI registers just the command it is given, ``--help`` still lists every command, and ground truth
is checked with whole-array operations that accept and refuse exactly what the field loop does."""

from __future__ import annotations

import re

import pytest

from fakes import small_scene
from spatialscout_gym.cli.main import COMMANDS, build_parser, named_command
from spatialscout_gym.core.scoring import GroundTruth


def test_named_command_and_the_full_parser():
    assert named_command(["--debug", "score", "x"]) == "score"
    assert named_command(["train-nbv", "--help"]) == "train_nbv"
    assert named_command(["scores", "x"]) is None and named_command(["--help"]) is None
    help_text = build_parser().format_help()
    assert all(name.replace("_", "-") in help_text for name in COMMANDS)
    only = build_parser("score").format_help()
    assert "score" in only and "leaderboard" not in only


def test_whole_array_target_check_equals_the_field_by_field_loop(monkeypatch):
    import numpy as np

    import spatialscout_gym.core.scoring as scoring
    d = small_scene().ground_truth_dict()
    fast = GroundTruth.from_dict(d)
    monkeypatch.setattr(scoring, "_targets_fast", lambda *a: None)
    slow = GroundTruth.from_dict(d)
    assert fast.ids == slow.ids and fast.to_dict() == slow.to_dict()
    for a, b in zip(fast.targets, slow.targets):
        for f in ("center_task", "box_min", "box_max"):
            np.testing.assert_array_equal(getattr(a, f), getattr(b, f))
    monkeypatch.undo()
    assert scoring._targets_fast(d["targets"], fast.R_world_task, fast.origin) is not None
    # anything off leaves the message to the loop: a bool, a string, a box upside down
    for bad, where in ((True, "targets[1].center"), ("0.5", "targets[1].center")):
        t = [dict(x) for x in d["targets"]]
        t[1]["center"] = [bad, 0.0, 0.0]
        with pytest.raises(ValueError, match=re.escape(where)):
            GroundTruth.from_dict({**d, "targets": t})
    t = [dict(x) for x in d["targets"]]
    t[2]["box_min"], t[2]["box_max"] = t[2]["box_max"], t[2]["box_min"]
    with pytest.raises(ValueError, match=r"targets\[2\].*below box_min"):
        GroundTruth.from_dict({**d, "targets": t})


def test_enumeration_up_to_seven_instances_equals_scipy(monkeypatch):
    """Before scipy.optimize is loaded, groups of up to 7 are assigned by enumeration: exactly
    scipy's assignment whenever it is used (a unique optimum), else scipy's own."""
    import numpy as np
    from scipy.optimize import linear_sum_assignment

    import spatialscout_gym.core.scoring as scoring
    monkeypatch.setattr(scoring, "_ENUMERATE_MAX", scoring._ENUMERATE_MAX_COLD)   # as if not loaded
    rng = np.random.default_rng(3)
    enumerated = 0
    for trial in range(300):
        a, b = rng.integers(1, 8, size=2)
        c = rng.random((a, b))
        if trial % 4 == 0:
            c = np.round(c * 2) / 2                # ties: must fall back to scipy
        for maximize in (False, True):
            enumerated += scoring._unique_by_enumeration(c, maximize) is not None
            r1, c1 = scoring.assign(c, maximize)
            r2, c2 = linear_sum_assignment(c, maximize=maximize)
            np.testing.assert_array_equal(r1, r2)
            np.testing.assert_array_equal(c1, c2)
    assert enumerated > 300
