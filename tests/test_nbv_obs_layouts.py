"""The NBV envs' observation layouts (``obs_layout``): each passes Gymnasium's and SB3's env
checkers, carries exactly the numbers of the default ``dict`` layout (same scene, seed and
actions), and is the same through ``gym.make("SpatialScout/NBV-v1")``, ``make_nbv_env`` (NBV-v0)
and the vector envs (one process and worker processes); a bad layout is refused in one line."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env as gym_check_env

import spatialscout_gym  # noqa: F401  (registers the ids)
from fakes import FakeRenderer, small_scene
from spatialscout_gym.nbv.wrapper import make_nbv_env
from spatialscout_gym.nbv.config import (OBS_LAYOUTS, VECTOR_KEYS, NBVConfig, layout_observation,
                                                  layout_observation_space)

LAYOUTS = [x for x in OBS_LAYOUTS if x != "dict"]
ACTIONS = [6, 0, 7, 2, 1, 6, 0, 0, 3, 3, 17, 11]


def fake_v1(**kw):
    spec = small_scene(64, 64)
    return gym.make("SpatialScout/NBV-v1", scene=spec, renderer=FakeRenderer(spec), **kw)


def vector_of(obs: dict) -> np.ndarray:
    """The ``vector`` the docs describe, built here key by key from the dict observation."""
    return np.concatenate([np.asarray(obs[k], np.float32).ravel() for k in VECTOR_KEYS if k in obs])


def test_the_default_is_the_dict_unchanged():
    env = fake_v1(image_budget=4)
    assert env.unwrapped.obs_layout == "dict"
    assert env.observation_space == layout_observation_space(env.unwrapped.config, "dict")
    assert set(env.observation_space.spaces) == {"image", "pose", "coverage", "sectors", "map", "scan"}
    env.close()


@pytest.mark.parametrize("layout", LAYOUTS)
def test_both_checkers_pass_on_every_layout(layout):
    from stable_baselines3.common.env_checker import check_env as sb3_check_env
    env = fake_v1(image_budget=4, obs_layout=layout)
    for e in (env, env.unwrapped):
        gym_check_env(e, skip_render_check=True)
        sb3_check_env(e, warn=True)
    env.close()


def test_the_spaces_are_the_documented_ones():
    config = NBVConfig(motion="heading")
    n = 6 + 2 + 8 + 3 * 16 * 16 + 12
    image = layout_observation_space(config, "image")
    assert image == gym.spaces.Box(0, 255, (3, 64, 64), np.uint8)
    both = layout_observation_space(config, "image+vector")
    assert set(both.spaces) == {"image", "vector"} and both["image"] == image
    assert both["vector"].shape == (n,) and both["vector"].dtype == np.float32
    assert both["vector"].low[:6].tolist() == [-1.0] * 6 and both["vector"].low[6:].min() == 0.0
    assert both["vector"].high.max() == 1.0
    flat = layout_observation_space(config, "flat")
    assert flat.shape == (3 * 64 * 64 + n,) and flat.dtype == np.float32
    no_scan = layout_observation_space(NBVConfig(motion="heading", scan_bins=0, obs_size=40), "flat")
    assert no_scan.shape == (3 * 40 * 40 + n - 12,)


@pytest.mark.parametrize("layout", LAYOUTS)
def test_a_layout_carries_the_dicts_numbers(layout):
    ref, env = fake_v1(image_budget=8), fake_v1(image_budget=8, obs_layout=layout)
    pairs = [(ref.reset(seed=3)[0], env.reset(seed=3)[0])]
    for a in ACTIONS:
        r, e = ref.step(a), env.step(a)
        assert r[1:4] == e[1:4]                      # reward, terminated, truncated
        pairs.append((r[0], e[0]))
        if r[2] or r[3]:
            pairs.append((ref.reset(seed=4)[0], env.reset(seed=4)[0]))
    assert len(pairs) > len(ACTIONS)                 # an episode ended and a new one began
    for d, o in pairs:
        assert env.observation_space.contains(o)
        chw = np.transpose(d["image"], (2, 0, 1))     # channel-first RGB
        if layout == "image":
            assert o.dtype == np.uint8 and np.array_equal(o, chw)
        elif layout == "image+vector":
            assert np.array_equal(o["image"], chw) and np.array_equal(o["vector"], vector_of(d))
            assert np.array_equal(o["vector"][:6], d["pose"])
            assert np.array_equal(o["vector"][16:16 + 768].reshape(3, 16, 16), d["map"])
        else:
            pixels = chw.size
            assert np.array_equal(np.rint(o[:pixels] * 255).astype(np.uint8).reshape(chw.shape), chw)
            assert np.array_equal(o[pixels:], vector_of(d))
    assert any(d["map"][0].sum() > 0 for d, _ in pairs)   # the map really carries visits
    ref.close()
    env.close()


def test_nbv_v0_and_the_vector_envs_give_the_same_layout():
    spec = small_scene(64, 64)
    kw = dict(scene=spec, image_budget=5, motion="heading", obs_layout="image+vector")
    v0 = make_nbv_env(renderer=FakeRenderer(spec), **kw)
    v1 = gym.make("SpatialScout/NBV-v1", renderer=FakeRenderer(spec), **kw)
    assert v0.observation_space == v1.observation_space
    a, b = v0.reset(seed=5)[0], v1.reset(seed=5)[0]
    assert all(np.array_equal(a[k], b[k]) for k in ("image", "vector"))
    venv = gym.make_vec("SpatialScout/NBV-v1", num_envs=2, vectorization_mode="vector_entry_point",
                        renderer=FakeRenderer(spec), **{k: v for k, v in kw.items() if k != "motion"})
    dvenv = gym.make_vec("SpatialScout/NBV-v1", num_envs=2, vectorization_mode="vector_entry_point",
                         renderer=FakeRenderer(spec), scene=spec, image_budget=5)
    assert venv.single_observation_space == v1.observation_space
    obs, dobs = venv.reset(seed=5)[0], dvenv.reset(seed=5)[0]
    assert np.array_equal(obs["image"][0], a["image"]) and np.array_equal(obs["vector"][0], a["vector"])
    assert np.array_equal(obs["vector"], layout_observation(dobs, "image+vector")["vector"])
    for _ in range(6):
        out, dout = venv.step(np.array([7, 2])), dvenv.step(np.array([7, 2]))
        batched = layout_observation(dout[0], "image+vector")     # the batch rule of the dict
        assert all(np.array_equal(out[0][k], batched[k]) for k in ("image", "vector"))
        assert np.array_equal(out[1], dout[1]) and np.array_equal(out[2], dout[2])
    for e in (v0, v1, venv, dvenv):
        e.close()


@pytest.mark.render
@pytest.mark.parametrize("layout", ["flat", "image"])
def test_worker_vector_env_concatenates_array_layouts(layout):
    kw = dict(resolution=32, obs_size=36, image_budget=4, reconfigure_every=2)
    workers = gym.make_vec("SpatialScout/NBV-v1", num_envs=2, vectorization_mode="vector_entry_point",
                           num_workers=2, obs_layout=layout, **kw)
    single = gym.make_vec("SpatialScout/NBV-v1", num_envs=2, vectorization_mode="vector_entry_point",
                          **kw)
    assert workers.single_observation_space == layout_observation_space(single.config, layout)
    a, b = workers.reset(seed=9)[0], single.reset(seed=9)[0]
    assert np.array_equal(a, layout_observation(b, layout))
    out, ref = workers.step(np.array([3, 16])), single.step(np.array([3, 16]))
    assert out[0].shape == workers.observation_space.shape
    assert np.array_equal(out[0], layout_observation(ref[0], layout)) and np.array_equal(out[1], ref[1])
    workers.close()
    single.close()


def test_a_bad_layout_is_refused_in_one_line():
    with pytest.raises(ValueError, match=r"^obs_layout must be one of 'dict', 'image', 'flat', "
                                         r"'image\+vector', got 'pixels'$"):
        fake_v1(obs_layout="pixels")
    with pytest.raises(ValueError, match="obs_layout must be one of"):
        make_nbv_env("procedural", obs_layout="chw")
