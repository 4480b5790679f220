"""``spatialscout score`` loads only the scorer: the CLI registers just the command it is given, so
scoring imports neither the scene generator nor the episode; ``--help`` still lists every command."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest

from fakes import small_scene
from spatialscout_gym.cli.main import COMMANDS, build_parser, named_command
from spatialscout_gym.core.scoring import GroundTruth

HEAVY = ("spatialscout_gym.scenes.procedural", "spatialscout_gym.scenes.catalog",
         "spatialscout_gym.scenes.layout", "spatialscout_gym.episode", "spatialscout_gym.baselines",
         "spatialscout_gym.render", "spatialscout_gym.envs", "gymnasium", "scipy.optimize")


def test_score_path_does_not_import_the_scene_generator(tmp_path):
    spec = small_scene()
    gt = GroundTruth.from_spec(spec)
    d = tmp_path / "s"
    d.mkdir()
    (d / "ground_truth.json").write_text(json.dumps(spec.ground_truth_dict()))
    pos = {tid: (gt.centers_task[i] + 0.02).tolist() for i, tid in enumerate(gt.ids)}
    (d / "predictions.json").write_text(json.dumps({"positions": pos}))
    code = ("import sys; from spatialscout_gym.cli.main import main; rc = main(['score', '--json', sys.argv[1]]); "
            f"print('LOADED', sorted(m for m in sys.modules if m.startswith({HEAVY!r})))")
    out = subprocess.run([sys.executable, "-c", code, str(d)], capture_output=True, text=True, check=True).stdout
    assert "LOADED []" in out, out
    assert json.loads(out[:out.rindex("LOADED")])["object_micro"]["num_targets"] == len(gt.ids)


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
