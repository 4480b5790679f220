"""The ManiSkill adapter on data shaped like the real downloads: navigable positions under their
real names, navigation-mesh sites inside free floor, the target rule with structural categories,
ReplicaCAD's lexicon fallback and staging scenes, URDF ``package://`` paths, primitives and
``uniform_scale``, Draco-compressed meshes, and one listing for many scenes."""

from __future__ import annotations

import json

import numpy as np
import pytest

from maniskill_dataset import (FRIDGE_BODY_SIZE, FRIDGE_SCALE, FRIDGE_TRANSLATION, NAVMESH_BOX_XY,
                               make_ai2thor_dataset, make_replicacad_dataset)
from maniskill_dataset import scenes_cli as main
from spatialscout_gym.scenes import maniskill as ms


def _inside_box(xy, margin: float = 0.0) -> bool:
    (x0, y0), (x1, y1) = NAVMESH_BOX_XY
    return x0 + margin < xy[0] < x1 - margin and y0 + margin < xy[1] < y1 - margin


def test_replicacad_navmesh_is_found_under_its_real_name(tmp_path):
    make_replicacad_dataset(tmp_path)
    src = ms.load_source_scene("ReplicaCAD", "apt_0", tmp_path)
    assert src.navigable_triangles_xy is not None and src.navigable_triangles_xy.shape == (2, 3, 2)
    corners = {tuple(np.round(c, 6)) for c in src.navigable_xy}
    (x0, y0), (x1, y1) = NAVMESH_BOX_XY
    assert corners == {(x0, y0), (x1, y0), (x1, y1), (x0, y1)}
    cam = ms.choose_initial_camera(src, ms.default_intrinsics())
    assert _inside_box(cam.position_world[:2])  # a site from the navmesh, not the floor grid
    assert tuple(np.round(cam.position_world[:2], 6)) not in corners


def test_navmesh_sites_lie_inside_the_triangles_and_survive_clearance(tmp_path):
    """Navmesh vertices lie on the edge of free space: with furniture at every vertex, none of
    them passes the clearance rule, and the camera still stands inside the mesh, clear of all."""
    make_replicacad_dataset(tmp_path)
    src = ms.load_source_scene("ReplicaCAD", "apt_0", tmp_path)
    sites = ms._navmesh_sites(src.navigable_triangles_xy, np.zeros(2))
    assert len(sites) > 50 and all(_inside_box(s) for s in sites)
    blockers = [ms.SourceObject(100 + k, "objects/post", None, ms.Path("post.glb"), np.eye(4), False,
                                np.array([x - 0.1, y - 0.1, 0.0]), np.array([x + 0.1, y + 0.1, 2.0]))
                for k, (x, y) in enumerate(src.navigable_xy)]
    src.objects = src.objects + blockers
    cam = ms.choose_initial_camera(src, ms.default_intrinsics())
    assert _inside_box(cam.position_world[:2])
    for b in src.objects + [ms.SourceObject(0, "", None, ms.Path(""), np.eye(4), False, *st.box)
                            for st in src.structures]:
        if b.box_max[2] > 0.1 and b.box_min[2] < cam.position_world[2] + 0.2:
            gap = np.maximum(np.maximum(b.box_min[:2] - cam.position_world[:2],
                                        cam.position_world[:2] - b.box_max[:2]), 0)
            assert np.linalg.norm(gap) >= ms.CLEARANCE_M - 1e-9


def test_ai2thor_navigable_positions_npy_is_read(tmp_path):
    xy = np.array([[0.0, 0.0], [0.25, 0.0], [0.0, 0.25]])
    make_ai2thor_dataset(tmp_path, navigable_xy=xy)
    src = ms.load_source_scene("iTHOR", "FloorPlan1_physics", tmp_path)
    np.testing.assert_allclose(src.navigable_xy, xy)
    cam = ms.choose_initial_camera(src, ms.default_intrinsics())
    assert any(np.allclose(cam.position_world[:2], p) for p in xy)


def test_structural_categories_are_never_candidates(tmp_path):
    """Every object has a semantic id in the map (real AI2-THOR): the doorframes are the building."""
    written = make_ai2thor_dataset(tmp_path, n_candidates=36, n_uncategorised=3)
    spec = ms.import_scene("iTHOR", "FloorPlan1_physics", 35, asset_dir=tmp_path)
    by_id = {o.id: o for o in spec.private.objects}
    frames = [f"Doorframe_{o.index:03d}" for o in written if o.semantic == "Doorframe"]
    assert len(frames) == 3 and all(by_id[i].role == "static" for i in frames)
    assert "Doorframe" not in {e.category for e in spec.public.inventory}
    assert sum(o.role == "hidden" for o in spec.private.objects) == 1  # 36 candidates, 35 targets
    assert {"Floor", "Wall", "Ceiling", "Doorframe"} <= ms.STRUCTURAL_CATEGORIES


def test_replicacad_without_lexicon_warns_once_and_reads_template_names(tmp_path, capsys):
    make_replicacad_dataset(tmp_path, lexicon=False)
    with pytest.warns(ms.ManiSkillDataWarning, match="replicaCAD_semantic_lexicon.json is missing"):
        src = ms.load_source_scene("ReplicaCAD", "apt_0", tmp_path)
    cats = {o.template: o.category for o in src.objects}
    assert cats["objects/frl_apartment_chair_1"] == "Chair"
    assert cats["objects/frl_apartment_doorframe_7"] == "Doorframe"  # structural: never a candidate
    assert sum(o.is_candidate for o in src.objects) == 6
    code = main(["scenes", "import-maniskill", "--dataset", "ReplicaCAD", "--targets", "35",
                 "--scenes", "apt_0", "v3_sc0_staging_00", "--asset-dir", str(tmp_path),
                 "--out", str(tmp_path / "o")])
    err = capsys.readouterr().err
    assert code == 2  # 6 candidates cannot give 35 targets; the point is the warning
    assert err.count("replicaCAD_semantic_lexicon.json is missing") == 1
    assert [ln for ln in err.splitlines() if "lexicon" in ln][0].startswith("warning: ")


