"""NextBestViewWrapper: both env checkers, spaces, rewards summing to the final score, episode end,
and the continuous motion scaling (docs/protocol.md section 4 move bound). Uses the Vulkan-free fake
renderer, whose privileged capture ray-casts the fixture's boxes."""

from __future__ import annotations

import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env as gym_check_env
from hypothesis import given, settings
from hypothesis import strategies as st

from fakes import FakeRenderer, small_scene
from spatialscout_gym.episode.tools import MAX_TRANSLATION_M
from spatialscout_gym.nbv.wrapper import DISCRETE_MOTIONS, NBVConfig, make_nbv_env, motion_args


def fake_nbv(motion="discrete", image_budget=6, **kw):
    spec = small_scene(64, 64)
    return make_nbv_env(spec, image_budget=image_budget, resolution=64, motion=motion,
                        renderer=FakeRenderer(spec), **kw)


@pytest.mark.parametrize("motion", ["discrete", "continuous", "heading"])
def test_wrapper_passes_gymnasium_and_sb3_checkers(motion):
    from stable_baselines3.common.env_checker import check_env as sb3_check_env
    env = fake_nbv(motion)
    gym_check_env(env, skip_render_check=True)
    sb3_check_env(env, warn=True)
    assert env.observation_space["image"].dtype == np.uint8
    assert env.observation_space["image"].shape == (64, 64, 3)


def test_rewards_sum_to_final_all_target_mean_iou_and_budget_terminates():
    env = fake_nbv(image_budget=5, mapper="oracle-surface")
    obs, info = env.reset(seed=3)
    start = info["all_mean_iou"]
    rng = np.random.default_rng(0)
    total, steps = 0.0, 0
    while True:
        obs, r, terminated, truncated, info = env.step(int(rng.integers(len(DISCRETE_MOTIONS))))
        total += r
        steps += 1
        assert not truncated
        if terminated:
            break
    final = info["metrics"]["all"]["mean_iou"]
    assert total + start == pytest.approx(final, abs=1e-9)
    ep = env.unwrapped.episode
    assert ep.done and ep.end_reason == "finish_mapping"
    assert steps == 4 or info["coverage"] == 1.0          # V - 1 steps unless all targets mapped
    assert obs["coverage"][1] == pytest.approx(ep.images_left / 5)


def test_oracle_mapper_score_equals_coverage():
    env = fake_nbv(image_budget=8)
    env.reset(seed=0)
    for a in [6, 6, 6, 7]:
        _, _, terminated, _, info = env.step(a)
        assert info["all_mean_iou"] == pytest.approx(info["coverage"])
        if terminated:
            break


def test_discrete_turn_changes_yaw_and_sectors_feature():
    env = fake_nbv(image_budget=6)
    obs, _ = env.reset(seed=0)
    assert obs["sectors"][0] == 1 and obs["sectors"].sum() == 1   # only the initial heading
    yaw0 = env.unwrapped.episode.pose.yaw_deg
    obs, *_ = env.step(DISCRETE_MOTIONS.index("turn_left"))
    assert env.unwrapped.episode.pose.yaw_deg == pytest.approx(yaw0 + 45.0)
    # the heading just captured is sector 0; the initial one is now 45 degrees clockwise (k = 7)
    assert obs["sectors"][0] == 1 and obs["sectors"][7] == 1 and obs["sectors"].sum() == 2


@settings(max_examples=50, deadline=None)
@given(st.lists(st.floats(-1, 1), min_size=5, max_size=5))
def test_continuous_motion_respects_move_bound(action):
    spec = small_scene(64, 64)
    env = make_nbv_env(spec, image_budget=3, resolution=64, motion="continuous",
                       renderer=FakeRenderer(spec))
    env.reset(seed=0)
    (yaw, pitch), move = motion_args(env.config, np.array(action, np.float32))
    assert np.linalg.norm(move) <= MAX_TRANSLATION_M
    assert abs(yaw) <= 180.0 and abs(pitch) <= 45.0
    _, _, _, _, info = env.step(np.array(action, np.float32))
    assert info["refused"] == []                      # a scaled action is never out of bounds here


def test_bad_arguments_say_what_was_expected():
    with pytest.raises(ValueError, match="motion must be one of 'discrete', 'continuous', 'heading'"):
        NBVConfig(motion="teleport")
    with pytest.raises(ValueError, match=r"strides_m .* \[0, 2\] metres"):
        NBVConfig(motion="heading", strides_m=(0.0, 3.0))
    with pytest.raises(ValueError, match=r"heading NBV action must be one integer in \[0, 17\]"):
        motion_args(NBVConfig(motion="heading"), 18)
    env = fake_nbv()
    env.reset(seed=0)
    with pytest.raises(ValueError, match=r"in \[0, 9\]"):
        motion_args(env.config, 12)
    with pytest.raises(ValueError, match="unknown mapper"):
        fake_nbv(mapper="psychic")


