"""``benchmarks/nbv_results.py`` prints the "Next-best-view baselines" table layout of docs/nbv.md: one
row per agent, the mean over seeds, labelled with the all-target mean IoU spread."""

from __future__ import annotations

import importlib.util
import json
import re
import shlex
from pathlib import Path

import numpy as np
import pytest

from spatialscout_gym.nbv.policy_files import SHIPPED_POLICY

ROOT = Path(__file__).resolve().parents[1]


def _script():
    spec = importlib.util.spec_from_file_location("nbv_results", ROOT / "benchmarks" / "nbv_results.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_rows_are_seed_means_labelled_with_the_all_target_spread():
    m = _script()
    seeds = [[50.0] * 7 + [50.0], [51.27] * 7 + [51.27], [50.5] * 7 + [50.5]]
    rows = m.table_rows({"random-nbv": seeds, "origin": [[0.0] * 7 + [100.0]]})
    assert list(rows) == ["random-nbv (spread 1.27)", "origin"]
    assert rows["random-nbv (spread 1.27)"][0] == pytest.approx((50 + 51.27 + 50.5) / 3)
    assert rows["origin"][-1] == 100.0
    assert m.agent_label("ppo:models/nbv_ppo/model.zip") == "nbv_ppo"
    assert m.agent_label("ppo:runs/nbv/ppo20/") == "ppo20"
    assert m.agent_label("frontier-nbv") == "frontier-nbv"


def test_readme_table_has_the_scripts_layout_for_the_command_it_quotes():
    m = _script()
    text = (ROOT / "docs" / "nbv.md").read_text()
    section = text[text.index("## Next-best-view baselines"):]
    end = section.find("\n## ", 1)
    section = section if end < 0 else section[:end]
    command = re.search(r"python benchmarks/nbv_results\.py(.*?)\n```", section, re.S).group(1)
    argv = shlex.split(command.replace("\\\n", " "))

    def values(option: str) -> list[str]:
        rest = argv[argv.index(option) + 1:]
        return rest[:next((i for i, a in enumerate(rest) if a.startswith("--")), len(rest))]

    agents, n_seeds = values("--agents"), len(values("--seeds"))
    lines = section.splitlines()                                  # the first table of the section
    start = next(i for i, line in enumerate(lines) if line.startswith("| agent |"))
    end = next((i for i in range(start, len(lines)) if not lines[i].startswith("|")), len(lines))
    table = [line for line in lines[start:end] if line.startswith("| ")]
    assert table[0] == m.markdown({}).splitlines()[0]           # same columns, same order
    labels = [line.split(" | ")[0][2:] for line in table[1:]]
    suffix = r" \(spread \d+\.\d\d\)" if n_seeds > 1 else ""
    assert len(labels) == len(agents)
    for label, agent in zip(labels, agents):
        assert re.fullmatch(re.escape(m.agent_label(agent)) + suffix, label), (label, agent)


def test_summary_has_micro_macro_spreads_and_scene_types():
    m = _script()

    def result(micro, macro, single, apartment=None):
        by_type = {"single_room": {"all": {"mean_iou": single}}}
        if apartment is not None:
            by_type["apartment"] = {"all": {"mean_iou": apartment}}
        return {"object_micro": {"all": {"mean_iou": micro}}, "scene_macro": {"all": {"mean_iou": macro}},
                "by_type": by_type}

    rows = m.summary_rows({"ppo": [result(0.80, 0.82, 0.9, 0.7), result(0.84, 0.83, 0.92, 0.74)],
                           "rooms-only": [result(0.5, 0.5, 0.5)]})
    assert rows["ppo"] == pytest.approx([82.0, 4.0, 82.5, 1.0, 91.0, 72.0])
    assert np.isnan(rows["rooms-only"][-1])                       # no apartment evaluated
    text = m.markdown(rows, m.SUMMARY_COLUMNS)
    assert text.splitlines()[0] == "| agent | " + " | ".join(m.SUMMARY_COLUMNS) + " |"
    assert text.splitlines()[-1].endswith("| 50.00 | - |")


def _score(scene: str, iou: list[float], submitted: int | None = None):
    from spatialscout_gym.core.scoring import THRESHOLDS, SceneScore
    iou_arr = np.asarray(iou, dtype=float)
    hits = np.array([iou_arr > t for t in THRESHOLDS])
    return SceneScore(scene, len(iou) if submitted is None else submitted, iou_arr,
                      np.full(len(iou), np.nan), [None] * len(iou), hits)


def test_paired_subsets_are_scene_types_and_every_fifth_id_at_seed_0():
    m = _script()
    ids = [f"S{i}" for i in range(12)]
    types = {s: ("single_room" if i % 3 else "apartment") for i, s in enumerate(ids)}
    subsets = m.paired_subsets(ids, types, [0, 1])
    assert list(subsets) == ["overall", "single rooms", "apartments"] + [f"fifth {k} (seed 0)" for k in range(5)]
    assert len(subsets["overall"]) == 24
    assert subsets["apartments"] == [(s, k) for s in ("S0", "S3", "S6", "S9") for k in (0, 1)]
    assert subsets["fifth 0 (seed 0)"] == [("S0", 0), ("S5", 0), ("S10", 0)]
    assert subsets["fifth 4 (seed 0)"] == [("S4", 0), ("S9", 0)]
    assert "fifth 0 (seed 0)" not in m.paired_subsets(ids, types, [1, 2])     # fifths are at seed 0 only


def test_paired_table_is_policy_minus_baseline_object_micro_with_interval_and_p_value():
    m = _script()
    # four scenes, seed 0; the policy gains 0.2 IoU on every target; scene sizes 2, 2, 4, 4 targets
    sizes = {"A": 2, "B": 2, "C": 4, "D": 4}
    base = {(s, 0): _score(s, [0.5] * n) for s, n in sizes.items()}
    other = {(s, 0): _score(s, [0.7] * n) for s, n in sizes.items()}
    other[("D", 0)] = _score("D", [0.7, 0.7, 0.0, 0.0], submitted=2)      # ... but misses two in D
    table = m.paired_table(base, other, {"overall": list(base), "AB": [("A", 0), ("B", 0)]}, n_resamples=999)
    row = table["overall"]["figures"]["object_micro.all.mean_iou"]
    assert row["a"] == pytest.approx(0.5)
    assert row["b"] == pytest.approx((0.7 * 10) / 12)                        # object-micro: sum Q / sum N
    assert row["difference"] == pytest.approx(0.7 * 10 / 12 - 0.5)
    sub = table["overall"]["figures"]["object_micro.submitted.mean_iou"]
    assert sub["b"] == pytest.approx(0.7) and sub["difference"] == pytest.approx(0.2)
    assert table["overall"]["scenes"] == 4 and table["overall"]["cells"] == 4
    # 2**4 = 16 sign flips, all exact: the observed gain on submitted IoU is matched only by itself
    # and its mirror, so p = 2 / 16
    assert sub["p_value"] == pytest.approx(2 / 16)
    assert sub["low"] == pytest.approx(0.2) and sub["high"] == pytest.approx(0.2)
    ab = table["AB"]["figures"]["object_micro.all.mean_iou"]
    assert ab["difference"] == pytest.approx(0.2) and table["AB"]["scenes"] == 2
    # compare's rule: the interval excludes 0 AND p < 0.05; four scenes cannot reach p < 0.05
    assert m.verdict(sub) == "ahead (not separated)"
    assert m.verdict({**sub, "p_value": 0.01}) == "better"
    assert m.verdict({"low": -0.1, "high": 0.2, "difference": 0.0, "p_value": 0.9}) == "ahead (not separated)"
    assert m.verdict({"low": 0.0, "high": 0.0, "difference": 0.0, "p_value": 1.0}) == "equal"   # the same in every cell
    assert m.verdict({"low": -0.1, "high": 0.2, "difference": -0.01, "p_value": 0.5}) == "behind (not separated)"
    assert m.verdict({"low": -0.3, "high": -0.1, "difference": -0.2, "p_value": 0.001}) == "worse"
    assert m.verdict({"low": -0.3, "high": -0.1, "difference": -0.2, "p_value": 0.2}) == "behind (not separated)"
    text = m.paired_markdown(table, "object_micro.submitted.mean_iou", "frontier-nbv", "nbv_ppo")
    assert text.splitlines()[2] == ("| overall | 4 x 1 | 50.00 | 70.00 | +20.00 | [+20.00, +20.00] | 0.125 | "
                                    "ahead (not separated) |")


def test_verdict_is_compare_rule():
    """One rule, one place: the table's better/worse is exactly ``eval.analysis.stats.separated``."""
    from spatialscout_gym.eval.analysis.stats import separated
    m = _script()
    rng = np.random.default_rng(0)
    for _ in range(200):
        low = float(rng.uniform(-0.2, 0.2))
        row = {"low": low, "high": low + float(rng.uniform(0, 0.2)), "difference": low + 0.05,
               "p_value": float(rng.uniform(0, 0.2))}
        assert (m.verdict(row) in ("better", "worse")) == separated(row)


def test_rliable_iqm_profile_and_stratified_intervals():
    from scipy.stats import trim_mean
    m = _script()
    scores = np.arange(12, dtype=float).reshape(4, 3) / 11          # 4 scenes x 3 seeds
    r = m.rliable_summary(scores, n_resamples=999)
    assert r["iqm"] == pytest.approx(np.mean(np.sort(scores.ravel())[3:9]))   # the middle half of 12
    assert r["iqm"] == pytest.approx(trim_mean(scores.ravel(), 0.25))
    prof = dict(zip(r["profile"]["tau"], r["profile"]["fraction"]))
    assert prof[0.5] == pytest.approx(6 / 12) and prof[0.0] == pytest.approx(11 / 12) and prof[1.0] == 0.0
    assert r["iqm_low"] <= r["iqm"] <= r["iqm_high"] and r["iqm_low"] < r["iqm_high"]
    # stratified over seeds within scenes: scenes whose seeds agree leave nothing to resample
    flat_seeds = np.repeat(np.array([[0.1], [0.4], [0.6], [0.9]]), 3, axis=1)
    s = m.rliable_summary(flat_seeds, n_resamples=999)
    assert s["iqm_low"] == pytest.approx(s["iqm"]) == pytest.approx(s["iqm_high"])
    assert m.rliable_summary(scores[:, :1])["iqm_low"] is None       # one seed: no interval
    text = m.rliable_markdown({"nbv_ppo": r})
    assert text.splitlines()[2].startswith(f"| nbv_ppo | 12 | {100 * r['iqm']:.1f} [")


def test_episode_matrix_is_scenes_by_seeds_of_all_target_mean_iou():
    m = _script()
    runs = [{"per_scene": {"A": {"iou": [1.0, 0.0]}, "B": {"iou": [0.5]}}},
            {"per_scene": {"A": {"iou": [1.0, 1.0]}, "B": {"iou": []}}}]
    assert m.episode_matrix(runs).tolist() == [[0.5, 1.0], [0.5, 0.0]]


def test_scene_records_rebuild_the_scores_the_statistics_read():
    m = _script()
    from spatialscout_gym.eval.analysis.stats import figure_sums
    score = _score("A", [0.95, 0.6, 0.0, 0.3], submitted=3)
    rec = json.loads(json.dumps(m.scene_record(score, "apartment")))         # as the JSON and the cache keep it
    assert rec["type"] == "apartment" and rec["M"] == 3
    back = m.episode_scores({"A": rec}, seed=2)
    assert list(back) == [("A", 2)]
    for x, y in zip(figure_sums({("A", 2): score}), figure_sums(back)):
        assert np.array_equal(np.asarray(x), np.asarray(y))


@pytest.mark.render
@pytest.mark.slow
def test_script_writes_the_paired_comparison_of_the_shipped_policy(tmp_path):
    """Two catalog scenes, V = 3, real SAPIEN renders: the JSON holds the policy-minus-frontier
    comparison of every subset, and it equals the difference of the two agents' own figures."""
    import subprocess
    import sys
    out = tmp_path / "r.json"
    model = SHIPPED_POLICY / "model.zip"
    run = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "nbv_results.py"), "--scenes", "2",
                          "--image-budget", "3", "--agents", "frontier-nbv", f"ppo:{model}", "--seeds", "0",
                          "--resamples", "99", "--out", str(out), "--evals", str(tmp_path / "evals"), "--no-progress"], capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-2000:]
    data = json.loads(out.read_text())
    paired = data["paired"][f"ppo:{model}"]
    assert paired["baseline"] == "frontier-nbv"
    assert set(paired["subsets"]) >= {"overall", "fifth 0 (seed 0)", "fifth 1 (seed 0)"}
    row = paired["subsets"]["overall"]["figures"]["object_micro.all.mean_iou"]
    own = {a: data["agents"][a]["0"]["object_micro"]["all"]["mean_iou"] for a in ("frontier-nbv", f"ppo:{model}")}
    assert row["a"] == pytest.approx(own["frontier-nbv"]) and row["b"] == pytest.approx(own[f"ppo:{model}"])
    assert "nbv_ppo minus frontier-nbv, all-target mean IoU" in run.stdout
    assert "| overall | 2 x 1 |" in run.stdout


