"""The trace's events as types: what a real model run writes reads back whole, and a trace that
is not of this package's form is refused in one line naming the event and the field, by the
derivation, by ``verify`` and by the pages that read traces."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from fakes import FakeRenderer, small_scene
from spatialscout_gym.core.record_build import RecordError
from spatialscout_gym.core.records import RecordInputs, derive_run_record
from spatialscout_gym.core.scoring import GroundTruth
from spatialscout_gym.core.trace_events import EVENT_TYPES, parse_event, parse_trace


@pytest.fixture(scope="module")
def model_run(tmp_path_factory) -> tuple[Path, object]:
    """A model agent behind the real ``openai`` client on 127.0.0.1: one malformed call the wrapper
    refuses, a capture, a triangulation, a submission and the end."""
    from vlm_scripted import ScriptedServer
    from spatialscout_gym.baselines.registry import make_agent
    from spatialscout_gym.eval.running.runner import run_episode
    spec = small_scene(32, 32, scene_id="fake-room")
    out = tmp_path_factory.mktemp("trace") / "run"
    K = spec.public.intrinsics.scaled(32, 32)
    steps = [[("no_such_tool", {}), ("move_camera", {"right": 0.5}), ("capture_image", {})],
             [("triangulate_observations", {"observations": [{"frame_id": 0, "u": K.cx, "v": K.cy},
                                                             {"frame_id": 1, "u": K.cx - K.fx * 0.25, "v": K.cy}]})],
             [("submit_positions", {"positions": {"chair_1": [2.0, 0.0, 0.0]}})],
             [("finish_mapping", {})]]
    with ScriptedServer(lambda step, body, fmt: steps[step] if step < len(steps) else []) as server:
        agent = make_agent("openai:scripted", base_url=server.openai_url, api_key="local", model_call_budget=10)
        run_episode(agent, spec, out, image_budget=3, resolution=32, renderer=FakeRenderer(spec))
    return out, spec


def _events(run: Path) -> list[dict]:
    return [json.loads(line) for line in (run / "trace.jsonl").read_text().splitlines() if line.strip()]


def _fields(event: object) -> dict:
    return {f.name: getattr(event, f.name) for f in dataclasses.fields(event)}  # type: ignore[arg-type]


def test_every_event_a_model_run_writes_reads_back_whole(model_run):
    run, _ = model_run
    events = _events(run)
    trace = parse_trace(events)
    kinds = {e["event"] for e in events}
    assert {"start", "tool_call", "capture", "map", "end", "model_request", "model_response",
            "tool_call_refused"} <= kinds <= set(EVENT_TYPES)
    for written, typed in zip(events, trace.events):
        assert isinstance(typed, EVENT_TYPES[written["event"]])
        # nothing written is dropped or changed on the way in, and nothing is made up
        fields = _fields(typed)
        assert set(written) - {"event"} <= set(fields)
        assert fields == {name: written.get(name) for name in fields}   # an optional field left out reads None
    assert trace.is_model_run and trace.start is not None and trace.start.seed == 0
    assert trace.accepted_map() == {"chair_1": [2.0, 0.0, 0.0]}
    assert [c.tool for c in trace.tool_calls] == ["move_camera", "capture_image", "triangulate_observations",
                                                  "submit_positions", "finish_mapping"]


@pytest.mark.parametrize("edit, field", [
    (lambda e: e.update(event="hint"), "'event' is 'hint', not an event kind"),
    (lambda e: e.update(note="fine"), "field 'note' is not a field of this record"),
    (lambda e: e.pop("tool"), "field 'tool' is missing"),
    (lambda e: e.update(index="3"), "field 'index' must be an integer, got '3'"),
    (lambda e: e.update(index=True), "field 'index' must be an integer, got True"),
    (lambda e: e.update(result=[1]), "field 'result' must be an object"),
    (lambda e: e.update(execution_s=float("nan")), "field 'execution_s' must be a number, got nan"),
])
def test_a_tool_call_event_not_of_this_form_is_one_line_naming_it(model_run, edit, field):
    run, _ = model_run
    events = _events(run)
    at = next(i for i, e in enumerate(events) if e["event"] == "tool_call")
    edit(events[at])
    with pytest.raises(RecordError) as caught:
        parse_trace(events)
    msg = str(caught.value)
    assert msg.startswith(f"trace.jsonl, event {at}") and field in msg and "\n" not in msg, msg


def test_the_derivation_refuses_a_trace_the_types_refuse(model_run):
    """The record is derived from the typed trace: a reply whose usage is not an object fails the
    derivation itself (the live run's and verify's), never a later page."""
    run, spec = model_run
    events = _events(run)
    reply = next(e for e in events if e["event"] == "model_response")
    reply["usage"] = "lots"
    with pytest.raises(RecordError, match=r"event \d+ \(model_response\): field 'usage' must be an object"):
        derive_run_record(events, RecordInputs(ground_truth=GroundTruth.from_spec(spec), catalog_version="x",
                                               scene_content_hash="y"))


def test_verify_and_the_trajectory_page_name_the_event_and_field(model_run, tmp_path, capsys):
    import shutil

    from spatialscout_gym.cli.main import main
    from spatialscout_gym.eval.analysis.trajectory import load_trajectory
    from spatialscout_gym.eval.layout import EvalDirError
    run, _ = model_run
    copy = tmp_path / "run"
    shutil.copytree(run, copy)
    events = _events(copy)
    at = next(i for i, e in enumerate(events) if e["event"] == "capture")
    events[at]["frame_id"] = "1"
    (copy / "trace.jsonl").write_text("".join(json.dumps(e) + "\n" for e in events))
    assert main(["verify", str(copy), "--no-progress"]) == 1
    out = capsys.readouterr().out
    assert f"event {at} (capture): field 'frame_id' must be an integer" in out
    with pytest.raises(EvalDirError, match=rf"trace.jsonl: event {at} \(capture\): field 'frame_id'"):
        load_trajectory(copy)


def test_parse_event_refuses_what_is_not_an_object():
    with pytest.raises(RecordError, match="trace.jsonl, event 4: expected a JSON object, got list"):
        parse_event([], 4)
