"""Walls that stop the camera (``walls=True``, ``SpatialScout/NBV-v2``): the segment test agrees
with a dense point-by-point check on procedural rooms and apartments (doorways pass); on a catalog
scene a move is blocked exactly when it would leave the room, the camera then stays and
``info["blocked"]`` says so, while NBV-v1 (walls off) still walks through; on procedural NBV-v2 the
camera never enters a wall or leaves the floor; NBV-v2 passes both env checkers."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env as gym_check_env

import spatialscout_gym  # noqa: F401  (registers the ids)
from fakes import FakeRenderer, small_scene
from spatialscout_gym.core.frames import CameraPose
from spatialscout_gym.scenes.catalog import load_scene
from spatialscout_gym.scenes.procedural import procedural_scene
from spatialscout_gym.nbv.walls import WallMap, move_end_world

MARGIN = 0.1


def dense_blocked(walls: WallMap, start: np.ndarray, end: np.ndarray) -> bool:
    """The reference: points every 5 mm along the segment, each tested against the inflated boxes
    (the uninflated one for a box the start lies in), plus the end's floor test."""
    lo, hi = walls.walls[:, 0] - MARGIN, walls.walls[:, 1] + MARGIN
    inside = np.all((lo <= start) & (start <= hi), axis=1)
    lo[inside], hi[inside] = walls.walls[inside, 0], walls.walls[inside, 1]
    n = int(np.ceil(np.linalg.norm(end - start) / 0.005)) + 1
    pts = start + np.linspace(0.0, 1.0, n)[:, None] * (end - start)
    hit = np.all((lo[None] <= pts[:, None]) & (pts[:, None] <= hi[None]), axis=2).any()
    return bool(hit) or not walls.on_floor(end)


@pytest.mark.parametrize("seed,layout", [(3, "Kitchen"), (5, "Apartment"), (11, "Apartment")])
def test_the_segment_test_matches_a_dense_check(seed, layout):
    spec = procedural_scene(seed, layout=layout)
    walls = WallMap.from_spec(spec, MARGIN)
    assert len(walls.walls) >= 4 and len(walls.floors) >= 1
    rng = np.random.default_rng(seed)
    z = spec.public.initial_camera.position_world[2]
    lo, hi = walls.floors[:, 0, :2].min(axis=0) - 1.0, walls.floors[:, 1, :2].max(axis=0) + 1.0
    verdicts = []
    for _ in range(300):
        start = np.array([*rng.uniform(lo, hi), z])
        if not walls.on_floor(start):
            continue
        pose = CameraPose(start, float(rng.uniform(-180, 180)), -20.0)
        move = np.array([rng.choice([0.5, 1.0, 2.0]), 0.0, 0.0])
        got = walls.blocks(pose, move)
        assert got == dense_blocked(walls, start, move_end_world(pose, move)), (start, pose.yaw_deg, move)
        verdicts.append(got)
    assert 0 < sum(verdicts) < len(verdicts)        # both kinds of move were tried


def test_a_doorway_lets_the_camera_through():
    """An apartment: a 2 m move straight through a door's centre passes; the same move 0.8 m along
    the wall from it is blocked."""
    spec = procedural_scene(5, layout="Apartment")
    walls = WallMap.from_spec(spec, MARGIN)
    trims = [o for o in spec.private.objects if o.category == "Doorway"]
    assert trims
    parts = trims[0].parts                      # left jamb, right jamb, lintel trim
    centre = np.mean([p.position_world for p in parts[:2]], axis=0)
    along = np.asarray(parts[1].position_world) - np.asarray(parts[0].position_world)
    along[2] = 0.0
    along /= np.linalg.norm(along)
    across = np.array([-along[1], along[0], 0.0])
    z = spec.public.initial_camera.position_world[2]
    for offset, blocked in ((0.0, False), (0.8, True)):
        start = centre + offset * along - 1.0 * across
        start[2] = z
        yaw = float(np.degrees(np.arctan2(across[1], across[0])))
        assert walls.blocks(CameraPose(start, yaw, -20.0), np.array([2.0, 0.0, 0.0])) == blocked


