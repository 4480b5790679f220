"""``spatialscout score``: table, --json schema, options and one-line errors."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from scoring_cases import IDENTITY, exact_map, make_gt, mixed_scene, write_scene
from spatialscout_gym.cli.main import main

VIEW_KEYS = {"mean_iou", "gt_0", "gt_50", "gt_90"}
M_KEYS = {"num_targets", "num_submitted", "coverage", "all", "submitted", "center_error_m",
          "full_scene_loss_m"}


def run_json(capsys, *args) -> dict:
    assert main(["score", *map(str, args), "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def check_m(m: dict) -> None:
    assert set(m) == M_KEYS
    assert set(m["all"]) == VIEW_KEYS and set(m["submitted"]) == VIEW_KEYS
    assert set(m["center_error_m"]) == {"mean", "median", "rmse"}
    for view in ("all", "submitted"):
        assert all(0.0 <= m[view][k] <= 1.0 for k in VIEW_KEYS)
    assert 0.0 <= m["coverage"] <= 1.0
    assert isinstance(m["num_targets"], int) and isinstance(m["num_submitted"], int)


@pytest.fixture
def two_scenes(tmp_path: Path) -> Path:
    a = mixed_scene("scene_a")
    b = make_gt([(f"t{i}", "T", [1.0 + i, 0.5, 0.0], [0.3, 0.3, 0.3]) for i in range(4)], IDENTITY,
                "scene_b")
    write_scene(tmp_path / "root" / "a", a, exact_map(a))
    write_scene(tmp_path / "root" / "b", b, {"t0": [1.0, 0.5, 0.0], "t1": [2.1, 0.5, 0.0]})
    return tmp_path / "root"


def test_json_schema_and_values(capsys, two_scenes):
    out = run_json(capsys, two_scenes)
    assert set(out) == {"object_micro", "scene_macro", "scenes", "scorer"}
    assert set(out["scenes"]) == {"scene_a", "scene_b"} == set(out["scorer"])
    for sid, rec in out["scorer"].items():   # what the scorer saves (paper Appendix B.2)
        m = out["scenes"][sid]
        assert rec["metric_version"] and rec["min_side_m"] == 0.01
        assert (rec["M"], rec["N"]) == (m["num_submitted"], m["num_targets"])
        assert rec["Q"] / rec["N"] == pytest.approx(m["all"]["mean_iou"])
        assert rec["H"]["gt_50"] / rec["N"] == pytest.approx(m["all"]["gt_50"])
    for m in [out["object_micro"], out["scene_macro"], *out["scenes"].values()]:
        check_m(m)
    a, b = out["scenes"]["scene_a"], out["scenes"]["scene_b"]
    assert a["all"]["mean_iou"] == 1.0 and a["num_targets"] == 8
    assert b["coverage"] == 0.5 and b["num_submitted"] == 2
    assert b["submitted"]["mean_iou"] == pytest.approx((1.0 + (0.3 - 0.1) / (0.3 + 0.1)) / 2)
    micro = out["object_micro"]
    assert micro["num_targets"] == 12 and micro["coverage"] == pytest.approx(10 / 12)
    assert out["scene_macro"]["coverage"] == pytest.approx((1.0 + 0.5) / 2)


def test_table_output(capsys, two_scenes):
    assert main(["score", str(two_scenes / "a")]) == 0
    text = capsys.readouterr().out
    lines = text.splitlines()
    assert "compat=paper" in lines[0]
    rows = {line.split()[0]: line for line in lines[3:]}
    assert set(rows) == {"scene_a", "object-micro", "scene-macro"}
    assert rows["object-micro"].count("100.00") == 9          # coverage and the 8 IoU columns


def test_scene_directory_and_parent_give_the_same_scene(capsys, two_scenes):
    whole = run_json(capsys, two_scenes)
    one = run_json(capsys, two_scenes / "b")
    assert one["scenes"]["scene_b"] == whole["scenes"]["scene_b"]
    both = run_json(capsys, two_scenes / "a", two_scenes / "b", two_scenes)   # repeated paths count once
    assert both["object_micro"] == whole["object_micro"]


def test_compat_release_and_lambda(capsys, tmp_path):
    gt = mixed_scene("swap")
    swapped = {}
    for members in gt.group_members:
        ids = [gt.ids[i] for i in members]
        swapped.update({ids[(k + 1) % len(ids)]: gt.centers_task[i].tolist() for k, i in enumerate(members)})
    write_scene(tmp_path / "s", gt, swapped)
    paper = run_json(capsys, tmp_path / "s")["object_micro"]
    release = run_json(capsys, tmp_path / "s", "--compat", "release")["object_micro"]
    assert paper["all"]["mean_iou"] == 1.0 and release["all"]["mean_iou"] < 0.8
    write_scene(tmp_path / "e", make_gt([("x", "X", [1, 0, 0], [0.1] * 3)], scene_id="e"), {})
    assert run_json(capsys, tmp_path / "e", "--lambda", "2")["object_micro"]["full_scene_loss_m"] == 2.0


def test_reference_policies_need_no_predictions(capsys, tmp_path):
    gt = mixed_scene("ref")
    write_scene(tmp_path / "r", gt, None)
    origin = run_json(capsys, tmp_path / "r", "--reference", "origin")["scene_macro"]
    assert origin["coverage"] == 1.0
    assert origin["full_scene_loss_m"] == pytest.approx(np.linalg.norm(gt.centers_task, axis=1).mean())
    b1 = run_json(capsys, tmp_path / "r", "--reference", "uniform-ball", "--seed", "3")
    b2 = run_json(capsys, tmp_path / "r", "--reference", "uniform-ball", "--seed", "3")
    b3 = run_json(capsys, tmp_path / "r", "--reference", "uniform-ball", "--seed", "4")
    assert b1 == b2 and b1 != b3


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


@pytest.mark.parametrize("case,problem", [
    ("missing_predictions", "file not found"),
    ("malformed", "malformed JSON"),
    ("unknown_id", "unknown target id 'ghost'"),
    ("nan", "non-finite number NaN"),
    ("overflow", "not finite"),
    ("short_vector", "three finite numbers"),
    ("no_positions_key", "positions"),
    ("bad_ground_truth", "targets[0]"),
])
def test_errors_are_one_line_naming_the_file(capsys, tmp_path, case, problem):
    gt = mixed_scene("err")
    d = write_scene(tmp_path / "scene", gt, None)
    pred = d / "predictions.json"
    bad_file = pred
    if case == "malformed":
        write(pred, '{"positions": {"lamp_0": [1, 2, 3],}}')
    elif case == "unknown_id":
        write(pred, json.dumps({"positions": {"ghost": [0, 0, 0]}}))
    elif case == "nan":
        write(pred, '{"positions": {"lamp_0": [NaN, 0, 0]}}')
    elif case == "overflow":
        write(pred, '{"positions": {"lamp_0": [1e999, 0, 0]}}')
    elif case == "short_vector":
        write(pred, json.dumps({"positions": {"lamp_0": [0, 0]}}))
    elif case == "no_positions_key":
        write(pred, json.dumps({"lamp_0": [0, 0, 0]}))
    elif case == "bad_ground_truth":
        bad = gt.to_dict()
        del bad["targets"][0]["box_min"]
        bad_file = write(d / "ground_truth.json", json.dumps(bad))
    assert main(["score", str(d)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    err = captured.err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err
    assert err.startswith("spatialscout: error: ")
    assert str(bad_file) in err and problem in err


def test_errors_for_paths_and_options(capsys, tmp_path):
    assert main(["score", str(tmp_path / "nowhere")]) == 2
    assert str(tmp_path / "nowhere") in capsys.readouterr().err
    (tmp_path / "empty").mkdir()
    assert main(["score", str(tmp_path / "empty")]) == 2
    assert "no ground_truth.json" in capsys.readouterr().err
    gt = mixed_scene("same_id")
    write_scene(tmp_path / "dup" / "one", gt, {})
    write_scene(tmp_path / "dup" / "two", gt, {})
    assert main(["score", str(tmp_path / "dup")]) == 0      # one scene twice (seeds): a row each
    assert "2 scene(s)" in capsys.readouterr().out
    other = json.loads((tmp_path / "dup" / "two" / "ground_truth.json").read_text())
    other["radius_m"] += 1.0                                   # another scene under the same id
    (tmp_path / "dup" / "two" / "ground_truth.json").write_text(json.dumps(other))
    assert main(["score", str(tmp_path / "dup")]) == 2
    assert "'same_id' names another scene" in capsys.readouterr().err
    assert main(["score", str(tmp_path / "dup" / "one"), "--lambda", "-1"]) == 2
    assert "--lambda" in capsys.readouterr().err


def spatialscout_script() -> str:
    found = shutil.which("spatialscout") or str(Path(sys.executable).parent / "spatialscout")
    assert os.path.exists(found), "the spatialscout console script is not installed (pip install -e .)"
    return found


def test_console_script_subprocess(tmp_path, two_scenes):
    ok = subprocess.run([spatialscout_script(), "score", str(two_scenes), "--json"],
                        capture_output=True, text=True, timeout=120)
    assert ok.returncode == 0, ok.stderr
    assert json.loads(ok.stdout)["scenes"]["scene_a"]["all"]["mean_iou"] == 1.0
    write(two_scenes / "b" / "predictions.json", "{")
    bad = subprocess.run([spatialscout_script(), "score", str(two_scenes / "b")],
                         capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2 and bad.stdout == ""
    assert bad.stderr.count("\n") == 1 and "predictions.json: malformed JSON" in bad.stderr


def test_hidden_temporary_run_directories_are_skipped(capsys, tmp_path):
    """A killed run leaves ``.<run>.XXXX.tmp`` beside the finished runs (eval.running.runner.write_run);
    scoring the parent must count the finished run once, not refuse a duplicate scene id."""
    gt = mixed_scene("kept")
    write_scene(tmp_path / "runs" / "kept", gt, exact_map(gt))
    write_scene(tmp_path / "runs" / ".kept.k2j3.tmp", gt, {})            # half-written leftover
    write_scene(tmp_path / "runs" / ".other.x1.tmp", mixed_scene("stale"), {})
    out = run_json(capsys, tmp_path / "runs")
    assert set(out["scenes"]) == {"kept"} and out["object_micro"]["all"]["mean_iou"] == 1.0
    # a hidden directory named explicitly is still scored (the user asked for it)
    assert set(run_json(capsys, tmp_path / "runs" / ".other.x1.tmp")["scenes"]) == {"stale"}
