"""Records written before the typed run record keep working (docs/verify.md): an evaluation recorded
by version 0.3.0 (``tests/data/v1_evaluation``: a scripted model, a reference agent and an NBV agent
on one procedural scene, ``result.json`` without ``schema_version``) loads through the one
migration, verifies, and ranks on a leaderboard beside each other; an edit to one of its scores is
still caught."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from spatialscout_gym.cli.main import main
from spatialscout_gym.core.records import load_run_record

DATA = Path(__file__).parent / "data" / "v1_evaluation"
RUNS = {"model": "openai:scripted", "reference": "oracle-explorer", "nbv": "random-nbv"}


@pytest.fixture()
def v1(tmp_path) -> Path:
    shutil.copytree(DATA, tmp_path / "v1")
    return tmp_path / "v1"


def test_the_fixture_is_a_version_1_record():
    for kind in RUNS:
        raw = json.loads((DATA / kind / "procedural_6" / "seed_0" / "result.json").read_text())
        assert "schema_version" not in raw
        assert load_run_record(DATA / kind / "procedural_6" / "seed_0").schema_version == 1


@pytest.mark.render
def test_an_old_evaluation_verifies_and_ranks(v1, tmp_path, capsys):
    dirs = [str(v1 / kind) for kind in RUNS]
    capsys.readouterr()
    assert main(["verify", *dirs, "--json", "--no-cache", "--no-progress"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["verified"] and all([e["status"] for e in out["dirs"][d]] == ["verified"] for d in dirs), out
    assert main(["leaderboard", *dirs, "--out", str(tmp_path / "lb")]) == 0
    board = json.loads((tmp_path / "lb" / "leaderboard.json").read_text())
    assert sorted(board["rows"]) == sorted(board["order"]) and len(board["order"]) == 3
    assert sorted(r["agent"] for r in board["rows"].values()) == sorted(RUNS.values())
    assert all(r["verified"] == "verified" and r["completed"] == 1 for r in board["rows"].values()), board["rows"]
    assert board["order"][0] == "oracle-explorer"          # 75.00% over random-nbv's 62.50% and the model's 0


@pytest.mark.render
def test_an_edited_old_score_is_caught(v1, capsys):
    p = v1 / "reference" / "procedural_6" / "seed_0" / "result.json"
    r = json.loads(p.read_text())
    r["all_mean_iou"] = 1.0
    p.write_text(json.dumps(r))
    capsys.readouterr()
    assert main(["verify", str(v1 / "reference"), "--no-cache", "--no-progress"]) != 0
    assert "all_mean_iou" in capsys.readouterr().out
