"""``report``, ``compare`` and ``leaderboard`` on real evaluations (Vulkan-free renderer): 95%
intervals, the paired comparison and its cells, rank intervals, settings shown not summed, unknown
cost, escaped names, file modes, and one-line errors for corrupted files and bad ``--out``."""

from __future__ import annotations

import json
import shutil
import stat

import pytest

from fakes import FakeRenderer, small_scene
from record_fixtures import model_json
from spatialscout_gym.cli.main import main
from spatialscout_gym.eval.running.evaluate import EvalSettings, evaluate
from spatialscout_gym.eval.layout import EvalDir


@pytest.fixture(scope="module")
def evals(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("checks")
    scenes = []
    for k in range(3):
        p = tmp / f"fake-{k}.json"
        p.write_text(small_scene(32, 32, yaw_deg=20.0 + 25 * k, scene_id=f"fake-{k}").to_json())
        scenes.append(str(p))
    for agent in ("oracle-explorer", "origin"):
        evaluate(tmp / agent, EvalSettings(agent, 5, 20, 32), scenes, seeds=2, workers=1, progress=False,
                 renderer_factory=FakeRenderer)
    return tmp


def _copy(evals, name, tmp_path):
    dst = tmp_path / name
    shutil.copytree(evals / name, dst)
    return dst


def _mode(path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def _one_line_error(capsys, argv) -> str:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    return err


def test_compare_pairs_the_shared_cells_and_names_them(evals, tmp_path, capsys):
    b = _copy(evals, "origin", tmp_path)
    shutil.rmtree(b / "fake-2" / "seed_1")               # one cell fewer in B
    out = tmp_path / "cmp.md"
    assert main(["compare", str(evals / "oracle-explorer"), str(b), "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "oracle-explorer: 3 scenes, 6 cells" in text and "origin: 3 scenes, 5 cells" in text
    assert "## Paired: origin - oracle-explorer on 5 shared (scene, seed) cells, 3 scenes" in text
    cells = next(line for line in text.splitlines() if line.startswith("Cells used: "))
    assert "fake-2/seed_0" in cells and "fake-2/seed_1" not in cells and cells.count("/seed_") == 5
    assert "percentile bootstrap over scenes (scipy.stats.bootstrap), 9999 resamples" in text
    row = next(line for line in text.splitlines() if line.startswith("| object-micro all-target mean IoU |"))
    assert row.split(" | ")[-2] == "0.25"                 # 3 scenes: exact test, 2 of 2**3 patterns
    assert out.read_text().strip() == text.strip()
    assert _mode(out) == 0o644
    err = _one_line_error(capsys, ["compare", str(evals / "oracle-explorer"), str(b), "--out", str(out)])
    assert "already exists; pass --overwrite" in err
    assert main(["compare", str(evals / "oracle-explorer"), str(b), "--out", str(out), "--overwrite"]) == 0


def test_report_shows_intervals_and_is_world_readable(evals, tmp_path, capsys):
    d = _copy(evals, "oracle-explorer", tmp_path)
    assert main(["report", str(d), "--no-figures"]) == 0
    rep = json.loads((d / "report.json").read_text())
    f = rep["intervals"]["figures"]["object_micro.all.mean_iou"]
    assert f["estimate"] == rep["object_micro"]["all"]["mean_iou"] and f["low"] <= f["estimate"] <= f["high"]
    assert rep["intervals"]["scenes"] == 3
    assert "## Table 3 with 95% intervals over 3 scenes (%)" in (d / "report.md").read_text()
    assert _mode(d / "report.json") == 0o644 and _mode(d / "report.md") == 0o644


def test_leaderboard_rank_intervals_and_modes(evals, tmp_path, capsys):
    site = tmp_path / "site"
    assert main(["leaderboard", str(evals / "oracle-explorer"), str(evals / "origin"), "--out", str(site),
                 "--no-progress"]) == 0
    board = json.loads((site / "leaderboard.json").read_text())
    top, low = board["order"]
    assert board["rows"][top]["rank"]["rank"] == 1 and board["rows"][low]["rank"]["rank"] == 2
    sep = board["rows"][top]["separated_from_next"]
    assert sep["next"] == low and sep["cells"] == 6 and sep["p_value"] == pytest.approx(0.25)
    assert sep["separated"] is False                      # 3 scenes cannot separate at 95%
    # so neither row's rank interval is one rank (a bootstrap of ranks once printed [1, 1] here)
    assert board["rows"][top]["rank"]["high"] == 2 and board["rows"][low]["rank"]["low"] == 1
    md = (site / "leaderboard.md").read_text()
    assert "| rank [95%] | separated from next |" in md and "9999 resamples" in md
    for name in ("leaderboard.json", "leaderboard.md", "index.html"):
        assert _mode(site / name) == 0o644, name
    afile = tmp_path / "afile"
    afile.write_text("x")
    _one_line_error(capsys, ["leaderboard", str(evals / "origin"), "--out", str(afile), "--no-progress"])
    _one_line_error(capsys, ["evaluate", "--agent", "origin", "--scenes", "procedural:1", "--out", str(afile)])


def test_settings_are_shown_not_summed_and_unknown_cost_is_unknown(evals, tmp_path, capsys):
    d = _copy(evals, "origin", tmp_path)
    for i, p in enumerate(sorted(d.glob("*/seed_*/result.json"))):
        r = json.loads(p.read_text())
        r["model"] = model_json(name="m", image_max_side_px=384, image_history=512 if i == 0 else 2,
                                model_calls=3, cost_usd=None, usage={"input_tokens": 10, "output_tokens": 1})
        p.write_text(json.dumps(r))
    assert main(["report", str(d), "--no-figures"]) == 0
    c = json.loads((d / "report.json").read_text())["counters"]
    assert c["image_max_side_px"] == 384 and c["image_history"] == "mixed"
    assert c["model_calls"] == 18 and c["cost_usd"] is None
    md = (d / "report.md").read_text()
    assert "| image_max_side_px | 384 |" in md and "| cost_usd | unknown |" in md


def test_markup_in_names_is_escaped(evals, tmp_path, capsys):
    d = _copy(evals, "origin", tmp_path)
    payload = "<script>alert(1)</script><img src=x onerror=alert(2)>"
    for p in d.glob("*/seed_*/result.json"):
        r = json.loads(p.read_text())
        r["agent"] = payload
        p.write_text(json.dumps(r))
    assert main(["report", str(d), "--no-figures"]) == 0
    site = tmp_path / "site"
    assert main(["leaderboard", str(d), str(evals / "oracle-explorer"), "--out", str(site), "--no-progress"]) == 0
    capsys.readouterr()
    assert main(["compare", str(d), str(evals / "oracle-explorer")]) == 0
    outputs = {"report.md": (d / "report.md").read_text(), "leaderboard.md": (site / "leaderboard.md").read_text(),
               "index.html": (site / "index.html").read_text(), "compare": capsys.readouterr().out}
    for name, text in outputs.items():
        assert "<script>alert" not in text and "<img src=x" not in text, name
        assert "&lt;script&gt;alert(1)" in text, name


@pytest.mark.parametrize("target", ["result", "trace", "settings"])
def test_corrupted_files_give_one_line_errors(evals, tmp_path, capsys, target):
    d = _copy(evals, "origin", tmp_path)
    run = d / "fake-1" / "seed_0"
    path = {"result": run / "result.json", "trace": run / "trace.jsonl", "settings": d / "evaluate.json"}[target]
    path.write_text(path.read_text()[:-40] + "\n{not json")
    commands = {"result": ["report", "leaderboard", "replay"], "trace": ["replay"], "settings": ["report"]}[target]
    for cmd in commands:
        argv = {"report": ["report", str(d), "--no-figures"], "replay": ["replay", str(d), "--no-plots"],
                "leaderboard": ["leaderboard", str(d), "--out", str(tmp_path / "site"), "--no-progress"]}[cmd]
        err = _one_line_error(capsys, argv)
        assert path.name in err and "valid" in err and "corrupted" in err, (cmd, err)


def test_evaldir_reads_attempts_completion_and_failures(evals, tmp_path):
    d = _copy(evals, "origin", tmp_path)
    ep = d / "fake-0" / "seed_1"
    r = json.loads((ep / "result.json").read_text())
    (ep / "result.json").write_text(json.dumps({**r, "status": "failed", "error": "boom"}))
    (d / "fake-9").mkdir()
    (d / "fake-9" / "seed_0.failed.json").write_text(json.dumps({"scene": "fake-9", "seed": 0, "error": "no scene"}))
    ev = EvalDir(d)
    assert [k for k, _ in ev.completed()] == ["fake-0/seed_0", "fake-1/seed_0", "fake-1/seed_1",
                                              "fake-2/seed_0", "fake-2/seed_1"]
    assert [e.failure for e in ev.failed()] == [
        {"run": "fake-0/seed_1", "scene": r["scene_id"], "seed": r["seed"], "error": "boom", "error_type": None},
        {"run": "fake-9/seed_0", "scene": "fake-9", "seed": 0, "error": "no scene", "error_type": "unknown"}]
    assert len(ev.failed_results()) == 2
    assert ev.settings().agent == "origin"


def test_run_directories_are_found_at_any_depth_without_earlier_attempts(evals, tmp_path):
    """One walk finds the runs of an evaluation, of a folder of folders (as ``play`` or Inspect
    leave them) and a run directory itself; an earlier attempt is not a run of its own."""
    from spatialscout_gym.eval.layout import find_run_dirs
    d = tmp_path / "mine"
    shutil.copytree(evals / "origin", d / "evaluations" / "origin")
    ep = d / "evaluations" / "origin" / "fake-0" / "seed_0"
    shutil.copytree(ep, ep / "attempts" / "01", ignore=shutil.ignore_patterns("attempts"))
    shutil.copytree(ep, d / "played" / "me" / "run_1", ignore=shutil.ignore_patterns("attempts"))
    (d / "played" / "half").mkdir()
    (d / "played" / "half" / "result.json").write_text("{}")       # no trace: not a run directory
    found = [p.relative_to(d).as_posix() for p in find_run_dirs(d)]
    assert found == sorted([f"evaluations/origin/fake-{k}/seed_{s}" for k in range(3) for s in range(2)]
                           + ["played/me/run_1"])
    assert find_run_dirs(ep) == [ep]
    assert sorted(find_run_dirs(d / "evaluations" / "origin")) == sorted(EvalDir(d / "evaluations" / "origin").run_dirs())


def test_plan_prints_scenes_per_seed_count_and_its_assumption(evals, capsys):
    assert main(["plan", str(evals / "oracle-explorer"), "--detect", "5"]) == 0
    out = capsys.readouterr().out
    assert "3 scenes" in out and "assumption:" in out and "80% power" in out
    assert sum(line.strip().startswith(f"{k} seed(s) per scene: ") for line in out.splitlines() for k in (1, 2, 3, 5)) == 4
    _one_line_error(capsys, ["plan", str(evals / "oracle-explorer"), "--detect", "-1"])
