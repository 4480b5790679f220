"""Bad input to the commands that start episodes: one readable line, exit code 2, nothing run."""

from __future__ import annotations

import json
import sys
from pathlib import Path

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
     "--image-budget must be an integer from 1 to 1000"),
    (["train-nbv", "--total-timesteps", "-5", "--out", "{tmp}/t"], "--total-timesteps must be >= 1"),
])
def test_bad_input_is_one_line_exit_2(argv, needle, tmp_path, capsys):
    rc = main([a.replace("{tmp}", str(tmp_path)) for a in argv])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2
    assert len(err) == 1 and err[0].startswith("spatialscout: error: ") and needle in err[0], err
    assert "\"'" not in err[0]          # no KeyError repr quoting
    assert not any(tmp_path.iterdir())  # nothing was written


# ---- each bad input a user hit gives one line and exit 2 -----------------------
@pytest.mark.parametrize("argv, needle", [
    (["evaluate", "--agent", "openai:m", "--scenes", "procedural:1", "--out", "{tmp}/e", "--no-progress"],
     "no API key for openai"),
    (["evaluate", "--agent", "ppo:/missing.zip", "--scenes", "procedural:1", "--out", "{tmp}/e",
      "--no-progress"], "no trained policy at /missing.zip"),
    (["run", "--agent", "ppo:/missing.zip", "--scene", "procedural:1", "--out", "{tmp}/r"],
     "no trained policy at /missing.zip"),
    (["run", "--agent", "origin", "--scene", "procedural:1", "--out", "{tmp}/r", "--resolution", "100000"],
     "--resolution must be an integer number of pixels from 8 to 4096"),
    (["evaluate", "--agent", "origin", "--scenes", "procedural:1", "--out", "{tmp}/e", "--resolution",
      "100000"], "--resolution must be an integer number of pixels from 8 to 4096"),
    (["run", "--agent", "origin", "--scene", "{tmp}/nowhere/scene_spec.json", "--out", "{tmp}/r"],
     "does not exist"),
    (["run", "--agent", "origin", "--scene", "kitchen_01", "--out", "{tmp}/r"], "did you mean 'Kitchen_01'"),
    (["evaluate", "--agent", "origin", "--scenes", "kitchen_01", "--out", "{tmp}/e"], "did you mean 'Kitchen_01'"),
    (["evaluate", "--agent", "origin", "--scenes", "procedural:1", "--out", "{tmp}/e", "--seeds", "0", "x"],
     "--seeds takes seed ids"),
    (["evaluate", "--agent", "origin", "--scenes", "procedural:1", "--out", "{tmp}/e", "--seeds", "3"],
     "--seeds 3: one number no longer counts repeats; write --repeats 3 for seeds 0..2, or --seeds 3:4"),
    (["evaluate", "--agent", "origin", "--scenes", "procedural:1", "--out", "{tmp}/e", "--repeats", "0"],
     "--repeats must be >= 1"),
    (["evaluate", "--agent", "origin", "--scenes", "procedural:1", "--out", "{tmp}/e", "--seeds", "1", "1"],
     "more than once"),
])
def test_bad_inputs_are_one_line_exit_2(argv, needle, tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    rc = main([a.replace("{tmp}", str(tmp_path)) for a in argv])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2
    assert len(err) == 1 and err[0].startswith("spatialscout: error: ") and needle in err[0], err
    assert not any(tmp_path.iterdir())


def test_missing_scene_dir_is_reported_not_ignored(tmp_path, capsys, monkeypatch):
    missing = tmp_path / "no_such_dir"
    monkeypatch.setenv("SPATIALSCOUT_SCENE_DIRS", str(missing))
    rc = main(["run", "--agent", "origin", "--scene", "MyImported_1", "--out", str(tmp_path / "r")])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1 and str(missing) in err[0] and "does not exist" in err[0], err


def test_debug_prints_the_traceback_too(tmp_path, capsys):
    rc = main(["--debug", "run", "--agent", "origin", "--scene", "Nope_1", "--out", str(tmp_path / "r")])
    err = capsys.readouterr().err
    assert rc == 2 and "Traceback (most recent call last)" in err
    assert err.strip().splitlines()[-1].startswith("spatialscout: error: ")


def test_a_bug_is_not_turned_into_cannot_run_scene(tmp_path, monkeypatch):
    import spatialscout_gym.eval.running.runner as runner

    def buggy(*a, **k):
        raise KeyError("internal bug")
    monkeypatch.setattr(runner, "run_episode", buggy)
    with pytest.raises(KeyError, match="internal bug"):
        main(["run", "--agent", "origin", "--scene", "procedural:1", "--out", str(tmp_path / "r")])


def test_evaluate_accepts_a_list_of_seeds(tmp_path, capsys):
    out = tmp_path / "e"
    rc = main(["evaluate", "--agent", "origin", "--scenes", "procedural:3", "--out", str(out), "--seeds",
               "0", "2", "5", "--resolution", "16", "--image-budget", "2", "--no-progress"])
    assert rc == 0, capsys.readouterr()
    assert sorted(p.name for p in (out / "procedural_3").iterdir() if p.is_dir()) == ["seed_0", "seed_2", "seed_5"]
    from spatialscout_gym.cli.evaluate import parse_seeds
    assert parse_seeds(["0"]) == [0] and parse_seeds(["7:9"]) == [7, 8] and parse_seeds(["0", "4:6"]) == [0, 4, 5]


def test_seeds_are_ids_and_repeats_count(tmp_path, capsys):
    """--seeds 0 is seed 0 (one episode), as --seeds 0 1 is seeds 0 and 1; --repeats N counts."""
    for argv, expected in ((["--seeds", "0"], ["seed_0"]), (["--repeats", "2"], ["seed_0", "seed_1"])):
        out = tmp_path / argv[0].strip("-")
        rc = main(["evaluate", "--agent", "origin", "--scenes", "procedural:3", "--out", str(out), *argv,
                   "--resolution", "16", "--image-budget", "2", "--no-progress"])
        assert rc == 0, capsys.readouterr()
        assert sorted(p.name for p in (out / "procedural_3").iterdir() if p.is_dir()) == expected


def test_env_constructor_checks_bounds():
    from spatialscout_gym.envs.spatialscout_env import SpatialScoutEnv
    with pytest.raises(ValueError, match="image_budget must be an integer from 1 to 1000"):
        SpatialScoutEnv("procedural:1", image_budget=0)
    with pytest.raises(ValueError, match="resolution must be an integer number of pixels from 8 to 4096"):
        SpatialScoutEnv("procedural:1", resolution=100000)


def test_gym_make_checks_bounds():
    import gymnasium as gym

    import spatialscout_gym  # noqa: F401  (registers the envs)
    with pytest.raises(ValueError, match="image_budget must be an integer from 1 to 1000"):
        gym.make("SpatialScout/Procedural-v0", image_budget=0)


@pytest.mark.parametrize("module,extra", [("openai", "vlm"), ("anthropic", "vlm")])
def test_a_missing_extra_is_one_line_naming_it_with_exit_2(module, extra, monkeypatch, capsys, tmp_path):
    from spatialscout_gym.cli.main import main as cli_main
    monkeypatch.setitem(sys.modules, module, None)   # "import openai" now raises ModuleNotFoundError
    agent = "openai:gpt-x" if module == "openai" else "anthropic:claude-x"
    code = cli_main(["run", "--agent", agent, "--api-key", "local-key", "--scene", "procedural:1",
                     "--out", str(tmp_path / "r"), "--resolution", "32"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1
    assert f"'{extra}' extra" in err and f"pip install -e '{ROOT}[{extra}]'" in err   # works from a clone


ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("module,transport", [("anyio", "stdio"), ("mcp", "stdio"), ("uvicorn", "http")])
def test_mcp_without_the_vlm_extra_is_the_one_line_hint(module, transport, monkeypatch, capsys, tmp_path):
    """No traceback, no scene built, no run directory: the hint names the extra and a command that
    works from a clone (the package is on no package index)."""
    from spatialscout_gym.cli.main import main as cli_main
    monkeypatch.setitem(sys.modules, module, None)   # as if the vlm extra were not installed
    code = cli_main(["mcp", "--scene", "procedural:1", "--out", str(tmp_path / "m"), "--transport", transport])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1 and "Traceback" not in err
    assert f"'vlm' extra ({module} is not installed)" in err and f"pip install -e '{ROOT}[vlm]'" in err
    assert not (tmp_path / "m").exists()


def test_missing_extra_message_maps_every_extra():
    from spatialscout_gym.cli.errors import missing_extra_message
    for module, extra in [("stable_baselines3", "rl"), ("ray", "ray"), ("mani_skill", "maniskill"),
                          ("sapien", "render"), ("matplotlib", "plots"), ("mcp", "vlm")]:
        assert f"[{extra}]" in missing_extra_message(ModuleNotFoundError(f"No module named '{module}'", name=module))
    assert missing_extra_message(ModuleNotFoundError("x", name="numpyx")) is None


def test_run_overwrite_replaces_only_a_run_directory(tmp_path, capsys):
    from spatialscout_gym.cli.main import main as cli_main
    precious = tmp_path / "home"
    precious.mkdir()
    (precious / "thesis.tex").write_text("years of work")
    code = cli_main(["run", "--agent", "origin", "--scene", "procedural:1", "--out", str(precious),
                     "--resolution", "32", "--overwrite"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and "not a run directory" in err and len(err.splitlines()) == 1
    assert (precious / "thesis.tex").read_text() == "years of work"


def test_run_out_naming_a_file_is_one_line(tmp_path, capsys):
    from spatialscout_gym.cli.main import main as cli_main
    f = tmp_path / "notes.txt"
    f.write_text("keep")
    code = cli_main(["run", "--agent", "origin", "--scene", "procedural:1", "--out", str(f), "--resolution",
                     "32", "--overwrite"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and "is a file" in err and f.read_text() == "keep"


def test_scene_file_error_survives_pickling_and_deep_json_is_one_line(tmp_path, capsys):
    import pickle
    from spatialscout_gym.core.files import SceneFileError, read_json
    e = pickle.loads(pickle.dumps(SceneFileError(tmp_path / "s.json", "bad field")))
    assert str(e) == f"{tmp_path / 's.json'}: bad field" and e.problem == "bad field"
    deep = tmp_path / "predictions.json"
    deep.write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(SceneFileError, match="nested too deeply"):
        read_json(deep)


def test_evaluate_out_naming_a_file_is_one_line(tmp_path, capsys):
    from spatialscout_gym.cli.main import main as cli_main
    f = tmp_path / "results.txt"
    f.write_text("keep")
    code = cli_main(["evaluate", "--agent", "origin", "--scenes", "procedural:1", "--out", str(f),
                     "--resolution", "32", "--no-progress"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and "is a file" in err and len(err.splitlines()) == 1 and f.read_text() == "keep"


def test_run_overwrite_removes_only_what_a_run_writes(tmp_path, capsys):
    """A run directory that also holds the user's files: ``--overwrite`` replaces the run's files
    (a stale frame included) and keeps ``precious.txt`` and ``sub/thesis.tex``."""
    from spatialscout_gym.cli.main import main as cli_main
    out = tmp_path / "mixed"
    (out / "sub").mkdir(parents=True)
    (out / "frames").mkdir()
    (out / "result.json").write_text('{"status": "failed"}')
    (out / "trace.jsonl").write_text('{"event": "start"}\n')
    (out / "frames" / "frame_009.png").write_bytes(b"old")
    (out / "precious.txt").write_text("keep me")
    (out / "sub" / "thesis.tex").write_text("years of work")
    code = cli_main(["run", "--agent", "origin", "--scene", "procedural:1", "--out", str(out),
                     "--resolution", "32", "--overwrite"])
    assert code == 0, capsys.readouterr().err
    assert (out / "precious.txt").read_text() == "keep me" and (out / "sub" / "thesis.tex").read_text() == "years of work"
    assert json.loads((out / "result.json").read_text())["status"] == "ok"
    assert not (out / "frames" / "frame_009.png").exists() and (out / "frames" / "frame_000.png").is_file()
    assert [p.name for p in tmp_path.iterdir()] == ["mixed"]   # no temporary directory left


@pytest.mark.parametrize("scene", ["x" * 5000, "a/" * 2100, "procedural:" + "9" * 5000, "b" * 300 + ".json"])
def test_an_overlong_scene_name_is_one_short_line(tmp_path, capsys, scene):
    """5,000 characters, a path over 4,096, a seed of 5,000 digits, a file name over 255 bytes:
    one line and exit 2 (an OSError or ValueError traceback before)."""
    from spatialscout_gym.cli.main import main as cli_main
    code = cli_main(["run", "--agent", "origin", "--scene", scene, "--out", str(tmp_path / "r")])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1 and "Traceback" not in err and len(err) < 500, err[:300]
    assert "cannot run scene" in err and not (tmp_path / "r").exists()


def test_evaluate_on_a_full_disk_is_one_line(tmp_path, capsys, monkeypatch):
    """ENOSPC from every write that is flushed to disk (what a full device answers): one line and
    exit 2 (a traceback and exit 1 before)."""
    import errno
    import os
    from fakes import small_scene
    from spatialscout_gym.cli.main import main as cli_main
    spec = tmp_path / "fake-0.json"
    spec.write_text(small_scene(32, 32, scene_id="fake-0").to_json())

    def full(fd):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "fsync", full)
    code = cli_main(["evaluate", "--agent", "origin", "--scenes", str(spec), "--out", str(tmp_path / "E"),
                     "--resolution", "32", "--image-budget", "2", "--no-progress"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1 and "no space is left on the device" in err, err[-300:]


@pytest.mark.parametrize("command", ["score", "view", "report"])
@pytest.mark.parametrize("name_length", [300, 5000])
def test_a_path_past_the_file_name_limit_is_one_line_naming_it(tmp_path, capsys, command, name_length):
    """A directory name over 255 bytes (and a path over 4,096) given to score, view or report:
    one line naming the path and exit 2 (an ``OSError: File name too long`` traceback before)."""
    path = tmp_path / ("L" * name_length) / "seed_0"
    code = main([command, str(path)])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1 and "Traceback" not in err, err[-300:]
    assert "ENAMETOOLONG" in err and f"({len(str(path))} characters)" in err and str(path)[-30:] in err
