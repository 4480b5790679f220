"""The ManiSkill3 scene adapter on tiny datasets written by the test.

World boxes are recomputed here with ManiSkill's own builder formulas (transforms3d and
``sapien.Pose``, as in ``mani_skill/utils/scene_builder/{ai2thor,replicacad}/scene_builder.py``),
not with the adapter's code.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
import trimesh
from hypothesis import given, settings
from hypothesis import strategies as st

from maniskill_dataset import (COUNTER_DRAWER_OFFSET, COUNTER_TRANSLATION, WALL_HEIGHT_M,
                               make_ai2thor_dataset, make_replicacad_dataset)
from maniskill_dataset import scenes_cli as main
from spatialscout_gym.core.spec import SceneSpec, natural_key
from spatialscout_gym.scenes import maniskill as ms

SCENE = "FloorPlan1_physics"


def _mesh_vertices(path) -> np.ndarray:
    return np.asarray(trimesh.load(str(path), force="mesh").vertices, dtype=float)


def _ai2thor_world_box(obj) -> tuple[np.ndarray, np.ndarray]:
    """ManiSkill's AI2-THOR builder: q = qmult(Rx(90), rotation), p = (tx, -tz, ty)."""
    import transforms3d

    q = transforms3d.quaternions.qmult(
        transforms3d.quaternions.axangle2quat(np.array([1, 0, 0]), theta=np.deg2rad(90)),
        obj.rotation_wxyz)
    t = obj.translation
    w = _mesh_vertices(obj.mesh_path) @ transforms3d.quaternions.quat2mat(q).T + [t[0], -t[2], t[1]]
    return w.min(0), w.max(0)


def _replicacad_world_box(obj) -> tuple[np.ndarray, np.ndarray]:
    """ManiSkill's ReplicaCAD builder: ``Pose(q=Rx(90)) * Pose(translation, rotation)``."""
    import sapien
    import transforms3d

    q = transforms3d.quaternions.axangle2quat(np.array([1, 0, 0]), theta=np.deg2rad(90))
    T = (sapien.Pose(q=q) * sapien.Pose(obj.translation, obj.rotation_wxyz)).to_transformation_matrix()
    w = _mesh_vertices(obj.mesh_path) @ T[:3, :3].T + T[:3, 3]
    return w.min(0), w.max(0)


@pytest.fixture(scope="module")
def ai2thor(tmp_path_factory):
    asset_dir = tmp_path_factory.mktemp("ms_ai2thor")
    written = make_ai2thor_dataset(asset_dir)
    spec = ms.import_scene("iTHOR", SCENE, 35, asset_dir=asset_dir)
    return asset_dir, written, spec


def test_ai2thor_boxes_match_the_posed_meshes(ai2thor):
    _, written, spec = ai2thor
    by_id = {o.id: o for o in spec.private.objects}
    assert len(by_id) == len(written) + 1  # every instance plus the stage
    for obj in written:
        lo, hi = _ai2thor_world_box(obj)
        got = by_id[f"{obj.semantic or 'Object'}_{obj.index:03d}"]
        np.testing.assert_allclose(got.aabb_world[0], lo, atol=1e-5)
        np.testing.assert_allclose(got.aabb_world[1], hi, atol=1e-5)
        assert got.category == (obj.semantic or "Object")
    # the ground truth file holds the same boxes for the targets, centres in the task frame
    frame = spec.task_frame
    for t in spec.targets:
        np.testing.assert_allclose(t.center_task, frame.to_task((t.box_min + t.box_max) / 2), atol=1e-9)
    stage_lo, stage_hi = by_id["stage"].aabb_world  # y-up room turned z-up: floor top at z = 0
    np.testing.assert_allclose(stage_lo[2], -0.1, atol=1e-5)
    np.testing.assert_allclose(stage_hi[2], WALL_HEIGHT_M + 0.1, atol=1e-5)


