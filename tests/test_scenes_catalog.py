"""The frozen 80-scene catalogs (v3.0 and v3.1, the default, have their own file): composition, hashes of v1.0 and
v2.0 against their shipped manifests, statistics in the paper's ranges, v2.0's sizes against
AI2-THOR's and its visibility check, training/catalog disjointness, scene lookup, provenance."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

from spatialscout_gym.core.spec import InventoryEntry, SceneObject, SceneSpec
from spatialscout_gym.scenes import catalog
from spatialscout_gym.scenes.catalog import (CATALOG_ENV, CATALOG_VERSION, RENDER_SETTINGS, CatalogMismatchError,
                                             catalog_entries, catalog_scene_ids, check_provenance,
                                             load_scene, manifest, render_settings,
                                             scene_by_name, scene_catalog_version, scene_content_hash)
from spatialscout_gym.scenes.geometry import box, mat
from spatialscout_gym.scenes.procedural import procedural_scene
from spatialscout_gym.scenes.stats import PAPER_REFERENCE_LOSSES_M, catalog_stats, reference_losses, size_comparison
from spatialscout_gym.scenes.visibility import unseen_in_spec

from conftest import CATALOG_GROUP
from test_scenes_generator import assert_inside_world_box, assert_physically_plausible


pytestmark = CATALOG_GROUP


@pytest.fixture(scope="module")
def specs(catalog_specs) -> list[SceneSpec]:
    """Catalog v2.0 (the default before v3.0), generated once."""
    return catalog_specs("2.0")


@pytest.fixture(scope="module")
def specs_v1(catalog_specs) -> list[SceneSpec]:
    return catalog_specs("1.0")


@pytest.fixture(autouse=True)
def _default_catalog(monkeypatch):
    monkeypatch.setenv(CATALOG_ENV, "3.0")   # recorded, so teardown removes what a test sets
    monkeypatch.delenv(CATALOG_ENV)          # a bare id means the default, v3.1, here


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


@pytest.mark.parametrize("version", ["1.0", "2.0"])
def test_manifest_is_frozen_and_matches_regenerated_hashes(version, specs, specs_v1):
    m = manifest(version)
    settings = render_settings(version)
    assert m["catalog_version"] == version and m["render_settings"] == settings
    assert settings["shader"] == "minimal" and settings["width"] == 512
    for row, spec in zip(m["scenes"], specs if version == "2.0" else specs_v1):
        assert row["scene_id"] == spec.scene_id
        assert row["content_hash"] == spec.content_hash(settings), f"v{version} {spec.scene_id} drifted"
        assert row["n_targets"] == len(spec.public.inventory)
        assert row["radius_m"] == pytest.approx(spec.public.radius_m, abs=1e-5)
    spec = (specs if version == "2.0" else specs_v1)[3]   # the version is read from the spec itself
    assert scene_content_hash(spec) == m["scenes"][3]["content_hash"]


def test_versions_differ_and_v1_keeps_its_render_settings():
    assert CATALOG_VERSION == "3.1" and RENDER_SETTINGS == render_settings("2.0") == render_settings("3.0") \
        == render_settings("3.1")
    assert render_settings("1.0") == {"width": 512, "height": 512, "fov_y_deg": 65.0, "shader": "minimal",
                                      "renderer_settings_version": 1}
    assert render_settings("2.0")["texture_library"] == 1 and render_settings("2.0")["renderer_settings_version"] == 2
    v1 = {r["content_hash"] for r in manifest("1.0")["scenes"]}
    assert not v1 & {r["content_hash"] for r in manifest("2.0")["scenes"]}
    assert catalog_scene_ids("1.0") == catalog_scene_ids("2.0") == catalog_scene_ids("3.0") == catalog_scene_ids("3.1")
    assert not v1 & {r["content_hash"] for r in manifest("3.0")["scenes"]}
    assert not {r["content_hash"] for r in manifest("3.0")["scenes"]} & {r["content_hash"] for r in manifest("3.1")["scenes"]}


def test_v2_statistics_match_the_paper(specs):
    """The paper's split, radius range, multi-instance share, categories and
    the inventory-only references' losses within 5 %."""
    st = catalog_stats(specs)
    assert st["n_targets"] == 12 * 35 + 68 * 40 and st["scenes_35"] == 12 and st["scenes_40"] == 68
    assert 1.9 <= st["radius_min_m"] <= 2.8 and 8.5 <= st["radius_max_m"] <= 9.5
    assert 0.40 <= st["multi_instance_fraction"] <= 0.46
    assert st["groups_with_different_sizes"] > 0.5 * st["multi_instance_groups"]
    assert 0.08 <= st["median_shortest_side_m"] <= 0.16
    assert 0.04 <= st["under_1cm_fraction"] <= 0.10
    assert st["n_categories"] >= 94
    top = [name for name, _ in st["top_categories"][:6]]
    for must in ("Chair", "Painting", "Window", "Book"):
        assert must in top, f"{must} is not among the most common target categories {top}"
    losses = reference_losses(specs)
    for kind, paper in PAPER_REFERENCE_LOSSES_M.items():
        assert losses[kind] == pytest.approx(paper, rel=0.05), (kind, losses[kind], paper)


