"""What a page or ``compare`` shows of a model run is what ``verify`` checked: a setting, name,
harness or attempt number edited in one file (``result.json`` or ``evaluate.json``) makes
``verify`` fail at that episode with a one-line reason; ``prompt.txt`` is compared exactly with
the prompt the harness sends for the recorded style; a cost verifies only with its price table,
read with the bytes recorded. One honest scripted-model evaluation (two procedural scenes, V = 3,
32 px) is built once, each test edits a copy. Real ``openai`` client, scripted server on
127.0.0.1, the fake renderer."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Callable

import pytest

from fakes import FakeRenderer
from vlm_scripted import ScriptedServer, capture_finish
from spatialscout_gym.cli.main import main
from spatialscout_gym.eval.running.evaluate import EvalSettings, evaluate

EP1, EP2 = "procedural_1/seed_0", "procedural_2/seed_0"


@pytest.fixture(scope="module")
def honest(tmp_path_factory):
    d = tmp_path_factory.mktemp("settings-tamper") / "honest"
    with ScriptedServer(capture_finish) as server:
        settings = EvalSettings("openai:scripted", 3, None, 32,
                                agent_options={"model_call_budget": 6, "prompt_style": "appendix-a",
                                               "reasoning_effort": "xhigh", "mode": "active"},
                                runtime_options={"base_url": server.openai_url, "api_key": "local"})
        summary = evaluate(d, settings, ["procedural:1", "procedural:2"], progress=False,
                           renderer_factory=FakeRenderer)
    assert summary.total == 2 and not summary.failed
    for name in ("report.json", "report.md", "verify.json", ".evaluate.lock"):
        (d / name).unlink(missing_ok=True)
    return d


def _edit_json(path: Path, fn: Callable[[dict], object]) -> None:
    obj = json.loads(path.read_text())
    fn(obj)
    path.write_text(json.dumps(obj, indent=2))


def _result(fn):
    return lambda d: _edit_json(d / EP1 / "result.json", fn)


EDITS = {
    "effort": (_result(lambda r: r["model"].update(reasoning_effort="medium")),
               "in result.json: model.reasoning_effort, recorded \"medium\""),
    "effort-sent": (_result(lambda r: r["model"].update(reasoning_effort_sent={})),
                    "in result.json: model.reasoning_effort_sent"),
    "image-history": (_result(lambda r: r["model"].update(image_history=2)), "in result.json: model.image_history"),
    "harness": (_result(lambda r: r.update(harness={"name": "inspect_ai", "version": "0.3.99"})),
                "in result.json: harness"),
    "model-name": (_result(lambda r: r["model"].update(name="gpt-x")), "in result.json: model.name"),
    "attempt": (_result(lambda r: r.update(attempt=2)), "in result.json: attempt, recorded 2"),
    "cost-without-prices": (_result(lambda r: r["model"].update(cost_usd=0.5)),
                            "model.cost_usd, recorded 0.5 without a price table"),
    "prompt-style": (lambda d: _edit_json(d / "evaluate.json", lambda s: s["agent_options"].update(
        prompt_style="detailed")), "in evaluate.json: agent_options.prompt_style"),
    "prompt-hint": (lambda d: (d / EP1 / "prompt.txt").write_text(
        (d / EP1 / "prompt.txt").read_text() + "Hint: the chair is at the origin.\n"),
        "in prompt.txt: line"),
}


def _verify(d: Path, capsys) -> tuple[int, dict]:
    capsys.readouterr()
    code = main(["verify", str(d), "--json"])
    out = capsys.readouterr()
    assert "Traceback" not in out.err + out.out
    return code, {e["episode"]: e for e in json.loads(out.out)["dirs"][str(d)]}


def test_the_honest_run_verifies(honest, capsys):
    code, eps = _verify(honest, capsys)
    assert code == 0 and {e["status"] for e in eps.values()} == {"verified"}, eps


@pytest.mark.parametrize("name", sorted(EDITS))
def test_an_edit_in_one_file_fails_verify_at_its_episode(honest, tmp_path, capsys, name):
    d = tmp_path / "copy"
    shutil.copytree(honest, d)
    edit, reason = EDITS[name]
    edit(d)
    code, eps = _verify(d, capsys)
    assert code == 1
    where = [eps[EP1]] if name != "prompt-style" else list(eps.values())
    for e in where:
        assert e["status"] == "diverged" and reason in e["detail"], e["detail"]
        assert "\n" not in e["detail"]
    if name != "prompt-style":
        assert eps[EP2]["status"] == "verified"


def test_a_cost_verifies_with_its_price_table_and_not_with_another(tmp_path, capsys, monkeypatch):
    prices = tmp_path / "prices.json"
    prices.write_text(json.dumps({"scripted": {"input_per_mtok": 1.0, "output_per_mtok": 2.0}}))
    out = tmp_path / "priced"
    with ScriptedServer(capture_finish) as server:
        assert main(["evaluate", "--agent", "openai:scripted", "--base-url", server.openai_url, "--api-key", "x",
                     "--scenes", "procedural:1", "--out", str(out), "--resolution", "32", "--image-budget", "3",
                     "--call-budget", "4", "--no-progress", "--price-table", str(prices)]) == 0
    settings = json.loads((out / "evaluate.json").read_text())
    assert len(settings["agent_options"]["price_table_sha256"]) == 64
    code, eps = _verify(out, capsys)
    assert code == 0 and {e["status"] for e in eps.values()} == {"verified"}
    assert settings["agent_options"]["price_table"] == "price_table.json"     # the evaluation's own copy
    prices.write_text(json.dumps({"scripted": {"input_per_mtok": 9.0, "output_per_mtok": 9.0}}))   # the user's file:
    code, eps = _verify(out, capsys)                                                            # not what verify reads
    assert code == 0
    (out / "price_table.json").write_text(prices.read_text())          # another table in the copy's place
    monkeypatch.setenv("SPATIALSCOUT_VERIFY_CACHE", str(tmp_path / "fresh-verdicts"))   # no verdict kept from before
    code, eps = _verify(out, capsys)
    assert code == 1 and "without a price table" in eps[EP1]["detail"]
