"""One scripted model run over the same two scenes by ``inspect eval`` (Inspect's OpenAI-compatible
provider, the task found through the package's ``inspect_ai`` entry point) and by ``spatialscout
evaluate --agent openai:...``, against a scripted server on 127.0.0.1; made once per test session
and shared by the tests that read it (tests/test_inspect_task.py's parity test, the Inspect
journey), which only read the two evaluation directories. SAPIEN renders on software Vulkan."""

from __future__ import annotations

import contextlib
import dataclasses
import io
import json
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import numpy as np

from vlm_scripted import ScriptedServer
from spatialscout_gym.cli.main import main
from spatialscout_gym.core.scoring import GroundTruth
from spatialscout_gym.scenes.catalog import scene_by_name

REPO = Path(__file__).resolve().parents[1]
SCENES = ["procedural:11", "procedural:12"]
B = 5          # model calls: the reminder comes before the 3rd call (3 left)
V = 4
RES = 48


def truths() -> dict[str, GroundTruth]:
    return {s: GroundTruth.from_spec(scene_by_name(s)) for s in SCENES}


def scene_of(text: str, truths: dict[str, GroundTruth]) -> str:
    """The scene whose every target id the conversation's list_entities result names."""
    found = [s for s, gt in truths.items()
             if all(re.search(rf"(?<![A-Za-z0-9_]){re.escape(i)}(?![A-Za-z0-9_])", text) for i in gt.ids)]
    assert len(found) == 1, f"cannot tell the scene from the conversation ({found})"
    return found[0]


def plan(turn: int, text: str, truths: dict[str, GroundTruth]) -> list[tuple[str, dict]]:
    """The scripted model: turn k of an episode (k = assistant messages so far). One scene ends on
    finish_mapping (a call after it is skipped), the other when B is used; both submit one exact
    and one offset centre and make one call the episode refuses."""
    if turn == 0:
        return [("capture_image", {})]
    if turn == 1:
        return [("list_entities", {}), ("get_camera_pose", {})]
    scene = scene_of(text, truths)
    gt = truths[scene]
    if turn == 2:
        c0, c1 = gt.centers_task[0], gt.centers_task[1] + np.array([0.05, 0.0, 0.0])
        return [("rotate_camera", {"yaw": "left"}),
                ("submit_positions", {"positions": {gt.ids[0]: [float(x) for x in c0],
                                                    gt.ids[1]: [float(x) for x in c1]}})]
    if scene == SCENES[0]:
        return [("finish_mapping", {}), ("capture_image", {})]
    return [("move_camera", {"forward": 0.2})] if turn == 3 else [("capture_image", {})]


def request_text(body: dict) -> str:
    return json.dumps(body.get("messages", []))


def _entry_point_dirs(tmp_path: Path) -> list[str]:
    """What ``PYTHONPATH`` needs so that ``inspect eval spatialscout_gym/spatialscout`` finds the
    task through the pyproject's ``inspect_ai`` entry point, as after ``pip install``: nothing when
    the installed package declares exactly that entry point (a second distribution declaring it too
    makes Inspect find no task), else a directory holding a distribution whose only content is it."""
    from importlib.metadata import entry_points
    eps = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["entry-points"]["inspect_ai"]
    installed = {e.name: e.value for e in entry_points(group="inspect_ai") if e.name in eps}
    if installed == eps:
        return []
    return [str(_entry_point_dir(tmp_path, eps))]


def inspect_path(tmp_path: Path) -> list[str]:
    """``PYTHONPATH`` for ``inspect eval``: empty when the package is installed with its entry point
    (as after ``pip install -e``; putting the checkout first would also put its ``*.egg-info`` first,
    a distribution that lists none of the package's modules, and Inspect would then register the
    task without its ``spatialscout_gym/`` namespace), else the checkout and the entry point."""
    extra = _entry_point_dirs(tmp_path)
    return [str(REPO), *extra] if extra else []


def _entry_point_dir(tmp_path: Path, eps: dict) -> Path:
    info = tmp_path / "eps" / "spatialscout_gym_inspect_entry-0.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: spatialscout-gym-inspect-entry\nVersion: 0.0\n")
    (info / "entry_points.txt").write_text("[inspect_ai]\n" + "".join(f"{k} = {v}\n" for k, v in eps.items()))
    return info.parent


@dataclasses.dataclass(frozen=True)
class Runs:
    """The two evaluation directories of one scripted model and what the server and Inspect saw."""

    inspect_out: Path
    evaluate_out: Path
    inspect_stdout: str
    inspect_requests: list[dict]
    evaluate_requests: list[dict]
    evaluate_output: str


_RUNS: dict[str, Runs] = {}


def inspect_and_evaluate(tmp_path_factory) -> Runs:
    """The two runs of docs/inspect.md's local-server command and README's ``evaluate`` command (made
    on the first call of the session)."""
    if "runs" in _RUNS:
        return _RUNS["runs"]
    tmp = tmp_path_factory.mktemp("inspect_and_evaluate")
    gts = truths()

    def policy(step, body, fmt):
        turn = sum(m.get("role") == "assistant" for m in body["messages"])
        return plan(turn, request_text(body), gts)

    inspect_out, evaluate_out = tmp / "inspect_runs", tmp / "evaluate_runs"
    with ScriptedServer(policy) as server:
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(inspect_path(tmp)),
               "SCRIPTED_BASE_URL": server.openai_url, "SCRIPTED_API_KEY": "local"}
        p = subprocess.run([sys.executable, "-m", "inspect_ai", "eval", "spatialscout_gym/spatialscout",
                            "--model", "openai-api/scripted/scripted", "-T", f"scenes={','.join(SCENES)}",
                            "-T", "repeats=1", "-T", f"image_budget={V}", "-T", f"call_budget={B}",
                            "-T", f"resolution={RES}", "-T", f"out={inspect_out}", "--log-dir", str(tmp / "logs"),
                            "--display", "plain", "--max-samples", "1"],
                           env=env, capture_output=True, text=True, timeout=900, cwd=tmp)
        assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
        inspect_requests = list(server.requests)
        printed = io.StringIO()
        with contextlib.redirect_stdout(printed), contextlib.redirect_stderr(printed):
            rc = main(["evaluate", "--agent", "openai:scripted", "--base-url", server.openai_url, "--api-key",
                       "local", "--scenes", *SCENES, "--out", str(evaluate_out), "--resolution", str(RES),
                       "--image-budget", str(V), "--call-budget", str(B), "--no-progress"])
        assert rc == 0, printed.getvalue()[-3000:]
        evaluate_requests = list(server.requests[len(inspect_requests):])
    _RUNS["runs"] = Runs(inspect_out, evaluate_out, p.stdout, inspect_requests, evaluate_requests,
                         printed.getvalue())
    return _RUNS["runs"]
