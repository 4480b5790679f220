"""VLM agents with the real ``openai`` and ``anthropic`` clients against a scripted model server
on 127.0.0.1, on a catalog scene rendered by SAPIEN (software Vulkan).

The scripted model moves right, captures a second view, triangulates a point it knows from the
ground truth (the test's cheating knowledge, marked as integer pixels on the delivered JPEGs and
converted with the stated formula), submits near-true centres and finishes.
"""

from __future__ import annotations

import base64
import io
import json
import re

import numpy as np
import pytest
from PIL import Image

from vlm_scripted import ScriptedServer
from spatialscout_gym.baselines.registry import make_agent
from spatialscout_gym.core.camera import project_world_to_pixel
from spatialscout_gym.core.frames import CameraPose, TaskFrame
from spatialscout_gym.core.scoring import GroundTruth
from spatialscout_gym.eval.running.runner import run_episode
from spatialscout_gym.conversation.images import delivered_size

RES = 512
STEP_RIGHT_M = 0.6


@pytest.fixture(scope="module")
def world():
    from spatialscout_gym.render.sapien_renderer import SapienRenderer
    from spatialscout_gym.scenes.catalog import catalog_scene_ids, scene_by_name
    spec = scene_by_name(catalog_scene_ids()[0])
    renderer = SapienRenderer(spec, RES, RES)
    yield spec, renderer
    renderer.close()


class Mapper:
    """The scripted model's plan (cheating from the ground truth, as the test allows)."""

    def __init__(self, spec, malformed: bool = False):
        self.spec, self.malformed = spec, malformed
        gt = GroundTruth.from_spec(spec)
        self.gt = gt
        p0 = spec.public.initial_camera
        p1 = CameraPose(p0.position_world + STEP_RIGHT_M * p0.horizontal_right_world, p0.yaw_deg, p0.pitch_deg)
        K = spec.public.intrinsics.scaled(RES, RES)
        wd, hd = delivered_size(RES, RES)
        self.frame = TaskFrame.from_initial_pose(p0)
        # a point 5 cm above some target's centre, visible in both views: not itself a centre
        self.marks, self.point_task = None, None
        for i in range(len(gt.ids)):
            p_task = gt.centers_task[i] + np.array([0.0, 0.0, 0.05])
            pw = self.frame.to_world(p_task)
            marks = []
            for fid, pose in ((0, p0), (1, p1)):
                uv, depth = project_world_to_pixel(K, pose, pw[None])
                u, v = uv[0]
                if depth[0] < 0.5 or not (5 < u < RES - 5 and 5 < v < RES - 5):
                    break
                ud, vd = round((u + 0.5) * wd / RES - 0.5), round((v + 0.5) * hd / RES - 0.5)
                marks.append({"frame_id": fid, "u": (ud + 0.5) * RES / wd - 0.5, "v": (vd + 0.5) * RES / hd - 0.5})
            if len(marks) == 2:
                self.marks, self.point_task = marks, p_task
                break
        assert self.marks is not None, "no target visible in both scripted views"
        self.positions = {tid: [round(float(x) + 0.02, 4) for x in gt.centers_task[i]]
                          for i, tid in enumerate(gt.ids)}

    def __call__(self, step, body, fmt):
        if step == 0:
            calls = [("move_camera", json.dumps({"right": STEP_RIGHT_M})), ("capture_image", "{}")]
            if self.malformed:
                bad = [("fly_to_target", "{}"), ("move_camera", {"forward": "far"}),
                       ("set_camera_position", {"position": [0, 0]}), ("submit_positions", {"positions": [1, 2, 3]})]
                if fmt == "openai":
                    bad += [("move_camera", "{forward: 1"), ("rotate_camera", '{"yaw": NaN}')]
                calls = bad + calls
            return calls
        if step == 1:
            return [("triangulate_observations", {"observations": self.marks}),
                    ("submit_positions", {"positions": self.positions})]
        return [("finish_mapping", "{}"), ("list_entities", "{}")]


def _strip_images(raw: str) -> tuple[str, list[bytes]]:
    images = [base64.b64decode(m) for m in re.findall(r'base64,([A-Za-z0-9+/=]+)', raw)]
    images += [base64.b64decode(m) for m in re.findall(r'"data": ?"([A-Za-z0-9+/=]{200,})"', raw)]
    text = re.sub(r'[A-Za-z0-9+/=]{200,}', "<img>", raw)
    return text, images


def _check_requests(server: ScriptedServer, spec, mapper: Mapper, fmt: str) -> None:
    gt = mapper.gt
    first = server.requests[0]
    names = ({t["function"]["name"] for t in first["tools"]} if fmt == "openai"
             else {t["name"] for t in first["tools"]})
    assert len(names) == 10 and "triangulate_observations" in names
    # the paper's prompt opens the first user message; the inventory is left to list_entities
    assert first["messages"][0]["role"] == "user" and "system" not in first
    opening = json.dumps(first["messages"][0]["content"])
    assert "Task axes" in opening and "world-axis-aligned bounding box" in opening and "Frame 0:" in opening
    for e in spec.public.inventory[:3]:
        assert e.id not in opening
    n_images = 0
    for raw in server.raw:
        text, images = _strip_images(raw)
        for jpeg in images:
            im = Image.open(io.BytesIO(jpeg))
            assert im.format == "JPEG" and max(im.size) <= 384
            n_images += 1
        # no target centre or box corner (task frame, rounded) among the numbers sent to the model
        numbers = {round(float(x), 3) for x in re.findall(r"-?\d+\.\d+", text)}
        for t in gt.targets:
            corners_world = [np.where(np.array(s, bool), t.box_max, t.box_min) for s in np.ndindex(2, 2, 2)]
            points = [t.center_task] + [mapper.frame.to_task(c) for c in corners_world] + corners_world
            for pt in points:
                assert not all(round(float(x), 3) in numbers for x in pt), f"target {t.id} leaked"
        assert not re.search(r'\\?"\w*(iou|score|metric)\w*\\?"\s*:', text, re.I)  # no score field
    assert n_images >= 2


