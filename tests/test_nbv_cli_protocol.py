"""``spatialscout run/evaluate`` run the NBV agents under the protocol of the README's NBV tables
(V = 20, 64 px, no tool-call cap, as ``benchmarks/nbv_results.py``) unless told otherwise, and
``--call-budget none`` says "no tool-call cap" (refused for model agents, whose B counts model calls)."""

from __future__ import annotations

import json

import pytest

from spatialscout_gym.cli.errors import CliError
from spatialscout_gym.cli.main import build_parser, main
from spatialscout_gym.cli.options import check_episode_options
from spatialscout_gym.nbv.policy_files import SHIPPED_POLICY

SHIPPED = SHIPPED_POLICY / "model.zip"


def settings(*argv: str) -> tuple:
    args = build_parser().parse_args(["evaluate", "--scenes", "procedural:1", "--out", "/nowhere", *argv])
    check_episode_options(args)
    return args.image_budget, args.resolution, args.call_budget


@pytest.mark.parametrize("agent", ["random-nbv", "frontier-nbv"])
def test_nbv_agents_default_to_the_nbv_tables_protocol(agent):
    assert settings("--agent", agent) == (20, 64, None)
    assert settings("--agent", agent, "--call-budget", "300", "--image-budget", "40") == (40, 64, 300)


def test_a_policy_keeps_its_training_settings_and_gets_no_cap():
    assert settings("--agent", f"ppo:{SHIPPED}") == (20, 64, None)


def test_other_agents_keep_the_paper_protocol_and_can_drop_the_cap():
    assert settings("--agent", "origin") == (100, 512, 100)
    assert settings("--agent", "origin", "--call-budget", "none") == (100, 512, None)
    assert settings("--agent", "oracle-explorer", "--call-budget", "Unlimited")[2] is None


def test_no_cap_is_refused_for_model_agents_and_bad_values_in_one_line(tmp_path, capsys):
    with pytest.raises(CliError, match="not allowed for model agents"):
        settings("--agent", "openai:gpt-x", "--call-budget", "none")
    assert settings("--agent", "openai:gpt-x")[2] == 100
    with pytest.raises(CliError, match="must be >= 1 or 'none'"):
        settings("--agent", "random-nbv", "--call-budget", "0")
    with pytest.raises(SystemExit) as exc:
        main(["run", "--agent", "origin", "--scene", "procedural:1", "--out", str(tmp_path / "r"),
              "--call-budget", "lots"])
    err = capsys.readouterr().err
    assert exc.value.code == 2 and "expected an integer or 'none'" in err


@pytest.mark.render
def test_evaluate_the_shipped_policy_reproduces_the_tables_protocol(tmp_path):
    out = tmp_path / "e"
    assert main(["evaluate", "--agent", f"ppo:{SHIPPED}", "--scenes", "procedural:1", "--out", str(out),
                 "--no-progress"]) == 0
    saved = json.loads((out / "evaluate.json").read_text())
    assert (saved["image_budget"], saved["resolution"], saved["tool_call_budget"]) == (20, 64, None)
    result = json.loads(next(out.glob("*/seed_0/result.json")).read_text())
    assert result["tool_call_budget"] is None and result["end_reason"] == "finish_mapping"
    frames = len(list(next(out.glob("*/seed_0")).glob("frames/*.png")))
    # every image of V = 20, unless every target is mapped sooner (the NBV episode then ends)
    assert frames == result["counters"]["images_used"]
    assert frames == 20 or (result["coverage"] == 1.0 and frames < 20)