def test_a_move_off_the_floor_is_blocked_where_no_wall_stands():
    """The floor rule alone (the walls taken away): ending past the floor's edge is blocked."""
    spec = load_scene("Kitchen_01")
    floor = WallMap.from_spec(spec, MARGIN).floors
    walls = WallMap(np.zeros((0, 2, 3)), floor, MARGIN)
    (x0, y0, _), (x1, y1, _) = floor[0]
    start = np.array([x1 - 1.0, (y0 + y1) / 2, 1.5])
    assert not walls.blocks(CameraPose(start, 0.0, -20.0), np.array([0.5, 0.0, 0.0]))
    assert walls.blocks(CameraPose(start, 0.0, -20.0), np.array([2.0, 0.0, 0.0]))
    assert not walls.blocks(CameraPose(start, 180.0, -20.0), np.array([2.0, 0.0, 0.0]))


def room_interior(spec) -> tuple[np.ndarray, np.ndarray]:
    """The one room's free x-y rectangle: the floor box (wall line to wall line) shrunk by half a
    wall and the margin."""
    floor = [o for o in spec.private.objects if o.category == "Floor"]
    assert len(floor) == 1
    p = floor[0].parts[0]
    c, h = np.asarray(p.position_world)[:2], np.asarray(p.half_size)[:2]
    return c - h + 0.05 + MARGIN, c + h - 0.05 - MARGIN


