"""The procedural generator: determinism, docs/protocol.md section 8's target rule,
builders at their sampled sizes, no interpenetration, camera and intrinsics."""

from __future__ import annotations

import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from spatialscout_gym.core.limits import WORLD_BOX_M
from spatialscout_gym.core.spec import SceneSpec, natural_key, part_world_aabb
from spatialscout_gym.scenes.categories import CATEGORIES, candidate_categories
from spatialscout_gym.scenes.furniture import BUILDERS, build_object
from spatialscout_gym.scenes.layout import sample_size
from spatialscout_gym.scenes.procedural import (FOV_Y_DEG, LAYOUTS, floor_plan, procedural_scene,
                                                training_seed_sequence)
from spatialscout_gym.scenes.rooms import WALL_T, plan_extent
from spatialscout_gym.scenes.sizes import RULES

ID_RE = re.compile(r"^[A-Za-z0-9_]+$")


@pytest.fixture(scope="module")
def scenes() -> list[SceneSpec]:
    """One scene per layout plus apartments of every size."""
    out = [procedural_scene(11 + k, 40, lay) for k, lay in enumerate(LAYOUTS)]
    out += [procedural_scene(100 + n, 35, "Apartment", n_rooms=n) for n in (2, 3, 4, 5)]
    return out


@settings(max_examples=8, deadline=None)
@given(seed=st.integers(0, 10_000), layout=st.sampled_from(LAYOUTS + (None,)))
def test_same_seed_same_spec(seed, layout):
    a, b = procedural_scene(seed, 40, layout), procedural_scene(seed, 40, layout)
    assert a.content_hash() == b.content_hash()
    assert procedural_scene(seed + 1, 40, layout).content_hash() != a.content_hash()


def test_target_selection_follows_spec_section_8(scenes):
    for spec in scenes:
        o0 = spec.public.initial_camera.position_world
        cands = [o for o in spec.private.objects if o.movable]
        dist = {o.id: float(np.linalg.norm((o.aabb_world[0] + o.aabb_world[1]) / 2 - o0)) for o in cands}
        order = sorted(cands, key=lambda o: (round(dist[o.id], 9), o.id))
        n = len(spec.public.inventory)
        inventory = [e.id for e in spec.public.inventory]
        assert set(inventory) == {o.id for o in order[:n]}          # the n nearest are the targets,
        assert inventory == sorted(inventory, key=natural_key)     # listed by id, not by distance
        assert all(o.role == "hidden" for o in order[n:])
        assert all(o.role == "static" for o in spec.private.objects if not o.movable)
        assert len(order) > n, f"{spec.scene_id}: no hidden candidates"


def test_ids_groups_and_inventory(scenes):
    for spec in scenes:
        ids = [o.id for o in spec.private.objects]
        assert len(ids) == len(set(ids)) and all(ID_RE.match(i) for i in ids)
        for e in spec.public.inventory:
            rules = RULES[spec.private.source.get("rules") or spec.private.source.get("catalog_version") or "1.0"]
            assert e.group == e.category and e.category in CATEGORIES
            assert CATEGORIES[e.category].candidate or e.category in rules.extra_candidates, e.category
        assert spec.public.radius_m == pytest.approx(max(np.linalg.norm(t.center_task) for t in spec.targets))


def test_initial_camera_and_intrinsics(scenes):
    pitches = []
    for spec in scenes:
        cam = spec.public.initial_camera
        assert 1.5 <= cam.position_world[2] <= 1.7
        assert -15.0 <= cam.pitch_deg <= 5.0
        pitches.append(cam.pitch_deg)
        K = spec.public.intrinsics
        assert (K.width, K.height) == (512, 512) and K.fov_y_deg == pytest.approx(FOV_Y_DEG)
        assert 60 <= FOV_Y_DEG <= 75
        # the camera stands inside the room it looks into
        floors = [o for o in spec.private.objects if o.category == "Floor"]
        assert any(np.all(cam.position_world[:2] > f.aabb_world[0][:2]) and
                   np.all(cam.position_world[:2] < f.aabb_world[1][:2]) for f in floors)
    assert np.ptp(pitches) > 3.0, "pitch should vary between scenes"


