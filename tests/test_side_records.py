"""``harness.json`` and ``evaluate.json`` load as types, strictly: each error is one line naming the
file and the field; what the writers write reads back as its record (the fixture of an old
evaluation included); a key another version wrote into ``evaluate.json`` is kept and named, never
dropped."""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
from pathlib import Path

import pytest

from spatialscout_gym.core.eval_records import (AgentOptions, EvaluationRecord, load_evaluation, parse_evaluation)
from spatialscout_gym.core.harness_record import HarnessRecord, load_harness, parse_harness
from spatialscout_gym.core.records import RecordError
from spatialscout_gym.eval.running.tasks import EvalSettings, evaluate_keys

V1 = Path(__file__).parent / "data" / "v1_evaluation"


def test_the_old_evaluations_records_load_typed():
    for kind in ("model", "reference", "nbv"):
        rec = load_evaluation(V1 / kind)
        assert isinstance(rec, EvaluationRecord) and rec.unknown() == []
        assert rec.to_dict() == json.loads((V1 / kind / "evaluate.json").read_text())
    harness_files = sorted(V1.rglob("harness.json"))
    assert harness_files
    for f in harness_files:
        h = load_harness(f.parent)
        assert isinstance(h, HarnessRecord) and h.as_dict() == json.loads(f.read_text())
        assert h.budget("model_call_budget") == json.loads(f.read_text())["budgets"]["model_call_budget"]


def test_the_record_has_the_fields_the_writer_writes():
    assert {f.name for f in dataclasses.fields(EvaluationRecord)} - {"unknown_settings", "unknown_options"} \
        == set(evaluate_keys())
    s = EvalSettings("openai:m", 5, 7, 64, {"reasoning_effort": "high", "max_tokens": 900, "walls": True})
    rec = parse_evaluation(s.to_dict())
    assert (rec.agent, rec.image_budget, rec.tool_call_budget, rec.resolution) == ("openai:m", 5, 7, 64)
    assert rec.option("max_tokens") == 900 and rec.option("walls") is True and rec.option("mode") is None
    with pytest.raises(KeyError, match="temperature"):
        rec.option("temperature")


@pytest.mark.parametrize("edit, field", [
    (lambda d: d.update(image_budget="5"), "image_budget"),
    (lambda d: d.update(image_budget=True), "image_budget"),
    (lambda d: d.update(resolution=0), "resolution"),
    (lambda d: d.pop("agent"), "agent"),
    (lambda d: d.update(agent_options=[1]), "agent_options"),
    (lambda d: d["agent_options"].update(max_tokens="900"), "agent_options.max_tokens"),
    (lambda d: d["agent_options"].update(timeout_s="30"), "agent_options.timeout_s"),
])
def test_a_wrong_evaluate_json_is_one_line_naming_the_field(tmp_path, edit, field):
    d = EvalSettings("openai:m", 5, 7, 64, {"max_tokens": 900}).to_dict()
    edit(d)
    (tmp_path / "evaluate.json").write_text(json.dumps(d))
    with pytest.raises(RecordError) as exc:
        load_evaluation(tmp_path)
    msg = str(exc.value)
    assert "\n" not in msg and "evaluate.json: field " in msg and f"'{field}'" in msg


def test_a_key_another_version_wrote_is_kept_and_named(tmp_path):
    d = EvalSettings("openai:m", 5, 7, 64, {"max_tokens": 900}).to_dict()
    d["frame_skip"] = 2
    d["agent_options"]["temperature"] = 0.7
    (tmp_path / "evaluate.json").write_text(json.dumps(d))
    rec = load_evaluation(tmp_path)
    assert rec.unknown() == ["evaluate.json key 'frame_skip'", "evaluate.json agent option 'temperature'"]
    assert rec.to_dict() == d                      # a resume compares them; nothing is dropped


def test_evaluate_json_that_is_not_a_file_is_refused(tmp_path):
    (tmp_path / "evaluate.json").mkdir()
    with pytest.raises(RecordError, match="evaluate.json"):
        load_evaluation(tmp_path)
    assert load_evaluation(tmp_path / "nothing") is None