@pytest.mark.parametrize("motion", ["discrete", "heading"])
def test_wrapper_and_controller_give_the_same_observations(motion):
    """``NBVController`` (the NBV agents) and ``NextBestViewWrapper`` (RL) build the observation
    through the same functions from the same numbers, so a trained policy sees exactly the same
    thing in both (bit for bit)."""
    from spatialscout_gym.episode.episode import Episode
    from spatialscout_gym.nbv.wrapper import NBVController
    from spatialscout_gym.nbv.mappers import make_mapper
    spec = small_scene(64, 64)
    env = make_nbv_env(spec, image_budget=8, resolution=64, renderer=FakeRenderer(spec), motion=motion)
    obs_w, _ = env.reset(seed=0)
    renderer = FakeRenderer(spec, 64, 64)
    ctl = NBVController(Episode(spec.public, renderer, image_budget=8, tool_call_budget=None), spec, renderer,
                        make_mapper("oracle"), NBVConfig(motion=motion))
    if motion == "discrete":
        actions = [DISCRETE_MOTIONS.index(a) for a in ("forward", "turn_left", "forward", "look_down", "right",
                                                       "turn_right", "back")]
    else:  # turn 60 + 1 m, stay, turn 180 + 2 m (four move calls), turn -60, ...
        actions = [4, 0, 11, 15, 2, 7, 9]
    for a in [None, *actions]:
        if a is not None:
            obs_w, *_ = env.step(a)
            ctl.step(a)
        obs_c = ctl.observation()
        assert set(obs_w) == set(obs_c) == set(env.observation_space.spaces)
        for key in obs_w:
            np.testing.assert_array_equal(obs_w[key], obs_c[key], err_msg=key)
        assert env.observation_space.contains(obs_c)


def test_map_observation_is_egocentric_memory_of_captures():
    """``map`` channel 0 counts captures per cell around the camera (heading up), channel 1 marks
    the floor inside earlier view wedges, channel 2 the search radius."""
    from spatialscout_gym.nbv.wrapper import MAP_CHANNELS, ViewHistory
    cfg = NBVConfig(map_cells=8, map_cell_m=1.0, view_range_m=3.0)
    h = ViewHistory(cfg.cell_m)
    h.record([0.0, 0.0, 1.0], 0.0)                         # at the origin, facing task +x
    m = h.visit_map([0.0, 0.0, 1.0], 0.0, 2.0, cfg)
    assert m.shape == (len(MAP_CHANNELS), 8, 8) and m.dtype == np.float32
    assert m[0].sum() == pytest.approx(1 / 3) and m[0, 4, 4] > 0     # the capture, just behind-right of centre
    assert m[1, 1, 4] > 0 and m[1, 6, 4] == 0              # 2.5 m ahead viewed, 2.5 m behind not
    assert m[2, 4, 4] == 1 and m[2, 0, 0] == 0             # inside / outside radius 2 + 0.5 m
    # 2 m ahead, turned to face task +y (left): the first capture is now 2 m to the left (column 2),
    # the floor it viewed (task x up to 3 m) to the right (column 4: x = 2.5 m), what lies behind it
    # (column 0: x = -1.5 m) unviewed
    m2 = h.visit_map([2.0, 0.0, 1.0], 90.0, 2.0, cfg)
    assert m2[0, 4, 2] > 0 and m2[0].sum() == pytest.approx(1 / 3)
    assert m2[1, 3:5, 4].min() > 0 and m2[1, :, 0].max() == 0 and m2[1, :, 5:].max() == 0


def test_heading_motion_turns_sets_pitch_and_strides_in_bounded_moves():
    """Action ``k * 3 + d`` turns by 60 k degrees, sets the pitch to -20 and moves 0/1/2 m along
    the new heading; a 2 m stride is four ``move_camera`` calls, each within the 1 m move bound."""
    from spatialscout_gym.nbv.wrapper import move_parts
    assert [move_parts(m) for m in ((0.5, 0, 0), (1.0, 0, 0), (2.0, 0, 0), (0.3, -0.3, 0.1))] == [1, 2, 4, 1]
    cfg = NBVConfig(motion="heading")
    assert motion_args(cfg, 5, pitch_deg=10.0) == ((60.0, -30.0), (2.0, 0.0, 0.0))
    assert motion_args(cfg, 9, pitch_deg=-20.0) == ((180.0, 0.0), (0.0, 0.0, 0.0))
    assert motion_args(cfg, 13, pitch_deg=-20.0)[0][0] == pytest.approx(-120.0)   # k = 4 wraps to the right
    env = fake_nbv("heading", image_budget=6)
    assert env.action_space.n == 18
    env.reset(seed=0)
    ep = env.unwrapped.episode
    p0, yaw0, events0 = ep.pose.position_world.copy(), ep.pose.yaw_deg, len(ep.trace)
    _, _, _, _, info = env.step(5)                          # turn 60 left, pitch -20, 2 m forward
    assert info["refused"] == []
    assert ep.pose.yaw_deg == pytest.approx(yaw0 + 60.0) and ep.pose.pitch_deg == pytest.approx(-20.0)
    heading = np.deg2rad(ep.pose.yaw_deg)
    np.testing.assert_allclose(ep.pose.position_world - p0, [2 * np.cos(heading), 2 * np.sin(heading), 0], atol=1e-9)
    calls = [e for e in ep.trace[events0:] if e["event"] == "tool_call"]
    moves = [e for e in calls if e["tool"] == "move_camera"]
    assert [e["tool"] for e in calls[:6]] == ["rotate_camera", *["move_camera"] * 4, "capture_image"]
    assert all(np.linalg.norm([m["args"][k] for k in ("forward", "right", "up")]) <= MAX_TRANSLATION_M
               for m in moves)