def test_apartments_have_connected_rooms(scenes):
    for n in (2, 3, 4, 5):
        spec = procedural_scene(100 + n, 35, "Apartment", n_rooms=n)
        assert len(spec.public.description["rooms"]) == n
        doorways = [o for o in spec.private.objects if o.category == "Doorway"]
        assert len(doorways) >= n - 1   # a spanning tree of doors


def test_at_least_60_candidate_categories_with_builders():
    cands = candidate_categories()
    assert len(cands) >= 60
    for must in ("Chair", "Painting", "Window", "Book", "Mug", "CreditCard", "Pen", "CellPhone",
                 "RemoteControl", "Laptop", "Television", "Sofa", "Bed", "HousePlant"):
        assert must in cands
    assert set(cands) <= set(BUILDERS)


def assert_fills_its_box(cat: str, size: np.ndarray, parts: list) -> None:
    """A builder's ``parts`` stay inside the drawn ``size`` box (depth, width, height, metres;
    3 mm slack) and fill at least 80% of each side."""
    boxes = [part_world_aabb(p) for p in parts]
    lo, hi = np.min([b[0] for b in boxes], axis=0), np.max([b[1] for b in boxes], axis=0)
    tol = 0.003
    footprint = size[:2].copy()
    if cat == "BasketBall":
        # A ball is as wide as it is tall: its builder takes the radius from the drawn height (frozen
        # in v2.0's and v3.0's content), so its footprint is the height, at most 8% off the drawn one.
        assert 0.9 <= size[2] / min(size[:2]) <= 1.08, size
        footprint[:] = size[2]
    assert np.all(lo >= np.array([-footprint[0] / 2, -footprint[1] / 2, 0.0]) - tol), (cat, lo, size)
    assert np.all(hi <= np.array([footprint[0] / 2, footprint[1] / 2, size[2]]) + tol), (cat, hi, size)
    if cat == "HandTowelHolder":
        # Its ring is round, as wide as the holder is tall: a holder drawn wider than tall fills
        # that much of its width (frozen in v3.0's content; the box keeps the ring's centre).
        footprint[1] = min(footprint[1], size[2])
    assert np.all(hi - lo >= 0.8 * np.array([*footprint, size[2]]) - tol), (cat, hi - lo, size)


@settings(max_examples=60, deadline=None)
@given(cat=st.sampled_from(sorted(set(BUILDERS) & set(CATEGORIES))), seed=st.integers(0, 2**31 - 1))
def test_builders_fill_their_sampled_box(cat, seed):
    """A builder's parts stay inside the sampled size box and nearly fill it (real-world sizes)."""
    rng = np.random.default_rng(seed)
    size = sample_size(cat, rng)
    assert_fills_its_box(cat, size, build_object(cat, rng, size))


@settings(max_examples=60, deadline=None)
@given(cat=st.sampled_from(candidate_categories()), seed=st.integers(0, 2**31 - 1))
def test_v2_builders_fill_their_ai2thor_sized_box(cat, seed):
    """Catalog v2.0: every candidate's builder (the basin sink and wide faucet included) stays
    inside the AI2-THOR-sized box and nearly fills it, so the object's box is the size drawn."""
    from spatialscout_gym.scenes.sizes import RULES_V2
    rng = np.random.default_rng(seed)
    size = sample_size(cat, rng, RULES_V2)
    assert np.all(size > 0) and np.all(np.isfinite(size))
    assert_fills_its_box(cat, size, build_object(RULES_V2.builder_key(cat), rng, size))


def test_v2_sizes_follow_the_ai2thor_reference():
    """The median cube-root volume drawn for a category is AI2-THOR's median (+-5 %), and a
    shape keeps our builder's order of sides (a TV wide and thin, a sofa long)."""
    from spatialscout_gym.scenes.sizes import RULES_V2, ai2thor_reference
    ref = ai2thor_reference()["categories"]
    rng = np.random.default_rng(0)
    for cat in ("Chair", "Mug", "Television", "Sofa", "CreditCard", "Painting"):
        s = np.array([sample_size(cat, rng, RULES_V2) for _ in range(400)])
        assert np.median(np.cbrt(s.prod(axis=1))) == pytest.approx(ref[cat]["cbrt_volume_m"][3], rel=0.05), cat
    tv, sofa = np.median([sample_size(c, rng, RULES_V2) for c in ["Television"] * 50], axis=0), \
        np.median([sample_size(c, rng, RULES_V2) for c in ["Sofa"] * 50], axis=0)
    assert tv[1] > tv[2] > tv[0] and sofa[1] > 2 * sofa[0]


