"""Room shells: floor plans, walls with door openings, floors, ceilings, door frames and lights.

A floor plan is a set of axis-aligned rectangular rooms whose boundaries lie on wall *lines*
(world x = const or y = const). Walls are built once per line from the union of the room sides
on it (so a wall two rooms share is one box, not two), 10 cm thick and centred on the line, and
are cut by door openings (0.9 m x 2.1 m) between rooms that a spanning tree connects.
World frame: z up, metres, floor top at z = 0.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from spatialscout_gym.core.limits import WORLD_BOX_M
from spatialscout_gym.core.spec import Light, SceneObject
from spatialscout_gym.scenes.geometry import box, mat

__all__ = ["Room", "Door", "FloorPlan", "single_room_plan", "apartment_plan", "build_shell",
           "WALL_T", "DOOR_W", "DOOR_H", "ROOM_SIZES", "plan_extent", "inside_world_box"]

WALL_T = 0.10
DOOR_W = 0.9
DOOR_H = 2.1

# Interior size ranges (x, y) in metres per room kind.
ROOM_SIZES: dict[str, tuple[tuple[float, float], tuple[float, float]]] = {
    "Kitchen": ((3.4, 4.8), (3.0, 4.2)),
    "LivingRoom": ((4.2, 6.2), (3.6, 5.2)),
    "Bedroom": ((3.6, 4.8), (3.2, 4.4)),
    "Bathroom": ((2.8, 3.4), (2.6, 3.2)),
    "Office": ((3.2, 4.4), (3.0, 4.0)),
}


@dataclass
class Door:
    """A door opening in the wall on line ``axis = coord`` (axis "x": the line x = coord),
    centred at ``t`` along the line."""

    axis: str
    coord: float
    t: float
    width: float = DOOR_W


@dataclass
class Room:
    """A rectangular room; ``x0..x1, y0..y1`` are its wall *lines* (interior is 5 cm inside)."""

    name: str
    kind: str
    x0: float
    y0: float
    x1: float
    y1: float
    exterior: list[int] = field(default_factory=list)
    """Sides (0 south, 1 east, 2 north, 3 west) that are outer walls (windows go there)."""

    @property
    def interior(self) -> tuple[float, float, float, float]:
        h = WALL_T / 2
        return self.x0 + h, self.y0 + h, self.x1 - h, self.y1 - h

    @property
    def center(self) -> np.ndarray:
        return np.array([(self.x0 + self.x1) / 2, (self.y0 + self.y1) / 2])


@dataclass
class FloorPlan:
    rooms: list[Room]
    doors: list[Door]
    height: float

    def doors_of(self, room: Room) -> list[tuple[int, float, float]]:
        """Door openings on ``room``'s sides as ``(side, t_center, width)``; ``t`` is the world x
        (sides 0, 2) or y (sides 1, 3) of the opening's centre."""
        out = []
        for d in self.doors:
            if d.axis == "y":   # line y = coord: south or north side
                if abs(d.coord - room.y0) < 1e-6 and room.x0 < d.t < room.x1:
                    out.append((0, d.t, d.width))
                if abs(d.coord - room.y1) < 1e-6 and room.x0 < d.t < room.x1:
                    out.append((2, d.t, d.width))
            else:
                if abs(d.coord - room.x0) < 1e-6 and room.y0 < d.t < room.y1:
                    out.append((3, d.t, d.width))
                if abs(d.coord - room.x1) < 1e-6 and room.y0 < d.t < room.y1:
                    out.append((1, d.t, d.width))
        return out


def _sample_size(rng: np.random.Generator, kind: str, scale=1.0) -> tuple[float, float]:
    """Interior (x, y) of a ``kind`` room, metres; ``scale`` is a factor or a ``kind -> factor``."""
    scale = scale(kind) if callable(scale) else scale
    (ax, bx), (ay, by) = ROOM_SIZES[kind]
    return (float(np.round(rng.uniform(ax * scale, bx * scale), 2)),
            float(np.round(rng.uniform(ay * scale, by * scale), 2)))


def single_room_plan(rng: np.random.Generator, kind: str, scale: float = 1.0) -> FloorPlan:
    """One room of ``kind`` with its south-west wall line at the origin; ``scale`` multiplies
    the :data:`ROOM_SIZES` ranges (a catalog version's rule, scenes/sizes.py)."""
    w, d = _sample_size(rng, kind, scale)
    room = Room(f"{kind}_1", kind, 0.0, 0.0, w + WALL_T, d + WALL_T, [0, 1, 2, 3])
    return FloorPlan([room], [], float(np.round(rng.uniform(2.6, 2.9), 2)))