def test_scan_is_an_egocentric_free_space_profile_of_nearby_captures():
    """``depth_rays`` turns a depth image into (angle, free distance) rays; ``ViewHistory.scan``
    bins the rays of captures within 1 m by egocentric heading and forgets far captures."""
    from spatialscout_gym.nbv.wrapper import ViewHistory, depth_rays
    depth = np.full((32, 32), 4.0, np.float32)
    depth[:, :16] = 2.0                                    # nearer on the left half of the image
    depth[:, 30:] = 0.0                                    # nothing hit at the right edge
    angles, free = depth_rays(depth, 90.0, columns=16)
    assert angles[0] > 40 and angles[-1] < -40 and np.all(np.diff(angles) < 0)   # left +
    np.testing.assert_allclose(free[:8], 2.0 / np.cos(np.deg2rad(angles[:8])), rtol=1e-6)
    assert np.isinf(free[-1]) and free[8] == pytest.approx(4.0 / np.cos(np.deg2rad(angles[8])))
    cfg = NBVConfig(scan_bins=12, scan_range_m=6.0)
    h = ViewHistory(cfg.cell_m)
    assert not h.scan([0, 0, 1], 0.0, cfg).any()           # nothing captured: all unknown
    h.record([0.0, 0.0, 1.0], 0.0, (angles, free))
    s = h.scan([0.0, 0.0, 1.0], 0.0, cfg)
    assert s.shape == (12,) and s.dtype == np.float32
    assert 2 / 6 <= s[1] < 2.5 / 6 and 4 / 6 <= s[11] <= 1.0   # 30 degrees left nearer than 30 right
    assert s[6] == 0                                        # behind: unknown
    turned = h.scan([0.0, 0.0, 1.0], 90.0, cfg)            # facing left, the view is now to the right
    assert turned[9] == pytest.approx(s[0]) and turned[0] == 0
    assert not h.scan([3.0, 0.0, 1.0], 0.0, cfg).any()     # farther than scan_radius_m: not used
    from spatialscout_gym.nbv.wrapper import nbv_observation_space
    assert "scan" not in nbv_observation_space(NBVConfig(scan_bins=0)).spaces   # policies trained before it


def test_depth_rays_one_sort_medians_equal_per_strip_medians():
    """The equal-strip fast path of ``depth_rays`` gives exactly ``np.median`` of each strip's hits
    (odd and even hit counts, strips with no hit)."""
    from spatialscout_gym.nbv.wrapper import depth_rays
    rng = np.random.default_rng(0)
    for size in (16, 48, 64):
        depth = rng.uniform(0.2, 8.0, (size, size)).astype(np.float32)
        depth[rng.random((size, size)) < 0.4] = 0.0
        depth[:, : size // 4] = 0.0                         # whole strips without a hit
        angles, free = depth_rays(depth, 65.0, columns=16)
        band = depth[int(0.35 * size):int(0.65 * size) + 1].astype(float)
        for i, strip in enumerate(np.split(band, 16, axis=1)):
            hits = strip[strip > 0]
            want = np.median(hits) / np.cos(np.deg2rad(angles[i])) if hits.size else np.inf
            assert free[i] == pytest.approx(want, rel=1e-12) or (np.isinf(want) and np.isinf(free[i]))


def test_inner_time_limit_is_reported_as_truncation_not_termination():
    """A ``TimeLimit`` inside the NBV wrapper ends the episode with ``truncated=True,
    terminated=False`` so that PPO bootstraps the value of the last state."""
    import gymnasium as gym

    from spatialscout_gym.nbv.wrapper import NextBestViewWrapper
    spec = small_scene(64, 64)
    inner = gym.make("SpatialScout/Procedural-v0", scene=spec, resolution=64, image_budget=20,
                     tool_call_budget=None, renderer=FakeRenderer(spec), disable_env_checker=True,
                     max_episode_steps=3)
    env = NextBestViewWrapper(inner)
    env.reset(seed=0)
    for _ in range(20):
        _, _, terminated, truncated, info = env.step(6)    # turns: the budget is far from spent
        if terminated or truncated:
            break
    assert truncated and not terminated
    assert "metrics" in info
