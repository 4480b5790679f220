"""``oracle-silhouette``: it marks the centre of each target's visible silhouette
in wide-baseline views, and on boxes it beats ``oracle-click``'s surface points. Vulkan-free fake
renderer (analytic ray casting of the fixture's boxes)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from fakes import FakeRenderer, small_scene
from spatialscout_gym.baselines.oracle_silhouette import OracleSilhouetteAgent
from spatialscout_gym.baselines.registry import known_agents, make_agent
from spatialscout_gym.episode.trace import read_jsonl
from spatialscout_gym.eval.running.runner import run_episode


def _run(name, spec, renderer, out):
    return run_episode(make_agent(name), spec, out, image_budget=20, tool_call_budget=None,
                       resolution=renderer.intrinsics.width, renderer=renderer)


def test_marks_are_silhouette_centres_in_wide_baseline_views(tmp_path):
    spec = small_scene(96, 96)
    r = FakeRenderer(spec)
    m = _run("oracle-silhouette", spec, r, tmp_path / "sil")
    assert "oracle-silhouette" in known_agents() and m["end_reason"] == "finish_mapping"
    events = read_jsonl(tmp_path / "sil" / "trace.jsonl")
    poses = {e["frame_id"]: e["pose_world"] for e in events if e["event"] == "capture"}
    index = {o.id: i for i, o in enumerate(spec.private.objects)}
    submitted = json.loads((tmp_path / "sil" / "predictions.json").read_text())["positions"]
    tris = [e for e in events if e.get("tool") == "triangulate_observations"]
    assert tris and len(tris) == len(submitted)
    from spatialscout_gym.core.frames import CameraPose
    for e, (tid, p) in zip(tris, submitted.items()):
        marks = e["args"]["observations"]
        assert len(marks) >= 2
        centres = [np.array(poses[mk["frame_id"]]["position_world"]) for mk in marks]
        assert min(np.linalg.norm(a - b) for i, a in enumerate(centres) for b in centres[i + 1:]) >= 0.3
        for mk in marks:   # the mark is the mean pixel of the target's mask in that view
            seg = r.capture_privileged(CameraPose.from_dict(poses[mk["frame_id"]])).segmentation
            vs, us = np.nonzero(seg == index[tid])
            assert (mk["u"], mk["v"]) == pytest.approx((us.mean(), vs.mean()))
        assert e["result"]["result"]["point"] == pytest.approx(p, abs=1e-3)   # it submits the point


def test_silhouette_centres_beat_surface_points_on_boxes(tmp_path):
    spec = small_scene(96, 96)
    r = FakeRenderer(spec)
    sil = _run("oracle-silhouette", spec, r, tmp_path / "sil")
    click = _run("oracle-click", spec, r, tmp_path / "click")
    assert sil["num_submitted"] >= click["num_submitted"] > 0
    assert sil["submitted"]["mean_iou"] > click["submitted"]["mean_iou"] + 0.1
    assert sil["center_error_m"]["mean"] < click["center_error_m"]["mean"]


def test_needs_two_views():
    with pytest.raises(ValueError, match="max_views must be >= 2"):
        OracleSilhouetteAgent(max_views=1)
