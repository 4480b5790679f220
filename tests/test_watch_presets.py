"""``leaderboard --watch`` follows a presets run (docs/models.md, "Progress"): ``evaluate --models``
holds its ``--out`` for the whole run and lists its models there, so the watch shows the models not
started yet as waiting and goes on between two models, when no model directory is locked."""

from __future__ import annotations

import os
import threading

from spatialscout_gym.cli.main import main
from spatialscout_gym.cli.presets import hold_presets_run


def _states(text: str, names: tuple[str, ...]) -> dict[str, str]:
    return {ln.split()[0]: ln.split()[-1] for ln in text.splitlines() if ln.split() and ln.split()[0] in names}


def test_the_watch_shows_models_not_started_as_waiting_and_follows_the_run_between_models(tmp_path, capsys):
    out = tmp_path / "lab"
    lock = hold_presets_run(out, ["alpha", "beta"])    # the presets run, between two models
    released = threading.Timer(0.5, os.close, (lock,))
    released.start()
    try:
        # a model directory given alone (as `runs/lab/*` gives them) stands for the whole run
        (out / "alpha").mkdir()
        assert main(["leaderboard", str(out / "alpha"), "--watch", "--interval", "0.05"]) == 0
    finally:
        released.join()
    tables = [t for t in capsys.readouterr().out.split("\n\n") if "evaluation" in t]
    # it went on while the run held its directory (no model locked), then stopped
    assert len(tables) >= 3, tables
    assert _states(tables[0], ("alpha", "beta")) == {"alpha": "waiting", "beta": "waiting"}
    assert "waiting" not in tables[-1]


def test_a_second_presets_run_into_the_same_directory_is_refused(tmp_path):
    import pytest

    from spatialscout_gym.cli.errors import CliError
    lock = hold_presets_run(tmp_path / "lab", ["alpha"])
    try:
        with pytest.raises(CliError, match="being written by another"):
            hold_presets_run(tmp_path / "lab", ["alpha"])
    finally:
        os.close(lock)
