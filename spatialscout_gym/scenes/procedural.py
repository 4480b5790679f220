"""The procedural scene generator: furnished single rooms and 2-5 room apartments.

Deterministic per seed: every random draw comes from one ``numpy.random.Generator`` seeded by
a :class:`numpy.random.SeedSequence`. Training scenes use ``SeedSequence([TRAIN_NAMESPACE,
seed])``; the catalog (scenes/catalog.py) uses ``SeedSequence([CATALOG_NAMESPACE, index])``,
so no training seed can reproduce a catalog scene.

Targets and hiding follow docs/protocol.md section 8: candidates (movable, known category) are ordered by
the distance from the initial camera to their AABB centre, object id breaking ties; the first N
are ``role="target"``, the other candidates ``role="hidden"`` (not rendered); structure is
``role="static"``. An item whose supporting furniture would be hidden while the item is a target
is removed from the scene first (it would float), and the selection is redone.

The initial camera stands 0.6-1.1 m in front of a wall of the (first) living room or the single
room, at eye height 1.5-1.7 m, looking into the room with a yaw jitter of +-25 deg and a pitch in
[-15, 5] deg. Intrinsics: 512 x 512, vertical field of view :data:`FOV_Y_DEG` (65 deg) for every
scene.
"""

from __future__ import annotations

import numpy as np

from spatialscout_gym.core.camera import Intrinsics, project_world_to_pixel
from spatialscout_gym.core.frames import CameraPose
from spatialscout_gym.core.spec import SceneObject, SceneSpec
from spatialscout_gym.scenes.categories import GENERIC_ITEMS, SMALL_ITEMS_BY_ROOM
from spatialscout_gym.scenes.layout import SIDE_YAW, Placed, RoomLayout
from spatialscout_gym.scenes.sizes import RULES, TRAINING_RULES, GeneratorRules, rules_for
from spatialscout_gym.scenes.rooms import (FloorPlan, apartment_plan, build_shell, inside_world_box,
                                           single_room_plan)

__all__ = ["procedural_scene", "TooFewCandidatesError", "generate_scene", "ROOM_KINDS", "LAYOUTS", "SINGLE_ROOM_SHARE", "checked_single_room_share", "FOV_Y_DEG", "IMAGE_SIZE",
           "TRAIN_NAMESPACE", "assign_roles", "floor_plan", "training_seed_sequence"]

TRAIN_NAMESPACE = 0x7472_6169   # "trai"
ROOM_KINDS = ("Kitchen", "LivingRoom", "Bedroom", "Bathroom", "Office")
LAYOUTS = ROOM_KINDS + ("Apartment",)
SINGLE_ROOM_SHARE = 0.6
"""The generator's own chance that a drawn layout is a single room (the rest are apartments)."""
FOV_Y_DEG = 65.0
IMAGE_SIZE = 512
DEFAULT_RULES_VERSION = "3.0"
"""Training scenes follow the default catalog's rules unless asked otherwise."""


def procedural_scene(seed: int, n_targets: int = 40, layout: str | None = None,
                     n_rooms: int | None = None, catalog_version: str = DEFAULT_RULES_VERSION,
                     single_room_share: float = SINGLE_ROOM_SHARE) -> SceneSpec:
    """A training scene from any integer ``seed`` (never a catalog scene).

    Parameters
    ----------
    seed : int
        Any non-negative integer.
    n_targets : int
        Inventory size N (docs/protocol.md section 1; the paper uses 35 or 40).
    layout : str, optional
        One of :data:`LAYOUTS`; drawn from the seed when None (a single room with probability
        ``single_room_share``, else an apartment).
    n_rooms : int, optional
        Rooms of an apartment (2-5); drawn when None.
    catalog_version : str
        Whose generator rules (object sizes, room sizes; scenes/sizes.py) to follow: training
        scenes resemble that catalog version (v3.1's are v3.0's: ``TRAINING_RULES``). Default: v3.0.
    single_room_share : float
        Probability in [0, 1] that a drawn layout is a single room (default
        :data:`SINGLE_ROOM_SHARE`, the generator's own mix); the same uniform draw decides it, so
        a seed keeps its scene whenever the share leaves that draw on the same side. A share
        other than the default is recorded in the scene's ``source``.
    """
    if int(seed) < 0:
        raise ValueError(f"seed must be a non-negative integer, got {seed}")
    share = checked_single_room_share(single_room_share)
    rules = rules_for(TRAINING_RULES.get(str(catalog_version), str(catalog_version)))
    # A draw whose room cannot hold N targets (a small bathroom asked for 40 under v3.0's repeat
    # caps) is drawn again from a sub-stream of the same seed, so every seed gives a scene.
    for redraw in range(_REDRAWS):
        source = {"generator": "procedural", "stream": "train", "seed": int(seed), "rules": rules.version,
                  **({"redraw": redraw} if redraw else {}),
                  **({"single_room_share": share} if share != SINGLE_ROOM_SHARE else {})}
        try:
            return generate_scene(training_seed_sequence(seed, redraw), n_targets, layout, f"procedural_{int(seed)}",
                                  n_rooms=n_rooms, source=source, rules=rules, single_room_share=share)
        except TooFewCandidatesError:
            if redraw == _REDRAWS - 1:
                raise
    raise AssertionError("unreachable")


