"""``compare`` and ``leaderboard`` check the protocol settings of every row and every pair, read
from the run directories (never a cached ``report.json``): reference evaluations (``origin``) at
V = 100 and V = 5 are refused, before and after ``report.json`` loses its settings; a setting
recorded on one side only or an unknown ``evaluate.json`` key refuses; a model run and a reference
run at the same budgets compare without ``--force`` (the tool-call budget does not apply to a model
agent, B does not apply to a reference agent). Vulkan-free renderer, fake scenes, 32 px."""

from __future__ import annotations

import json
import re
import shutil

import pytest

from fakes import FakeRenderer, small_scene
from vlm_scripted import ScriptedServer
from spatialscout_gym.cli.main import main
from spatialscout_gym.eval.layout import EvalDirError
from spatialscout_gym.eval.running.evaluate import EvalSettings, evaluate
from spatialscout_gym.eval.pages.leaderboard import build_leaderboard
from spatialscout_gym.eval.pages.report import CompareError, compare_reports
from spatialscout_gym.eval.settings_check import SETTINGS


def _edit_results(d, change):
    for p in d.glob("*/seed_*/result.json"):
        r = json.loads(p.read_text())
        change(r)
        p.write_text(json.dumps(r))


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """``origin`` at V = 100 and V = 5, at 48 px, and a scripted model at V = 5 (B = 20) beside
    ``origin`` at V = 5 with tool-call budget 20, on two fake scenes."""
    tmp = tmp_path_factory.mktemp("settings")
    scenes = []
    for k in range(2):
        p = tmp / f"fake-{k}.json"
        p.write_text(small_scene(32, 32, yaw_deg=20.0 + 25 * k, scene_id=f"fake-{k}").to_json())
        scenes.append(str(p))
    for name, settings in {"v100": EvalSettings("origin", 100, 100, 32), "v5": EvalSettings("origin", 5, 100, 32),
                           "px48": EvalSettings("origin", 5, 100, 48),
                           "ref": EvalSettings("origin", 5, 20, 32)}.items():
        evaluate(tmp / name, settings, scenes, progress=False, renderer_factory=FakeRenderer)
    with ScriptedServer(lambda step, body, fmt: [("finish_mapping", {})]) as server:
        evaluate(tmp / "model", EvalSettings("openai:scripted", 5, 20, 32, agent_options={"model_call_budget": 20},
                                             runtime_options={"base_url": server.openai_url, "api_key": "local"}),
                 scenes, progress=False, renderer_factory=FakeRenderer)
    return tmp


def _copy(runs, name, tmp_path):
    shutil.copytree(runs / name, tmp_path / name)
    return tmp_path / name