def apartment_plan(rng: np.random.Generator, kinds: list[str], scale: float = 1.0) -> FloorPlan:
    """2-5 rooms in two rows (or one row for 2-3 rooms), connected by doors.

    Rooms of one row share the row depth; a row's rooms split the apartment width in proportion
    to their sampled widths. Every pair of rooms sharing at least 1.3 m of wall is a door
    candidate; a random spanning tree of those pairs gets doors, so every room is reachable.
    """
    n = len(kinds)
    if not 2 <= n <= 5:
        raise ValueError(f"an apartment has 2-5 rooms, got {n}")
    split = {2: [2], 3: [3] if rng.random() < 0.5 else [2, 1], 4: [2, 2], 5: [3, 2]}[n]
    order = list(kinds)
    rows = [order[:split[0]], order[split[0]:]] if len(split) == 2 else [order]
    sizes = [[_sample_size(rng, k, scale) for k in row] for row in rows]
    width = max(sum(s[0] for s in row) for row in sizes)
    rooms: list[Room] = []
    y = 0.0
    for r, (row, srow) in enumerate(zip(rows, sizes)):
        depth = float(np.round(max(s[1] for s in srow) * rng.uniform(0.9, 1.0), 2))
        tot = sum(s[0] for s in srow)
        x = 0.0
        for k, (kind, s) in enumerate(zip(row, srow)):
            w = float(np.round(width * s[0] / tot, 2)) if k < len(row) - 1 else float(np.round(width - x, 2))
            ext = [i for i, cond in enumerate([r == 0, k == len(row) - 1, r == len(rows) - 1, k == 0]) if cond]
            idx = sum(1 for rm in rooms if rm.kind == kind) + 1
            rooms.append(Room(f"{kind}_{idx}", kind, x, y, x + w, y + depth, ext))
            x += w
        y += depth
    # door candidates: shared wall segments of >= 1.3 m
    pairs = []
    for i in range(n):
        for j in range(i + 1, n):
            a, b = rooms[i], rooms[j]
            for axis, ca, cb, lo, hi in (
                    ("x", a.x1, b.x0, max(a.y0, b.y0), min(a.y1, b.y1)),
                    ("x", a.x0, b.x1, max(a.y0, b.y0), min(a.y1, b.y1)),
                    ("y", a.y1, b.y0, max(a.x0, b.x0), min(a.x1, b.x1)),
                    ("y", a.y0, b.y1, max(a.x0, b.x0), min(a.x1, b.x1))):
                if abs(ca - cb) < 1e-6 and hi - lo >= 1.3:
                    pairs.append((i, j, axis, ca, lo, hi))
    pairs = [pairs[k] for k in rng.permutation(len(pairs))]
    parent = list(range(n))

    def find(i: int) -> int:
        while parent[i] != i:
            i = parent[i]
        return i

    doors = []
    for i, j, axis, c, lo, hi in pairs:
        if find(i) != find(j):
            parent[find(i)] = find(j)
            t = float(np.round(rng.uniform(lo + 0.15 + DOOR_W / 2, hi - 0.15 - DOOR_W / 2), 2))
            doors.append(Door(axis, c, t))
    if len({find(i) for i in range(n)}) != 1:
        raise RuntimeError("apartment plan is not connected; this is a generator bug")
    return FloorPlan(rooms, doors, float(np.round(rng.uniform(2.6, 2.9), 2)))


def plan_extent(plan: FloorPlan) -> tuple[float, float, float, float]:
    """``(x0, y0, x1, y1)`` of the plan's outer wall faces, metres (wall lines +- half a wall)."""
    h = WALL_T / 2
    return (min(r.x0 for r in plan.rooms) - h, min(r.y0 for r in plan.rooms) - h,
            max(r.x1 for r in plan.rooms) + h, max(r.y1 for r in plan.rooms) + h)


def inside_world_box(plan: FloorPlan) -> FloorPlan:
    """``plan``, moved so that it lies inside the +-:data:`WORLD_BOX_M` world box.

    Plans grow from the origin towards +x and +y; a wide apartment would end beyond the box, where
    the camera may not go. Such a plan is centred on the origin along each axis it crosses; a plan
    inside the box is returned untouched (so every catalog scene keeps its coordinates).
    """
    x0, y0, x1, y1 = plan_extent(plan)
    dx = -(x0 + x1) / 2 if x0 < -WORLD_BOX_M or x1 > WORLD_BOX_M else 0.0
    dy = -(y0 + y1) / 2 if y0 < -WORLD_BOX_M or y1 > WORLD_BOX_M else 0.0
    if dx == 0.0 and dy == 0.0:
        return plan
    dx, dy = float(np.round(dx, 2)), float(np.round(dy, 2))
    rooms = [Room(r.name, r.kind, r.x0 + dx, r.y0 + dy, r.x1 + dx, r.y1 + dy, list(r.exterior)) for r in plan.rooms]
    doors = [Door(d.axis, d.coord + (dx if d.axis == "x" else dy), d.t + (dy if d.axis == "x" else dx), d.width)
             for d in plan.doors]
    return FloorPlan(rooms, doors, plan.height)


_FLOORS = {"Kitchen": ("tiles", (0.8, 0.8, 0.78)), "Bathroom": ("tiles", (0.85, 0.88, 0.9)),
           "LivingRoom": ("wood", (0.55, 0.38, 0.22)), "Bedroom": ("carpet", (0.6, 0.55, 0.5)),
           "Office": ("carpet", (0.4, 0.42, 0.45))}
