"""Which recorded episodes are one episode (docs/verify.md): a deterministic model's scene is
``repeated`` (verified, counted once), a seed copied over some others is ``diverged`` for every copy,
and one scene under two folder names is refused, for reference runs too. Scripted model on
127.0.0.1, fake pixels."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from fakes import FakeRenderer
from spatialscout_gym.cli.main import main
from spatialscout_gym.eval.pages.report import build_report
from spatialscout_gym.eval.running.evaluate import evaluate
from spatialscout_gym.eval.running.tasks import EvalSettings


def _deterministic(step: int, body: dict, fmt: str) -> list:
    k = sum(m["role"] == "assistant" for m in body["messages"])     # the same replies on every seed
    return [("capture_image", {})] if k == 0 else [("list_entities", {})] if k == 1 else []


@pytest.fixture(scope="module")
def three_seeds(tmp_path_factory) -> Path:
    from vlm_scripted import ScriptedServer
    d = tmp_path_factory.mktemp("identity") / "det"
    with ScriptedServer(_deterministic) as server:
        settings = EvalSettings("openai:scripted", 3, None, 32, agent_options={"model_call_budget": 4},
                                runtime_options={"base_url": server.openai_url, "api_key": "local"})
        summary = evaluate(d, settings, ["procedural:4"], seeds=3, workers=1, progress=False,
                           renderer_factory=FakeRenderer, write_report=False)
    assert summary.total == 3 and not summary.failed
    return d


@pytest.fixture(scope="module")
def reference(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("identity") / "ref"
    summary = evaluate(d, EvalSettings("origin", 3, 6, 32), ["procedural:4", "procedural:5"], seeds=1, workers=1,
                       progress=False, renderer_factory=FakeRenderer, write_report=False)
    assert summary.total == 2 and not summary.failed
    return d


def _verify(d: Path, capsys) -> tuple[int, dict, str]:
    capsys.readouterr()
    code = main(["verify", str(d), "--json", "--no-cache"])
    out = capsys.readouterr().out
    return code, {e["episode"]: e for e in json.loads(out)["dirs"][str(d)]}, out


def _copy(src: Path, tmp_path: Path) -> Path:
    d = tmp_path / "copy"
    shutil.copytree(src, d)
    return d


def test_a_deterministic_model_over_three_seeds_is_repeated_and_counts_once(three_seeds, capsys):
    code, eps, _ = _verify(three_seeds, capsys)
    assert code == 0 and {e["status"] for e in eps.values()} == {"repeated"}, eps
    report = build_report(three_seeds)
    assert report.episodes.completed == 1, report.episodes      # one conversation, one episode
    capsys.readouterr()
    assert main(["verify", str(three_seeds), "--no-cache", "--no-progress"]) == 0
    assert "3 repeated" in capsys.readouterr().out


def test_a_seed_copied_over_another_with_its_usage_changed_is_diverged_for_both(three_seeds, tmp_path, capsys):
    d = _copy(three_seeds, tmp_path)
    # seed 1 made different (one reply's text), then seed 0 copied over seed 2 with one usage count changed
    t1 = d / "procedural_4" / "seed_1" / "trace.jsonl"
    events = [json.loads(x) for x in t1.read_text().splitlines()]
    next(e for e in events if e["event"] == "model_response")["text"] = "something else"
    t1.write_text("".join(json.dumps(e) + "\n" for e in events))
    shutil.rmtree(d / "procedural_4" / "seed_2")
    shutil.copytree(d / "procedural_4" / "seed_0", d / "procedural_4" / "seed_2")
    t2, r2 = d / "procedural_4" / "seed_2" / "trace.jsonl", d / "procedural_4" / "seed_2" / "result.json"
    events = [json.loads(x) for x in t2.read_text().splitlines()]
    for e in events:
        if e["event"] == "start":
            e["seed"] = 2
    next(e for e in events if e["event"] == "model_response")["usage"]["output_tokens"] += 1
    t2.write_text("".join(json.dumps(e) + "\n" for e in events))
    res = json.loads(r2.read_text())
    res["seed"] = 2
    res["model"]["usage"]["output_tokens"] += 1
    r2.write_text(json.dumps(res))
    code, eps, _ = _verify(d, capsys)
    assert code == 1
    for key, other in (("procedural_4/seed_0", "procedural_4/seed_2"), ("procedural_4/seed_2", "procedural_4/seed_0")):
        assert eps[key]["status"] == "diverged", eps[key]
    assert "the same conversation as procedural_4/seed_2" in eps["procedural_4/seed_0"]["detail"]


def test_one_scene_under_two_folder_names_is_refused_for_a_reference_agent(reference, tmp_path, capsys):
    # a look-alike scene folder (a full-width digit) planned and mapped to the same scene: reference
    # traces carry no clock, so only the scene they hold tells the copy
    d = _copy(reference, tmp_path)
    twin = "procedural_\uff14"
    shutil.copytree(d / "procedural_4", d / twin)
    scenes = json.loads((d / "scenes.json").read_text())
    (d / "scenes.json").write_text(json.dumps({**scenes, twin: scenes["procedural_4"]}))
    planned = json.loads((d / "planned.json").read_text())
    (d / "planned.json").write_text(json.dumps({"episodes": [*planned["episodes"], f"{twin}/seed_0"]}))
    code, eps, _ = _verify(d, capsys)
    assert code == 1, eps
    for key in ("procedural_4/seed_0", f"{twin}/seed_0"):
        assert eps[key]["status"] == "refused" and "hold one scene" in eps[key]["detail"], eps[key]
    assert eps["procedural_5/seed_0"]["status"] == "verified"


def test_compare_shows_each_runs_verified_mark(reference, tmp_path, capsys):
    # an honest run beside one whose record was edited: compare says which is which
    forged = _copy(reference, tmp_path)
    res_path = forged / "procedural_4" / "seed_0" / "result.json"
    res = json.loads(res_path.read_text())
    res["full_scene_loss_m"] = 0.0
    res_path.write_text(json.dumps(res))
    capsys.readouterr()
    code = main(["compare", str(reference), str(forged)])
    out = capsys.readouterr().out
    assert code == 0, out
    assert f"| {reference.name} | **verified** |" in out and f"| {forged.name} | **diverged** |" in out, out

