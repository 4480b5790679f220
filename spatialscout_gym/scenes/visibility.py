"""Can every target be seen from inside the search ball? (the catalog's scene check)

A conservative line-of-sight test, no renderer: every rendered part other than the target's own
is an occluder the size of its world AABB (shrunk by 1 mm so resting contacts do not count). A
target counts as *seen* when some viewpoint sees one of its aim points: the centres of its box's
top and four vertical faces, 2 mm outside the box. Viewpoints are the initial camera, a grid
(0.6 m, at 0.5, 1.1, 1.7 and 2.2 m height) over the scene, and points 0.5 and 1.2 m out along
each aim point's face normal; only those inside the search ball (``|p - camera| <= r``) and
outside every part's box count.

Catalog v2.0's generator drops targets that fail this test (a painting facing into another room
beyond the radius, books behind a bed) and re-selects; tests check every v2.0 scene passes.
World frame: z up, metres.
"""

from __future__ import annotations

import numpy as np

from spatialscout_gym.core.spec import SceneObject, SceneSpec, part_world_aabb

__all__ = ["unseen_targets", "unseen_in_spec"]

_HEIGHTS = (0.5, 1.1, 1.7, 2.2)
_STEP = 0.6
_CHUNK = 16


def _aims(lo: np.ndarray, hi: np.ndarray) -> list[tuple[np.ndarray, np.ndarray]]:
    c = (lo + hi) / 2
    out = [(np.array([c[0], c[1], hi[2] + 0.002]), np.array([0.0, 0.0, 1.0]))]
    for axis in (0, 1):
        for sgn, edge in ((-1.0, lo), (1.0, hi)):
            p = c.copy()
            p[axis] = edge[axis] + sgn * 0.002
            n = np.zeros(3)
            n[axis] = sgn
            out.append((p, n))
    return out


def _blocked(views: np.ndarray, aim: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """For each view, whether the segment view -> aim passes through one of the boxes."""
    near = np.all((lo <= np.maximum(views.max(0), aim)) & (hi >= np.minimum(views.min(0), aim)), axis=1)
    lo, hi = lo[near], hi[near]   # only boxes that meet the segments' bounding box can block
    if not len(lo):
        return np.zeros(len(views), bool)
    d = aim - views
    with np.errstate(divide="ignore", invalid="ignore"):
        t0 = (lo[None] - views[:, None]) / d[:, None]
        t1 = (hi[None] - views[:, None]) / d[:, None]
    tmin = np.fmax.reduce(np.minimum(t0, t1), axis=2)   # fmax/fmin skip the NaN of 0/0
    tmax = np.fmin.reduce(np.maximum(t0, t1), axis=2)
    return np.any((tmax >= np.maximum(tmin, 0.0)) & (tmin < 1.0), axis=1)


def unseen_targets(objects: list[SceneObject], camera_position: np.ndarray, radius_m: float,
                   target_ids: set[str] | None = None) -> list[str]:
    """Ids of the targets (``role == "target"``, or ``target_ids``) no viewpoint inside the
    ball of ``radius_m`` metres around ``camera_position`` sees; objects with ``role ==
    "hidden"`` are not rendered, so they occlude nothing."""
    rendered = [o for o in objects if o.role != "hidden"]
    targets = target_ids if target_ids is not None else {o.id for o in rendered if o.role == "target"}
    boxes = [(part_world_aabb(p), k) for k, o in enumerate(rendered) for p in o.parts]
    lo = np.array([b[0][0] for b in boxes])
    hi = np.array([b[0][1] for b in boxes])
    owner = np.array([b[1] for b in boxes])
    cam = np.asarray(camera_position, float)
    r = float(radius_m) + 1e-6
    grid = np.stack(np.meshgrid(np.arange(lo[:, 0].min() + 0.15, hi[:, 0].max(), _STEP),
                                np.arange(lo[:, 1].min() + 0.15, hi[:, 1].max(), _STEP),
                                np.array(_HEIGHTS), indexing="ij"), -1).reshape(-1, 3)

    def usable(v: np.ndarray) -> np.ndarray:
        v = v[np.linalg.norm(v - cam, axis=1) <= r]
        inside = np.zeros(len(v), bool)
        for s in range(0, len(v), 256):
            blk = v[s:s + 256]
            inside[s:s + 256] = np.any(np.all((blk[:, None] > lo[None] - 0.02) & (blk[:, None] < hi[None] + 0.02),
                                              axis=2), axis=1)
        return v[~inside]

    views = np.vstack([cam[None], usable(grid)])
    bad = []
    for k, o in enumerate(rendered):
        if o.id not in targets:
            continue
        occ = owner != k
        olo, ohi = lo[occ] + 1e-3, hi[occ] - 1e-3
        tlo, thi = o.aabb_world
        seen = False
        for aim, normal in _aims(tlo, thi):
            near = usable(aim[None] + np.array([0.5, 1.2])[:, None] * normal[None])
            cand = np.vstack([near, views[np.argsort(np.linalg.norm(views - aim, axis=1))]])
            for s in range(0, len(cand), _CHUNK):
                if not np.all(_blocked(cand[s:s + _CHUNK], aim, olo, ohi)):
                    seen = True
                    break
            if seen:
                break
        if not seen:
            bad.append(o.id)
    return bad


def unseen_in_spec(spec: SceneSpec) -> list[str]:
    """:func:`unseen_targets` of a scene spec (its targets, initial camera and radius)."""
    return unseen_targets(spec.private.objects, spec.public.initial_camera.position_world, spec.public.radius_m)
