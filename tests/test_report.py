"""``evaluate`` with a Vulkan-free renderer, ``report.json``/``report.md``, failures, seed spread,
the per-category table and ``spatialscout compare``."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest

from fakes import FakeRenderer, small_scene
from record_fixtures import model_json
from spatialscout_gym.core.records import load_run_record
from spatialscout_gym.cli.main import main
from spatialscout_gym.core.scoring import aggregate
from spatialscout_gym.eval.running.evaluate import EvalSettings, SettingsMismatchError, evaluate, plan_tasks
from spatialscout_gym.eval.pages.report import CompareError, build_report, compare_reports


def scene_files(tmp_path, n=2):
    paths = []
    for k in range(n):
        spec = small_scene(32, 32, yaw_deg=20.0 + 25 * k, scene_id=f"fake-{k}")
        p = tmp_path / "specs" / f"fake-{k}.json"
        p.parent.mkdir(exist_ok=True)
        p.write_text(spec.to_json())
        paths.append(str(p))
    return paths


@pytest.fixture(scope="module")
def ball_eval(tmp_path_factory):
    """uniform-ball on two scenes x three seeds, plus one scene that cannot be built."""
    tmp = tmp_path_factory.mktemp("ev")
    scenes = scene_files(tmp) + ["procedural:not-a-seed"]
    out = tmp / "ball"
    summary = evaluate(out, EvalSettings("uniform-ball", 5, 20, 32), scenes, seeds=3, workers=2,
                       progress=False, renderer_factory=FakeRenderer)
    return tmp, out, scenes, summary


def test_evaluate_writes_runs_and_lists_failures_apart(ball_eval):
    tmp, out, scenes, summary = ball_eval
    assert summary.total == 9 and summary.ran == 6 and len(summary.failed) == 3
    assert all("procedural:not-a-seed" == o.task.scene for o in summary.failed)
    report = json.loads((out / "report.json").read_text())
    assert report["counters"]["episodes"] == 6
    assert {f["run"] for f in report["failures"]} == {f"procedural_not-a-seed/seed_{k}" for k in range(3)}
    # failures are left out of every aggregate: 2 scenes x 3 seeds x 4 targets
    assert report["object_micro"]["num_targets"] == 24
    assert set(report["scenes"]) == {f"fake-{i}/seed_{k}" for i in range(2) for k in range(3)}
    assert (out / "procedural_not-a-seed" / "seed_0.failed.json").is_file()
    assert "Failed episodes" in (out / "report.md").read_text()


def test_seed_spread_and_counters_match_run_dirs(ball_eval):
    tmp, out, scenes, summary = ball_eval
    r = summary.report
    per_seed = []
    for k in range(3):
        results = [json.loads((out / f"fake-{i}" / f"seed_{k}" / "result.json").read_text()) for i in range(2)]
        per_seed.append(sum(x["all"]["mean_iou"] * x["num_targets"] for x in results)
                        / sum(x["num_targets"] for x in results))
    assert r.seeds.seeds == [0, 1, 2]
    assert r.seeds.mean == pytest.approx(np.mean(per_seed))
    assert r.seeds.std == pytest.approx(np.std(per_seed, ddof=1))
    # uniform-ball draws differ per seed, so the predictions differ
    preds = {(out / "fake-0" / f"seed_{k}" / "predictions.json").read_text() for k in range(3)}
    assert len(preds) == 3
    assert r.counters["tool_calls"] == 6 * 3   # list_entities, submit_positions, finish_mapping
    assert r.counters["images"] == 6           # the initial image of each episode


def test_category_table_pools_targets(ball_eval):
    tmp, out, scenes, summary = ball_eval
    cats = summary.report.categories
    # small_scene: two chairs, a table, a lamp per scene; 6 episodes
    assert {c: v["num_targets"] for c, v in cats.items()} == {"Chair": 12, "Table": 6, "Lamp": 6}
    total = sum(v["mean_iou"] * v["num_targets"] for v in cats.values())
    om = summary.report.object_micro
    assert total / om["num_targets"] == pytest.approx(om["all"]["mean_iou"])


def test_rerun_skips_finished_and_retries_failures(ball_eval):
    tmp, out, scenes, _ = ball_eval
    before = (out / "fake-1" / "seed_2" / "result.json").stat().st_mtime_ns
    again = evaluate(out, EvalSettings("uniform-ball", 5, 20, 32), scenes, seeds=3, workers=1,
                     progress=False, renderer_factory=FakeRenderer)
    assert again.skipped == 6 and again.ran == 0 and len(again.failed) == 3
    assert (out / "fake-1" / "seed_2" / "result.json").stat().st_mtime_ns == before
    with pytest.raises(SettingsMismatchError, match="resolution: 32 there, 64 now"):
        evaluate(out, EvalSettings("uniform-ball", 5, 20, 64), scenes, progress=False)


def test_report_is_the_scorers_aggregate(tmp_path):
    scenes = scene_files(tmp_path)
    out = tmp_path / "origin"
    s = evaluate(out, EvalSettings("origin", 3, 10, 32), scenes, progress=False, renderer_factory=FakeRenderer)
    from spatialscout_gym.eval.pages.report import find_runs
    expected = aggregate([r.score for r in find_runs(out)])
    assert s.report.object_micro == expected["object_micro"]
    assert s.report.scene_macro == expected["scene_macro"]
    assert set(s.report.scenes) == {"fake-0", "fake-1"}
    assert s.report.scene_hashes["fake-0"] == json.loads(
        (out / "fake-0" / "seed_0" / "result.json").read_text())["scene_content_hash"]
    md = (out / "report.md").read_text()
    assert "object-micro" in md and "| Chair | 4 | 4 |" in md


def test_plan_tasks_names_and_rejects_duplicates(tmp_path):
    tasks = plan_tasks(tmp_path, ["procedural:7", "Kitchen_01"], seeds=2)
    assert [t.key for t in tasks] == ["procedural_7/seed_0", "procedural_7/seed_1",
                                      "Kitchen_01/seed_0", "Kitchen_01/seed_1"]
    with pytest.raises(ValueError, match="more than once"):
        plan_tasks(tmp_path, ["procedural:7", "procedural_7"])


def test_compare_refuses_other_catalog_versions_unless_forced(ball_eval, tmp_path, capsys):
    tmp, out, scenes, _ = ball_eval
    origin = tmp_path / "origin"
    evaluate(origin, EvalSettings("origin", 5, 20, 32), scene_files(tmp_path), progress=False,
             renderer_factory=FakeRenderer)
    text, reports = compare_reports([out, origin])
    assert "ball" in text and "origin" in text and "Chair" in text
    other = tmp_path / "other"
    shutil.copytree(origin, other)
    for p in other.glob("*/seed_*/result.json"):
        r = json.loads(p.read_text())
        r["catalog_version"] = "0.9"
        p.write_text(json.dumps(r))
    (other / "report.json").unlink()
    assert build_report(other).catalog_version == "0.9"
    with pytest.raises(CompareError, match="catalog versions differ.*--force"):
        compare_reports([origin, other])
    capsys.readouterr()
    assert main(["compare", str(origin), str(other)]) == 2
    assert "catalog versions differ" in capsys.readouterr().err
    text, _ = compare_reports([origin, other], force=True)
    assert "Forced comparison" in text


def test_compare_and_leaderboard_refuse_other_protocol_settings_naming_them(ball_eval, tmp_path, capsys):
    """Runs at another V or resolution are not paired or ranked without --force; the refusal names
    each differing setting with every run's value."""
    from spatialscout_gym.eval.pages.leaderboard import LeaderboardError, build_leaderboard
    from spatialscout_gym.eval.pages.report import protocol_settings
    _, out, _, _ = ball_eval
    other = tmp_path / "v3"
    evaluate(other, EvalSettings("origin", 3, 20, 32), scene_files(tmp_path), progress=False,
             renderer_factory=FakeRenderer)
    with pytest.raises(CompareError, match=r"V \(image budget\) differs: ball: 5, v3: 3") as caught:
        compare_reports([out, other])
    assert "resolution" not in str(caught.value) and "--force" in str(caught.value)
    capsys.readouterr()
    assert main(["compare", str(out), str(other)]) == 2
    assert "V (image budget) differs" in capsys.readouterr().err
    assert "Forced comparison" in compare_reports([out, other], force=True)[0]
    # the leaderboard checks them too (here two model rows: the model settings are compared)
    for p in other.glob("*/seed_*/result.json"):
        r = json.loads(p.read_text())
        r["model"] = model_json(prompt_style="detailed", model_call_budget=100)
        p.write_text(json.dumps(r))
    for p in out.glob("*/seed_*/result.json"):
        r = json.loads(p.read_text())
        if r.get("status") == "ok":
            r["model"] = model_json(prompt_style="paper", model_call_budget=100)
            p.write_text(json.dumps(r))
    with pytest.raises(LeaderboardError, match=r"V \(image budget\) differs: uniform-ball: 5, origin: 3; "
                                               r"prompt style differs: uniform-ball: paper, origin: detailed"):
        build_leaderboard([out, other])
    assert protocol_settings([load_run_record(p) for p in other.glob("*/seed_*/result.json")]) == {
        "V (image budget)": 3, "resolution": 32,      # a model run has no tool-call budget: B caps it
        "B (model-call budget)": 100, "B counts": "model calls", "prompt style": "detailed",
        # a model record holds every setting; these were left unset (recorded as null)
        "reasoning effort": None, "reasoning effort honoured": "none asked", "reasoning effort sent": {},
        "mode": None, "image history": None, "image max side": None}


