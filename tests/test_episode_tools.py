"""The ten tools of docs/protocol.md section 4 on a fake renderer: semantics, bounds, refusals, budgets."""

from __future__ import annotations

import copy
import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fakes import FakeRenderer, small_scene
from spatialscout_gym.core.camera import project_world_to_pixel
from spatialscout_gym.episode import TOOL_NAMES, Episode


def make_episode(pitch_deg=0.0, image_budget=10, tool_call_budget=100, yaw_deg=30.0):
    spec = small_scene(pitch_deg=pitch_deg, yaw_deg=yaw_deg)
    return Episode(spec.public, FakeRenderer(spec), image_budget=image_budget, tool_call_budget=tool_call_budget)


def state(ep: Episode):
    return (ep.pose.to_dict(), sorted(ep.frames), {k: v.tolist() for k, v in ep.accepted_map.items()},
            ep.done)


def test_ten_tools_exactly():
    assert set(TOOL_NAMES) == {
        "list_entities", "get_camera_pose", "get_camera_intrinsics", "set_camera_position",
        "move_camera", "rotate_camera", "capture_image", "triangulate_observations",
        "submit_positions", "finish_mapping"}


def test_initial_state_and_read_only_tools():
    ep = make_episode()
    assert sorted(ep.frames) == [0] and ep.images_used == 1 and ep.images_left == 9
    ents = ep.list_entities()
    assert ents.ok and [e["id"] for e in ents.result["entities"]] == ["chair_1", "chair_2", "lamp_1", "table_1"]
    assert "vase_9" not in json.dumps(ents.result)  # hidden candidate is not listed
    assert ents.result["radius_m"] == pytest.approx(ep.public.radius_m)
    pose = ep.get_camera_pose().result
    assert pose["position"] == [0.0, 0.0, 0.0] and pose["yaw_deg"] == 0.0
    assert pose["forward"] == [1.0, 0.0, 0.0]
    K = ep.get_camera_intrinsics().result
    assert (K["width"], K["height"]) == (64, 48) and K["cx"] == 31.5


def test_forward_while_pitched_keeps_height():
    ep = make_episode(pitch_deg=0.0)
    ep.rotate_camera(pitch=-40)
    z0 = ep.pose.position_world[2]
    assert ep.move_camera(forward=0.7).ok
    assert ep.pose.position_world[2] == pytest.approx(z0, abs=1e-12)
    moved = np.linalg.norm(ep.pose.position_world[:2] - ep.public.initial_camera.position_world[:2])
    assert moved == pytest.approx(0.7)


def test_yaw_plus_90_turns_forward_to_old_left():
    ep = make_episode()
    left_before = ep.pose.R_world_cam[:, 1].copy()
    assert ep.rotate_camera(yaw=90).ok
    np.testing.assert_allclose(ep.pose.R_world_cam[:, 0], left_before, atol=1e-12)
    # and the reported pose says the task-frame forward is now the task +y (old left)
    np.testing.assert_allclose(ep.get_camera_pose().result["forward"], [0, 1, 0], atol=1e-6)


def test_up_is_world_vertical_even_when_initial_camera_pitched():
    ep = make_episode(pitch_deg=-30.0)
    p0 = ep.pose.position_world.copy()
    assert ep.move_camera(up=0.5).ok
    np.testing.assert_allclose(ep.pose.position_world - p0, [0, 0, 0.5], atol=1e-12)
    # in the task frame (tilted by 30 deg) the move is not along +z
    pos = np.array(ep.get_camera_pose().result["position"])
    assert abs(pos[0]) > 0.2


def test_right_is_horizontal_right():
    ep = make_episode(yaw_deg=0.0)
    assert ep.move_camera(right=1.0).ok
    np.testing.assert_allclose(ep.pose.position_world - ep.public.initial_camera.position_world,
                               [0, -1, 0], atol=1e-12)


def test_pitch_clamped_and_roll_zero():
    ep = make_episode()
    r = ep.rotate_camera(pitch=120)
    assert r.ok and r.result["pitch_deg"] == 85.0 and r.result["pitch_clamped"]
    assert ep.rotate_camera(pitch=-180).ok and ep.pose.pitch_deg == -85.0
    R = ep.pose.R_world_cam
    assert R[2, 1] == pytest.approx(0.0)  # camera left axis stays horizontal: roll 0


