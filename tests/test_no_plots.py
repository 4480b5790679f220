"""Without the ``plots`` extra (matplotlib made unimportable in a subprocess), ``report --no-figures``
and ``leaderboard`` still write their tables (JSON, Markdown, the HTML page), leave the PNG plots
out and say so in one line naming the extra."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from fakes import FakeRenderer, small_scene

ROOT = Path(__file__).resolve().parents[1]
WITHOUT_MATPLOTLIB = ("import sys; sys.modules['matplotlib'] = None\n"
                      "from spatialscout_gym.cli.main import main\n"
                      "sys.exit(main(sys.argv[1:]))\n")


@pytest.fixture(scope="module")
def evaluation(tmp_path_factory) -> Path:
    """Two fake scenes, one seed each, of a privileged reference agent (no model, no SAPIEN)."""
    from spatialscout_gym.baselines.registry import make_agent
    from spatialscout_gym.eval.running.runner import run_episode
    tmp = tmp_path_factory.mktemp("noplots") / "oracle"
    for k in range(2):
        spec = small_scene(32, 32, yaw_deg=20.0 + 30 * k, scene_id=f"fake-{k}")
        run_episode(make_agent("oracle-explorer"), spec, tmp / f"fake-{k}" / "seed_0", image_budget=3,
                    resolution=32, renderer=FakeRenderer(spec))
    return tmp


def _without_matplotlib(*argv: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", WITHOUT_MATPLOTLIB, *argv], capture_output=True, text=True,
                          timeout=600, cwd=ROOT)


def test_report_without_the_plots_extra_writes_tables(evaluation):
    run = _without_matplotlib("report", str(evaluation), "--no-figures")
    assert run.returncode == 0, run.stderr[-2000:]
    note = [line for line in run.stderr.splitlines() if "'plots' extra" in line]
    assert len(note) == 1 and "[plots]" in note[0]
    assert json.loads((evaluation / "report.json").read_text())["episodes"]["completed"] == 2
    assert "|" in (evaluation / "report.md").read_text() and (evaluation / "index.html").is_file()
    assert (evaluation / "replay" / "replay.json").is_file() and not list((evaluation / "replay").glob("*.png"))


def test_leaderboard_without_the_plots_extra_writes_tables(evaluation, tmp_path):
    site = tmp_path / "site"
    run = _without_matplotlib("leaderboard", str(evaluation), "--out", str(site), "--no-progress")
    assert run.returncode == 0, run.stderr[-2000:]
    assert any("'plots' extra" in line for line in run.stderr.splitlines())
    board = json.loads((site / "leaderboard.json").read_text())
    assert list(board["rows"]) == ["oracle-explorer"] and board["plots"] == {}
    assert "oracle-explorer" in (site / "leaderboard.md").read_text()
    assert "oracle-explorer" in (site / "index.html").read_text() and not (site / "plots").exists()
