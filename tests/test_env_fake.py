"""SpatialScoutEnv on the fake renderer: spaces, action decoding, rewards, privacy, checker."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

from fakes import FakeRenderer, small_scene
from spatialscout_gym.core.scoring import GroundTruth, score_scene
from spatialscout_gym.envs.spatialscout_env import MAX_MARKS, MAX_TARGETS, SpatialScoutEnv
from spatialscout_gym.episode import TOOL_NAMES


def make_env(**kw):
    spec = small_scene(64, 64, pitch_deg=-15.0)
    kw.setdefault("resolution", 64)
    return SpatialScoutEnv(spec, renderer=FakeRenderer(spec), **kw), spec


def noop_action(env, tool: str, **fields):
    a = {k: np.zeros(s.shape, s.dtype) for k, s in env.action_space.spaces.items()}
    a["tool"] = TOOL_NAMES.index(tool)
    a.update(fields)
    return a


def test_check_env_passes_with_privileged_obs():
    env, _ = make_env(privileged_obs=True, render_mode="rgb_array", tool_call_budget=30)
    check_env(env, skip_render_check=False)
    obs, _ = env.reset(seed=1)
    assert obs["depth"].shape == (64, 64) and obs["segmentation"].dtype == np.int32
    assert env.render().shape == (64, 64, 3)


def test_no_privileged_keys_by_default():
    env, _ = make_env()
    obs, _ = env.reset(seed=0)
    assert "depth" not in obs and "segmentation" not in obs
    assert env.observation_space["image"].shape == (64, 64, 3)


def test_action_decoding_per_tool():
    env, _ = make_env()
    env.reset(seed=0)
    tool, args = env.decode_action(noop_action(env, "move_camera", translation=np.array([0.5, -0.2, 0.1], np.float32)))
    assert tool == "move_camera" and args == pytest.approx({"forward": 0.5, "right": -0.2, "up": 0.1})
    tool, args = env.decode_action(noop_action(env, "set_camera_position", position=np.ones(3, np.float32)))
    assert args == {"position": [1.0, 1.0, 1.0]}  # orientation flag 0: angles omitted
    tool, args = env.decode_action(noop_action(env, "set_camera_position", set_orientation=1,
                                               yaw_pitch=np.array([30, -10], np.float32)))
    assert args["yaw_deg"] == 30 and args["pitch_deg"] == -10
    marks = np.zeros((MAX_MARKS, 3), np.float32)   # the block holds MAX_MARKS rows (64)
    marks[:3] = [[0, 1.5, 2.5], [1.2, 3, 4], [2, 5, 6]]
    tool, args = env.decode_action(noop_action(env, "triangulate_observations", marks=marks, num_marks=2))
    assert args == {"observations": [{"frame_id": 0, "u": 1.5, "v": 2.5}, {"frame_id": 1, "u": 3.0, "v": 4.0}]}
    row = {e["id"]: i for i, e in enumerate(env.unwrapped.inventory)}   # rows follow the inventory
    mask = np.zeros(MAX_TARGETS, np.int8)
    mask[[row["chair_2"], row["lamp_1"], 10]] = 1  # row 10 is past the 4-entry inventory: ignored
    pos = np.zeros((MAX_TARGETS, 3), np.float32)
    pos[row["chair_2"]] = [1, 2, 0]
    tool, args = env.decode_action(noop_action(env, "submit_positions", submit_mask=mask, positions=pos))
    assert args == {"positions": {"chair_2": [1.0, 2.0, 0.0], "lamp_1": [0.0, 0.0, 0.0]}}


def test_observation_tracks_pose_map_and_budgets():
    env, _ = make_env(image_budget=5, tool_call_budget=10)
    obs, info = env.reset(seed=0)
    assert obs["budgets"].tolist() == [4, 10] and obs["inventory_mask"].sum() == 4
    obs, *_ = env.step(noop_action(env, "move_camera", translation=np.array([0.5, 0, 0], np.float32)))
    assert obs["camera_position"][0] > 0.4  # pitched camera: moving forward is not along task +x only
    obs, *_ = env.step(noop_action(env, "capture_image"))
    assert obs["budgets"].tolist() == [3, 8]
    mask = np.zeros(MAX_TARGETS, np.int8)
    mask[2] = 1
    pos = np.zeros((MAX_TARGETS, 3), np.float32)
    pos[2] = [1, 0.5, -0.25]
    obs, _, _, _, info = env.step(noop_action(env, "submit_positions", submit_mask=mask, positions=pos))
    assert info["tool_result"]["ok"] and obs["submitted"].tolist()[:4] == [0, 0, 1, 0]
    np.testing.assert_allclose(obs["accepted_map"][2], [1, 0.5, -0.25])


def _scripted_episode(env, spec, seed=0):
    """Submit a perfect estimate of two targets, a refusal, a replacement, then finish."""
    gt = GroundTruth.from_spec(spec)
    obs, _ = env.reset(seed=seed)
    rewards, infos = [], []

    def submit(rows: dict[int, np.ndarray]):
        mask = np.zeros(MAX_TARGETS, np.int8)
        pos = np.zeros((MAX_TARGETS, 3), np.float32)
        for i, p in rows.items():
            mask[i], pos[i] = 1, p
        return noop_action(env, "submit_positions", submit_mask=mask, positions=pos)

    c32 = gt.centers_task.astype(np.float32).astype(float)  # what a float32 action can carry
    row = {t: i for i, t in enumerate(gt.ids)}                # rows follow the inventory
    c = {t: c32[i] for t, i in row.items()}
    chair_1, chair_2, table_1, lamp_1 = (row[t] for t in ("chair_1", "chair_2", "table_1", "lamp_1"))
    for action in [submit({chair_1: c["chair_2"], table_1: c["table_1"] + [0.05, 0, 0]}),
                   noop_action(env, "capture_image"), submit({lamp_1: c["lamp_1"] + 0.3}),
                   submit({table_1: c["table_1"]}), noop_action(env, "finish_mapping")]:
        obs, r, term, trunc, info = env.step(action)
        rewards.append(r)
        infos.append(info)
    assert term and not trunc
    expected = score_scene(gt, {"chair_1": c["chair_2"], "table_1": c["table_1"],
                                "lamp_1": c["lamp_1"] + 0.3}).metrics()
    return rewards, infos, expected


def test_dense_and_sparse_rewards_sum_to_final_score():
    env_d, spec = make_env(reward_mode="dense")
    dense, infos, expected = _scripted_episode(env_d, spec)
    env_s, _ = make_env(reward_mode="sparse")
    sparse, _, _ = _scripted_episode(env_s, spec)
    final = expected["all"]["mean_iou"]
    assert 0 < final < 1
    assert sum(dense) == pytest.approx(final, abs=1e-9) and sum(sparse) == pytest.approx(final, abs=1e-12)
    assert sparse[:-1] == [0.0] * 4 and dense[0] > 0
    assert infos[-1]["metrics"]["all"]["mean_iou"] == pytest.approx(final)
    # chair_1's estimate sits on chair_2's centre: same group, so it scores as a perfect match
    assert infos[-1]["metrics"]["num_submitted"] == 3


def test_call_budget_terminates():
    env, _ = make_env(tool_call_budget=3)
    env.reset(seed=0)
    ends = [env.step(noop_action(env, "get_camera_pose"))[2] for _ in range(3)]
    assert ends == [False, False, True]


def _numbers(x) -> np.ndarray:
    out = []
    def walk(v):
        if isinstance(v, dict):
            for w in v.values():
                walk(w)
        elif isinstance(v, (list, tuple)):
            for w in v:
                walk(w)
        elif isinstance(v, np.ndarray):
            out.extend(np.asarray(v, float).ravel().tolist())
        elif isinstance(v, (int, float, np.number)) and not isinstance(v, bool):
            out.append(float(v))
        elif isinstance(v, str):
            try:
                walk(json.loads(v))
            except ValueError:
                pass
    walk(x)
    return np.array(out)


def test_no_private_data_before_the_end():
    env, spec = make_env(tool_call_budget=60)
    secrets = []
    for t in spec.targets:
        secrets.extend(t.center_task.tolist())
        secrets.extend(t.box_min.tolist())
        secrets.extend(t.box_max.tolist())
    secrets = np.array([s for s in secrets if abs(s) > 1e-3])  # 0 is everywhere (e.g. yaw)
    obs, info = env.reset(seed=3)
    seen = [obs, info]
    env.action_space.seed(3)
    for tool in TOOL_NAMES[:-1] * 4:
        a = env.action_space.sample()
        a["tool"] = TOOL_NAMES.index(tool)
        obs, r, term, trunc, info = env.step(a)
        assert not term
        seen += [{k: v for k, v in obs.items() if k != "image"}, info, json.dumps(info)]
    nums = np.concatenate([_numbers(x) for x in seen])
    hits = np.abs(nums[:, None] - secrets[None, :]) < 1e-6
    assert not hits.any(), nums[hits.any(axis=1)]


# ---- a stricter privacy scan: irregular geometry, every form of the boxes, numbers inside text ----
_DECIMAL = re.compile(r"-?\d+\.(\d+)(?:[eE]([-+]?\d+))?")


def _readable_numbers(x) -> np.ndarray:
    """``(value, tolerance)`` rows for every number an agent can read in ``x``: array entries,
    scalars, JSON inside strings *and numbers written in prose*. The tolerance is half a unit of
    the last printed decimal (plus float32 slack); numbers with fewer than 4 decimals are too
    coarse to tell a leak from chance and are skipped."""
    out: list[tuple[float, float]] = []

    def text(s: str) -> None:
        for m in _DECIMAL.finditer(s):
            decimals = len(m.group(1)) - int(m.group(2) or 0)
            if decimals >= 4:
                out.append((float(m.group(0)), 0.5 * 10.0 ** -decimals + 1e-6))

    def walk(v) -> None:
        if isinstance(v, dict):
            for k, w in v.items():
                walk(str(k))
                walk(w)
        elif isinstance(v, (list, tuple)):
            for w in v:
                walk(w)
        elif isinstance(v, np.ndarray):
            if v.dtype.kind == "f":
                for w in v.ravel().tolist():
                    text(repr(float(w)))
        elif isinstance(v, (float, np.floating)):
            text(repr(float(v)))
        elif isinstance(v, str):
            try:
                parsed = json.loads(v)
            except ValueError:
                text(v)
            else:
                walk(parsed) if not isinstance(parsed, (int, float)) else text(v)
    walk(x)
    return np.array(out).reshape(-1, 2)


def _leaks(seen, secrets: np.ndarray) -> np.ndarray:
    nums = _readable_numbers(seen)
    hit = np.abs(nums[:, :1] - secrets[None, :]) <= nums[:, 1:]
    return nums[hit.any(axis=1), 0]


def _irregular_scene():
    """Targets at irregular positions (no round numbers that prose could match by chance), two of
    them in one group, plus a hidden candidate whose data is private too."""
    from fakes import box_object
    from spatialscout_gym.core.camera import Intrinsics
    from spatialscout_gym.core.frames import CameraPose
    from spatialscout_gym.core.spec import Light, SceneSpec
    rng = np.random.default_rng(20240611)
    objects = []
    for i, (cat, group) in enumerate([("Cup", "cup"), ("Cup", "cup"), ("Sofa", "sofa"),
                                      ("Book", "book"), ("Lamp", "lamp"), ("Vase", "vase")]):
        objects.append(box_object(f"{cat.lower()}_{i}", cat, group, rng.uniform([0.5, -2.5, 0.1], [4.5, 2.5, 1.6]),
                                  rng.uniform(0.03, 0.5, 3), role="hidden" if i == 5 else "target"))
    camera = CameraPose(np.array([-1.2345678, 0.4321987, 1.4123456]), 31.7, -13.3)
    spec = SceneSpec.from_objects("irregular", objects, camera, Intrinsics.from_fov(64, 64, 60.0),
                                  [Light("directional", (1.0, 1.0, 1.0), direction_world=np.array([0, 0, -1.0]))])
    secrets = []
    frame = spec.task_frame
    dists = [float(np.linalg.norm(t.center_task)) for t in spec.targets]
    for obj in spec.private.objects:
        lo, hi = obj.aabb_world
        secrets += [*lo, *hi, *(hi - lo), *((lo + hi) / 2), *frame.to_task((lo + hi) / 2)]
    secrets += [d for d in dists if d < max(dists)]          # the largest is r, which is public
    return spec, np.array([s for s in secrets if abs(s) > 1e-3])


def test_privacy_scanner_finds_planted_leaks():
    """The scanner below can fail: each planted form of one secret is found."""
    _, secrets = _irregular_scene()
    s = float(secrets[7])
    for planted in [{"x": round(s, 4)}, f"the cup is at {s}", np.array([s], np.float32),
                    json.dumps({"p": [round(s, 6)]}), f"hint: {s:.5f} m", [np.float64(s)]]:
        assert _leaks([planted], secrets).size == 1, planted
    assert _leaks([{"x": round(s, 1) + 0.05}, "r + 0.5 = 5.072 m"], secrets).size == 0


def test_no_private_data_before_the_end_in_any_form():
    spec, secrets = _irregular_scene()
    env = SpatialScoutEnv(spec, renderer=FakeRenderer(spec), resolution=64, tool_call_budget=80)
    obs, info = env.reset(seed=11)
    seen = [{k: v for k, v in obs.items() if k != "image"}, info]
    env.action_space.seed(11)
    rewards, infos = [], [info]
    for tool in TOOL_NAMES[:-1] * 6:
        a = env.action_space.sample()
        a["tool"] = TOOL_NAMES.index(tool)
        if tool == "triangulate_observations":
            a["num_marks"] = 2          # well-formed requests, so some are answered with a point
        obs, r, term, trunc, info = env.step(a)
        assert not term and not trunc
        rewards.append(r)
        infos.append(info)
        seen += [{k: v for k, v in obs.items() if k != "image"}, info, json.dumps(info)]
    assert sum(i["tool_result"]["ok"] for i in infos[1:]) > 20      # the tools really ran
    assert rewards == [0.0] * len(rewards)                          # sparse: no score before the end
    leaked = _leaks(seen, secrets)
    assert leaked.size == 0, leaked
    assert "vase_5" not in json.dumps(infos)                         # the hidden candidate's id
