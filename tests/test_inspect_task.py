"""SpatialScout inside Inspect AI (docs/inspect.md): the shipped task run by Inspect with its
``mockllm`` model and, through the package's ``inspect_ai`` entry point and the ``inspect eval``
command, with Inspect's OpenAI-compatible provider against a scripted server on 127.0.0.1; the same
scripted model through ``spatialscout evaluate`` makes the same tool calls and gets the same scores,
and ``verify`` accepts every run. SAPIEN renders on software Vulkan."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from inspect_ai import eval as inspect_eval
from inspect_ai.model import (ChatCompletionChoice, ChatMessageAssistant, ContentImage, ModelOutput, ModelUsage,
                              get_model)
from inspect_ai.tool import ToolCall as InspectToolCall

from inspect_and_evaluate_runs import B, REPO, RES, SCENES, V, inspect_and_evaluate, plan as _plan, request_text
from spatialscout_gym.core.scoring import GroundTruth
from spatialscout_gym.eval.pages.leaderboard import build_row
from spatialscout_gym.eval.verification.verify import verify_dir
from spatialscout_gym.scenes.catalog import scene_by_name

pytestmark = [pytest.mark.render, pytest.mark.slow, pytest.mark.xdist_group("inspect")]   # the shared runs: one worker

EPISODE_EVENTS = ("start", "capture", "tool_call", "tool_call_refused", "map", "end")


@pytest.fixture(scope="module")
def truths() -> dict[str, GroundTruth]:
    return {s: GroundTruth.from_spec(scene_by_name(s)) for s in SCENES}


def _check_run_dir(run: Path) -> dict:
    result = json.loads((run / "result.json").read_text())
    assert result["status"] == "ok"
    for name in ("trace.jsonl", "predictions.json", "ground_truth.json", "harness.json", "prompt.txt",
                 "frames/frame_000.png", "frames/sha256.json"):
        assert (run / name).is_file(), f"{run} lacks {name}"
    return result


def _trace(run: Path) -> list[dict]:
    return [json.loads(line) for line in (run / "trace.jsonl").read_text().splitlines() if line.strip()]


# ---- Inspect's mockllm ---------------------------------------------------------------------------
def _mock_output(calls: list[tuple[str, dict]], turn: int) -> ModelOutput:
    msg = ChatMessageAssistant(content="" if calls else "I am done.", tool_calls=[
        InspectToolCall(id=f"mock_{turn}_{i}", function=n, arguments=a) for i, (n, a) in enumerate(calls)] or None)
    return ModelOutput(model="mockllm/model", choices=[ChatCompletionChoice(
        message=msg, stop_reason="tool_calls" if calls else "stop")],
        usage=ModelUsage(input_tokens=100, output_tokens=10, total_tokens=410, input_tokens_cache_read=300))


def test_mockllm_two_scenes_write_verified_run_directories_and_our_metrics(tmp_path, truths):
    def model_script(messages, tools, tool_choice, config) -> ModelOutput:
        turn = sum(isinstance(m, ChatMessageAssistant) for m in messages)
        assert [t.name for t in tools][-1] == "finish_mapping" and len(tools) == 10
        text = json.dumps([m.model_dump() for m in messages], default=str)
        # capture, list, submit (one exact and one offset centre), then a reply without a tool call
        calls = {0: [("capture_image", {})], 1: [("list_entities", {})]}.get(turn, [])
        if turn == 2:
            calls = _plan(turn, text, truths)[1:]
        return _mock_output(calls, turn)

    out = tmp_path / "runs"
    from spatialscout_gym.integrations.inspect_task import spatialscout
    logs = inspect_eval(spatialscout(scenes=",".join(SCENES), repeats=1, image_budget=V, call_budget=B,
                                     resolution=RES, out=str(out)),
                        model=get_model("mockllm/model", custom_outputs=model_script),
                        log_dir=str(tmp_path / "logs"), display="none")
    log = logs[0]
    assert log.status == "success", log.error
    assert len(log.samples) == 2
    for sample in log.samples:
        run = Path(sample.metadata["spatialscout"]["run_dir"])
        result = _check_run_dir(run)
        assert result["end_reason"] == "no_tool_call" and result["model"]["model_calls"] == 4
        # Inspect's whole input, cache reads included (Inspect counts them apart from input_tokens)
        assert result["model"]["usage"]["input_tokens"] == 4 * 400 and result["model"]["cached_input_tokens"] == 4 * 300
        assert result["num_submitted"] == 2 and result["all"]["mean_iou"] > 0
        assert result["harness"]["name"] == "inspect_ai" and result["agent"] == "inspect:mockllm/model"
        # the frames reached the model as Inspect image content, the prompt as the first user message
        assert sample.messages[0].role == "user" and "Estimate the 3D centre" in sample.messages[0].text
        assert any(isinstance(p, ContentImage) for m in sample.messages if isinstance(m.content, list)
                   for p in m.content)
        assert sum(e.event == "model" for e in sample.events) == 4
        reminders = [m.text for m in sample.messages if m.role == "user" and m.text.startswith("REMINDER")]
        assert reminders == ["REMINDER: 3 model calls remain, this one included; 2 images remain."]
    # Inspect's metrics are the pooled figures our own report computes from the same run directories
    metrics = {k: v.value for k, v in log.results.scores[0].metrics.items()}
    row = build_row(out)
    assert row["harness"].startswith("inspect_ai ")
    assert metrics["all_miou_pct"] == pytest.approx(100 * row["object_micro"]["all"]["mean_iou"], abs=1e-10)
    assert metrics["all_miou_pct"] > 0
    assert metrics["sub_gt_50_pct"] == pytest.approx(100 * row["object_micro"]["submitted"]["gt_50"])
    assert metrics["coverage_pct"] == pytest.approx(100 * row["object_micro"]["coverage"], abs=1e-10)
    assert metrics["macro_all_miou_pct"] == pytest.approx(100 * row["scene_macro"]["all"]["mean_iou"], abs=1e-10)
    checks = verify_dir(out)
    assert [c.status for c in checks] == ["verified", "verified"], [c.line() for c in checks]


def test_a_failed_model_call_is_a_failed_attempt_kept_when_the_rerun_completes(tmp_path):
    from spatialscout_gym.integrations.inspect_task import spatialscout

    def broken(messages, tools, tool_choice, config) -> ModelOutput:
        if any(isinstance(m, ChatMessageAssistant) for m in messages):
            raise RuntimeError("scripted service failure")
        return _mock_output([("capture_image", {})], 0)

    def done(messages, tools, tool_choice, config) -> ModelOutput:
        return _mock_output([], 0)

    out = tmp_path / "runs"
    task_args = dict(scenes=SCENES[0], image_budget=V, call_budget=B, resolution=RES, out=str(out))
    first = inspect_eval(spatialscout(**task_args), model=get_model("mockllm/model", custom_outputs=broken),
                         log_dir=str(tmp_path / "logs"), display="none")[0]
    assert first.status == "error" and "scripted service failure" in str(first.error)
    run = out / "procedural_11" / "seed_0"
    failed = json.loads((run / "result.json").read_text())
    assert failed["status"] == "failed" and "scripted service failure" in failed["error"]
    assert failed["attempt"] == 1 and failed["model"]["model_calls"] == 2
    second = inspect_eval(spatialscout(**task_args), model=get_model("mockllm/model", custom_outputs=done),
                          log_dir=str(tmp_path / "logs"), display="none")[0]
    assert second.status == "success"
    result = json.loads((run / "result.json").read_text())
    assert result["status"] == "ok" and result["attempt"] == 2 and result["end_reason"] == "no_tool_call"
    assert json.loads((run / "attempts" / "01" / "result.json").read_text())["status"] == "failed"
    # a different B into the same directory is refused, as evaluate refuses it
    third = inspect_eval(spatialscout(**{**task_args, "call_budget": B + 1}),
                         model=get_model("mockllm/model", custom_outputs=done),
                         log_dir=str(tmp_path / "logs"), display="none")[0]
    assert third.status == "error" and "other settings" in str(third.error)
    assert json.loads((run / "result.json").read_text())["attempt"] == 2


# ---- Inspect's OpenAI-compatible provider against a scripted server, and parity -------------------
def _call(c: dict) -> tuple[str, dict]:
    """A traced tool call as (name, arguments): the ids are the server's (numbered over all its
    requests) and Inspect hands over parsed arguments where our client keeps the JSON text."""
    return c["name"], c["arguments"] if isinstance(c["arguments"], dict) else json.loads(c["arguments"])


def _comparable(e: dict) -> dict:
    e = {k: v for k, v in e.items() if k not in ("time_unix_s", "started_unix_s", "execution_s")}
    if "call" in e:
        e["call"] = _call(e["call"])
    return e


def test_inspect_eval_and_evaluate_make_the_same_calls_and_scores(tmp_path_factory):
    runs = inspect_and_evaluate(tmp_path_factory)      # shared with the Inspect journey (made once)
    inspect_out, evaluate_out = runs.inspect_out, runs.evaluate_out
    inspect_requests = runs.inspect_requests
    # Inspect's output shows our metrics; the model saw the reminder before its 3rd call only
    assert "all_miou_pct" in runs.inspect_stdout and "macro_all_miou_pct" in runs.inspect_stdout
    reminded = [sum(m.get("role") == "assistant" for m in r["messages"]) for r in inspect_requests
                if "REMINDER: 3 model calls remain" in request_text(r)]
    assert reminded and set(reminded) >= {2}
    assert len(inspect_requests) == 4 + B   # finish_mapping ends one episode at its 4th call, B the other

    ends = {}
    for scene_dir in ("procedural_11", "procedural_12"):
        a, b = inspect_out / scene_dir / "seed_0", evaluate_out / scene_dir / "seed_0"
        ra, rb = _check_run_dir(a), _check_run_dir(b)
        ends[scene_dir] = ra["end_reason"]
        assert ra["harness"]["name"] == "inspect_ai" and "harness" not in rb
        for key in ("all", "submitted", "coverage", "center_error_m", "full_scene_loss_m", "scorer",
                    "counters", "end_reason"):
            assert ra[key] == rb[key], f"{scene_dir}: {key} differs: {ra[key]} vs {rb[key]}"
        assert ra["model"]["model_calls"] == rb["model"]["model_calls"]
        ta, tb = _trace(a), _trace(b)
        episode = [[_comparable(e) for e in t if e["event"] in EPISODE_EVENTS] for t in (ta, tb)]
        assert episode[0] == episode[1]
        calls = [[[_call(c) for c in e["tool_calls"]] for e in t if e["event"] == "model_response"] for t in (ta, tb)]
        assert calls[0] == calls[1] and len(calls[0]) == ra["model"]["model_calls"]
        assert ra["all"]["mean_iou"] > 0
    assert ends == {"procedural_11": "finish_mapping", "procedural_12": "model_call_budget"}
    for out in (inspect_out, evaluate_out):
        checks = verify_dir(out)
        assert [c.status for c in checks] == ["verified", "verified"], [c.line() for c in checks]
    assert build_row(inspect_out)["harness"].startswith("inspect_ai ")
    assert build_row(evaluate_out)["harness"] == "spatialscout"


def test_import_spatialscout_gym_does_not_import_inspect():
    code = "import sys, spatialscout_gym; print('inspect_ai' in sys.modules)"
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                       env={**os.environ, "PYTHONPATH": str(REPO)})
    assert p.returncode == 0 and p.stdout.strip() == "False", p.stderr
