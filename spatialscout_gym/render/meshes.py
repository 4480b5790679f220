"""Triangle meshes with UVs for textured parts (numpy only).

SAPIEN's box primitive has UVs at a fixed orientation and its cylinder none, so textured boxes and
cylinders are built here: flat-shaded (each face has its own vertices and normal), triangles
counter-clockwise seen from outside, UVs in texture repeats. For "tile" textures one repeat spans
``tile_m`` metres of surface, so wood grain has real-world scale; for "fit" textures
(``tile_m=None``) each face carries the whole picture, upright on side faces (local +z up).

Every function returns ``(vertices (V, 3) float32, triangles (F, 3) uint32, normals (V, 3)
float32, uvs (V, 2) float32)`` in the part's local frame, metres.
"""

from __future__ import annotations

import numpy as np

__all__ = ["box_mesh", "cylinder_mesh", "flat_mesh"]

MeshArrays = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]


def _pack(v, t, n, uv) -> MeshArrays:
    return (np.asarray(v, np.float32), np.asarray(t, np.uint32), np.asarray(n, np.float32),
            np.asarray(uv, np.float32))


def _box_faces() -> tuple[np.ndarray, ...]:
    """Per face (+x, -x, +y, -y, +z, -z): normal, up, right, and |right|, |up| as rows (6, 3)."""
    ex = np.eye(3)
    rows_n: list[np.ndarray] = []
    rows_up: list[np.ndarray] = []
    rows_right: list[np.ndarray] = []
    for axis in range(3):
        for sign in (1.0, -1.0):
            rows_n.append(sign * ex[axis])
            rows_up.append(ex[2] if axis != 2 else ex[1])
            rows_right.append(np.cross(rows_up[-1], rows_n[-1]))
    n, up, right = np.array(rows_n), np.array(rows_up), np.array(rows_right)
    return n, up, right, np.abs(right), np.abs(up), np.repeat(np.arange(3), 2)


_BOX_N, _BOX_UP, _BOX_RIGHT, _BOX_ABS_RIGHT, _BOX_ABS_UP, _BOX_AXIS = _box_faces()
_BOX_TRIS = np.array([(b, b + 1, b + 2) if k == 0 else (b, b + 2, b + 3)
                      for b in range(0, 24, 4) for k in (0, 1)], np.uint32)
_BOX_NORMALS = np.repeat(_BOX_N, 4, axis=0).astype(np.float32)
_BOX_FIT_UV = np.tile(np.array([(0, 1), (1, 1), (1, 0), (0, 0)], np.float32), (6, 1))


def box_mesh(half_size: np.ndarray, tile_m: float | None) -> MeshArrays:
    """A box of half extents ``half_size`` (3,), 24 vertices, 12 triangles.

    On each face ``u`` runs to the viewer's right and ``v`` down (side faces: up is local +z;
    top/bottom faces: up is local +y), matching image rows (v = 0 is the image's top row).
    Faces in the order +x, -x, +y, -y, +z, -z; corners bottom-left, bottom-right, top-right,
    top-left.
    """
    # all six faces at once, each value by the same float operations as one face at a time
    h = np.asarray(half_size, dtype=float)
    hr = _BOX_ABS_RIGHT @ h                                   # (6,): exact (one non-zero term)
    hu = _BOX_ABS_UP @ h
    c = _BOX_N * h[_BOX_AXIS][:, None]
    r, u = _BOX_RIGHT * hr[:, None], _BOX_UP * hu[:, None]
    corners = np.stack([c - r - u, c + r - u, c + r + u, c - r + u], axis=1)   # (6, 4, 3)
    if tile_m is None:
        uvs = _BOX_FIT_UV.copy()
    else:
        su, sv = 2 * hr / tile_m, 2 * hu / tile_m
        z = np.zeros(6)
        uvs = np.stack([np.stack([z, sv], 1), np.stack([su, sv], 1), np.stack([su, z], 1),
                        np.stack([z, z], 1)], axis=1).reshape(24, 2).astype(np.float32)
    return (corners.reshape(24, 3).astype(np.float32), _BOX_TRIS.copy(), _BOX_NORMALS.copy(), uvs)