def checked_single_room_share(share: float) -> float:
    """``share`` as a float, or a ``ValueError`` when it is not a probability in [0, 1] (NaN
    included)."""
    value = float(share)
    if not 0.0 <= value <= 1.0:
        raise ValueError(f"single_room_share must be a probability in [0, 1], got {share}")
    return value


_REDRAWS = 8
"""Draws :func:`procedural_scene` tries for one seed before it gives up."""


class TooFewCandidatesError(RuntimeError):
    """A generated scene holds fewer candidate objects than the N targets asked for."""


def generate_scene(seed_seq: np.random.SeedSequence, n_targets: int, layout: str | None,
                   scene_id: str, n_rooms: int | None = None, source: dict | None = None,
                   rules: GeneratorRules = RULES["1.0"],
                   single_room_share: float = SINGLE_ROOM_SHARE, in_world_box: bool = True) -> SceneSpec:
    """Generate one scene from a seed sequence (the shared engine of training and catalog) under
    a catalog version's ``rules`` (scenes/sizes.py); an undrawn layout is a single room with
    probability ``single_room_share``. With ``in_world_box`` a plan reaching past the world box is
    moved inside it (:func:`floor_plan`); the frozen catalog keeps its plans as they were drawn."""
    if layout is not None and layout not in LAYOUTS:
        raise ValueError(f"unknown layout {layout!r}; expected one of {', '.join(LAYOUTS)}")
    if not 1 <= n_targets <= 80:
        raise ValueError(f"n_targets must be in 1..80, got {n_targets}")
    rng = np.random.default_rng(seed_seq)
    layout, plan = floor_plan(rng, layout, n_rooms, rules, single_room_share, in_world_box)
    static, lights = build_shell(plan, rng)
    if layout == "Apartment":   # usually the living room; sometimes another room, looking out
        w = np.array([3.0 if r.kind == "LivingRoom" else 1.0 for r in plan.rooms])
        cam_room = plan.rooms[int(rng.choice(len(plan.rooms), p=w / w.sum()))]
    else:
        cam_room = plan.rooms[0]

    try:
        placed, layouts, camera = _furnish(plan, rng, cam_room, early_camera=False, rules=rules)
    except _NoCameraSpot:   # a crowded room: keep the camera's spot free before furnishing
        placed, layouts, camera = _furnish(plan, rng, cam_room, early_camera=True, rules=rules)
    # small items: the camera room gets enough for N targets plus some hidden ones
    single = layout != "Apartment"
    need = n_targets + int(rng.integers(2, 8) if single else rng.integers(4, 14))
    for room in plan.rooms:
        L = layouts[room.name]
        area = (room.x1 - room.x0) * (room.y1 - room.y0)
        _fill(L, int(area * (rng.uniform(0.5, 0.9) if single else rng.uniform(0.12, 0.3))))
    cam_L = layouts[cam_room.name]
    # Under repeat caps (v3.0) a room too small for N targets gets one more of each loose item per
    # try, then none; a try must also reach ``need``: spare (hidden) candidates for the visibility pass.
    capped = rules.loose_repeat_cap > 0
    tries = 5 if capped else 4
    for attempt in range(tries):
        if capped:
            cam_L.cap_bonus = attempt if attempt < tries - 1 else 10_000
        _top_up(cam_L, list(layouts.values()), placed, need + 4 * attempt)
        objects, supports = _to_objects(static, placed)
        try:
            if capped and attempt < tries - 1 and sum(o.movable for o in objects) < need:
                raise TooFewCandidatesError("too few spare candidates")
            objects = assign_roles(objects, camera, n_targets, supports)
            break
        except RuntimeError:
            if attempt == tries - 1:
                raise
    if rules.drop_unseen:
        objects = _drop_unseen(objects, camera, n_targets, supports)
    intr = Intrinsics.from_fov(IMAGE_SIZE, IMAGE_SIZE, FOV_Y_DEG)
    desc = {"layout": "apartment" if layout == "Apartment" else "single_room",
            "rooms": [r.kind for r in plan.rooms], "camera_room": cam_room.kind}
    return SceneSpec.from_objects(scene_id, objects, camera, intr, lights, ambient_light=(0.35, 0.35, 0.35),
                                  source=source or {}, description=desc)


def floor_plan(rng: np.random.Generator, layout: str | None, n_rooms: int | None = None,
               rules: GeneratorRules = RULES["1.0"],
               single_room_share: float = SINGLE_ROOM_SHARE,
               in_world_box: bool = True) -> tuple[str, FloorPlan]:
    """The layout and the floor plan, the first draws of :func:`generate_scene` from ``rng``.

    With ``in_world_box`` the plan lies inside the world box (scenes/rooms.py
    ``inside_world_box``), so the start camera, the targets and the rooms do too: this stage alone
    decides where rooms stand.
    """
    if layout is None:
        layout = str(rng.choice(ROOM_KINDS)) if rng.random() < single_room_share else "Apartment"
    if layout == "Apartment":
        n = int(rng.integers(2, 6)) if n_rooms is None else int(n_rooms)
        kinds = ["LivingRoom", "Kitchen"] + ["Bedroom", "Bathroom", "Office"][: n - 2]
        order = rng.permutation(len(kinds))
        plan = apartment_plan(rng, [kinds[i] for i in order], _room_scale(rules))
    else:
        plan = single_room_plan(rng, layout, _room_scale(rules))
    return layout, inside_world_box(plan) if in_world_box else plan


