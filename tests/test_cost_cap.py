"""Cost before and during (docs/models.md, "Cost before and during"): ``evaluate --estimate`` prints
a range that contains the real spend of a scripted run without calling the model, and
``--max-cost-usd`` stops the evaluation once the spend reaches the cap: no episode starts after it,
the running one ends at its next request, recorded as failed (``CostCapReached``). Real ``openai``
client against the scripted server on 127.0.0.1; fake renderer."""

from __future__ import annotations

import json
import re

import pytest

from fakes import SCRIPTED_PRICES, FakeRenderer, small_scene, write_price_table
from vlm_scripted import ScriptedServer, capture_submit_finish
from spatialscout_gym.cli.main import main

PRICE = SCRIPTED_PRICES   # a call: about $0.012


def _scenes(tmp_path, n):
    out = []
    for i in range(n):
        path = tmp_path / f"room_{i}.json"
        path.write_text(small_scene(32, 32, scene_id=f"room-{i}").to_json())
        out.append(str(path))
    return out


def _args(tmp_path, server, scenes, out, *extra):
    prices = write_price_table(tmp_path)
    return ["evaluate", "--agent", "openai:scripted", "--base-url", server.openai_url, "--api-key", "x",
            "--scenes", *scenes, "--out", str(out), "--resolution", "32", "--image-budget", "4",
            "--call-budget", "6", "--price-table", str(prices), "--no-progress", *extra]


def _evaluate(tmp_path, server, scenes, out, **options):
    from spatialscout_gym.eval.running.evaluate import EvalSettings, evaluate
    prices = write_price_table(tmp_path)
    settings = EvalSettings("openai:scripted", 4, None, 32,
                            agent_options={"model_call_budget": 6, "price_table": str(prices), **options},
                            runtime_options={"base_url": server.openai_url, "api_key": "x"})
    return evaluate(out, settings, scenes, progress=False, renderer_factory=FakeRenderer)


def test_the_estimate_calls_nothing_and_contains_the_real_spend(tmp_path, capsys):
    scenes = _scenes(tmp_path, 2)
    with ScriptedServer(capture_submit_finish) as server:
        assert main(_args(tmp_path, server, scenes, tmp_path / "ev", "--estimate")) == 0
        assert server.http_requests == 0 and server.gets == []   # no model call, no endpoint check
        line = capsys.readouterr().out.strip().splitlines()[0]
        low, high = map(float, re.search(r"2 episodes, \$([0-9.]+) - \$([0-9.]+)", line).groups())
        _evaluate(tmp_path, server, scenes, tmp_path / "ev")
    spent = sum(json.loads((tmp_path / "ev" / f"room_{k}" / "seed_0" / "result.json").read_text())
                ["model"]["cost_usd"] for k in range(2))
    assert 0 < low <= spent <= high, (low, spent, high)


def test_the_cap_stops_at_the_stated_dollar_figure(tmp_path):
    scenes = _scenes(tmp_path, 3)
    out = tmp_path / "ev"
    cap = 0.045   # passed during the 4th call (about $0.012 each): the 2nd episode ends at its next request
    with ScriptedServer(capture_submit_finish) as server:
        summary = _evaluate(tmp_path, server, scenes, out, max_cost_usd=cap)
        calls = server.http_requests
    assert summary.cost_capped and summary.ran == 1
    spend = json.loads((out / "spend.json").read_text())["usd"]
    per_call = json.loads((out / "room_0" / "seed_0" / "result.json").read_text())["model"]["cost_usd"] / 3
    assert cap <= spend <= cap + per_call * 1.01 and calls == 4
    first = json.loads((out / "room_0" / "seed_0" / "result.json").read_text())
    second = json.loads((out / "room_1" / "seed_0" / "result.json").read_text())
    assert first["status"] == "ok" and second["status"] == "failed" and second["error_type"] == "CostCapReached"
    third = out / "room_2" / "seed_0" / "result.json"
    assert not third.exists() or json.loads(third.read_text())["model"]["model_calls"] == 0
    assert (out / "report.json").is_file()   # the report of what finished is written


def test_cached_input_is_recorded_and_priced_at_its_own_rate(tmp_path):
    from spatialscout_gym.baselines.registry import make_agent
    from spatialscout_gym.eval.running.runner import run_episode
    prices = write_price_table(tmp_path, {"scripted": {**PRICE["scripted"], "cached_input_per_mtok": 1.0}},
                               "cached.json")
    spec = small_scene(32, 32)
    with ScriptedServer(capture_submit_finish) as server:
        agent = make_agent("openai:scripted", base_url=server.openai_url, api_key="x", model_call_budget=6,
                           price_table=str(prices))
        result = run_episode(agent, spec, tmp_path / "r", renderer=FakeRenderer(spec), resolution=32, image_budget=4)
    m = result["model"]
    assert m["model_calls"] == 3 and m["cached_input_tokens"] == 1600   # calls 2 and 3: 800 each
    fresh = m["usage"]["input_tokens"] - 1600
    assert abs(m["cost_usd"] - (fresh * 10 + 1600 * 1 + m["usage"]["output_tokens"] * 40) / 1e6) < 1e-12


