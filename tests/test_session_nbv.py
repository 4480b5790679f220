"""EpisodeSession, the registered NBV env, the vector NBV env and reconfiguration."""

from __future__ import annotations

import re
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import spatialscout_gym  # registers the ids
from fakes import FakeRenderer, small_scene
from spatialscout_gym.envs import session as session_mod
from spatialscout_gym.envs.session import EpisodeSession
from spatialscout_gym.envs.spatialscout_env import SpatialScoutEnv
from spatialscout_gym.episode.tools import TOOL_NAMES

PACKAGE = Path(spatialscout_gym.__file__).parent


# ---- the session ---------------------------------------------------------------------------------
def test_only_the_session_builds_episodes():
    """Scene + renderer + episode are set up in one place: no other module constructs an Episode."""
    offenders = []
    for path in PACKAGE.rglob("*.py"):
        rel = path.relative_to(PACKAGE).as_posix()
        # verify replays a record on an episode with no renderer and no scene to load: no session
        if rel.startswith("episode/") or rel in ("envs/session.py", "eval/verification/verify.py"):
            continue
        for line in path.read_text().splitlines():
            code = line.split("#")[0]
            if re.search(r"(?<![\w.])Episode\(", code) and ">>>" not in line:
                offenders.append(f"{rel}: {line.strip()}")
    assert not offenders, offenders


def test_session_ownership_rule():
    spec = small_scene(64, 64)
    given = FakeRenderer(spec)
    with EpisodeSession(resolution=64, renderer=given) as s:
        s.load(spec)
        s.new_episode()
    assert not given.closed                      # a given renderer is never closed
    built = []

    def factory(sp, w, h):
        built.append(FakeRenderer(sp, w, h))
        return built[-1]

    with EpisodeSession(resolution=64, renderer_factory=factory) as s:
        s.load(spec)
        s.load(small_scene(64, 64, scene_id="other"))   # the second load switches, does not rebuild
        assert len(built) == 1 and s.loads == 2
    assert built[0].closed                       # a renderer the session built is closed


def test_shared_renderer_is_released_by_the_last_holder(monkeypatch):
    spec = small_scene(64, 64)
    monkeypatch.setattr(session_mod, "_default_factory", lambda sp, w, h: FakeRenderer(sp, w, h))
    base = session_mod.shared_renderer_count()   # other tests' envs may still hold theirs
    a, b = EpisodeSession(resolution=24, shared=True), EpisodeSession(resolution=24, shared=True)
    a.load(spec)
    b.load(small_scene(64, 64, scene_id="other"))
    assert session_mod.shared_renderer_count() == base + 1
    shared = session_mod.shared_renderer(24)
    ep = a.new_episode()                                  # the view switches back to a's scene
    assert shared.spec.scene_id == "fake-room" and ep.frames[0].image.shape == (24, 24, 3)
    a.close()
    assert not shared.closed and session_mod.shared_renderer_count() == base + 1
    b.close()
    assert shared.closed and session_mod.shared_renderer_count() == base


def test_turned_start_moves_task_frame_and_ground_truth_together():
    spec = small_scene(64, 64)
    with EpisodeSession(resolution=64, renderer=FakeRenderer(spec)) as s:
        s.load(spec)
        ep = s.new_episode(start_yaw_deg=90.0)
        assert ep.public.initial_camera.yaw_deg == pytest.approx(120.0)
        gt = {t.id: t.center_task for t in s.episode_spec.targets}
        ep.submit_positions({k: list(v) for k, v in gt.items()})
        assert s.metrics()["all"]["mean_iou"] == pytest.approx(1.0)
        assert s.episode_spec.public.radius_m == pytest.approx(spec.public.radius_m)


def test_session_refuses_bad_sizes_with_clear_errors():
    with pytest.raises(ValueError, match="resolution must be an integer number of pixels from 8 to 4096"):
        EpisodeSession(resolution=100_000)
    with pytest.raises(ValueError, match="image_budget must be an integer from 1 to 1000"):
        SpatialScoutEnv(small_scene(64, 64), renderer=FakeRenderer(small_scene(64, 64)), image_budget=0)


# ---- the tool-call env's review fixes -------------------------------------------------------------
def test_scene_option_never_changes_the_spaces(tmp_path):
    """Spaces are fixed at construction: loading a scene with a larger radius keeps them, and the
    episode refuses an entry beyond that scene's ``r + 0.5`` m."""
    small = small_scene(64, 64)
    big = small_scene(64, 64, scene_id="big")
    big_path = tmp_path / "big.json"
    # move a target far out so the radius grows
    big.private.objects[3].parts[0].position_world[:] = [6.0, 3.0, 1.2]
    big = type(big).from_objects("big", big.private.objects, big.public.initial_camera,
                                 big.public.intrinsics, big.private.lights)
    big_path.write_text(big.to_json())
    env = SpatialScoutEnv(small, renderer=FakeRenderer(small), resolution=64)
    before_act, before_obs = env.action_space, env.observation_space
    env.reset(seed=0, options={"scene": str(big_path)})
    assert env.action_space is before_act and env.observation_space is before_obs
    assert env.action_space == before_act
    assert float(env.action_space["positions"].high.max()) >= big.public.radius_m + 0.5
    assert env.unwrapped.episode.public.radius_m == pytest.approx(big.public.radius_m)


