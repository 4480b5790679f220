"""``spatialscout scenes list|stats|export|freeze`` end to end with the
scorer reading the exported ground truth."""

from __future__ import annotations

import argparse
import json

import pytest

from spatialscout_gym.cli import scenes as scenes_cli
from spatialscout_gym.cli.errors import CliError
from spatialscout_gym.scenes.catalog import catalog_scene_ids

from conftest import CATALOG_GROUP, generate_catalog_scene_once

pytestmark = CATALOG_GROUP


@pytest.fixture(autouse=True)
def _default_catalog(monkeypatch):
    """``--catalog`` sets $SPATIALSCOUT_CATALOG for the process; undo it after each test."""
    from spatialscout_gym.scenes.catalog import CATALOG_ENV
    monkeypatch.setenv(CATALOG_ENV, "3.0")
    monkeypatch.delenv(CATALOG_ENV)


def _run(argv: list[str]) -> int:
    p = argparse.ArgumentParser(prog="spatialscout")
    sub = p.add_subparsers()
    scenes_cli.register(sub)
    try:
        from spatialscout_gym.cli import score
        score.register(sub)
    except ImportError:
        pass
    args = p.parse_args(argv)
    return int(args.func(args) or 0)


def test_list_prints_every_catalog_scene(capsys):
    assert _run(["scenes", "list"]) == 0
    out = capsys.readouterr().out
    for sid in catalog_scene_ids():
        assert sid in out
    assert "catalog v3.1: 80 scenes" in out
    assert _run(["scenes", "list", "--catalog", "1.0"]) == 0
    assert "catalog v1.0: 80 scenes" in capsys.readouterr().out


