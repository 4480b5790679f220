"""Placement inside one room: furniture against walls or free, wall items, items on surfaces.

Rules: furniture footprints never overlap each other, door clearances or the
initial camera's spot; wall items (paintings, windows, mirrors, ...) never overlap furniture or
each other; small items lie on a *surface* (a table top, a shelf board, a bed, a sofa seat) with
the bottom of their AABB exactly at the surface height, never overlap other items on it, and fit
under the board above. Collision checks use conservative boxes (the rotated sampled size), so
the true AABBs of built parts are disjoint too.

World frame: z up, metres. Yaw: degrees counter-clockwise from +x seen from above; an object's
front (local +x) faces ``yaw``. Room sides: 0 south (y = y0), 1 east, 2 north, 3 west.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from numpy.typing import ArrayLike

from spatialscout_gym.core.spec import Part
from spatialscout_gym.core.types import ArrayLike3
from spatialscout_gym.scenes.categories import CATEGORIES
from spatialscout_gym.scenes.furniture import book_lying, build_object, shelf_levels
from spatialscout_gym.scenes.geometry import parts_aabb, place
from spatialscout_gym.scenes import furniture_procthor  # noqa: F401  (registers v3.0's builders)
from spatialscout_gym.scenes.placement import allowed_in_room, multiple_per_room, receptacles_of
from spatialscout_gym.scenes.rooms import DOOR_H, Room
from spatialscout_gym.scenes.sizes import RULES_V1, GeneratorRules
from spatialscout_gym.scenes.sizes import sample_size as _sample_size

__all__ = ["Placed", "Surface", "RoomLayout", "sample_size", "SIDE_YAW"]

SIDE_YAW = {0: 90.0, 1: 180.0, 2: -90.0, 3: 0.0}   # yaw that faces into the room from each side
EPS = 0.004                                         # overlap tolerance, metres


def sample_size(category: str, rng: np.random.Generator, rules: GeneratorRules = RULES_V1) -> np.ndarray:
    """Depth, width, height (metres) of a new ``category`` instance under ``rules`` (catalog
    v1.0's uniform ranges by default; scenes/sizes.py)."""
    return _sample_size(category, rng, rules)


@dataclass
class Placed:
    """An object placed in the world (before ids and roles are assigned)."""

    category: str
    parts: list[Part]
    lo: np.ndarray
    hi: np.ndarray
    room: str
    kind: str            # "furniture", "wall", "item", "structure"
    candidate: bool
    support: int = -1    # index of the supporting object, -1 for floor/wall
    yaw: float = 0.0     # degrees; the object's front faces this heading


@dataclass
class Surface:
    """A horizontal rectangle items may rest on, world frame."""

    kind: str
    rect: tuple[float, float, float, float]
    z: float
    clear: float
    parent: int
    yaw: float
    occupied: list[tuple[float, float, float, float]] = field(default_factory=list)

    @property
    def area(self) -> float:
        return (self.rect[2] - self.rect[0]) * (self.rect[3] - self.rect[1])


def _local_surfaces(cat: str, s: np.ndarray) -> list[tuple[str, tuple[float, float, float, float], float, float]]:
    """Surfaces of a furniture piece in its local frame: ``(kind, (x0, y0, x1, y1), z, clear)``;
    must match the builders in scenes/furniture.py (``cat`` is the builder key)."""
    sx, sy, sz = s
    if cat == "SinkBasin":   # the back rim: the faucet stands there, its spout over the bowl
        return [("rim", (-sx / 2, -sy / 2 + 0.03, -sx / 2 + min(0.3, 0.6 * sx), sy / 2 - 0.03), sz, 0.5)]
    if cat in ("DiningTable", "SideTable", "Dresser", "TVStand"):
        m = 0.03
        return [("table", (-sx / 2 + m, -sy / 2 + m, sx / 2 - m, sy / 2 - m), sz, 0.6)]
    if cat == "CoffeeTable":
        return [("table", (-sx / 2 + 0.03, -sy / 2 + 0.03, sx / 2 - 0.03, sy / 2 - 0.03), sz, 0.6),
                ("table", (-sx / 2 + 0.1, -sy / 2 + 0.1, sx / 2 - 0.1, sy / 2 - 0.1), 0.13, sz - 0.04 - 0.14)]
    if cat == "Desk":
        return [("desk", (-sx / 2 + 0.03, -sy / 2 + 0.03, sx / 2 - 0.03, sy / 2 - 0.03), sz, 0.7)]
    if cat == "CounterTop":
        return [("counter", (-sx / 2 + 0.03, -sy / 2 + 0.03, sx / 2 - 0.03, sy / 2 - 0.03), sz, 0.5)]
    if cat == "ShelvingUnit":
        t = 0.025
        lv = shelf_levels(sz)
        tops = lv[1:] + [sz - t]
        out = [("shelf", (-sx / 2 + 0.015, -sy / 2 + t + 0.005, sx / 2 - 0.005, sy / 2 - t - 0.005), z, top - t - z - 0.01)
               for z, top in zip(lv, [x + t for x in tops])]
        out.append(("shelf", (-sx / 2 + 0.02, -sy / 2 + 0.02, sx / 2 - 0.02, sy / 2 - 0.02), sz, 0.45))
        return out
    if cat == "Bed":
        return [("bed", (-sx / 2 + 0.55, -sy / 2 + 0.05, sx / 2 - 0.05, sy / 2 - 0.05), 0.35 + 0.25, 0.6),
                ("pillow", (-sx / 2 + 0.08, -sy / 2 + 0.04, -sx / 2 + 0.55, sy / 2 - 0.04), 0.35 + 0.22, 0.6)]
    if cat == "Sofa":
        inner = sy - 0.36
        return [("sofa", (-sx / 2 + 0.23, -inner / 2, sx / 2 - 0.07, inner / 2), 0.50, 0.5)]
    if cat == "ArmChair":
        inner = sy - 0.28
        return [("sofa", (-sx / 2 + 0.21, -inner / 2, sx / 2 - 0.02, inner / 2), 0.47, 0.5)]
    if cat == "Toilet":
        return [("counter", (-sx / 2 + 0.01, -sy / 2 + 0.01, -sx / 2 + 0.17, sy / 2 - 0.01), sz, 0.35)]
    return []


def _rot_rect(rect, yaw: float, pos) -> tuple[float, float, float, float]:
    x0, y0, x1, y1 = rect
    c, s = np.cos(np.deg2rad(yaw)), np.sin(np.deg2rad(yaw))
    pts = np.array([[x0, y0], [x1, y0], [x1, y1], [x0, y1]]) @ np.array([[c, s], [-s, c]]) + np.asarray(pos)[:2]
    return (float(pts[:, 0].min()), float(pts[:, 1].min()), float(pts[:, 0].max()), float(pts[:, 1].max()))


def _half_xy(size: np.ndarray, yaw: float) -> np.ndarray:
    c, s = abs(np.cos(np.deg2rad(yaw))), abs(np.sin(np.deg2rad(yaw)))
    return np.array([c * size[0] + s * size[1], s * size[0] + c * size[1]]) / 2


def _overlap(alo, ahi, blo, bhi, eps: float = EPS) -> bool:
    return bool(np.all(np.minimum(ahi, bhi) - np.maximum(alo, blo) > eps))


class RoomLayout:
    """Places objects in one room and keeps the collision state.

    Parameters
    ----------
    room : Room
    height : float
        Ceiling height, metres.
    doors : list of (side, t, width)
        Door openings (and closed doors) on the room's sides; their clearance is kept free.
    rng : numpy.random.Generator
    placed : list of Placed
        The scene-wide object list this layout appends to.
    rules : GeneratorRules
        The catalog version's generator rules (sizes, builders; scenes/sizes.py).
    """

    def __init__(self, room: Room, height: float, doors: list[tuple[int, float, float]],
                 rng: np.random.Generator, placed: list[Placed], rules: GeneratorRules = RULES_V1):
        self.room, self.height, self.doors, self.rng, self.placed = room, height, doors, rng, placed
        self.rules = rules
        self.ix0, self.iy0, self.ix1, self.iy1 = room.interior
        self.blocks: list[tuple[np.ndarray, np.ndarray, int]] = []   # (lo, hi, placed index or -1)
        self.surfaces: list[Surface] = []
        self.item_weights: dict[str, float] | None = None   # per-room draw weights (scenes/procedural.py)
        for side, t, w in doors:
            lo, hi = self._wall_box(side, t, w + 0.2, 0.9, 0.0, DOOR_H + 0.1)
            self.blocks.append((lo, hi, -1))

    def add_door(self, side: int, t: float, width: float) -> None:
        """Register a door (opening or closed panel) whose clearance must stay free."""
        self.doors.append((side, t, width))
        lo, hi = self._wall_box(side, t, width + 0.2, 0.9, 0.0, DOOR_H + 0.1)
        self.blocks.append((lo, hi, -1))

    def size(self, category: str) -> np.ndarray:
        """A new ``category`` instance's (depth, width, height), metres, under this layout's rules."""
        return _sample_size(category, self.rng, self.rules)

    def allows(self, cat: str) -> bool:
        """Whether the rules let ``cat`` into this room now: always under ``placement="free"``;
        under ``"procthor"`` only in room types ProcTHOR places it in, and a second one only
        where its ``multiplePerRoom`` allows (scenes/placement.py)."""
        if self.rules.placement != "procthor" or not CATEGORIES[cat].candidate:
            return True   # structure (a bathroom's vanity counter, cabinets) is not placed by type
        if not allowed_in_room(cat, self.room.kind):
            return False
        return multiple_per_room(cat) or not any(p.category == cat and p.room == self.room.name
                                                 for p in self.placed)

    def count(self, cat: str) -> int:
        """How many ``cat`` objects this room holds so far."""
        return sum(p.category == cat and p.room == self.room.name for p in self.placed)

    def _holds(self, s: "Surface", cat: str) -> bool:
        """Under ``placement="procthor"``: whether ProcTHOR's receptacles let surface ``s``'s
        furniture hold ``cat`` (a category no receptacle lists keeps its ``rests_on`` kinds)."""
        rec = receptacles_of(cat)
        return rec is None or self.placed[s.parent].category in rec

    # ---- geometry helpers ---------------------------------------------------------------
    def _wall_span(self, side: int) -> tuple[float, float]:
        return (self.ix0, self.ix1) if side in (0, 2) else (self.iy0, self.iy1)

    def _wall_point(self, side: int, t: float, offset: float) -> np.ndarray:
        """World xy of the point at ``t`` along ``side``, ``offset`` metres into the room."""
        return {0: np.array([t, self.iy0 + offset]), 1: np.array([self.ix1 - offset, t]),
                2: np.array([t, self.iy1 - offset]), 3: np.array([self.ix0 + offset, t])}[side]

    def _wall_box(self, side: int, t: float, width: float, depth: float, z0: float, z1: float):
        c = self._wall_point(side, t, depth / 2)
        half = _half_xy(np.array([depth, width, 0.0]), SIDE_YAW[side])
        return np.array([*(c - half), z0]), np.array([*(c + half), z1])

    def reserve(self, lo: ArrayLike3, hi: ArrayLike3) -> None:
        """Keep a box free of furniture and wall items (e.g. the initial camera's spot)."""
        self.blocks.append((np.asarray(lo, float), np.asarray(hi, float), -1))

    def _free(self, lo, hi, ignore: int = -2) -> bool:
        if lo[0] < self.ix0 - EPS or lo[1] < self.iy0 - EPS or hi[0] > self.ix1 + EPS or hi[1] > self.iy1 + EPS:
            return False
        if hi[2] > self.height - 0.02:
            return False
        return not any(_overlap(lo, hi, blo, bhi) for blo, bhi, k in self.blocks if k != ignore)

    # ---- commit ---------------------------------------------------------------------------
    def _commit(self, cat: str, size: np.ndarray, pos, yaw: float, kind: str, support: int = -1,
                parts_local: list[Part] | None = None, block: bool = True) -> int:
        info = CATEGORIES[cat]
        parts_local = parts_local if parts_local is not None else build_object(self.rules.builder_key(cat), self.rng, size)
        parts = place(parts_local, pos, yaw)
        lo, hi = parts_aabb(parts)
        candidate = info.candidate or (cat in self.rules.extra_candidates and allowed_in_room(cat, self.room.kind))
        kind_ = "structure" if not candidate else kind
        self.placed.append(Placed(cat, parts, lo, hi, self.room.name, kind_, candidate, support, yaw))
        idx = len(self.placed) - 1
        if block:
            self.blocks.append((lo, hi, idx))
        for skind, rect, z, clear in _local_surfaces(self.rules.builder_key(cat), size):
            if cat == "TVStand":   # nothing hangs over a TV stand: room for the television
                clear = max(clear, self.rules.tv_stand_clear_m)
            self.surfaces.append(Surface(skind, _rot_rect(rect, yaw, pos), float(pos[2] + z), float(clear), idx, yaw))
        return idx

    def _commit_wall(self, cat: str, size: np.ndarray, pos, yaw: float, lo, hi) -> int:
        """Commit a wall item; with the rules' ``wall_clearance_m`` its block reaches that far
        into the room, so nothing later stands in front of it (a poster behind a wardrobe)."""
        idx = self._commit(cat, size, pos, yaw, "wall")
        if self.rules.wall_clearance_m > 0:
            self.blocks[-1] = (np.asarray(lo, float), np.asarray(hi, float), idx)
        return idx

    # ---- furniture --------------------------------------------------------------------------
    def against_wall(self, cat: str, side: int | None = None, size: ArrayLike3 | None = None, tries: int = 25,
                     gap: float = 0.01, t: float | None = None) -> int | None:
        """Place ``cat`` with its back to a wall, facing into the room; index or None."""
        if not self.allows(cat):
            return None
        size = self.size(cat) if size is None else np.asarray(size, float)
        for _ in range(tries):
            sd = int(self.rng.integers(4)) if side is None else side
            a, b = self._wall_span(sd)
            if b - a < size[1] + 0.02:
                continue
            tt = float(self.rng.uniform(a + size[1] / 2, b - size[1] / 2)) if t is None else t
            yaw = SIDE_YAW[sd]
            c = self._wall_point(sd, tt, size[0] / 2 + gap)
            half = _half_xy(size, yaw)
            lo, hi = np.array([*(c - half), 0.0]), np.array([*(c + half), size[2]])
            if self._free(lo, hi):
                return self._commit(cat, size, np.array([c[0], c[1], 0.0]), yaw, "furniture")
            if t is not None:
                return None
        return None

    def free_standing(self, cat: str, size: ArrayLike3 | None = None, tries: int = 25, margin: float = 0.6,
                      yaw: float | None = None, near: ArrayLike | None = None, spread: float = 0.8) -> int | None:
        """Place ``cat`` away from the walls (``margin`` metres), at a yaw of 0/90/180/270 deg
        (or ``yaw``), optionally within ``spread`` metres of ``near`` (x, y)."""
        if not self.allows(cat):
            return None
        size = self.size(cat) if size is None else np.asarray(size, float)
        for _ in range(tries):
            yw = float(self.rng.choice([0.0, 90.0, 180.0, -90.0])) if yaw is None else yaw
            half = _half_xy(size, yw)
            if near is None:
                lox, hix = self.ix0 + margin + half[0], self.ix1 - margin - half[0]
                loy, hiy = self.iy0 + margin + half[1], self.iy1 - margin - half[1]
                if lox > hix or loy > hiy:
                    return None
                c = np.array([self.rng.uniform(lox, hix), self.rng.uniform(loy, hiy)])
            else:
                c = np.asarray(near, float) + self.rng.uniform(-spread, spread, 2)
            lo, hi = np.array([*(c - half), 0.0]), np.array([*(c + half), size[2]])
            if self._free(lo, hi):
                return self._commit(cat, size, np.array([c[0], c[1], 0.0]), yw, "furniture")
        return None

    def at(self, cat: str, xy: ArrayLike, yaw: float, size: ArrayLike3 | None = None, z: float = 0.0) -> int | None:
        """Place ``cat`` exactly at ``xy`` with ``yaw`` if the spot is free; index or None."""
        if not self.allows(cat):
            return None
        size = self.size(cat) if size is None else np.asarray(size, float)
        half = _half_xy(size, yaw)
        c = np.asarray(xy, float)
        lo, hi = np.array([*(c - half), z]), np.array([*(c + half), z + size[2]])
        if self._free(lo, hi):
            return self._commit(cat, size, np.array([c[0], c[1], z]), yaw, "furniture")
        return None

    def chairs_around(self, table: int, chair: str = "Chair", max_chairs: int = 6) -> list[int]:
        """Chairs facing a table from its sides, footprints just outside the table's."""
        tb = self.placed[table]
        cx, cy = (tb.lo[:2] + tb.hi[:2]) / 2
        hx, hy = (tb.hi[:2] - tb.lo[:2]) / 2
        size = self.size(chair)
        out: list[int] = []
        slots = []
        for axis, h_along, h_across in (("x", hx, hy), ("y", hy, hx)):
            n = max(1, int((2 * h_along + 0.1) // 0.62))
            for sgn in (-1, 1):
                for k in range(n):
                    along = -h_along + (2 * h_along) * (k + 0.5) / n
                    d = h_across + 0.03 + size[0] / 2
                    if axis == "x":
                        slots.append(((cx + along, cy + sgn * d), -90.0 if sgn > 0 else 90.0))
                    else:
                        slots.append(((cx + sgn * d, cy + along), 180.0 if sgn > 0 else 0.0))
        order = self.rng.permutation(len(slots))
        for k in order:
            if len(out) >= max_chairs:
                break
            xy, yaw = slots[k]
            sz = size * self.rng.uniform(0.985, 1.015, 3)
            idx = self.at(chair, xy, yaw + float(self.rng.uniform(-4, 4)), size=sz)
            if idx is not None:
                out.append(idx)
        return out

    def in_front(self, anchor: int, cat: str, distance: float, facing_back: bool = True) -> int | None:
        """Place ``cat`` centred in front of ``anchor`` (along its yaw) at ``distance`` metres
        beyond its front face, facing it (``facing_back``) or facing the same way."""
        a = self.placed[anchor]
        yaw = a.yaw
        fwd = np.array([np.cos(np.deg2rad(yaw)), np.sin(np.deg2rad(yaw))])
        c = (a.lo[:2] + a.hi[:2]) / 2
        depth = abs(np.dot(a.hi[:2] - a.lo[:2], fwd))
        size = self.size(cat)
        xy = c + fwd * (depth / 2 + distance + size[0] / 2)
        return self.at(cat, xy, yaw + 180.0 if facing_back else yaw, size=size)

    # ---- wall items ---------------------------------------------------------------------------
    def on_wall(self, cat: str, z0: float | None = None, side: int | None = None, t: float | None = None,
                size: ArrayLike3 | None = None, tries: int = 20, sides: list[int] | None = None) -> int | None:
        """Hang ``cat`` on a wall: back on the wall's inner face, bottom at ``z0`` (random
        eye-level height when None)."""
        if not self.allows(cat):
            return None
        size = self.size(cat) if size is None else np.asarray(size, float)
        for _ in range(tries):
            sd = (int(self.rng.choice(sides)) if sides else int(self.rng.integers(4))) if side is None else side
            a, b = self._wall_span(sd)
            if b - a < size[1] + 0.1:
                return None
            tt = float(self.rng.uniform(a + size[1] / 2 + 0.05, b - size[1] / 2 - 0.05)) if t is None else t
            zz = float(self.rng.uniform(1.55 - size[2] / 2, 1.75 - size[2] / 2)) if z0 is None else z0
            zz = max(zz, 0.9)
            lo, hi = self._wall_box(sd, tt, size[1], size[0] + self.rules.wall_clearance_m, zz, zz + size[2])
            if self._free(lo, hi):
                c = self._wall_point(sd, tt, size[0] / 2)
                return self._commit_wall(cat, size, np.array([c[0], c[1], zz]), SIDE_YAW[sd], lo, hi)
            if t is not None:
                return None
        return None

    def on_wall_at(self, cat: str, side: int, t: float, z0: float, size: ArrayLike3) -> int | None:
        """Hang ``cat`` of ``size`` on wall ``side`` centred at ``t``, bottom at ``z0``; index or None."""
        if not self.allows(cat):
            return None
        size = np.asarray(size, float)
        lo, hi = self._wall_box(side, t, size[1], size[0] + self.rules.wall_clearance_m, z0, z0 + size[2])
        if self._free(lo, hi):
            c = self._wall_point(side, t, size[0] / 2)
            return self._commit_wall(cat, size, np.array([c[0], c[1], z0]), SIDE_YAW[side], lo, hi)
        return None

    def window(self, side: int) -> int | None:
        """A window on an outer wall, with blinds above or curtains beside it (sometimes)."""
        size = self.size("Window")
        z0 = float(self.rng.uniform(0.8, 1.0))
        size[2] = min(size[2], self.height - z0 - 0.2)
        idx = self.on_wall("Window", z0, side=side, size=size)
        if idx is None:
            return None
        w = self.placed[idx]
        t = float((w.lo[0] + w.hi[0]) / 2 if side in (0, 2) else (w.lo[1] + w.hi[1]) / 2)
        r = self.rng.random()
        if r < 0.35 and z0 + size[2] + 0.16 < self.height:
            bs = self.size("Blinds")
            bs[1] = size[1]
            self.on_wall_at("Blinds", side, t, z0 + size[2] + 0.01, bs)
        elif r < 0.7:
            for sgn in (-1, 1):
                cs = self.size("Curtains")
                cs[2] = min(cs[2], z0 + size[2] + 0.15 - 0.05)
                self.on_wall_at("Curtains", side, t + sgn * (size[1] / 2 + cs[1] / 2 + 0.02),
                                z0 + size[2] + 0.15 - cs[2], cs)
        return idx

    # ---- items on surfaces ----------------------------------------------------------------------
    def on_surface(self, cat: str, kinds: tuple[str, ...] | None = None, surface: Surface | None = None,
                   tries: int = 12, yaw: float | None = None, size: ArrayLike3 | None = None, lying_book: bool = False,
                   where: tuple[float, float] | None = None) -> int | None:
        """Put a small item on a free spot of a matching surface; index or None.

        ``where`` optionally fixes the local (x, y) fraction in [0, 1]^2 of the surface rect.
        """
        if not self.allows(cat):
            return None
        kinds = kinds or CATEGORIES[cat].rests_on
        cands = [surface] if surface is not None else [s for s in self.surfaces if s.kind in kinds]
        if surface is None and self.rules.placement == "procthor":
            cands = [s for s in cands if self._holds(s, cat)]
        if not cands:
            return None
        size = self.size(cat) if size is None else np.asarray(size, float)
        if lying_book:
            size = np.array([size[0], size[2], size[1]])   # depth, height->width, thickness->height
        weights = np.array([s.area for s in cands])
        for _ in range(tries):
            s = cands[int(self.rng.choice(len(cands), p=weights / weights.sum()))]
            if size[2] > s.clear:
                continue
            yw = float(self.rng.uniform(-180, 180)) if yaw is None else yaw
            half = _half_xy(size, yw)
            x0, y0, x1, y1 = s.rect
            if x1 - x0 < 2 * half[0] or y1 - y0 < 2 * half[1]:
                continue
            if where is None:
                c = np.array([self.rng.uniform(x0 + half[0], x1 - half[0]), self.rng.uniform(y0 + half[1], y1 - half[1])])
            else:
                c = np.array([x0 + half[0] + where[0] * (x1 - x0 - 2 * half[0]),
                              y0 + half[1] + where[1] * (y1 - y0 - 2 * half[1])])
            r = (c[0] - half[0], c[1] - half[1], c[0] + half[0], c[1] + half[1])
            if any(r[0] < o[2] + 0.01 and o[0] < r[2] + 0.01 and r[1] < o[3] + 0.01 and o[1] < r[3] + 0.01
                   for o in s.occupied):
                continue
            lo, hi = np.array([r[0], r[1], s.z]), np.array([r[2], r[3], s.z + size[2]])
            if not self._free(lo, hi, ignore=s.parent):
                continue
            s.occupied.append(r)
            parts_local = book_lying(self.rng, size) if lying_book else None
            return self._commit(cat, size, np.array([c[0], c[1], s.z]), yw, "item", support=s.parent,
                                parts_local=parts_local, block=cat in ("Television", "Laptop", "DeskLamp"))
        return None

    def book_row(self, s: Surface, n: int) -> list[int]:
        """A row of ``n`` upright books on a shelf board, spines facing out."""
        out: list[int] = []
        yaw = s.yaw
        along = np.array([-np.sin(np.deg2rad(yaw)), np.cos(np.deg2rad(yaw))])   # local +y in world
        fwd = np.array([np.cos(np.deg2rad(yaw)), np.sin(np.deg2rad(yaw))])
        x0, y0, x1, y1 = s.rect
        c = np.array([(x0 + x1) / 2, (y0 + y1) / 2])
        length = abs(np.dot([x1 - x0, y1 - y0], along))
        depth = abs(np.dot([x1 - x0, y1 - y0], fwd))
        sizes = [self.size("Book") for _ in range(n)]
        sizes = [sz for sz in sizes if sz[2] <= s.clear and sz[0] <= depth]
        total = sum(sz[1] + 0.002 for sz in sizes)
        if not sizes or total > length - 0.02:
            return out
        start = float(self.rng.uniform(-length / 2 + 0.01, length / 2 - 0.01 - total))
        pos = start
        for sz in sizes:
            y = pos + sz[1] / 2
            xy = c + along * y + fwd * (depth / 2 - sz[0] / 2 - 0.005)
            half = _half_xy(sz, yaw)
            r = (xy[0] - half[0], xy[1] - half[1], xy[0] + half[0], xy[1] + half[1])
            pos += sz[1] + 0.002
            if any(r[0] < o[2] and o[0] < r[2] and r[1] < o[3] and o[1] < r[3] for o in s.occupied):
                continue
            s.occupied.append(r)
            out.append(self._commit("Book", sz, np.array([xy[0], xy[1], s.z]), yaw, "item", support=s.parent,
                                    block=False))
        return out
