"""Scene specifications: a public half an agent may see and a private half only the evaluator,
the renderer and privileged baselines read (docs/architecture.md "Public and private halves").

* :class:`PublicScene`: inventory, initial camera, intrinsics, search radius (docs/protocol.md sections 1-3).
  Written as ``entity_library.json``.
* :class:`PrivateScene`: the task frame, every target's world AABB and task-frame centre, the full
  renderable geometry (targets, hidden candidates, furniture, rooms) and the lights. Its target
  table is written as ``ground_truth.json`` in the scorer's format.

Geometry is a list of :class:`SceneObject`, each a list of :class:`Part` primitives placed in the
world frame (z up, metres). Every object's ``box_min``/``box_max`` is the world AABB of its parts,
which is the reference box of docs/protocol.md section 2 when the object is a target.

Part shapes (local frame, then ``quat_wxyz`` and ``position_world``):

================  ===========================================================================
``box``           ``half_size`` (3,): half extents along local x, y, z
``cylinder``      ``radius``, ``half_length``: axis along local **x** (SAPIEN's convention)
``capsule``       ``radius``, ``half_length``: axis along local x, hemispherical caps beyond it
``sphere``        ``radius``
``mesh``          ``vertices`` (V, 3) and ``faces`` (F, 3) inline, or ``path`` to a mesh file;
                  ``scale`` (3,) applies to either
================  ===========================================================================

A :class:`Material` has an RGBA ``base_color`` (linear 0-1), ``roughness``, ``metallic`` and an
optional procedural ``texture`` (``{"kind": str, "seed": int, ...}``) that the renderer turns into
an image in code; nothing is downloaded.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from spatialscout_gym.core import exact
from spatialscout_gym.core.camera import Intrinsics
from spatialscout_gym.core.frames import CameraPose, TaskFrame, quat_to_matrix
from spatialscout_gym.core.types import natural_number

__all__ = ["InventoryEntry", "Material", "Part", "SceneObject", "Light", "TargetBox",
           "PublicScene", "PrivateScene", "SceneSpec", "canonical_json", "part_world_aabb"]

SPEC_FORMAT_VERSION = 1

Shape = Literal["box", "cylinder", "capsule", "sphere", "mesh"]
Role = Literal["target", "hidden", "static"]


def natural_key(text: str) -> tuple:
    """Sort key that orders digit runs by value: ``natural_key("Mug_2") < natural_key("Mug_10")``."""
    return tuple((0, n, "") if (n := natural_number(part)) is not None else (1, 0, part)
                 for part in re.split(r"([0-9]+)", text) if part)


def canonical_json(obj: Any) -> str:
    """Deterministic JSON (sorted keys, no spaces, floats rounded to 1e-9) for content hashes."""
    def norm(x: Any) -> Any:
        if isinstance(x, float):
            r = round(x, 9)
            return 0.0 if r == 0 else r
        if isinstance(x, (np.floating,)):
            return norm(float(x))
        if isinstance(x, (np.integer,)):
            return int(x)
        if isinstance(x, np.ndarray):
            return norm(x.tolist())
        if isinstance(x, dict):
            return {str(k): norm(v) for k, v in x.items()}
        if isinstance(x, (list, tuple)):
            return [norm(v) for v in x]
        return x
    return json.dumps(norm(obj), sort_keys=True, separators=(",", ":"))


def _floats(x: Any) -> list[float]:
    return [float(v) for v in np.asarray(x, dtype=float).ravel()]


@dataclass(frozen=True)
class InventoryEntry:
    """One line of the public inventory (docs/protocol.md section 1)."""

    id: str
    category: str
    group: str

    def to_dict(self) -> dict:
        return {"id": self.id, "category": self.category, "group": self.group}


@dataclass
class Material:
    base_color: tuple[float, float, float, float] = (0.8, 0.8, 0.8, 1.0)
    roughness: float = 0.8
    metallic: float = 0.0
    texture: dict | None = None
    """Procedural texture parameters, e.g. ``{"kind": "wood", "seed": 3}``; None for flat colour."""

    def to_dict(self) -> dict:
        d = {"base_color": _floats(self.base_color), "roughness": float(self.roughness),
             "metallic": float(self.metallic)}
        if self.texture is not None:
            d["texture"] = self.texture
        return d

    @classmethod
    def from_dict(cls, d: dict) -> "Material":
        return cls(tuple(d["base_color"]), d.get("roughness", 0.8), d.get("metallic", 0.0),
                   d.get("texture"))


@dataclass
class Part:
    """One visual primitive of an object, posed in the world frame (see module docstring)."""

    shape: Shape
    position_world: np.ndarray
    quat_wxyz: np.ndarray = field(default_factory=lambda: np.array([1.0, 0.0, 0.0, 0.0]))
    half_size: np.ndarray | None = None
    radius: float | None = None
    half_length: float | None = None
    vertices: np.ndarray | None = None
    faces: np.ndarray | None = None
    path: str | None = None
    scale: np.ndarray | None = None
    material: Material = field(default_factory=Material)

    def to_dict(self) -> dict:
        d: dict[str, Any] = {"shape": self.shape, "position_world": _floats(self.position_world),
                             "quat_wxyz": _floats(self.quat_wxyz), "material": self.material.to_dict()}
        if self.half_size is not None:
            d["half_size"] = _floats(self.half_size)
        if self.radius is not None:
            d["radius"] = float(self.radius)
        if self.half_length is not None:
            d["half_length"] = float(self.half_length)
        if self.vertices is not None:
            d["vertices"] = np.round(np.asarray(self.vertices, dtype=float), 6).tolist()
        if self.faces is not None:
            d["faces"] = np.asarray(self.faces, dtype=int).tolist()
        if self.path is not None:
            d["path"] = self.path
        if self.scale is not None:
            d["scale"] = _floats(self.scale)
        return d

    @classmethod
    def from_dict(cls, d: dict) -> "Part":
        def arr(key: str, dtype=float):
            return None if key not in d else np.asarray(d[key], dtype=dtype)
        return cls(d["shape"], arr("position_world"), arr("quat_wxyz"), arr("half_size"),
                   d.get("radius"), d.get("half_length"), arr("vertices"), arr("faces", int),
                   d.get("path"), arr("scale"), Material.from_dict(d["material"]))


def part_world_aabb(part: Part) -> tuple[np.ndarray, np.ndarray]:
    """Exact world AABB of a part, metres: ``(box_min, box_max)``, each shape (3,).

    Mesh parts given by ``path`` need their vertices loaded first (the ManiSkill adapter does);
    they raise ``ValueError`` here.
    """
    R = quat_to_matrix(part.quat_wxyz)
    c = np.asarray(part.position_world, dtype=float)
    if part.shape == "box":
        assert part.half_size is not None
        ext = exact.matvec(np.abs(R), part.half_size)
    elif part.shape == "sphere":
        assert part.radius is not None
        ext = np.full(3, float(part.radius))
    elif part.shape in ("cylinder", "capsule"):
        axis = R[:, 0]
        assert part.radius is not None and part.half_length is not None
        r, h = float(part.radius), float(part.half_length)
        if part.shape == "capsule":
            ext = np.abs(axis) * h + r
        else:  # disc extent perpendicular to the axis: r * sqrt(1 - a_i^2)
            ext = np.abs(axis) * h + r * np.sqrt(np.clip(1.0 - axis ** 2, 0.0, 1.0))
    elif part.shape == "mesh":
        if part.vertices is None:
            raise ValueError("mesh part has no inline vertices; load them before computing its AABB")
        v = np.asarray(part.vertices, dtype=float)
        if part.scale is not None:
            v = v * np.asarray(part.scale, dtype=float)
        w = exact.rows_times(v, R.T) + c
        return w.min(axis=0), w.max(axis=0)
    else:
        raise ValueError(f"unknown part shape {part.shape!r}; expected box, cylinder, capsule, sphere or mesh")
    return c - ext, c + ext


@dataclass
class SceneObject:
    """A renderable object: a target, a hidden candidate, or static structure/furniture."""

    id: str
    category: str
    group: str
    role: Role
    parts: list[Part]
    movable: bool = True
    room: str = ""

    @property
    def aabb_world(self) -> tuple[np.ndarray, np.ndarray]:
        """World AABB of all parts, ``(box_min, box_max)``, metres."""
        boxes = [part_world_aabb(p) for p in self.parts]
        return (np.min([b[0] for b in boxes], axis=0), np.max([b[1] for b in boxes], axis=0))

    def to_dict(self) -> dict:
        return {"id": self.id, "category": self.category, "group": self.group, "role": self.role,
                "movable": self.movable, "room": self.room, "parts": [p.to_dict() for p in self.parts]}

    @classmethod
    def from_dict(cls, d: dict) -> "SceneObject":
        return cls(d["id"], d["category"], d["group"], d["role"],
                   [Part.from_dict(p) for p in d["parts"]], d.get("movable", True), d.get("room", ""))


@dataclass
class Light:
    """``kind`` is ``"point"`` (``position_world``) or ``"directional"`` (``direction_world``);
    ``color`` is linear RGB intensity."""

    kind: Literal["point", "directional"]
    color: tuple[float, float, float]
    position_world: np.ndarray | None = None
    direction_world: np.ndarray | None = None
    shadow: bool = False

    def to_dict(self) -> dict:
        d: dict[str, Any] = {"kind": self.kind, "color": _floats(self.color), "shadow": self.shadow}
        if self.position_world is not None:
            d["position_world"] = _floats(self.position_world)
        if self.direction_world is not None:
            d["direction_world"] = _floats(self.direction_world)
        return d

    @classmethod
    def from_dict(cls, d: dict) -> "Light":
        return cls(d["kind"], tuple(d["color"]),
                   None if "position_world" not in d else np.asarray(d["position_world"], float),
                   None if "direction_world" not in d else np.asarray(d["direction_world"], float),
                   bool(d.get("shadow", False)))


@dataclass(frozen=True)
class TargetBox:
    """A target's reference box (docs/protocol.md section 2): world AABB and task-frame centre, metres."""

    id: str
    category: str
    group: str
    center_task: np.ndarray
    box_min: np.ndarray
    box_max: np.ndarray

    @property
    def size(self) -> np.ndarray:
        """Side lengths along the world axes, metres, shape (3,)."""
        return self.box_max - self.box_min

    def to_dict(self) -> dict:
        return {"id": self.id, "category": self.category, "group": self.group,
                "center": _floats(self.center_task), "box_min": _floats(self.box_min),
                "box_max": _floats(self.box_max)}


