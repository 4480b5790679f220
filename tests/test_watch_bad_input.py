"""``spatialscout leaderboard --watch`` over an evaluation whose files are broken (docs/models.md,
"Progress"): a spend ledger that is a FIFO (never opened: it would block), a directory, a link to
``/dev/zero``, binary or ``{"usd": null}``, and a result whose cost is text, are shown as unreadable
with one line saying why, and the watch goes on; an ``--interval`` that is not a finite number of
seconds in range is refused by argparse. The watch runs as its own process (a memory limit and a
time limit guard the test machine against a reader that never ends)."""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys

import pytest

from spatialscout_gym.cli.main import main
from spatialscout_gym.eval.running.evaluate import evaluation_lock
from record_fixtures import model_figures, run_record

WATCH = "from spatialscout_gym.cli.main import main; raise SystemExit(main(sys.argv[1:]))"


def _limits() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))


def _evaluation(root, cost=0.25):
    root.mkdir()
    (root / "evaluate.json").write_text(json.dumps({"agent": "openai:m"}))
    (root / "planned.json").write_text(json.dumps({"episodes": ["a/seed_0", "b/seed_0"]}))
    d = root / "a" / "seed_0"
    record = run_record("a", model=model_figures(cost_usd=0.25, rate_limit_waits=1)).to_json()
    record["model"]["cost_usd"] = cost   # as given: text is no run record, and the watch says so
    d.mkdir(parents=True)
    (d / "trace.jsonl").write_text("")
    (d / "result.json").write_text(json.dumps(record))


def _watch(ev) -> subprocess.CompletedProcess:
    with evaluation_lock(ev):   # an evaluate is writing this directory: the watch keeps refreshing
        return subprocess.run([sys.executable, "-c", "import sys; " + WATCH, "leaderboard", str(ev), "--watch",
                               "--refreshes", "2", "--interval", "0.01"],
                              capture_output=True, text=True, timeout=120, preexec_fn=_limits)


@pytest.mark.parametrize("plant", ["fifo", "directory", "dev-zero", "binary", "null"])
def test_a_broken_ledger_is_shown_as_unreadable_and_the_watch_goes_on(tmp_path, plant):
    ev = tmp_path / "gpt-x"
    _evaluation(ev)
    ledger = ev / "spend.json"
    if plant == "fifo":
        os.mkfifo(ledger)
    elif plant == "directory":
        ledger.mkdir()
    elif plant == "dev-zero":
        ledger.symlink_to("/dev/zero")
    elif plant == "binary":
        ledger.write_bytes(b"\x00\xff\xfe{\x89PNG")
    else:
        ledger.write_text('{"usd": null}')
    try:
        done = _watch(ev)
    except subprocess.TimeoutExpired:
        pytest.fail("the watch blocked")
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr[-2000:]
    rows = [line for line in done.stdout.splitlines() if line.startswith("gpt-x")]
    notes = [line for line in done.stdout.splitlines() if line.strip().startswith(str(ledger))]
    assert len(rows) == 2 and all("unreadable" in r for r in rows)   # two tables: the watch went on
    assert len(notes) == 2


def test_a_result_whose_cost_is_text_is_no_record_left_out_and_said(tmp_path, capsys):
    ev = tmp_path / "gpt-y"
    _evaluation(ev, cost="abc")
    with evaluation_lock(ev):
        assert main(["leaderboard", str(ev), "--watch", "--refreshes", "2", "--interval", "0.01"]) == 0
    out = capsys.readouterr().out
    rows = [line for line in out.splitlines() if line.startswith("gpt-y")]
    assert len(rows) == 2 and rows[0].split()[1:4] == ["0/2", "0", "$0.0000"]   # read strictly: not counted done
    assert out.count("1 recorded figures or result files unreadable") == 2


@pytest.mark.parametrize("interval", ["nan", "inf", "1e300", "-1", "0", "soon"])
def test_an_interval_out_of_range_is_refused_by_argparse(tmp_path, capsys, interval):
    ev = tmp_path / "e"
    _evaluation(ev)
    with pytest.raises(SystemExit) as stop:
        main(["leaderboard", str(ev), "--watch", "--interval", interval])
    err = capsys.readouterr().err
    assert stop.value.code == 2 and "--interval" in err and "Traceback" not in err
