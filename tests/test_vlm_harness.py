"""The VLM harness as the paper runs it: prompt wording and its
V = 1 variant, passive mode's own prompt and tool list, output caps, attempt directories, and the
records every attempt keeps. Real ``openai``/``anthropic`` clients against the scripted server on
127.0.0.1; the fake renderer keeps each episode well under a second."""

from __future__ import annotations

import json
import warnings

import pytest

from fakes import FakeRenderer, small_scene
from record_fixtures import run_record, write_record
from vlm_scripted import ScriptedServer, capture_submit_finish
from spatialscout_gym.baselines.passive import PassiveViewsWarning
from spatialscout_gym.conversation.providers import ANTHROPIC_FALLBACK_MAX_TOKENS
from spatialscout_gym.baselines.registry import make_agent
from spatialscout_gym.eval.running.evaluate import EvalSettings, WorkerState, _remove_stale_temp_dirs, execute_task, plan_tasks
from spatialscout_gym.eval.layout import EvalDir, archive_failed_attempt
from spatialscout_gym.eval.pages.report import compare_reports, write_report
from spatialscout_gym.eval.running.runner import run_episode
from spatialscout_gym.conversation.prompt import (CAMERA_TOOLS, PASSIVE_TOOLS, first_message_text,
                                              reminder_text, task_prompt)


def _system(req: dict, fmt: str) -> str:
    return req["system"] if fmt == "anthropic" else req["messages"][0]["content"]


def _tool_names(req: dict, fmt: str) -> list[str]:
    return [t["name"] if fmt == "anthropic" else t["function"]["name"] for t in req["tools"]]


def _run(tmp_path, server, fmt="openai", name="run", image_budget=5, **options):
    spec = small_scene(32, 32)
    url = server.anthropic_url if fmt == "anthropic" else server.openai_url
    agent = make_agent(f"{fmt}:scripted", base_url=url, api_key="x", **{"model_call_budget": 6, **options})
    result = run_episode(agent, spec, tmp_path / name, renderer=FakeRenderer(spec), resolution=32,
                         image_budget=image_budget)
    return result, tmp_path / name


# ---- item 1: the prompt ---------------------------------------------------------------------------
def test_content_list_prompt_stays_selectable_under_its_earlier_name():
    spec = small_scene(32, 32)
    K, pub = spec.public.intrinsics, spec.public
    multi = task_prompt(pub, K, model_call_budget=100, image_budget=100, style="content-list")
    one = task_prompt(pub, K, model_call_budget=100, image_budget=1, style="content-list")
    assert task_prompt(pub, K, model_call_budget=100, image_budget=100, style="paper") == multi
    assert multi != task_prompt(pub, K, model_call_budget=100, image_budget=100)   # not the default
    assert "100 model calls" in multi and "100 images" in multi and "+x is the initial camera's forward" in multi
    assert "world-axis-aligned bounding box" in multi and "supported by what you see" in multi
    assert "After your first two views" in multi and "revise" in multi
    assert "initial image and its calibration" in one and "first two views" not in one and "1 image," in one
    # nothing the paper does not list: no inventory, no intrinsics, no coaching, no ray formula
    for extra in ("half the object", "Heed warnings", "GROUPS", "INVENTORY", "fx=", "(1, -(u - cx)/fx",
                  "CAMERA MOVES", "chair_1", "move_camera"):
        assert extra not in multi and extra not in one, extra
    assert first_message_text(style="paper") == "Here is the initial image (frame 0), taken at the task-frame origin."


def test_default_prompt_is_the_first_user_message_and_detailed_keeps_the_system_role(tmp_path):
    with ScriptedServer(capture_submit_finish) as server:
        result, run = _run(tmp_path, server, name="paper")
        _run(tmp_path, server, name="detailed", prompt_style="detailed")
        first, detailed = server.requests[0], server.requests[-1]
    msgs = first["messages"]
    assert msgs[0]["role"] == "user" and msgs[0]["content"][0]["text"].startswith("Estimate the 3D centre")
    assert msgs[0]["content"][1]["text"].startswith("Here is the initial image")
    assert msgs[0]["content"][-1]["type"] == "image_url" and not any(m["role"] == "system" for m in msgs)
    h = json.loads((run / "harness.json").read_text())
    assert (h["prompt_style"], h["prompt_role"], h["system_prompt"]) == ("appendix-a", "user", None)
    assert h["task_prompt"] == msgs[0]["content"][0]["text"] and h["reasoning_effort"] == "xhigh"
    assert first["reasoning_effort"] == "xhigh" and h["reasoning"]["source"].startswith("default")
    assert "first user message" in (run / "prompt.txt").read_text()
    assert detailed["messages"][0]["role"] == "system" and "INVENTORY" in detailed["messages"][0]["content"]
    h = json.loads((tmp_path / "detailed" / "harness.json").read_text())
    assert (h["prompt_style"], h["prompt_role"]) == ("detailed", "system")