def test_a_mapper_is_a_policy_copy_or_a_baseline_option_in_its_own_evaluation(tmp_path):
    """The surface mapper runs a policy as a copy whose nbv_config.json differs only in "mapper"
    (what ``evaluate --agent ppo:COPY`` runs) and a baseline with its ``mapper`` option; the centre
    mapper runs both as they are; each (agent, mapper) has its own evaluation directory."""
    m = _script()
    policy = tmp_path / "pol"
    policy.mkdir()
    (policy / "model.zip").write_bytes(b"weights")
    settings = {"motion": "heading", "mapper": "oracle", "deterministic": False, "image_budget": 20}
    (policy / "nbv_config.json").write_text(json.dumps(settings))
    copies = tmp_path / "copies"
    assert m.agent_and_options(f"ppo:{policy}", "oracle", copies) == (f"ppo:{policy}", {})
    agent, options = m.agent_and_options(f"ppo:{policy}", "oracle-surface", copies)
    copy = Path(agent[4:])
    assert options == {} and copy.parent == copies and (copy / "model.zip").read_bytes() == b"weights"
    assert json.loads((copy / "nbv_config.json").read_text()) == {**settings, "mapper": "oracle-surface"}
    assert m.agent_and_options("frontier-nbv", "oracle-surface", copies) == ("frontier-nbv", {"mapper": "oracle-surface"})
    assert m.agent_and_options("frontier-nbv", "oracle", copies) == ("frontier-nbv", {})
    dirs = {m.evaluation_dir(tmp_path, "catalog-v3.1-x", a, mapper, 20, 64, None)
            for a in ("frontier-nbv", f"ppo:{policy}") for mapper in m.MAPPERS}
    assert len(dirs) == 4


def test_cache_key_changes_with_the_scenes_content(monkeypatch):
    """A cached result is reused only on the same scenes: another catalog version (another
    manifest) or other procedural rules give another key."""
    import spatialscout_gym.scenes.procedural as procedural
    m = _script()
    monkeypatch.setenv("SPATIALSCOUT_CATALOG", "3.0")
    v3 = m.scene_set_key(False)
    monkeypatch.setenv("SPATIALSCOUT_CATALOG", "2.0")
    v2 = m.scene_set_key(False)
    assert v3.startswith("catalog-v3.0-") and v2.startswith("catalog-v2.0-") and v2[-10:] != v3[-10:]
    rules3 = m.scene_set_key(True)
    monkeypatch.setattr(procedural, "DEFAULT_RULES_VERSION", "2.0")
    rules2 = m.scene_set_key(True)
    assert rules3.startswith("procedural-rules-v3.0-") and rules2.startswith("procedural-rules-v2.0-")
    assert rules2[-10:] != rules3[-10:]
