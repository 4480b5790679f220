"""docs/nbv.md's NBV-v2 tables of the shipped policy show only what ``benchmarks/nbv_results.py``
wrote into ``docs/nbv_v2_v20_oracle.json`` (the command in docs/nbv.md): every agent row (mean of seeds, spread,
scene-macro, per scene type) and every paired row (the two figures, difference, interval, p)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "docs" / "nbv_v2_v20_oracle.json"
ROWS = {"nbv-occupancy-frontier": "nbv-occupancy-frontier", "frontier-nbv": "frontier-nbv",
        "nbv_ppo_v1": "ppo:runs/nbv_ppo_v1/model.zip", "nbv_ppo": "ppo:models/nbv_ppo/model.zip"}
"""The agent rows of the tables (the script's labels) and the ``--agents`` entry each was made from."""


def section() -> str:
    text = (ROOT / "docs" / "nbv.md").read_text()
    start = text.index("**Results under NBV-v2.**")
    return text[start:text.index("**NBV-v1 results (phase 3, history).**", start)]


def cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


def pct(x: float) -> str:
    return f"{100 * x:.2f}"


@pytest.fixture(scope="module")
def results() -> dict:
    return json.loads(RESULTS.read_text())


def test_the_results_are_the_shipped_settings(results):
    assert (results["nbv_env"], results["image_budget"], results["resolution"], results["mapper"]) == \
        ("SpatialScout/NBV-v2", 20, 64, "oracle")
    assert results["seeds"] == [0, 1, 2] and len(results["scenes"]) == 80 and results["catalog_version"] == "3.1"
    assert set(results["agents"]) == set(ROWS.values())


def seed_runs(results: dict, agent: str) -> list[dict]:
    return [results["agents"][agent][str(s)] for s in results["seeds"]]


def mean_and_spread(values: list[float]) -> list[str]:
    return [pct(np.mean(values)), f"{100 * (max(values) - min(values)):.2f}"]


def test_every_agent_row_is_the_json(results):
    lines = [line for line in section().splitlines() if line.startswith("| ")]
    first = {cells(line)[0]: cells(line)[1:] for line in lines if " (spread " in cells(line)[0]}
    second = {cells(line)[0]: cells(line)[1:] for line in lines if cells(line)[0] in ROWS}
    assert len(first) == len(second) == len(ROWS)
    for label, agent in ROWS.items():
        runs = seed_runs(results, agent)
        micro = [r["object_micro"] for r in runs]
        spread = mean_and_spread([m["all"]["mean_iou"] for m in micro])[1]
        row = [pct(np.mean([m[view][k] for m in micro])) for view, k in
               [("all", "mean_iou"), ("all", "gt_0"), ("all", "gt_50"), ("all", "gt_90"),
                ("submitted", "mean_iou"), ("submitted", "gt_50"), ("submitted", "gt_90")]]
        assert first[f"{label} (spread {spread})"] == row + [pct(np.mean([m["coverage"] for m in micro]))], label
        expected = (mean_and_spread([m["all"]["mean_iou"] for m in micro])
                    + mean_and_spread([r["scene_macro"]["all"]["mean_iou"] for r in runs])
                    + [pct(np.mean([r["by_type"][t]["all"]["mean_iou"] for r in runs]))
                       for t in ("single_room", "apartment")])
        assert second[label] == expected, label


def test_every_paired_row_is_the_json(results):
    paired = results["paired"]["ppo:models/nbv_ppo/model.zip"]
    assert paired["baseline"] == "frontier-nbv"
    shown = {cells(line)[0]: cells(line)[1:] for line in section().splitlines()
             if re.match(r"\| (overall|single rooms|apartments|fifth \d) ", line)}
    assert set(shown) == set(paired["subsets"]) and len(shown) == 8
    for name, sub in paired["subsets"].items():
        f = sub["figures"]["object_micro.all.mean_iou"]
        interval = f"[{100 * f['low']:+.2f}, {100 * f['high']:+.2f}]"
        assert shown[name][1:6] == [pct(f["a"]), pct(f["b"]), f"{100 * f['difference']:+.2f}", interval,
                                    f"{f['p_value']:.3f}"], name


HEADLINE = {"oracle": ROOT / "docs" / "nbv_tables_oracle.json",
            "oracle-surface": ROOT / "docs" / "nbv_tables_oracle-surface.json"}
"""The headline tables' JSON, one per mapper, each written by ``benchmarks/nbv_results.py --out``."""


def headline_section() -> str:
    text = (ROOT / "docs" / "nbv.md").read_text()
    start = text.index("## Headline tables")
    return text[start:text.index("\n## ", start + 1)]


def _script():
    import importlib.util
    spec = importlib.util.spec_from_file_location("nbv_results", ROOT / "benchmarks" / "nbv_results.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_headline_table_is_both_mappers_json():
    """Every row of the headline table (coverage and all-target IoU under the centre and the surface
    mapper) is what ``nbv_results.py --headline`` prints from the two JSONs, and the JSONs hold one
    cell per (agent, scene, seed) they report, each with its coverage, IoU and blocked moves."""
    m = _script()
    tables = {k: json.loads(p.read_text()) for k, p in HEADLINE.items()}
    assert {k: t["mapper"] for k, t in tables.items()} == {"oracle": "oracle", "oracle-surface": "oracle-surface"}
    rows = m.headline_rows(tables["oracle"], tables["oracle-surface"])
    shown = {cells(line)[0]: cells(line)[1:] for line in headline_section().splitlines()
             if line.startswith("| ") and " (seeds " in line}
    assert shown and set(shown) == set(rows)
    for label, values in rows.items():
        assert shown[label] == [f"{v:.2f}" for v in values], label
    for t in tables.values():
        for agent, runs in t["agents"].items():
            seeds = {int(k) for k in runs if k.isdigit()}
            mine = [c for c in t["cells"] if c["agent"] == agent]
            assert {(c["scene"], c["seed"]) for c in mine} == {(s, k) for s in t["scenes"] for k in seeds}, agent
            assert all(c["mapper"] == t["mapper"] and c["blocked_moves"] is not None for c in mine), agent
            for k in seeds:   # each seed's object-micro coverage is its cells' targets mapped over targets
                seed_cells = [c for c in mine if c["seed"] == k]
                pooled = sum(c["coverage"] * c["num_targets"] for c in seed_cells) / sum(c["num_targets"] for c in seed_cells)
                assert runs[str(k)]["object_micro"]["coverage"] == pytest.approx(pooled), (agent, k)


def test_the_headline_paired_table_is_both_mappers_json():
    """The headline's paired table (each policy minus ``frontier-nbv`` under both mappers) is, row
    for row, what ``nbv_results.py --headline`` prints from the two JSONs, every policy included."""
    m = _script()
    tables = {k: json.loads(p.read_text()) for k, p in HEADLINE.items()}
    expected = m.headline_paired_markdown(tables["oracle"], tables["oracle-surface"]).splitlines()
    section = headline_section().splitlines()
    start = section.index(expected[0])
    assert section[start:start + len(expected)] == expected
    assert start + len(expected) == len(section) or not section[start + len(expected)].startswith("|")
    policies = {cells(line)[0] for line in expected[2:]}
    assert policies == {m.agent_label(n) for n in tables["oracle"]["paired"]} >= {"nbv_ppo", "nbv_ppo_v3_blocked"}


def test_the_readme_quotes_the_headline_json():
    """The README's NBV paragraph quotes each policy's coverage, surface all-target IoU and paired
    difference from ``frontier-nbv`` (interval too) as the headline JSONs hold them, to 0.1 point."""
    tables = {k: json.loads(p.read_text()) for k, p in HEADLINE.items()}
    readme = " ".join((ROOT / "README.md").read_text().split())
    start = readme.index("on the 80 catalog scenes x 3 seeds")
    paragraph = readme[start:readme.index("## ", start)]

    def quoted(table: dict, agent: str) -> tuple[str, str]:
        row = table["paired"][agent]["subsets"]["overall"]["figures"]["object_micro.all.mean_iou"]
        return (f"{100 * row['b']:.1f}%",
                f"{100 * row['difference']:+.1f} [{100 * row['low']:+.1f}, {100 * row['high']:+.1f}]")

    for agent in ("ppo:models/nbv_ppo", "ppo:models/nbv_ppo_v3", "ppo:models/nbv_ppo_v3_blocked"):
        for mapper, table in tables.items():
            level, difference = quoted(table, agent)
            assert level in paragraph and difference in paragraph.replace("points, 95% interval ", ""), \
                (agent, mapper, level, difference)


@pytest.mark.parametrize("name", ["nbv_training_seeds", "nbv_training_seeds_blocked"])
def test_each_training_seed_table_is_its_json(name):
    """The rows of a fine-tune's training-seed table in docs/nbv.md (coverage, episodes blocked on
    more than a quarter, worst blocked fraction) are its JSON's, and the seeds are the JSON's."""
    data = json.loads((ROOT / "docs" / f"{name}.json").read_text())
    text = (ROOT / "docs" / "nbv.md").read_text()
    start = text.index(f"`docs/{name}.json`")
    rows = {}
    for line in text[start:].splitlines()[1:]:
        if line.startswith("| fine-tune seed"):
            continue
        if rows and not line.startswith("|"):
            break
        if line.startswith("| ") and not line.startswith("|---"):
            first, *rest = cells(line)
            rows[first.split()[0]] = rest
    assert set(rows) == {str(s) for s in data["training_seeds"]}
    for seed, (coverage, over, worst) in rows.items():
        want = data["per_seed"][seed]
        assert coverage == f"{want['coverage_pct']:.2f}"
        assert over == f"{want['over_quarter_blocked']} of {data['episodes_per_seed']}"
        assert worst == f"{want['max_blocked_fraction']:.3f}"
