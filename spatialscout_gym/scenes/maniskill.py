"""The paper's own scene sources: ManiSkill3's AI2-THOR family and ReplicaCAD datasets as SceneSpecs
(docs/protocol.md sections 2 and 8; docs/architecture.md "ManiSkill3 is the door to the paper's real scene sources").

The paper renders iTHOR, RoboTHOR, ArchitecTHOR, ProcTHOR and ReplicaCAD scenes with SAPIEN through
ManiSkill3's scene builders. This module reads the same datasets from the user's ManiSkill asset
directory and turns one scene into a :class:`~spatialscout_gym.core.spec.SceneSpec`:

1. **Source scene** (:func:`load_source_scene`): the files and pose conventions of ManiSkill's
   builders (``mani_skill/utils/scene_builder/ai2thor/scene_builder.py`` and
   ``.../replicacad/scene_builder.py``, ManiSkill 3.0.1), restated in numpy so that an asset
   directory can be passed explicitly (ManiSkill fixes ``ASSET_DIR`` at import):

   ============  ==================================================================================
   AI2-THOR      scene ``<A>/scene_datasets/ai2thor/ai2thor-hab/configs/scenes/<Dataset>/<cfg>``;
                 stage ``ai2thor-hab/assets/<stage template>.glb`` posed by ``Rx(90)``
                 (ProcTHOR: ``Rx(90) * R(-y, 90)``); object ``ai2thorhab-uncompressed/assets/<t>.glb``
                 at ``p = (tx, -tz, ty)``, ``q = Rx(90) * q_instance``; its category is
                 ``object_semantic_id_mapping.json`` looked up with the ``semantic_id`` of
                 ``ai2thorhab-uncompressed/configs/<t>.object_config.json``.
   ReplicaCAD    scene ``<A>/scene_datasets/replica_cad_dataset/configs/scenes/<name>``;
                 stage ``stages/<basename(stage template)>.glb`` posed by ``Rx(90)``; object config
                 ``configs/objects/<basename(t)>.object_config.json`` (``render_asset``,
                 ``semantic_id``) at ``Rx(90) * Pose(translation, rotation)``; categories from
                 ``configs/ssd/replicaCAD_semantic_lexicon.json``. Articulated objects
                 (``urdf/<t>/<t>.urdf``: kitchen counter, fridge, cabinets; doors skipped as
                 ManiSkill does) become static structure at joint positions 0 (links posed by
                 their joint origins), never candidates.
   ============  ==================================================================================

   ``<A>`` is ``$MS_ASSET_DIR/data`` or ManiSkill's default ``~/.maniskill/data``. Quaternions are
   (w, x, y, z). The world is z up, metres, as in ManiSkill. Objects keep the dataset's placement
   (ManiSkill additionally lifts the few kinds it simulates by 5 mm before physics settles them;
   there is no physics here).
2. **World AABBs**: every object's visual mesh is loaded with trimesh (node transforms applied,
   as SAPIEN does), posed, and boxed (docs/protocol.md section 2).
3. **Initial camera** (:func:`choose_initial_camera`): a navigable floor point near the scene's
   centre (the median of the objects' box centres), at eye height, facing the largest number of
   candidates it can see past the stage's walls; deterministic (no randomness at all).
4. **Targets** (:func:`select_targets`, docs/protocol.md section 8): candidates are objects with a known
   semantic category; ordered by distance from the initial camera to their box centre, id order
   breaking ties; the first N are targets and the other candidates are hidden. Objects without a
   known category stay as rendered, non-target structure.

Mesh parts keep the dataset file in ``path`` (rendered with the file's own materials: the material
``texture`` is ``{"kind": "file"}``) and carry, inline, an 8-vertex proxy: the corners of the
object's world AABB in its local frame, so ``SceneObject.aabb_world`` is the exact box without
reading the file again.

Nothing here imports ``mani_skill`` at module import; its installed package is only read for the
scene lists (``.../ai2thor/metadata/<Dataset>.json``, ``.../replicacad/metadata/scene_configs.json``)
when it is installed, and trimesh is imported where meshes are loaded.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import re
import warnings
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import numpy as np

from spatialscout_gym.core.camera import Intrinsics
from spatialscout_gym.core.errors import ConfigError, SpatialScoutError, install_command
from spatialscout_gym.core.frames import CameraPose, quat_mul as _qmul, quat_to_matrix as _qmat
from spatialscout_gym.core.run_files import SCENE_SPEC_FILE
from spatialscout_gym.core.spec import Light, Material, Part, Role, SceneObject, SceneSpec

__all__ = ["missing_scene_dirs",
    "DATASETS", "DatasetLayout", "ManiSkillAssetsMissing", "SourceObject", "SourceScene",
    "SourceStructure", "PrimitiveMesh", "ManiSkillDataWarning", "STRUCTURAL_CATEGORIES",
    "maniskill_asset_dir", "download_command", "list_scenes", "load_source_scene",
    "choose_initial_camera", "select_targets", "spec_from_source", "import_scene", "read_start_poses", "scene_id_for",
    "imported_scene_dirs", "imported_scene_paths", "FILE_MATERIAL",
    "EYE_HEIGHT_M", "INITIAL_PITCH_DEG", "SCENE_DIRS_ENV", "default_intrinsics",
]

EYE_HEIGHT_M = 1.5
"""Initial camera height above the floor under it, metres."""
INITIAL_PITCH_DEG = -15.0
"""Initial camera pitch, degrees (negative looks down): tables and counters come into view."""
CLEARANCE_M = 0.35
"""Horizontal clearance of the initial camera from furniture boxes, metres."""
GRID_STEP_M = 0.25
"""Spacing of the floor grid searched for the initial camera when the dataset ships no
navigable positions, metres."""
N_CAMERA_SITES = 16
"""How many valid floor points nearest the scene centre compete for the initial camera."""
YAW_STEP_DEG = 15.0
MAX_VIEW_M = 10.0
STRUCTURAL_CATEGORIES = frozenset({
    "Floor", "Wall", "Ceiling", "Doorway", "Doorframe", "Door", "Stairs", "Room", "Stage",
    "Background", "Unknown"})
"""Semantic categories that are the building rather than an object in it. The paper's target rule
(docs/protocol.md section 8) takes every object with a known semantic category as a candidate; the
real datasets give every object a category (ManiSkill's AI2-THOR builder has no fallback), so the
building's own parts are named here and stay static, rendered structure, never candidates."""
SCENE_DIRS_ENV = "SPATIALSCOUT_SCENE_DIRS"
"""Environment variable: ``os.pathsep``-separated directories of imported scenes (each holding
``<scene_id>/scene_spec.json``); registration and ``scene_by_name`` read it."""

FILE_MATERIAL = Material(base_color=(1.0, 1.0, 1.0, 1.0), texture={"kind": "file"})
"""Marks a ``path`` mesh part to be drawn with its mesh file's own materials and textures."""

_Q_X90 = np.array([np.cos(np.pi / 4), np.sin(np.pi / 4), 0.0, 0.0])
"""Rotation by +90 degrees about x, wxyz: ManiSkill's y-up-asset to z-up-world conversion."""
_BOX_FACES = np.array([[0, 2, 1], [1, 2, 3], [4, 5, 6], [5, 7, 6], [0, 1, 4], [1, 5, 4],
                       [2, 6, 3], [3, 6, 7], [0, 4, 2], [2, 4, 6], [1, 3, 5], [3, 7, 5]])
"""Triangles of the 8 corners ordered by bits (x = bit 0, y = bit 1, z = bit 2), outward."""


@dataclass(frozen=True)
class DatasetLayout:
    """Where one ManiSkill scene dataset lives under the asset directory.

    Attributes
    ----------
    name : str
        Dataset name as ManiSkill spells it (``iTHOR``, ``ReplicaCAD``, ...).
    family : {"ai2thor", "replicacad"}
        Which builder's conventions apply.
    download_id : str
        The id ``python -m mani_skill.utils.download_asset`` takes.
    scene_config_dir : str
        Scene instance configs, relative to the asset directory.
    metadata : str
        ManiSkill's scene list inside the installed ``mani_skill`` package.
    layout : str
        ``"room"`` or ``"apartment"``: what the dataset's scenes mostly are.
    """

    name: str
    family: Literal["ai2thor", "replicacad"]
    download_id: str
    scene_config_dir: str
    metadata: str
    layout: str


_AI2 = "scene_datasets/ai2thor"
_RCAD = "scene_datasets/replica_cad_dataset"
DATASETS: dict[str, DatasetLayout] = {d.name: d for d in [
    DatasetLayout("iTHOR", "ai2thor", "AI2THOR", f"{_AI2}/ai2thor-hab/configs/scenes/iTHOR",
                  "utils/scene_builder/ai2thor/metadata/iTHOR.json", "room"),
    DatasetLayout("RoboTHOR", "ai2thor", "AI2THOR", f"{_AI2}/ai2thor-hab/configs/scenes/RoboTHOR",
                  "utils/scene_builder/ai2thor/metadata/RoboTHOR.json", "apartment"),
    DatasetLayout("ArchitecTHOR", "ai2thor", "AI2THOR",
                  f"{_AI2}/ai2thor-hab/configs/scenes/ArchitecTHOR",
                  "utils/scene_builder/ai2thor/metadata/ArchitecTHOR.json", "apartment"),
    DatasetLayout("ProcTHOR", "ai2thor", "AI2THOR", f"{_AI2}/ai2thor-hab/configs/scenes/ProcTHOR",
                  "utils/scene_builder/ai2thor/metadata/ProcTHOR.json", "apartment"),
    DatasetLayout("ReplicaCAD", "replicacad", "ReplicaCAD", f"{_RCAD}/configs/scenes",
                  "utils/scene_builder/replicacad/metadata/scene_configs.json", "apartment"),
]}
_SCENE_SUFFIX = ".scene_instance.json"


class ManiSkillAssetsMissing(SpatialScoutError, FileNotFoundError):
    """A ManiSkill scene dataset (or one of its files) is not in the asset directory."""

    def __init__(self, dataset: str, missing: Path, asset_dir: Path):
        self.dataset, self.missing, self.asset_dir = dataset, missing, asset_dir
        super().__init__(
            f"ManiSkill dataset {dataset} not found: expected {missing} under the ManiSkill asset "
            f"directory {asset_dir} (set MS_ASSET_DIR to use another one). Download it with: "
            f"{download_command(dataset)}")


def maniskill_asset_dir(asset_dir: str | os.PathLike | None = None) -> Path:
    """ManiSkill's data directory: ``asset_dir`` if given, else ``$MS_ASSET_DIR/data``, else
    ``~/.maniskill/data`` (the rule of ``mani_skill.ASSET_DIR``)."""
    if asset_dir is not None:
        return Path(asset_dir).expanduser()
    root = os.getenv("MS_ASSET_DIR", os.path.join(os.path.expanduser("~"), ".maniskill"))
    return Path(root) / "data"


def _layout(dataset: str) -> DatasetLayout:
    try:
        return DATASETS[dataset]
    except KeyError:
        raise ValueError(f"unknown ManiSkill scene dataset {dataset!r}; expected one of "
                         f"{', '.join(DATASETS)}") from None


def download_command(dataset: str) -> str:
    """The shell command that downloads ``dataset`` into ManiSkill's asset directory."""
    return f"python -m mani_skill.utils.download_asset {_layout(dataset).download_id}"


def _maniskill_scene_list(layout: DatasetLayout, include_staging: bool = False) -> list[str] | None:
    """ManiSkill's own ordered scene list for the dataset (ReplicaCAD's ``staging_scenes`` after
    its ``scenes`` when ``include_staging``), or None when mani_skill is absent."""
    spec = importlib.util.find_spec("mani_skill")  # finds the package without importing it
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(list(spec.submodule_search_locations)[0]) / layout.metadata
    if not path.is_file():
        return None
    meta = json.loads(path.read_text())
    return [str(s) for s in meta["scenes"] + (meta.get("staging_scenes", []) if include_staging else [])]


def _scene_stem(config: str) -> str:
    name = Path(config).name
    return name[: -len(_SCENE_SUFFIX)] if name.endswith(_SCENE_SUFFIX) else Path(name).stem


_STAGING = re.compile(r"^v3_sc\d+_staging_\d+$")
"""ReplicaCAD's staging scenes (``v3_sc<k>_staging_<nn>``), which ManiSkill loads only on request."""


def list_scenes(dataset: str, asset_dir: str | os.PathLike | None = None, *,
                include_staging: bool = False) -> dict[str, str]:
    """The dataset's scenes present on disk: ``{scene name: config path relative to the scene
    config directory}``, in ManiSkill's metadata order when mani_skill is installed (then any
    other configs found on disk, sorted).

    ReplicaCAD's 84 ``v3_sc*_staging_*`` scenes are left out unless ``include_staging`` (as
    ManiSkill's ``ReplicaCADSceneBuilder(include_staging_scenes=False)``). One directory walk and
    one set build the index, so listing ProcTHOR's ~12,000 configs takes about a second.

    Raises
    ------
    ManiSkillAssetsMissing
        When the dataset's scene config directory does not exist.
    """
    layout, root = _layout(dataset), maniskill_asset_dir(asset_dir)
    config_dir = root / layout.scene_config_dir
    if not config_dir.is_dir():
        raise ManiSkillAssetsMissing(dataset, config_dir, root)
    on_disk = sorted(p.relative_to(config_dir).as_posix() for p in config_dir.rglob(f"*{_SCENE_SUFFIX}"))
    present = set(on_disk)
    ordered: list[str] = []
    for cfg in _maniskill_scene_list(layout, include_staging) or []:
        rel = Path(cfg).as_posix().removeprefix("./")
        if rel in present:
            ordered.append(rel)
    listed = set(ordered)
    ordered += [r for r in on_disk if r not in listed]
    if not include_staging:
        ordered = [r for r in ordered if not _STAGING.match(_scene_stem(r))]
    return {_scene_stem(r): r for r in ordered}


def scene_id_for(dataset: str, scene: str) -> str:
    """Our scene id, ``[A-Za-z0-9_]+``: e.g. ``iTHOR_FloorPlan7``, ``ReplicaCAD_apt_0``,
    ``ProcTHOR_Train_293`` (the ``_physics`` suffix and a repeated dataset prefix are dropped)."""
    stem = re.sub(r"_physics$", "", _scene_stem(scene))
    stem = re.sub(r"[^A-Za-z0-9_]+", "_", stem).strip("_")
    stem = re.sub(rf"^{re.escape(dataset)}_", "", stem)
    return f"{dataset}_{stem}"


# ---- rigid transforms (wxyz quaternions) ---------------------------------------------------------
def _qaxis(axis, angle_rad: float) -> np.ndarray:
    a = np.asarray(axis, dtype=float) / np.linalg.norm(axis)
    return np.concatenate([[np.cos(angle_rad / 2)], np.sin(angle_rad / 2) * a])


def _pose(p, q) -> np.ndarray:
    """Homogeneous (4, 4) transform from a position (3,) and a wxyz quaternion (4,)."""
    T = np.eye(4)
    T[:3, :3] = _qmat(q)
    T[:3, 3] = np.asarray(p, dtype=float)
    return T


def _mat_to_wxyz(R: np.ndarray) -> np.ndarray:
    from scipy.spatial.transform import Rotation

    x, y, z, w = Rotation.from_matrix(R).as_quat()
    q = np.array([w, x, y, z])
    return q if q[0] >= 0 else -q


@dataclass(frozen=True)
class PrimitiveMesh:
    """A URDF geometric primitive as a triangle mesh in its visual frame (metres, before scale)."""

    kind: str
    vertices: np.ndarray
    faces: np.ndarray


class ManiSkillDataWarning(UserWarning):
    """Something in a dataset differs from what ManiSkill's release ships; the import goes on."""


# ---- the source scene ---------------------------------------------------------------------------
@dataclass
class SourceObject:
    """One object instance of a dataset scene, posed in the world (z up, metres).

    Attributes
    ----------
    index : int
        Position in the scene config's ``object_instances``.
    template : str
        The instance's ``template_name``.
    category : str or None
        Semantic category (AI2-THOR spelling), None when the dataset gives no known one. A
        category in :data:`STRUCTURAL_CATEGORIES` is the building, never a candidate.
    mesh_path : Path
        The visual mesh file.
    T_world_obj : ndarray, shape (4, 4)
        World-from-object transform applied to the mesh file's vertices.
    movable : bool
        ReplicaCAD's ``motion_type == "DYNAMIC"``; False for AI2-THOR (informational only).
    box_min, box_max : ndarray, shape (3,)
        World AABB of the posed mesh, metres.
    """

    index: int
    template: str
    category: str | None
    mesh_path: Path
    T_world_obj: np.ndarray
    movable: bool
    box_min: np.ndarray
    box_max: np.ndarray

    @property
    def center_world(self) -> np.ndarray:
        return (self.box_min + self.box_max) / 2

    @property
    def is_candidate(self) -> bool:
        """docs/protocol.md section 8: a known semantic category that is not the building."""
        return self.category is not None and self.category not in STRUCTURAL_CATEGORIES


@dataclass
class SourceScene:
    """A dataset scene as ManiSkill's builder would load it (geometry only, no physics).

    ``stage_triangles_world`` (F, 3, 3) are the stage's triangles in the world, used to find a
    floor point and lines of sight; ``navigable_xy`` (M, 2) are the dataset's navigable positions
    when it ships them (ManiSkill's ``*.fetch.navigable_positions.*`` files), else None; for a
    navigation mesh (ReplicaCAD's ``.obj``) ``navigable_triangles_xy`` (F, 3, 2) holds its
    triangles, whose interiors are the free floor (its vertices lie on the edge of free space).
    """

    dataset: str
    name: str
    config_path: Path
    asset_dir: Path
    stage_path: Path
    T_world_stage: np.ndarray
    stage_box: tuple[np.ndarray, np.ndarray]
    stage_triangles_world: np.ndarray
    objects: list[SourceObject]
    lights: list[Light]
    ambient_light: tuple[float, float, float] = (0.3, 0.3, 0.3)
    navigable_xy: np.ndarray | None = None
    navigable_triangles_xy: np.ndarray | None = None
    skipped: dict = field(default_factory=dict)
    structures: list["SourceStructure"] = field(default_factory=list)


@dataclass
class SourceStructure:
    """Static structure built from several meshes (a ReplicaCAD articulated object at rest).

    ``visuals`` holds ``(mesh, T_world_mesh (4, 4), scale (3,), box_min (3,), box_max (3,))``,
    ``mesh`` a mesh file's path or a :class:`PrimitiveMesh` (a URDF box, cylinder, sphere or
    capsule).
    """

    name: str
    visuals: list[tuple[Path | PrimitiveMesh, np.ndarray, np.ndarray, np.ndarray, np.ndarray]]

    @property
    def box(self) -> tuple[np.ndarray, np.ndarray]:
        return (np.min([v[3] for v in self.visuals], axis=0), np.max([v[4] for v in self.visuals], axis=0))


def _require(dataset: str, path: Path, root: Path) -> Path:
    if not path.exists():
        raise ManiSkillAssetsMissing(dataset, path, root)
    return path


def _load_mesh(path: Path, cache: dict):
    """``(vertices (V, 3), faces (F, 3))`` of a mesh file with its node transforms applied."""
    key = str(path)
    if key not in cache:
        import trimesh  # only the adapter needs it

        if _draco_compressed(path) and importlib.util.find_spec("DracoPy") is None:
            raise ImportError(f"{path} is Draco-compressed (KHR_draco_mesh_compression) and DracoPy is "
                              f"not installed; install the maniskill extra: {install_command('maniskill')}")
        loaded = trimesh.load(key, force="mesh", process=False)
        v = np.asarray(getattr(loaded, "vertices", np.zeros((0, 3))), dtype=float).reshape(-1, 3)
        f = np.asarray(getattr(loaded, "faces", np.zeros((0, 3))), dtype=np.int64).reshape(-1, 3)
        cache[key] = (v, f)
    return cache[key]


def _draco_compressed(path: Path) -> bool:
    """Whether a glTF binary's JSON chunk names ``KHR_draco_mesh_compression``."""
    if path.suffix.lower() != ".glb":
        return False
    with open(path, "rb") as f:
        head = f.read(20)
        if len(head) < 20 or head[:4] != b"glTF":
            return False
        length = int.from_bytes(head[12:16], "little")
        return b"KHR_draco_mesh_compression" in f.read(length)


def _world_vertices(v: np.ndarray, T: np.ndarray) -> np.ndarray:
    return v @ T[:3, :3].T + T[:3, 3]


def _category_name(raw: str) -> str:
    """``"kitchen utensil"`` or ``"kitchen_utensil"`` -> ``"KitchenUtensil"``; AI2-THOR names
    (already CamelCase) are unchanged."""
    words = [w for w in re.split(r"[\s_\-]+", raw.strip()) if w]
    return "".join(w[:1].upper() + w[1:] for w in words)


def _scene_config(path: Path) -> dict:
    """A ``*.scene_instance.json`` with the shape the adapter reads: an object whose
    ``stage_instance`` is an object naming its ``template_name``, and whose ``object_instances``
    are objects with a ``template_name``, a ``translation`` (3 numbers) and a ``rotation`` (4
    numbers); :class:`ConfigError` naming the file and the first field that is not."""
    def bad(what: str) -> ConfigError:
        return ConfigError(f"{path}: {what}; not a habitat scene_instance.json (re-download the dataset)")

    try:
        cfg = json.loads(path.read_text())
    except (ValueError, RecursionError) as exc:
        raise bad(f"not valid JSON ({type(exc).__name__})") from None
    if not isinstance(cfg, dict):
        raise bad(f"expected a JSON object, found {type(cfg).__name__}")
    stage = cfg.get("stage_instance")
    if not isinstance(stage, dict) or not isinstance(stage.get("template_name"), str):
        raise bad("'stage_instance' must be an object with a 'template_name' string")
    insts = cfg.get("object_instances", [])
    if not isinstance(insts, list):
        raise bad(f"'object_instances' must be a list, found {type(insts).__name__}")
    for k, inst in enumerate(insts):
        if not (isinstance(inst, dict) and isinstance(inst.get("template_name"), str)
                and _numbers(inst.get("translation"), 3) and _numbers(inst.get("rotation"), 4)):
            raise bad(f"object_instances[{k}] must be an object with a 'template_name' string, a 'translation' "
                      "of 3 numbers and a 'rotation' of 4")
    return cfg


def _numbers(x: object, n: int) -> bool:
    return (isinstance(x, list) and len(x) == n
            and all(isinstance(v, (int, float)) and not isinstance(v, bool) and np.isfinite(v) for v in x))


def _ai2thor_scene(layout, root, rel, cache) -> tuple:
    base = root / _AI2
    cfg_path = _require(layout.name, root / layout.scene_config_dir / rel, root)
    cfg = _scene_config(cfg_path)
    mapping_path = _require(layout.name, base / "ai2thor-hab/configs/object_semantic_id_mapping.json", root)
    id_to_category = {int(v): str(k) for k, v in json.loads(mapping_path.read_text()).items()}
    stage_path = _require(layout.name,
                          base / "ai2thor-hab/assets" / f"{cfg['stage_instance']['template_name']}.glb", root)
    q_stage = _Q_X90
    if layout.name == "ProcTHOR":  # ManiSkill: ProcTHOR stages need a further -90 deg about y
        q_stage = _qmul(_Q_X90, _qaxis([0, -1, 0], np.deg2rad(90)))
    objects = []
    for index, inst in enumerate(cfg.get("object_instances", [])):
        template = inst["template_name"]
        obj_cfg_path = _require(layout.name, base / "ai2thorhab-uncompressed/configs"
                                / f"{template}.object_config.json", root)
        semantic_id = json.loads(obj_cfg_path.read_text()).get("semantic_id")
        category = id_to_category.get(int(semantic_id)) if semantic_id is not None else None
        mesh = _require(layout.name, base / "ai2thorhab-uncompressed/assets" / f"{template}.glb", root)
        t, r = inst["translation"], inst["rotation"]
        T = _pose([t[0], -t[2], t[1]], _qmul(_Q_X90, [r[0], r[1], r[2], r[-1]]))
        objects.append((index, template, category, mesh, T, False))
    lights = [Light("directional", (1.0, 1.0, 1.0), direction_world=np.array([1.0, 1.0, -1.0])),
              Light("directional", (1.0, 1.0, 1.0), direction_world=np.array([0.0, 0.0, -1.0]))]
    nav = None  # ManiSkill: <dataset dir>/<scene>.<robot>.navigable_positions.npy (Fetch's)
    npy = root / layout.scene_config_dir / f"{_scene_stem(rel)}.fetch.navigable_positions.npy"
    if npy.is_file():
        arr = np.asarray(np.load(npy), dtype=float)
        nav = arr.reshape(-1, arr.shape[-1])[:, :2]
    return cfg_path, stage_path, _pose(np.zeros(3), q_stage), objects, lights, (nav, None), {}, []


def _replicacad_scene(layout, root, rel, cache) -> tuple:
    base = root / _RCAD
    cfg_path = _require(layout.name, root / layout.scene_config_dir / rel, root)
    cfg = _scene_config(cfg_path)
    lexicon_path = base / "configs/ssd/replicaCAD_semantic_lexicon.json"
    id_to_category: dict[int, str] | None = None
    if lexicon_path.is_file():
        id_to_category = {int(c["id"]): _category_name(str(c["name"]))
                          for c in json.loads(lexicon_path.read_text()).get("classes", [])}
    else:
        warnings.warn(f"ReplicaCAD: {lexicon_path} is missing; categories are taken from the "
                      f"template names (frl_apartment_<class>_NN)", ManiSkillDataWarning, stacklevel=3)
    stage_name = os.path.basename(cfg["stage_instance"]["template_name"])
    stage_path = _require(layout.name, base / "stages" / f"{stage_name}.glb", root)
    T_x90 = _pose(np.zeros(3), _Q_X90)
    objects = []
    for index, inst in enumerate(cfg.get("object_instances", [])):
        template = inst["template_name"]
        obj_cfg_path = _require(layout.name, base / "configs/objects"
                                / f"{os.path.basename(template)}.object_config.json", root)
        obj_cfg = json.loads(obj_cfg_path.read_text())
        mesh = _require(layout.name, obj_cfg_path.parent / obj_cfg["render_asset"], root)
        semantic_id = obj_cfg.get("semantic_id")
        if id_to_category is None:
            category = _replicacad_template_category(template)
        else:
            category = id_to_category.get(int(semantic_id)) if semantic_id not in (None, 0) else None
        T = T_x90 @ _pose(inst["translation"], inst["rotation"])
        objects.append((index, template, category, mesh, T, inst.get("motion_type") == "DYNAMIC"))
    r, g, b = (float(c) for c in np.array([1.0, 0.8, 0.5]) * 2)
    color = (r, g, b)
    lights = [Light("point", color, position_world=np.array(p, dtype=float)) for p in
              ([-1.1, 2.775, 2.3], [-0.5, -1.44, 2.3], [2.4, -1.6, 2.3], [2.5, -6.1, 2.3], [3.14, 3.24, 3])]
    nav, nav_tris = None, None  # ManiSkill: configs/scenes/<Path(config).stem>.fetch.navigable_positions.obj
    obj_nav = root / layout.scene_config_dir / f"{Path(rel).stem}.fetch.navigable_positions.obj"
    if obj_nav.is_file():
        v, f = _load_mesh(obj_nav, cache)
        nav = v[:, :2]
        nav_tris = v[f][:, :, :2] if len(f) else None
    structures, skipped_doors = [], []
    for k, art in enumerate(cfg.get("articulated_object_instances", [])):
        template = art["template_name"]
        if "door" in template:  # as ManiSkill's builder
            skipped_doors.append(template)
            continue
        urdf = _require(layout.name, base / "urdf" / template / f"{template}.urdf", root)
        T = T_x90 @ _pose(art["translation"], art["rotation"])
        visuals = _urdf_rest_visuals(urdf, T, float(art.get("uniform_scale", 1.0)))
        structures.append((f"{template}_{k}", visuals))
    skipped = {"doors": sorted(skipped_doors)} if skipped_doors else {}
    return cfg_path, stage_path, T_x90, objects, lights, (nav, nav_tris), skipped, structures


def _replicacad_template_category(template: str) -> str | None:
    """``objects/frl_apartment_chair_01`` -> ``Chair``: the class in a ReplicaCAD template name."""
    m = re.fullmatch(r"frl_apartment_(.+?)(?:_\d+)?", os.path.basename(template))
    return _category_name(m.group(1)) if m else None


def _rpy_matrix(rpy) -> np.ndarray:
    """URDF fixed-axis roll, pitch, yaw: ``Rz(yaw) Ry(pitch) Rx(roll)``."""
    r, p, y = rpy
    qx, qy, qz = _qaxis([1, 0, 0], r), _qaxis([0, 1, 0], p), _qaxis([0, 0, 1], y)
    return _qmat(_qmul(qz, _qmul(qy, qx)))


def _urdf_origin(el: ET.Element | None, scale: float) -> np.ndarray:
    T = np.eye(4)
    if el is not None:
        T[:3, :3] = _rpy_matrix([float(x) for x in el.get("rpy", "0 0 0").split()])
        T[:3, 3] = [float(x) * scale for x in el.get("xyz", "0 0 0").split()]
    return T


def _urdf_attr(urdf: Path, el: ET.Element, name: str, child: str | None = None) -> str:
    """Attribute ``name`` of ``el`` (or of its ``child`` element); :class:`ConfigError` (one line
    naming the file) when the URDF lacks it."""
    holder = el if child is None else el.find(child)
    value = None if holder is None else holder.get(name)
    if value is None:
        where = f"<{el.tag}>" + ("" if child is None else f" <{child}>")
        raise ConfigError(f"{urdf}: a URDF {where} element has no {name!r} attribute")
    return value


def _urdf_rest_visuals(urdf: Path, T_world_root: np.ndarray, scale: float) \
        -> list[tuple[Path | PrimitiveMesh, np.ndarray, np.ndarray]]:
    """``(mesh path or primitive, T_world_mesh, scale (3,))`` of every visual with all joints at 0."""
    robot = ET.parse(urdf).getroot()
    parent_of = {_urdf_attr(urdf, j, "link", "child"): (_urdf_attr(urdf, j, "link", "parent"),
                                                       _urdf_origin(j.find("origin"), scale))
                 for j in robot.findall("joint")}

    def link_pose(name: str, depth: int = 0) -> np.ndarray:
        if name not in parent_of or depth > 100:
            return T_world_root
        parent, T_joint = parent_of[name]
        return link_pose(parent, depth + 1) @ T_joint

    out: list[tuple[Path | PrimitiveMesh, np.ndarray, np.ndarray]] = []
    for link in robot.findall("link"):
        for vis in link.findall("visual"):
            geometry = vis.find("geometry")
            if geometry is None:
                continue
            T = link_pose(_urdf_attr(urdf, link, "name")) @ _urdf_origin(vis.find("origin"), scale)
            mesh = geometry.find("mesh")
            if mesh is not None:
                s = np.array([float(x) for x in mesh.get("scale", "1 1 1").split()]) * scale
                out.append((_urdf_mesh_path(urdf, _urdf_attr(urdf, mesh, "filename")), T, s))
                continue
            primitive = _urdf_primitive(geometry)
            if primitive is not None:
                out.append((primitive, T, np.full(3, float(scale))))
    return out


def _urdf_mesh_path(urdf: Path, filename: str) -> Path:
    """A URDF mesh ``filename`` as SAPIEN's URDF loader resolves it: ``package://<pkg>/rest`` and
    ``file://`` prefixes dropped, relative to the URDF's folder."""
    name = filename
    if name.startswith("package://"):
        name = name[len("package://"):].split("/", 1)[-1]
    elif name.startswith("file://"):
        name = name[len("file://"):]
    return (urdf.parent / name).resolve()


def _urdf_primitive(geometry) -> PrimitiveMesh | None:
    """A URDF ``box``/``cylinder``/``sphere``/``capsule`` as a triangle mesh (cylinders and
    capsules along z, as URDF defines them), or None for anything else."""
    import trimesh

    box, cyl, sph, cap = (geometry.find(k) for k in ("box", "cylinder", "sphere", "capsule"))
    if box is not None:
        m, kind = trimesh.creation.box([float(x) for x in box.get("size").split()]), "box"
    elif cyl is not None:
        m, kind = trimesh.creation.cylinder(float(cyl.get("radius")), float(cyl.get("length")),
                                            sections=24), "cylinder"
    elif sph is not None:
        m, kind = trimesh.creation.icosphere(subdivisions=2, radius=float(sph.get("radius"))), "sphere"
    elif cap is not None:
        m, kind = trimesh.creation.capsule(height=float(cap.get("length")),
                                           radius=float(cap.get("radius")), count=[12, 12]), "capsule"
    else:
        return None
    return PrimitiveMesh(kind, np.asarray(m.vertices, dtype=float), np.asarray(m.faces, dtype=np.int64))


def load_source_scene(dataset: str, scene: str, asset_dir: str | os.PathLike | None = None,
                      mesh_cache: dict | None = None, *, scenes: dict[str, str] | None = None) -> SourceScene:
    """Read one dataset scene with ManiSkill's builder conventions (see the module docstring).

    Parameters
    ----------
    dataset : str
        A key of :data:`DATASETS`.
    scene : str
        A scene name from :func:`list_scenes` (e.g. ``FloorPlan7_physics``, ``apt_0``).
    asset_dir : path, optional
        ManiSkill's data directory; default :func:`maniskill_asset_dir`.
    mesh_cache : dict, optional
        ``{path: (vertices, faces)}`` shared across scenes (templates repeat).
    scenes : dict, optional
        The dataset's index from :func:`list_scenes`, when importing many scenes (listing again
        for every scene would walk the whole config tree each time).

    Raises
    ------
    ManiSkillAssetsMissing
        When a config or mesh file the scene needs is absent.
    KeyError
        When ``scene`` is not one of the dataset's scenes.
    """
    layout, root = _layout(dataset), maniskill_asset_dir(asset_dir)
    if scenes is None:
        scenes = list_scenes(dataset, root, include_staging=True)
    if scene not in scenes:
        raise KeyError(f"{dataset} has no scene {scene!r} in {root / layout.scene_config_dir}; "
                       f"found {len(scenes)}: {', '.join(list(scenes)[:8])}{' ...' if len(scenes) > 8 else ''}")
    cache = {} if mesh_cache is None else mesh_cache
    reader = _ai2thor_scene if layout.family == "ai2thor" else _replicacad_scene
    cfg_path, stage_path, T_stage, raw, lights, (nav, nav_tris), skipped, *more = \
        reader(layout, root, scenes[scene], cache)
    sv, sf = _load_mesh(stage_path, cache)
    stage_world = _world_vertices(sv, T_stage)
    if len(sv) == 0:
        raise ValueError(f"{dataset} scene {scene}: stage mesh {stage_path} has no vertices")
    objects, no_geometry = [], []
    for index, template, category, mesh, T, movable in raw:
        v, _ = _load_mesh(mesh, cache)
        if len(v) == 0:  # docs/protocol.md section 8: candidates must have rendered geometry
            no_geometry.append(template)
            continue
        w = _world_vertices(v, T)
        objects.append(SourceObject(index, template, category, mesh, T, movable, w.min(0), w.max(0)))
    if no_geometry:
        skipped["no_geometry"] = sorted(no_geometry)
    structures = []
    for name, visuals in (more[0] if more else []):
        boxed = []
        for path, T, s in visuals:
            v = path.vertices if isinstance(path, PrimitiveMesh) else \
                _load_mesh(_require(dataset, path, root), cache)[0]
            if len(v):
                w = _world_vertices(v * s, T)
                boxed.append((path, T, s, w.min(0), w.max(0)))
        if boxed:
            structures.append(SourceStructure(name, boxed))
    return SourceScene(dataset, scene, cfg_path, root, stage_path, T_stage,
                       (stage_world.min(0), stage_world.max(0)), stage_world[sf], objects, lights,
                       navigable_xy=nav, navigable_triangles_xy=nav_tris, skipped=skipped,
                       structures=structures)


# ---- geometry queries on the stage --------------------------------------------------------------
def _segment_hits(origin: np.ndarray, end: np.ndarray, tris: np.ndarray,
                  tri_min: np.ndarray, tri_max: np.ndarray) -> np.ndarray:
    """Parameters ``t`` in (0, 1) where the segment ``origin -> end`` crosses triangles (F, 3, 3)
    (Moller-Trumbore), after culling triangles whose boxes miss the segment's box."""
    lo, hi = np.minimum(origin, end) - 1e-9, np.maximum(origin, end) + 1e-9
    keep = np.all((tri_max >= lo) & (tri_min <= hi), axis=1)
    t3 = tris[keep]
    if len(t3) == 0:
        return np.zeros(0)
    d = end - origin
    v0, e1, e2 = t3[:, 0], t3[:, 1] - t3[:, 0], t3[:, 2] - t3[:, 0]
    p = np.cross(d, e2)
    det = np.einsum("ij,ij->i", e1, p)
    ok = np.abs(det) > 1e-12
    inv = np.where(ok, 1.0 / np.where(ok, det, 1.0), 0.0)
    s = origin - v0
    u = np.einsum("ij,ij->i", s, p) * inv
    q = np.cross(s, e1)
    v = (q @ d) * inv
    t = np.einsum("ij,ij->i", e2, q) * inv
    hit = ok & (u >= 0) & (v >= 0) & (u + v <= 1) & (t > 0) & (t < 1)
    return np.sort(t[hit])


@dataclass
class _Stage:
    tris: np.ndarray
    tri_min: np.ndarray
    tri_max: np.ndarray
    z_lo: float
    z_hi: float

    @classmethod
    def of(cls, source: SourceScene) -> "_Stage":
        t = source.stage_triangles_world
        return cls(t, t.min(axis=1), t.max(axis=1), float(source.stage_box[0][2]) - 1.0,
                   float(source.stage_box[1][2]) + 1.0)

    def floor_z(self, xy: np.ndarray) -> float | None:
        """Height of the floor's top surface under ``xy`` (the lowest stage surface and any within
        0.3 m above it, i.e. a floor slab), or None when the vertical line misses the stage."""
        top, bottom = np.array([xy[0], xy[1], self.z_hi]), np.array([xy[0], xy[1], self.z_lo])
        t = _segment_hits(top, bottom, self.tris, self.tri_min, self.tri_max)
        if len(t) == 0:
            return None
        z = self.z_hi + t * (self.z_lo - self.z_hi)
        return float(z[z <= z.min() + 0.3].max())

    def column_clear(self, xy: np.ndarray, z0: float, z1: float) -> bool:
        """No stage surface between heights ``z0`` and ``z1`` above ``xy``."""
        t = _segment_hits(np.array([xy[0], xy[1], z0]), np.array([xy[0], xy[1], z1]),
                          self.tris, self.tri_min, self.tri_max)
        return len(t) == 0

    def sees(self, a: np.ndarray, b: np.ndarray) -> bool:
        """No stage surface on the segment from ``a`` to 5 cm short of ``b``."""
        d = b - a
        n = float(np.linalg.norm(d))
        if n < 1e-6:
            return True
        end = a + d * max(0.0, (n - 0.05) / n)
        return len(_segment_hits(a, end, self.tris, self.tri_min, self.tri_max)) == 0


def _xy_distance_to_boxes(xy: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """Horizontal distance from ``xy`` (2,) to each box footprint (N,), 0 inside."""
    gap = np.maximum(np.maximum(lo[:, :2] - xy, xy - hi[:, :2]), 0.0)
    return np.linalg.norm(gap, axis=1)


def _in_view(points: np.ndarray, pose: CameraPose, intrinsics: Intrinsics) -> np.ndarray:
    """Which world points (N, 3) project inside the image and lie 0.3-10 m ahead of the camera."""
    rel = (points - pose.position_world) @ pose.R_world_cam  # (forward, left, up)
    fwd = rel[:, 0]
    with np.errstate(divide="ignore", invalid="ignore"):
        u = intrinsics.cx - intrinsics.fx * rel[:, 1] / fwd
        v = intrinsics.cy - intrinsics.fy * rel[:, 2] / fwd
    return ((fwd > 0.3) & (np.linalg.norm(rel, axis=1) < MAX_VIEW_M) & (u >= -0.5)
            & (u <= intrinsics.width - 0.5) & (v >= -0.5) & (v <= intrinsics.height - 0.5))


def choose_initial_camera(source: SourceScene, intrinsics: Intrinsics, *,
                          eye_height_m: float = EYE_HEIGHT_M,
                          pitch_deg: float = INITIAL_PITCH_DEG) -> CameraPose:
    """A navigable eye-height pose near the scene's centre facing the most visible candidates.

    Sites are the dataset's navigable positions (for a navigation mesh: the ``GRID_STEP_M`` grid
    points and triangle centroids inside its triangles, since its vertices lie on the edge of
    free space), or else a ``GRID_STEP_M`` floor grid centred on the scene centre (median of the
    objects' box centres, xy). A site is valid when a floor lies
    under it, no stage surface is between 5 cm above the floor and 20 cm above the eye (not in a
    wall or under a stair), and every furniture box reaching into that column is at least
    ``CLEARANCE_M`` away horizontally. Of the ``N_CAMERA_SITES`` valid sites nearest the centre,
    and yaws every ``YAW_STEP_DEG``, the pose whose image contains the most candidate box centres
    in line of sight past the stage wins; ties go to the site nearer the centre, then the smaller
    yaw. Deterministic.

    Returns
    -------
    CameraPose
        World position (eye height above the floor found under it), yaw, ``pitch_deg``.

    Raises
    ------
    ValueError
        When no valid site exists (the scene has no open floor).
    """
    stage = _Stage.of(source)
    lo = np.array([o.box_min for o in source.objects]).reshape(-1, 3)
    hi = np.array([o.box_max for o in source.objects]).reshape(-1, 3)
    centers = (lo + hi) / 2
    if source.structures:  # furniture from articulated objects blocks the camera too
        lo = np.concatenate([lo, [st.box[0] for st in source.structures]])
        hi = np.concatenate([hi, [st.box[1] for st in source.structures]])
    centre_xy = np.median(centers[:, :2], axis=0) if len(centers) else \
        (source.stage_box[0][:2] + source.stage_box[1][:2]) / 2
    if source.navigable_triangles_xy is not None and len(source.navigable_triangles_xy):
        sites = _navmesh_sites(np.asarray(source.navigable_triangles_xy, dtype=float), centre_xy)
    elif source.navigable_xy is not None and len(source.navigable_xy):
        sites = np.asarray(source.navigable_xy, dtype=float)
    else:
        slo, shi = source.stage_box[0][:2], source.stage_box[1][:2]
        nx0, nx1 = np.floor((slo - centre_xy) / GRID_STEP_M), np.ceil((shi - centre_xy) / GRID_STEP_M)
        gx = centre_xy[0] + GRID_STEP_M * np.arange(nx0[0], nx1[0] + 1)
        gy = centre_xy[1] + GRID_STEP_M * np.arange(nx0[1], nx1[1] + 1)
        sites = np.stack(np.meshgrid(gx, gy, indexing="ij"), axis=-1).reshape(-1, 2)
    order = np.lexsort((sites[:, 1], sites[:, 0], np.round(np.linalg.norm(sites - centre_xy, axis=1), 9)))
    valid: list[np.ndarray] = []
    for xy in sites[order]:
        floor = stage.floor_z(xy)
        if floor is None:
            continue
        eye = floor + eye_height_m
        if not stage.column_clear(xy, floor + 0.05, eye + 0.2):
            continue
        blocking = (hi[:, 2] > floor + 0.1) & (lo[:, 2] < eye + 0.2)
        if np.any(_xy_distance_to_boxes(xy, lo[blocking], hi[blocking]) < CLEARANCE_M):
            continue
        valid.append(np.array([xy[0], xy[1], eye]))
        if len(valid) >= N_CAMERA_SITES:
            break
    if not valid:
        raise ValueError(f"{source.dataset} scene {source.name}: found no open floor point for the "
                         f"initial camera (checked {len(sites)} sites)")
    cand = np.array([o.is_candidate for o in source.objects], dtype=bool)
    cand_centers = centers[cand]
    best, best_key = None, None
    for rank, eye_point in enumerate(valid):
        seen = np.array([stage.sees(eye_point, c) for c in cand_centers], dtype=bool)
        for k in range(int(round(360.0 / YAW_STEP_DEG))):
            pose = CameraPose(eye_point, k * YAW_STEP_DEG, pitch_deg)
            count = int(np.count_nonzero(seen & _in_view(cand_centers, pose, intrinsics))) \
                if len(cand_centers) else 0
            key = (-count, rank, k)
            if best_key is None or key < best_key:
                best, best_key = pose, key
    assert best is not None     # ``valid`` is not empty and each of its points tries every yaw
    return best


def _navmesh_sites(tris: np.ndarray, centre_xy: np.ndarray) -> np.ndarray:
    """Grid points (``GRID_STEP_M``, aligned to ``centre_xy``) strictly inside a navmesh triangle
    (F, 3, 2), and every triangle's centroid; (M, 2) metres."""
    lo, hi = tris.reshape(-1, 2).min(0), tris.reshape(-1, 2).max(0)
    n0, n1 = np.floor((lo - centre_xy) / GRID_STEP_M), np.ceil((hi - centre_xy) / GRID_STEP_M)
    gx = centre_xy[0] + GRID_STEP_M * np.arange(n0[0], n1[0] + 1)
    gy = centre_xy[1] + GRID_STEP_M * np.arange(n0[1], n1[1] + 1)
    grid = np.stack(np.meshgrid(gx, gy, indexing="ij"), axis=-1).reshape(-1, 2)
    a, b, c = tris[:, 0], tris[:, 1], tris[:, 2]
    den = (b[:, 1] - c[:, 1]) * (a[:, 0] - c[:, 0]) + (c[:, 0] - b[:, 0]) * (a[:, 1] - c[:, 1])
    keep = np.abs(den) > 1e-12  # degenerate triangles hold no floor
    a, b, c, den = a[keep], b[keep], c[keep], den[keep]
    inside = np.zeros(len(grid), dtype=bool)
    for start in range(0, len(grid), 2048):  # bounded memory: 2048 points x F triangles at a time
        g = grid[start:start + 2048, None, :]
        l1 = ((b[:, 1] - c[:, 1]) * (g[..., 0] - c[:, 0]) + (c[:, 0] - b[:, 0]) * (g[..., 1] - c[:, 1])) / den
        l2 = ((c[:, 1] - a[:, 1]) * (g[..., 0] - c[:, 0]) + (a[:, 0] - c[:, 0]) * (g[..., 1] - c[:, 1])) / den
        inside[start:start + 2048] = np.any((l1 > 1e-9) & (l2 > 1e-9) & (1 - l1 - l2 > 1e-9), axis=1)
    return np.concatenate([grid[inside], (a + b + c) / 3])


def select_targets(source: SourceScene, camera: CameraPose, n_targets: int) -> tuple[list[int], list[int]]:
    """docs/protocol.md section 8: candidates (a known category that is not in
    :data:`STRUCTURAL_CATEGORIES`) by distance to the initial camera.

    Returns
    -------
    targets, hidden : list of int
        Indices into ``source.objects``: the first ``n_targets`` candidates ordered by distance
        from ``camera.position_world`` to their box centre (ties broken by object id order), and
        the remaining candidates.

    Raises
    ------
    ValueError
        When the scene has fewer than ``n_targets`` candidates.
    """
    ids = _object_ids(source)
    cands = [i for i, o in enumerate(source.objects) if o.is_candidate]
    if len(cands) < n_targets:
        raise ValueError(f"{source.dataset} scene {source.name} has {len(cands)} objects with a known "
                         f"non-structural category; {n_targets} targets were requested (use --targets 35 or pick "
                         f"another scene)")
    dist = {i: float(np.linalg.norm(source.objects[i].center_world - camera.position_world)) for i in cands}
    ordered = sorted(cands, key=lambda i: (round(dist[i], 9), ids[i]))
    return ordered[:n_targets], ordered[n_targets:]


def _object_ids(source: SourceScene) -> list[str]:
    """``<Category>_<index>`` (``Object_<index>`` without a category); index = position in the
    scene config, zero-padded so string order is index order within a category."""
    width = max(3, len(str(max((o.index for o in source.objects), default=0))))
    return [f"{o.category or 'Object'}_{o.index:0{width}d}" for o in source.objects]


def _mesh_part(path: Path | PrimitiveMesh, T: np.ndarray, box: tuple[np.ndarray, np.ndarray],
               scale: np.ndarray | None = None) -> Part:
    """A ``path`` mesh part posed by ``T`` (and scaled by ``scale``) with the 8-corner box proxy
    inline (module docstring); a URDF primitive becomes an inline mesh part (its own triangles,
    the default material)."""
    if isinstance(path, PrimitiveMesh):
        v = path.vertices * (1.0 if scale is None else np.asarray(scale, dtype=float))
        return Part("mesh", T[:3, 3].copy(), _mat_to_wxyz(T[:3, :3]), vertices=np.round(v, 6),
                    faces=path.faces.copy())
    bits = np.array([[(k >> a) & 1 for a in range(3)] for k in range(8)], dtype=float)
    corners_world = box[0] + bits * (box[1] - box[0])
    local = (corners_world - T[:3, 3]) @ T[:3, :3]
    if scale is not None:
        local = local / np.asarray(scale, dtype=float)
    local = np.round(local, 6)  # what Part.to_dict keeps, so a reloaded spec is identical (<= 1 um)
    return Part("mesh", T[:3, 3].copy(), _mat_to_wxyz(T[:3, :3]), vertices=local,
                faces=_BOX_FACES.copy(), path=str(Path(path).resolve()),
                scale=None if scale is None else np.asarray(scale, dtype=float), material=FILE_MATERIAL)


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def default_intrinsics() -> Intrinsics:
    """The catalog scenes' intrinsics (``scenes.procedural``: 512 x 512, same field of view)."""
    from spatialscout_gym.scenes.procedural import FOV_Y_DEG, IMAGE_SIZE

    return Intrinsics.from_fov(IMAGE_SIZE, IMAGE_SIZE, FOV_Y_DEG)


def spec_from_source(source: SourceScene, n_targets: int = 40, *, intrinsics: Intrinsics | None = None,
                     camera: CameraPose | None = None) -> SceneSpec:
    """Assemble the SceneSpec: stage, structural and uncategorised objects static, targets and hidden
    candidates by :func:`select_targets` from the initial camera: ``camera`` when given (a start
    pose fixed by the import configuration, e.g. a catalog entry's), else the one
    :func:`choose_initial_camera` picks. The spec's ``source`` records which.

    Groups are categories (docs/protocol.md section 1: instances of a category are interchangeable).
    """
    if n_targets <= 0:
        raise ValueError(f"n_targets must be positive, got {n_targets}")
    intrinsics = intrinsics or default_intrinsics()
    start = "import configuration" if camera is not None else "chosen by this package (choose_initial_camera)"
    camera = camera or choose_initial_camera(source, intrinsics)
    targets, hidden = select_targets(source, camera, n_targets)
    role_of: dict[int, Role] = {i: "target" for i in targets}
    role_of.update((i, "hidden") for i in hidden)
    ids = _object_ids(source)
    stage = SceneObject("stage", "Structure", "Structure", "static",
                        [_mesh_part(source.stage_path, source.T_world_stage, source.stage_box)],
                        movable=False)
    objects = [stage]
    for i, o in enumerate(source.objects):
        objects.append(SceneObject(ids[i], o.category or "Object", o.category or "Object",
                                   role_of.get(i, "static"),
                                   [_mesh_part(o.mesh_path, o.T_world_obj, (o.box_min, o.box_max))],
                                   movable=o.movable))
    for st in source.structures:
        objects.append(SceneObject(f"Structure_{re.sub(r'[^A-Za-z0-9_]+', '_', st.name)}", "Structure",
                                   "Structure", "static", [_mesh_part(p, T, (lo, hi), s)
                                                           for p, T, s, lo, hi in st.visuals],
                                   movable=False))
    target_objects = [objects[1 + i] for i in targets]  # inventory in selection order
    others = [ob for ob in objects if ob.role != "target"]
    layout = DATASETS[source.dataset]
    return SceneSpec.from_objects(
        scene_id_for(source.dataset, source.name), target_objects + others, camera, intrinsics,
        source.lights, ambient_light=source.ambient_light,
        source={"generator": "maniskill", "dataset": source.dataset, "scene": source.name,
                "config": str(source.config_path), "config_sha256": _sha256(source.config_path),
                "asset_dir": str(source.asset_dir), "n_targets": n_targets,
                "skipped": source.skipped, "initial_camera": start},
        description={"layout": layout.layout, "source": f"ManiSkill3 {source.dataset}",
                     "source_scene": source.name})


def import_scene(dataset: str, scene: str, n_targets: int = 40, *,
                 asset_dir: str | os.PathLike | None = None, mesh_cache: dict | None = None,
                 scenes: dict[str, str] | None = None, start_pose: CameraPose | None = None) -> SceneSpec:
    """:func:`load_source_scene` then :func:`spec_from_source`; ``start_pose`` (world frame of the
    imported scene) fixes the initial camera, and the target rule then runs from it."""
    return spec_from_source(load_source_scene(dataset, scene, asset_dir, mesh_cache, scenes=scenes),
                            n_targets, camera=start_pose)


def read_start_poses(path: str | os.PathLike) -> dict[str, CameraPose]:
    """Per-scene start poses of an import configuration: a JSON object ``{scene name: {"position":
    [x, y, z], "yaw_deg": yaw, "pitch_deg": pitch}}``: the camera position in the imported scene's
    world frame (metres, z up, as the importer poses the dataset), the heading (degrees,
    counter-clockwise from +x seen from above) and the pitch (degrees, negative looks down; within
    +-85). A scene the file does not name gets the camera this package chooses.

    Raises
    ------
    ValueError
        A file that is not such an object, naming the entry and what is wrong (one line).
    """
    import math
    try:
        raw = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ValueError(f"start poses {path}: cannot read it as JSON ({exc})") from None
    if not isinstance(raw, dict):
        raise ValueError(f"start poses {path}: expected an object {{scene name: pose}}, got {type(raw).__name__}")
    poses: dict[str, CameraPose] = {}
    for name, pose in raw.items():
        where = f"start poses {path}, scene {name!r}"
        if not isinstance(pose, dict) or set(pose) != {"position", "yaw_deg", "pitch_deg"}:
            raise ValueError(f"{where}: expected exactly the keys position, yaw_deg, pitch_deg")
        pos, yaw, pitch = pose["position"], pose["yaw_deg"], pose["pitch_deg"]
        numbers = [*(pos if isinstance(pos, list) else []), yaw, pitch]
        if (not isinstance(pos, list) or len(pos) != 3
                or not all(isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
                           for v in numbers)):
            raise ValueError(f"{where}: position must be three finite numbers (metres) and yaw_deg, pitch_deg "
                             "finite numbers (degrees)")
        if abs(pitch) > 85.0:
            raise ValueError(f"{where}: pitch_deg {pitch} is outside [-85, 85] (docs/protocol.md section 4)")
        poses[str(name)] = CameraPose(np.asarray(pos, float), float(yaw), float(pitch))
    return poses


# ---- imported scene directories (registration and scene_by_name read these) ----------------------
def imported_scene_dirs() -> list[Path]:
    """The directories named by ``$SPATIALSCOUT_SCENE_DIRS`` (``os.pathsep``-separated)."""
    raw = os.environ.get(SCENE_DIRS_ENV, "")
    return [Path(p).expanduser() for p in raw.split(os.pathsep) if p.strip()]


def missing_scene_dirs() -> list[Path]:
    """The entries of ``$SPATIALSCOUT_SCENE_DIRS`` that are not directories (reported, not ignored,
    wherever a scene name is not found)."""
    return [p for p in imported_scene_dirs() if not p.is_dir()]


def imported_scene_paths() -> dict[str, Path]:
    """``{scene_id: .../<scene_id>/scene_spec.json}`` for every imported scene found (first
    directory wins on duplicates). Reads directory listings only, so it is cheap at import."""
    found: dict[str, Path] = {}
    for root in imported_scene_dirs():
        if not root.is_dir():
            continue
        for sub in sorted(root.iterdir()):
            path = sub / SCENE_SPEC_FILE
            if path.is_file() and re.fullmatch(r"[A-Za-z0-9_]+", sub.name):
                found.setdefault(sub.name, path)
    return found
