"""The Inspect task's reasoning effort and metrics (docs/inspect.md): a model that refuses the
effort gets it once per Inspect run, whatever the samples running at once, and the run goes on
without it; ``-T reasoning_effort=off`` (YAML's False) sends none; object-micro and scene-macro are
told apart on two scenes with different target counts, each mean IoU with a bootstrap interval.
Inspect's OpenAI-compatible provider against the scripted server on 127.0.0.1; the two small
scenes render with SAPIEN on software Vulkan at 32 px."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
from inspect_ai import eval as inspect_eval
from inspect_ai.model import get_model

from fakes import small_scene
from vlm_scripted import ScriptedServer
from spatialscout_gym.core.scoring import GroundTruth
from spatialscout_gym.core.spec import SceneSpec
from spatialscout_gym.eval.pages.leaderboard import build_row

pytestmark = [pytest.mark.render, pytest.mark.slow]   # the first Inspect sample pays SAPIEN's and Inspect's start-up


def _scenes(tmp_path: Path) -> list[str]:
    """Two rooms with 4 and 3 targets (the lamp hidden in the second); the same chair, at the same
    task-frame centre, in both."""
    four = small_scene(32, 32, scene_id="room-four")
    objects = [dataclasses.replace(o, role="hidden") if o.id == "lamp_1" else o for o in four.private.objects]
    three = SceneSpec.from_objects("room-three", objects, four.public.initial_camera, four.public.intrinsics,
                                   list(four.private.lights))
    paths = []
    for spec in (four, three):
        path = tmp_path / f"{spec.scene_id}.json"
        path.write_text(spec.to_json())
        paths.append(str(path))
    return paths


def _run(tmp_path: Path, name: str, *, rooms: int = 2, **task_args):
    """The scripted model through the task on the first ``rooms`` of the two rooms."""
    from spatialscout_gym.integrations.inspect_task import spatialscout
    scenes = _scenes(tmp_path)[:rooms]
    chair = GroundTruth.from_spec(SceneSpec.from_json(Path(scenes[0]).read_text()))
    centre = [float(x) for x in chair.centers_task[list(chair.ids).index("chair_1")]]

    def policy(step, body, fmt):   # per episode: the chair's exact centre, then finish
        turn = sum(m.get("role") == "assistant" for m in body["messages"])
        return [("submit_positions", {"positions": {"chair_1": centre}})] if turn == 0 else [("finish_mapping", {})]

    out = tmp_path / name
    with ScriptedServer(policy, refuse_params={"reasoning_effort"}) as server:
        logs = inspect_eval(spatialscout(scenes=",".join(scenes), image_budget=3, call_budget=4, resolution=32,
                                         out=str(out), **task_args),
                            model=get_model("openai-api/scripted/scripted", base_url=server.openai_url,
                                            api_key="local"),
                            log_dir=str(tmp_path / f"logs_{name}"), display="none", max_samples=2)
        requests = list(server.requests), list(server.refused_requests)
    return logs[0], out, requests


def test_a_refused_effort_is_sent_once_per_inspect_run_and_metrics_tell_micro_from_macro(tmp_path):
    log, out, (answered, refused) = _run(tmp_path, "refused")
    assert log.status == "success", log.error
    assert len(refused) == 1 and refused[0]["reasoning_effort"] == "xhigh"   # once for the two samples
    assert len(answered) == 4 and not any("reasoning_effort" in r for r in answered)
    for scene in ("room-four", "room-three"):
        run = out / scene / "seed_0"
        model = json.loads((run / "result.json").read_text())["model"]
        assert model["reasoning_effort_refused"] == ["reasoning_effort"] and model["reasoning_effort_sent"] == {}
        reasoning = json.loads((run / "harness.json").read_text())["model"]["reasoning"]
        assert "Unsupported parameter" in reasoning["refused"]["reasoning_effort"]
    assert build_row(out)["reasoning_effort"] == "xhigh refused, none sent"

    metrics = {k: v.value for k, v in log.results.scores[0].metrics.items()}
    # one exact chair in each room: object-micro pools 2 of 7 targets, scene-macro averages 1/4 and 1/3
    assert metrics["all_miou_pct"] == pytest.approx(100 * 2 / 7)           # percent, as every page prints
    assert metrics["macro_all_miou_pct"] == pytest.approx(100 * (1 / 4 + 1 / 3) / 2)
    row = build_row(out)
    assert metrics["all_miou_pct"] == pytest.approx(100 * row["object_micro"]["all"]["mean_iou"], abs=1e-10)
    assert metrics["macro_all_miou_pct"] == pytest.approx(100 * row["scene_macro"]["all"]["mean_iou"], abs=1e-10)
    assert metrics["sub_miou_pct"] == pytest.approx(100.0) and metrics["coverage_pct"] == pytest.approx(100 * 2 / 7)
    assert all(k.endswith(("_pct", "_pct_ci_low", "_pct_ci_high")) for k in metrics)
    # the interval beside each mean: the bootstrap over the two scenes spans 1/4 .. 1/3 (object-micro
    # and scene-macro alike: one scene drawn twice gives its own ratio)
    for prefix in ("", "macro_"):
        assert metrics[f"{prefix}all_miou_pct_ci_low"] == pytest.approx(25.0)
        assert metrics[f"{prefix}all_miou_pct_ci_high"] == pytest.approx(100 / 3)
        assert metrics[f"{prefix}sub_miou_pct_ci_low"] == metrics[f"{prefix}sub_miou_pct_ci_high"] == pytest.approx(100.0)


def test_reasoning_effort_off_as_yaml_reads_it_sends_none(tmp_path):
    from spatialscout_gym.integrations.inspect_task import _effort_argument
    assert [_effort_argument(v) for v in (False, "off", "none", "None", None, "medium")] == [
        None, None, None, None, None, "medium"]
    log, out, (answered, refused) = _run(tmp_path, "off", rooms=1, reasoning_effort=False)   # one room says it
    assert log.status == "success", log.error
    assert not refused and len(answered) == 2 and not any("reasoning_effort" in r for r in answered)
    model = json.loads((out / "room-four" / "seed_0" / "result.json").read_text())["model"]
    assert model["reasoning_effort"] is None and model["reasoning_effort_refused"] == []
