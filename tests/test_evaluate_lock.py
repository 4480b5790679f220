"""``DIR/.evaluate.lock``: removed when an evaluation finishes, taken over after a run killed with
-9 (whatever pid the stale file names), refused while a live run holds it (naming its pid), and a
directory in its place is one line, not ``IsADirectoryError``. Also: a non-finite number in
``evaluate.json`` is a one-line error in ``report``, not a traceback."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from fakes import FakeRenderer, small_scene
from spatialscout_gym.cli.main import main
from spatialscout_gym.core.errors import SpatialScoutError
from spatialscout_gym.eval.running.evaluate import EvalSettings, evaluate

LOCK = ".evaluate.lock"
REPO = Path(__file__).resolve().parents[1]


def _evaluate(d: Path, spec: Path):
    return evaluate(d, EvalSettings("uniform-ball", 5, 20, 32), [str(spec)], seeds=1, workers=1, progress=False,
                    renderer_factory=FakeRenderer)


@pytest.fixture
def spec(tmp_path) -> Path:
    p = tmp_path / "fake-0.json"
    p.write_text(small_scene(32, 32, scene_id="fake-0").to_json())
    return p


def test_the_lock_is_removed_when_the_evaluation_finishes(tmp_path, spec):
    _evaluate(tmp_path / "E", spec)
    assert (tmp_path / "E" / "fake-0" / "seed_0" / "result.json").is_file()
    assert not (tmp_path / "E" / LOCK).exists()


def test_a_lock_of_a_run_killed_with_9_is_taken_over_and_a_live_one_refused(tmp_path, spec):
    d = tmp_path / "E"
    d.mkdir()
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys, time; from pathlib import Path\n"
         "from spatialscout_gym.eval.running.evaluate import evaluation_lock\n"
         "with evaluation_lock(Path(sys.argv[1])):\n    print('held', flush=True); time.sleep(120)", str(d)],
        stdout=subprocess.PIPE, text=True, env=dict(os.environ, PYTHONPATH=str(REPO)))
    try:
        assert holder.stdout.readline().strip() == "held"
        assert (d / LOCK).read_text().strip() == str(holder.pid)
        with pytest.raises(SpatialScoutError, match=f"another `spatialscout evaluate` \\(pid {holder.pid}\\)"):
            _evaluate(d, spec)
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait()
    assert (d / LOCK).read_text().strip() == str(holder.pid)   # the killed run's stale lock stays ...
    _evaluate(d, spec)                                          # ... and is taken over
    assert (d / "fake-0" / "seed_0" / "result.json").is_file() and not (d / LOCK).exists()


def test_a_directory_in_place_of_the_lock_is_one_line(tmp_path, spec, capsys):
    d = tmp_path / "E"
    (d / LOCK).mkdir(parents=True)
    with pytest.raises(SpatialScoutError, match=r"\.evaluate\.lock: is not a lock file") as err:
        _evaluate(d, spec)
    assert "\n" not in str(err.value)


def test_a_budget_of_1e999_in_evaluate_json_is_a_one_line_error_in_report(tmp_path, spec, capsys):
    d = tmp_path / "E"
    _evaluate(d, spec)
    settings = d / "evaluate.json"
    settings.write_text(settings.read_text().replace('"tool_call_budget": 20', '"tool_call_budget": 1e999'))
    assert "1e999" in settings.read_text()
    code = main(["report", str(d), "--no-figures"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and "evaluate.json" in err[0] and "not finite" in err[0], err
