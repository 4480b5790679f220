"""Models of different providers compare at one effort level (docs/models.md): what is compared
across providers is the level asked and whether it was honoured; the parameters each provider sends
for it are compared between runs of one provider and API only. Scripted servers on 127.0.0.1 with
the real openai and anthropic clients; fake pixels."""

from __future__ import annotations

from pathlib import Path

import pytest

from fakes import FakeRenderer
from spatialscout_gym.cli.main import main
from spatialscout_gym.eval.running.evaluate import evaluate
from spatialscout_gym.eval.running.tasks import EvalSettings
from spatialscout_gym.eval.settings_check import effort_outcome


def _policy(step: int, body: dict, fmt: str) -> list:
    msgs = body.get("messages") or body.get("input") or []
    k = sum(isinstance(m, dict) and m.get("role") == "assistant" for m in msgs)
    return [("capture_image", {})] if k == 0 else []


def _run(root: Path, name: str, provider: str, **server_options) -> Path:
    from vlm_scripted import ScriptedServer
    with ScriptedServer(_policy, **server_options) as server:
        url = server.anthropic_url if provider == "anthropic" else server.openai_url
        settings = EvalSettings(f"{provider}:scripted", 3, None, 32,
                                agent_options={"model_call_budget": 4, "reasoning_effort": "high"},
                                runtime_options={"base_url": url, "api_key": "local"})
        summary = evaluate(root / name, settings, ["procedural:8"], seeds=1, workers=1, progress=False,
                           renderer_factory=FakeRenderer, write_report=False)
    assert summary.total == 1 and not summary.failed
    return root / name


@pytest.fixture(scope="module")
def lab(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("providers")
    return {"chat": _run(root, "chat", "openai"), "claude": _run(root, "claude", "anthropic"),
            "responses": _run(root, "responses", "openai-responses"),
            "refused": _run(root, "refused", "openai", refuse_params={"reasoning_effort"})}


def test_the_effort_outcome_is_derived_from_the_record(lab):
    from spatialscout_gym.core.records import load_run_record
    outcome = {n: effort_outcome(load_run_record(d / "procedural_8" / "seed_0" / "result.json"))
               for n, d in lab.items()}
    assert outcome == {"chat": (True, "sent"), "claude": (True, "sent"), "responses": (True, "sent"),
                       "refused": (True, "refused")}


def test_three_providers_at_one_effort_level_compare_without_force(lab, capsys):
    capsys.readouterr()
    code = main(["compare", str(lab["chat"]), str(lab["claude"]), str(lab["responses"])])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "Forced comparison" not in out


def test_a_refused_effort_still_separates(lab, capsys):
    capsys.readouterr()
    code = main(["compare", str(lab["chat"]), str(lab["refused"])])
    err = capsys.readouterr().err
    assert code == 2 and "reasoning effort honoured differs" in err and "refused" in err, err


def test_the_wire_parameters_separate_runs_of_one_provider_and_api():
    from spatialscout_gym.eval.settings_check import Identity, comparability_problems

    def run(wire: str, sent: dict) -> Identity:
        return Identity("3.1", {"Kitchen_01": "h"}, ("model",), {"reasoning effort": "high",
                        "reasoning effort honoured": "sent", "reasoning effort sent": sent}, [], [], wire)
    budget_a = {"thinking": {"type": "enabled", "budget_tokens": 16000}}
    budget_b = {"thinking": {"type": "enabled", "budget_tokens": 32000}}
    same = comparability_problems({"a": run("anthropic/messages", budget_a), "b": run("anthropic/messages", budget_b)})
    assert len(same) == 1 and same[0].startswith("reasoning effort sent differs (between runs of anthropic/messages)")
    assert comparability_problems({"a": run("anthropic/messages", budget_a),
                                   "c": run("openai/chat_completions", {"reasoning_effort": "high"})}) == []
