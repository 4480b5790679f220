"""`scenes render` pictures and `doctor`."""

import argparse

import numpy as np
from PIL import Image

from render_fixtures import make_room_spec
from spatialscout_gym.cli.doctor import run_doctor
from spatialscout_gym.cli.scenes_render import add_render_parser
from spatialscout_gym.render.pictures import panorama_poses


def test_panorama_poses_step_45_degrees_from_the_initial_pose():
    spec = make_room_spec()
    poses = panorama_poses(spec.public.initial_camera)
    assert len(poses) == 8
    yaws = np.array([p.yaw_deg for p in poses])
    assert np.allclose(np.diff(np.unwrap(np.radians(yaws))), np.radians(45.0))
    assert all(np.array_equal(p.position_world, spec.public.initial_camera.position_world) for p in poses)


def test_scenes_render_writes_three_nonblank_pngs(tmp_path, capsys):
    spec_path = tmp_path / "room.json"
    spec_path.write_text(make_room_spec().to_json())
    parser = argparse.ArgumentParser()
    add_render_parser(parser.add_subparsers())
    args = parser.parse_args(["render", str(spec_path), "--out", str(tmp_path / "out"), "--size", "128"])
    assert args.func(args) == 0
    for name, min_size in (("initial", 128), ("panorama", 256), ("topdown", 300)):
        img = np.asarray(Image.open(tmp_path / "out" / f"{name}.png").convert("RGB"))
        assert img.shape[0] >= min_size and img.std() > 10, name
    pano = np.asarray(Image.open(tmp_path / "out" / "panorama.png"))
    assert pano.shape[1] == 2 * pano.shape[0]  # 4 x 2 tiles of square views
    assert "topdown.png" in capsys.readouterr().out


def test_doctor_reports_a_working_renderer(capsys):
    assert run_doctor() == 0
    out = capsys.readouterr().out
    assert "device" in out and "frame time" in out and "rendering works" in out


def test_doctor_prints_the_fix_when_no_device(monkeypatch, capsys):
    from spatialscout_gym.render import device
    monkeypatch.setattr(device, "_PROBE", "raise SystemExit('failed to find a rendering device')")
    assert run_doctor() == 1
    assert "mesa-vulkan-drivers" in capsys.readouterr().out


def _render_args(argv):
    parser = argparse.ArgumentParser()
    add_render_parser(parser.add_subparsers())
    return parser.parse_args(argv)


def test_scenes_render_refuses_a_non_positive_size_with_a_user_error(tmp_path):
    """A bad --size is a one-line user error (exit 2), not a ValueError traceback from SAPIEN."""
    import pytest
    from spatialscout_gym.cli.errors import CliError
    args = _render_args(["render", "procedural:1", "--out", str(tmp_path), "--size", "0"])
    with pytest.raises(CliError, match="--size must be a positive"):
        args.func(args)
    assert not any(tmp_path.iterdir())


def test_scenes_render_says_what_is_wrong_with_a_procedural_name(tmp_path):
    import pytest
    from spatialscout_gym.cli.errors import CliError
    args = _render_args(["render", "procedural:abc", "--out", str(tmp_path)])
    with pytest.raises(CliError, match="procedural:<non-negative integer seed>"):
        args.func(args)


def test_doctor_does_not_call_an_installed_vulkaninfo_missing(monkeypatch, capsys):
    """With vulkaninfo installed but no Mesa driver listed, doctor must not tell the user to
    install vulkan-tools (it is there); it says that no Mesa driver was listed."""
    import shutil

    from spatialscout_gym.render import device
    monkeypatch.setattr(device, "_PROBE", "raise SystemExit('failed to find a rendering device')")
    monkeypatch.setattr(device, "mesa_version", lambda timeout_s=20.0: "")
    monkeypatch.setattr(shutil, "which", lambda name, *a, **k: f"/usr/bin/{name}")
    assert run_doctor() == 1
    out = capsys.readouterr().out
    assert "vulkaninfo missing" not in out and "no Mesa Vulkan driver" in out
    monkeypatch.setattr(shutil, "which", lambda name, *a, **k: None)
    assert run_doctor() == 1
    assert "vulkaninfo missing" in capsys.readouterr().out
