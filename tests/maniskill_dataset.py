"""Tiny ManiSkill scene datasets made on the spot, in ManiSkill 3.0.1's on-disk layout.

The files and JSON keys are those ManiSkill's scene builders read
(``mani_skill/utils/scene_builder/ai2thor/scene_builder.py`` and ``.../replicacad/scene_builder.py``),
shaped like the real downloads: ``stages/...`` and ``objects/...`` template prefixes, a
``semantic_id`` on every object config, Fetch's navigable positions under their real names
(``<scene>.fetch.navigable_positions.npy`` for AI2-THOR, ``<config stem>.fetch.navigable_positions.obj``
for ReplicaCAD), one ReplicaCAD staging scene, and an articulation with ``uniform_scale`` whose URDF
uses ``package://`` paths and primitive visuals. Meshes are y-up glTF binaries, as in the real
datasets. Each object entry remembers the habitat-convention ``translation``/``rotation`` it was
written with so tests can recompute world boxes with ManiSkill's own formulas (transforms3d),
independently of the adapter.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import trimesh

ROOM_HALF_M = 4.0
WALL_HEIGHT_M = 2.6


@dataclass
class WrittenObject:
    index: int
    template: str
    category: str | None
    """The candidate category: None for an object that can never be a target."""
    mesh_path: Path
    translation: list[float]
    rotation_wxyz: list[float]
    semantic: str | None = None
    """The category the dataset gives it (a structural one for non-candidates, if any)."""


def _write_glb(mesh: trimesh.Trimesh, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(mesh.export(file_type="glb"))
    return path


def room_stage_yup() -> trimesh.Trimesh:
    """Floor slab (top at y = 0), four walls and a ceiling; y up, metres."""
    h, t, H = ROOM_HALF_M, 0.1, WALL_HEIGHT_M
    parts = [trimesh.creation.box([2 * h, t, 2 * h]).apply_translation([0, -t / 2, 0]),
             trimesh.creation.box([2 * h, t, 2 * h]).apply_translation([0, H + t / 2, 0])]
    for sx, sz, cx, cz in [(t, 2 * h, h + t / 2, 0), (t, 2 * h, -h - t / 2, 0),
                           (2 * h, t, 0, h + t / 2), (2 * h, t, 0, -h - t / 2)]:
        parts.append(trimesh.creation.box([sx, H, sz]).apply_translation([cx, H / 2, cz]))
    return trimesh.util.concatenate(parts)


def _templates_yup() -> dict[str, trimesh.Trimesh]:
    """Object meshes in their local y-up frames, resting on y = 0."""
    return {
        "Chair_1": trimesh.creation.box([0.45, 0.9, 0.5]).apply_translation([0, 0.45, 0]),
        "Book_3": trimesh.creation.box([0.2, 0.04, 0.15]).apply_translation([0, 0.02, 0]),
        "Mug_2": trimesh.creation.cylinder(0.05, 0.1, sections=24)
                  .apply_transform(trimesh.transformations.rotation_matrix(np.pi / 2, [1, 0, 0]))
                  .apply_translation([0, 0.05, 0]),
        "Statue_1": trimesh.creation.icosphere(subdivisions=2, radius=0.2).apply_translation([0, 0.2, 0]),
        "Doorframe_7": trimesh.creation.box([0.3, 0.3, 0.3]).apply_translation([0, 0.15, 0]),
    }


_CATEGORY_OF = {"Chair_1": "Chair", "Book_3": "Book", "Mug_2": "Mug", "Statue_1": "Statue",
                "Doorframe_7": None}
_SEMANTIC_OF = {"Chair_1": "Chair", "Book_3": "Book", "Mug_2": "Mug", "Statue_1": "Statue",
                "Doorframe_7": "Doorframe"}
"""As in the real AI2-THOR data every object has a semantic category; a doorframe is the building."""
_SEMANTIC_IDS = {"Chair": 17, "Book": 5, "Mug": 40, "Statue": 63, "Doorframe": 80}


def _yaw_quat_yup(angle_rad: float) -> list[float]:
    """wxyz rotation about the y (up) axis of a y-up asset."""
    return [float(np.cos(angle_rad / 2)), 0.0, float(np.sin(angle_rad / 2)), 0.0]


def _tilted_quat(angle_rad: float) -> list[float]:
    axis = np.array([1.0, 1.0, 0.5]) / np.linalg.norm([1.0, 1.0, 0.5])
    return [float(np.cos(angle_rad / 2)), *map(float, np.sin(angle_rad / 2) * axis)]


def _layout_instances(n_candidates: int, n_uncategorised: int) -> list[tuple[str, list, list]]:
    """Objects on a grid over the floor (habitat coords: x, y up, z), deterministic."""
    cat_templates = ["Chair_1", "Book_3", "Mug_2", "Statue_1"]
    out = []
    grid = [(x, z) for x in np.arange(-3.0, 3.01, 0.75) for z in np.arange(-3.0, 3.01, 0.75)
            if abs(x) > 0.8 or abs(z) > 0.8]  # keep the centre open for the camera
    for k in range(n_candidates + n_uncategorised):
        x, z = grid[(k * 7) % len(grid)]
        template = cat_templates[k % 4] if k < n_candidates else "Doorframe_7"
        rot = _tilted_quat(0.3 + 0.1 * k) if template == "Statue_1" or k % 5 == 3 \
            else _yaw_quat_yup(0.25 * k)
        out.append((template, [float(x), 0.0, float(z)], rot))
    return out


def make_ai2thor_dataset(asset_dir: Path, dataset: str = "iTHOR", scene: str = "FloorPlan1_physics",
                         n_candidates: int = 37, n_uncategorised: int = 2,
                         navigable_xy: np.ndarray | None = None) -> list[WrittenObject]:
    """Write one AI2-THOR-family scene under ``asset_dir`` (ManiSkill's ``ASSET_DIR``); with
    ``navigable_xy`` (M, 2), also Fetch's navigable positions (world x, y; z = 0) beside the config."""
    base = asset_dir / "scene_datasets/ai2thor"
    hab, unc = base / "ai2thor-hab", base / "ai2thorhab-uncompressed"
    (hab / "configs").mkdir(parents=True, exist_ok=True)
    (hab / "configs/object_semantic_id_mapping.json").write_text(json.dumps(_SEMANTIC_IDS))
    _write_glb(room_stage_yup(), hab / "assets/stages" / f"{scene}.glb")
    templates = _templates_yup()
    for name, mesh in templates.items():
        _write_glb(mesh, unc / "assets/objects" / f"{name}.glb")
        cfg = {"render_asset": f"../../assets/objects/{name}.glb",
               "semantic_id": _SEMANTIC_IDS[_SEMANTIC_OF[name]]}
        (unc / "configs/objects").mkdir(parents=True, exist_ok=True)
        (unc / "configs/objects" / f"{name}.object_config.json").write_text(json.dumps(cfg))
    instances, written = [], []
    for index, (template, t, r) in enumerate(_layout_instances(n_candidates, n_uncategorised)):
        instances.append({"template_name": f"objects/{template}", "translation": t, "rotation": r,
                          "motion_type": "STATIC"})
        written.append(WrittenObject(index, f"objects/{template}", _CATEGORY_OF[template],
                                     unc / "assets/objects" / f"{template}.glb", t, r,
                                     _SEMANTIC_OF[template]))
    scene_dir = hab / "configs/scenes" / dataset
    scene_dir.mkdir(parents=True, exist_ok=True)
    (scene_dir / f"{scene}.scene_instance.json").write_text(json.dumps(
        {"stage_instance": {"template_name": f"stages/{scene}"}, "object_instances": instances}))
    if navigable_xy is not None:
        xy = np.asarray(navigable_xy, dtype=float)
        np.save(scene_dir / f"{scene}.fetch.navigable_positions.npy",
                np.column_stack([xy, np.zeros(len(xy))]))
    return written


def make_replicacad_dataset(asset_dir: Path, scene: str = "apt_0", n_candidates: int = 6,
                            n_uncategorised: int = 1, lexicon: bool = True, staging: bool = True,
                            navmesh: bool = True, stage_draco: bool = False) -> list[WrittenObject]:
    """Write one ReplicaCAD scene (a counter, a scaled fridge and a door, which is skipped), with
    the semantic lexicon, one ``v3_sc0_staging_00`` staging scene and the navigation mesh
    ``<scene>.scene_instance.fetch.navigable_positions.obj`` (:data:`NAVMESH_BOX_XY`) unless
    told otherwise; ``stage_draco`` writes the stage Draco-compressed."""
    base = asset_dir / "scene_datasets/replica_cad_dataset"
    stage_path = base / "stages/frl_apartment_stage.glb"
    stage_path.parent.mkdir(parents=True, exist_ok=True)
    stage_path.write_bytes(room_stage_yup().export(file_type="glb", extension_draco=stage_draco))
    if lexicon:
        classes = {"classes": [{"name": "chair", "id": 17}, {"name": "book", "id": 5},
                               {"name": "mug", "id": 40}, {"name": "statue", "id": 63}]}
        (base / "configs/ssd").mkdir(parents=True, exist_ok=True)
        (base / "configs/ssd/replicaCAD_semantic_lexicon.json").write_text(json.dumps(classes))
    templates = _templates_yup()
    (base / "configs/objects").mkdir(parents=True, exist_ok=True)
    for name, mesh in templates.items():
        rc_name = f"frl_apartment_{name.lower()}"
        _write_glb(mesh, base / "objects" / f"{rc_name}.glb")
        cat = _CATEGORY_OF[name]
        cfg = {"render_asset": f"../../objects/{rc_name}.glb",
               "collision_asset": f"../../objects/{rc_name}.glb",
               "semantic_id": _SEMANTIC_IDS[cat] if cat else 0}  # 0: the lexicon's "unknown"
        (base / "configs/objects" / f"{rc_name}.object_config.json").write_text(json.dumps(cfg))
    instances, written = [], []
    for index, (template, t, r) in enumerate(_layout_instances(n_candidates, n_uncategorised)):
        rc_name = f"frl_apartment_{template.lower()}"
        instances.append({"template_name": f"objects/{rc_name}", "translation": t, "rotation": r,
                          "motion_type": "DYNAMIC" if index % 2 else "STATIC"})
        written.append(WrittenObject(index, f"objects/{rc_name}", _CATEGORY_OF[template],
                                     base / "objects" / f"{rc_name}.glb", t, r, _CATEGORY_OF[template]))
    scenes = base / "configs/scenes"
    scenes.mkdir(parents=True, exist_ok=True)
    config = {"stage_instance": {"template_name": "stages/frl_apartment_stage"},
              "object_instances": instances,
              "articulated_object_instances": [
                  {"template_name": "counter", "translation": COUNTER_TRANSLATION,
                   "rotation": [1, 0, 0, 0], "fixed_base": True},
                  {"template_name": "fridge", "translation": FRIDGE_TRANSLATION,
                   "rotation": [1, 0, 0, 0], "fixed_base": True, "uniform_scale": FRIDGE_SCALE},
                  {"template_name": "door1", "translation": [0, 0, 0], "rotation": [1, 0, 0, 0],
                   "fixed_base": True}]}
    (scenes / f"{scene}.scene_instance.json").write_text(json.dumps(config))
    if staging:
        (scenes / "v3_sc0_staging_00.scene_instance.json").write_text(json.dumps(config))
    if navmesh:
        (x0, y0), (x1, y1) = NAVMESH_BOX_XY  # world z-up, as ManiSkill writes these files
        verts = np.array([[x0, y0, 0], [x1, y0, 0], [x1, y1, 0], [x0, y1, 0]], dtype=float)
        trimesh.Trimesh(verts, [[0, 1, 2], [0, 2, 3]], process=False).export(
            scenes / f"{scene}.scene_instance.fetch.navigable_positions.obj")
    _write_counter_urdf(base / "urdf/counter")
    _write_fridge_urdf(base / "urdf/fridge")
    return written


NAVMESH_BOX_XY = ((-3.0, 0.6), (3.0, 3.9))
"""The navigation mesh's free floor, world x and y (metres): two triangles; its corners are the
mesh's only vertices, and the one at (3.0, 3.9) lies 0.1 m from the wall."""
FRIDGE_TRANSLATION = [-2.0, 0.0, 3.0]
"""Where the scaled fridge stands (habitat coords: x, y up, z)."""
FRIDGE_SCALE = 0.5
"""The fridge's ``uniform_scale``."""
FRIDGE_BODY_SIZE = (0.8, 1.8, 0.7)
"""The fridge body's URDF box, metres before scale (y up)."""


def _write_fridge_urdf(d: Path) -> None:
    """A URDF with a ``package://`` mesh (the handle) and primitive visuals (box body, cylinder
    hinge, sphere knob, capsule rail)."""
    _write_glb(trimesh.creation.box([0.05, 0.4, 0.05]), d / "meshes/handle.glb")
    sx, sy, sz = FRIDGE_BODY_SIZE
    (d / "fridge.urdf").write_text(f"""<?xml version="1.0"?>
<robot name="fridge">
  <link name="body">
    <visual><origin xyz="0 {sy / 2} 0"/><geometry><box size="{sx} {sy} {sz}"/></geometry></visual>
    <visual><origin xyz="{sx / 2} {sy / 2} {sz / 2}"/>
      <geometry><cylinder radius="0.02" length="1.6"/></geometry></visual>
    <visual><origin xyz="0 {sy + 0.05} 0"/><geometry><sphere radius="0.05"/></geometry></visual>
    <visual><origin xyz="0 0.1 {sz / 2}" rpy="0 1.5708 0"/>
      <geometry><capsule radius="0.03" length="0.5"/></geometry></visual>
  </link>
  <link name="door">
    <visual><origin xyz="-0.3 {sy / 2} {sz / 2 + 0.05}"/>
      <geometry><mesh filename="package://fridge/meshes/handle.glb"/></geometry></visual>
  </link>
  <joint name="hinge" type="revolute"><parent link="body"/><child link="door"/>
    <origin xyz="0 0 0" rpy="0 0 0"/><axis xyz="0 1 0"/><limit lower="0" upper="1.5"/></joint>
</robot>
""")


COUNTER_TRANSLATION = [1.0, 0.0, 2.0]
"""Where the articulated counter stands (habitat coords: x, y up, z)."""
COUNTER_DRAWER_OFFSET = [0.0, 0.5, 0.3]
"""The drawer link's joint origin relative to the body link (y up), metres."""


def _write_counter_urdf(d: Path) -> None:
    """A two-link URDF: a 1 x 0.9 x 0.6 m body and a 0.4 m drawer on a prismatic joint."""
    _write_glb(trimesh.creation.box([1.0, 0.9, 0.6]).apply_translation([0, 0.45, 0]), d / "body.glb")
    _write_glb(trimesh.creation.box([0.4, 0.2, 0.4]), d / "drawer.glb")
    x, y, z = COUNTER_DRAWER_OFFSET
    (d / "counter.urdf").write_text(f"""<?xml version="1.0"?>
<robot name="counter">
  <link name="body"><visual><geometry><mesh filename="body.glb"/></geometry></visual></link>
  <link name="drawer"><visual><origin xyz="0 0 0" rpy="0 0 0"/>
    <geometry><mesh filename="drawer.glb" scale="1 1 1"/></geometry></visual></link>
  <joint name="slide" type="prismatic"><parent link="body"/><child link="drawer"/>
    <origin xyz="{x} {y} {z}" rpy="0 0 0"/><axis xyz="0 0 1"/><limit lower="0" upper="0.3"/></joint>
</robot>
""")


def scenes_cli(argv: list[str]) -> int:
    """``spatialscout`` with only the ``scenes`` command (other commands' modules are not needed)."""
    from spatialscout_gym.cli import main as cli_main
    saved = cli_main.COMMANDS
    cli_main.COMMANDS = ("scenes",)
    try:
        return cli_main.main(argv)
    finally:
        cli_main.COMMANDS = saved