_WALL_COLORS = [(0.93, 0.91, 0.86), (0.85, 0.88, 0.9), (0.9, 0.85, 0.78), (0.82, 0.87, 0.8),
                (0.95, 0.95, 0.95), (0.88, 0.82, 0.82)]


def _intervals_minus(lo: float, hi: float, cuts: list[tuple[float, float]]) -> list[tuple[float, float]]:
    segs = [(lo, hi)]
    for a, b in sorted(cuts):
        nxt = []
        for s, e in segs:
            if b <= s or a >= e:
                nxt.append((s, e))
            else:
                if a > s:
                    nxt.append((s, a))
                if b < e:
                    nxt.append((b, e))
        segs = nxt
    return [(s, e) for s, e in segs if e - s > 1e-3]


def build_shell(plan: FloorPlan, rng: np.random.Generator) -> tuple[list[SceneObject], list[Light]]:
    """Static structure (floors, ceilings, walls, door frames) and lights of a floor plan.

    Returns objects with role ``"static"`` (ids ``Floor_k``, ``Wall_k``, ...; the caller may
    renumber) and one ceiling point light per room.
    """
    H = plan.height
    wall_c = _WALL_COLORS[int(rng.integers(len(_WALL_COLORS)))]
    wall_m = mat(wall_c, 0.9, texture={"kind": "noise", "seed": int(rng.integers(2**31 - 1)),
                                       "color": list(wall_c), "color2": [c * 0.95 for c in wall_c],
                                       "scale": 1.0})
    objs: list[SceneObject] = []
    lights: list[Light] = []
    for room in plan.rooms:
        kind, c = _FLOORS[room.kind]
        fm = mat(c, 0.6, texture={"kind": kind, "seed": int(rng.integers(2**31 - 1)), "color": list(c),
                                  "color2": [x * 0.75 for x in c], "scale": 1.0})
        w, d = room.x1 - room.x0, room.y1 - room.y0
        cx, cy = room.center
        objs.append(SceneObject(f"Floor_{room.name}", "Floor", "Floor", "static",
                                [box((cx, cy, -0.025), (w, d, 0.05), fm)], movable=False, room=room.name))
        objs.append(SceneObject(f"Ceiling_{room.name}", "Ceiling", "Ceiling", "static",
                                [box((cx, cy, H + 0.025), (w, d, 0.05), mat((0.96, 0.96, 0.95), 0.9))],
                                movable=False, room=room.name))
        area = w * d
        lights.append(Light("point", (3.0 * area / 12 + 2.0,) * 3, np.array([cx, cy, H - 0.3])))
    # wall lines
    lines: dict[tuple[str, float], list[tuple[float, float]]] = {}
    for r in plan.rooms:
        for key, seg in ((("y", r.y0), (r.x0, r.x1)), (("y", r.y1), (r.x0, r.x1)),
                         (("x", r.x0), (r.y0, r.y1)), (("x", r.x1), (r.y0, r.y1))):
            lines.setdefault((key[0], round(key[1], 6)), []).append(seg)
    k = 0
    for (axis, coord), segs in sorted(lines.items()):
        lo, hi = min(s[0] for s in segs), max(s[1] for s in segs)
        doors = [door for door in plan.doors if door.axis == axis and abs(door.coord - coord) < 1e-6]
        cuts = [(door.t - door.width / 2, door.t + door.width / 2) for door in doors]
        parts = []
        for s, e in _intervals_minus(lo - WALL_T / 2, hi + WALL_T / 2, cuts):
            parts.append(_wall_box(axis, coord, s, e, 0.0, H, wall_m))
        for door in doors:
            parts.append(_wall_box(axis, coord, door.t - door.width / 2, door.t + door.width / 2, DOOR_H, H, wall_m))
        k += 1
        objs.append(SceneObject(f"Wall_{k}", "Wall", "Wall", "static", parts, movable=False))
        for door in doors:   # door frame trim
            trim = mat((0.95, 0.95, 0.93), 0.5)
            fparts = [_wall_box(axis, coord, door.t - door.width / 2 - 0.05, door.t - door.width / 2, 0.0, DOOR_H + 0.05, trim, WALL_T + 0.03),
                      _wall_box(axis, coord, door.t + door.width / 2, door.t + door.width / 2 + 0.05, 0.0, DOOR_H + 0.05, trim, WALL_T + 0.03),
                      _wall_box(axis, coord, door.t - door.width / 2, door.t + door.width / 2, DOOR_H, DOOR_H + 0.05, trim, WALL_T + 0.03)]
            objs.append(SceneObject(f"Doorway_{len([o for o in objs if o.category == 'Doorway']) + 1}",
                                    "Doorway", "Doorway", "static", fparts, movable=False))
    return objs, lights


def _wall_box(axis: str, coord: float, s: float, e: float, z0: float, z1: float, m, t: float = WALL_T):
    if axis == "y":
        return box(((s + e) / 2, coord, (z0 + z1) / 2), (e - s, t, z1 - z0), m)
    return box((coord, (s + e) / 2, (z0 + z1) / 2), (t, e - s, z1 - z0), m)
