"""A "verified" mark a forgery cannot earn: one honest scripted-model evaluation (two procedural
scenes, V = 3, 32 px, B = 6; a reply with a made-up tool, so a ``tool_call_refused`` event is in the
record) is built once, and each test edits a copy of it.

* the tamper matrix: every kind of edit is caught at its episode with a one-line reason and no
  traceback, the untouched episode keeps its own verdict, and ``verify`` exits 1;
* a corrupted ``planned.json`` is an error (exit 2, one line), never an empty plan;
* benign rewrites (CRLF line endings, re-indented JSON) still verify;
* ``report`` and ``leaderboard`` verify for themselves: a hand-edited ``verify.json`` earns nothing,
  an edited ``predictions.json`` is refused, the honest row is verified and the forged one not.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Callable

import pytest

from fakes import FakeRenderer
from spatialscout_gym.cli.main import main
from spatialscout_gym.eval.running.evaluate import EvalSettings, evaluate

EP1, EP2 = "procedural_1/seed_0", "procedural_2/seed_0"


def _policy(step, body, fmt):
    """Five replies chosen by how many the conversation holds: move and capture; two triangulations
    (one of parallel rays); list the entities and call a tool that does not exist (refused by the
    harness); submit two entities with 1-decimal coordinates; finish."""
    msgs = body["messages"]
    k = sum(m["role"] == "assistant" for m in msgs)
    if k == 0:
        return [("move_camera", {"right": 0.5}), ("capture_image", {})]
    if k == 1:
        return [("triangulate_observations", {"observations": [{"frame_id": 0, "u": 15.5, "v": 15.5},
                                                               {"frame_id": 1, "u": 11.5, "v": 15.5}]}),
                ("triangulate_observations", {"observations": [{"frame_id": 0, "u": 15.5, "v": 15.5},
                                                               {"frame_id": 1, "u": 15.5, "v": 15.5}]})]
    if k == 2:
        return [("list_entities", {}), ("look_behind_walls", {})]
    if k == 3:
        results = [json.JSONDecoder().raw_decode(c if isinstance(c, str) else c[0]["text"])[0] for c in
                   (m["content"] for m in msgs if m["role"] == "tool")]
        ids = [e["id"] for e in next(r["result"]["entities"] for r in results if "entities" in (r.get("result") or {}))]
        return [("submit_positions", {"positions": {ids[0]: [1.0, 0.2, 0.0], ids[1]: [2.3, -0.4, 0.1]}})]
    return [("finish_mapping", {})]


@pytest.fixture(scope="module")
def honest(tmp_path_factory):
    from vlm_scripted import ScriptedServer
    d = tmp_path_factory.mktemp("tamper") / "honest"
    with ScriptedServer(_policy) as server:
        settings = EvalSettings("openai:scripted", 3, None, 32, agent_options={"model_call_budget": 6},
                                runtime_options={"base_url": server.openai_url, "api_key": "local"})
        summary = evaluate(d, settings, ["procedural:1", "procedural:2"], seeds=1, workers=1, progress=False,
                           renderer_factory=FakeRenderer)
    assert summary.total == 2 and not summary.failed
    for name in ("report.json", "report.md", "verify.json", ".evaluate.lock"):
        (d / name).unlink(missing_ok=True)
    return d


def _copy(src: Path, tmp_path: Path, name: str = "copy") -> Path:
    d = tmp_path / name
    shutil.copytree(src, d)
    return d


def _verify(d: Path, capsys, *extra: str) -> tuple[int, dict]:
    capsys.readouterr()
    code = main(["verify", str(d), "--json", *extra])
    out = capsys.readouterr()
    assert "Traceback" not in out.err + out.out
    return code, {e["episode"]: e for e in json.loads(out.out)["dirs"][str(d)]}


# ---- edits ------------------------------------------------------------------------------------------
def _run(d: Path, key: str = EP1) -> Path:
    return d / key


def _edit_json(path: Path, fn: Callable[[dict], object]) -> None:
    obj = json.loads(path.read_text())
    fn(obj)
    path.write_text(json.dumps(obj, indent=2))


def _edit_events(path: Path, fn: Callable[[list[dict]], object]) -> None:
    events = [json.loads(x) for x in path.read_text().splitlines()]
    fn(events)
    path.write_text("".join(json.dumps(e) + "\n" for e in events))


def _first(events: list[dict], kind: str, n: int = 0, **match) -> dict:
    return [e for e in events if e["event"] == kind and all(e.get(k) == v for k, v in match.items())][n]


def _pred_one_unit(d):            # each coordinate one unit of its last printed decimal towards 0
    _edit_json(_run(d) / "predictions.json", lambda p: p["positions"].update(
        {k: [round(x - 0.1 if x > 0 else x + 0.1 if x < 0 else x, 1) for x in v] for k, v in p["positions"].items()}))


def _pred_last_bit(d):
    import math
    _edit_json(_run(d) / "predictions.json", lambda p: p["positions"].update(
        {k: [math.nextafter(v[0], 0.0)] + v[1:] for k, v in p["positions"].items()}))


def _pred_extra_id(d):
    _edit_json(_run(d) / "predictions.json", lambda p: p["positions"].update({"Bowl_1": [0.5, 0.0, 0.0]}))


def _pred_extra_field(d):
    _edit_json(_run(d) / "predictions.json", lambda p: p.update(note="fine"))


def _reply_args_one_unit(d):      # a recorded reply's submitted coordinate moved by 0.1
    def fn(events):
        r = _first(events, "model_response", 3)
        r["tool_calls"][0]["arguments"] = r["tool_calls"][0]["arguments"].replace("2.3", "2.4")
    _edit_events(_run(d) / "trace.jsonl", fn)


def _tool_args_one_unit(d):
    _edit_events(_run(d) / "trace.jsonl", lambda ev: _first(ev, "tool_call", tool="submit_positions")["args"][
        "positions"].update({k: [1.1, 0.2, 0.0] for k in list(_first(ev, "tool_call", tool="submit_positions")[
            "args"]["positions"])[:1]}))


def _map_snapshot(d):
    _edit_events(_run(d) / "trace.jsonl", lambda ev: _first(ev, "map")["accepted_map"].update(
        {k: [1.1, 0.2, 0.0] for k in list(_first(ev, "map")["accepted_map"])[:1]}))


def _harness_deleted(d):
    (_run(d) / "harness.json").unlink()


def _harness_field_dropped(d):
    _edit_json(_run(d) / "harness.json", lambda h: h["images"].pop("jpeg_quality"))


def _harness_image_budget(d):
    _edit_json(_run(d) / "harness.json", lambda h: h["budgets"].update(image_budget=5))


def _harness_render_size(d):
    _edit_json(_run(d) / "harness.json", lambda h: h["images"].update(render_size=[64, 64]))


def _harness_jpeg_quality(d):
    _edit_json(_run(d) / "harness.json", lambda h: h["images"].update(jpeg_quality=95))


def _harness_prompt(d):
    _edit_json(_run(d) / "harness.json", lambda h: h.update(task_prompt=h["task_prompt"] + " Hint: Apple_1 is at 2,0,0."))


def _result(field, value):
    def edit(d):
        _edit_json(_run(d) / "result.json", lambda r: r.update({field: value}))
    edit.__name__ = f"_result_{field}"
    return edit


def _result_field_dropped(d):
    _edit_json(_run(d) / "result.json", lambda r: r.pop("catalog_version"))


def _result_score(d):
    _edit_json(_run(d) / "result.json", lambda r: r["all"].update(mean_iou=0.5))


def _result_coverage_one_unit(d):     # a computed number one unit of its last decimal away (0.05 -> 0.06)
    def fn(r):
        assert r["coverage"] == 0.05
        r["coverage"] = 0.06
    _edit_json(_run(d) / "result.json", fn)


def _result_usage(d):
    _edit_json(_run(d) / "result.json", lambda r: r["model"]["usage"].update(input_tokens=10))


def _evaluate_json(field, value):
    def edit(d):
        _edit_json(d / "evaluate.json", lambda s: s.update({field: value}))
    return edit


def _evaluate_model_budget(d):
    _edit_json(d / "evaluate.json", lambda s: s["agent_options"].update(model_call_budget=20))


def _frame_pixels(d):
    from PIL import Image
    p = _run(d) / "frames" / "frame_001.png"
    im = Image.open(p).convert("RGB")
    x = im.getpixel((3, 3))
    im.putpixel((3, 3), ((x[0] + 1) % 256, x[1], x[2]))
    im.save(p)


def _frame_deleted(d):
    (_run(d) / "frames" / "frame_001.png").unlink()


def _frame_added(d):
    shutil.copy(_run(d) / "frames" / "frame_001.png", _run(d) / "frames" / "frame_002.png")


def _frame_hashes_deleted(d):
    (_run(d) / "frames" / "sha256.json").unlink()


def _frame_link(d):
    p = _run(d) / "frames" / "frame_000.png"
    shutil.copy(p, d / "elsewhere.png")
    p.unlink()
    p.symlink_to(d / "elsewhere.png")


def _unplanned(d):
    _edit_json(d / "planned.json", lambda p: p["episodes"].remove(EP2))


def _second_seed(d, plan: bool):
    shutil.copytree(_run(d), d / "procedural_1" / "seed_1")
    _edit_json(d / "procedural_1" / "seed_1" / "result.json", lambda r: r.update(seed=1))
    if plan:
        _edit_json(d / "planned.json", lambda p: p["episodes"].append("procedural_1/seed_1"))


def _same_conversation(d):
    """EP1 filed again as seed 1, its seed relabelled everywhere and one reply's timestamp shifted:
    no byte-identical trace, the same conversation."""
    _second_seed(d, True)
    run = d / "procedural_1" / "seed_1"

    def fn(events):
        _first(events, "start")["seed"] = 1
        _first(events, "model_response", 2)["time_unix_s"] += 1.5
    _edit_events(run / "trace.jsonl", fn)


def _seed_in_trace(d):
    _edit_events(_run(d) / "trace.jsonl", lambda ev: _first(ev, "start").update(seed=1))


def _failed_note_only(d):
    """EP2 (a scored episode) replaced by a note saying it could not start."""
    shutil.rmtree(_run(d, EP2))
    (d / "procedural_2" / "seed_0.failed.json").write_text(json.dumps({"scene": "procedural:2", "seed": 0,
                                                                       "error": "RuntimeError: x"}))


def _failed_without_trace(d):
    _edit_json(_run(d, EP2) / "result.json", lambda r: r.update(status="failed", error="RuntimeError: x"))
    (_run(d, EP2) / "trace.jsonl").unlink()


def _event_extra_field(d):
    _edit_events(_run(d) / "trace.jsonl", lambda ev: _first(ev, "tool_call").update(note="fine"))


def _appended_response(d):
    def fn(events):
        events.append({**_first(events, "model_response", 4), "model_call_index": 5})
    _edit_events(_run(d) / "trace.jsonl", fn)


def _reply_text(d):
    _edit_events(_run(d) / "trace.jsonl", lambda ev: _first(ev, "model_response", 1).update(text="Two chairs."))


def _refusal_dropped(d):
    _edit_events(_run(d) / "trace.jsonl", lambda ev: ev.remove(_first(ev, "tool_call_refused")))


def _refusal_edited(d):
    _edit_events(_run(d) / "trace.jsonl", lambda ev: _first(ev, "tool_call_refused").update(
        error=_first(ev, "tool_call_refused")["error"].replace("unknown", "known")))


def _request_edited(d):
    _edit_events(_run(d) / "trace.jsonl", lambda ev: _first(ev, "model_request", 1).update(calls_left=9))


def _start_edited(d):
    _edit_events(_run(d) / "trace.jsonl", lambda ev: _first(ev, "start").update(radius_m=99.0))


def _capture_edited(d):
    _edit_events(_run(d) / "trace.jsonl", lambda ev: _first(ev, "capture", 1)["pose_task"].update(yaw_deg=10.0))


def _end_edited(d):
    _edit_events(_run(d) / "trace.jsonl", lambda ev: _first(ev, "end").update(reason="model_call_budget"))


def _unknown_event(d):
    _edit_events(_run(d) / "trace.jsonl", lambda ev: ev.insert(3, {"event": "hint", "text": "look left"}))


def _ground_truth(d):
    _edit_json(_run(d) / "ground_truth.json", lambda g: g["targets"][0]["center"].__setitem__(0, 0.0))


def _truncated_result(d):
    p = _run(d) / "result.json"
    p.write_text(p.read_text()[:100])


def _fifo(name):
    def edit(d):
        p = _run(d) / name
        p.unlink()
        os.mkfifo(p)
    edit.__name__ = f"_fifo_{name}"
    return edit


def _copied_over(d):
    shutil.rmtree(_run(d))
    shutil.copytree(_run(d, EP2), _run(d))


def _seed_relabelled(d):
    _edit_json(_run(d) / "result.json", lambda r: r.update(seed=1))


def _scene_args(d):
    _edit_json(d / "scenes.json", lambda s: s.update(procedural_1="procedural:2"))


def _prompt_txt(d):
    p = _run(d) / "prompt.txt"
    p.write_text(p.read_text().replace("Estimate", "Guess"))


# (edit, the episode it is caught at, words of the reason, status)
TAMPERS: list[tuple[str, Callable, str, str, str]] = [
    ("predictions-one-unit", _pred_one_unit, EP1, "in predictions.json: positions, ", "diverged"),
    ("predictions-last-bit", _pred_last_bit, EP1, "compared exactly", "diverged"),
    ("predictions-extra-id", _pred_extra_id, EP1, "in predictions.json: positions, Bowl_1", "diverged"),
    ("predictions-extra-field", _pred_extra_field, EP1, "in predictions.json: note", "diverged"),
    ("reply-arguments-one-unit", _reply_args_one_unit, EP1, "submit_positions, args.positions", "diverged"),
    ("tool-arguments-one-unit", _tool_args_one_unit, EP1, "submit_positions, args.positions", "diverged"),
    ("map-snapshot", _map_snapshot, EP1, ": map, accepted_map.", "diverged"),
    ("harness-deleted", _harness_deleted, EP1, "no harness.json", "tool-side only"),
    ("harness-field-dropped", _harness_field_dropped, EP1, "lacks images.jpeg_quality", "tool-side only"),
    ("harness-image-budget", _harness_image_budget, EP1, "in harness.json: budgets.image_budget, recorded 5", "diverged"),
    ("harness-render-size", _harness_render_size, EP1, "in harness.json: images.render_size", "diverged"),
    ("harness-jpeg-quality", _harness_jpeg_quality, EP1, "in harness.json: images.jpeg_quality, recorded 95",
     "diverged"),
    ("harness-prompt-hint", _harness_prompt, EP1, "in harness.json: task_prompt", "diverged"),
    ("result-image-budget", _result("image_budget", 5), EP1, "in result.json: image_budget, recorded 5", "diverged"),
    ("result-catalog-version", _result("catalog_version", "2.0"), EP1, "in result.json: catalog_version", "diverged"),
    ("result-resolution", _result("resolution", 64), EP1, "in result.json: resolution, recorded 64", "diverged"),
    ("result-tool-call-budget", _result("tool_call_budget", 50), EP1, "in result.json: tool_call_budget", "diverged"),
    ("result-field-dropped", _result_field_dropped, EP1, "field 'catalog_version' is missing", "diverged"),
    ("result-score", _result_score, EP1, "in result.json: all.mean_iou", "diverged"),
    ("result-coverage-one-unit", _result_coverage_one_unit, EP1, "in result.json: coverage, recorded 0.06",
     "diverged"),
    ("result-usage", _result_usage, EP1, "in result.json: model.usage.input_tokens", "diverged"),
    ("result-scene-hash", _result("scene_content_hash", "f" * 64), EP1, "they differ from character 1 ('ffffffff' vs", "refused"),
    ("evaluate-resolution", _evaluate_json("resolution", 64), EP1, "in evaluate.json: resolution, recorded 64",
     "diverged"),
    ("evaluate-image-budget", _evaluate_json("image_budget", 30), EP1, "in evaluate.json: image_budget", "diverged"),
    ("evaluate-model-call-budget", _evaluate_model_budget, EP1, "in evaluate.json: agent_options.model_call_budget",
     "diverged"),
    ("frame-pixels", _frame_pixels, EP1, "in frames/frame_001.png: its pixels' SHA-256", "diverged"),
    ("frame-deleted", _frame_deleted, EP1, "frame_001.png is missing", "diverged"),
    ("frame-added", _frame_added, EP1, "frame_002.png is not a captured frame", "diverged"),
    ("frame-hashes-deleted", _frame_hashes_deleted, EP1, "in frames/sha256.json: missing", "diverged"),
    ("frame-symlink", _frame_link, EP1, "frames/frame_000.png is not a regular file", "diverged"),
    ("planned-drops-episode", _unplanned, EP2, "not in planned.json", "unplanned"),
    ("second-seed-unplanned", lambda d: _second_seed(d, False), "procedural_1/seed_1", "not in planned.json",
     "unplanned"),
    ("second-seed-planned", lambda d: _second_seed(d, True), "procedural_1/seed_1", "at event 0: start, seed, "
     "recorded 0 vs recomputed 1", "diverged"),
    ("seed-in-trace", _seed_in_trace, EP1, "at event 0: start, seed, recorded 1 vs recomputed 0", "diverged"),
    ("failed-note-without-evidence", _failed_note_only, EP2, "failed without evidence: no failed attempt is "
     "archived, only a note", "refused"),
    ("failed-attempt-without-trace", _failed_without_trace, EP2, "failed without evidence: the failed attempt "
     "procedural_2/seed_0 is not evidence", "refused"),
    ("event-extra-field", _event_extra_field, EP1, "field 'note' is not a field of this record", "diverged"),
    ("appended-model-response", _appended_response, EP1, ": model_response, event", "diverged"),
    ("reply-text", _reply_text, EP1, "model_request, history_sha256", "diverged"),
    ("tool-call-refused-dropped", _refusal_dropped, EP1, "tool_call_refused", "diverged"),
    ("tool-call-refused-edited", _refusal_edited, EP1, ": tool_call_refused, error", "diverged"),
    ("model-request-edited", _request_edited, EP1, "model_request, calls_left, recorded 9", "diverged"),
    ("start-edited", _start_edited, EP1, "start, radius_m, recorded 99.0", "diverged"),
    ("capture-edited", _capture_edited, EP1, "capture, pose_task.yaw_deg", "diverged"),
    ("end-edited", _end_edited, EP1, "end, reason", "diverged"),
    ("unknown-event-kind", _unknown_event, EP1, "event 3: field 'event' is 'hint', not an event kind", "diverged"),
    ("ground-truth", _ground_truth, EP1, "in ground_truth.json: targets[0].center[0]", "diverged"),
    ("result-truncated", _truncated_result, EP1, "unreadable: ", "diverged"),
    ("result-fifo", _fifo("result.json"), EP1, "result.json is not a regular file", "diverged"),
    ("trace-fifo", _fifo("trace.jsonl"), EP1, "trace.jsonl is not a regular file", "diverged"),
    ("another-episode-copied-in", _copied_over, EP1, "in its path: the path says scene 'procedural_1'", "diverged"),
    ("seed-relabelled", _seed_relabelled, EP1, "in its path: the path says seed 0, result.json says seed 1",
     "diverged"),
    ("scenes-json-edited", _scene_args, EP1, "in its path", "diverged"),
    ("prompt-txt", _prompt_txt, EP1, "in prompt.txt", "diverged"),
]


@pytest.mark.parametrize("name,edit,key,reason,status", TAMPERS, ids=[t[0] for t in TAMPERS])
def test_each_edit_is_caught_at_its_episode(honest, tmp_path, capsys, name, edit, key, reason, status):
    d = _copy(honest, tmp_path)
    edit(d)
    code, eps = _verify(d, capsys)
    assert code == 1
    got = eps[key]
    assert got["status"] == status, got
    assert reason in got["detail"] and "\n" not in got["detail"], got["detail"]
    others = {k: e["status"] for k, e in eps.items() if k != key}
    if name.startswith(("evaluate-", "scenes-")):       # an evaluation-wide file: every episode names it
        return
    # a copy of procedural_1/seed_0 filed as another seed takes its original down with it
    untouched = {k: s for k, s in others.items() if not (key.startswith("procedural_1/") and k == EP1)}
    assert untouched and all(s == "verified" for s in untouched.values()), others


EVENT_KIND_EDITS = {"start": "start-edited", "capture": "capture-edited", "tool_call": "tool-arguments-one-unit",
                    "map": "map-snapshot", "end": "end-edited", "model_request": "model-request-edited",
                    "model_response": "appended-model-response", "tool_call_refused": "tool-call-refused-edited"}
"""One edit per kind of trace event (every kind the honest run records is compared)."""


def test_the_matrix_has_thirty_kinds_and_every_trace_event_kind(honest):
    assert len(TAMPERS) >= 30 and len({t[0] for t in TAMPERS}) == len(TAMPERS)
    kinds = {json.loads(x)["event"] for x in (honest / EP1 / "trace.jsonl").read_text().splitlines()}
    assert kinds == set(EVENT_KIND_EDITS) and set(EVENT_KIND_EDITS.values()) <= {t[0] for t in TAMPERS}


def test_the_honest_evaluation_verifies(honest, capsys):
    code, eps = _verify(honest, capsys)
    assert code == 0 and sorted(eps) == [EP1, EP2]
    assert all(e["status"] == "verified" and e["conversation"].startswith("re-derived") for e in eps.values())
    trace = (honest / EP1 / "trace.jsonl").read_text()
    for kind in ("start", "capture", "tool_call", "map", "end", "model_request", "model_response", "tool_call_refused"):
        assert f'"event": "{kind}"' in trace


def test_tool_side_only_needs_the_flag_and_says_so(honest, tmp_path, capsys):
    d = _copy(honest, tmp_path)
    _harness_deleted(d)
    assert main(["verify", str(d), "--no-progress"]) == 1
    out = capsys.readouterr().out
    assert f"{EP1}: tool-side only (the conversation is not checkable: no harness.json" in out
    assert main(["verify", str(d), "--no-progress", "--allow-tool-side-only"]) == 0
    out = capsys.readouterr().out
    assert "1 of 2 episode(s) verified; 1 tool-side only (tool-side only accepted by --allow-tool-side-only" in out
    site = tmp_path / "site"
    assert main(["leaderboard", str(d), "--out", str(site), "--no-progress"]) == 0
    row = next(iter(json.loads((site / "leaderboard.json").read_text())["rows"].values()))
    assert row["verified"] == "tool-side only"
    assert "tool-side only" in (site / "leaderboard.md").read_text()


@pytest.mark.parametrize("content", ['"x"', '{"episodes": "procedural_1/seed_0"}', '{"episodes": [',
                                     "[" * 100000 + "]" * 100000, '{"episodes": [1, 2]}', '{"episodes": null}'],
                         ids=["a-string", "episodes-a-string", "truncated", "deeply-nested", "not-keys", "null"])
def test_a_corrupted_plan_is_an_error_never_an_empty_plan(honest, tmp_path, capsys, content):
    d = _copy(honest, tmp_path)
    shutil.rmtree(d / "procedural_2")
    (d / "planned.json").write_text(content)
    capsys.readouterr()
    assert main(["verify", str(d), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert "planned.json" in err and "Traceback" not in err and err.count("\n") == 1


@pytest.mark.parametrize("rewrite", ["crlf", "reindent"])
def test_benign_rewrites_still_verify(honest, tmp_path, capsys, rewrite):
    d = _copy(honest, tmp_path)
    for p in d.rglob("*"):
        if p.suffix == ".jsonl" or (p.suffix == ".json" and rewrite == "crlf"):
            p.write_bytes(p.read_bytes().replace(b"\n", b"\r\n"))
        elif p.suffix == ".json":
            p.write_text(json.dumps(json.loads(p.read_text()), indent=4 if "frames" in p.parts else None))
    code, eps = _verify(d, capsys)
    assert code == 0 and [e["status"] for e in eps.values()] == ["verified", "verified"]


def test_a_broken_episode_does_not_stop_the_others(honest, tmp_path, capsys):
    d = _copy(honest, tmp_path)
    _truncated_result(d)
    assert main(["verify", str(d), "--no-progress"]) == 1
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith(f"{EP1}: diverged unreadable: ") and out[1] == f"{EP2}: verified"


def test_leaderboard_verifies_for_itself(honest, tmp_path, capsys):
    """The honest evaluation is verified on the page; the forged one (its catalog version edited and
    a hand-edited verify.json claiming "verified") is not; an edited predictions.json is refused."""
    good = _copy(honest, tmp_path, "honest")
    forged = _copy(honest, tmp_path, "forged")
    _result("catalog_version", "2.0")(forged)
    (forged / "verify.json").write_text(json.dumps({"episodes": {k: {"status": "verified"} for k in (EP1, EP2)}}))
    site = tmp_path / "site"
    assert main(["leaderboard", str(good), str(forged), "--out", str(site), "--no-progress", "--force"]) == 0
    out = capsys.readouterr().out
    assert "verified every row here: " in out and "from the cache" in out
    rows = {Path(r["dir"]).name: r for r in json.loads((site / "leaderboard.json").read_text())["rows"].values()}
    assert rows["honest"]["verified"] == "verified" and rows["forged"]["verified"] == "diverged"
    assert rows["forged"]["verification"]["self_reported"] == {EP1: "verified", EP2: "verified"}
    assert main(["report", str(forged), "--no-figures"]) == 0
    assert "Verified: **diverged**" in (forged / "report.md").read_text()
    _pred_one_unit(forged)
    for cmd in (["report", str(forged), "--no-figures"], ["leaderboard", str(forged), "--out", str(site), "--no-progress", "--overwrite"],
                ["compare", str(good), str(forged)]):
        capsys.readouterr()
        assert main(cmd) == 2, cmd
        err = capsys.readouterr().err
        assert "predictions.json" in err and "the map the episode accepted" in err and "Traceback" not in err


def test_a_cached_verdict_lives_outside_the_directory_and_lapses_with_the_files(honest, tmp_path, monkeypatch):
    from spatialscout_gym.eval.verification.verify import verification_status
    monkeypatch.setenv("SPATIALSCOUT_VERIFY_CACHE", str(tmp_path / "cache"))
    d = _copy(honest, tmp_path)
    first = verification_status(d)
    assert first["cached"] == 0 and first["seconds_per_episode"] > 0
    again = verification_status(d)
    assert first["status"] == again["status"] == "verified" and again["cached"] == 2
    cache = Path(os.environ["SPATIALSCOUT_VERIFY_CACHE"])
    assert d.resolve() not in cache.resolve().parents and any(cache.glob("*.json"))
    _harness_image_budget(d)
    v = verification_status(d)
    assert v["status"] == "diverged" and v["cached"] == 1 and v["episodes"][EP1] == "diverged"


def test_verify_in_parallel_gives_the_same_verdicts(honest, tmp_path, capsys, monkeypatch):
    d = _copy(honest, tmp_path)
    _frame_deleted(d)
    monkeypatch.setenv("SPATIALSCOUT_VERIFY_CACHE", str(tmp_path / "cache-1"))
    one = _verify(d, capsys)
    monkeypatch.setenv("SPATIALSCOUT_VERIFY_CACHE", str(tmp_path / "cache-2"))     # nothing cached: both re-execute
    many = _verify(d, capsys, "--workers", "2")
    assert [(e["status"], e["detail"]) for e in one[1].values()] == [(e["status"], e["detail"]) for e in many[1].values()]


def _old_stream(run_dir: Path) -> bytes:
    """The byte stream the verdict cache once hashed: ``name\\0bytes\\0`` per file, end to end."""
    return b"".join(str(p.relative_to(run_dir)).encode() + b"\0" + p.read_bytes() + b"\0"
                    for p in sorted(run_dir.rglob("*")) if p.is_file())


def test_a_cache_collision_of_the_old_digest_earns_no_mark(honest, tmp_path, capsys, monkeypatch):
    """An honest run plus a file ``0`` streams like a forged run plus files ``0`` and ``zzz``; the
    cache key is a manifest (path, size, digest per file), so the forged run is re-executed."""
    monkeypatch.setenv("SPATIALSCOUT_VERIFY_CACHE", str(tmp_path / "cache"))
    good, forged = _copy(honest, tmp_path, "good"), _copy(honest, tmp_path, "forged")
    _result_score(forged)
    s_good, s_forged = _old_stream(_run(good)), _old_stream(_run(forged))
    (_run(good) / "0").write_bytes(b"x\0" + s_forged + b"zzz\0")
    (_run(forged) / "0").write_bytes(b"x")
    (_run(forged) / "zzz").write_bytes((b"\0" + s_good)[:-1])
    assert _old_stream(_run(good)) == _old_stream(_run(forged))       # the collision holds
    code, eps = _verify(good, capsys)
    assert code == 0 and eps[EP1]["status"] == "verified" and not eps[EP1]["cached"]
    code, eps = _verify(forged, capsys)
    assert code == 1 and eps[EP1]["status"] == "diverged" and not eps[EP1]["cached"], eps[EP1]
    assert "in result.json: all.mean_iou" in eps[EP1]["detail"]
    code, eps = _verify(good, capsys)
    assert code == 0 and eps[EP1]["cached"]                             # the honest verdict is reused


def test_the_cache_key_covers_package_data_and_the_price_table(honest, tmp_path):
    from spatialscout_gym.eval.verification import verify_cache
    d = _copy(honest, tmp_path)
    table = tmp_path / "prices.json"
    table.write_text('{"scripted": {"input": 1.0, "output": 2.0}}')
    _edit_json(d / "evaluate.json", lambda s: s.setdefault("agent_options", {}).update(price_table=str(table)))
    key = lambda: verify_cache.cache_key(d, _run(d), EP1, {}, False)      # noqa: E731
    first = key()
    table.write_text('{"scripted": {"input": 0.0, "output": 0.0}}')
    assert key() != first                                                 # the price table's bytes
    table.unlink()
    assert key() != first
    names = {row[0] for row in verify_cache.package_manifest()}
    assert {"scenes/data/catalog_v3.json", "eval/verification/verify.py", "servers/viewer/static/view.js"} <= names


def test_no_cache_re_executes_and_keeps_nothing(honest, tmp_path, capsys, monkeypatch):
    cache = tmp_path / "cache"
    monkeypatch.setenv("SPATIALSCOUT_VERIFY_CACHE", str(cache))
    _verify(honest, capsys)
    assert len(list(cache.glob("*.json"))) == 2
    shutil.rmtree(cache)
    code, eps = _verify(honest, capsys, "--no-cache")
    assert code == 0 and not any(e["cached"] for e in eps.values()) and not cache.exists()


def test_a_seed_filed_again_as_the_only_other_planned_seed_counts_once(honest, tmp_path, capsys):
    # every planned seed of the scene then holds one conversation: "repeated", one episode in the
    # aggregates, so the copy gains nothing over running one seed
    from spatialscout_gym.eval.pages.report import build_report
    d = _copy(honest, tmp_path)
    _same_conversation(d)
    code, eps = _verify(d, capsys)
    assert code == 0, eps
    assert eps[EP1]["status"] == eps["procedural_1/seed_1"]["status"] == "repeated" and eps[EP2]["status"] == "verified"
    assert build_report(d).episodes.completed == 2


def test_a_completed_episode_relabelled_failed_is_no_evidence_of_a_failure(honest, tmp_path, capsys):
    # the record derives from the trace: a completed trace under "status: failed" leaves no episode out
    d = _copy(honest, tmp_path)
    _edit_json(_run(d, EP2) / "result.json", lambda r: r.update(status="failed", error="RuntimeError: x"))
    code, eps = _verify(d, capsys)
    assert code == 1 and eps[EP1]["status"] == "verified", eps
    assert eps[EP2]["status"] != "failed" and "its trace ends in no failure" in eps[EP2]["detail"], eps[EP2]


def test_every_recorded_start_event_names_its_seed(honest):
    for key in (EP1, EP2):
        start = json.loads((honest / key / "trace.jsonl").read_text().splitlines()[0])
        assert start["event"] == "start" and start["seed"] == 0


@pytest.mark.parametrize("edit,words", [(_pred_one_unit, "the map the episode accepted"),
                                        (_result("scene_id", "procedural_7"), "names scene \"procedural_7\", but "
                                                                             "trace.jsonl's start event names")],
                         ids=["predictions-differ-from-the-trace", "result-names-another-scene"])
def test_view_reads_through_the_checks_of_report_compare_and_leaderboard(honest, tmp_path, capsys, edit, words):
    d = _copy(honest, tmp_path)
    assert main(["view", str(d), "--out", str(tmp_path / "ok")]) == 0
    edit(d)
    site = tmp_path / "site"
    for cmd in (["view", str(d), "--out", str(tmp_path / "view")], ["view", str(d / EP1), "--out", str(tmp_path / "one")],
                ["report", str(d), "--no-figures"], ["compare", str(honest), str(d)],
                ["leaderboard", str(d), "--out", str(site), "--no-progress", "--overwrite"]):
        capsys.readouterr()
        assert main(cmd) == 2, cmd
        err = capsys.readouterr().err
        assert words in err and err.count("\n") == 1 and "Traceback" not in err, (cmd, err)