def _harness() -> dict:
    return json.loads(next(V1.rglob("harness.json")).read_text())


@pytest.mark.parametrize("edit, field", [
    (lambda d: d.update(temperature=0.7), "temperature"),
    (lambda d: d.update(written=["agent"]), "written"),
    (lambda d: d.update(prompt_style=3), "prompt_style"),
    (lambda d: d.update(budgets=[]), "budgets"),
    (lambda d: d.update(request_cache="yes"), "request_cache"),
    (lambda d: d.pop("agent"), "agent"),
])
def test_a_wrong_harness_json_is_one_line_naming_the_field(edit, field):
    d = _harness()
    edit(d)
    with pytest.raises(RecordError) as exc:
        parse_harness(d, "run/harness.json")
    msg = str(exc.value)
    assert "\n" not in msg and msg.startswith("run/harness.json: field ") and f"'{field}'" in msg


def test_a_harness_json_link_is_refused_and_absent_is_none(tmp_path):
    src = next(V1.rglob("harness.json"))
    run = tmp_path / "run"
    run.mkdir()
    assert load_harness(run) is None
    shutil.copy(src, tmp_path / "elsewhere.json")
    os.symlink(tmp_path / "elsewhere.json", run / "harness.json")
    with pytest.raises(RecordError, match="symbolic link"):
        load_harness(run)


def test_an_mcp_harness_with_a_sentence_for_its_first_message_loads():
    d = {**_harness(), "first_message": "the initial image comes with the first tool result",
         "harness": {"name": "mcp", "version": "0", "budget_counts": "tool calls"}}
    h = parse_harness(d)
    assert h.first_message == d["first_message"] and h.as_dict() == d


def test_agent_options_types_are_the_dataclass_fields():
    # every option type is one the strict reader can check (no bare container types)
    rec = parse_evaluation({"agent": "a", "agent_options": {f.name: None for f in dataclasses.fields(AgentOptions)}})
    assert set(rec.agent_options) == {f.name for f in dataclasses.fields(AgentOptions)}


def test_the_report_shows_the_claimed_fields_as_claimed(tmp_path):
    from fakes import FakeRenderer, small_scene
    from spatialscout_gym.core.records import claimed_values, field_kinds, load_run_record
    from spatialscout_gym.eval.pages.report import build_report, format_report_md
    from spatialscout_gym.eval.running.evaluate import evaluate
    spec = tmp_path / "scene.json"
    spec.write_text(small_scene(32, 32, scene_id="fake-claims").to_json())
    out = tmp_path / "ev"
    evaluate(out, EvalSettings("origin", 3, 8, 32), [str(spec)], seeds=1, workers=1, progress=False,
             renderer_factory=FakeRenderer, write_report=False)
    record = load_run_record(next(out.glob("*/seed_0/result.json")))
    claimed = claimed_values(record)
    assert claimed and set(claimed) <= {p for p, k in field_kinds().items() if k == "claimed"}
    assert claimed["agent"] == "origin"
    report = build_report(out)
    assert report.claimed == {p: [v] for p, v in claimed.items()}
    text = format_report_md(report)
    line = next(ln for ln in text.splitlines() if ln.startswith("Claimed by the runs"))
    assert "agent origin" in line and "derived" not in line.split(":")[1]