def test_detailed_prompt_one_view_variant_and_legacy_by_name(tmp_path):
    spec = small_scene(32, 32)
    K, pub = spec.public.intrinsics, spec.public
    multi = task_prompt(pub, K, model_call_budget=100, image_budget=100, style="detailed")
    one = task_prompt(pub, K, model_call_budget=100, image_budget=1, style="detailed")
    assert "After your first two views" in multi and "supported by what you see" in multi
    assert "scores nothing" not in multi and "before the budget runs out" not in multi
    # V = 1: estimates from the initial image and its calibration; no multi-view advice
    assert "V = 1 image " in one and "initial image and its calibration" in one
    assert "first two views" not in one and ">= 2 frames" not in one and "(1, -(u - cx)/fx" in one
    # the legacy wording only by name, and the run records which one was used
    with ScriptedServer(capture_submit_finish) as server:
        result, run = _run(tmp_path, server, prompt_style="legacy")
        legacy_system = _system(server.requests[0], "openai")
    assert "scores nothing" in legacy_system and "Start by planning" in json.dumps(server.requests[0])
    assert result["model"]["prompt_style"] == "legacy"
    assert json.loads((run / "harness.json").read_text())["prompt_style"] == "legacy"
    with pytest.raises(ValueError, match="unknown prompt style"):
        make_agent("openai:m", api_key="x", prompt_style="chatty")


def test_first_message_and_reminders_follow_the_ending_rule():
    first = first_message_text(style="detailed")
    assert "Start by planning" not in first and "without a tool call ends the episode" in first
    assert "same response" in first
    text = reminder_text(10, 7, 1, 4)
    assert text == "REMINDER: 10 model calls remain, this one included; 7 images remain."
    assert "Submit" not in text and "finish_mapping" not in text


def test_one_view_episode_through_the_client(tmp_path):
    with ScriptedServer(capture_submit_finish) as server:
        result, _ = _run(tmp_path, server, image_budget=1)
        opening = server.requests[0]["messages"][0]["content"][0]["text"]
    assert "initial image and its calibration" in opening and "first two views" not in opening
    assert result["counters"]["images_used"] == 1   # the capture was refused


# ---- passive mode -------------------------------------------------------------------------------
def test_passive_prompt_and_request_list_only_enabled_tools_with_a_baseline(tmp_path):
    with ScriptedServer(capture_submit_finish) as server, warnings.catch_warnings():
        warnings.simplefilter("error", PassiveViewsWarning)   # three views have a baseline
        result, run = _run(tmp_path, server, fmt="anthropic", mode="passive", passive_views=3)
        req = server.requests[0]
    assert _tool_names(req, "anthropic") == list(PASSIVE_TOOLS)
    system = _system(req, "anthropic")
    assert not any(t in system for t in CAMERA_TOOLS)
    assert f"TOOLS: {', '.join(PASSIVE_TOOLS)}." in system and "from 3 fixed images" in system
    harness = json.loads((run / "harness.json").read_text())
    assert harness["passive"]["frames"] == [0, 1, 2] and harness["passive"]["baseline_m"] == pytest.approx(2.0)
    assert [t["name"] for t in harness["tool_schema"]] == list(PASSIVE_TOOLS) and not harness["warnings"]
    assert result["status"] == "ok"


def test_passive_views_without_baseline_warn_and_say_so(tmp_path):
    with ScriptedServer(capture_submit_finish) as server, pytest.warns(PassiveViewsWarning, match="share one camera centre"):
        result, run = _run(tmp_path, server, mode="passive", passive_views=1)
        system = _system(server.requests[0], "openai")
    assert "NO BASELINE" in system and "TRIANGULATION" not in system
    assert result["model"]["warnings"] and json.loads((run / "harness.json").read_text())["warnings"]