@pytest.mark.parametrize("tool,args,needle", [
    ("move_camera", {"forward": 0.8, "right": 0.8}, "1 m"),
    ("move_camera", {"forward": float("nan")}, "finite"),
    ("move_camera", {"up": "high"}, "finite"),
    ("move_camera", {"fwd": 0.1}, "valid arguments: forward, right, up"),
    ("rotate_camera", {"yaw": 181}, "180"),
    ("rotate_camera", {"pitch": -200}, "180"),
    ("set_camera_position", {"position": [20, 0, 0]}, "15 m"),
    ("set_camera_position", {"position": [1, 2]}, "three finite numbers"),
    ("set_camera_position", {}, "missing required argument 'position'"),
    ("teleport", {}, "valid tools: list_entities"),
    ("capture_image", {"now": True}, "valid arguments: none"),
    ("triangulate_observations", {"observations": [{"frame_id": 0, "u": 1}]}, "frame_id, u, v"),
    ("triangulate_observations", {"observations": [{"frame_id": 0, "u": 1, "v": 2},
                                                   {"frame_id": 7, "u": 1, "v": 2}]}, "7"),
    ("submit_positions", {"positions": [[0, 0, 0]]}, "mapping target id"),
    ("submit_positions", {"positions": {"nobody": [0, 0, 0]}}, "unknown id"),
])
def test_refusals_leave_state_untouched(tool, args, needle):
    ep = make_episode()
    ep.move_camera(forward=0.3)
    before = state(ep)
    trace_len = len(ep.trace)
    res = ep.call(tool, copy.deepcopy(args))
    assert not res.ok and needle in res.error, res.error
    assert state(ep) == before
    assert ep.trace[trace_len]["event"] == "tool_call" and ep.trace[trace_len]["result"]["ok"] is False


def test_world_box_refusal_keeps_pose():
    ep = make_episode(yaw_deg=0.0)
    # walk to the +x wall of the world box: o0 x = -1, so 16 moves of 1 m end at x = 15
    for _ in range(16):
        assert ep.move_camera(forward=1.0).ok
    assert ep.pose.position_world[0] == pytest.approx(15.0)
    before = state(ep)
    res = ep.move_camera(forward=0.5)
    assert not res.ok and "+-15 m" in res.error and state(ep) == before


def test_set_camera_position_roundtrip_and_orientation():
    ep = make_episode(pitch_deg=-20.0)
    r = ep.set_camera_position([1.0, -0.5, 0.25], yaw_deg=45.0, pitch_deg=10.0)
    assert r.ok
    np.testing.assert_allclose(r.result["position"], [1.0, -0.5, 0.25], atol=1e-6)
    assert r.result["yaw_deg"] == pytest.approx(45.0) and r.result["pitch_deg"] == pytest.approx(10.0)
    # omitted angles keep the current orientation
    r2 = ep.set_camera_position([0, 0, 0])
    assert r2.result["yaw_deg"] == pytest.approx(45.0) and r2.result["pitch_deg"] == pytest.approx(10.0)
    np.testing.assert_allclose(ep.pose.position_world, ep.public.initial_camera.position_world, atol=1e-12)


@settings(max_examples=40, deadline=None)
@given(st.floats(-1, 1), st.floats(-1, 1), st.floats(-1, 1), st.floats(-180, 180))
def test_move_then_inverse_returns(f, r, u, yaw):
    ep = make_episode()
    ep.rotate_camera(yaw=yaw)
    p0 = ep.pose.position_world.copy()
    first = ep.move_camera(forward=f, right=r, up=u)
    assert first.ok == (np.linalg.norm([f, r, u]) <= 1.0 + 1e-9)
    if first.ok:
        assert ep.move_camera(forward=-f, right=-r, up=-u).ok
        np.testing.assert_allclose(ep.pose.position_world, p0, atol=1e-9)


