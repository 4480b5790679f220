"""The NBV vector env over worker processes (``make_vec(..., num_workers=W)``): the same results as
the one-process ``NBVVectorEnv`` for the same seeds, checked actions, clear worker failures, and
Stable-Baselines3 training through the adapter."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from render_fixtures import render_device_kwargs

import spatialscout_gym  # noqa: F401  (registers the ids)

pytestmark = pytest.mark.render

KW = dict(resolution=32, obs_size=36, image_budget=4, reconfigure_every=2,
          **render_device_kwargs())


def _same(a, b) -> bool:
    if isinstance(a, dict):
        return isinstance(b, dict) and set(a) == set(b) and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, np.ndarray) and a.dtype == object:
        return a.shape == np.shape(b) and all(_same(x, y) for x, y in zip(a.ravel(), np.asarray(b).ravel()))
    if isinstance(a, np.ndarray):
        return a.dtype == np.asarray(b).dtype and np.array_equal(a, b, equal_nan=a.dtype.kind == "f")
    return a == b or (a != a and b != b)


@pytest.mark.parametrize("mode", ["NextStep", "SameStep"])
def test_workers_equal_one_process_for_the_same_seeds(mode):
    from spatialscout_gym.nbv import NBVVectorEnv
    from spatialscout_gym.nbv.workers import NBVWorkerVectorEnv
    workers = gym.make_vec("SpatialScout/NBV-v0", num_envs=3, vectorization_mode="vector_entry_point",
                           num_workers=2, autoreset_mode=mode, **KW)
    single = gym.make_vec("SpatialScout/NBV-v0", num_envs=3, vectorization_mode="vector_entry_point",
                          autoreset_mode=mode, **KW)
    assert isinstance(workers, NBVWorkerVectorEnv) and workers.sizes == [2, 1]
    assert isinstance(single, NBVVectorEnv)
    assert workers.observation_space == single.observation_space
    assert workers.action_space == single.action_space
    a, b = workers.reset(seed=11), single.reset(seed=11)
    assert _same(a[0], b[0])
    rng = np.random.default_rng(1)
    ends = 0
    for _ in range(14):       # several episodes of V = 4, scene reloads every 2 resets
        actions = rng.integers(10, size=3)
        out_w, out_s = workers.step(actions), single.step(actions)
        for x, y in zip(out_w[:4], out_s[:4]):
            assert _same(x, y)
        assert _same(out_w[4], out_s[4])        # infos, SameStep's final_obs / final_info included
        ends += int(np.sum(out_w[2]))
    assert ends >= 3
    workers.close()
    single.close()


def test_a_bad_action_steps_no_worker_and_a_failed_worker_says_why():
    workers = gym.make_vec("SpatialScout/NBV-v0", num_envs=2, vectorization_mode="vector_entry_point",
                           num_workers=2, **KW)
    single = gym.make_vec("SpatialScout/NBV-v0", num_envs=2, vectorization_mode="vector_entry_point", **KW)
    workers.reset(seed=4)
    single.reset(seed=4)
    with pytest.raises(ValueError, match=r"in \[0, 9\]"):
        workers.step(np.array([3, 11]))
    out_w, out_s = workers.step(np.array([3, 6])), single.step(np.array([3, 6]))
    assert _same(out_w[0], out_s[0]) and _same(out_w[1], out_s[1])   # nothing had moved
    workers.close()
    single.close()
    from spatialscout_gym.nbv.workers import NBVWorkerVectorEnv
    with pytest.raises(RuntimeError, match=r"NBV worker process failed(.|\n)*No_Such_Scene"):
        NBVWorkerVectorEnv(2, num_workers=2, scene="No_Such_Scene", **KW)


def test_sb3_trains_on_the_worker_env_through_the_adapter():
    from stable_baselines3 import PPO

    from spatialscout_gym.nbv.training.sb3_vec import SB3VecEnv
    venv = SB3VecEnv(gym.make_vec("SpatialScout/NBV-v0", num_envs=2, vectorization_mode="vector_entry_point",
                                  num_workers=2, autoreset_mode="SameStep", **KW))
    model = PPO("MultiInputPolicy", venv, n_steps=8, batch_size=16, n_epochs=1, seed=0, device="cpu")
    model.learn(total_timesteps=16)
    assert model.num_timesteps == 16
    assert venv.env_is_wrapped(gym.Wrapper) == [False, False]   # sub-envs live in the workers
    venv.close()


@pytest.mark.parametrize("workers", [0, -1, 1.5])
def test_bad_worker_counts_are_refused_in_one_line(workers):
    with pytest.raises(ValueError, match="num_workers must be an integer >= 1"):
        gym.make_vec("SpatialScout/NBV-v0", num_envs=2, vectorization_mode="vector_entry_point",
                     num_workers=workers, **KW)


def test_close_sets_closed_and_a_silent_worker_times_out():
    from spatialscout_gym.nbv.workers import NBVWorkerVectorEnv
    env = NBVWorkerVectorEnv(2, num_workers=2, **KW)
    assert env.closed is False
    env.close()
    assert env.closed is True
    env = NBVWorkerVectorEnv(2, num_workers=2, receive_timeout_s=30.0, **KW)
    env.receive_timeout_s = 0.0                      # no reply can arrive in no time
    env._procs[0].kill()                             # and worker 0 will never reply
    with pytest.raises(RuntimeError, match="worker 0"):
        env.reset(seed=0)
    assert env.closed is True


def test_a_reset_connection_reads_as_a_dead_worker(monkeypatch):
    """A killed worker's pipe can read as a reset connection rather than as end-of-file (which
    one the parent sees depends on timing); both close the env with the one-line error."""
    from spatialscout_gym.nbv.workers import NBVWorkerVectorEnv
    env = NBVWorkerVectorEnv(2, num_workers=2, **KW)

    def reset_by_peer():
        raise ConnectionResetError(104, "Connection reset by peer")
    monkeypatch.setattr(env._conns[1], "recv", reset_by_peer)
    with pytest.raises(RuntimeError, match="worker 1 exited"):
        env.reset(seed=0)
    assert env.closed is True
    assert not any(p.is_alive() for p in env._procs)


def test_the_spaces_come_from_the_workers_not_from_the_parent(monkeypatch):
    """The parent takes the spaces (and its action check's settings) from the workers' first
    reply: here it cannot build them itself, and still gets NBV-v1's heading spaces."""
    from spatialscout_gym.nbv import wrapper as nbv
    from spatialscout_gym.nbv import config as nbv_config
    from spatialscout_gym.nbv.workers import NBVWorkerVectorEnv

    def restated(*args, **kwargs):
        raise AssertionError("the parent restated the sub-envs' spaces")
    for module in (nbv, nbv_config):
        monkeypatch.setattr(module, "nbv_observation_space", restated)
        monkeypatch.setattr(module, "nbv_action_space", restated)
    env = NBVWorkerVectorEnv(2, num_workers=2, motion="heading", **KW)
    assert env.single_action_space == gym.spaces.Discrete(18)
    assert "scan" in env.single_observation_space.spaces
    assert env.observation_space["image"].shape == (2, 36, 36, 3)
    with pytest.raises(ValueError, match=r"heading NBV action must be one integer in \[0, 17\]"):
        env.step(np.array([3, 18]))
    env.close()



def test_a_dead_worker_is_named_when_a_message_cannot_reach_it():
    """A worker that died before the parent writes to it (a broken pipe) closes the env with the
    one-line error naming it, as a worker that does not reply does."""
    from spatialscout_gym.nbv.workers import NBVWorkerVectorEnv
    env = NBVWorkerVectorEnv(2, num_workers=2, **KW)
    env._procs[1].kill()
    env._procs[1].join(timeout=10)
    env._conns[1]._send = _broken_pipe                # as a write to the dead worker's pipe fails
    with pytest.raises(RuntimeError, match="worker 1: exited"):
        env.reset(seed=0)
    assert env.closed is True


def _broken_pipe(*args, **kwargs):
    raise BrokenPipeError(32, "Broken pipe")
