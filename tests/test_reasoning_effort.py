"""Reasoning effort as the paper ran it (docs/protocol.md section 10): xhigh by default, an
explicit flag overrides (``none`` is a value, ``--no-reasoning-effort`` sends nothing), Anthropic
gets extended thinking with the documented budget, and a service that refuses the parameter gets it
once, after which the run goes on without it and says so. Real ``openai``/``anthropic`` clients
against the scripted server on 127.0.0.1; the fake renderer keeps each episode well under a second."""

from __future__ import annotations

import argparse
import json

import pytest

from fakes import FakeRenderer, small_scene
from vlm_scripted import ScriptedServer, capture_submit_finish
from spatialscout_gym.conversation.providers import (DEFAULT_REASONING_EFFORT, MIN_THINKING_BUDGET_TOKENS,
                                                  THINKING_BUDGET_TOKENS)
from spatialscout_gym.baselines.registry import make_agent
from spatialscout_gym.cli import run as run_cli
from spatialscout_gym.cli.errors import CliError
from spatialscout_gym.core.errors import ConfigError
from spatialscout_gym.eval.running.runner import run_episode


def _run(tmp_path, server, fmt="openai", name="run", **options):
    spec = small_scene(32, 32)
    url = server.anthropic_url if fmt == "anthropic" else server.openai_url
    agent = make_agent(f"{fmt}:scripted", base_url=url, api_key="x", **{"model_call_budget": 6, **options})
    result = run_episode(agent, spec, tmp_path / name, renderer=FakeRenderer(spec), resolution=32, image_budget=5)
    return result, json.loads((tmp_path / name / "harness.json").read_text())


def test_the_default_is_the_papers_xhigh_on_every_request(tmp_path):
    assert DEFAULT_REASONING_EFFORT == "xhigh"
    with ScriptedServer(capture_submit_finish) as server:
        result, h = _run(tmp_path, server)
        assert [r.get("reasoning_effort") for r in server.requests] == ["xhigh"] * 3
    assert h["reasoning"]["effort"] == "xhigh" and h["reasoning"]["source"] == "default: the paper's (Table 3)"
    assert h["reasoning"]["sent_as"] == {"reasoning_effort": "xhigh"} and h["reasoning"]["refused"] == {}
    assert result["model"]["reasoning_effort"] == "xhigh" and result["model"]["reasoning_effort_refused"] == []


@pytest.mark.parametrize("fmt, param", [("openai", "reasoning_effort"), ("openai-responses", "reasoning")])
def test_a_refused_effort_is_sent_once_and_never_again_and_the_run_says_so(tmp_path, fmt, param):
    with ScriptedServer(capture_submit_finish, refuse_params={param}) as server:
        result, h = _run(tmp_path, server, fmt=fmt)
        refused, answered = list(server.refused_requests), list(server.requests)
    assert len(refused) == 1 and param in refused[0]            # sent once ...
    assert len(answered) == 3 and not any(param in r for r in answered)   # ... and never again
    assert result["status"] == "ok" and result["end_reason"] == "finish_mapping"
    m = result["model"]
    assert m["model_calls"] == 3 and m["http_attempts"] == 4 and m["reasoning_effort_refused"] == [param]
    r = h["reasoning"]
    assert list(r["refused"]) == [param] and "Unsupported parameter" in r["refused"][param]
    assert r["sent_as"] == {} and "continued without it" in r["note"]
    assert h["model"]["reasoning"] == r


def test_anthropic_effort_turns_on_thinking_and_a_refused_output_config_keeps_thinking(tmp_path):
    with ScriptedServer(capture_submit_finish, models={"scripted": 20_000}, refuse_params={"output_config"}) as server:
        result, h = _run(tmp_path, server, fmt="anthropic")
        refused, answered = list(server.refused_requests), list(server.requests)
    # the paper's xhigh, "no explicit limit": the largest budget the API accepts, max_tokens - 1
    budget = 20_000 - 1
    assert len(refused) == 1 and refused[0]["output_config"] == {"effort": "xhigh"}
    assert [r["thinking"] for r in answered] == [{"type": "enabled", "budget_tokens": budget}] * 3
    assert not any("output_config" in r for r in answered) and result["status"] == "ok"
    assert list(h["reasoning"]["refused"]) == ["output_config"]
    assert h["reasoning"]["sent_as"] == {"thinking": {"type": "enabled", "budget_tokens": budget}}
    assert h["reasoning"]["thinking_budget_rule"].startswith("max_tokens - 1")
    assert [r["max_tokens"] for r in answered] == [20_000] * 3   # the model's own maximum (Models API)
    with ScriptedServer(capture_submit_finish, models={"scripted": 20_000}) as server:   # a lower effort keeps its table budget
        _run(tmp_path, server, fmt="anthropic", name="medium", reasoning_effort="medium")
        assert {r["thinking"]["budget_tokens"] for r in server.requests} == {THINKING_BUDGET_TOKENS["medium"]}


