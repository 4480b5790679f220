"""Rate limits survived (docs/models.md, "Rate limits"): a 429's ``Retry-After`` (seconds or an
HTTP-date) is waited before the request is sent again, a quota answered by many 429s is waited out
instead of failing the episode, each wait is recorded and reported, and a tokens-per-minute limit
holds across the workers of an evaluation (the server counts). Real ``openai`` client against the
scripted server on 127.0.0.1; the fake renderer keeps each episode well under a second. Waits are
checked as lower bounds only."""

from __future__ import annotations

import argparse
import json

import pytest

from fakes import FakeRenderer, small_scene
from vlm_scripted import ScriptedServer, capture_submit_finish
from spatialscout_gym.baselines.registry import make_agent
from spatialscout_gym.cli import run as run_cli
from spatialscout_gym.cli.errors import CliError
from spatialscout_gym.conversation.rate_limits import RateLimiter
from spatialscout_gym.eval.running.runner import run_episode


def _run(tmp_path, server, name="run", **options):
    spec = small_scene(32, 32)
    agent = make_agent("openai:scripted", base_url=server.openai_url, api_key="x",
                       **{"model_call_budget": 6, **options})
    return run_episode(agent, spec, tmp_path / name, renderer=FakeRenderer(spec), resolution=32, image_budget=5)


@pytest.mark.parametrize("header, at_least", [("429:2", 2.0), ("429:date:2", 1.9)])
def test_a_429_is_retried_no_earlier_than_its_retry_after(tmp_path, header, at_least):
    with ScriptedServer(capture_submit_finish, fail={1: header}) as server:
        result = _run(tmp_path, server)
        arrivals = list(server.arrivals)
    assert result["status"] == "ok" and len(arrivals) == 4
    assert arrivals[2] - arrivals[1] >= at_least          # the retry came after the asked wait
    m = result["model"]
    assert m["rate_limit_waits"] == 1 and m["waits"][0]["reason"] == "429 Retry-After"
    assert m["waits"][0]["call"] == 2 and m["rate_limit_wait_s"] >= at_least - 0.1


def test_a_quota_of_many_429s_is_waited_out_not_failed(tmp_path):
    # five 429s in a row: more than the 3 attempts a failure gets, and the episode still completes
    # (a 429 waits at least the first backoff: short here)
    with ScriptedServer(capture_submit_finish, fail={k: "429:0.05" for k in range(1, 6)}) as server:
        result = _run(tmp_path, server, attempts=3, backoff_s=[0.05, 0.1])
    m = result["model"]
    assert result["status"] == "ok" and result["end_reason"] == "finish_mapping"
    assert m["rate_limit_waits"] == 5 and m["http_attempts"] == 8 and m["model_calls"] == 3
    with ScriptedServer(capture_submit_finish, fail={k: "429:0.05" for k in range(1, 6)}) as server:
        failed = _run(tmp_path, server, name="no-patience", attempts=3, backoff_s=[0.05, 0.1], rate_limit_wait_s=0)
    assert failed["status"] == "failed" and "after 3 attempts" in failed["error"]


def test_a_tokens_per_minute_limit_holds_across_two_workers(tmp_path):
    from spatialscout_gym.eval.running.evaluate import EvalSettings, evaluate
    scenes = []
    for i in range(2):
        path = tmp_path / f"room_{i}.json"
        path.write_text(small_scene(32, 32, scene_id=f"room-{i}").to_json())
        scenes.append(str(path))
    window, limit = 2.0, 2200   # each answer counts 1,050 tokens or a few more: two fit in a window
    out = tmp_path / "ev"
    with ScriptedServer(capture_submit_finish) as server:
        settings = EvalSettings("openai:scripted", 4, None, 32,
                                agent_options={"model_call_budget": 6, "tokens_per_minute": limit,
                                               "rate_limit_window_s": window},
                                runtime_options={"base_url": server.openai_url, "api_key": "x"})
        summary = evaluate(out, settings, scenes, workers=2, progress=False, renderer_factory=FakeRenderer)
        answered = list(server.answered)
    assert summary.ran == 2 and not summary.failed and len(answered) == 6
    for t, _ in answered:   # every window the server sees holds at most the limit
        assert sum(n for u, n in answered if t - window < u <= t) <= limit
    models = [json.loads((out / f"room_{k}" / "seed_0" / "result.json").read_text())["model"] for k in range(2)]
    assert sum(m["rate_limit_waits"] for m in models) >= 1
    assert all(w["reason"] == "tokens per minute" for m in models for w in m["waits"])
    report = json.loads((out / "report.json").read_text())
    assert report["counters"]["rate_limit_waits"] == sum(m["rate_limit_waits"] for m in models)
    assert "Rate limits: the completed episodes waited" in (out / "report.md").read_text()


def test_the_limiter_counts_requests_and_settles_tokens():
    now = [0.0]
    slept: list[float] = []

    def sleep(s: float) -> None:
        slept.append(s)
        now[0] += s

    limiter = RateLimiter(requests_per_minute=2, window_s=60.0, sleep=sleep, clock=lambda: now[0])
    for _ in range(2):
        key, waits = limiter.acquire(10)
        limiter.settle(key, 10)
        assert waits == []
    _, waits = limiter.acquire(10)          # the third request waits for the first to leave the window
    assert [r for r, _ in waits] == ["requests per minute"] and now[0] >= 60.0


def _cli(*argv: str) -> dict:
    p = argparse.ArgumentParser()
    run_cli.register(p.add_subparsers())
    args = p.parse_args(["run", "--agent", "openai:scripted", "--scene", "s", "--out", "o", *argv])
    args.call_budget, args.image_budget = 6, 5
    return run_cli.vlm_options(args)


def test_the_request_policy_comes_from_the_cli_and_defaults_stay():
    assert not {"timeout_s", "attempts", "backoff_s", "rate_limit_wait_s"} & set(_cli())
    o = _cli("--timeout", "30", "--attempts", "5", "--rate-limit-wait", "60", "--rpm", "50", "--tpm", "90000")
    assert o["timeout_s"] == 30 and o["attempts"] == 5 and o["backoff_s"] == [1.0, 2.0, 4.0, 8.0]
    assert o["rate_limit_wait_s"] == 60 and o["requests_per_minute"] == 50 and o["tokens_per_minute"] == 90000
    agent = make_agent("openai:m", api_key="x", **{k: v for k, v in o.items() if k not in ("base_url", "api_key")})
    settings = agent.provider.settings()
    assert settings["timeout_s"] == 30 and settings["http_attempts_per_call"] == 5
    assert settings["requests_per_minute"] == 50 and settings["tokens_per_minute"] == 90000
    for bad in (["--attempts", "0"], ["--timeout", "0"], ["--rpm", "0"]):
        with pytest.raises(CliError):
            _cli(*bad)
