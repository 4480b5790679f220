"""A small hand-built scene for render tests (no dependency on the procedural generator).

A 6 m x 5 m room (floor, 4 walls, ceiling light), a table, and targets of every part shape
including a thin flat one (a credit card), a framed painting on a wall, and one hidden candidate.
The initial camera stands at (1, 2.5, 1.5) looking along +x, pitched down 15 deg.
"""

from __future__ import annotations

import numpy as np

from spatialscout_gym.core.camera import Intrinsics
from spatialscout_gym.core.frames import CameraPose
from spatialscout_gym.core.spec import Light, Material, Part, SceneObject, SceneSpec

ROOM_X, ROOM_Y, ROOM_H = 6.0, 5.0, 2.6
INITIAL_POSE = CameraPose(np.array([1.0, 2.5, 1.5]), 0.0, -15.0)


def _box(center, half, color=(0.8, 0.8, 0.8), texture=None, quat=(1.0, 0.0, 0.0, 0.0)) -> Part:
    return Part("box", np.asarray(center, float), np.asarray(quat, float),
                half_size=np.asarray(half, float),
                material=Material((*color, 1.0), 0.8, 0.0, texture))


def _q_about_y(deg: float) -> tuple[float, float, float, float]:
    h = np.deg2rad(deg) / 2
    return (float(np.cos(h)), 0.0, float(np.sin(h)), 0.0)