def test_targets_follow_the_selection_rule(ai2thor):
    _, written, spec = ai2thor
    o0 = spec.public.initial_camera.position_world
    cands = [(float(np.linalg.norm(np.mean(_ai2thor_world_box(o), axis=0) - o0)),
              f"{o.category}_{o.index:03d}") for o in written if o.category is not None]
    expected = [i for _, i in sorted(cands)]
    inventory = [e.id for e in spec.public.inventory]
    assert set(inventory) == set(expected[:35])                # the 35 nearest are the targets,
    assert inventory == sorted(inventory, key=natural_key)     # listed by id, not by distance
    roles = {o.id: o.role for o in spec.private.objects}
    assert sorted(i for i, r in roles.items() if r == "hidden") == sorted(expected[35:])
    # every object has a semantic category, as in the real data; the building's stay static
    assert all(roles[f"{o.semantic}_{o.index:03d}"] == "static" for o in written if o.category is None)
    assert roles["stage"] == "static"
    assert all(e.group == e.category for e in spec.public.inventory)
    radius = max(float(np.linalg.norm(t.center_task)) for t in spec.targets)
    assert spec.public.radius_m == pytest.approx(radius)


def test_initial_camera_is_at_eye_height_on_open_floor(ai2thor):
    asset_dir, written, spec = ai2thor
    cam = spec.public.initial_camera
    assert cam.position_world[2] == pytest.approx(ms.EYE_HEIGHT_M)  # the floor's top is z = 0
    assert cam.pitch_deg == ms.INITIAL_PITCH_DEG
    assert np.all(np.abs(cam.position_world[:2]) < 4.0 - ms.CLEARANCE_M)  # inside the walls
    for obj in written:
        lo, hi = _ai2thor_world_box(obj)
        gap = np.maximum(np.maximum(lo[:2] - cam.position_world[:2], cam.position_world[:2] - hi[:2]), 0)
        assert np.linalg.norm(gap) >= ms.CLEARANCE_M - 1e-9
    # it faces candidates: some target centres project into the initial image
    K = spec.public.intrinsics
    rel = np.array([(np.mean(_ai2thor_world_box(o), axis=0) - cam.position_world) @ cam.R_world_cam
                    for o in written if o.category is not None])
    u = K.cx - K.fx * rel[:, 1] / rel[:, 0]
    v = K.cy - K.fy * rel[:, 2] / rel[:, 0]
    in_image = (rel[:, 0] > 0) & (u > -0.5) & (u < K.width - 0.5) & (v > -0.5) & (v < K.height - 0.5)
    assert in_image.sum() >= 5
    # deterministic: a second import is identical
    again = ms.import_scene("iTHOR", SCENE, 35, asset_dir=asset_dir)
    assert again.content_hash() == spec.content_hash()


def test_mesh_parts_keep_the_file_and_an_exact_box_proxy(ai2thor):
    _, _, spec = ai2thor
    obj = next(o for o in spec.private.objects if o.category == "Statue")
    (part,) = obj.parts
    assert part.shape == "mesh" and part.path.endswith("Statue_1.glb")
    assert part.material.texture == {"kind": "file"}
    assert len(part.vertices) == 8
    restored = SceneSpec.from_json(spec.to_json())  # the box survives a JSON round trip
    np.testing.assert_allclose(restored.targets[0].box_min, spec.targets[0].box_min, atol=1e-6)


def _equidistant_source(n: int, angles: list[float]) -> ms.SourceScene:
    objects = []
    for k, a in enumerate(angles):
        c = np.array([2 * np.cos(a), 2 * np.sin(a), 1.5])
        objects.append(ms.SourceObject(k, "t", "Book" if k < n else None, ms.Path("x.glb"), np.eye(4),
                                       False, c - 0.1, c + 0.1))
    return ms.SourceScene("iTHOR", "s", ms.Path("c.json"), ms.Path("."), ms.Path("s.glb"), np.eye(4),
                          (np.zeros(3), np.ones(3)), np.zeros((0, 3, 3)), objects, [])


