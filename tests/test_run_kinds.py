"""Every kind of run is a row of its own kind (docs/protocol.md section 9): an MCP client's run
(B counts tool calls) and a person's (``spatialscout play``) are compared by their harness
settings, never as reference rows, and an MCP episode whose client called no tool is failed.
An MCP run at B = 100 tool calls beside an ``evaluate`` run at B = 100 model calls (scripted
server on 127.0.0.1, the real openai client); fake pixels at 32 px."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fakes import FakeRenderer
from spatialscout_gym.cli.main import main
from spatialscout_gym.core.records import parse_run_record
from spatialscout_gym.eval.settings_check import _kind
from spatialscout_gym.scenes.catalog import scene_by_name

SCENE = "procedural:8"


def _mcp_run(out: Path, budget: int, calls: list[str]) -> dict:
    from spatialscout_gym.servers.mcp_server import McpEpisode
    spec = scene_by_name(SCENE)
    session = McpEpisode(spec, out, renderer=FakeRenderer(spec, 32, 32), resolution=32, image_budget=3,
                         tool_call_budget=budget)
    for name in calls:
        session.call(name, {})
    result = session.close()
    assert result is not None
    return result


def _human_run(out: Path, budget: int) -> dict:
    from spatialscout_gym.envs.session import EpisodeSession
    from spatialscout_gym.servers.viewer.play import PlayGame
    spec = scene_by_name(SCENE)
    with EpisodeSession(resolution=32, image_budget=3, tool_call_budget=budget,
                        renderer=FakeRenderer(spec, 32, 32)) as session:
        session.load(spec)
        game = PlayGame(session, out, "ada")
        game.call("capture_image", {})
        game.call("finish_mapping", {})
        assert game.written is not None
        return game.written


def _model_run(root: Path) -> Path:
    from vlm_scripted import ScriptedServer
    from spatialscout_gym.eval.running.evaluate import evaluate
    from spatialscout_gym.eval.running.tasks import EvalSettings

    def policy(step: int, body: dict, fmt: str) -> list:
        return [("capture_image", {})] if step == 0 else []
    with ScriptedServer(policy) as server:
        settings = EvalSettings("openai:scripted", 3, None, 32, agent_options={"model_call_budget": 100},
                                runtime_options={"base_url": server.openai_url, "api_key": "local"})
        summary = evaluate(root / "model", settings, [SCENE], seeds=1, workers=1, progress=False,
                           renderer_factory=FakeRenderer, write_report=False)
    assert summary.total == 1 and not summary.failed
    return root / "model"


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("kinds")
    out = {"model": _model_run(root)}
    for name, budget in (("mcp", 100), ("mcp_b50", 50)):
        _mcp_run(root / name, budget, ["capture_image", "finish_mapping"])
        out[name] = root / name
    _human_run(root / "human", 100)
    out["human"] = root / "human"
    return out


def _result(d: Path) -> dict:
    return json.loads(next(d.rglob("result.json")).read_text())


def test_the_kind_comes_from_the_record(runs):
    mcp, human = _result(runs["mcp"]), _result(runs["human"])
    assert mcp["harness"] == {"name": "mcp", "version": mcp["harness"]["version"], "budget_counts": "tool calls"}
    assert (_kind(parse_run_record(mcp)), _kind(parse_run_record(human)),
            _kind(parse_run_record(_result(runs["model"])))) == ("mcp", "human", "model")
    assert mcp["tool_call_budget"] == 100 and human["tool_call_budget"] == 100 and human["human"] is True


def test_an_mcp_run_at_b_100_tool_calls_is_not_compared_as_a_reference_row(runs, capsys):
    capsys.readouterr()
    assert main(["compare", str(runs["model"]), str(runs["mcp"])]) == 2
    err = capsys.readouterr().err
    assert "B counts differs" in err and "model: model calls" in err and "mcp: tool calls" in err, err
    assert main(["compare", str(runs["model"]), str(runs["mcp"]), "--force"]) == 0
    assert "B counts differs" in capsys.readouterr().out      # what --force let through, said


def test_beside_a_model_row_mcp_and_human_rows_are_listed_apart_and_ranked_among_themselves(runs, capsys):
    site = runs["model"].parent / "site"
    capsys.readouterr()
    assert main(["leaderboard", str(runs["model"]), str(runs["mcp"]), str(runs["human"]), "--out", str(site),
                 "--no-progress"]) == 0, capsys.readouterr().err
    printed = capsys.readouterr().out
    board = json.loads((site / "leaderboard.json").read_text())
    assert [r["dir"] for r in board["rows"].values()] == [str(runs["model"])]      # ranked alone
    apart = {r["dir"]: (r["kind"], r["reference"], r["rank"]["rank"]) for r in board["tool_rows"].values()}
    assert apart == {str(runs["mcp"]): ("mcp", False, 1), str(runs["human"]): ("human", False, 1)}
    assert board["problems"] == []
    page = (site / "leaderboard.md").read_text()
    assert "## MCP clients and people (B counts tool calls)" in page
    tables = page.split("## Table 3", 1)[1]
    assert "| mcp (mcp) |" in tables and "| human:ada (human) |" in tables and "(ref)" not in tables
    assert "MCP clients and people (B counts tool calls; ranked among themselves):" in printed
    # among themselves they are checked on the tool-call budget
    assert main(["leaderboard", str(runs["model"]), str(runs["mcp"]), str(runs["mcp_b50"]), "--out",
                 str(site / "b50"), "--no-progress"]) == 2
    assert "B (tool-call budget) differs" in capsys.readouterr().err


def test_mcp_and_human_runs_are_compared_by_their_tool_call_budget(runs, capsys):
    capsys.readouterr()
    assert main(["compare", str(runs["mcp"]), str(runs["mcp_b50"])]) == 2
    err = capsys.readouterr().err
    assert "B (tool-call budget) differs" in err and "mcp: 100" in err and "mcp_b50: 50" in err, err
    assert main(["compare", str(runs["mcp"]), str(runs["human"])]) == 0, capsys.readouterr().err


def test_an_mcp_episode_with_no_tool_call_is_failed(tmp_path):
    result = _mcp_run(tmp_path / "idle", 100, [])
    assert result["status"] == "failed" and result["error_type"] == "NoToolCall", result
    assert result["end_reason"] == "server_stopped" and "called no tool" in result["error"]
    assert not (tmp_path / "idle" / "predictions.json").exists()
