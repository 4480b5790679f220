"""What a user stumbled on, each fixed: ``--force`` prints plain text (no HTML escapes) in the
terminal and in ``leaderboard.md``; an evaluation whose every episode failed writes a report of
its failures and ``report DIR`` over it works; ``anthropic:`` with a base URL given with or
without ``/v1`` requests ``/v1/messages``, never ``/v1/v1/...``; the viewer prints scores in
percent and a prompt as readable text; the viewer's page shows the settings record. Real
``openai``/``anthropic`` clients against a scripted server on 127.0.0.1, the fake renderer at
32 px."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from fakes import FakeRenderer, small_scene
from vlm_scripted import ScriptedServer
from spatialscout_gym.baselines.registry import make_agent
from spatialscout_gym.cli.main import main
from spatialscout_gym.eval.running.evaluate import EvalSettings, evaluate
from spatialscout_gym.eval.running.runner import run_episode


def _scenes(tmp, n=2):
    out = []
    for k in range(n):
        p = tmp / f"fake-{k}.json"
        p.write_text(small_scene(32, 32, yaw_deg=20.0 + 25 * k, scene_id=f"fake-{k}").to_json())
        out.append(str(p))
    return out


def test_force_prints_plain_text_in_the_terminal_and_in_leaderboard_md(tmp_path, capsys):
    scenes = _scenes(tmp_path)
    for name in ("a", "b"):
        evaluate(tmp_path / name, EvalSettings("origin", 5, 20, 32), scenes, progress=False,
                 renderer_factory=FakeRenderer)
    settings = json.loads((tmp_path / "b" / "evaluate.json").read_text())
    settings["frame_skip"] = 2                                        # a key this version does not know
    (tmp_path / "b" / "evaluate.json").write_text(json.dumps(settings))
    capsys.readouterr()
    assert main(["compare", str(tmp_path / "a"), str(tmp_path / "b"), "--force"]) == 0
    out = capsys.readouterr().out
    assert "evaluate.json key 'frame_skip'" in out and "&#x27;" not in out and "&quot;" not in out
    site = tmp_path / "site"
    assert main(["leaderboard", str(tmp_path / "a"), str(tmp_path / "b"), "--out", str(site), "--no-progress",
                 "--force"]) == 0
    out = capsys.readouterr().out
    assert "forced (--force): " in out and "'frame_skip'" in out and "&#x27;" not in out
    board_md = (site / "leaderboard.md").read_text()
    assert "'frame_skip'" in board_md and "&#x27;" not in board_md


def test_an_all_failed_evaluation_writes_a_report_and_report_dir_shows_the_failures(tmp_path, capsys, monkeypatch):
    import spatialscout_gym.conversation.providers as providers
    monkeypatch.setattr(providers.time, "sleep", lambda s: None)     # no real backoff waits
    out = tmp_path / "ev"
    with ScriptedServer(lambda step, body, fmt: [], fail={i: "500" for i in range(100)}) as server:
        summary = evaluate(out, EvalSettings("openai:scripted", 5, None, 32, agent_options={"model_call_budget": 4},
                                             runtime_options={"base_url": server.openai_url, "api_key": "x"}),
                           _scenes(tmp_path), progress=False, renderer_factory=FakeRenderer)
    assert len(summary.failed) == 2 and summary.report is not None
    report = json.loads((out / "report.json").read_text())
    assert report["object_micro"] is None and len(report["failures"]) == 2
    assert report["episodes"]["failed"] == 2 and report["episodes"]["completed"] == 0
    assert "No episode completed" in (out / "report.md").read_text()
    capsys.readouterr()
    assert main(["report", str(out), "--no-figures"]) == 0
    assert "holds no finished run" not in capsys.readouterr().err
    page = (out / "index.html").read_text()
    assert "No episode completed" in page and "fake-0/seed_0" in page and "fake-1/seed_0" in page


@pytest.mark.parametrize("suffix", ["", "/", "/v1", "/v1/"])
def test_anthropic_base_url_with_or_without_v1(tmp_path, suffix):
    spec = small_scene(32, 32)
    with ScriptedServer(lambda step, body, fmt: [[("capture_image", {})], [("finish_mapping", {})]][min(step, 1)],
                        models={"scripted": 4096}) as server:
        agent = make_agent("anthropic:scripted", base_url=server.anthropic_url + suffix, api_key="x",
                           model_call_budget=4)
        result = run_episode(agent, spec, tmp_path / "run", renderer=FakeRenderer(spec), resolution=32,
                             image_budget=3)
        posts, gets = list(server.posts), list(server.gets)
    assert result["status"] == "ok"
    assert posts and set(posts) == {"/v1/messages"}                    # never /v1/v1/messages
    assert gets == ["/v1/models/scripted"]                             # the Models API lookup, once


def _node(script: str) -> str:
    node = shutil.which("node")
    if node is None:
        pytest.skip("no node to run the viewer's script")
    common = Path(__file__).resolve().parents[1] / "spatialscout_gym" / "servers" / "viewer" / "static" / "common.js"
    js = f"eval(require('fs').readFileSync({json.dumps(str(common))}, 'utf8') + ';globalThis.SS = SS;');" + script
    return subprocess.run([node, "-e", js], capture_output=True, text=True, check=True).stdout


def test_the_viewer_prints_percent_and_a_readable_prompt():
    assert _node("console.log(SS.pct(0.23333))").strip() == "23.33%"
    text = _node("console.log(SS.readable({messages: [{role: 'user', content: 'Line one.\\nLine two.'}]}))")
    assert "\\n" not in text and "Line one.\n" in text and "Line two." in text
    assert "{" not in text                                           # not JSON
    view = (Path(__file__).resolve().parents[1] / "spatialscout_gym" / "servers" / "viewer" / "static" /
            "view.js").read_text()
    assert "SS.fmt(all.mean_iou)" not in view and "SS.pct(all.mean_iou)" in view and "SS.readable(show)" in view


def test_the_viewer_payload_shows_the_settings_record(tmp_path):
    from spatialscout_gym.servers.viewer.data import run_payload
    spec = small_scene(32, 32)
    with ScriptedServer(lambda step, body, fmt: [("finish_mapping", {})]) as server:
        agent = make_agent("openai:scripted", base_url=server.openai_url, api_key="x", model_call_budget=4,
                           image_history=2)
        run_episode(agent, spec, tmp_path / "run", renderer=FakeRenderer(spec), resolution=32, image_budget=3)
    shown = run_payload(tmp_path / "run")["settings"]
    assert shown["V (image budget)"] == 3 and shown["image history"] == 2
    assert shown["reasoning effort"] == "xhigh" and shown["reasoning effort sent"] == {"reasoning_effort": "xhigh"}
    assert "tool-call budget" not in shown                              # not a setting of a model agent