@settings(max_examples=25, deadline=None)
@given(st.lists(st.floats(0, 6.28), min_size=3, max_size=12), st.integers(1, 3))
def test_select_targets_breaks_distance_ties_by_id(angles, n_targets):
    """All candidates at the same distance: the order is the id order."""
    n = len(angles) - 1  # the last object has no category and is never a candidate
    src = _equidistant_source(n, angles)
    if n < n_targets:
        with pytest.raises(ValueError, match="known non-structural category"):
            ms.select_targets(src, ms.CameraPose(np.array([0, 0, 1.5]), 0, 0), n_targets)
        return
    targets, hidden = ms.select_targets(src, ms.CameraPose(np.array([0, 0, 1.5]), 0, 0), n_targets)
    assert targets == list(range(n_targets)) and hidden == list(range(n_targets, n))


def test_replicacad_scene(tmp_path):
    written = make_replicacad_dataset(tmp_path)
    src = ms.load_source_scene("ReplicaCAD", "apt_0", tmp_path)
    assert src.skipped["doors"] == ["door1"]  # ManiSkill's builder skips doors too
    counter, _fridge = src.structures  # the counter URDF at rest: body, and the drawer at its joint origin
    Rx = np.array([[1, 0, 0], [0, 0, -1], [0, 1, 0]])  # +90 deg about x: (x, y, z) -> (x, -z, y)
    body_lo, body_hi = Rx @ (np.array(COUNTER_TRANSLATION) + [-0.5, 0, -0.3]), \
        Rx @ (np.array(COUNTER_TRANSLATION) + [0.5, 0.9, 0.3])
    drawer_c = Rx @ (np.array(COUNTER_TRANSLATION) + COUNTER_DRAWER_OFFSET)
    np.testing.assert_allclose(counter.visuals[0][3], np.minimum(body_lo, body_hi), atol=1e-6)
    np.testing.assert_allclose(counter.visuals[0][4], np.maximum(body_lo, body_hi), atol=1e-6)
    np.testing.assert_allclose((counter.visuals[1][3] + counter.visuals[1][4]) / 2, drawer_c, atol=1e-6)
    assert len(src.lights) == 5 and all(light.kind == "point" for light in src.lights)
    for obj, got in zip(written, src.objects, strict=True):
        lo, hi = _replicacad_world_box(obj)
        np.testing.assert_allclose(got.box_min, lo, atol=1e-5)
        np.testing.assert_allclose(got.box_max, hi, atol=1e-5)
        assert got.category == ({"Chair": "Chair", "Book": "Book", "Mug": "Mug", "Statue": "Statue"}
                                .get(obj.category))  # lexicon "chair" -> AI2-THOR-style "Chair"
        assert got.movable == (obj.index % 2 == 1)
    spec = ms.spec_from_source(src, 5)
    assert spec.scene_id == "ReplicaCAD_apt_0" and len(spec.public.inventory) == 5
    assert sum(o.role == "hidden" for o in spec.private.objects) == 1
    structure = next(o for o in spec.private.objects if o.id == "Structure_counter_0")
    assert structure.role == "static" and len(structure.parts) == 2
    np.testing.assert_allclose(structure.aabb_world[0], counter.box[0], atol=1e-6)


def test_scene_list_follows_maniskill_metadata(tmp_path):
    """ManiSkill's iTHOR.json lists FloorPlan7 before FloorPlan3; an extra config comes last."""
    make_ai2thor_dataset(tmp_path, scene="FloorPlan3_physics", n_candidates=2, n_uncategorised=0)
    make_ai2thor_dataset(tmp_path, scene="FloorPlan7_physics", n_candidates=2, n_uncategorised=0)
    make_ai2thor_dataset(tmp_path, scene="MyRoom", n_candidates=2, n_uncategorised=0)
    assert list(ms.list_scenes("iTHOR", tmp_path)) == ["FloorPlan7_physics", "FloorPlan3_physics", "MyRoom"]
    assert ms.scene_id_for("iTHOR", "FloorPlan7_physics") == "iTHOR_FloorPlan7"
    assert ms.scene_id_for("ProcTHOR", "2/ProcTHOR-Train-293.scene_instance.json") == "ProcTHOR_Train_293"


