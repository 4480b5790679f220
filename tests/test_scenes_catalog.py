"""The frozen 80-scene catalog (issue 3, items 3 and 7): composition, hashes against the shipped
manifest, statistics in the paper's ranges, training/catalog disjointness, scene lookup."""

from __future__ import annotations

import json
import re
import time

import numpy as np
import pytest

from spatialscout_gym.core.spec import InventoryEntry, SceneObject, SceneSpec
from spatialscout_gym.scenes import catalog
from spatialscout_gym.scenes.catalog import (CATALOG_VERSION, RENDER_SETTINGS, CatalogMismatchError,
                                             catalog_entries, catalog_scene_ids, generate_catalog_scene,
                                             load_scene, manifest, scene_by_name)
from spatialscout_gym.scenes.geometry import box, mat
from spatialscout_gym.scenes.procedural import procedural_scene
from spatialscout_gym.scenes.stats import catalog_stats

from test_scenes_generator import assert_physically_plausible


@pytest.fixture(scope="module")
def specs() -> list[SceneSpec]:
    return [generate_catalog_scene(e) for e in catalog_entries()]


def test_composition_matches_spec_section_8():
    entries = catalog_entries()
    assert len(entries) == 80
    assert sum(e.n_targets == 35 for e in entries) == 12 and sum(e.n_targets == 40 for e in entries) == 68
    single = [e for e in entries if e.layout != "Apartment"]
    assert 0.5 <= len(single) / 80 <= 0.7
    assert {e.layout for e in single} == {"Kitchen", "LivingRoom", "Bedroom", "Bathroom", "Office"}
    assert {e.n_rooms for e in entries if e.layout == "Apartment"} == {2, 3, 4, 5}
    ids = [e.scene_id for e in entries]
    assert len(set(ids)) == 80 and all(re.fullmatch(r"[A-Za-z0-9_]+", i) for i in ids)
    assert catalog_scene_ids() == ids


def test_manifest_is_frozen_and_matches_regenerated_hashes(specs):
    m = manifest()
    assert m["catalog_version"] == CATALOG_VERSION and m["render_settings"] == RENDER_SETTINGS
    assert RENDER_SETTINGS["shader"] == "minimal" and RENDER_SETTINGS["width"] == 512
    for row, spec in zip(m["scenes"], specs):
        assert row["scene_id"] == spec.scene_id
        assert row["content_hash"] == spec.content_hash(RENDER_SETTINGS), f"{spec.scene_id} drifted"
        assert row["n_targets"] == len(spec.public.inventory)
        assert row["radius_m"] == pytest.approx(spec.public.radius_m, abs=1e-5)


def test_catalog_statistics_resemble_the_paper(specs):
    st = catalog_stats(specs)
    assert st["n_targets"] == 12 * 35 + 68 * 40
    assert 1.9 <= st["radius_min_m"] and st["radius_max_m"] <= 9.5
    assert st["radius_max_m"] >= 6.0, "apartments should reach a wide search radius"
    assert 0.35 <= st["multi_instance_fraction"] <= 0.55
    assert st["groups_with_different_sizes"] > 0.5 * st["multi_instance_groups"]
    assert 0.08 <= st["median_shortest_side_m"] <= 0.16
    assert 0.04 <= st["under_1cm_fraction"] <= 0.10
    assert st["n_categories"] >= 60
    top = [name for name, _ in st["top_categories"][:6]]
    for must in ("Chair", "Painting", "Window", "Book"):
        assert must in top, f"{must} is not among the most common target categories {top}"


def test_every_catalog_scene_is_physically_plausible(specs):
    for spec in specs:
        assert_physically_plausible(spec)


def test_training_seeds_never_coincide_with_catalog_scenes():
    frozen = {row["content_hash"] for row in manifest()["scenes"]}
    # same seed integers, same layouts and sizes as the catalog entries: the namespaces differ
    for e in catalog_entries()[::4]:
        spec = procedural_scene(e.seed, e.n_targets, e.layout,
                                n_rooms=e.n_rooms if e.layout == "Apartment" else None)
        assert spec.content_hash(RENDER_SETTINGS) not in frozen
    for seed in range(20):
        assert procedural_scene(seed).content_hash(RENDER_SETTINGS) not in frozen