@dataclass
class PublicScene:
    """What an agent may know before it starts (docs/protocol.md sections 1-3)."""

    scene_id: str
    inventory: list[InventoryEntry]
    initial_camera: CameraPose
    intrinsics: Intrinsics
    radius_m: float
    description: dict = field(default_factory=dict)
    """Non-secret metadata, e.g. ``{"layout": "apartment", "rooms": ["Kitchen", ...]}``."""

    def to_dict(self) -> dict:
        return {"scene_id": self.scene_id, "radius_m": float(self.radius_m),
                "inventory": [e.to_dict() for e in self.inventory],
                "initial_camera": self.initial_camera.to_dict(),
                "intrinsics": self.intrinsics.to_dict(), "description": self.description}

    @classmethod
    def from_dict(cls, d: dict) -> "PublicScene":
        return cls(d["scene_id"], [InventoryEntry(**e) for e in d["inventory"]],
                   CameraPose.from_dict(d["initial_camera"]), Intrinsics.from_dict(d["intrinsics"]),
                   float(d["radius_m"]), d.get("description", {}))


@dataclass
class PrivateScene:
    """Evaluator-only data: boxes and geometry (never shown to an agent)."""

    objects: list[SceneObject]
    lights: list[Light]
    ambient_light: tuple[float, float, float] = (0.3, 0.3, 0.3)
    source: dict = field(default_factory=dict)
    """Where the scene came from, e.g. ``{"generator": "procedural", "seed": 7}``."""

    def to_dict(self) -> dict:
        return {"objects": [o.to_dict() for o in self.objects],
                "lights": [light.to_dict() for light in self.lights],
                "ambient_light": _floats(self.ambient_light), "source": self.source}

    @classmethod
    def from_dict(cls, d: dict) -> "PrivateScene":
        return cls([SceneObject.from_dict(o) for o in d["objects"]],
                   [Light.from_dict(x) for x in d["lights"]], tuple(d.get("ambient_light", (0.3,) * 3)),
                   d.get("source", {}))