def test_v2_sizes_follow_ai2thor(specs):
    """Target-weighted size ratio to AI2-THOR's assets in [0.97, 1.10], spread
    at most 1.15 (objects' own boxes); v1.0 was measurably smaller."""
    sc = size_comparison(specs)
    assert 0.97 <= sc["weighted_ratio"] <= 1.10, sc["weighted_ratio"]
    assert sc["spread_factor"] <= 1.15, sc["spread_factor"]
    assert sc["n_targets_compared"] >= 0.9 * sc["n_targets"]
    assert set(sc["not_in_ai2thor"]) <= {"Bathtub", "Curtains", "Globe", "Mirror", "Poster"}


def test_v1_statistics_are_unchanged(specs_v1):
    st = catalog_stats(specs_v1)
    assert (round(st["radius_min_m"], 2), round(st["radius_max_m"], 2)) == (2.07, 8.32)
    assert round(st["multi_instance_fraction"], 3) == 0.482
    assert size_comparison(specs_v1)["weighted_ratio"] < 0.9


def test_every_v2_scene_is_physically_plausible_and_its_targets_visible(specs):
    for spec in specs:
        assert_physically_plausible(spec)
        assert unseen_in_spec(spec) == [], f"{spec.scene_id}: targets nobody inside the radius sees"


def test_visibility_check_finds_a_target_behind_a_wall():
    spec = load_scene("Kitchen_01")
    objs = spec.private.objects
    target = next(o for o in objs if o.role == "target" and o.category != "Window")
    lo, hi = target.aabb_world
    cam = spec.public.initial_camera.position_world
    # a box wall between the camera and the target, reaching floor to ceiling and far to both sides
    c = (cam + (lo + hi) / 2) / 2
    d = (lo + hi) / 2 - cam
    n = d / np.linalg.norm(d)
    yaw = float(np.degrees(np.arctan2(n[1], n[0])))
    from spatialscout_gym.scenes.geometry import place
    slab = place([box((0, 0, 0), (0.05, 30.0, 30.0), mat((1, 1, 1), 0.5))], c, yaw)
    from spatialscout_gym.scenes.visibility import unseen_targets
    walled = objs + [SceneObject("Slab_1", "Wall", "Wall", "static", slab, movable=False)]
    assert target.id in unseen_targets(walled, cam, 0.5 * np.linalg.norm(d) + 0.02, {target.id})
    assert target.id not in unseen_targets(objs, cam, spec.public.radius_m, {target.id})


def test_every_v1_and_v2_start_and_target_lies_inside_the_world_box(specs, specs_v1):
    """Generated once, as frozen: the start camera and every target inside the +-15 m box the
    camera may move in (rooms may reach past it; the frozen plans are kept as drawn)."""
    for spec in specs + specs_v1:
        assert_inside_world_box(spec, targets_only=True)


def test_every_catalog_scene_is_physically_plausible(specs_v1):
    for spec in specs_v1:
        assert_physically_plausible(spec)


def test_training_seeds_never_coincide_with_catalog_scenes():
    for version in ("1.0", "2.0", "3.0", "3.1"):
        frozen = {row["content_hash"] for row in manifest(version)["scenes"]}
        # same seed integers, same layouts and sizes as the catalog entries: the namespaces differ
        for e in catalog_entries(version)[::8]:
            spec = procedural_scene(e.seed, e.n_targets, e.layout,
                                    n_rooms=e.n_rooms if e.layout == "Apartment" else None,
                                    catalog_version=version)
            assert scene_content_hash(spec) not in frozen
        for seed in range(10):
            assert scene_content_hash(procedural_scene(seed, catalog_version=version)) not in frozen


