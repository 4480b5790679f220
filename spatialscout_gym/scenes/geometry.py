"""Primitive and mesh helpers for building objects out of :class:`~spatialscout_gym.core.spec.Part`.

Builders work in an object's **local frame**: origin at the centre of its footprint on the
surface it stands on, z up, metres; the object's *front* faces local +x, its width runs along
local y, its depth along local x. :func:`place` moves a list of local parts into the world by a
yaw about z (degrees, counter-clockwise seen from above) and a translation.

Meshes (lathe solids, tori, ellipsoids) are small and inline (``vertices``/``faces``), so a spec
stays self-contained (nothing is downloaded, core/spec.py module docstring).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from spatialscout_gym.core.frames import quat_mul
from spatialscout_gym.core.spec import Material, Part
from spatialscout_gym.core.types import ArrayLike3

__all__ = ["mat", "box", "cyl_z", "cyl_x", "cyl_y", "sphere", "lathe", "torus", "ellipsoid",
           "place", "quat_mul", "quat_yaw", "parts_aabb"]

_Q_Z_FROM_X = np.array([np.cos(-np.pi / 4), 0.0, np.sin(-np.pi / 4), 0.0])  # local x -> world z
_Q_Y_FROM_X = np.array([np.cos(np.pi / 4), 0.0, 0.0, np.sin(np.pi / 4)])    # local x -> world y


def quat_yaw(yaw_deg: float) -> np.ndarray:
    """Rotation about world z by ``yaw_deg`` (counter-clockwise from above), (w, x, y, z)."""
    h = np.deg2rad(yaw_deg) / 2.0
    return np.array([np.cos(h), 0.0, 0.0, np.sin(h)])


def mat(color: ArrayLike3, roughness: float = 0.7, metallic: float = 0.0, texture: dict | None = None,
        alpha: float = 1.0) -> Material:
    """A :class:`Material` from an RGB colour in 0-1 (linear)."""
    c = [float(np.clip(x, 0.0, 1.0)) for x in color]
    return Material((c[0], c[1], c[2], float(alpha)), float(roughness), float(metallic), texture)


def box(center: ArrayLike3, size: ArrayLike3, material: Material) -> Part:
    """Axis-aligned box with full side lengths ``size`` (3,), centred at ``center`` (3,)."""
    return Part("box", np.asarray(center, float), half_size=np.asarray(size, float) / 2.0,
                material=material)


def cyl_z(center: ArrayLike3, radius: float, height: float, material: Material) -> Part:
    """Upright cylinder (axis along z) of full ``height``, centred at ``center``."""
    return Part("cylinder", np.asarray(center, float), quat_wxyz=_Q_Z_FROM_X.copy(),
                radius=float(radius), half_length=float(height) / 2.0, material=material)


def cyl_x(center: ArrayLike3, radius: float, length: float, material: Material) -> Part:
    """Cylinder with its axis along local x."""
    return Part("cylinder", np.asarray(center, float), radius=float(radius),
                half_length=float(length) / 2.0, material=material)


def cyl_y(center: ArrayLike3, radius: float, length: float, material: Material) -> Part:
    """Cylinder with its axis along local y."""
    return Part("cylinder", np.asarray(center, float), quat_wxyz=_Q_Y_FROM_X.copy(),
                radius=float(radius), half_length=float(length) / 2.0, material=material)


def sphere(center: ArrayLike3, radius: float, material: Material) -> Part:
    return Part("sphere", np.asarray(center, float), radius=float(radius), material=material)


def _mesh(vertices: np.ndarray, faces: np.ndarray, center: ArrayLike3, material: Material) -> Part:
    return Part("mesh", np.asarray(center, float), vertices=np.round(vertices, 6),
                faces=np.asarray(faces, int), material=material)


def lathe(profile: ArrayLike, material: Material, center: ArrayLike3 = (0.0, 0.0, 0.0), segments: int = 14) -> Part:
    """Closed solid of revolution about local z.

    Parameters
    ----------
    profile : sequence of (r, z)
        Radius and height, metres, from bottom to top; the first and last points are capped
        (a point with ``r == 0`` needs no cap).
    """
    prof = np.asarray(profile, float)
    n = len(prof)
    ang = np.linspace(0.0, 2 * np.pi, segments, endpoint=False)
    ca, sa = np.cos(ang), np.sin(ang)
    verts = [np.stack([r * ca, r * sa, np.full(segments, z)], axis=1) for r, z in prof]
    v = np.concatenate(verts + [np.array([[0.0, 0.0, prof[0, 1]], [0.0, 0.0, prof[-1, 1]]])])
    bottom, top = n * segments, n * segments + 1
    faces = []
    for i in range(n - 1):
        for j in range(segments):
            a, b = i * segments + j, i * segments + (j + 1) % segments
            c, d = a + segments, b + segments
            faces += [[a, b, d], [a, d, c]]
    for j in range(segments):
        faces.append([bottom, (j + 1) % segments, j])
        o = (n - 1) * segments
        faces.append([top, o + j, o + (j + 1) % segments])
    return _mesh(v, np.array(faces), center, material)


def torus(major: float, minor: float, material: Material, center: ArrayLike3 = (0.0, 0.0, 0.0),
          axis: str = "y", segments: int = 10, sides: int = 6) -> Part:
    """Torus of ring radius ``major`` and tube radius ``minor``; its ring lies in the plane
    normal to ``axis`` (local ``"x"``, ``"y"`` or ``"z"``)."""
    u = np.linspace(0, 2 * np.pi, segments, endpoint=False)
    w = np.linspace(0, 2 * np.pi, sides, endpoint=False)
    U, W = np.meshgrid(u, w, indexing="ij")
    a = (major + minor * np.cos(W)) * np.cos(U)
    b = (major + minor * np.cos(W)) * np.sin(U)
    c = minor * np.sin(W)
    pts = {"z": (a, b, c), "y": (a, c, b), "x": (c, a, b)}[axis]
    v = np.stack([p.ravel() for p in pts], axis=1)
    faces = []
    for i in range(segments):
        for j in range(sides):
            p0 = i * sides + j
            p1 = ((i + 1) % segments) * sides + j
            p2 = ((i + 1) % segments) * sides + (j + 1) % sides
            p3 = i * sides + (j + 1) % sides
            faces += [[p0, p1, p2], [p0, p2, p3]]
    return _mesh(v, np.array(faces), center, material)


def ellipsoid(radii: ArrayLike3, material: Material, center: ArrayLike3 = (0.0, 0.0, 0.0), segments: int = 12,
              rings: int = 7) -> Part:
    """Ellipsoid with semi-axes ``radii`` (3,) as a UV-sphere mesh."""
    t = np.linspace(0, np.pi, rings + 1)
    prof = np.stack([np.sin(t), -np.cos(t)], axis=1)
    part = lathe(prof, material, center, segments)
    part.vertices = np.round(part.vertices * np.asarray(radii, float), 6)
    return part


def place(parts: list[Part], position_world: ArrayLike3, yaw_deg: float) -> list[Part]:
    """Move local parts into the world: rotate by ``yaw_deg`` about z, then translate.

    Returns new :class:`Part` objects (the inputs are not modified).
    """
    q = quat_yaw(yaw_deg)
    c, s = np.cos(np.deg2rad(yaw_deg)), np.sin(np.deg2rad(yaw_deg))
    R = np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])
    t = np.asarray(position_world, float)
    out = []
    for p in parts:
        out.append(Part(p.shape, R @ np.asarray(p.position_world, float) + t,
                        quat_mul(q, np.asarray(p.quat_wxyz, float)), p.half_size, p.radius,
                        p.half_length, p.vertices, p.faces, p.path, p.scale, p.material))
    return out


def parts_aabb(parts: list[Part]) -> tuple[np.ndarray, np.ndarray]:
    """World (or local) AABB of a list of parts, ``(lo, hi)`` each shape (3,), metres."""
    from spatialscout_gym.core.spec import part_world_aabb
    boxes = [part_world_aabb(p) for p in parts]
    return np.min([b[0] for b in boxes], axis=0), np.max([b[1] for b in boxes], axis=0)