def training_seed_sequence(seed: int, redraw: int = 0) -> np.random.SeedSequence:
    """The seed sequence of training scene ``seed``'s ``redraw``-th draw (:func:`procedural_scene`)."""
    return np.random.SeedSequence([TRAIN_NAMESPACE, int(seed)] + ([redraw] if redraw else []))


def _room_scale(rules: GeneratorRules):
    """The rules' room size factor: a number, or per kind when the rules name kinds (so older
    versions pass the very same float)."""
    return rules.room_scale_of if rules.room_scale_by_kind else rules.room_scale


class _NoCameraSpot(RuntimeError):
    """The camera room has no free spot for the initial camera."""


def _furnish(plan: FloorPlan, rng: np.random.Generator, cam_room, early_camera: bool,
             rules: GeneratorRules = RULES["1.0"]):
    """Furniture, windows and wall decor of every room, and the initial camera.

    With ``early_camera`` the camera's spot is chosen (and kept free) before furnishing;
    otherwise after, choosing the spot whose view holds the most objects.
    """
    placed: list[Placed] = []
    layouts: dict[str, RoomLayout] = {}
    camera = None
    for room in plan.rooms:
        doors = plan.doors_of(room)
        L = RoomLayout(room, plan.height, doors, rng, placed, rules)
        if room is cam_room or (len(plan.rooms) == 1):
            entrance = _entrance_door(L, plan, doors, rng)
            if entrance is not None:
                L.add_door(*entrance)
        layouts[room.name] = L
        if early_camera and room is cam_room:
            camera = _place_camera(L, rng, [])
        FURNISH[room.kind](L)
        n_win = int(rng.choice([1, 1, 2, 2, 3])) if room.exterior else 0
        for side in rng.choice(room.exterior, size=min(n_win, len(room.exterior)), replace=False) if n_win else []:
            L.window(int(side))
        _wall_decor(L)
    if camera is None:
        camera = _place_camera(layouts[cam_room.name], rng, placed)
    return placed, layouts, camera


# ---------------------------------------------------------------- roles ----------------------
def assign_roles(objects: list[SceneObject], camera: CameraPose, n_targets: int,
                 supports: dict[str, str] | None = None) -> list[SceneObject]:
    """Apply docs/protocol.md section 8's selection to ``objects`` (returns a new list; ``movable``
    candidates get ``"target"`` or ``"hidden"``, the rest ``"static"``).

    Candidates are sorted by (distance from the camera centre to the AABB centre, id). Items whose
    support (``supports[item id] = support id``) would be hidden while they are targets are
    dropped first.
    """
    objs = list(objects)
    # AABBs are the costly part; a candidate's distance never changes between the passes below
    dist_all = {o.id: float(np.linalg.norm(sum(o.aabb_world) / 2 - camera.position_world))
                for o in objs if o.movable}
    while True:
        cands = [o for o in objs if o.movable]
        if len(cands) < n_targets:
            raise TooFewCandidatesError(f"scene has {len(cands)} candidates, fewer than n_targets={n_targets}; "
                                        "the generator must add more items (generator bug)")
        dist = {o.id: dist_all[o.id] for o in cands}
        order = sorted(cands, key=lambda o: (round(dist[o.id], 9), o.id))
        targets = {o.id for o in order[:n_targets]}
        drop = set()
        for o in cands:
            sup = (supports or {}).get(o.id, "")
            if o.id in targets and sup and sup in dist and sup not in targets:
                drop.add(o.id)
        if not drop:
            break
        objs = [o for o in objs if o.id not in drop]
    for o in objs:
        o.role = ("target" if o.id in targets else "hidden") if o.movable else "static"
    rank = {o.id: k for k, o in enumerate(order)}
    # Inventory order: targets by distance (from_objects takes targets in list order).
    objs.sort(key=lambda o: (0, rank[o.id]) if o.id in targets else (1, 0))
    return objs


def _drop_unseen(objects: list[SceneObject], camera: CameraPose, n_targets: int,
                 supports: dict[str, str]) -> list[SceneObject]:
    """Catalog v2.0: remove targets no viewpoint inside the search ball sees (scenes/visibility.py),
    with the items resting on them, and select again, until every target is visible."""
    from spatialscout_gym.scenes.visibility import unseen_targets
    for _ in range(10):
        centres = [sum(o.aabb_world) / 2 for o in objects if o.role == "target"]
        radius = float(max(np.linalg.norm(c - camera.position_world) for c in centres))
        bad = set(unseen_targets(objects, camera.position_world, radius))
        if not bad:
            return objects
        while True:   # items on a dropped object would float
            more = {i for i, s in supports.items() if s in bad and i not in bad}
            if not more:
                break
            bad |= more
        objects = assign_roles([o for o in objects if o.id not in bad], camera, n_targets, supports)
    raise RuntimeError("targets stay unseen after 10 re-selections (generator bug)")


def _to_objects(static: list[SceneObject], placed: list[Placed]) -> tuple[list[SceneObject], dict[str, str]]:
    counters: dict[str, int] = {}
    ids = []
    for p in placed:
        counters[p.category] = counters.get(p.category, 0) + 1
        ids.append(f"{p.category}_{counters[p.category]}")
    out = list(static)
    supports = {}
    for p, pid in zip(placed, ids):
        if p.support >= 0 and placed[p.support].candidate:
            supports[pid] = ids[p.support]
        out.append(SceneObject(pid, p.category, p.category, "static", p.parts, movable=p.candidate, room=p.room))
    return out, supports