def test_generating_one_catalog_scene_is_fast():
    e = catalog_entries()[-1]   # a 5-room apartment, the largest
    generate_catalog_scene(e)
    t = time.perf_counter()
    generate_catalog_scene(e)
    assert time.perf_counter() - t < 1.0


def test_load_scene_verifies_the_hash(monkeypatch):
    spec = load_scene("Kitchen_02")
    assert spec.scene_id == "Kitchen_02"
    bad = json.loads(json.dumps(manifest()))
    bad["scenes"][1]["content_hash"] = "0" * 64
    monkeypatch.setattr(catalog, "manifest", lambda: bad)
    with pytest.raises(CatalogMismatchError, match="Bump CATALOG_VERSION"):
        load_scene("Kitchen_02")


def test_unknown_catalog_id_names_the_fix():
    with pytest.raises(KeyError, match="scenes list"):
        load_scene("Garage_01")


def test_catalog_ids_read_only_the_manifest(monkeypatch):
    def boom(*a, **k):
        raise AssertionError("catalog_scene_ids must not generate scenes")
    monkeypatch.setattr(catalog, "generate_scene", boom)
    monkeypatch.setattr(catalog, "generate_catalog_scene", boom)
    assert len(catalog_scene_ids()) == 80


def test_scene_by_name_accepts_ids_seeds_and_files(tmp_path):
    a = scene_by_name("Office_03")
    assert a.public.description["rooms"] == ["Office"]
    p = scene_by_name("procedural:123")
    assert p.content_hash() == procedural_scene(123).content_hash()
    f = tmp_path / "s.json"
    f.write_text(a.to_json())
    assert scene_by_name(str(f)).content_hash() == a.content_hash()
    with pytest.raises(ValueError, match="procedural:<"):
        scene_by_name("procedural:abc")


def test_freeze_reproduces_the_shipped_manifest(tmp_path, monkeypatch):
    shipped = manifest()["scenes"]
    full = catalog_entries()
    monkeypatch.setattr(catalog, "catalog_entries", lambda: full[::20])
    data = catalog.freeze_manifest(tmp_path / "m.json")
    catalog.manifest.cache_clear()
    assert data["scenes"] == shipped[::20]
    assert json.loads((tmp_path / "m.json").read_text())["scenes"] == shipped[::20]


def _scene(objs, scene_id="s"):
    from spatialscout_gym.core.camera import Intrinsics
    from spatialscout_gym.core.frames import CameraPose
    return SceneSpec.from_objects(scene_id, objs, CameraPose(np.zeros(3), 0.0, 0.0),
                                  Intrinsics.from_fov(512, 512, 65.0), [])


def test_stats_count_groups_and_sizes_by_hand():
    m = mat((0.5, 0.5, 0.5))
    objs = [SceneObject("Mug_1", "Mug", "Mug", "target", [box((1, 0, 0.05), (0.1, 0.1, 0.1), m)]),
            SceneObject("Mug_2", "Mug", "Mug", "target", [box((2, 0, 0.05), (0.1, 0.12, 0.1), m)]),
            SceneObject("Pen_1", "Pen", "Pen", "target", [box((3, 0, 0.005), (0.01, 0.14, 0.008), m)])]
    st = catalog_stats([_scene(objs)])
    assert st["multi_instance_fraction"] == pytest.approx(2 / 3)
    assert st["multi_instance_groups"] == 1 and st["groups_with_different_sizes"] == 1
    assert st["under_1cm_fraction"] == pytest.approx(1 / 3)
    assert st["median_shortest_side_m"] == pytest.approx(0.1)
    assert st["radius_max_m"] == pytest.approx(float(np.hypot(3.0, 0.005)))
    assert InventoryEntry("Mug_1", "Mug", "Mug") in _scene(objs).public.inventory