def test_terminal_step_scores_once(monkeypatch):
    import spatialscout_gym.core.scoring as scoring
    spec = small_scene(64, 64)
    env = SpatialScoutEnv(spec, renderer=FakeRenderer(spec), resolution=64, tool_call_budget=None)
    env.reset(seed=0)
    calls = []
    real = scoring.score_scene
    monkeypatch.setattr(scoring, "score_scene", lambda *a, **k: calls.append(1) or real(*a, **k))
    a = {k: np.zeros_like(v) for k, v in env.action_space.sample().items()}
    a["tool"] = TOOL_NAMES.index("finish_mapping")
    _, _, term, _, info = env.step(a)
    assert term and "metrics" in info and len(calls) == 1


# ---- reconfiguration -------------------------------------------------------------------------------
def test_reconfigure_every_keeps_a_scene_for_k_resets(monkeypatch):
    import spatialscout_gym.scenes.catalog as catalog
    made = []

    def fake_procedural(seed):
        made.append(seed)
        return small_scene(64, 64, scene_id=f"procedural_{seed}")

    monkeypatch.setattr(catalog, "procedural_scene", fake_procedural)
    env = SpatialScoutEnv("procedural", renderer=FakeRenderer(small_scene(64, 64)), resolution=64,
                          reconfigure_every=3, random_start_yaw=True)
    ids = [env.reset(seed=7)[1]["scene_id"]] + [env.reset()[1]["scene_id"] for _ in range(6)]
    assert ids[0] == ids[1] == ids[2] and ids[3] == ids[4] == ids[5] and ids[6] != ids[5] and ids[3] != ids[0]
    assert len(made) == 3
    yaws = {round(env.reset()[0]["camera_yaw_pitch"][0], 3) for _ in range(2)}
    assert yaws == {0.0}                 # the task frame follows the turned start camera
    starts = set()
    for _ in range(3):
        env.reset()
        starts.add(round(env.episode.public.initial_camera.yaw_deg, 3))
    assert len(starts) > 1               # ... whose world yaw changes per episode
    again = SpatialScoutEnv("procedural", renderer=FakeRenderer(small_scene(64, 64)), resolution=64, reconfigure_every=3)
    assert again.reset(seed=7)[1]["scene_id"] == ids[0]   # reset(seed) fixes the scene


def test_reconfigure_every_must_be_positive():
    with pytest.raises(ValueError, match="reconfigure_every must be >= 1"):
        SpatialScoutEnv("procedural", renderer=FakeRenderer(small_scene(64, 64)), resolution=64, reconfigure_every=0)


# ---- the NBV env (real SAPIEN on lavapipe) ----------------------------------------------------------
class CountSteps(gym.Wrapper, gym.utils.RecordConstructorArgs):
    def __init__(self, env):
        gym.utils.RecordConstructorArgs.__init__(self)
        gym.Wrapper.__init__(self, env)
        self.tools: list[str] = []

    def step(self, action):
        self.tools.append(TOOL_NAMES[int(action["tool"])])
        return self.env.step(action)


@pytest.mark.render
def test_nbv_env_passes_both_checkers_and_steps_through_inner_wrappers():
    from stable_baselines3.common.env_checker import check_env as sb3_check_env

    from spatialscout_gym.nbv import NextBestViewWrapper
    env = gym.make("SpatialScout/NBV-v0", resolution=32, obs_size=32, image_budget=4)
    check_env(env, skip_render_check=True)
    sb3_check_env(env, warn=False)
    assert env.spec.id == "SpatialScout/NBV-v0"
    env.close()

    inner = CountSteps(gym.make("SpatialScout/Procedural-v0", resolution=32, image_budget=4))
    stats = gym.wrappers.RecordEpisodeStatistics(inner)
    nbv = NextBestViewWrapper(stats, obs_size=32)
    check_env(nbv, skip_render_check=True)
    sb3_check_env(nbv, warn=False)
    inner.tools.clear()                  # (the checkers stepped it before)
    nbv.reset(seed=1)
    before = len(inner.tools)            # frame 0's submission, if anything was seen
    assert inner.tools in ([], ["submit_positions"])
    _, _, _, _, info = nbv.step(6)                          # turn left: rotate + capture (+ submit)
    assert inner.tools[before:before + 2] == ["rotate_camera", "capture_image"]
    assert len(inner.tools) == info["counters"]["tool_calls"]   # one inner step per tool call
    done = False
    while not done:
        _, _, term, trunc, info = nbv.step(0)
        done = term or trunc
    assert inner.tools[-1] == "finish_mapping" and "episode" in info   # the inner statistics saw the end
    assert info["metrics"]["all"]["mean_iou"] == pytest.approx(info["all_mean_iou"])
    nbv.close()