# ---------------------------------------------------------------- camera & doors ---------------
def _entrance_door(L: RoomLayout, plan: FloorPlan, doors, rng) -> tuple[int, float, float] | None:
    """A closed door panel on an outer wall (static structure); returns its (side, t, width)."""
    from spatialscout_gym.scenes.geometry import box, mat
    room = L.room
    sides = [s for s in room.exterior if all(d[0] != s for d in doors)] or room.exterior
    if not sides:
        return None
    side = int(rng.choice(sides))
    a, b = L._wall_span(side)
    if b - a < 1.4:
        return None
    t = float(rng.uniform(a + 0.6, b - 0.6))
    c = L._wall_point(side, t, 0.02)
    yaw = SIDE_YAW[side]
    from spatialscout_gym.scenes.geometry import place
    wood_c = (0.55, 0.38, 0.22) if rng.random() < 0.5 else (0.92, 0.92, 0.9)
    parts = place([box((0, 0, 1.025), (0.04, 0.9, 2.05), mat(wood_c, 0.5)),
                   box((0.03, -0.35, 1.0), (0.02, 0.12, 0.02), mat((0.7, 0.7, 0.72), 0.3, 0.9))],
                  np.array([c[0], c[1], 0.0]), yaw)
    from spatialscout_gym.scenes.geometry import parts_aabb
    lo, hi = parts_aabb(parts)
    L.placed.append(Placed("Door", parts, lo, hi, room.name, "structure", False, -1, yaw))
    return (side, t, 0.9)


def _place_camera(L: RoomLayout, rng: np.random.Generator, placed: list[Placed]) -> CameraPose:
    """The initial camera: 0.6-1.1 m in front of a wall, eye height, looking into the room.

    Of up to 24 free spots (a 0.8 m square kept clear of furniture; anywhere and down to 0.44 m
    when the room is crowded), the one whose view holds the
    most furniture and wall-item centres wins, so the first image shows the room, not a wall.
    The spot is then reserved so items placed later keep clear of it.
    """
    intr = Intrinsics.from_fov(IMAGE_SIZE, IMAGE_SIZE, FOV_Y_DEG)
    centres = np.array([(p.lo + p.hi) / 2 for p in placed if p.room == L.room.name]).reshape(-1, 3)
    best, best_n = None, -1
    for k in range(80):
        if k >= 24 and best is not None:
            break
        side = int(rng.integers(4))
        across = (L.iy1 - L.iy0) if side in (0, 2) else (L.ix1 - L.ix0)
        a, b = L._wall_span(side)
        m = L.rules.camera_wall_margin
        t = float(rng.uniform(a + m * (b - a), b - m * (b - a)))
        o0, o1 = L.rules.camera_offset_m
        off = float(rng.uniform(o0, max(o0 + 0.01, min(o1, across * 0.3)))) if k < 24 else \
            float(rng.uniform(0.3, across * 0.5))
        xy = L._wall_point(side, t, off)
        half = 0.4 if k < 24 else (0.3 if k < 50 else 0.22)
        lo, hi = np.array([xy[0] - half, xy[1] - half, 0.0]), np.array([xy[0] + half, xy[1] + half, 2.0])
        if not L._free(lo, hi):
            continue
        yaw = float((SIDE_YAW[side] + rng.uniform(-25, 25) + 180) % 360 - 180)
        pose = CameraPose(np.array([xy[0], xy[1], float(rng.uniform(1.5, 1.7))]), yaw, float(rng.uniform(-15, 5)))
        n = 0
        if len(centres):
            uv, depth = project_world_to_pixel(intr, pose, centres)
            n = int(np.sum((depth > 0.3) & (uv[:, 0] >= 0) & (uv[:, 0] < IMAGE_SIZE) & (uv[:, 1] >= 0)
                           & (uv[:, 1] < IMAGE_SIZE)))
        if n > best_n:
            best, best_n = (pose, lo, hi), n
    if best is None:
        raise _NoCameraSpot(f"no free spot for the initial camera in {L.room.name}")
    L.reserve(best[1], best[2])
    return best[0]


# ---------------------------------------------------------------- furnishing -----------------
def _wall_decor(L: RoomLayout) -> None:
    rng = L.rng
    for _ in range(int(rng.integers(0, 4))):
        L.on_wall("Painting")
    if rng.random() < 0.3:
        L.on_wall("Poster")
    if L.doors and rng.random() < 0.5:
        side, t, w = L.doors[int(rng.integers(len(L.doors)))]
        for sgn in (1, -1):
            if L.on_wall("LightSwitch", 1.15, side=side, t=t + sgn * (w / 2 + 0.2)) is not None:
                break


def _shelves_with_books(L: RoomLayout, idx: int | None) -> None:
    if idx is None:
        return
    for s in [s for s in L.surfaces if s.parent == idx and s.kind == "shelf"]:
        if L.rng.random() < 0.1:
            L.book_row(s, int(L.rng.integers(2, 5)))


