"""Catalog v3.0, the default: ProcTHOR's object types and placement rules, no room filled with one
category, the paper's statistics kept, frozen beside v1.0 and v2.0, which stay hash-verified."""

from __future__ import annotations

import numpy as np
import pytest

from spatialscout_gym.core.limits import WORLD_BOX_M
from spatialscout_gym.scenes.catalog import (DEFAULT_CATALOG_VERSION, catalog_entries, generate_catalog_scene,
                                             load_scene, manifest)
from spatialscout_gym.scenes.furniture import build_object
from spatialscout_gym.scenes.furniture_procthor import NEW_BUILDERS
from spatialscout_gym.scenes.geometry import parts_aabb
from spatialscout_gym.scenes.procedural import DEFAULT_RULES_VERSION
from spatialscout_gym.scenes.placement import allowed_in_room, multiple_per_room, procthor_placement
from spatialscout_gym.scenes.sizes import RULES_V3, sample_size
from spatialscout_gym.scenes.stats import catalog_stats, room_plausibility

from test_scenes_generator import targets_past_world_box


@pytest.fixture(scope="module")
def specs_v3():
    return [generate_catalog_scene(e) for e in catalog_entries("3.0")]


def test_v3_is_the_default_and_frozen_beside_the_older_versions(specs_v3):
    assert DEFAULT_CATALOG_VERSION == "3.0" and DEFAULT_RULES_VERSION == "3.0"
    m = manifest("3.0")
    assert m["generator_rules"]["placement"] == "procthor"
    for row, spec in zip(m["scenes"], specs_v3):
        assert row["content_hash"] == spec.content_hash(m["render_settings"]), spec.scene_id
    for v in ("1.0", "2.0"):   # older versions still regenerate to their frozen hashes
        assert load_scene("Kitchen_01", version=v).scene_id == "Kitchen_01"


def test_every_v3_start_lies_inside_the_world_box_and_targets_but_one_frozen_scene(specs_v3):
    """Generated once, as frozen: every start camera inside the +-15 m box the camera may move
    in, and every target but those of Apartment_31, whose east room's wall line stands at
    x = 15.28 m (its 7 targets along that wall reach 15.33 m: seen from inside the box, kept so
    that the frozen catalog keeps its hashes)."""
    past = {}
    for spec in specs_v3:
        assert np.all(np.abs(spec.public.initial_camera.position_world) <= WORLD_BOX_M), spec.scene_id
        if targets_past_world_box(spec):
            past[spec.scene_id] = len(targets_past_world_box(spec))
    assert past == {"Apartment_31": 7}


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