def _parts_tops(spec):
    out = []
    for o in spec.private.objects:
        if o.role == "hidden":
            continue
        for p in o.parts:
            lo, hi = part_world_aabb(p)
            out.append((o.id, lo, hi))
    return out


@pytest.mark.parametrize("k", range(9))
def test_no_interpenetration_and_items_rest_on_surfaces(scenes, k):
    assert_physically_plausible(scenes[k])


def assert_physically_plausible(spec: SceneSpec) -> None:
    """Floor furniture footprints are disjoint; items rest on a supporting part's top."""
    objs = [o for o in spec.private.objects if o.category not in ("Floor", "Ceiling", "Wall", "Doorway")]
    boxes = {o.id: o.aabb_world for o in objs}
    # furniture standing on the floor: footprints pairwise disjoint (1 cm tolerance)
    floor = [o for o in objs if boxes[o.id][0][2] < 0.005 and "wall" not in CATEGORIES.get(o.category, CATEGORIES["Wall"]).rests_on]
    for i, a in enumerate(floor):
        for b in floor[i + 1:]:
            (alo, ahi), (blo, bhi) = boxes[a.id], boxes[b.id]
            ov = np.minimum(ahi[:2], bhi[:2]) - np.maximum(alo[:2], blo[:2])
            assert not np.all(ov > 0.01), f"{spec.scene_id}: {a.id} and {b.id} footprints overlap by {ov}"
    # items above the floor and not hung on walls lie on a supporting part's top (within 1 cm)
    tops = _parts_tops(spec)
    for o in objs:
        info = CATEGORIES.get(o.category)
        if info is None or not o.movable or "wall" in info.rests_on or o.role == "hidden":
            continue
        lo, hi = boxes[o.id]
        if lo[2] < 0.005:
            continue
        c = (lo + hi) / 2
        if o.category == "HandTowel" and _hangs_from_holder(boxes, o.id, spec):
            continue
        ok = any(pid != o.id and abs(plo_hi[1][2] - lo[2]) <= 0.01 and
                 plo_hi[0][0] - 0.01 <= c[0] <= plo_hi[1][0] + 0.01 and plo_hi[0][1] - 0.01 <= c[1] <= plo_hi[1][1] + 0.01
                 for pid, *plo_hi in tops)
        assert ok, f"{spec.scene_id}: {o.id} ({o.category}) floats at z={lo[2]:.3f}"


def _hangs_from_holder(boxes: dict, oid: str, spec: SceneSpec) -> bool:
    """Whether ``oid``'s top touches (1 cm) the bottom of a HandTowelHolder ring above it (v3.0
    hangs hand towels, as AI2-THOR's are)."""
    lo, hi = boxes[oid]
    c = (lo + hi) / 2
    return any(abs(hlo[2] - hi[2]) <= 0.01 and np.all(hlo[:2] - 0.01 <= c[:2]) and np.all(c[:2] <= hhi[:2] + 0.01)
               for o in spec.private.objects if o.category == "HandTowelHolder"
               for hlo, hhi in [boxes.get(o.id, o.aabb_world)])


def test_hidden_supports_never_carry_targets(scenes):
    """A target item never rests on a hidden candidate (it would float in every render)."""
    for spec in scenes:
        hidden = [o for o in spec.private.objects if o.role == "hidden"]
        for t in (o for o in spec.private.objects if o.role == "target"):
            lo, hi = t.aabb_world
            if lo[2] < 0.005:
                continue
            c = (lo + hi) / 2
            for h in hidden:
                hlo, hhi = h.aabb_world
                under = hlo[0] <= c[0] <= hhi[0] and hlo[1] <= c[1] <= hhi[1] and abs(hhi[2] - lo[2]) < 0.002
                assert not (under and h.category in ("DiningTable", "SideTable", "CoffeeTable", "Desk", "Dresser", "TVStand")), \
                    f"{spec.scene_id}: target {t.id} rests on hidden {h.id}"


