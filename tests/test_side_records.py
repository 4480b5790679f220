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
    assert report["claimed"] == {p: [v] for p, v in claimed.items()}
    text = format_report_md(report)
    line = next(ln for ln in text.splitlines() if ln.startswith("Claimed by the runs"))
    assert "agent origin" in line and "derived" not in line.split(":")[1]