@pytest.mark.render
@pytest.mark.slow
@pytest.mark.parametrize("fmt", ["openai", "anthropic"])
def test_scripted_model_maps_and_scores(world, tmp_path, fmt):
    spec, renderer = world
    mapper = Mapper(spec, malformed=True)
    with ScriptedServer(mapper) as server:
        url = server.openai_url if fmt == "openai" else server.anthropic_url
        agent = make_agent(f"{fmt}:scripted-vlm", base_url=url, api_key="local", max_tokens=512,
                           reasoning_effort="low",
                           price_table={"scripted-vlm": {"input_per_mtok": 3.0, "output_per_mtok": 15.0}})
        result = run_episode(agent, spec, tmp_path / fmt, renderer=renderer, resolution=RES)
    assert result["status"] == "ok" and result["end_reason"] == "finish_mapping"
    assert result["all"]["mean_iou"] > 0 and result["coverage"] == 1.0
    m = result["model"]
    assert m["model_calls"] == 3 == m["http_attempts"] == len(server.requests)
    assert m["usage"] == {"input_tokens": 3003, "output_tokens": 150}
    assert m["cost_usd"] == pytest.approx((3003 * 3.0 + 150 * 15.0) / 1e6)
    _check_requests(server, spec, mapper, fmt)
    # tool results the model read: readable errors for malformed calls, then the triangulation
    trace = [json.loads(x) for x in (tmp_path / fmt / "trace.jsonl").read_text().splitlines()]
    refused = [e for e in trace if e["event"] == "tool_call_refused"]
    assert {e["refusal"] for e in refused} >= {"unknown_tool", "skipped"}
    assert any("valid tools: list_entities" in e["error"] for e in refused)
    bad_args = [e for e in trace if e["event"] == "tool_call" and not e["result"]["ok"]]
    assert any("must be three finite numbers" in e["result"]["error"] for e in bad_args)
    tri = [e for e in trace if e["event"] == "tool_call" and e["tool"] == "triangulate_observations"]
    assert tri[0]["result"]["ok"]
    assert np.linalg.norm(np.array(tri[0]["result"]["result"]["point"]) - mapper.point_task) < 0.05
    if fmt == "openai":
        assert any("not valid JSON" in e["error"] for e in refused)
    maps = [e for e in trace if e["event"] == "map"]
    assert maps and maps[-1]["model_call_index"] == 1
    requests = [e for e in trace if e["event"] == "model_request"]
    assert len(requests) == 3 and "base64" not in json.dumps(requests)
    assert any(c.get("type") == "image" and c["file"] == "frames/frame_001.png"
               for e in requests for msg in e["new_messages"] for c in msg["content"] if isinstance(c, dict))
    assert (tmp_path / fmt / "frames" / "frame_001.png").exists()


@pytest.mark.render
def test_retry_after_500_and_drop_counts_attempts_apart(world, tmp_path):
    spec, renderer = world
    mapper = Mapper(spec)
    waits: list[float] = []
    with ScriptedServer(mapper, fail={0: "500", 2: "drop"}) as server:
        agent = make_agent("openai:scripted-vlm", base_url=server.openai_url, api_key="local", sleep=waits.append)
        result = run_episode(agent, spec, tmp_path / "retry", renderer=renderer, resolution=RES)
    assert result["status"] == "ok" and result["all"]["mean_iou"] > 0
    assert result["model"]["model_calls"] == 3 and result["model"]["http_attempts"] == 5
    assert waits == [1.0, 1.0] and len(result["model"]["attempt_failures"]) == 2


def test_service_down_is_a_failed_episode_left_out_of_scores(tmp_path, capsys):
    from fakes import FakeRenderer, small_scene
    from spatialscout_gym.cli.main import main
    spec = small_scene(32, 32)
    waits: list[float] = []
    with ScriptedServer(lambda *a: [], fail={i: "drop" for i in range(10)}) as server:
        agent = make_agent("anthropic:scripted-vlm", base_url=server.anthropic_url, api_key="local",
                           sleep=waits.append)
        result = run_episode(agent, spec, tmp_path / "runs" / "down", renderer=FakeRenderer(spec), resolution=32)
    assert result["status"] == "failed" and "ModelServiceError" in result["error"]
    assert "3 attempts" in result["error"] and waits == [1.0, 2.0]
    assert result["model"]["model_calls"] == 1 and result["model"]["http_attempts"] == 3
    out = tmp_path / "runs" / "down"
    assert json.loads((out / "result.json").read_text())["status"] == "failed"
    assert not (out / "predictions.json").exists() and not (out / "ground_truth.json").exists()
    trace = [json.loads(x) for x in (out / "trace.jsonl").read_text().splitlines()]
    assert trace[-1] == {**trace[-1], "event": "end", "reason": "failed"}
    capsys.readouterr()
    assert main(["score", str(tmp_path / "runs")]) == 2  # nothing scorable: the failed run is left out