def test_spec_json_round_trip_keeps_hash(scenes):
    for spec in scenes[:3]:
        again = SceneSpec.from_json(spec.to_json())
        assert again.content_hash() == spec.content_hash()
        assert [t.id for t in again.targets] == [t.id for t in spec.targets]


def test_bad_arguments_are_refused():
    with pytest.raises(ValueError, match="layout"):
        procedural_scene(1, 40, "Garage")
    with pytest.raises(ValueError, match="seed"):
        procedural_scene(-1)


def test_many_training_seeds_generate():
    """Crowded rooms fall back to keeping the camera spot free first (seed 9 does)."""
    for seed in range(30):
        spec = procedural_scene(seed, 35 + 5 * (seed % 2))
        assert len(spec.public.inventory) == 35 + 5 * (seed % 2)
        assert 1.5 <= spec.public.initial_camera.position_world[2] <= 1.7


def test_a_seed_whose_first_draw_is_too_small_is_drawn_again():
    """v3.0's repeat caps can leave a small bathroom short of 40 candidates (seed 528's first
    draw holds 37): the seed's next sub-stream is drawn, deterministically, and says so."""
    a = procedural_scene(528, 40, "Bathroom")
    assert len(a.public.inventory) == 40 and a.private.source["redraw"] == 1
    assert procedural_scene(528, 40, "Bathroom").content_hash() == a.content_hash()
    assert "redraw" not in procedural_scene(527, 40, "Bathroom").private.source


def targets_past_world_box(spec: SceneSpec) -> list[str]:
    """Ids of the targets whose box reaches past the +-WORLD_BOX_M world box."""
    return [t.id for t in spec.targets
            if np.any(np.abs(t.box_min) > WORLD_BOX_M) or np.any(np.abs(t.box_max) > WORLD_BOX_M)]


def assert_inside_world_box(spec: SceneSpec, targets_only: bool = False) -> None:
    """The start camera and every target (every object, rooms included, unless ``targets_only``)
    lie inside the +-WORLD_BOX_M box the camera may move in."""
    cam = spec.public.initial_camera.position_world
    assert np.all(np.abs(cam) <= WORLD_BOX_M), (spec.scene_id, cam)
    for o in spec.private.objects:
        if targets_only and o.role != "target":
            continue
        lo, hi = o.aabb_world
        assert np.all(np.abs(lo) <= WORLD_BOX_M) and np.all(np.abs(hi) <= WORLD_BOX_M), (spec.scene_id, o.id, lo, hi)


def test_a_wide_apartment_starts_inside_the_world_box():
    """Seed 1831015077's five-room apartment ran to x = 17 m and its start stood at x = 17.04 m,
    where every move was refused: the plan is moved inside the box, the scene keeps its rooms."""
    spec = procedural_scene(1831015077)
    assert len(spec.public.description["rooms"]) == 5
    assert_inside_world_box(spec)


def test_every_training_plan_lies_inside_the_world_box():
    """10,000 seeds at the stage that decides where rooms stand (the layout and the floor plan:
    the start camera and the targets stand in its rooms), under every rules version; the seeds
    whose plan had to move are generated whole, starts and objects checked."""
    seeds = np.random.default_rng(55).integers(0, 2**32, 10_000)
    moved = []
    for k, seed in enumerate(seeds):
        rules = RULES[("1.0", "2.0", "3.0")[k % 3]]
        layout, plan = floor_plan(np.random.default_rng(training_seed_sequence(int(seed))), None, None, rules)
        x0, y0, x1, y1 = plan_extent(plan)
        assert -WORLD_BOX_M <= min(x0, y0) and max(x1, y1) <= WORLD_BOX_M, (int(seed), layout, x0, y0, x1, y1)
        if min(x0, y0) < -WALL_T:
            moved.append((int(seed), rules.version))
    assert len(moved) > 100   # wide apartments are common enough that this checks something
    for seed, version in moved[:6]:
        assert_inside_world_box(procedural_scene(seed, catalog_version=version))
