"""Journey: an evaluation whose every episode fails, then its report (README "Evaluate a model":
failed episodes are reported, finished ones kept, and the same command resumes). The model server
refuses every request for a reason that is not the reasoning effort; the user reads the report,
sees why the leaderboard has nothing to rank, fixes the server and reruns the same command.

    spatialscout evaluate --agent openai:MODEL --base-url URL --scenes ... --out runs/down
    spatialscout report runs/down
    spatialscout leaderboard runs/down --out site
    spatialscout evaluate ...   (the same command, the server fixed)

Every command is the real CLI in a subprocess; a scripted OpenAI-compatible server on 127.0.0.1
(real ``openai`` client), SAPIEN at 32 px."""

from __future__ import annotations

import json

import pytest

from journey_model_helpers import capture_then_finish, cli, model_args
from vlm_scripted import ScriptedServer

pytestmark = [pytest.mark.render, pytest.mark.slow]

SCENES = ["Kitchen_01", "procedural:11"]


def test_every_episode_failed_then_report_then_the_fixed_rerun(tmp_path):
    out = tmp_path / "down"
    with ScriptedServer(capture_then_finish, refuse_params={"messages"}) as server:   # HTTP 400 to every call
        failed = cli(*model_args(server.openai_url, out, SCENES))
    assert failed.returncode == 1, failed.stdout + failed.stderr
    assert "2 episodes: 0 already done, 0 run now, 2 failed" in failed.stdout
    assert "no episode completed" in failed.stdout and "Traceback" not in failed.stderr

    # the report of the failures: written by evaluate, and by `report DIR`
    assert json.loads((out / "report.json").read_text())["object_micro"] is None
    reported = cli("report", str(out))
    assert reported.returncode == 0, reported.stdout + reported.stderr
    text = (out / "report.md").read_text()
    assert "No episode completed" in text and "Kitchen_01/seed_0" in text and "procedural_11/seed_0" in text
    assert "Unsupported parameter" in text                        # why, in the service's words
    page = (out / "index.html").read_text()
    assert "No episode completed" in page and "Kitchen_01/seed_0" in page

    # nothing to rank: one line, exit 2
    board = cli("leaderboard", str(out), "--out", str(tmp_path / "site"), "--no-progress")
    assert board.returncode == 2 and "holds no completed episode" in board.stderr
    assert len(board.stderr.strip().splitlines()) == 1

    # the server fixed, the same command resumes: both episodes run now, and the report scores them
    with ScriptedServer(capture_then_finish) as server:
        fixed = cli(*model_args(server.openai_url, out, SCENES))
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr
    assert "2 episodes: 0 already done, 2 run now, 0 failed" in fixed.stdout
    report = json.loads((out / "report.json").read_text())
    assert report["episodes"]["completed"] == 2 and report["episodes"]["failed_attempts"] == 2