def test_anthropic_without_room_for_thinking_and_with_an_unknown_effort(tmp_path):
    with ScriptedServer(capture_submit_finish) as server:
        _, h = _run(tmp_path, server, fmt="anthropic", max_tokens=MIN_THINKING_BUDGET_TOKENS)   # room for 1,023
        assert not any("thinking" in r for r in server.requests)
    assert "extended thinking not sent" in h["reasoning"]["note"]
    with pytest.raises(ConfigError, match="no Anthropic thinking budget"):
        make_agent("anthropic:m", api_key="x", reasoning_effort="turbo")


def _cli(*argv: str) -> dict:
    p = argparse.ArgumentParser()
    run_cli.register(p.add_subparsers())
    args = p.parse_args(["run", "--agent", "openai:scripted", "--scene", "s", "--out", "o", *argv])
    args.call_budget, args.image_budget = 6, 5
    return run_cli.vlm_options(args)


def test_the_flag_overrides_none_is_a_value_and_no_reasoning_effort_sends_nothing(tmp_path):
    assert _cli()["reasoning_effort"] == "xhigh"
    assert _cli("--reasoning-effort", "medium")["reasoning_effort"] == "medium"
    with ScriptedServer(capture_submit_finish) as server:
        options = {k: v for k, v in _cli("--no-reasoning-effort").items() if k not in ("base_url", "api_key")}
        _, h = _run(tmp_path, server, name="off", **options)
        assert len(server.requests) == 3 and not any("reasoning_effort" in r for r in server.requests)
    with ScriptedServer(capture_submit_finish) as server:
        options = {k: v for k, v in _cli("--reasoning-effort", "none").items() if k not in ("base_url", "api_key")}
        _run(tmp_path, server, name="none", **options)
        assert [r["reasoning_effort"] for r in server.requests] == ["none"] * 3
    assert h["reasoning_effort"] == "none sent" and h["reasoning"]["source"] == "none sent (--no-reasoning-effort)"
    with pytest.raises(CliError, match="contradict"):
        _cli("--reasoning-effort", "low", "--no-reasoning-effort")


def test_the_evaluation_report_says_the_effort_was_refused(tmp_path):
    from spatialscout_gym.eval.running.evaluate import EvalSettings, WorkerState, execute_task, plan_tasks
    from spatialscout_gym.eval.pages.report import write_report
    scene = tmp_path / "room.json"
    scene.write_text(small_scene(32, 32).to_json())
    out = tmp_path / "ev"
    with ScriptedServer(capture_submit_finish, refuse_params={"reasoning_effort"}) as server:
        settings = EvalSettings("openai:scripted", 4, None, 32, agent_options={"model_call_budget": 6},
                                runtime_options={"base_url": server.openai_url, "api_key": "x"})
        done = execute_task(plan_tasks(out, [str(scene)], 1)[0], WorkerState(settings, renderer_factory=FakeRenderer))
        assert len(server.refused_requests) == 1
    assert done.ok
    report = write_report(out)
    assert report.counters["reasoning_effort"] == "xhigh"
    assert report.counters["reasoning_effort_refused_episodes"] == 1
    assert "refused the effort parameter in 1 episode" in (out / "report.md").read_text()


def test_a_refused_effort_reaches_the_service_once_per_evaluation_across_workers(tmp_path):
    from spatialscout_gym.eval.running.evaluate import EvalSettings, evaluate
    from spatialscout_gym.eval.pages.leaderboard import build_leaderboard
    scenes = []
    for i in range(3):
        path = tmp_path / f"room_{i}.json"
        path.write_text(small_scene(32, 32, scene_id=f"room-{i}").to_json())
        scenes.append(str(path))
    out = tmp_path / "ev"
    with ScriptedServer(capture_submit_finish, refuse_params={"reasoning_effort"}) as server:
        settings = EvalSettings("openai:scripted", 4, None, 32, agent_options={"model_call_budget": 6},
                                runtime_options={"base_url": server.openai_url, "api_key": "x"})
        summary = evaluate(out, settings, scenes, workers=2, progress=False, renderer_factory=FakeRenderer)
        refused, answered = list(server.refused_requests), list(server.requests)
    assert summary.ran == 3 and not summary.failed
    assert len(refused) == 1                                   # once in the run, not once per episode
    assert len(answered) == 9 and not any("reasoning_effort" in r for r in answered)
    assert "reasoning_effort" in json.loads((out / "reasoning_effort.json").read_text())["refused"]
    for k in range(3):   # every episode records the refusal and that nothing was sent
        model = json.loads((out / f"room_{k}" / "seed_0" / "result.json").read_text())["model"]
        assert model["reasoning_effort_refused"] == ["reasoning_effort"] and model["reasoning_effort_sent"] == {}
    board = build_leaderboard([out])
    assert list(board["rows"]) == ["openai:scripted (xhigh refused, none sent)"]
    md = (out / "report.md").read_text()
    assert "| reasoning_effort_sent | xhigh refused, none sent |" in md
    # settings recorded as None are known values, not unknown ones
    assert "| image_history | all images |" in md and "| max_output_tokens | none sent |" in md
