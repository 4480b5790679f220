"""A service's ``Retry-After`` cannot make a call flood it or hang (docs/models.md, "Rate limits"):
a value of 0, negative, not a number, not finite or a date in the past waits at least the backoff;
every 429 wait counts against ``rate_limit_wait_s``; a ``Retry-After`` (429 or 503) longer than what
is left of it is not slept and the call fails in one line; nothing non-finite reaches result.json.
Real ``openai`` client against the scripted server on 127.0.0.1 counting the requests; sleeps are
recorded, not made (except in the CLI test, which waits a few seconds of backoff)."""

from __future__ import annotations

import json

import pytest

from fakes import FakeRenderer, small_scene
from vlm_scripted import ScriptedServer, capture_submit_finish
from spatialscout_gym.baselines.registry import make_agent
from spatialscout_gym.cli.main import main
from spatialscout_gym.eval.running.runner import run_episode

FLOOD = 60
"""Requests answered with the scripted failure; later ones are answered normally, so that code that
resends at once ends (with far too many requests) instead of hanging the test."""


def _strict(path) -> dict:
    def refuse(name: str) -> None:
        raise AssertionError(f"{path} holds {name}")
    return json.loads(path.read_text(), parse_constant=refuse)


def _run(tmp_path, server, slept: list[float], **options):
    spec = small_scene(32, 32)
    agent = make_agent("openai:scripted", base_url=server.openai_url, api_key="x", model_call_budget=6,
                       sleep=slept.append, **options)
    return run_episode(agent, spec, tmp_path / "run", renderer=FakeRenderer(spec), resolution=32, image_budget=5)


@pytest.mark.parametrize("after", ["0", "-5", "nan", "inf", "-inf", "soon", "date:-100"])
def test_a_retry_after_asking_for_no_wait_waits_the_backoff_within_the_budget(tmp_path, after):
    slept: list[float] = []
    with ScriptedServer(capture_submit_finish, fail={k: f"429:{after}" for k in range(FLOOD)}) as server:
        result = _run(tmp_path, server, slept, attempts=2, backoff_s=[1.0], rate_limit_wait_s=3.0)
        sent = server.http_requests
    assert result["status"] == "failed" and "after 2 attempts" in result["error"]
    assert sent <= 12, sent                              # not a flood: 3 s of budget at >= 1 s a wait
    assert slept and min(slept) >= 1.0                   # never resent at once
    m = _strict(tmp_path / "run" / "result.json")["model"]
    assert m["rate_limit_wait_s"] <= 3.0 and all(w["seconds"] >= 1.0 for w in m["waits"])


@pytest.mark.parametrize("status", ["429", "503"])
@pytest.mark.parametrize("after", ["100000", "1e9"])
def test_a_retry_after_past_the_budget_is_not_slept_and_fails_the_call_in_one_line(tmp_path, status, after):
    slept: list[float] = []
    with ScriptedServer(capture_submit_finish, fail={k: f"{status}:{after}" for k in range(FLOOD)}) as server:
        result = _run(tmp_path, server, slept, attempts=3, rate_limit_wait_s=900.0)
        sent = server.http_requests
    assert result["status"] == "failed" and sent == 1
    assert all(s <= 900.0 for s in slept), slept       # never the asked wait
    error = result["error"]
    assert "\n" not in error and "--rate-limit-wait" in error and "not waited" in error
    _strict(tmp_path / "run" / "result.json")


def test_a_retry_after_within_the_budget_is_still_waited(tmp_path):
    slept: list[float] = []
    with ScriptedServer(capture_submit_finish, fail={1: "503:30", 2: "429:40"}) as server:
        result = _run(tmp_path, server, slept, attempts=3, rate_limit_wait_s=900.0)
    assert result["status"] == "ok" and slept == [30.0, 40.0]
    reasons = [w["reason"] for w in result["model"]["waits"]]
    assert reasons == ["Retry-After", "429 Retry-After"]


def test_every_wait_of_a_call_counts_against_the_budget(tmp_path):
    # a 503's asked wait spends the budget too: the 429 after it no longer fits and the attempt counts
    slept: list[float] = []
    with ScriptedServer(capture_submit_finish, fail={0: "503:5", 1: "429:5", 2: "429:5"}) as server:
        result = _run(tmp_path, server, slept, attempts=2, backoff_s=[1.0], rate_limit_wait_s=6.0)
        sent = server.http_requests
    assert result["status"] == "failed" and sent == 2 and slept == [5.0]


@pytest.mark.render
def test_run_against_a_service_answering_429_retry_after_0_fails_in_one_line(tmp_path, capsys):
    spec = tmp_path / "scene.json"
    spec.write_text(small_scene(32, 32).to_json())
    with ScriptedServer(capture_submit_finish, fail={k: "429:0" for k in range(FLOOD)}) as server:
        code = main(["run", "--agent", "openai:scripted", "--base-url", server.openai_url, "--api-key", "x",
                     "--scene", str(spec), "--out", str(tmp_path / "run"), "--resolution", "32",
                     "--image-budget", "2", "--call-budget", "2",
                     "--rate-limit-wait", "3", "--backoff", "1", "--attempts", "2"])
        sent = server.http_requests
    out = capsys.readouterr().out
    failed = [line for line in out.splitlines() if line.startswith("episode FAILED")]
    assert code == 1 and sent <= 12, (code, sent)
    assert len(failed) == 1 and "after 2 attempts" in failed[0]