def test_load_scene_verifies_the_hash(monkeypatch):
    spec = load_scene("Kitchen_02")
    assert spec.scene_id == "Kitchen_02"
    bad = json.loads(json.dumps(manifest()))
    bad["scenes"][1]["content_hash"] = "0" * 64
    monkeypatch.setattr(catalog, "manifest", lambda version=None: bad)
    with pytest.raises(CatalogMismatchError, match="Bump CATALOG_VERSION"):
        load_scene("Kitchen_02")


def test_a_verified_scene_is_kept_and_each_load_gets_its_own_copy(monkeypatch):
    calls = []
    real = catalog.generate_catalog_scene
    monkeypatch.setattr(catalog, "generate_catalog_scene", lambda e: calls.append(e.scene_id) or real(e))
    catalog._verified.clear()
    first = load_scene("Bedroom_03")
    first.private.objects.clear()               # a caller's change stays in its copy
    second, third = load_scene("Bedroom_03"), load_scene("Bedroom_03")
    assert calls == ["Bedroom_03"] and second is not third and second.private.objects
    assert scene_content_hash(second) == manifest()["scenes"][catalog_scene_ids().index("Bedroom_03")]["content_hash"]
    for sid in catalog_scene_ids()[:catalog.VERIFIED_SCENES_KEPT + 1]:   # the oldest is dropped past the cap
        load_scene(sid)
    assert len(catalog._verified) == catalog.VERIFIED_SCENES_KEPT


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


@pytest.mark.parametrize("version", ["1.0", "2.0", "3.0", "3.1"])
def test_freeze_reproduces_the_shipped_manifest(tmp_path, monkeypatch, version):
    shipped = manifest(version)["scenes"]
    full = catalog_entries(version)
    monkeypatch.setattr(catalog, "catalog_entries", lambda version=None: full[::20])
    data = catalog.freeze_manifest(tmp_path / "m.json", version=version)
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


def test_a_version_is_chosen_by_suffix_argument_or_environment(monkeypatch):
    v3 = load_scene("Kitchen_02")   # a bare id means the default, v3.1
    v1 = scene_by_name("Kitchen_02@1.0")
    assert scene_catalog_version(v3) == "3.1" and scene_catalog_version(v1) == "1.0"
    assert scene_content_hash(v1) == {r["scene_id"]: r["content_hash"] for r in manifest("1.0")["scenes"]}["Kitchen_02"]
    assert scene_content_hash(scene_by_name("Kitchen_02", catalog_version="1.0")) == scene_content_hash(v1)
    monkeypatch.setenv(CATALOG_ENV, "1.0")
    assert scene_content_hash(scene_by_name("Kitchen_02")) == scene_content_hash(v1)
    monkeypatch.setenv(CATALOG_ENV, "2.0")
    assert scene_catalog_version(scene_by_name("Kitchen_02")) == "2.0"
    monkeypatch.setenv(CATALOG_ENV, "4.0")
    with pytest.raises(ValueError, match="expected one of 1.0, 2.0, 3.0, 3.1"):
        scene_by_name("Kitchen_02")


def test_v2_manifest_records_provenance_and_refuses_other_assets(monkeypatch):
    prov = manifest("2.0")["provenance"]
    assert prov["image_encoding"]["format"] == "jpeg" and prov["image_encoding"]["max_side_px"] > 0
    assert 0 < prov["image_encoding"]["quality"] <= 100
    assert {"numpy", "python", "sapien"} <= set(prov["dependencies"]) and prov["backends"]["renderer"] == "sapien"
    assert len(prov["generator_fingerprint"]) == len(prov["asset_fingerprint"]) == 64
    # a dependency bump is recorded, never refused
    bumped = json.loads(json.dumps(manifest("2.0")))
    bumped["provenance"]["dependencies"]["numpy"] = "0.0.1"
    monkeypatch.setattr(catalog, "manifest", lambda version=None: bumped)
    assert any("numpy" in n and "recorded only" in n for n in check_provenance("2.0"))
    assert load_scene("Kitchen_02@2.0").scene_id == "Kitchen_02"
    # other generator data (the AI2-THOR size reference) is refused
    other = json.loads(json.dumps(manifest("2.0")))
    other["provenance"]["asset_fingerprint"] = "f" * 64
    monkeypatch.setattr(catalog, "manifest", lambda version=None: other)
    with pytest.raises(CatalogMismatchError, match="ai2thor_sizes.json"):
        load_scene("Kitchen_02@2.0")
