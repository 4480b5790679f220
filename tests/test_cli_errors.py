"""Bad input to the commands that start episodes: one readable line, exit code 2, nothing run."""

from __future__ import annotations

import pytest

from spatialscout_gym.cli.main import main


@pytest.mark.parametrize("argv, needle", [
    (["run", "--agent", "origin", "--scene", "Nope_1", "--out", "{tmp}/r"], "unknown scene 'Nope_1'"),
    (["evaluate", "--agent", "origin", "--scenes", "Kitchen_01", "Nope", "--out", "{tmp}/e",
      "--no-progress"], "unknown scene 'Nope'"),
    (["evaluate", "--agent", "origin", "--scenes", "procedural:x", "--out", "{tmp}/e"],
     "procedural:<non-negative integer seed>"),
    (["mcp", "--scene", "Nope", "--out", "{tmp}/m"], "unknown scene 'Nope'"),
    (["run", "--agent", "origin", "--scene", "Kitchen_01", "--out", "{tmp}/r", "--image-budget", "0"],
     "--image-budget must be >= 1"),
    (["train-nbv", "--total-timesteps", "-5", "--out", "{tmp}/t"], "--total-timesteps must be >= 1"),
])
def test_bad_input_is_one_line_exit_2(argv, needle, tmp_path, capsys):
    rc = main([a.replace("{tmp}", str(tmp_path)) for a in argv])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2
    assert len(err) == 1 and err[0].startswith("spatialscout: error: ") and needle in err[0], err
    assert "\"'" not in err[0]          # no KeyError repr quoting
    assert not any(tmp_path.iterdir())  # nothing was written