def test_list_says_the_provenance_notes_once_and_keeps_json_clean(capsys, tmp_path, monkeypatch):
    """The recorded-only notes change nothing a run does: ``scenes list`` says them once (on stderr,
    so ``--json`` stays JSON) and again only when they change."""
    from spatialscout_gym.scenes import catalog
    monkeypatch.setenv("SPATIALSCOUT_CACHE_DIR", str(tmp_path / "cache"))
    notes = ["catalog v3.1: the generator code differs", "catalog v3.1: numpy 9 here, 1 when frozen",
             "catalog v3.1: sapien 9 here, 3 when frozen"]
    monkeypatch.setattr(catalog, "check_provenance", lambda version=None: list(notes))
    assert _run(["scenes", "list"]) == 0
    first = capsys.readouterr()
    assert [ln for ln in first.err.splitlines() if ln.startswith("note:")] == [f"note: {n}" for n in notes]
    assert "note:" not in first.out
    assert _run(["scenes", "list"]) == 0
    assert "note:" not in capsys.readouterr().err        # said once
    assert _run(["scenes", "list", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["catalog_version"] == "3.1"
    notes.append("catalog v3.1: scipy 9 here, 1 when frozen")     # a new difference is said again
    assert _run(["scenes", "list"]) == 0
    assert len([ln for ln in capsys.readouterr().err.splitlines() if ln.startswith("note:")]) == 4


def test_stats_json_has_ours_paper_and_the_ai2thor_comparison(capsys, tmp_path, monkeypatch):
    from spatialscout_gym.scenes import catalog   # the scenes the catalog files generate, not again
    monkeypatch.setattr(catalog, "generate_catalog_scene", generate_catalog_scene_once)
    png = tmp_path / "sizes.png"
    assert _run(["scenes", "stats", "--json", "--plot", str(png)]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["catalog_version"] == "3.1"
    assert d["ours"]["n_scenes"] == 80 and d["paper"]["n_targets"] == 3140
    assert set(d["paper"]) - {"top_categories"} <= set(d["ours"])
    assert set(d["release"]) - {"top_categories"} <= set(d["ours"])
    # each figure under its source: the paper's 1,489 (43.3%), the release's 1,393 (44%)
    assert (d["paper"]["multi_instance_targets"], d["paper"]["multi_instance_fraction"]) == (1489, 0.433)
    assert d["release"]["multi_instance_targets"] == 1393 and "n_categories" not in d["paper"]
    assert {k: sum(v.values()) for k, v in d["scene_sources"].items()} == {"paper": 90, "release": 80}
    assert d["ours"]["multi_instance_targets"] == round(d["ours"]["multi_instance_fraction"] * d["ours"]["n_targets"])
    sz = d["sizes_vs_ai2thor"]
    assert 0.97 <= sz["weighted_ratio"] <= 1.10 and sz["spread_factor"] <= 1.15
    chair = sz["categories"]["Chair"]
    assert chair["ratio"] == pytest.approx(chair["ours_m"] / chair["ai2thor_m"])
    assert d["reference_losses_m"]["paper"] == {"origin": 2.984, "uniform_ball": 4.487}
    for kind, paper in d["reference_losses_m"]["paper"].items():
        assert d["reference_losses_m"]["ours"][kind] == pytest.approx(paper, rel=0.05)
    rooms = d["room_plausibility"]   # the default v3.1 places by ProcTHOR's annotations
    assert rooms["single_rooms"]["fraction"] <= 0.05 and rooms["n_categories"] >= 110
    assert set(rooms["single_rooms"]["by_room"]) == {"Kitchen", "LivingRoom", "Bedroom", "Bathroom", "Office"}
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 10_000


def test_stats_text_names_each_columns_source(capsys, monkeypatch):
    from spatialscout_gym.scenes import catalog
    few = catalog.catalog_entries()[:2]
    monkeypatch.setattr(catalog, "catalog_entries", lambda: few)   # two scenes keep it quick
    assert _run(["scenes", "stats"]) == 0
    out = capsys.readouterr().out
    header = next(line for line in out.splitlines() if line.startswith("statistic"))
    assert header.split()[1:] == ["this", "catalog", "paper", "release"]
    rows = {line.split()[0]: line.split() for line in out.splitlines() if line.strip()}
    assert rows["multi_instance_targets"][-2:] == ["1489", "1393"]
    assert "paper scene sources: iTHOR 32" in out and "(sum 90)" in out and "(sum 80)" in out
    assert "outside reader" in out and "3,410" in out
    # the release column where the audit measured it; section 2.2's small-object figures as the paper's
    assert rows["n_targets"][-1] == "3140" and rows["scenes_35"][-1] == "12" and rows["scenes_40"][-1] == "68"
    assert rows["radius_min_m"][-1] == "1.954" and rows["radius_max_m"][-1] == "9.231"
    assert rows["under_1cm_fraction"][-2:] == ["0.067", "0.067"] and rows["median_shortest_side_m"][-2] == "0.117"
    assert "(other paper version: 3.113)" in out and "(other paper version: 4.701)" in out


def test_export_writes_files_the_scorer_reads(tmp_path, capsys):
    out = tmp_path / "scenes"
    assert _run(["scenes", "export", "Kitchen_01", "procedural:5", "--out", str(out)]) == 0
    for sid in ("Kitchen_01", "procedural_5"):
        d = out / sid
        pub = json.loads((d / "entity_library.json").read_text())
        gt = json.loads((d / "ground_truth.json").read_text())
        assert len(pub["inventory"]) == len(gt["targets"]) in (35, 40)
        assert "targets" not in pub and "box_min" not in json.dumps(pub)   # public half only
        assert (d / "scene_spec.json").is_file()
    capsys.readouterr()
    assert _run(["score", "--reference", "origin", "--json", str(out)]) == 0
    res = json.loads(capsys.readouterr().out)
    assert set(res["scenes"]) == {"Kitchen_01", "procedural_5"}
    # origin reference: the mean centre error is the mean target distance from the camera
    for sid, m in res["scenes"].items():
        gt = json.loads((out / sid / "ground_truth.json").read_text())
        dist = [sum(c * c for c in t["center"]) ** 0.5 for t in gt["targets"]]
        assert m["num_targets"] == len(dist) and m["coverage"] == 1.0
        assert m["center_error_m"]["mean"] == pytest.approx(sum(dist) / len(dist), rel=1e-6)
        assert max(dist) == pytest.approx(gt["radius_m"])


def test_export_unknown_scene_is_a_user_error(tmp_path):
    with pytest.raises(CliError, match="scenes list"):
        _run(["scenes", "export", "Nope_01", "--out", str(tmp_path)])


def test_freeze_to_a_path(tmp_path, capsys, monkeypatch):
    from spatialscout_gym.scenes import catalog
    shipped = catalog.manifest()["scenes"][:2]
    full = catalog.catalog_entries()
    monkeypatch.setattr(catalog, "catalog_entries", lambda version=None: full[:2])
    target = tmp_path / "m.json"
    assert _run(["scenes", "freeze", "--out", str(target)]) == 0
    catalog.manifest.cache_clear()
    assert json.loads(target.read_text())["scenes"] == shipped