def test_capture_budget_counts_initial_image():
    ep = make_episode(image_budget=3)
    a, b = ep.capture_image(), ep.capture_image()
    assert (a.frame_id, b.frame_id) == (1, 2) and b.result["images_left"] == 0
    before = state(ep)
    c = ep.capture_image()
    assert not c.ok and "image budget of 3" in c.error and state(ep) == before
    # other tools still work after the image budget is gone
    assert ep.submit_positions({"chair_1": [1, 1, 0]}).ok and not ep.done


def test_capture_stores_pose_and_intrinsics():
    ep = make_episode()
    ep.move_camera(forward=0.5)
    ep.rotate_camera(yaw=20, pitch=-10)
    res = ep.capture_image()
    f = ep.frames[res.frame_id]
    assert f.pose == ep.pose and f.image.shape == (48, 64, 3) and f.image.dtype == np.uint8
    assert not np.array_equal(f.image, ep.frames[0].image)
    cap = [e for e in ep.trace if e["event"] == "capture"][-1]
    assert cap["frame_id"] == res.frame_id and cap["intrinsics"]["fx"] == pytest.approx(f.intrinsics.fx)
    np.testing.assert_allclose(cap["pose_task"]["position"], res.result["pose"]["position"])


def test_triangulation_over_stored_frames():
    ep = make_episode()
    ep.move_camera(right=0.8)
    ep.capture_image()
    point_world = np.array([2.0, 1.5, 0.45])
    marks = []
    for fid, f in ep.frames.items():
        uv, depth = project_world_to_pixel(f.intrinsics, f.pose, point_world)
        assert depth > 0
        marks.append({"frame_id": fid, "u": float(uv[0]), "v": float(uv[1])})
    res = ep.triangulate_observations(marks)
    assert res.ok
    np.testing.assert_allclose(res.result["point"], ep.task_frame.to_task(point_world), atol=1e-3)
    one = ep.triangulate_observations(marks[:1])
    assert not one.ok and "at least 2" in one.error


def test_submit_replace_and_map_reply():
    ep = make_episode()
    r1 = ep.submit_positions({"chair_1": [1, 2, 0], "lamp_1": [0, 0, 1]})
    assert r1.ok and r1.result["accepted_map"] == {"chair_1": [1.0, 2.0, 0.0], "lamp_1": [0.0, 0.0, 1.0]}
    bound = ep.public.radius_m + 0.5
    r2 = ep.submit_positions({"chair_1": [0.5, 0.5, 0.5], "table_1": [bound + 0.01, 0, 0],
                              "chair_2": [1, True, 0], "ghost": [0, 0, 0]})
    assert r2.ok and r2.result["accepted"] == ["chair_1"]
    assert set(r2.result["refused"]) == {"table_1", "chair_2", "ghost"}
    assert "r + 0.5" in r2.result["refused"]["table_1"]
    assert r2.result["accepted_map"]["chair_1"] == [0.5, 0.5, 0.5]
    assert ep.submit_positions({"table_1": [bound - 0.01, 0, 0]}).ok  # just inside the ball
    empty = ep.submit_positions({})
    assert empty.ok and set(empty.result["accepted_map"]) == {"chair_1", "lamp_1", "table_1"}
    snaps = [e for e in ep.trace if e["event"] == "map"]
    assert len(snaps) == 4 and snaps[-1]["accepted_map"] == empty.result["accepted_map"]
    assert all("tool_call_index" in s and "images_used" in s for s in snaps)


def test_all_entries_refused_is_a_refusal_with_map():
    ep = make_episode()
    ep.submit_positions({"chair_1": [1, 0, 0]})
    res = ep.submit_positions({"chair_2": [99, 0, 0]})
    assert not res.ok and "chair_2" in res.error
    assert res.result["accepted_map"] == {"chair_1": [1.0, 0.0, 0.0]}


def test_finish_freezes_map_and_refuses_later_calls():
    ep = make_episode()
    ep.submit_positions({"chair_1": [1, 0, 0]})
    res = ep.finish_mapping()
    assert res.ok and ep.done and ep.end_reason == "finish_mapping"
    calls = ep.tool_calls
    later = ep.submit_positions({"chair_2": [1, 0, 0]})
    assert not later.ok and "ended" in later.error
    assert set(ep.accepted_map) == {"chair_1"} and ep.tool_calls == calls
    assert ep.trace[-1]["event"] == "end" and ep.trace[-1]["reason"] == "finish_mapping"