def test_a_move_out_of_a_catalog_room_is_blocked():
    spec = load_scene("Kitchen_01")
    lo, hi = room_interior(spec)
    env = gym.make("SpatialScout/NBV-v2", scene=spec, renderer=FakeRenderer(spec, 32, 32), resolution=32,
                   obs_size=32, image_budget=200)
    tool = env.unwrapped.tool_env
    env.reset(seed=0)
    rng = np.random.default_rng(0)
    kinds = set()
    for _ in range(40):
        a = int(rng.integers(18))
        before = tool.episode.pose.position_world.copy()
        stride = (0.0, 1.0, 2.0)[a % 3]
        yaw = tool.episode.pose.yaw_deg + 60.0 * (a // 3)
        end = before + stride * np.array([np.cos(np.radians(yaw)), np.sin(np.radians(yaw)), 0.0])
        leaves = not np.all((lo <= end[:2]) & (end[:2] <= hi))
        _, _, term, trunc, info = env.step(a)
        after = tool.episode.pose.position_world
        assert info["blocked"] == leaves, (a, before, end)
        np.testing.assert_allclose(after, before if leaves else end, atol=1e-6)
        kinds.add((leaves, stride > 0))
        if term or trunc:
            env.reset()
    assert {(True, True), (False, True), (False, False)} <= kinds   # blocked, free moves, turns in place
    env.close()


def test_nbv_v1_keeps_walking_through_walls():
    """NBV-v1's dynamics are unchanged (walls off): the same kind of walk leaves the room."""
    spec = load_scene("Kitchen_01")
    lo, hi = room_interior(spec)
    env = gym.make("SpatialScout/NBV-v1", scene=spec, renderer=FakeRenderer(spec, 32, 32), resolution=32,
                   obs_size=32, image_budget=200)
    env.reset(seed=0)
    outside = []
    for _ in range(12):
        _, _, term, trunc, info = env.step(2)            # straight on, 2 m a step
        assert info["blocked"] is False
        xy = env.unwrapped.tool_env.episode.pose.position_world[:2]
        outside.append(not np.all((lo <= xy) & (xy <= hi)))
        if term or trunc:
            break
    assert any(outside)
    env.close()


def test_procedural_nbv_v2_keeps_the_camera_inside():
    spec = small_scene(32, 32)
    env = gym.make("SpatialScout/NBV-v2", renderer=FakeRenderer(spec, 32, 32), resolution=32, obs_size=32,
                   image_budget=30, reconfigure_every=1, single_room_share=0.5)
    tool = env.unwrapped.tool_env
    rng = np.random.default_rng(1)
    blocked = free = 0
    for episode in range(4):
        env.reset(seed=episode)
        walls = WallMap.from_spec(tool.scene_spec, MARGIN)
        assert len(walls.walls) >= 4
        for _ in range(15):
            before = tool.episode.pose.position_world.copy()
            _, _, term, trunc, info = env.step(int(rng.integers(18)))
            after = tool.episode.pose.position_world
            moved = not np.allclose(after, before)
            assert not (info["blocked"] and moved)
            blocked += info["blocked"]
            free += moved
            assert walls.on_floor(after)
            box_lo, box_hi = walls.walls[:, 0] - MARGIN + 1e-6, walls.walls[:, 1] + MARGIN - 1e-6
            assert not np.any(np.all((box_lo <= after) & (after <= box_hi), axis=1))
            if term or trunc:
                break
    assert blocked > 0 and free > 0
    env.close()


def test_nbv_v2_passes_both_checkers():
    from stable_baselines3.common.env_checker import check_env as sb3_check_env
    spec = small_scene(64, 64)
    env = gym.make("SpatialScout/NBV-v2", scene=spec, renderer=FakeRenderer(spec), image_budget=4,
                   privileged_obs=["depth", "segmentation"])
    assert env.unwrapped.config.walls is True and env.spec.id == "SpatialScout/NBV-v2"
    doc = env.unwrapped.__doc__
    assert "- v2: walls stop the camera" in doc and 'info["blocked"]' in doc
    for e in (env, env.unwrapped):
        gym_check_env(e, skip_render_check=True)
        sb3_check_env(e, warn=True)
    env.close()
    v1 = gym.make("SpatialScout/NBV-v1", scene=spec, renderer=FakeRenderer(spec), image_budget=4)
    assert v1.unwrapped.config.walls is False
    v1.close()


def slab(spec, category: str) -> tuple[float, float]:
    """The (bottom, top) heights of the one room's ``category`` box (Floor or Ceiling), metres."""
    (obj,) = [o for o in spec.private.objects if o.category == category]
    p = obj.parts[0]
    z, h = float(p.position_world[2]), float(p.half_size[2])
    return z - h, z + h


UP_DOWN = {"discrete": (4, 5), "continuous": (np.array([0, 0, 1, 0, 0], np.float32),
                                               np.array([0, 0, -1, 0, 0], np.float32))}


@pytest.mark.parametrize("motion", ["discrete", "continuous", "heading"])
def test_the_ceiling_and_the_floor_stop_the_camera_in_every_motion_mode(motion):
    """Kitchen_01 under NBV-v2: going up (then down) move by move, the camera stays between the
    floor and the ceiling, each less the margin, and the step that would cross is blocked. The
    heading motion has no vertical component: its moves keep the height, and the same wall map
    blocks a lift through the ceiling from its poses."""
    spec = load_scene("Kitchen_01")
    ceiling, floor = slab(spec, "Ceiling")[0], slab(spec, "Floor")[1]
    env = gym.make("SpatialScout/NBV-v2", scene=spec, renderer=FakeRenderer(spec, 32, 32), resolution=32,
                   obs_size=32, image_budget=200, motion=motion)
    tool = env.unwrapped.tool_env
    env.reset(seed=0)
    z0 = float(tool.episode.pose.position_world[2])
    if motion == "heading":
        walls = env.unwrapped.nbv.core.walls
        for a in (2, 5, 8, 11, 14, 17):
            _, _, _, _, info = env.step(a)
            pose = tool.episode.pose
            assert pose.position_world[2] == pytest.approx(z0)
            assert walls.blocks(pose, np.array([0.0, 0.0, ceiling - z0 + 0.05]))
            assert walls.blocks(pose, np.array([0.0, 0.0, floor - z0 - 0.05]))
            assert not walls.blocks(pose, np.array([0.0, 0.0, 0.3]))
        env.close()
        return
    for action, limit in zip(UP_DOWN[motion], (ceiling - MARGIN, floor + MARGIN)):
        blocked = []
        for _ in range(12):
            before = tool.episode.pose.position_world.copy()
            _, _, term, trunc, info = env.step(action)
            after = tool.episode.pose.position_world
            assert floor + MARGIN - 1e-6 <= after[2] <= ceiling - MARGIN + 1e-6, (motion, after)
            if info["blocked"]:
                np.testing.assert_allclose(after, before, atol=1e-9)
            blocked.append(info["blocked"])
            assert not (term or trunc)
        assert blocked[0] is False and blocked[-1] is True       # moved, then stopped at the slab
        assert abs(after[2] - limit) < 1.0
    env.close()
