"""Journey: an MCP client plays one episode, then the user checks it and puts it on a leaderboard
(README "Any MCP client", "Check and compare results", "Look at runs").

    spatialscout mcp --scene Kitchen_01 --out runs/mcp      # driven by an MCP client over stdio
    spatialscout verify runs/mcp
    spatialscout leaderboard runs/mcp --out site

The episode is the real ``mcp`` client against ``spatialscout mcp`` as a subprocess (shared with
tests/test_mcp.py, made once per session). ``verify`` re-executes it and says so; the leaderboard
verifies it too and shows its score, the one ``result.json`` holds."""

from __future__ import annotations

import json
import re

import pytest

pytest.importorskip("mcp", reason="needs the vlm extra (the mcp client)")

from mcp_client_episode import stdio_episode
from spatialscout_gym.cli.main import main

pytestmark = [pytest.mark.render, pytest.mark.slow, pytest.mark.xdist_group("mcp")]   # the shared episode: one worker


def test_an_mcp_episode_verifies_and_takes_its_place_on_the_leaderboard(tmp_path_factory, tmp_path, capsys):
    run = stdio_episode(tmp_path_factory).out
    result = json.loads((run / "result.json").read_text())
    assert result["status"] == "ok" and result["end_reason"] == "finish_mapping" and result["all"]["mean_iou"] > 0
    capsys.readouterr()

    # verify: every recorded tool call re-executed, every score recomputed
    assert main(["verify", str(run)]) == 0
    said = capsys.readouterr().out
    assert re.search(r"\bverified\b", said) and "FAILED" not in said and "mismatch" not in said.lower(), said

    # the leaderboard over that one run: exit 0 with no --force, one row, verified, its score
    site = tmp_path / "site"
    assert main(["leaderboard", str(run), "--out", str(site), "--no-progress"]) == 0
    printed = capsys.readouterr().out
    board = json.loads((site / "leaderboard.json").read_text())
    (row,) = board["rows"].values()
    assert row["verified"] == "verified" and (row["completed"], row["failed"]) == (1, 0)
    assert row["agent"] == result["agent"]
    assert row["object_micro"]["all"]["mean_iou"] == pytest.approx(result["all"]["mean_iou"], abs=1e-12)
    (line,) = [ln for ln in printed.splitlines() if ln.rstrip().endswith("verified")]
    assert f"{100 * result['all']['mean_iou']:.2f}%" in line and re.match(r"\s*1\s", line), printed
    assert (site / "index.html").is_file() and "verified" in (site / "leaderboard.md").read_text()