def test_anthropic_prompt_caching_is_sent_recorded_costed_and_verified(tmp_path):
    """Anthropic requests carry ``cache_control`` on the last block of the last two user turns (the
    conversation text is the same as without), the service's cache reads and writes are counted into
    the recorded input, priced at their own rates, and the run verifies."""
    from spatialscout_gym.conversation.codecs import anthropic_messages
    prices = write_price_table(tmp_path, {"scripted": {**PRICE["scripted"], "cached_input_per_mtok": 1.0,
                                                       "cache_write_per_mtok": 12.5}})
    out = tmp_path / "ev"
    with ScriptedServer(capture_submit_finish, models={"scripted": 4096}) as server:
        code = main(["evaluate", "--agent", "anthropic:scripted", "--base-url", server.anthropic_url,
                     "--api-key", "x", "--scenes", *_scenes(tmp_path, 1), "--out", str(out), "--resolution", "32",
                     "--image-budget", "4", "--call-budget", "6", "--price-table", str(prices), "--no-progress"])
        sent = server.requests
    assert code == 0 and len(sent) == 3
    for req in sent:
        users = [m for m in req["messages"] if m["role"] == "user"]
        marked = [(i, j) for i, m in enumerate(users) for j, b in enumerate(m["content"]) if "cache_control" in b]
        newest = range(max(0, len(users) - anthropic_messages.CACHE_BREAKPOINTS), len(users))
        assert marked == [(i, len(users[i]["content"]) - 1) for i in newest] and len(marked) <= 4
        assert all(users[i]["content"][-1]["cache_control"] == {"type": "ephemeral"} for i in newest)
    # the breakpoints change no text: without them the request is the same conversation
    strip = [{**m, "content": [{k: v for k, v in b.items() if k != "cache_control"} for b in m["content"]]}
             for m in sent[-1]["messages"]]
    assert "cache_control" not in json.dumps(strip) and len(strip) == len(sent[-1]["messages"])
    m = json.loads((out / "room_0" / "seed_0" / "result.json").read_text())["model"]
    assert m["usage"]["input_tokens"] == 1000 + 1001 + 1002   # the cached parts counted in, as OpenAI does
    assert m["cached_input_tokens"] == 1600 and m["cache_write_input_tokens"] == 900 + 100 + 100
    fresh = m["usage"]["input_tokens"] - 1600 - 1100
    assert abs(m["cost_usd"] - (fresh * 10 + 1600 * 1 + 1100 * 12.5 + m["usage"]["output_tokens"] * 40) / 1e6) < 1e-12
    assert main(["verify", str(out)]) == 0
    # a recorded cache figure edited up is caught by verify's cost check
    path = out / "room_0" / "seed_0" / "result.json"
    result = json.loads(path.read_text())
    result["model"]["cache_write_input_tokens"] = 0
    path.write_text(json.dumps(result))
    assert main(["verify", str(out)]) != 0


def test_request_cache_replays_are_not_spending(tmp_path):
    """The ledger counts live requests only: an episode lost before its record was written (as after
    a kill -9 between its calls and its run directory's rename) is rerun from the request cache on
    resume, with no request and no charge, so ``spend.json`` stays the cost of the calls the server
    answered, and the rerun's record says its calls were replayed and cost nothing incurred."""
    import shutil

    from spatialscout_gym.conversation.spend import read_spend
    from spatialscout_gym.eval.running.evaluate import EvalSettings, evaluate
    scenes, out = _scenes(tmp_path, 1), tmp_path / "ev"

    def run(server):   # one scene, two seeds: the request cache keeps each seed's calls apart
        settings = EvalSettings("openai:scripted", 4, None, 32, agent_options={
            "model_call_budget": 6, "price_table": str(write_price_table(tmp_path)), "max_cost_usd": 10.0,
            "request_cache": str(tmp_path / "cache")}, runtime_options={"base_url": server.openai_url, "api_key": "x"})
        return evaluate(out, settings, scenes, seeds=2, progress=False, renderer_factory=FakeRenderer)

    def model(k: int) -> dict:
        return json.loads((out / "room_0" / f"seed_{k}" / "result.json").read_text())["model"]

    with ScriptedServer(capture_submit_finish) as server:
        run(server)
        answered = server.http_requests
        before = [model(k) for k in range(2)]
        spent = read_spend(out / "spend.json")
        assert answered == sum(m["model_calls"] for m in before)
        assert all(m["cost_incurred_usd"] == m["cost_usd"] > 0 for m in before)     # every call was live
        assert spent == pytest.approx(sum(m["cost_usd"] for m in before), rel=1e-12)
        shutil.rmtree(out / "room_0" / "seed_1")
        again = run(server)
        assert server.http_requests == answered           # the rerun was answered from the cache alone
    assert again.ran == 1 and not again.failed
    rerun = model(1)
    assert rerun["request_cache"] == {"cached_calls": before[1]["model_calls"], "live_calls": 0}
    assert rerun["cost_incurred_usd"] == 0 and rerun["cost_usd"] == before[1]["cost_usd"]
    assert read_spend(out / "spend.json") == spent        # replays are not spending