# ---- item 2: output caps ----------------------------------------------------------------------------
def test_no_output_cap_unless_asked_and_a_cut_off_reply_fails(tmp_path):
    with ScriptedServer(capture_submit_finish) as server:
        _run(tmp_path, server, name="free")
        assert all("max_tokens" not in r and "max_completion_tokens" not in r for r in server.requests)
    with ScriptedServer(capture_submit_finish, truncate={1}) as server:
        result, run = _run(tmp_path, server, name="capped", max_tokens=50)
        assert server.requests[0]["max_tokens"] == 50
    assert result["status"] == "failed" and result["error_type"] == "OutputCapError"
    assert "max_tokens=50" in result["error"] and "--max-tokens" in result["error"]
    trace = [json.loads(x) for x in (run / "trace.jsonl").read_text().splitlines()]
    cut = [e for e in trace if e["event"] == "model_response" and e.get("truncated")]
    assert len(cut) == 1 and cut[0]["stop_reason"] == "length"
    assert not any(e["event"] == "map" for e in trace)   # the cut-off submission was not run


def test_anthropic_gets_the_models_maximum_or_the_documented_fallback(tmp_path):
    with ScriptedServer(capture_submit_finish, models={"scripted": 12345}) as server:
        result, run = _run(tmp_path, server, fmt="anthropic", name="known")
        assert [r["max_tokens"] for r in server.requests] == [12345] * 3
        assert server.gets == ["/v1/models/scripted"]   # asked once, not counted as a model call
    assert result["model"]["max_output_tokens"] == 12345 and result["model"]["model_calls"] == 3
    assert "Models API" in json.loads((run / "harness.json").read_text())["model"]["max_output_tokens_source"]
    with ScriptedServer(capture_submit_finish) as server:   # a compatible server without the Models API
        result, _ = _run(tmp_path, server, fmt="anthropic", name="fallback")
        assert server.requests[0]["max_tokens"] == ANTHROPIC_FALLBACK_MAX_TOKENS
    assert result["model"]["max_output_tokens_source"].startswith("fallback")


# ---- items 4 and 5: attempts and records -----------------------------------------------------------
def _attempt(out, scene, server):
    settings = EvalSettings("anthropic:scripted", 4, None, 32, agent_options={"model_call_budget": 6},
                            runtime_options={"base_url": server.anthropic_url, "api_key": "x"})
    task = plan_tasks(out, [scene], 1)[0]
    return execute_task(task, WorkerState(settings, renderer_factory=FakeRenderer)), task


def test_cut_off_attempt_is_kept_in_its_own_directory_next_to_the_rerun(tmp_path):
    scene = tmp_path / "room.json"
    scene.write_text(small_scene(32, 32).to_json())
    out = tmp_path / "ev"
    with ScriptedServer(capture_submit_finish, truncate={1}) as server:   # stops at the harness's cap
        first, task = _attempt(out, str(scene), server)
    assert not first.ok and first.result["error_type"] == "OutputCapError" and first.result["attempt"] == 1
    with ScriptedServer(capture_submit_finish) as server:
        second, _ = _attempt(out, str(scene), server)
    assert second.ok and second.result["end_reason"] == "finish_mapping" and second.result["attempt"] == 2
    run = out / "room" / "seed_0"
    kept = run / "attempts" / "01"
    failed = json.loads((kept / "result.json").read_text())
    assert failed["status"] == "failed" and failed["attempt"] == 1
    for name in ("trace.jsonl", "harness.json", "prompt.txt", "frames/frame_000.png", "frames/frame_001.png"):
        assert (kept / name).is_file(), name
    assert not (run / "attempts" / "02").exists() and (run / "predictions.json").is_file()
    report = write_report(out)
    e = report.episodes
    assert (e.completed, e.failed, e.attempts, e.failed_attempts) == (1, 0, 2, 1)
    assert e.failure_rate == 0.0 and e.attempt_failure_rate == 0.5
    assert e.end_reasons == {"finish_mapping": 1}
    assert "Completed 1 of 1 episodes (100.00%)" in (out / "report.md").read_text()
    text, _ = compare_reports([out, out], force=True)
    assert "| completed | failed |" in text and "| anthropic:scripted | 1 | 0 | 0.00 | 2 |" in text


