"""``view --out`` copies a run's frames and says nothing about the run's own files: the frames'
hash record (``frames/sha256.json``, which every run writes) is no frame and no warning, while a
linked one or a stray file in ``frames/`` is still skipped and said. Fake scene and pixels."""

from __future__ import annotations

import os

import pytest

from fakes import FakeRenderer, small_scene
from spatialscout_gym.cli.main import main


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    from spatialscout_gym.baselines.registry import make_agent
    from spatialscout_gym.eval.running.runner import run_episode
    spec = small_scene(32, 32)
    out = tmp_path_factory.mktemp("view_frames") / "run"
    run_episode(make_agent("oracle-explorer"), spec, out, image_budget=3, resolution=32, renderer=FakeRenderer(spec))
    assert (out / "frames" / "sha256.json").is_file() and (out / "frames" / "frame_001.png").is_file()
    return out


def test_view_out_says_nothing_of_the_runs_own_hash_record(run_dir, tmp_path, capsys):
    capsys.readouterr()
    assert main(["view", str(run_dir), "--out", str(tmp_path / "site")]) == 0
    err = capsys.readouterr().err
    assert "skipped" not in err, err
    frames = sorted(p.name for p in (tmp_path / "site" / "frames").iterdir())
    assert frames == sorted(p.name for p in (run_dir / "frames").glob("frame_*.png"))


def test_a_linked_hash_record_and_a_stray_file_are_still_said(run_dir, tmp_path, capsys):
    import shutil
    run = tmp_path / "run"
    shutil.copytree(run_dir, run)
    (run / "frames" / "sha256.json").unlink()
    os.symlink(tmp_path / "elsewhere.json", run / "frames" / "sha256.json")
    (run / "frames" / "notes.txt").write_text("not a frame")
    capsys.readouterr()
    assert main(["view", str(run), "--out", str(tmp_path / "site")]) == 0
    err = capsys.readouterr().err
    assert f"skipped {run / 'frames' / 'sha256.json'}" in err and f"skipped {run / 'frames' / 'notes.txt'}" in err
