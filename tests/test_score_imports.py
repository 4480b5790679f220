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
