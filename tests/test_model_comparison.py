"""The last step of a model evaluation: two evaluations made with the same ``spatialscout
evaluate --agent openai:MODEL`` command compare, and one ranks on a leaderboard, with no
``--force`` and the row verified; a key of ``evaluate.json`` this version does not know (as one
written by another version) refuses, naming it. The keys ``evaluate`` may write are the fields of
the dataclasses that write them. Real ``openai`` client against a scripted server on 127.0.0.1,
SAPIEN at 32 px."""

from __future__ import annotations

import json
import shutil

import pytest

from vlm_scripted import ScriptedServer, capture_finish
from spatialscout_gym.cli.main import main
from spatialscout_gym.eval.running.tasks import AgentOptions, EvalSettings, agent_option_keys
from spatialscout_gym.eval.settings_check import KNOWN_AGENT_OPTIONS, KNOWN_EVALUATE_KEYS


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory):
    """Two evaluations by the same command (the defaults: effort xhigh, its source the default)."""
    tmp = tmp_path_factory.mktemp("modelcmp")
    with ScriptedServer(capture_finish) as server:
        for name in ("a", "b"):
            rc = main(["evaluate", "--agent", "openai:scripted", "--base-url", server.openai_url, "--api-key", "x",
                       "--scenes", "procedural:11", "--out", str(tmp / name), "--resolution", "32",
                       "--image-budget", "3", "--call-budget", "4", "--no-progress"])
            assert rc == 0
    return tmp


def test_two_runs_of_one_command_compare_and_rank_without_force(two_runs, tmp_path, capsys):
    written = json.loads((two_runs / "a" / "evaluate.json").read_text())
    assert written["agent_options"]["reasoning_effort_source"]          # the key that once refused
    capsys.readouterr()
    assert main(["compare", str(two_runs / "a"), str(two_runs / "b")]) == 0
    out = capsys.readouterr().out
    assert "Forced" not in out and "Comparison" in out
    assert main(["leaderboard", str(two_runs / "a"), "--out", str(tmp_path / "site"), "--no-progress"]) == 0
    board = json.loads((tmp_path / "site" / "leaderboard.json").read_text())
    assert board["problems"] == [] and [r["verified"] for r in board["rows"].values()] == ["verified"]


def test_an_unknown_key_written_into_evaluate_json_refuses_naming_it(two_runs, tmp_path, capsys):
    b = tmp_path / "b"
    shutil.copytree(two_runs / "b", b)
    settings = json.loads((b / "evaluate.json").read_text())
    settings["agent_options"]["temperature"] = 0.7                    # as another version would write it
    (b / "evaluate.json").write_text(json.dumps(settings))
    capsys.readouterr()
    assert main(["compare", str(two_runs / "a"), str(b)]) == 2
    err = capsys.readouterr().err
    assert "unknown setting (evaluate.json agent option 'temperature')" in err and "Traceback" not in err
    assert main(["leaderboard", str(b), "--out", str(tmp_path / "site"), "--no-progress"]) == 2
    assert "agent option 'temperature'" in capsys.readouterr().err


def test_the_known_keys_are_the_fields_of_the_writers():
    assert KNOWN_EVALUATE_KEYS == set(EvalSettings("origin").to_dict()) | {"agent_options"}
    assert KNOWN_AGENT_OPTIONS == agent_option_keys() == set(AgentOptions.__dataclass_fields__)
    with pytest.raises(ValueError, match="temperature"):      # evaluate cannot write a key no reader knows
        EvalSettings("openai:m", agent_options={"temperature": 0.7}).to_dict()