def _kitchen(L: RoomLayout) -> None:
    rng = L.rng
    sides = list(rng.permutation(4))
    for sd in sides[:2]:
        a, b = L._wall_span(int(sd))
        size = L.size("CounterTop")
        size[1] = min(b - a - 0.1, rng.uniform(1.6, 2.8))
        c = L.against_wall("CounterTop", side=int(sd), size=size, gap=0.0)
        if c is not None:
            cs = L.size("Cabinet")
            cs[1] = min(size[1], 1.8)
            t = float((L.placed[c].lo[0] + L.placed[c].hi[0]) / 2 if sd in (0, 2) else (L.placed[c].lo[1] + L.placed[c].hi[1]) / 2)
            L.on_wall_at("Cabinet", int(sd), t, 1.5, cs)
    L.against_wall("Fridge")
    L.against_wall("GarbageCan")
    for cat in ("Microwave", "Toaster", "CoffeeMachine", "Faucet"):
        if rng.random() < 0.8:
            if cat == "Faucet" and L.rules.sink == "basin":
                counters = [s for s in L.surfaces if s.kind == "counter"]
                _sink_with_faucet(L, counters[int(rng.integers(len(counters)))] if counters else None)
            else:
                L.on_surface(cat, ("counter",), yaw=_counter_yaw(L))
    for cat in ("Kettle", "Pot", "Pan"):
        if rng.random() < 0.5:
            L.on_surface(cat, ("counter",))
    if rng.random() < 0.9:
        table = L.free_standing("DiningTable", margin=0.75)
        if table is not None:
            L.chairs_around(table, max_chairs=int(rng.integers(2, 7)))
    if rng.random() < 0.4:
        L.against_wall("Stool")
    if rng.random() < 0.4:
        _shelves_with_books(L, L.against_wall("ShelvingUnit"))
    if rng.random() < 0.4:
        L.against_wall("HousePlant")
    if L.rules.placement == "procthor" and rng.random() < 0.35:
        L.against_wall("GarbageBag")


def _counter_yaw(L: RoomLayout) -> float:
    ss = [s for s in L.surfaces if s.kind == "counter"]
    return ss[0].yaw if ss else 0.0


def _living(L: RoomLayout) -> None:
    rng = L.rng
    sofa = L.against_wall("Sofa")
    if sofa is not None:
        L.in_front(sofa, "CoffeeTable", float(rng.uniform(0.35, 0.5)), facing_back=False)
        for _ in range(int(rng.integers(L.rules.pillows_min, 4))):
            L.on_surface("Pillow", ("sofa",), yaw=L.placed[sofa].yaw + float(rng.uniform(-15, 15)))
        tv = L.in_front(sofa, "TVStand", float(rng.uniform(1.6, 2.4)))
        if tv is None:
            tv = L.against_wall("TVStand")
        if tv is not None:
            s = [s for s in L.surfaces if s.parent == tv][0]
            L.on_surface("Television", surface=s, yaw=L.placed[tv].yaw, where=(0.5, 0.5))
    else:
        L.free_standing("CoffeeTable")
    for _ in range(int(rng.integers(1, 3))):
        a = L.against_wall("ArmChair")
        if a is not None and rng.random() < 0.5:
            L.on_surface("Pillow", ("sofa",))
    for _ in range(int(rng.integers(1, 3))):
        _shelves_with_books(L, L.against_wall("ShelvingUnit"))
    for cat, p in (("SideTable", 0.8), ("FloorLamp", 0.7), ("HousePlant", 0.7), ("Ottoman", 0.3),
                   ("DogBed", 0.2), ("GarbageCan", 0.4), ("Dresser", 0.3)):
        if rng.random() < p:
            L.against_wall(cat)
    if rng.random() < 0.6:
        t = L.free_standing("DiningTable", margin=0.8)
        if t is not None:
            L.chairs_around(t, max_chairs=int(rng.integers(2, 7)))
    if rng.random() < 0.4:
        L.against_wall("Chair")
    if L.rules.placement == "procthor":
        if rng.random() < 0.5:
            L.against_wall("RoomDecor")
        if rng.random() < 0.35:
            L.free_standing("Cart", margin=0.5)


def _bedroom(L: RoomLayout) -> None:
    rng = L.rng
    bed = L.against_wall("Bed")
    if bed is not None:
        b = L.placed[bed]
        yaw = b.yaw
        left = np.array([-np.sin(np.deg2rad(yaw)), np.cos(np.deg2rad(yaw))])
        fwd = np.array([np.cos(np.deg2rad(yaw)), np.sin(np.deg2rad(yaw))])
        c = (b.lo[:2] + b.hi[:2]) / 2
        width = abs(np.dot(b.hi[:2] - b.lo[:2], left))
        depth = abs(np.dot(b.hi[:2] - b.lo[:2], fwd))
        for sgn in (-1, 1):
            if rng.random() < 0.85:
                s = L.size("SideTable")
                xy = c + sgn * left * (width / 2 + 0.04 + s[1] / 2) - fwd * (depth / 2 - s[0] / 2 - 0.01)
                L.at("SideTable", xy, yaw, size=s)
        n = int(rng.integers(L.rules.pillows_min, 5))
        for _ in range(n):
            L.on_surface("Pillow", ("pillow",), yaw=yaw + float(rng.uniform(-8, 8)))
        if rng.random() < 0.4:
            L.on_surface("TeddyBear", ("bed", "pillow"), yaw=yaw + float(rng.uniform(-20, 20)))
    for cat, p in (("Dresser", 0.9), ("ShelvingUnit", 0.5), ("LaundryHamper", 0.5), ("FloorLamp", 0.4),
                   ("HousePlant", 0.5), ("Safe", 0.2), ("Boots", 0.4), ("BasketBall", 0.3),
                   ("GarbageCan", 0.3), ("ArmChair", 0.3)):
        if rng.random() < p:
            idx = L.against_wall(cat)
            if cat == "ShelvingUnit":
                _shelves_with_books(L, idx)
    if rng.random() < 0.6:
        d = L.against_wall("Desk")
        if d is not None:
            L.in_front(d, "Chair", -0.25)
    if rng.random() < 0.4:
        L.against_wall("Chair")
    if rng.random() < 0.6:
        L.on_wall("Mirror")
    if rng.random() < 0.3:
        L.on_surface("Television", ("table",), yaw=None)
    if L.rules.placement == "procthor":
        _bedroom_extras(L)