def test_call_budget_ends_episode():
    ep = make_episode(tool_call_budget=3)
    ep.get_camera_pose()
    ep.call("bogus", {})  # refusals count as calls
    assert not ep.done and ep.calls_left == 1
    ep.list_entities()
    assert ep.done and ep.end_reason == "tool_call_budget" and ep.calls_left == 0
    assert not ep.capture_image().ok


def test_unlimited_call_budget():
    ep = make_episode(tool_call_budget=None)
    for _ in range(150):
        ep.get_camera_pose()
    assert not ep.done and ep.calls_left is None and ep.counters()["tool_calls"] == 150


def test_trace_is_json_and_complete():
    ep = make_episode()
    ep.move_camera(forward=np.float32(0.5))
    ep.capture_image()
    ep.submit_positions({"chair_1": np.array([1.0, 0.0, 0.0])})
    ep.finish_mapping()
    text = json.dumps(ep.trace)
    kinds = [e["event"] for e in json.loads(text)]
    assert kinds[0] == "start" and kinds[1] == "capture" and kinds[-1] == "end"
    assert kinds.count("tool_call") == 4 and kinds.count("capture") == 2 and kinds.count("map") == 1
    call = next(e for e in ep.trace if e["event"] == "tool_call" and e["tool"] == "move_camera")
    assert call["args"]["forward"] == 0.5 and call["result"]["ok"] is True


def test_results_never_raise_on_garbage():
    ep = make_episode()
    for tool, args in [(None, None), (3, {}), ("move_camera", "forward"), ("move_camera", [1]),
                       ("submit_positions", {"positions": {"chair_1": "here"}}),
                       ("triangulate_observations", {"observations": "x"})]:
        res = ep.call(tool, args)
        assert not res.ok and res.error


def test_set_camera_position_clamps_pitch():
    ep = make_episode()
    r = ep.set_camera_position([0, 0, 0], yaw_deg=0.0, pitch_deg=89.0)
    assert r.ok and r.result["pitch_deg"] == 85.0 and r.result["pitch_clamped"]


def test_null_optional_argument_means_not_given():
    # JSON null for an optional argument (as models send it) is the default, not a crash.
    ep = make_episode()
    before = ep.pose.position_world.copy()
    res = ep.call("move_camera", {"forward": None, "right": 0.5})
    assert res.ok, res.error
    moved = ep.pose.position_world - before
    assert np.linalg.norm(moved) == pytest.approx(0.5) and moved[2] == pytest.approx(0.0)
    turned = ep.call("rotate_camera", {"yaw": None, "pitch": 10.0})
    assert turned.ok and turned.result["pitch_deg"] == pytest.approx(10.0)


def test_trace_stays_json_for_arguments_json_cannot_hold():
    # Python callers can pass anything; the refused call is still recorded and the trace still
    # writes (run directories need trace.jsonl).
    ep = make_episode()
    res = ep.call("submit_positions", {"positions": {"chair_1": {1.0, 2.0, 3.0}}})
    assert not res.ok and "three finite numbers" in res.error
    assert not ep.call("move_camera", {"forward": object()}).ok
    text = json.dumps(ep.trace)
    calls = [e for e in json.loads(text) if e["event"] == "tool_call"]
    assert calls[0]["args"]["positions"]["chair_1"] == repr({1.0, 2.0, 3.0})


@pytest.mark.parametrize("tool, args", [
    ("move_camera", {"forward": 10 ** 400}),
    ("rotate_camera", {"yaw": -(10 ** 400)}),
    ("set_camera_position", {"position": [0.0, 10 ** 400, 0.0]}),
    ("triangulate_observations", {"observations": [{"frame_id": 0, "u": 10 ** 400, "v": 1.0},
                                                   {"frame_id": 0, "u": 1.0, "v": 1.0}]}),
    ("submit_positions", {"positions": {"chair_1": [10 ** 400, 0.0, 0.0]}}),
])
def test_integers_past_float_range_are_refusals_not_exceptions(tool, args):
    ep = make_episode()
    before = state(ep)
    res = ep.call(tool, args)
    assert not res.ok and "finite" in res.error
    assert state(ep) == before
