"""``SpatialScout/NBV-v3``: NBV-v2 whose observation says whether the last move was blocked and by
what, with ``action_masks()``. The flag is set exactly when a move left the camera in place; the
mask marks exactly the actions that stepping shows blocked; both env checkers pass; NBV-v2's spaces
are unchanged; the vector env's masks are the single env's; a short ``MaskablePPO.learn`` on real
renders never lets ``predict`` pick a masked action."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env as gym_check_env

import spatialscout_gym  # noqa: F401  (registers the ids)
from fakes import FakeRenderer, small_scene
from spatialscout_gym.core.frames import CameraPose
from spatialscout_gym.nbv.config import BLOCK_CAUSES, NBVConfig
from spatialscout_gym.nbv.walls import WallMap
from spatialscout_gym.scenes.catalog import load_scene
from spatialscout_gym.scenes.procedural import procedural_scene


def make_v3(spec, **kw):
    kw = {"resolution": 32, "obs_size": 32, "image_budget": 200, **kw}
    return gym.make("SpatialScout/NBV-v3", scene=spec, renderer=FakeRenderer(spec, 32, 32), **kw)


def test_nbv_v3_passes_both_checkers_and_leaves_nbv_v2_as_it_was():
    from stable_baselines3.common.env_checker import check_env as sb3_check_env
    spec = small_scene(64, 64)
    env = gym.make("SpatialScout/NBV-v3", scene=spec, renderer=FakeRenderer(spec), image_budget=4)
    v2 = gym.make("SpatialScout/NBV-v2", scene=spec, renderer=FakeRenderer(spec), image_budget=4)
    assert env.spec.id == "SpatialScout/NBV-v3" and env.unwrapped.config.blocked_obs is True
    assert env.observation_space["blocked"] == gym.spaces.Box(0.0, 1.0, (len(BLOCK_CAUSES),), np.float32)
    # NBV-v2's spaces are v3's without the new key
    assert "blocked" not in v2.observation_space.spaces and v2.action_space == env.action_space
    assert {k: s for k, s in env.observation_space.spaces.items() if k != "blocked"} == v2.observation_space.spaces
    obs, _ = env.reset(seed=0)
    assert not obs["blocked"].any()                      # nothing blocked at reset
    for e in (env, env.unwrapped):
        gym_check_env(e, skip_render_check=True)
        sb3_check_env(e, warn=True)
    flat = gym.make("SpatialScout/NBV-v3", scene=spec, renderer=FakeRenderer(spec), image_budget=4,
                    obs_layout="flat")
    assert flat.observation_space.shape == (3 * 64 * 64 + 796 + len(BLOCK_CAUSES),)
    gym_check_env(flat.unwrapped, skip_render_check=True)
    with pytest.raises(ValueError, match="blocked_obs=True needs walls=True"):
        NBVConfig(blocked_obs=True)
    for e in (env, v2, flat):
        e.close()


def test_the_blocked_flag_is_set_exactly_when_a_move_left_the_camera_in_place():
    spec = load_scene("Kitchen_01")
    env = make_v3(spec)
    tool = env.unwrapped.tool_env
    obs, _ = env.reset(seed=0)
    rng = np.random.default_rng(0)
    seen = set()
    for _ in range(60):
        a = int(rng.integers(18))
        before = tool.episode.pose.position_world.copy()
        obs, _, term, trunc, info = env.step(a)
        stayed = np.allclose(tool.episode.pose.position_world, before)
        moving = a % 3 > 0
        assert bool(obs["blocked"].any()) == (moving and stayed) == info["blocked"], (a, before)
        if info["blocked"]:
            assert obs["blocked"].sum() == 1 and BLOCK_CAUSES[int(np.argmax(obs["blocked"]))] == info["block_cause"]
        seen.add((moving, stayed))
        if term or trunc:
            obs, _ = env.reset()
            assert not obs["blocked"].any()
    assert {(True, True), (True, False), (False, True)} <= seen   # blocked moves, free moves, turns
    env.close()


def test_the_blocked_penalty_is_subtracted_on_exactly_the_blocked_steps():
    """Two envs on one scene and seed, stepped with the same actions: with ``reward_blocked_penalty``
    each step's reward is the plain one less the penalty where the move was blocked, else equal."""
    spec = load_scene("Kitchen_01")
    plain, penalised = make_v3(spec), make_v3(spec, reward_blocked_penalty=0.05)
    plain.reset(seed=3)
    penalised.reset(seed=3)
    rng = np.random.default_rng(3)
    blocked = 0
    for _ in range(40):
        a = int(rng.integers(18))
        _, r0, t0, u0, info = plain.step(a)
        _, r1, t1, u1, _ = penalised.step(a)
        assert r1 == pytest.approx(r0 - (0.05 if info["blocked"] else 0.0), abs=1e-12)
        blocked += info["blocked"]
        if t0 or u0:
            plain.reset(seed=4)
            penalised.reset(seed=4)
    assert blocked > 0
    with pytest.raises(ValueError, match="reward_blocked_penalty"):
        NBVConfig(reward_blocked_penalty=0.1)                    # without walls nothing is blocked
    with pytest.raises(ValueError, match="reward_blocked_penalty"):
        NBVConfig(walls=True, reward_blocked_penalty=-1)
    plain.close()
    penalised.close()


