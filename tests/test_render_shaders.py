"""The camera shader pack (``render/shaders.py``): SAPIEN's "minimal" pack without its BRDF lookup
table draws the same bits as SAPIEN's own pack on real scenes, is derived once into the package
cache (atomically, rewritten when damaged), and falls back to SAPIEN's own pack when it cannot be
derived or written."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from spatialscout_gym.core.frames import CameraPose
from spatialscout_gym.render import sapien_renderer, shaders
from spatialscout_gym.render.sapien_renderer import SapienRenderer
from spatialscout_gym.render.shaders import LUT_FREE_EDITS, camera_shader_dir, derive_minimal_pack
from spatialscout_gym.scenes.catalog import scene_by_name as resolve_scene

sapien = pytest.importorskip("sapien")
STOCK = Path(sapien.__file__).parent / "vulkan_shader"


def _pictures(spec, shader_dir: str | None, monkeypatch) -> list[np.ndarray]:
    """Colour, depth, segmentation and positions at the start pose and eight random poses, drawn
    with ``shader_dir`` (None: the renderer's own choice)."""
    if shader_dir is not None:
        monkeypatch.setattr(sapien_renderer, "camera_shader_dir", lambda shader, root: shader_dir)
    r = SapienRenderer(spec, 64, 64)
    monkeypatch.undo()
    try:
        start = spec.public.initial_camera
        rng = np.random.default_rng(7)
        poses = [start] + [CameraPose(start.position_world + rng.uniform(-1, 1, 3) * [1.5, 1.5, 0.4],
                                      rng.uniform(-180, 180), rng.uniform(-60, 60)) for _ in range(8)]
        out = []
        for pose in poses:
            rgb, frame = r.capture_rgb(pose), r.capture_privileged(pose)
            out += [rgb, frame.depth_m, frame.segmentation, frame.position_world]
        return out
    finally:
        r.close()


@pytest.mark.render
@pytest.mark.parametrize("scene", ["procedural:3", "Kitchen_01"])
def test_the_lut_free_pack_draws_the_same_bits_as_sapiens_own(scene, monkeypatch):
    spec = resolve_scene(scene)
    ours = _pictures(spec, None, monkeypatch)
    theirs = _pictures(spec, str(STOCK / "minimal"), monkeypatch)
    assert ours[0].mean() > 20 and (ours[2] >= 0).any()            # pictures of something
    assert len(ours) == len(theirs) == 36
    for k, (a, b) in enumerate(zip(ours, theirs)):
        assert a.dtype == b.dtype and np.array_equal(a, b, equal_nan=a.dtype.kind == "f"), k


@pytest.mark.render
def test_renderers_draw_with_the_derived_pack(tmp_path, monkeypatch):
    monkeypatch.setenv("SPATIALSCOUT_CACHE_DIR", str(tmp_path))
    camera_shader_dir.cache_clear()
    try:
        r = SapienRenderer(resolve_scene("procedural:3"), 16, 16)
        try:
            pack = Path(r.shader_dir)
            assert pack.parent.parent == tmp_path and pack.name == "minimal"
            assert (pack.parent / "common" / "lights.glsl").is_file()   # the packs' shared includes
            assert not any("samplerBRDFLUT" in p.read_text() for p in pack.iterdir())
            assert r.capture_rgb(r.spec.public.initial_camera).mean() > 20
        finally:
            r.close()
        assert camera_shader_dir("default", str(STOCK)) == str(STOCK / "default")
    finally:
        camera_shader_dir.cache_clear()


def test_derived_once_into_the_cache_and_a_damaged_pack_is_rewritten(tmp_path, monkeypatch):
    monkeypatch.setenv("SPATIALSCOUT_CACHE_DIR", str(tmp_path / "cache"))
    camera_shader_dir.cache_clear()
    try:
        first = Path(camera_shader_dir("minimal", str(STOCK)))
        gbuffer = (first / "gbuffer.frag").read_text()
        stock = (STOCK / "minimal" / "gbuffer.frag").read_text()
        assert "samplerBRDFLUT" in stock and "samplerBRDFLUT" not in gbuffer
        assert gbuffer.count("vec2 envBRDF = vec2(0.0);") == 1
        # every other line of SAPIEN's file is kept as it is
        assert [x for x in stock.splitlines() if "samplerBRDFLUT" not in x] == \
            [x for x in gbuffer.splitlines() if "vec2(0.0)" not in x]
        for name in ("composite.vert", "gbuffer.vert", "shadow.vert"):
            assert (first / name).read_text() == (STOCK / "minimal" / name).read_text()
        assert [p.name for p in (tmp_path / "cache").iterdir()] == [first.parent.name]   # no temporary left

        (first / "gbuffer.frag").write_text("damaged")     # a pack changed after it was written
        camera_shader_dir.cache_clear()
        again = Path(camera_shader_dir("minimal", str(STOCK)))
        assert again == first and (again / "gbuffer.frag").read_text() == gbuffer
    finally:
        camera_shader_dir.cache_clear()


@pytest.mark.render
@pytest.mark.parametrize("stray", ["minimal/composite1.frag", "common/extra.glsl", "minimal/more/x.frag"])
def test_a_stray_file_in_the_cached_pack_is_removed_like_a_changed_one(tmp_path, monkeypatch, stray):
    """SAPIEN compiles every shader file of the pack's folder: a stray one with bad GLSL broke every
    picture and was never repaired. The pack must hold exactly the derived files."""
    monkeypatch.setenv("SPATIALSCOUT_CACHE_DIR", str(tmp_path / "cache"))
    camera_shader_dir.cache_clear()
    try:
        pack = Path(camera_shader_dir("minimal", str(STOCK)))
        derived = sorted(str(p.relative_to(pack.parent)) for p in pack.parent.rglob("*"))
        planted = pack.parent / stray
        planted.parent.mkdir(exist_ok=True)
        planted.write_text("#version 450\nthis is not GLSL;\n")
        camera_shader_dir.cache_clear()
        assert Path(camera_shader_dir("minimal", str(STOCK))) == pack
        assert sorted(str(p.relative_to(pack.parent)) for p in pack.parent.rglob("*")) == derived
        r = SapienRenderer(resolve_scene("procedural:3"), 16, 16)
        try:
            assert Path(r.shader_dir) == pack and r.capture_rgb(r.spec.public.initial_camera).mean() > 20
        finally:
            r.close()
    finally:
        camera_shader_dir.cache_clear()


def test_sapiens_own_pack_when_the_lines_are_not_there_or_the_cache_cannot_be_written(tmp_path, monkeypatch):
    camera_shader_dir.cache_clear()
    try:
        other = tmp_path / "vulkan_shader"                 # another SAPIEN: the read is written differently
        for sub in ("minimal", "common"):
            (other / sub).mkdir(parents=True)
            for p in (STOCK / sub).iterdir():
                (other / sub / p.name).write_text(p.read_text())
        text = (other / "minimal" / "gbuffer.frag").read_text()
        (other / "minimal" / "gbuffer.frag").write_text(text.replace("vec2(roughness, dotNV)", "vec2(dotNV, roughness)"))
        assert derive_minimal_pack(other) is None
        assert camera_shader_dir("minimal", str(other)) == str(other / "minimal")

        blocked = tmp_path / "a-file"                      # a cache path that cannot be a folder
        blocked.write_text("")
        monkeypatch.setenv("SPATIALSCOUT_CACHE_DIR", str(blocked / "cache"))
        monkeypatch.setattr(shaders.tempfile, "gettempdir", lambda: str(blocked))
        assert camera_shader_dir("minimal", str(STOCK)) == str(STOCK / "minimal")
    finally:
        camera_shader_dir.cache_clear()


def test_the_temporary_folder_is_used_only_when_nobody_else_can_write_it(tmp_path, monkeypatch):
    blocked = tmp_path / "a-file"                          # the cache cannot be written
    blocked.write_text("")
    monkeypatch.setenv("SPATIALSCOUT_CACHE_DIR", str(blocked / "cache"))
    monkeypatch.setattr(shaders.tempfile, "gettempdir", lambda: str(tmp_path))
    mine = tmp_path / f"spatialscout_gym-{os.getuid()}"
    camera_shader_dir.cache_clear()
    try:
        mine.mkdir(mode=0o777)
        mine.chmod(0o777)                                  # another user could write it (or swap a file)
        assert camera_shader_dir("minimal", str(STOCK)) == str(STOCK / "minimal")
        assert list(mine.iterdir()) == []

        for group_writable in (0o775, 0o770, 0o720):        # a group member could write it
            mine.chmod(group_writable)
            camera_shader_dir.cache_clear()
            assert camera_shader_dir("minimal", str(STOCK)) == str(STOCK / "minimal"), oct(group_writable)
            assert list(mine.iterdir()) == []

        mine.chmod(0o700)
        camera_shader_dir.cache_clear()
        pack = Path(camera_shader_dir("minimal", str(STOCK)))
        assert pack.parent.parent == mine and "samplerBRDFLUT" not in (pack / "gbuffer.frag").read_text()

        (pack / "gbuffer.frag").write_text("forged")        # a file changed in place is not drawn with
        camera_shader_dir.cache_clear()
        assert Path(camera_shader_dir("minimal", str(STOCK))) == pack
        rewritten = (pack / "gbuffer.frag").read_text()
        assert rewritten != "forged" and "samplerBRDFLUT" not in rewritten
    finally:
        camera_shader_dir.cache_clear()


def test_every_edit_names_a_file_of_the_pack():
    assert set(LUT_FREE_EDITS) <= {p.name for p in (STOCK / "minimal").iterdir()}
    assert os.path.isdir(STOCK / "common")