@pytest.mark.render
def test_vector_env_equals_single_envs_for_the_same_seeds():
    from spatialscout_gym.nbv import NBVVectorEnv
    kw = dict(resolution=32, obs_size=32, image_budget=4, reconfigure_every=2)
    venv = gym.make_vec("SpatialScout/NBV-v0", num_envs=2, vectorization_mode="vector_entry_point", **kw)
    assert isinstance(venv, NBVVectorEnv)
    singles = [gym.make("SpatialScout/NBV-v0", **kw) for _ in range(2)]
    obs, _ = venv.reset(seed=11)
    ref = [e.reset(seed=11 + i)[0] for i, e in enumerate(singles)]
    for i in range(2):
        assert all(np.array_equal(obs[k][i], ref[i][k]) for k in obs)
    rng = np.random.default_rng(0)
    done_before = np.zeros(2, bool)
    for _ in range(9):                    # crosses episode ends, autoresets and a reconfiguration
        actions = rng.integers(10, size=2)
        obs, rew, term, trunc, _ = venv.step(actions)
        for i, e in enumerate(singles):
            if done_before[i]:
                o, r, t = e.reset()[0], 0.0, False
            else:
                o, r, t, _, _ = e.step(int(actions[i]))
            assert all(np.array_equal(obs[k][i], o[k]) for k in obs)
            assert rew[i] == r and term[i] == t
        done_before = term | trunc
    venv.close()
    for e in singles:
        e.close()


@pytest.mark.render
def test_sb3_adapter_reports_episodes_and_terminal_observations():
    from spatialscout_gym.nbv.training.sb3_vec import SB3VecEnv
    from spatialscout_gym.nbv import NBVVectorEnv
    venv = SB3VecEnv(NBVVectorEnv(2, autoreset_mode="SameStep", resolution=32, obs_size=32, image_budget=3))
    obs = venv.reset()
    assert obs["image"].shape == (2, 32, 32, 3)
    finished = []
    for _ in range(3):
        obs, rew, dones, infos = venv.step(np.array([6, 7]))
        finished += [info for info, d in zip(infos, dones) if d]
    assert len(finished) >= 2
    for info in finished:
        assert info["episode"]["l"] == 2 and "terminal_observation" in info   # V = 3: two NBV steps
        assert info["episode"]["r"] == pytest.approx(info["all_mean_iou"] - 0.0, abs=1.0)
    venv.close()
    with pytest.raises(ValueError, match="SAME_STEP"):
        SB3VecEnv(NBVVectorEnv(1, resolution=32, obs_size=32, image_budget=3))


@pytest.mark.render
@pytest.mark.slow
def test_memory_stays_flat_over_many_procedural_scenes():
    """Host memory after 24 more procedural scenes grows by far less than the ~6 MB per scene the
    unbounded texture caches used to add (textures come from the bounded library and the renderer
    releases the ones a new scene does not use)."""
    import psutil

    from spatialscout_gym.render import textures
    env = SpatialScoutEnv("procedural", resolution=32, reconfigure_every=1)
    for i in range(8):                   # warm up: the library fields in use, allocator pools
        env.reset(seed=i)
    before = psutil.Process().memory_info().rss
    for i in range(8, 32):
        env.reset(seed=i)
    grown_mb = (psutil.Process().memory_info().rss - before) / 2**20
    stats = textures.cache_stats()
    held = env.session.renderer.texture_count
    env.close()
    assert grown_mb < 60, f"host memory grew {grown_mb:.0f} MB over 24 scenes"
    assert stats["image_bytes"] <= textures.IMAGE_CACHE_BYTES
    assert stats["library_fields"] <= len(textures.TEXTURE_KINDS) * textures.LIBRARY_VARIANTS
    assert held < 400                    # GPU textures of one scene only


@pytest.mark.render
def test_catalog_v1_renders_its_exact_textures_and_v2_the_library():
    from spatialscout_gym.scenes.catalog import load_scene
    with EpisodeSession(resolution=32) as s:
        s.load(load_scene("Kitchen_01", version="1.0"))
        assert s.renderer.texture_library is False
        s.load(load_scene("Kitchen_01", version="2.0"))
        assert s.renderer.texture_library is True
