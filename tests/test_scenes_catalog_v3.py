"""Catalog v3.1, the default, and v3.0: ProcTHOR's object types and placement rules, no room filled
with one category, the paper's statistics kept, every room of v3.1 inside the world box; frozen
beside v1.0, v2.0 and v3.0, which stay hash-verified."""

from __future__ import annotations

import numpy as np
import pytest

from spatialscout_gym.core.limits import WORLD_BOX_M
from spatialscout_gym.scenes.catalog import (DEFAULT_CATALOG_VERSION, load_scene, manifest)
from spatialscout_gym.scenes.furniture import build_object
from spatialscout_gym.scenes.furniture_procthor import NEW_BUILDERS
from spatialscout_gym.scenes.geometry import parts_aabb
from spatialscout_gym.scenes.procedural import DEFAULT_RULES_VERSION
from spatialscout_gym.scenes.placement import allowed_in_room, multiple_per_room, procthor_placement
from spatialscout_gym.scenes.sizes import RULES_V3, sample_size
from spatialscout_gym.scenes.stats import catalog_stats, room_plausibility

from conftest import CATALOG_GROUP
from test_scenes_generator import targets_past_world_box


pytestmark = CATALOG_GROUP


@pytest.fixture(scope="module")
def specs_v3(catalog_specs):
    """Every scene of the default catalog, v3.1, generated once."""
    return catalog_specs("3.1")


def test_v3_1_is_the_default_and_frozen_beside_the_older_versions(specs_v3):
    assert DEFAULT_CATALOG_VERSION == "3.1" and DEFAULT_RULES_VERSION == "3.0"   # training scenes keep v3.0's rules
    m = manifest("3.1")
    assert m["generator_rules"]["placement"] == "procthor" and m["generator_rules"]["in_world_box"] is True
    for row, spec in zip(m["scenes"], specs_v3):
        assert row["content_hash"] == spec.content_hash(m["render_settings"]), spec.scene_id
    for v in ("1.0", "2.0", "3.0"):   # older versions still regenerate to their frozen hashes
        assert load_scene("Kitchen_01", version=v).scene_id == "Kitchen_01"
    assert load_scene("Apartment_31", version="3.0").scene_id == "Apartment_31"


def test_v3_1_moves_only_the_scene_that_reached_past_the_box_and_scores_it_the_same():
    """v3.0's Apartment_31 reaches x = 15.33 m; v3.1 moves the whole scene inside the box, so every
    target keeps its task-frame centre (what is scored) and the start keeps its place in the rooms."""
    old, new = load_scene("Apartment_31", version="3.0"), load_scene("Apartment_31", version="3.1")
    assert targets_past_world_box(old) and not targets_past_world_box(new)
    shift = new.public.initial_camera.position_world - old.public.initial_camera.position_world
    assert shift[0] < 0 and shift[1] == 0 and shift[2] == 0
    for a, b in zip(old.ground_truth_dict()["targets"], new.ground_truth_dict()["targets"]):
        assert a["id"] == b["id"] and np.allclose(a["center"], b["center"])
        assert np.allclose(np.asarray(b["box_min"]) - a["box_min"], shift)
    kitchen_old, kitchen_new = load_scene("Kitchen_01", version="3.0"), load_scene("Kitchen_01", version="3.1")
    assert np.array_equal(kitchen_old.public.initial_camera.position_world,
                          kitchen_new.public.initial_camera.position_world)


def test_every_v3_1_start_and_target_lies_inside_the_world_box(specs_v3):
    """Generated once, as frozen: every start camera and every target of the default catalog inside
    the +-15 m box the camera may move in (v3.0 had Apartment_31's 7 east-wall targets at 15.33 m)."""
    for spec in specs_v3:
        assert np.all(np.abs(spec.public.initial_camera.position_world) <= WORLD_BOX_M), spec.scene_id
        assert not targets_past_world_box(spec), spec.scene_id


def test_every_procthor_type_has_a_builder_of_its_size():
    types = procthor_placement()["types"]
    assert len(types) == 109
    rng = np.random.default_rng(0)
    for name in NEW_BUILDERS:
        s = sample_size(name, rng, RULES_V3)
        lo, hi = parts_aabb(build_object(name, rng, s))
        assert np.all(hi - lo <= s + 1e-6) and np.all(hi - lo >= 0.5 * s), name


def test_placement_rules_follow_the_annotations():
    assert not allowed_in_room("Mug", "Bathroom") and allowed_in_room("Mug", "Kitchen")
    assert allowed_in_room("Desktop", "Office") and not allowed_in_room("Desktop", "Kitchen")   # office = bedroom
    assert allowed_in_room("ShowerHead", "Bathroom") and not multiple_per_room("Toilet")


def test_v3_keeps_the_papers_statistics_and_rooms_are_plausible(specs_v3):
    st = catalog_stats(specs_v3)
    assert st["n_targets"] == 3140 and st["n_categories"] >= 110
    assert st["radius_min_m"] <= 2.2
    assert abs(st["multi_instance_fraction"] - 1393 / 3140) < 0.05
    pl = room_plausibility(specs_v3)
    assert pl["single_rooms"]["fraction"] <= 0.05 and pl["apartments"]["fraction"] <= 0.05
    assert pl["procthor_types_as_targets"] >= 105
    for cat in ("ShowerHead", "ShowerCurtain", "WashingMachine", "HandTowelHolder", "HandTowel", "SoapBar"):
        assert any(t.category == cat for s in specs_v3 for t in s.targets), cat


def test_v3_rooms_are_not_filled_with_one_category(specs_v3):
    """Loose items repeat at most 3 times per room (floor items twice); only a room too small for
    its targets (the bathrooms) gets one more per retry. v3.0's preview had 15 candles and 8
    footstools in one bathroom."""
    from collections import Counter
    arranged = ("Book", "Chair", "Pillow", "Painting", "Window", "Curtains", "Mirror")
    for spec in specs_v3:
        counts = Counter((o.room, o.category) for o in spec.private.objects
                         if o.role == "target" and o.category not in arranged)
        for (room, cat), n in counts.items():
            assert n <= (5 if room.startswith("Bathroom") else 3), (spec.scene_id, room, cat, n)
    for spec in (s for s in specs_v3 if s.public.description["rooms"] == ["Bathroom"]):
        cats = Counter(t.category for t in spec.targets)
        assert len(cats) >= 20, (spec.scene_id, cats.most_common(3))


def test_v3_reference_losses_are_the_papers(specs_v3):
    from spatialscout_gym.scenes.stats import PAPER_REFERENCE_LOSSES_M, reference_losses, size_comparison
    losses = reference_losses(specs_v3)
    for kind, paper in PAPER_REFERENCE_LOSSES_M.items():
        assert losses[kind] == pytest.approx(paper, rel=0.05), (kind, losses[kind], paper)
    assert 0.97 <= size_comparison(specs_v3)["weighted_ratio"] <= 1.10
