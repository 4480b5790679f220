"""``spatialscout leaderboard --watch`` over evaluations still being written (docs/models.md,
"Progress"): finished and failed episodes, spend so far (the shared ledger), waits and state, with a
half-written temp directory and an unfinished episode present; it stops after ``--refreshes`` tables
or at once when no evaluation holds its lock."""

from __future__ import annotations

import json

from spatialscout_gym.cli.main import main
from spatialscout_gym.eval.running.evaluate import evaluation_lock
from record_fixtures import model_figures, run_record, write_record


def _episode(root, key, status, cost, waits=0):
    d = root / key
    write_record(d, run_record(key.split("/")[0], status=status,
                               model=model_figures(cost_usd=cost, rate_limit_waits=waits)))
    (d / "trace.jsonl").write_text("")


def _evaluation(root):
    root.mkdir()
    (root / "evaluate.json").write_text(json.dumps({"agent": "openai:m"}))
    (root / "planned.json").write_text(json.dumps({"episodes": ["a/seed_0", "b/seed_0", "c/seed_0", "d/seed_0"]}))
    _episode(root, "a/seed_0", "ok", 0.25, waits=2)
    _episode(root, "b/seed_0", "failed", 0.5)
    half = root / "c" / ".seed_0.x1.tmp"   # a run directory being written: never read
    half.mkdir(parents=True)
    (half / "result.json").write_text('{"status": "o')
    (root / "spend.json").write_text(json.dumps({"usd": 1.125, "calls": 9}))


def test_watch_shows_progress_while_running_and_stops_when_none_runs(tmp_path, capsys):
    ev = tmp_path / "gpt-x"
    _evaluation(ev)
    with evaluation_lock(ev):   # an evaluate is writing this directory
        assert main(["leaderboard", str(ev), "--watch", "--refreshes", "2", "--interval", "0.01"]) == 0
    out = capsys.readouterr().out
    tables = [t for t in out.split("\n\n") if "gpt-x" in t]
    assert len(tables) == 2
    row = next(line for line in tables[0].splitlines() if line.startswith("gpt-x"))
    assert row.split()[1:5] == ["1/4", "1", "$1.1250", "2"]   # done/planned, failed, ledger spend, waits
    assert row.endswith("running")
    assert main(["leaderboard", str(ev), "--watch", "--interval", "0.01"]) == 0   # none running: one table
    out = capsys.readouterr().out
    assert out.count("gpt-x") == 1 and out.strip().endswith("stopped")


def test_leaderboard_without_watch_still_needs_out(tmp_path, capsys):
    ev = tmp_path / "e"
    _evaluation(ev)
    assert main(["leaderboard", str(ev)]) == 2
    assert "--out SITE is required" in capsys.readouterr().err