def test_compare_refuses_changed_scene_hashes(tmp_path):
    scenes = scene_files(tmp_path)
    a, b = tmp_path / "a", tmp_path / "b"
    for d in (a, b):
        evaluate(d, EvalSettings("origin", 3, 10, 32), scenes, progress=False, renderer_factory=FakeRenderer)
    p = b / "fake-1" / "seed_0" / "result.json"
    r = json.loads(p.read_text())
    r["scene_content_hash"] = "0" * 64
    p.write_text(json.dumps(r))
    (b / "report.json").unlink()
    with pytest.raises(CompareError, match="fake-1"):
        compare_reports([a, b])


def test_html_table3_is_a_real_table_and_counters_are_not_repeated(ball_eval):
    """Table 3 and the per-scene table are HTML tables, not <pre> text; each
    counter is listed once in report.md and index.html."""
    import re

    from spatialscout_gym.eval.pages.figures import write_index_html
    from spatialscout_gym.eval.pages.report import format_report_md
    _, out, _, _ = ball_eval
    report = build_report(out)
    page = write_index_html(out, report, None, {}).read_text()
    assert "<pre>" not in page
    table3 = page[page.index("<table class='table3'>"):]
    table3 = table3[:table3.index("</table>")]
    rows = re.findall(r"<tr><td>([^<]+)</td>((?:<td>[^<]*</td>)+)</tr>", table3)
    assert [r[0] for r in rows] == ["object-micro", "scene-macro"]
    cells = re.findall(r"<td>([^<]*)</td>", rows[0][1])
    assert len(cells) == 13 and cells[0] == str(report.object_micro["num_targets"])
    assert float(cells[2]) == pytest.approx(100 * report.object_micro["all"]["mean_iou"], abs=0.006)
    counter_rows = re.findall(r"<tr><td>([a-z_]+)</td><td>[^<]*</td></tr>", page)
    assert "images_used" in counter_rows and "images" not in counter_rows and "calls" not in counter_rows
    md_rows = re.findall(r"^\| ([a-z_]+) \| [^|]+ \|$", format_report_md(report), re.M)
    assert len(md_rows) == len(set(md_rows)) and "images" not in md_rows and "calls" not in md_rows