def test_attempt_directory_holds_the_records(tmp_path):
    with ScriptedServer(capture_submit_finish) as server:
        result, run = _run(tmp_path, server, fmt="anthropic", reasoning_effort="high", prompt_style="detailed")
        req = server.requests[0]
    h = json.loads((run / "harness.json").read_text())
    assert h["reasoning_effort"] == "high" and h["prompt_role"] == "system"
    assert h["system_prompt"] == req["system"] and h["tool_schema"] == req["tools"]
    assert h["first_message"][0] == req["messages"][0]["content"][0]["text"]
    assert h["model"]["api_mode"] == "messages" and h["model"]["name"] == "scripted"
    assert h["model"]["reasoning_effort"] == "high" and h["model"]["timeout_s"] == 180.0
    # an effort turns on extended thinking with the documented budget, beside output_config.effort
    assert req["thinking"] == {"type": "enabled", "budget_tokens": 32_768}
    assert req["output_config"] == {"effort": "high"} and req["max_tokens"] > 32_768
    assert h["reasoning"]["sent_as"]["thinking"]["budget_tokens"] == 32_768 and not h["reasoning"]["refused"]
    assert h["budgets"] == {"model_call_budget": 6, "image_budget": 5, "tool_call_budget": None,
                            "reminders_at_calls_left": [10, 3]}
    assert h["images"]["max_side_px"] == 384 and h["images"]["jpeg_quality"] == 82
    assert h["system_prompt"] in (run / "prompt.txt").read_text()
    assert result["model"]["api_mode"] == "messages"
    trace = [json.loads(x) for x in (run / "trace.jsonl").read_text().splitlines()]
    requests = [e for e in trace if e["event"] == "model_request"]
    responses = [e for e in trace if e["event"] == "model_response"]
    tools = [e for e in trace if e["event"] == "tool_call"]
    assert all(a["time_unix_s"] <= b["time_unix_s"] for a, b in zip(requests, responses))
    assert tools and all(e["execution_s"] >= 0 and e["started_unix_s"] > 1.7e9 for e in tools)
    # the scorer's record: metric version, minimum side, Q, H_tau, M, N
    s = result["scorer"]
    assert s["metric_version"] and s["min_side_m"] == 0.01 and (s["M"], s["N"]) == (1, 4)
    assert s["Q"] / s["N"] == pytest.approx(result["all"]["mean_iou"])
    assert s["H"]["gt_0"] / s["N"] == pytest.approx(result["all"]["gt_0"])


def test_openai_records_chat_completions_and_no_cap():
    agent = make_agent("openai:m", api_key="x")
    assert agent.provider.settings()["api_mode"] == "chat_completions"
    assert agent.provider.settings()["max_output_tokens"] is None


def test_a_half_moved_attempt_is_no_attempt_for_any_reader(tmp_path):
    """With attempts/01 and a half-moved attempts/.02.partial, the evaluation directory's readers
    and the archiver see the same single earlier attempt."""
    from spatialscout_gym.eval.layout import attempt_dirs
    run = tmp_path / "room" / "seed_0"
    for d in (run / "attempts" / "01", run / "attempts" / ".02.partial"):
        d.mkdir(parents=True)
        write_record(d, run_record("room", status="failed"))
    write_record(run, run_record("room"))
    (episode,) = EvalDir(tmp_path).episodes()
    assert [a.run_dir for a in episode.attempts] == [run, run / "attempts" / "01"] == [run, *attempt_dirs(run)]
    assert EvalDir(tmp_path).run_dirs() == [run]


def test_a_killed_archive_or_replace_loses_no_attempt(tmp_path):
    run = tmp_path / "room" / "seed_0"
    (run / "frames").mkdir(parents=True)
    (run / "frames" / "frame_000.png").write_bytes(b"png")
    write_record(run, run_record("room", status="failed"))
    partial = run / "attempts" / ".01.partial"   # killed after moving the trace, before the rest
    partial.mkdir(parents=True)
    (partial / "trace.jsonl").write_text("{}\n")
    assert archive_failed_attempt(run) == 2
    kept = run / "attempts" / "01"
    assert sorted(p.name for p in kept.iterdir()) == ["frames", "result.json", "trace.jsonl"]
    assert sorted(p.name for p in run.iterdir()) == ["attempts"]
    # killed while replacing seed_0/: the earlier attempts sit in the temp dir and move back
    tmp = run.parent / ".seed_0.abc123.tmp"
    tmp.mkdir()
    (run / "attempts").rename(tmp / "attempts")
    task = plan_tasks(tmp_path, ["room.json"], 1)[0]
    assert _remove_stale_temp_dirs([task]) == 1
    assert (run / "attempts" / "01" / "trace.jsonl").is_file() and not tmp.exists()
    assert archive_failed_attempt(run) == 2
