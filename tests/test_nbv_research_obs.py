"""The NBV research observations (``privileged_obs``): each key passes Gymnasium's and SB3's env
checkers, and on a real SAPIEN render matches SAPIEN's own buffers of the capture's one picture:
``depth`` is the privileged frame's depth at the sampled pixels, ``segmentation`` names the
inventory entry the privileged segmentation shows, a ``points`` row projects back to its pixel at
its depth, and ``occupancy`` marks the voxel at a measured depth occupied and the voxels along the
ray free; the occupancy gain is a reward term; bad arguments are refused in one line."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env as gym_check_env

import spatialscout_gym  # noqa: F401  (registers the ids)
from fakes import FakeRenderer, small_scene
from spatialscout_gym.core.camera import project_world_to_pixel
from spatialscout_gym.nbv.config import (OCCUPANCY_FREE, OCCUPANCY_OCCUPIED, OCCUPANCY_UNKNOWN, RESEARCH_KEYS,
                                         NBVConfig)
from spatialscout_gym.nbv.occupancy import OccupancyGrid
from spatialscout_gym.nbv.research import point_pixels, sample_pixels

RES, SIZE = 64, 32


def fake_v1(**kw):
    spec = small_scene(64, 64)
    return gym.make("SpatialScout/NBV-v1", scene=spec, renderer=FakeRenderer(spec), **kw)


@pytest.mark.parametrize("keys,layout", [([k], "dict") for k in RESEARCH_KEYS] + [(True, "dict"),
                                                                                     (True, "image+vector")])
def test_both_checkers_pass_with_each_key(keys, layout):
    from stable_baselines3.common.env_checker import check_env as sb3_check_env
    env = fake_v1(image_budget=4, privileged_obs=keys, obs_layout=layout, points=64, occupancy_cells=(16, 16, 8))
    names = RESEARCH_KEYS if keys is True else keys
    assert set(names) <= set(env.observation_space.spaces)
    for e in (env, env.unwrapped):
        gym_check_env(e, skip_render_check=True)
        sb3_check_env(e, warn=True)
    env.close()


def test_bad_arguments_are_refused_in_one_line():
    with pytest.raises(ValueError, match=r"privileged_obs must be .*'normals'") as e:
        NBVConfig(privileged_obs=["depth", "normals"])
    assert "\n" not in str(e.value)
    with pytest.raises(ValueError, match="needs a Dict layout") as e:
        fake_v1(privileged_obs=True, obs_layout="flat")
    assert "\n" not in str(e.value)
    assert NBVConfig(privileged_obs="depth").privileged_obs == ("depth",)
    assert NBVConfig(privileged_obs=False).privileged_obs == ()


def test_occupancy_gain_is_a_reward_term():
    """The same episode with and without the term: the rewards differ by w x gain / voxels."""
    kw = dict(image_budget=6, occupancy_cells=(32, 32, 16))
    plain, occ = fake_v1(**kw), fake_v1(reward_occupancy_weight=2.0, **kw)
    plain.reset(seed=1), occ.reset(seed=1)
    gains = []
    for a in (4, 7, 10, 13):
        p, o = plain.step(a), occ.step(a)
        assert "occupancy_gain" not in p[4]
        gains.append(o[4]["occupancy_gain"])
        assert o[1] == pytest.approx(p[1] + 2.0 * gains[-1] / (32 * 32 * 16), abs=1e-12)
        if p[2] or p[3]:
            break
    assert max(gains) > 0


def test_occupancy_grid_ray_cast():
    """A ray marks the voxels it crosses free and the voxel of its end occupied; occupied stays."""
    grid = OccupancyGrid((16, 16, 8), 0.25, 1.5)
    assert grid.voxel_of(np.array([0.0, 0.0, 0.0])).tolist() == [8, 8, 4]
    gain = grid.update(np.zeros(3), np.array([[1.1, 0.0, 0.0], [np.nan, 0.0, 0.0], [0.0, -1.9, 0.0]]))
    g = grid.grid
    assert g[8 + 4, 8, 4] == OCCUPANCY_OCCUPIED                      # x = 1.1 m lies in voxel 12
    assert all(g[i, 8, 4] == OCCUPANCY_FREE for i in range(8, 12))   # the ray's way there
    assert g[8 + 5, 8, 4] == OCCUPANCY_UNKNOWN                       # behind the hit
    assert g[8, 2, 4] == OCCUPANCY_FREE and g[8, 0, 4] == OCCUPANCY_UNKNOWN   # a hit past the 1.5 m range
    assert np.count_nonzero(g == OCCUPANCY_OCCUPIED) == 1
    assert gain == grid.known == np.count_nonzero(g)
    assert grid.update(np.array([2.0, 0.0, 0.0]), np.array([[0.3, 0.0, 0.0]])) >= 0
    assert grid.grid[12, 8, 4] == OCCUPANCY_OCCUPIED                 # a ray through it did not clear it


@pytest.fixture(scope="module")
def sapien_env():
    pytest.importorskip("sapien")
    env = gym.make("SpatialScout/NBV-v1", scene="Kitchen_01", resolution=RES, obs_size=SIZE, image_budget=6,
                   privileged_obs=True, points=256)
    yield env
    env.close()


@pytest.mark.render
def test_research_keys_match_sapiens_buffers(sapien_env):
    from stable_baselines3.common.env_checker import check_env as sb3_check_env
    env = sapien_env
    u = env.unwrapped
    env.reset(seed=0)
    renderer = u.tool_env.renderer
    before = renderer.render_count
    obs, _, _, _, info = env.step(4)                      # turn 60 degrees, 1 m
    assert renderer.render_count - before == 1            # colour, depth and segmentation: one render
    priv = u.tool_env.privileged_frame()
    assert renderer.render_count - before == 1
    rows = cols = 2 * np.arange(SIZE) + 1               # floor((i + 1/2) 64 / 32), as documented
    assert [r.tolist() for r in sample_pixels(RES, RES, SIZE)] == [rows.tolist(), cols.tolist()]
    # depth: the privileged frame's at every sampled pixel, metres
    assert obs["depth"].dtype == np.float32
    np.testing.assert_array_equal(obs["depth"], priv.depth_m[rows[:, None], cols[None, :]])
    # segmentation: the inventory entry the privileged segmentation shows, -1 elsewhere
    spec = u.tool_env.scene_spec
    inventory = [e.id for e in spec.public.inventory]
    raw = priv.segmentation[rows[:, None], cols[None, :]]
    shown = obs["segmentation"]
    assert (shown >= 0).sum() > 20
    for i, j in zip(*np.nonzero(raw >= 0)):
        obj = spec.private.objects[raw[i, j]].id
        assert shown[i, j] == (inventory.index(obj) if obj in inventory else -1)
    assert np.all(shown[raw < 0] == -1)
    # points: row m is the surface point of its pixel; it projects back onto that pixel at its depth
    pose = u.tool_env.episode.frames[max(u.tool_env.episode.frames)].pose
    valid = obs["depth"] > 0
    pick = point_pixels(valid, 256)
    flat = np.flatnonzero(valid)                        # row m: valid pixel floor(m V / N), row-major
    assert pick.tolist() == [int(flat[(m * flat.size) // 256]) for m in range(256)] and flat.size >= 256
    world = u.tool_env.task_frame.to_world(obs["points"].astype(np.float64))
    uv, z = project_world_to_pixel(renderer.intrinsics, pose, world)
    for m in (0, 77, 255):
        i, j = divmod(int(pick[m]), SIZE)
        assert np.rint(uv[m]).astype(int).tolist() == [cols[j], rows[i]]
        assert z[m] == pytest.approx(obs["depth"][i, j], abs=1e-3)
    # occupancy: the voxel at a measured depth is occupied, the voxels along its ray free
    grid = u.core.research.occupancy
    origin = np.asarray(u.tool_env.task_frame.to_task(pose.position_world))
    for m in (0, 77, 128, 200, 255):        # the ray grid (occupancy_rays = 32) reads these pixels too
        end = obs["points"][m].astype(np.float64)
        assert obs["occupancy"][tuple(grid.voxel_of(end))] == OCCUPANCY_OCCUPIED
        ray = (end - origin) / np.linalg.norm(end - origin)
        for t in np.arange(0.3, np.linalg.norm(end - origin) - 0.5, 0.25):
            assert obs["occupancy"][tuple(grid.voxel_of(origin + t * ray))] == OCCUPANCY_FREE, (m, t)
    assert info["occupancy_gain"] > 0
    sb3_check_env(env.unwrapped, warn=True)
    gym_check_env(env.unwrapped, skip_render_check=True)


def test_the_vector_env_carries_the_keys_and_nbv_v2s_walls():
    """``make_vec("SpatialScout/NBV-v2", vectorization_mode="vector_entry_point")``: walls on, the
    research keys batched, each sub-env's equal to a single env's for the same seed and actions."""
    spec = small_scene(64, 64)
    kw = dict(scene=spec, image_budget=5, privileged_obs=True, points=32, occupancy_cells=(16, 16, 8))
    venv = gym.make_vec("SpatialScout/NBV-v2", num_envs=2, vectorization_mode="vector_entry_point",
                        renderer=FakeRenderer(spec), **kw)
    single = gym.make("SpatialScout/NBV-v2", renderer=FakeRenderer(spec), **kw)
    assert venv.config.walls and single.unwrapped.config.walls
    assert venv.single_observation_space == single.observation_space
    batch, one = venv.reset(seed=5)[0], single.reset(seed=6)[0]     # sub-env 1 is seeded 5 + 1
    for _ in range(3):
        batch = venv.step(np.array([7, 2]))[0]
        one = single.step(2)[0]
    for k in RESEARCH_KEYS:
        assert batch[k].shape == (2, *single.observation_space[k].shape)
        np.testing.assert_array_equal(batch[k][1], one[k])
    venv.close()
    single.close()