@dataclass
class SceneSpec:
    """A complete scene: public and private halves.

    Build one with :meth:`from_objects`, which derives the task frame, target boxes, inventory and
    radius from the geometry so they can never disagree.
    """

    public: PublicScene
    private: PrivateScene

    # ---- derived views -------------------------------------------------------------------
    @property
    def scene_id(self) -> str:
        return self.public.scene_id

    @property
    def task_frame(self) -> TaskFrame:
        return TaskFrame.from_initial_pose(self.public.initial_camera)

    @property
    def targets(self) -> list[TargetBox]:
        """Target boxes in inventory order."""
        by_id = {o.id: o for o in self.private.objects if o.role == "target"}
        frame = self.task_frame
        out = []
        for e in self.public.inventory:
            lo, hi = by_id[e.id].aabb_world
            out.append(TargetBox(e.id, e.category, e.group, frame.to_task((lo + hi) / 2), lo, hi))
        return out

    @classmethod
    def from_objects(cls, scene_id: str, objects: list[SceneObject], initial_camera: CameraPose,
                     intrinsics: Intrinsics, lights: list[Light], *,
                     ambient_light: tuple[float, float, float] = (0.3, 0.3, 0.3), source: dict | None = None,
                     description: dict | None = None) -> "SceneSpec":
        """Assemble a spec; objects with ``role == "target"`` form the inventory, sorted by id
        (natural order: ``Chair_2`` before ``Chair_10``). Targets are *selected* nearest-first
        (docs/protocol.md section 8), but listing them in that order would tell an agent how far each one
        is (the last at exactly ``r``), which docs/protocol.md section 1 rules out."""
        frame = TaskFrame.from_initial_pose(initial_camera)
        targets = sorted((o for o in objects if o.role == "target"), key=lambda o: natural_key(o.id))
        if not targets:
            raise ValueError(f"scene {scene_id!r} has no targets")
        ids = [o.id for o in objects]
        if len(set(ids)) != len(ids):
            raise ValueError(f"scene {scene_id!r} has duplicate object ids")
        centers = np.array([frame.to_task((o.aabb_world[0] + o.aabb_world[1]) / 2) for o in targets])
        radius = float(np.max(np.linalg.norm(centers, axis=1)))
        public = PublicScene(scene_id, [InventoryEntry(o.id, o.category, o.group) for o in targets],
                             initial_camera, intrinsics, radius, description or {})
        return cls(public, PrivateScene(objects, lights, (*ambient_light,), source or {}))

    # ---- files ---------------------------------------------------------------------------
    def entity_library_dict(self) -> dict:
        """The public half as written to ``entity_library.json``."""
        return self.public.to_dict()

    def ground_truth_dict(self) -> dict:
        """The scorer's ``ground_truth.json``."""
        return {"scene_id": self.scene_id, "radius_m": float(self.public.radius_m),
                "world_from_task": self.task_frame.to_dict(),
                "targets": [t.to_dict() for t in self.targets]}

    def to_dict(self) -> dict:
        return {"format_version": SPEC_FORMAT_VERSION, "public": self.public.to_dict(),
                "private": self.private.to_dict()}

    @classmethod
    def from_dict(cls, d: dict) -> "SceneSpec":
        if d.get("format_version") != SPEC_FORMAT_VERSION:
            raise ValueError(f"scene spec format_version {d.get('format_version')!r} is not "
                             f"{SPEC_FORMAT_VERSION}; regenerate the scene with this version")
        return cls(PublicScene.from_dict(d["public"]), PrivateScene.from_dict(d["private"]))

    def to_json(self) -> str:
        return json.dumps(self.to_dict())

    @classmethod
    def from_json(cls, text: str) -> "SceneSpec":
        return cls.from_dict(json.loads(text))

    def content_hash(self, render_settings: dict | None = None) -> str:
        """SHA-256 of the canonical spec JSON plus the render settings."""
        payload = {"spec": self.to_dict(), "render": render_settings or {}}
        return hashlib.sha256(canonical_json(payload).encode()).hexdigest()