def test_missing_files_name_the_dataset_and_the_download_command(tmp_path, monkeypatch):
    monkeypatch.setenv("MS_ASSET_DIR", str(tmp_path / "nowhere"))
    with pytest.raises(ms.ManiSkillAssetsMissing, match=r"download_asset ReplicaCAD"):
        ms.list_scenes("ReplicaCAD")
    written = make_ai2thor_dataset(tmp_path, n_candidates=3, n_uncategorised=0)
    written[0].mesh_path.unlink()
    with pytest.raises(ms.ManiSkillAssetsMissing, match=r"iTHOR.*Chair_1\.glb.*download_asset AI2THOR"):
        ms.load_source_scene("iTHOR", SCENE, tmp_path)
    with pytest.raises(ValueError, match="ReplicaCAD"):
        ms.download_command("Replica")


def test_cli_missing_assets_exit_2(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("MS_ASSET_DIR", str(tmp_path))
    code = main(["scenes", "import-maniskill", "--dataset", "ReplicaCAD", "--out", str(tmp_path / "o")])
    err = capsys.readouterr().err
    assert code == 2
    assert err.count("\n") == 1 and "ReplicaCAD" in err
    assert "python -m mani_skill.utils.download_asset ReplicaCAD" in err
    assert not (tmp_path / "o").exists()


def test_cli_import_writes_scene_dirs_that_register(tmp_path, monkeypatch, capsys):
    import gymnasium as gym

    from spatialscout_gym.envs.registration import register_envs
    from spatialscout_gym.scenes.catalog import scene_by_name

    make_ai2thor_dataset(tmp_path / "assets")
    out = tmp_path / "imported"
    code = main(["scenes", "import-maniskill", "--dataset", "iTHOR", "--targets", "35",
                 "--asset-dir", str(tmp_path / "assets"), "--out", str(out)])
    assert code == 0, capsys.readouterr().err
    d = out / "iTHOR_FloorPlan1"
    spec = SceneSpec.from_json((d / "scene_spec.json").read_text())
    assert json.loads((d / "ground_truth.json").read_text()) == json.loads(json.dumps(spec.ground_truth_dict()))
    public = json.loads((d / "entity_library.json").read_text())
    assert len(public["inventory"]) == 35 and "objects" not in public
    # too few candidates for 40 targets: the scene is skipped with a reason, exit 2
    code = main(["scenes", "import-maniskill", "--dataset", "iTHOR", "--targets", "40",
                 "--asset-dir", str(tmp_path / "assets"), "--out", str(tmp_path / "o40")])
    assert code == 2 and "37 objects with a known non-structural category" in capsys.readouterr().err

    monkeypatch.setenv(ms.SCENE_DIRS_ENV, str(out))
    assert "SpatialScout/iTHOR_FloorPlan1-v0" in register_envs()
    assert gym.spec("SpatialScout/iTHOR_FloorPlan1-v0").kwargs["scene"] == str(d / "scene_spec.json")
    assert scene_by_name("iTHOR_FloorPlan1").content_hash() == spec.content_hash()


def test_a_start_pose_in_the_import_configuration_fixes_the_initial_camera(ai2thor, tmp_path, capsys):
    """A catalog entry fixes its start (position, yaw, pitch); given one, the importer starts there
    and the target rule (nearest candidates first) runs from that pose, not from its own choice."""
    from spatialscout_gym.core.frames import CameraPose
    asset_dir, _, chosen = ai2thor
    cam = chosen.public.initial_camera
    assert chosen.private.source["initial_camera"].startswith("chosen by this package")
    # a start 1.5 m to the side, turned and pitched otherwise
    start = CameraPose(cam.position_world + np.array([1.5, -1.0, 0.0]), cam.yaw_deg + 90.0, -30.0)
    spec = ms.import_scene("iTHOR", SCENE, 35, asset_dir=asset_dir, start_pose=start)
    got = spec.public.initial_camera
    assert np.allclose(got.position_world, start.position_world) and got.pitch_deg == -30.0
    assert got.yaw_deg == pytest.approx(start.yaw_deg) and spec.private.source["initial_camera"] == "import configuration"
    targets = {o.id for o in spec.private.objects if o.role == "target"}
    hidden = [o for o in spec.private.objects if o.role == "hidden"]
    dist = lambda o: float(np.linalg.norm(sum(o.aabb_world) / 2 - start.position_world))  # noqa: E731
    farthest_target = max(dist(o) for o in spec.private.objects if o.id in targets)
    assert hidden and all(dist(h) >= farthest_target for h in hidden)   # nearest to the given start
    assert targets != {o.id for o in chosen.private.objects if o.role == "target"}   # not the importer's pick

    # the same through the CLI's import configuration; a bad entry is one line, exit 2
    poses = tmp_path / "start_poses.json"
    poses.write_text(json.dumps({SCENE: {"position": list(map(float, start.position_world)),
                                         "yaw_deg": start.yaw_deg, "pitch_deg": -30.0}}))
    out = tmp_path / "imported"
    assert main(["scenes", "import-maniskill", "--dataset", "iTHOR", "--targets", "35", "--asset-dir",
                 str(asset_dir), "--out", str(out), "--start-poses", str(poses)]) == 0
    written = SceneSpec.from_json((out / "iTHOR_FloorPlan1" / "scene_spec.json").read_text())
    assert written.content_hash() == spec.content_hash()
    poses.write_text(json.dumps({SCENE: {"position": [0, 0], "yaw_deg": 0, "pitch_deg": 0}}))
    capsys.readouterr()
    assert main(["scenes", "import-maniskill", "--dataset", "iTHOR", "--asset-dir", str(asset_dir),
                 "--out", str(out), "--start-poses", str(poses)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "position must be three finite numbers" in err


@pytest.mark.parametrize("joint", ['<joint name="j"><parent link="base"/></joint>',          # no <child>
                                   '<joint name="j"><parent/><child link="door"/></joint>'])  # <parent> without link
def test_a_urdf_joint_without_its_links_is_one_clear_error(tmp_path, joint):
    from spatialscout_gym.core.errors import ConfigError
    urdf = tmp_path / "broken.urdf"
    urdf.write_text(f'<?xml version="1.0"?><robot name="r"><link name="base"/><link name="door"/>{joint}</robot>')
    with pytest.raises(ConfigError, match=r"broken\.urdf: a URDF <joint> <(child|parent)> element has no 'link'"):
        ms._urdf_rest_visuals(urdf, np.eye(4), 1.0)


@pytest.mark.parametrize("config", ["[]", '{"stage_instance": 5}',
                                    '{"stage_instance": {"template_name": "s"}, "object_instances": [5]}'])
def test_a_scene_config_of_the_wrong_shape_is_one_line(tmp_path, capsys, config):
    """``scene_instance.json`` holding ``[]`` or ``"stage_instance": 5``: the scene is skipped with one
    line naming the file and what is wrong, then exit 2 (a TypeError traceback before)."""
    make_ai2thor_dataset(tmp_path / "assets")
    (path,) = (tmp_path / "assets").rglob(f"{SCENE}.scene_instance.json")
    path.write_text(config)
    code = main(["scenes", "import-maniskill", "--dataset", "iTHOR", "--targets", "35",
                 "--asset-dir", str(tmp_path / "assets"), "--out", str(tmp_path / "o")])
    err = capsys.readouterr().err
    skipped, last = err.strip().splitlines()
    assert code == 2 and "Traceback" not in err and last.startswith("spatialscout: error:"), err[-300:]
    assert skipped.startswith(f"skipped {SCENE}: {path}: ") and "not a habitat scene_instance.json" in skipped