def _bedroom_extras(L: RoomLayout) -> None:
    """Catalog v3.0: ProcTHOR's bedroom types v2.0 lacked (offices follow bedrooms)."""
    rng = L.rng
    for cat, p in (("VacuumCleaner", 0.35), ("Footstool", 0.35)):
        if rng.random() < p:
            L.against_wall(cat)
    desks = [s for s in L.surfaces if s.kind == "desk"]
    if desks and rng.random() < 0.6:
        s = desks[int(rng.integers(len(desks)))]
        L.on_surface("Desktop", surface=s, yaw=L.placed[s.parent].yaw)


def _sink_with_faucet(L: RoomLayout, counter) -> int | None:
    """Catalog v2.0: a Sink basin on ``counter`` (a Surface) with a Faucet on its back rim."""
    if counter is None:
        return None
    x0, y0, x1, y1 = counter.rect
    depth, width = (y1 - y0, x1 - x0) if abs(abs(counter.yaw) - 90.0) < 1.0 else (x1 - x0, y1 - y0)
    size = L.size("Sink")   # AI2-THOR's sinks reach 1.3 m (double kitchen sinks): shrink to fit
    size *= min(1.0, (depth - 0.005) / size[0], 0.8 * width / size[1])
    u = float(L.rng.uniform(0.2, 0.8))   # along the counter; ``where`` is in world x, y fractions
    fwd = np.round([np.cos(np.deg2rad(counter.yaw)), np.sin(np.deg2rad(counter.yaw))])
    sink = L.on_surface("Sink", surface=counter, yaw=counter.yaw, size=size,
                        where=(0.5, u) if fwd[1] == 0 else (u, 0.5))
    if sink is not None:
        rim = [s for s in L.surfaces if s.parent == sink and s.kind == "rim"][0]
        fs = L.size("Faucet")
        fs *= min(1.0, (min(0.3, 0.6 * size[0]) - 0.005) / fs[0], (size[1] - 0.065) / fs[1])
        L.on_surface("Faucet", surface=rim, yaw=counter.yaw, size=fs,   # at the back of the deck
                     where=(0.5 - 0.5 * fwd[0], 0.5 - 0.5 * fwd[1]))
    return sink


def _bathroom(L: RoomLayout) -> None:
    rng = L.rng
    if L.rules.sink == "basin":
        _bathroom_v2(L)
        return
    L.against_wall("Bathtub")
    toilet = L.against_wall("Toilet")
    sink = L.against_wall("Sink")
    if sink is not None:
        side, t = _side_t(L, sink)
        L.on_wall_at("Mirror", side, t, float(L.placed[sink].hi[2] + 0.25), L.size("Mirror"))
    if toilet is not None:
        side, t = _side_t(L, toilet)
        for sgn in (1, -1):
            if L.on_wall("ToiletPaperHanger", 0.7, side=side, t=t + sgn * 0.38) is not None:
                break
    for _ in range(int(rng.integers(1, 3))):
        h = L.on_wall("TowelHolder", float(rng.uniform(1.1, 1.3)))
        if h is not None:
            hp = L.placed[h]
            side, t = _side_t(L, h)
            ts = L.size("Towel")
            ts[2] = min(ts[2], hp.lo[2] - 0.35)
            L.on_wall_at("Towel", side, t, float(hp.lo[2] - ts[2]), ts)
    counter = L.against_wall("CounterTop", size=np.array([0.55, float(rng.uniform(0.9, 1.3)), 0.85]))
    if counter is not None and rng.random() < 0.7:
        L.on_surface("Faucet", surface=[s for s in L.surfaces if s.parent == counter][0],
                     yaw=L.placed[counter].yaw, where=(0.0, 0.5))
    _shelves_with_books(L, L.against_wall("ShelvingUnit", size=np.array([0.32, 0.8, 1.6])))
    for cat, p in (("GarbageCan", 0.7), ("Plunger", 0.5), ("ScrubBrush", 0.5), ("LaundryHamper", 0.4),
                   ("HousePlant", 0.3)):
        if rng.random() < p:
            L.against_wall(cat)


