"""The blind control (``--mode blind``, docs/models.md): every tool result and frame caption, no
image. Scripted servers on 127.0.0.1 with the real openai and anthropic clients; fake pixels, 32 px."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from fakes import FakeRenderer, small_scene
from spatialscout_gym.cli.main import main
from spatialscout_gym.conversation.prompt import BLIND_NOTE, PROMPT_STYLES, first_message_text, task_prompt
from spatialscout_gym.conversation.replies import WITHHELD_TEXT
from spatialscout_gym.core.run_files import DELIVERED_FILE
from spatialscout_gym.eval.running.evaluate import evaluate
from spatialscout_gym.eval.running.tasks import EvalSettings

SEED_DIR = Path("procedural_8") / "seed_0"
IMAGE_TYPES = ("image_url", "input_image", "image")
PROMISES = ("what you see", "Images are sent to you", "image message", "captured images included",
            "from the initial image", "what the image shows", "renders a new image", "Here is the initial image")
"""Phrases of the seeing prompts that promise an image: none may reach a blind model."""


def _policy(step: int, body: dict, fmt: str) -> list:
    msgs = body.get("messages") or body.get("input") or []
    k = sum(isinstance(m, dict) and m.get("role") == "assistant" for m in msgs)
    return [("capture_image", {})] if k == 0 else [("submit_positions", {"positions": {}})] if k == 1 else []


def _image_parts(body: object) -> list:
    """Every image part anywhere in a request body, in any wire format."""
    found: list = []

    def walk(x: object) -> None:
        if isinstance(x, dict):
            if x.get("type") in IMAGE_TYPES:
                found.append(x)
                return
            for v in x.values():
                walk(v)
        elif isinstance(x, list):
            for v in x:
                walk(v)
        elif isinstance(x, str) and x.startswith("data:image"):
            found.append(x[:40])
    walk(body)
    return found


def _run(root: Path, name: str, provider: str, mode: str) -> tuple[Path, list[dict]]:
    from vlm_scripted import ScriptedServer
    with ScriptedServer(_policy) as server:
        url = server.anthropic_url if provider == "anthropic" else server.openai_url
        settings = EvalSettings(f"{provider}:scripted", 3, None, 32,
                                agent_options={"model_call_budget": 4, "mode": mode},
                                runtime_options={"base_url": url, "api_key": "local"})
        summary = evaluate(root / name, settings, ["procedural:8"], seeds=1, workers=1, progress=False,
                           renderer_factory=FakeRenderer, write_report=False)
    assert summary.total == 1 and not summary.failed, summary.failed
    return root / name, list(server.requests)


@pytest.fixture(scope="module")
def lab(tmp_path_factory) -> dict[str, tuple[Path, list[dict]]]:
    root = tmp_path_factory.mktemp("blind")
    return {"seeing": _run(root, "seeing", "openai", "active"), "blind": _run(root, "blind", "openai", "blind"),
            "blind-claude": _run(root, "blind-claude", "anthropic", "blind")}


def test_a_seeing_run_sends_its_images(lab):
    # the detector below finds the images a seeing run sends: frame 0 and the capture
    _, requests = lab["seeing"]
    assert len(requests) == 3 and len(_image_parts(requests[-1])) == 2


@pytest.mark.parametrize("name", ["blind", "blind-claude"])
def test_a_blind_run_sends_every_result_but_no_image(lab, name):
    d, requests = lab[name]
    assert len(requests) == 3
    assert [_image_parts(r) for r in requests] == [[], [], []]
    text = json.dumps(requests[-1])
    # frame 0 and the capture: id and pose as usual, the image said to be withheld
    assert re.search(r"Frame 0: camera at \[0\.000, 0\.000, 0\.000\] m \(task frame\)[^\"]*" + WITHHELD_TEXT, text)
    assert re.search(r"Frame 1: camera at [^\"]*" + WITHHELD_TEXT, text)
    assert '\\"frame_id\\": 1' in text                     # the capture's tool result itself
    assert BLIND_NOTE in text and not any(p in text for p in PROMISES)
    harness = json.loads((d / SEED_DIR / "harness.json").read_text())
    assert harness["mode"] == "blind"
    assert json.loads((d / SEED_DIR / DELIVERED_FILE).read_text())["jpeg_sha256"] == {}
    assert json.loads((d / SEED_DIR / "result.json").read_text())["model"]["mode"] == "blind"


def test_a_blind_run_verifies(lab, capsys):
    for name in ("blind", "blind-claude"):
        assert main(["verify", str(lab[name][0]), "--no-cache"]) == 0, capsys.readouterr()


def test_the_leaderboard_lists_blind_controls_apart(lab, tmp_path):
    from spatialscout_gym.eval.pages.leaderboard import write_leaderboard
    seeing, blind = lab["seeing"][0], lab["blind"][0]
    board = write_leaderboard([seeing, blind], tmp_path / "site")   # no force: mode is not a problem here
    assert board["problems"] == []
    on_disk = json.loads((tmp_path / "site" / "leaderboard.json").read_text())
    assert [r["dir"] for r in on_disk["rows"].values()] == [str(seeing)]
    assert [r["dir"] for r in on_disk["blind_rows"].values()] == [str(blind)]
    # each side ranked among its own rows only
    assert [r["rank"]["rank"] for r in on_disk["rows"].values()] == [1]
    assert [r["rank"]["rank"] for r in on_disk["blind_rows"].values()] == [1]
    page = (tmp_path / "site" / "index.html").read_text()
    ranked = re.search(r"<table[^>]*id='leaderboard'>.*?</table>", page, re.S).group(0)
    controls = re.search(r"<table[^>]*id='blind'>.*?</table>", page, re.S).group(0)
    blind_name = next(iter(on_disk["blind_rows"]))
    assert "blind control" in controls and blind_name in controls and blind_name not in ranked
    assert "[seeing]" in ranked and "[seeing]" not in controls
    assert "blind control" in (tmp_path / "site" / "leaderboard.md").read_text()


def test_a_leaderboard_of_blind_controls_alone(lab, tmp_path, capsys):
    capsys.readouterr()
    blind = lab["blind"][0]
    assert main(["leaderboard", str(blind), str(lab["blind-claude"][0]), "--out", str(tmp_path / "site"),
                 "--no-progress"]) == 0, capsys.readouterr().err
    out = capsys.readouterr().out
    assert "blind controls (no image sent" in out
    board = json.loads((tmp_path / "site" / "leaderboard.json").read_text())
    assert board["rows"] == {} and len(board["blind_rows"]) == 2
    page = (tmp_path / "site" / "index.html").read_text()
    controls = re.search(r"<table[^>]*id='blind'>.*?</table>", page, re.S).group(0)
    assert controls.count("(blind control)") == 2


def test_blind_controls_differing_in_another_setting_are_refused():
    from spatialscout_gym.eval.settings_check import Identity, comparability_problems

    def run(mode: str, v: int) -> Identity:
        return Identity("3.1", {"Kitchen_01": "h"}, ("model",), {"mode": mode, "V (image budget)": v}, [], [])
    # the mode separates a control from seeing rows only when it is not named a control
    assert comparability_problems({"a": run("active", 3), "b": run("blind", 3)}, controls={"b"}) == []
    assert [p.split(":")[0] for p in comparability_problems({"a": run("active", 3), "b": run("blind", 3)})] == [
        "mode differs"]
    assert [p.split(":")[0] for p in comparability_problems({"a": run("active", 3), "b": run("blind", 5)},
                                                            controls={"b"})] == ["V (image budget) differs"]
    # seeing rows still differ by mode among themselves
    assert [p.split(":")[0] for p in comparability_problems({"a": run("active", 3), "p": run("passive", 3),
                                                             "b": run("blind", 3)}, controls={"b"})] == ["mode differs"]


def test_compare_keeps_a_blind_run_apart_from_a_seeing_run(lab, capsys):
    capsys.readouterr()
    assert main(["compare", str(lab["seeing"][0]), str(lab["blind"][0])]) == 2
    assert "mode differs" in capsys.readouterr().err


@pytest.mark.parametrize("style", PROMPT_STYLES)
@pytest.mark.parametrize("image_budget", [1, 3])
def test_no_blind_prompt_promises_an_image(style, image_budget):
    spec = small_scene(32, 32)

    def prompt(blind: bool) -> str:
        return (task_prompt(spec.public, spec.public.intrinsics, model_call_budget=4, image_budget=image_budget,
                            style=style, blind=blind) + "\n" + first_message_text(style=style, blind=blind))
    seeing, blind = prompt(False), prompt(True)
    assert any(p in seeing for p in PROMISES)        # the phrases are the seeing prompts' own
    assert [p for p in PROMISES if p in blind] == []
    assert "withheld" in blind
    with pytest.raises(ValueError, match="two modes"):
        task_prompt(spec.public, spec.public.intrinsics, model_call_budget=4, image_budget=image_budget,
                    style=style, blind=True, passive=True)