def test_leaderboard_refuses_reference_rows_at_other_budgets(runs, tmp_path, capsys):
    site = tmp_path / "site"
    assert main(["leaderboard", str(runs / "v100"), str(runs / "v5"), "--out", str(site), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert "V (image budget) differs: origin [v100]: 100, origin [v5]: 5" in err and "--force" in err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert main(["leaderboard", str(runs / "v100"), str(runs / "v5"), "--out", str(site), "--no-progress",
                 "--force"]) == 0
    board = json.loads((site / "leaderboard.json").read_text())
    assert board["problems"] == ["V (image budget) differs: origin [v100]: 100, origin [v5]: 5"]
    assert "V (image budget) differs" in (site / "leaderboard.md").read_text()
    assert "Forced comparison" in (site / "index.html").read_text()


def test_compare_refuses_the_same_pair_whatever_report_json_says(runs, tmp_path, capsys):
    a, b = _copy(runs, "v100", tmp_path), _copy(runs, "v5", tmp_path)
    for d in (a, b):   # an older or edited report: no settings, or settings that agree
        report = json.loads((d / "report.json").read_text())
        report.pop("protocol_settings")
        (d / "report.json").write_text(json.dumps(report))
    with pytest.raises(CompareError, match=r"V \(image budget\) differs: v100: 100, v5: 5"):
        compare_reports([a, b])
    report = json.loads((a / "report.json").read_text())
    report["protocol_settings"] = {"V (image budget)": 5, "tool-call budget": 100, "resolution": 32}
    (a / "report.json").write_text(json.dumps(report))
    assert main(["compare", str(a), str(b)]) == 2
    assert "V (image budget) differs: v100: 100, v5: 5" in capsys.readouterr().err
    text, _ = compare_reports([a, b], force=True)
    assert "**Forced comparison (--force):** V (image budget) differs: v100: 100, v5: 5" in text


def test_compare_refuses_another_resolution(runs):
    with pytest.raises(CompareError, match=r"resolution differs: v5: 32, px48: 48") as caught:
        compare_reports([runs / "v5", runs / "px48"])
    assert "V (image budget)" not in str(caught.value)


def test_a_record_without_a_setting_is_refused_as_it_is_read(runs, tmp_path):
    a, b = _copy(runs, "v5", tmp_path), _copy(runs, "ref", tmp_path)
    _edit_results(b, lambda r: r.update(tool_call_budget=100))      # now alike: they compare
    compare_reports([a, b])
    _edit_results(b, lambda r: r.pop("resolution"))                  # no run record: refused as read
    with pytest.raises(EvalDirError, match=r"result.json: field 'resolution' is missing"):
        compare_reports([a, b])
    with pytest.raises(EvalDirError, match=r"result.json: field 'resolution' is missing"):
        build_leaderboard([a, b])


def test_an_unknown_evaluate_json_key_refuses(runs, tmp_path):
    a, b = _copy(runs, "v5", tmp_path), _copy(runs, "v100", tmp_path)
    _edit_results(b, lambda r: r.update(image_budget=5))
    settings = json.loads((b / "evaluate.json").read_text())
    settings["image_budget"] = 5
    (b / "evaluate.json").write_text(json.dumps(settings))
    compare_reports([a, b])                                           # alike
    settings["agent_options"] = {"temperature": 0.7}
    (b / "evaluate.json").write_text(json.dumps(settings))
    with pytest.raises(CompareError, match=r"v100: unknown setting \(evaluate.json agent option 'temperature'\)"):
        compare_reports([a, b])
    settings = {k: v for k, v in settings.items() if k != "agent_options"}
    settings["frame_skip"] = 2
    (b / "evaluate.json").write_text(json.dumps(settings))
    with pytest.raises(CompareError, match=r"unknown setting \(evaluate.json key 'frame_skip'\)"):
        compare_reports([a, b])


def test_a_model_run_and_a_reference_run_at_the_same_budgets_compare(runs, tmp_path):
    model, ref = runs / "model", runs / "ref"
    results = [json.loads(p.read_text()) for p in model.glob("*/seed_*/result.json")]
    assert {r["tool_call_budget"] for r in results} == {None}       # B caps a model run, not a tool-call budget
    text, reports = compare_reports([model, ref])
    assert "Forced" not in text and set(reports["ref"]["pairs"]) == {"model"}
    board = build_leaderboard([model, ref])
    assert board["problems"] == [] and len(board["rows"]) == 2
    # a model setting differs between two model runs: refused, both values named
    other = tmp_path / "model40"
    shutil.copytree(model, other)
    _edit_results(other, lambda r: r["model"].update(model_call_budget=40))
    with pytest.raises(CompareError, match=r"B \(model-call budget\) differs: model: 20, model40: 40"):
        compare_reports([model, other])
    # ... and V still applies across kinds
    with pytest.raises(CompareError, match=r"V \(image budget\) differs: model: 5, v100: 100"):
        compare_reports([model, runs / "v100"])


def test_help_lists_every_setting_checked(capsys):
    for command in ("compare", "leaderboard"):
        with pytest.raises(SystemExit):
            main([command, "--help"])
        # argparse wraps lines, also after a hyphen inside a word ("model-" / "call")
        text = re.sub(r"(?<=\w)- ", "-", " ".join(capsys.readouterr().out.split()))
        assert "95%%" not in text
        for s in SETTINGS:
            assert s.name in text, (command, s.name)
        assert "catalog version" in text and "content hash" in text and "never a cached report.json" in text
    from spatialscout_gym.eval.pages import leaderboard
    assert all(s.name.split(" (")[0] in " ".join(leaderboard.__doc__.split()) for s in SETTINGS)
