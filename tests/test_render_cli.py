"""`scenes render` pictures and `doctor` (issue 3, items 6 and 8)."""

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