@pytest.mark.parametrize("cause,action", [("ceiling", 4), ("floor", 5)])
def test_the_flag_names_the_floor_and_the_ceiling(cause, action):
    """``motion="discrete"``: up (or down) move by move until the ceiling (floor) slab stops it."""
    spec = load_scene("Kitchen_01")
    env = make_v3(spec, motion="discrete")
    env.reset(seed=0)
    for _ in range(40):
        obs, _, _, _, info = env.step(action)
        if info["blocked"]:
            break
    assert info["block_cause"] == cause and obs["blocked"][BLOCK_CAUSES.index(cause)] == 1.0
    env.close()


def test_a_move_that_ends_off_the_floor_is_named_so():
    floor = np.array([[[0.0, 0.0, -0.1], [4.0, 4.0, 0.0]]])
    walls = WallMap(np.zeros((0, 2, 3)), floor, 0.1)
    pose = CameraPose(np.array([3.5, 2.0, 1.4]), 0.0, -20.0)
    assert walls.block_cause(pose, np.array([1.0, 0.0, 0.0])) == "off_floor"
    assert walls.block_cause(pose, np.array([0.3, 0.0, 0.0])) is None


def replay(env, prefix: list[int]):
    env.reset(seed=0)
    for a in prefix:
        env.step(a)


@pytest.mark.parametrize("scene", ["Kitchen_01", "apartment"])
def test_action_masks_mark_exactly_the_moves_that_would_be_blocked(scene):
    """At several poses of a walk (some next to a wall), each action is stepped from the same state
    (reset, replay the walk): it is blocked exactly where the mask said False."""
    spec = load_scene(scene) if scene != "apartment" else procedural_scene(5, layout="Apartment")
    env = make_v3(spec)
    rng = np.random.default_rng(1)
    prefix: list[int] = []
    masked = allowed = 0
    env.reset(seed=0)
    for depth in range(5):
        replay(env, prefix)
        mask = env.unwrapped.action_masks()
        assert mask.shape == (18,) and mask.dtype == bool and mask[0::3].all()   # turning in place is never blocked
        for a in range(18):
            replay(env, prefix)
            _, _, _, _, info = env.step(a)
            assert info["blocked"] == (not mask[a]), (prefix, a)
        masked += int((~mask).sum())
        allowed += int(mask[1::3].sum() + mask[2::3].sum())
        prefix.append(2 if depth % 3 else int(rng.integers(18)))   # mostly straight on, into a wall
    assert masked > 0 and allowed > 0
    env.close()


def test_the_vector_envs_masks_are_the_single_envs():
    spec = load_scene("Kitchen_01")
    kw = dict(scene=spec, resolution=32, obs_size=32, image_budget=50)
    venv = gym.make_vec("SpatialScout/NBV-v3", num_envs=2, vectorization_mode="vector_entry_point",
                        renderer=FakeRenderer(spec, 32, 32), **kw)
    single = gym.make("SpatialScout/NBV-v3", renderer=FakeRenderer(spec, 32, 32), **kw)
    venv.reset(seed=0)
    single.reset(seed=0)
    for _ in range(5):
        batch = venv.step(np.array([2, 11]))[0]
        one = single.step(2)[0]
        np.testing.assert_array_equal(venv.action_masks()[0], single.unwrapped.action_masks())
        np.testing.assert_array_equal(batch["blocked"][0], one["blocked"])
    assert not venv.action_masks().all()         # against the wall by now
    venv.close()
    single.close()