def cylinder_mesh(radius: float, half_length: float, tile_m: float | None, segments: int = 24) -> MeshArrays:
    """A cylinder along local x: side smooth-shaded, caps flat. Side ``u`` runs around the
    circumference, ``v`` along the axis."""
    r, hl = float(radius), float(half_length)
    ang = np.linspace(0.0, 2 * np.pi, segments + 1)
    ring = np.stack([np.zeros_like(ang), r * np.cos(ang), r * np.sin(ang)], axis=1)
    radial = ring / r
    circ = 2 * np.pi * r
    if tile_m is None:
        us, v0, v1 = ang / (2 * np.pi), 0.0, 1.0
    else:
        us, v0, v1 = ang / (2 * np.pi) * circ / tile_m, 0.0, 2 * hl / tile_m
    verts, norms, uvs, tris = [], [], [], []
    for x, v_ring in ((-hl, v1), (hl, v0)):
        verts += list(ring + [x, 0, 0])
        norms += list(radial)
        uvs += [(u, v_ring) for u in us]
    m = segments + 1
    for i in range(segments):
        a, b = i, i + 1  # bottom ring (x = -hl) indices; top ring offset by m
        tris += [(a, a + m, b + m), (a, b + m, b)]
    # caps: fan around a centre vertex
    for sign in (1.0, -1.0):
        base = len(verts)
        verts.append([sign * hl, 0, 0])
        norms.append([sign, 0, 0])
        uvs.append((0.5, 0.5))
        scale = 1.0 if tile_m is None else 2 * r / tile_m
        for k in range(segments + 1):
            verts.append(ring[k] + [sign * hl, 0, 0])
            norms.append([sign, 0, 0])
            uvs.append((0.5 + 0.5 * np.cos(ang[k]) * scale, 0.5 - 0.5 * np.sin(ang[k]) * scale))
        for k in range(segments):
            a, b = base + 1 + k, base + 2 + k
            tris.append((base, a, b) if sign > 0 else (base, b, a))
    v, t, n, uv = _pack(verts, tris, norms, uvs)
    return v, _orient_outward_tris(v, t, n), n, uv


def _orient_outward_tris(v: np.ndarray, t: np.ndarray, n: np.ndarray) -> np.ndarray:
    """Flip triangles whose geometric normal disagrees with their vertex normals."""
    a, b, c = v[t[:, 0]], v[t[:, 1]], v[t[:, 2]]
    g = np.cross(b - a, c - a)
    vn = n[t[:, 0]] + n[t[:, 1]] + n[t[:, 2]]
    flip = np.einsum("ij,ij->i", g, vn) < 0
    t = t.copy()
    t[flip] = t[flip][:, ::-1]
    return t


def flat_mesh(vertices: np.ndarray, faces: np.ndarray, tile_m: float | None) -> MeshArrays:
    """Unweld an indexed mesh into flat-shaded triangles with planar-projected UVs.

    Each triangle is projected on the plane of its dominant normal axis; ``tile_m=None`` maps the
    mesh's bounding box to 0-1.
    """
    v = np.asarray(vertices, dtype=float)
    f = np.asarray(faces, dtype=np.int64)
    tri = v[f]  # (F, 3, 3)
    g = np.cross(tri[:, 1] - tri[:, 0], tri[:, 2] - tri[:, 0])
    norm = np.linalg.norm(g, axis=1, keepdims=True)
    g = np.where(norm > 0, g / np.maximum(norm, 1e-12), np.array([0.0, 0.0, 1.0]))
    dom = np.argmax(np.abs(g), axis=1)
    keep = np.array([[1, 2], [0, 2], [0, 1]])[dom]  # (F, 2) axes kept for the projection
    lo, hi = v.min(axis=0), v.max(axis=0)
    span = np.maximum(hi - lo, 1e-9)
    pts = np.take_along_axis(tri, keep[:, None, :].repeat(3, axis=1), axis=2)  # (F, 3, 2)
    if tile_m is None:
        lo2 = lo[keep][:, None, :]
        uv = (pts - lo2) / span[keep][:, None, :]
    else:
        uv = pts / tile_m
    uv[..., 1] = -uv[..., 1]
    verts = tri.reshape(-1, 3)
    normals = np.repeat(g, 3, axis=0)
    tris = np.arange(len(verts)).reshape(-1, 3)
    return _pack(verts, tris, normals, uv.reshape(-1, 2))