def _bathroom_v2(L: RoomLayout) -> None:
    """Catalog v2.0's bathroom: v1.0's, with a vanity counter carrying the basin sink and its
    faucet (the mirror above it) instead of the pedestal sink."""
    rng = L.rng
    tub = L.against_wall("Bathtub")
    toilet = L.against_wall("Toilet")
    counter = L.against_wall("CounterTop", size=np.array([0.58, float(rng.uniform(0.9, 1.3)), 0.85]))
    if counter is not None:
        _sink_with_faucet(L, [s for s in L.surfaces if s.parent == counter][0])
        side, t = _side_t(L, counter)
        L.on_wall_at("Mirror", side, t, float(L.placed[counter].hi[2] + 0.45), L.size("Mirror"))
    if toilet is not None:
        side, t = _side_t(L, toilet)
        for sgn in (1, -1):
            if L.on_wall("ToiletPaperHanger", 0.7, side=side, t=t + sgn * 0.45) is not None:
                break
    for _ in range(int(rng.integers(1, 3))):
        h = L.on_wall("TowelHolder", float(rng.uniform(1.1, 1.3)))
        if h is not None:
            hp = L.placed[h]
            side, t = _side_t(L, h)
            ts = L.size("Towel")
            ts[1] = min(ts[1], hp.hi[0] - hp.lo[0] + hp.hi[1] - hp.lo[1])
            ts[2] = min(ts[2], hp.lo[2] - 0.35)
            L.on_wall_at("Towel", side, t, float(hp.lo[2] - ts[2]), ts)
    _shelves_with_books(L, L.against_wall("ShelvingUnit", size=np.array([0.32, 0.8, 1.6])))
    for cat, p in (("GarbageCan", 0.7), ("Plunger", 0.5), ("ScrubBrush", 0.5), ("LaundryHamper", 0.4),
                   ("HousePlant", 0.3)):
        if rng.random() < p:
            L.against_wall(cat)
    if L.rules.placement == "procthor":
        _bathroom_extras(L, tub, counter)


def _bathroom_extras(L: RoomLayout, tub: int | None, counter: int | None) -> None:
    """Catalog v3.0: what ProcTHOR's bathrooms hold that v2.0's lacked: a shower head above the
    bathtub and a shower curtain at its end, a hand-towel ring by the vanity, laundry machines,
    a side table or dresser to put things on."""
    rng = L.rng
    if tub is not None:
        side, t = _side_t(L, tub)
        tb = L.placed[tub]
        half = float((tb.hi[0] - tb.lo[0]) if side in (0, 2) else (tb.hi[1] - tb.lo[1])) / 2
        sgn = 1.0 if rng.random() < 0.5 else -1.0
        hs = L.size("ShowerHead")
        hs[2] = min(hs[2], L.height - 0.25 - float(tb.hi[2]) - 0.1)
        L.on_wall_at("ShowerHead", side, t + sgn * (half - 0.25), float(tb.hi[2]) + 0.1, hs)
        cs = L.size("ShowerCurtain")
        L.on_wall_at("ShowerCurtain", side, t - sgn * (half + cs[1] / 2 + 0.02), max(0.05, 2.0 - cs[2]), cs)
    if counter is not None:
        side, t = _side_t(L, counter)
        cp = L.placed[counter]
        half = float((cp.hi[0] - cp.lo[0]) if side in (0, 2) else (cp.hi[1] - cp.lo[1])) / 2
        for sgn in (1, -1):   # a ring on either side of the vanity, each with its hand towel
            h = L.on_wall("HandTowelHolder", 1.05, side=side, t=t + sgn * (half + 0.2))
            if h is not None:
                _hang_hand_towel(L, h)
    for cat, p in (("WashingMachine", 0.5), ("ClothesDryer", 0.35), ("SideTable", 0.5), ("Dresser", 0.3)):
        if rng.random() < p:
            L.against_wall(cat)


def _hang_hand_towel(L: RoomLayout, holder: int) -> int | None:
    """A HandTowel hanging from the ring of HandTowelHolder ``holder``: AI2-THOR's hand towels are
    the hanging kind (about 0.13 m wide, 0.40 m long, 0.04 m thick), so the lying towel's sides
    turn upright (same size, long side down)."""
    hp = L.placed[holder]
    side, t = _side_t(L, holder)
    s = L.size("HandTowel")
    hs = np.array([s[2], s[1], min(s[0], float(hp.lo[2]) - 0.3)])
    return L.on_wall_at("HandTowel", side, t, float(hp.lo[2] - hs[2]), hs)


def _side_t(L: RoomLayout, idx: int) -> tuple[int, float]:
    """The wall side an against-wall object backs onto, and its centre along that wall."""
    p = L.placed[idx]
    side = min(SIDE_YAW, key=lambda k: abs(((SIDE_YAW[k] - p.yaw) + 180) % 360 - 180))
    t = float((p.lo[0] + p.hi[0]) / 2 if side in (0, 2) else (p.lo[1] + p.hi[1]) / 2)
    return side, t


def _office(L: RoomLayout) -> None:
    rng = L.rng
    for _ in range(int(rng.integers(1, 3))):
        d = L.against_wall("Desk")
        if d is not None:
            L.in_front(d, "Chair", -0.25)
            if rng.random() < 0.8:
                L.on_surface("Laptop", surface=[s for s in L.surfaces if s.parent == d][0],
                             yaw=L.placed[d].yaw + float(rng.uniform(-15, 15)))   # screen towards the chair
            if rng.random() < 0.6:
                L.on_surface("DeskLamp", surface=[s for s in L.surfaces if s.parent == d][0])
    for _ in range(int(rng.integers(1, 3))):
        _shelves_with_books(L, L.against_wall("ShelvingUnit"))
    for _ in range(int(rng.integers(0, 3))):
        L.against_wall("Chair")
    for cat, p in (("ArmChair", 0.5), ("SideTable", 0.5), ("FloorLamp", 0.5), ("HousePlant", 0.7),
                   ("Safe", 0.3), ("GarbageCan", 0.7), ("Dresser", 0.3), ("Box", 0.4)):
        if rng.random() < p:
            L.against_wall(cat)
    if rng.random() < 0.3:
        L.on_surface("Globe", ("desk", "shelf"))


FURNISH = {"Kitchen": _kitchen, "LivingRoom": _living, "Bedroom": _bedroom, "Bathroom": _bathroom,
           "Office": _office}


