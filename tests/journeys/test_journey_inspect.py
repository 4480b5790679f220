"""Journey: the same scenes through the Inspect task and through ``spatialscout evaluate``, then one
leaderboard and one comparison over both (docs/inspect.md "Where things go", README "Run it in
Inspect" and "Check and compare results").

    inspect eval spatialscout_gym/spatialscout --model openai-api/local/... -T scenes=... -T out=runs/inspect
    spatialscout evaluate --agent openai:MODEL --base-url ... --scenes ... --out runs/model
    spatialscout leaderboard runs/inspect runs/model --out site
    spatialscout compare runs/inspect runs/model

One scripted model on 127.0.0.1 answers both harnesses (the runs are shared with
tests/test_inspect_task.py, made once per session); the leaderboard and the comparison take the
two runs with no ``--force``, verify them, and show what the user reads: a row per harness, both
verified, the same scores, a paired difference of zero on each scene."""

from __future__ import annotations

import json
import re

import pytest

from inspect_and_evaluate_runs import SCENES, inspect_and_evaluate
from spatialscout_gym.cli.main import main

pytestmark = [pytest.mark.render, pytest.mark.slow, pytest.mark.xdist_group("inspect")]   # the shared runs: one worker


def test_inspect_and_evaluate_runs_share_a_leaderboard_and_compare(tmp_path_factory, tmp_path, capsys):
    runs = inspect_and_evaluate(tmp_path_factory)
    capsys.readouterr()

    # the leaderboard: both runs, no --force, each verified by re-execution
    site = tmp_path / "site"
    assert main(["leaderboard", str(runs.inspect_out), str(runs.evaluate_out), "--out", str(site),
                 "--no-progress"]) == 0
    printed = capsys.readouterr().out
    board = json.loads((site / "leaderboard.json").read_text())
    rows = board["rows"]
    assert len(rows) == 2, list(rows)
    by_harness = {r["harness"].split()[0]: r for r in rows.values()}
    assert set(by_harness) == {"inspect_ai", "spatialscout"}
    for row in rows.values():
        assert row["verified"] == "verified" and (row["completed"], row["failed"]) == (2, 0)
    # the same tool calls in both harnesses: the same scores, shown as equal in the terminal
    a, b = by_harness["inspect_ai"], by_harness["spatialscout"]
    assert a["object_micro"]["all"]["mean_iou"] == b["object_micro"]["all"]["mean_iou"] > 0
    lines = [ln for ln in printed.splitlines() if ln.rstrip().endswith("verified")]
    assert len(lines) == 2, printed
    shown = {re.search(r"(\d+\.\d\d)%", ln).group(1) for ln in lines}
    assert shown == {f"{100 * a['object_micro']['all']['mean_iou']:.2f}"}, printed
    markdown = (site / "leaderboard.md").read_text()
    assert "inspect_ai " in markdown and "spatialscout" in markdown and "&#x27;" not in markdown

    # the comparison: paired scene by scene, no --force, a difference of zero on each scene
    assert main(["compare", str(runs.inspect_out), str(runs.evaluate_out)]) == 0
    text = capsys.readouterr().out
    assert len(re.findall(r"^## Paired: ", text, re.M)) == 1, text
    for scene in SCENES:
        name = scene.replace(":", "_")
        row = [ln for ln in text.splitlines() if ln.startswith(f"| {scene} |") or ln.startswith(f"| {name} |")]
        assert row and row[0].rstrip().endswith("| +0.00 |"), (scene, text)