@pytest.mark.render
def test_maskable_ppo_learns_and_never_picks_a_masked_action():
    from sb3_contrib import MaskablePPO
    from stable_baselines3.common.vec_env import DummyVecEnv
    import torch
    torch.set_num_threads(1)
    # 36 px: the smallest image SB3's CNN takes; procedural apartments and rooms, real renders
    venv = DummyVecEnv([lambda: gym.make("SpatialScout/NBV-v3", resolution=36, obs_size=36, image_budget=8,
                                         reconfigure_every=4)])
    venv.seed(3)
    model = MaskablePPO("MultiInputPolicy", venv, n_steps=64, batch_size=32, n_epochs=1, seed=3, verbose=0)
    model.learn(total_timesteps=128)
    assert model.num_timesteps >= 128
    env = venv.envs[0]
    obs, _ = env.reset(seed=11)
    masked_states = 0
    for _ in range(40):
        mask = env.unwrapped.action_masks()
        masked_states += int(not mask.all())
        action, _ = model.predict(obs, action_masks=mask, deterministic=False)
        assert mask[int(action)], (mask, action)
        obs, _, term, trunc, info = env.step(int(action))
        assert not info["blocked"]                     # a masked policy never walks into a wall
        if term or trunc:
            obs, _ = env.reset()
    assert masked_states > 0                           # the mask did exclude something on the way
    venv.close()


def test_the_spec_sheet_names_the_env_the_shipped_policy_was_last_trained_in():
    """``help(env.unwrapped)`` says what the shipped policy's ``nbv_config.json`` says."""
    import json
    from pathlib import Path

    import spatialscout_gym.nbv as nbv_pkg
    from spatialscout_gym.nbv.env import NBVEnv
    saved = json.loads((Path(nbv_pkg.__file__).parent / "models/nbv_ppo/nbv_config.json").read_text())
    doc = " ".join((NBVEnv.__doc__ or "").split())
    assert f'``"env_id": "{saved["env_id"]}"``' in doc and "not retrained" not in doc


def test_the_spec_sheet_names_every_shipped_policy_and_what_its_files_say():
    """Every shipped policy's ``nbv_config.json`` is described as it is: the NBV-v3 policy's env
    and starting weights, and the recipe's training-only reward settings, which are not defaults."""
    import json
    from pathlib import Path

    import spatialscout_gym.nbv as nbv_pkg
    from spatialscout_gym.nbv import env as env_module
    from spatialscout_gym.nbv.config import NBVConfig
    models = Path(nbv_pkg.__file__).parent / "models"
    v3 = json.loads((models / "nbv_ppo_v3/nbv_config.json").read_text())
    sheet = " ".join((env_module.NBVEnv.__doc__ or "").split())
    assert f'``"env_id": "{v3["env_id"]}"``' in sheet and f'``"init_model": "{v3["init_model"]}"``' in sheet
    assert f"{v3['total_timesteps']:,} steps" in sheet
    blocked = json.loads((models / "nbv_ppo_v3_blocked/nbv_config.json").read_text())
    trained = json.loads((models / "nbv_ppo_v3_blocked/args.json").read_text())
    assert trained["train_only_blocked"] is True and "--train-only-blocked" in sheet
    assert f"``models/{blocked['init_model'].split('/')[-1]}`` fine-tuned on NBV-v3 in its weights" in sheet
    assert f"{blocked['total_timesteps']:,} steps" in sheet
    assert f'``"scan_guard_after_blocked": {blocked["scan_guard_after_blocked"]}``' in sheet
    defaults = NBVConfig()
    source = " ".join(Path(env_module.__file__).read_text().split())
    for name in ("nbv_ppo", "nbv_ppo_v3", "nbv_ppo_v3_blocked"):
        saved = json.loads((models / name / "nbv_config.json").read_text())
        assert all(saved[k] == v for k, v in env_module.NBV_V1_DEFAULTS.items() if k in saved)
        # the recipe's settings that are not NBVConfig's defaults are named as such beside the defaults
        assert saved["reward_submitted_weight"] != defaults.reward_submitted_weight
        assert (f"{saved['reward_submitted_weight']:g} x the submitted mean IoU (``reward_submitted_weight``)"
                in source and f"``{saved['reward_mapper']}`` mapper (``reward_mapper``)" in source)