def test_the_written_report_reads_back_as_its_record_and_a_wrong_one_is_one_line(tmp_path):
    from fakes import FakeRenderer, small_scene
    from spatialscout_gym.core.eval_records import REPORT_SCHEMA_VERSION, ReportRecord, load_report
    from spatialscout_gym.eval.running.evaluate import evaluate
    spec = tmp_path / "scene.json"
    spec.write_text(small_scene(32, 32, scene_id="fake-report").to_json())
    out = tmp_path / "ev"
    evaluate(out, EvalSettings("origin", 3, 8, 32), [str(spec)], seeds=2, workers=1, progress=False,
             renderer_factory=FakeRenderer)
    written = json.loads((out / "report.json").read_text())
    report = load_report(out)
    assert isinstance(report, ReportRecord) and report.to_json() == written
    assert written["schema_version"] == REPORT_SCHEMA_VERSION
    assert report.episodes.completed == 2 and report.seeds.seeds == [0, 1] and report.agent == ["origin"]
    assert set(report.seeds.per_seed) == {"0", "1"}
    old = {k: v for k, v in written.items() if k != "schema_version"}       # written before the version
    (out / "report.json").write_text(json.dumps(old))
    assert load_report(out) == report
    for edit, field in [({"episodes": {**written["episodes"], "failed": "0"}}, "episodes.failed"),
                        ({"mean_iou": 0.5}, "mean_iou"), ({"lambda_m": "1.0"}, "lambda_m"),
                        ({"schema_version": 7}, "schema_version")]:
        (out / "report.json").write_text(json.dumps({**written, **edit}))
        with pytest.raises(RecordError, match=f"report.json: field '{field}'") as info:
            load_report(out)
        assert "\n" not in str(info.value)
    missing = dict(written)
    del missing["episodes"]
    (out / "report.json").write_text(json.dumps(missing))
    with pytest.raises(RecordError, match="field 'episodes' is missing"):
        load_report(out)


def test_the_report_writer_refuses_a_field_the_record_has_no_place_for(tmp_path, monkeypatch):
    """Planted: a field added to what ``report`` builds without a place in the record fails the builder,
    and nothing is written."""
    from fakes import FakeRenderer, small_scene
    import spatialscout_gym.eval.pages.report as report_page
    from spatialscout_gym.eval.running.evaluate import evaluate
    spec = tmp_path / "scene.json"
    spec.write_text(small_scene(32, 32, scene_id="fake-report").to_json())
    out = tmp_path / "ev"
    evaluate(out, EvalSettings("origin", 3, 8, 32), [str(spec)], seeds=1, workers=1, progress=False,
             renderer_factory=FakeRenderer, write_report=False)
    fields = report_page._report_fields
    monkeypatch.setattr(report_page, "_report_fields", lambda *a, **k: {**fields(*a, **k), "new_figure": 1.0})
    with pytest.raises(RecordError, match="field 'new_figure' is not a field of this record"):
        report_page.write_report(out)
    assert not (out / "report.json").exists()


@pytest.mark.parametrize("note, words", [
    ({"scene": "s", "seed": 0, "error": "WorkerCrash: died", "error_type": 3}, "field 'error_type'"),
    ({"scene": "s", "seed": -1, "error": "x"}, "seed"),
    ({"scene": "s", "error": "x"}, "field 'seed' is missing"),
    ({"scene": "s", "seed": 0, "error": "x", "extra": 1}, "field 'extra' is not a field"),
])
def test_a_wrong_failure_note_is_one_line_naming_the_field(tmp_path, note, words):
    from spatialscout_gym.core.eval_records import load_failure_note
    path = tmp_path / "seed_0.failed.json"
    path.write_text(json.dumps(note))
    with pytest.raises(RecordError, match=words):
        load_failure_note(path)


def test_a_failure_note_records_its_error_type_and_an_old_one_gets_it_from_its_error(tmp_path):
    from spatialscout_gym.core.eval_records import FailureNote, load_failure_note
    from spatialscout_gym.core.records import RayNode
    note = FailureNote("procedural:2", 1, "WorkerCrash: died", "WorkerCrash", None, RayNode("ab" * 28, "10.0.0.7"))
    path = tmp_path / "seed_1.failed.json"
    path.write_text(json.dumps(note.to_json()))
    assert load_failure_note(path) == note
    path.write_text(json.dumps({"scene": "x", "seed": 0, "error": "CostCapReached: spent", "traceback": None}))
    assert load_failure_note(path).error_type == "CostCapReached"
