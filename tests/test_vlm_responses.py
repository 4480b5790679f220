"""``openai-responses:MODEL``: the OpenAI Responses API through the real ``openai`` SDK against a
scripted server on 127.0.0.1 that refuses (HTTP 400) any request lacking the previous answer's
reasoning item, function calls or function-call outputs."""

from __future__ import annotations

import json

import openai
import pytest

from fakes import FakeRenderer, small_scene
from vlm_scripted import ScriptedServer
from spatialscout_gym.baselines.registry import make_agent
from spatialscout_gym.conversation.codecs import responses
from spatialscout_gym.eval.running.runner import run_episode


def _policy(step, body, fmt):
    assert fmt == "responses"
    if step == 0:
        return [("move_camera", {"right": 0.3}), ("capture_image", "{}")]
    if step == 1:
        return [("submit_positions", {"positions": {"chair_1": [3.0, -0.6, -0.9]}}), ("list_entities", {})]
    return [("finish_mapping", {})]


def test_responses_agent_carries_reasoning_and_outputs_between_turns(tmp_path):
    spec = small_scene(32, 32)
    with ScriptedServer(_policy) as server:
        agent = make_agent("openai-responses:scripted-r", base_url=server.openai_url, api_key="local",
                           reasoning_effort="high", max_tokens=777,
                           price_table={"scripted-r": {"input_per_mtok": 2.0, "output_per_mtok": 8.0}})
        result = run_episode(agent, spec, tmp_path / "r", renderer=FakeRenderer(spec), resolution=32)
        requests, refused = list(server.requests), list(server.refused)
    assert refused == [] and len(requests) == 3
    assert result["status"] == "ok" and result["end_reason"] == "finish_mapping" and result["all"]["mean_iou"] > 0
    m = result["model"]
    assert m["api_mode"] == "responses" and m["provider"] == "openai-responses"
    assert m["usage"] == {"input_tokens": 3003, "output_tokens": 150}
    assert m["cost_usd"] == pytest.approx((3003 * 2.0 + 150 * 8.0) / 1e6)
    first, second = requests[0], requests[1]
    assert first["reasoning"] == {"effort": "high"} and first["max_output_tokens"] == 777
    # the paper's prompt opens the first user message; no instructions are sent
    assert "instructions" not in first and first["input"][0]["role"] == "user"
    assert first["input"][0]["content"][0]["text"].startswith("Estimate the 3D centre")
    assert {t["name"] for t in first["tools"]} >= {"capture_image"}
    assert all(t["type"] == "function" and "parameters" in t for t in first["tools"])
    # the second request replays the first answer (reasoning, calls, message) and answers both calls
    kinds = [i.get("type", i.get("role")) for i in second["input"]]
    assert kinds[:2] == ["user", "reasoning"]
    outputs = {i["call_id"]: i["output"] for i in second["input"] if i.get("type") == "function_call_output"}
    assert set(outputs) == {"call_0_0", "call_0_1"}
    assert json.loads(outputs["call_0_0"])["ok"] and "image of frame 1 follows" in outputs["call_0_1"]
    image_turn = second["input"][-1]
    assert image_turn["role"] == "user" and image_turn["content"][-1]["type"] == "input_image"
    trace = [json.loads(x) for x in (tmp_path / "r" / "trace.jsonl").read_text().splitlines()]
    assert [e["stop_reason"] for e in trace if e["event"] == "model_response"] == ["completed"] * 3


def test_the_scripted_server_refuses_a_request_without_the_outputs():
    """The server's check can fail: a second request that drops the function-call outputs is a 400."""
    with ScriptedServer(_policy) as server:
        client = openai.OpenAI(base_url=server.openai_url, api_key="local", max_retries=0)
        first = client.responses.create(model="m", input=[{"role": "user", "content": "go"}])
        replay = [item.model_dump(mode="json", exclude_none=True) for item in first.output]
        with pytest.raises(openai.BadRequestError, match="function_call_output for call_0_0"):
            client.responses.create(model="m", input=[{"role": "user", "content": "go"}] + replay)
        assert len(server.refused) == 1


def test_run_cli_with_a_responses_agent(tmp_path, capsys):
    from spatialscout_gym.cli.main import main
    with ScriptedServer(_policy) as server:
        rc = main(["run", "--agent", "openai-responses:m", "--base-url", server.openai_url, "--api-key", "local",
                   "--scene", "procedural:11", "--out", str(tmp_path / "run"), "--resolution", "32",
                   "--reasoning-effort", "low"])
        assert server.refused == [] and len(server.requests) == 3
    assert rc == 0, capsys.readouterr()
    result = json.loads((tmp_path / "run" / "result.json").read_text())
    assert result["model"]["api_mode"] == "responses" and result["end_reason"] == "finish_mapping"


def test_responses_input_without_provider_items():
    """A conversation built elsewhere (no replayed output items) still pairs calls with outputs."""
    from spatialscout_gym.conversation.messages import Message, ToolCall
    msgs = [Message("system", ["sys"]), Message("user", ["hi"]),
            Message("assistant", ["ok"], tool_calls=[ToolCall("c1", "get_camera_pose", {})]),
            Message("tool", ['{"ok": true}'], tool_call_id="c1", tool_name="get_camera_pose")]
    instructions, items = responses.input_items(msgs)
    assert instructions == "sys"
    assert [i.get("type", i.get("role")) for i in items] == ["user", "assistant", "function_call",
                                                              "function_call_output"]
    assert items[2]["call_id"] == items[3]["call_id"] == "c1" and items[2]["arguments"] == "{}"