def _fill(L: RoomLayout, count: int) -> int:
    """Put about ``count`` small items of the room's kind on its surfaces; returns how many."""
    rng = L.rng
    if L.item_weights is None:   # per-room draw weights; repeats decay (variety)
        w = {k: 0.35 for k in GENERIC_ITEMS}
        w.update(SMALL_ITEMS_BY_ROOM[L.room.kind])
        if L.rules.placement == "procthor":
            w = _procthor_item_weights(L.room.kind, w)
        L.item_weights = w
    weights = L.item_weights
    names = list(weights)
    p = np.array([weights[n] for n in names], dtype=float)
    done = 0
    for _ in range(3 * count):
        if done >= count or p.sum() <= 0:
            break
        k = int(rng.choice(len(names), p=p / p.sum()))
        cat = names[k]
        if _at_cap(L, cat):   # v3.0: enough of this one in the room; not again in this call
            p[k] = 0.0
            continue
        p[k] *= L.rules.repeat_decay   # favour variety: repeats get rarer within one room
        weights[cat] = float(p[k])
        if cat == "Book" and rng.random() < 0.5:
            idx = L.on_surface("Book", ("table", "desk", "bed", "shelf", "counter"), lying_book=True)
        elif cat in _FLOOR_ITEMS and (rng.random() < 0.5 or cat in _FLOOR_ONLY):
            idx = L.against_wall(cat, tries=6)
        else:
            idx = L.on_surface(cat)
        done += idx is not None
    return done


def _at_cap(L: RoomLayout, cat: str) -> bool:
    """Whether room ``L`` holds as many loose ``cat`` objects as the rules' repeat caps allow
    (never under rules without caps); ``L.cap_bonus`` raises the caps on the generator's retries."""
    cap = L.rules.floor_repeat_cap if cat in _FLOOR_ITEMS or cat in _TOP_UP_FLOOR else L.rules.loose_repeat_cap
    return cap > 0 and L.count(cat) >= cap + getattr(L, "cap_bonus", 0)


_FLOOR_ITEMS = ("Boots", "BasketBall", "Dumbbell", "BaseballBat", "TennisRacket", "Box", "Footstool")
_FLOOR_ONLY = ("Footstool",)
_ARRANGED = frozenset({"Faucet", "Sink", "Television", "Painting", "CounterTop", "Desktop", "Microwave",
                       "Toaster", "CoffeeMachine", "Pillow", "TeddyBear", "HousePlant"})
"""Types v3.0's furnishing places itself (with their furniture), never drawn as loose items."""


def _procthor_item_weights(kind: str, base: dict[str, float]) -> dict[str, float]:
    """Catalog v3.0's loose-item draw weights for a ``kind`` room: the room's v2.0 weights
    limited to the types ProcTHOR places in that room type, plus every other ProcTHOR type it
    places there that rests on furniture (not on the floor or a wall), at weight 0.5 (0.8 when
    ProcTHOR marks the room as its usual one, 2)."""
    from spatialscout_gym.scenes.categories import CATEGORIES
    from spatialscout_gym.scenes.placement import allowed_in_room, annotated_rooms, procthor_placement, procthor_room
    w = {k: v for k, v in base.items() if allowed_in_room(k, kind) and k not in _ARRANGED}
    for name, row in sorted(procthor_placement()["types"].items()):
        rooms = annotated_rooms(name)
        if (name in w or name in _ARRANGED or rooms is None or name not in CATEGORIES
                or row["onWall"] or (row["onFloor"] and name not in _FLOOR_ITEMS)):
            continue
        if rooms[procthor_room(kind)]:
            w[name] = 0.8 if rooms[procthor_room(kind)] == 2 else 0.5
    return w


def _top_up(cam_L: RoomLayout, all_L: list[RoomLayout], placed: list[Placed], need: int) -> None:
    """Add items (then surfaces, then floor items anywhere) until ``need`` candidates exist."""
    for k in range(12):
        count = sum(p.candidate for p in placed)
        if count >= need:
            return
        _fill(cam_L, need - count)
        if sum(p.candidate for p in placed) >= need:
            return
        if k < 4:
            _more_surfaces(cam_L)
        else:
            if cam_L.rules.placement == "procthor" and cam_L.count("Painting") < 4:
                cam_L.on_wall("Painting")   # v3.0: a picture more rather than one category again
            for L in all_L:
                cats = ["Box", "HousePlant", "GarbageCan", "BasketBall", "Boots", "Chair"]
                if L.rules.placement == "procthor":
                    cats = [c for c in cats + list(_TOP_UP_FLOOR) if L.allows(c) and not _at_cap(L, c)]
                    if not cats:
                        continue
                cat = str(L.rng.choice(cats))
                L.free_standing(cat, margin=0.05, tries=10)


_TOP_UP_FLOOR = ("Footstool", "Stool", "Ottoman", "ScrubBrush")
"""v3.0's extra floor items for the last top-up rounds (each where ProcTHOR places it)."""


def _more_surfaces(L: RoomLayout) -> None:
    rng = L.rng
    for cat in ("ShelvingUnit", "SideTable", "CoffeeTable", "Dresser"):
        idx = L.against_wall(cat, tries=15) if cat != "CoffeeTable" else L.free_standing(cat, margin=0.5)
        if idx is not None:
            if cat == "ShelvingUnit":
                _shelves_with_books(L, idx)
            if rng.random() < 0.5:
                return