def make_room_spec(scene_id: str = "render-fixture", seed: int = 0) -> SceneSpec:
    """The fixture scene; ``seed`` varies texture seeds only."""
    t = 0.05
    objs = [
        SceneObject("floor", "Floor", "Floor", "static",
                    [_box([ROOM_X / 2, ROOM_Y / 2, -t], [ROOM_X / 2, ROOM_Y / 2, t],
                          texture={"kind": "wood", "seed": seed, "scale": 1.5})], movable=False),
        SceneObject("wall_n", "Wall", "Wall", "static",
                    [_box([ROOM_X / 2, ROOM_Y + t, ROOM_H / 2], [ROOM_X / 2, t, ROOM_H / 2], (0.85, 0.82, 0.75))],
                    movable=False),
        SceneObject("wall_s", "Wall", "Wall", "static",
                    [_box([ROOM_X / 2, -t, ROOM_H / 2], [ROOM_X / 2, t, ROOM_H / 2], (0.85, 0.82, 0.75))],
                    movable=False),
        SceneObject("wall_e", "Wall", "Wall", "static",
                    [_box([ROOM_X + t, ROOM_Y / 2, ROOM_H / 2], [t, ROOM_Y / 2, ROOM_H / 2],
                          texture={"kind": "brick", "seed": seed})], movable=False),
        SceneObject("wall_w", "Wall", "Wall", "static",
                    [_box([-t, ROOM_Y / 2, ROOM_H / 2], [t, ROOM_Y / 2, ROOM_H / 2], (0.85, 0.82, 0.75))],
                    movable=False),
        SceneObject("table", "DiningTable", "DiningTable", "static", [
            _box([3.5, 2.5, 0.74], [0.6, 0.45, 0.02], texture={"kind": "wood", "seed": seed + 1}),
            *[_box([3.5 + sx * 0.55, 2.5 + sy * 0.4, 0.36], [0.025, 0.025, 0.36], (0.4, 0.25, 0.12))
              for sx in (-1, 1) for sy in (-1, 1)]], movable=False),
        SceneObject("Mug_1", "Mug", "Mug", "target", [
            Part("cylinder", np.array([3.3, 2.3, 0.81]), np.array(_q_about_y(-90.0)), radius=0.045,
                 half_length=0.05, material=Material((0.9, 0.2, 0.15, 1.0)))]),
        SceneObject("Book_1", "Book", "Book", "target",
                    [_box([3.7, 2.7, 0.775], [0.12, 0.09, 0.015], texture={"kind": "book_spine", "seed": seed})]),
        SceneObject("CreditCard_1", "CreditCard", "CreditCard", "target",
                    [_box([3.3, 2.65, 0.7604], [0.0428, 0.027, 0.0004], (0.1, 0.3, 0.8))]),
        SceneObject("Apple_1", "Apple", "Apple", "target", [
            Part("sphere", np.array([3.75, 2.3, 0.8]), radius=0.04, material=Material((0.2, 0.7, 0.1, 1.0)))]),
        SceneObject("Painting_1", "Painting", "Painting", "target", [
            _box([ROOM_X - 0.04, 2.5, 1.55], [0.01, 0.5, 0.35], texture={"kind": "painting", "seed": seed}),
            _box([ROOM_X - 0.025, 2.5, 1.55], [0.02, 0.54, 0.39], (0.3, 0.2, 0.1))]),
        SceneObject("Vase_1", "Vase", "Vase", "target", [
            Part("capsule", np.array([5.5, 4.4, 0.3]), np.array(_q_about_y(-90.0)), radius=0.12,
                 half_length=0.15, material=Material((0.2, 0.5, 0.6, 1.0)))]),
        SceneObject("Box_1", "Box", "Box", "target", [
            Part("mesh", np.array([5.2, 0.6, 0.0]), vertices=np.array(
                [[-0.2, -0.2, 0], [0.2, -0.2, 0], [0.2, 0.2, 0], [-0.2, 0.2, 0],
                 [-0.2, -0.2, 0.3], [0.2, -0.2, 0.3], [0.2, 0.2, 0.3], [-0.2, 0.2, 0.3]]),
                 faces=np.array([[0, 2, 1], [0, 3, 2], [4, 5, 6], [4, 6, 7], [0, 1, 5], [0, 5, 4],
                                 [1, 2, 6], [1, 6, 5], [2, 3, 7], [2, 7, 6], [3, 0, 4], [3, 4, 7]]),
                 material=Material((0.7, 0.55, 0.3, 1.0), texture={"kind": "fabric", "seed": seed}))]),
        SceneObject("Apple_2", "Apple", "Apple", "hidden", [
            Part("sphere", np.array([3.5, 2.5, 0.82]), radius=0.05, material=Material((0.9, 0.1, 0.1, 1.0)))]),
    ]
    lights = [Light("point", (4.0, 4.0, 3.6), position_world=np.array([3.0, 2.5, 2.4])),
              Light("directional", (0.6, 0.6, 0.6), direction_world=np.array([0.3, 0.2, -1.0]))]
    return SceneSpec.from_objects(scene_id, objs, INITIAL_POSE, Intrinsics.from_fov(512, 512, 60.0),
                                  lights, ambient_light=(0.35, 0.35, 0.35))


def make_sphere_spec(center_world, radius: float = 0.03, fov_y_deg: float = 60.0) -> SceneSpec:
    """A single bright sphere (a target) in empty space, for projection checks."""
    obj = SceneObject("Ball_1", "Ball", "Ball", "target", [
        Part("sphere", np.asarray(center_world, float), radius=radius,
             material=Material((1.0, 1.0, 1.0, 1.0)))])
    return SceneSpec.from_objects("sphere", [obj], CameraPose(np.zeros(3), 0.0, 0.0),
                                  Intrinsics.from_fov(512, 512, fov_y_deg), [], ambient_light=(1.0, 1.0, 1.0))


RENDER_DEVICE_ENV = "SPATIALSCOUT_TEST_RENDER_DEVICE"
"""Environment variable: the SAPIEN render device the NBV render tests use (e.g. ``cuda``, set by
``scripts/gpu_check.sh`` on a GPU machine); unset or empty, SAPIEN's default device."""


def render_device_kwargs() -> dict:
    """``{"render_device": ...}`` from :data:`RENDER_DEVICE_ENV`, or ``{}`` when it is unset."""
    import os

    device = os.environ.get(RENDER_DEVICE_ENV, "").strip()
    return {"render_device": device} if device else {}