def test_replicacad_staging_scenes_only_on_request(tmp_path):
    make_replicacad_dataset(tmp_path)
    assert list(ms.list_scenes("ReplicaCAD", tmp_path)) == ["apt_0"]
    assert list(ms.list_scenes("ReplicaCAD", tmp_path, include_staging=True)) == \
        ["apt_0", "v3_sc0_staging_00"]
    # a staging scene named explicitly still loads
    assert ms.load_source_scene("ReplicaCAD", "v3_sc0_staging_00", tmp_path).name == "v3_sc0_staging_00"


def test_urdf_package_paths_primitives_and_uniform_scale(tmp_path):
    make_replicacad_dataset(tmp_path)
    src = ms.load_source_scene("ReplicaCAD", "apt_0", tmp_path)
    fridge = next(st for st in src.structures if st.name.startswith("fridge"))
    kinds = [v[0].kind if isinstance(v[0], ms.PrimitiveMesh) else "file" for v in fridge.visuals]
    assert kinds == ["box", "cylinder", "sphere", "capsule", "file"]
    assert fridge.visuals[-1][0].name == "handle.glb" and fridge.visuals[-1][0].is_file()
    # the body box, scaled by uniform_scale, stands at the fridge's pose (habitat -> z-up world)
    sx, sy, sz = np.array(FRIDGE_BODY_SIZE) * FRIDGE_SCALE
    t = np.array(FRIDGE_TRANSLATION)
    lo, hi = fridge.visuals[0][3], fridge.visuals[0][4]
    np.testing.assert_allclose(lo, [t[0] - sx / 2, -t[2] - sz / 2, t[1]], atol=1e-6)
    np.testing.assert_allclose(hi, [t[0] + sx / 2, -t[2] + sz / 2, t[1] + sy], atol=1e-6)
    spec = ms.spec_from_source(src, 5)
    obj = next(o for o in spec.private.objects if o.id.startswith("Structure_fridge"))
    assert len(obj.parts) == 5 and obj.parts[0].path is None and obj.parts[-1].path.endswith("handle.glb")
    np.testing.assert_allclose(obj.aabb_world[0], fridge.box[0], atol=1e-5)
    np.testing.assert_allclose(obj.aabb_world[1], fridge.box[1], atol=1e-5)


def test_draco_compressed_stage_decodes(tmp_path):
    plain = tmp_path / "plain"
    draco = tmp_path / "draco"
    make_replicacad_dataset(plain)
    make_replicacad_dataset(draco, stage_draco=True)
    stage = draco / "scene_datasets/replica_cad_dataset/stages/frl_apartment_stage.glb"
    assert ms._draco_compressed(stage)
    a = ms.load_source_scene("ReplicaCAD", "apt_0", plain)
    b = ms.load_source_scene("ReplicaCAD", "apt_0", draco)
    np.testing.assert_allclose(b.stage_box[0], a.stage_box[0], atol=1e-3)
    np.testing.assert_allclose(b.stage_box[1], a.stage_box[1], atol=1e-3)
    assert len(b.stage_triangles_world) == len(a.stage_triangles_world)


def test_one_listing_serves_many_scenes(tmp_path, monkeypatch):
    """A ProcTHOR-shaped tree of 3,000 configs lists every one; importing with the index does not
    list again."""
    root = tmp_path / "scene_datasets/ai2thor/ai2thor-hab/configs/scenes/ProcTHOR"
    for k in range(3000):
        d = root / str(k // 1000)
        d.mkdir(parents=True, exist_ok=True)
        (d / f"ProcTHOR-Train-{k}.scene_instance.json").write_text("{}")
    index = ms.list_scenes("ProcTHOR", tmp_path)
    assert len(index) == 3000 and index["ProcTHOR-Train-1234"] == "1/ProcTHOR-Train-1234.scene_instance.json"
    make_ai2thor_dataset(tmp_path, n_candidates=3, n_uncategorised=0)
    index = ms.list_scenes("iTHOR", tmp_path)

    def no_listing(*a, **k):
        raise AssertionError("listed again")

    monkeypatch.setattr(ms, "list_scenes", no_listing)
    assert len(ms.load_source_scene("iTHOR", "FloorPlan1_physics", tmp_path, scenes=index).objects) == 3


def test_import_cli_passes_its_index(tmp_path, monkeypatch, capsys):
    make_ai2thor_dataset(tmp_path / "a")
    calls = []
    real = ms.list_scenes

    def counting(*a, **k):
        calls.append(a)
        return real(*a, **k)

    monkeypatch.setattr(ms, "list_scenes", counting)
    code = main(["scenes", "import-maniskill", "--dataset", "iTHOR", "--targets", "35",
                 "--asset-dir", str(tmp_path / "a"), "--out", str(tmp_path / "o")])
    assert code == 0, capsys.readouterr().err
    assert len(calls) == 1
    assert json.loads((tmp_path / "o/iTHOR_FloorPlan1/entity_library.json").read_text())["inventory"]
