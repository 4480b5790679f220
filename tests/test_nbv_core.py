"""The one NBV core (``nbv/core.py``): the wrapper, NBV-v1 and the NBV agents step through
it, with one end rule; the agents use only its public API; every import path of
``nbv/wrapper.py`` the package, tests and docs use still works. Vulkan-free fake renderer."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import spatialscout_gym  # noqa: F401  (registers the ids)
from fakes import FakeRenderer, small_scene
from spatialscout_gym.baselines.base import PrivilegedAccess
from spatialscout_gym.episode.episode import Episode
from spatialscout_gym.nbv.config import NBVConfig
from spatialscout_gym.nbv.core import NBVController, NBVCore
from spatialscout_gym.nbv.features import yaw_sector
from spatialscout_gym.nbv.mappers import make_mapper


def fake_episode(image_budget: int):
    spec = small_scene(64, 64)
    renderer = FakeRenderer(spec, 64, 64)
    return spec, renderer, Episode(spec.public, renderer, image_budget=image_budget, tool_call_budget=None)


def test_wrapper_nbv_v1_controller_and_agents_all_step_through_the_core(monkeypatch):
    from spatialscout_gym.baselines.nbv_agents import RandomNBVAgent
    from spatialscout_gym.nbv.wrapper import make_nbv_env
    steps: list[str] = []
    original = NBVCore.step

    def counting(self, action):
        steps.append(type(self.port).__name__)
        return original(self, action)
    monkeypatch.setattr(NBVCore, "step", counting)

    spec = small_scene(64, 64)
    v0 = make_nbv_env(spec, image_budget=4, resolution=64, renderer=FakeRenderer(spec))
    v0.reset(seed=0)
    v0.step(6)
    v1 = gym.make("SpatialScout/NBV-v1", scene=spec, renderer=FakeRenderer(spec), image_budget=4)
    v1.reset(seed=0)
    v1.step(3)
    assert steps == ["ToolEnvPort", "ToolEnvPort"]
    spec, renderer, ep = fake_episode(4)
    RandomNBVAgent().run(ep, rng=np.random.default_rng(0), privileged=PrivilegedAccess(spec, renderer))
    assert steps[2:] and set(steps[2:]) == {"EpisodePort"}
    assert len(steps[2:]) == ep.images_used - 1                      # one core step per capture


@pytest.mark.parametrize("motion", ["discrete", "heading"])
def test_controller_and_wrapper_end_by_the_same_rule_at_the_same_step(motion):
    """The end rule lives in the core: the agents' driver ends (and calls ``finish_mapping``) at the
    same step as the wrapper, with the same coverage along the way."""
    from spatialscout_gym.nbv.wrapper import make_nbv_env
    spec, renderer, ep = fake_episode(5)
    env = make_nbv_env(spec, image_budget=5, resolution=64, renderer=FakeRenderer(spec), motion=motion)
    env.reset(seed=0)
    ctl = NBVController(ep, spec, renderer, make_mapper("oracle"), NBVConfig(motion=motion))
    assert not ctl.ended
    actions = [6, 0, 7, 2, 1, 6] if motion == "discrete" else [4, 0, 11, 15, 2, 7]
    for a in actions:
        s = ctl.step(a)
        _, reward, terminated, truncated, info = env.step(a)
        assert (s.terminated, s.truncated) == (terminated, truncated) and s.captured
        assert s.coverage == pytest.approx(info["coverage"]) and s.submitted == info["submitted"]
        assert s.reward == 0.0 and s.score is None                    # the agents' driver does not score
        if terminated:
            break
    assert terminated and ctl.ended
    assert ep.done and ep.end_reason == "finish_mapping"
    assert env.unwrapped.episode.end_reason == "finish_mapping"
    with pytest.raises(RuntimeError, match="the episode has ended"):
        ctl.step(0)


def test_the_agents_stop_by_the_core_rule_and_finish():
    from spatialscout_gym.baselines.nbv_agents import RandomNBVAgent

    class Counting(RandomNBVAgent):
        calls = 0

        def act(self, obs, controller, rng):
            Counting.calls += 1
            assert not controller.ended
            return super().act(obs, controller, rng)
    spec, renderer, ep = fake_episode(4)
    Counting().run(ep, rng=np.random.default_rng(1), privileged=PrivilegedAccess(spec, renderer))
    assert ep.done and ep.end_reason == "finish_mapping"
    assert Counting.calls == ep.images_used - 1
    assert ep.images_used == 4 or len(ep.accepted_map) == len(ep.inventory_ids)


class PublicOnly:
    """A controller seen through its public API only (a private name raises)."""

    def __init__(self, ctl) -> None:
        object.__setattr__(self, "_ctl", ctl)

    def __getattr__(self, name):
        if name.startswith("_"):
            raise AttributeError(f"an agent read the private {name!r} of the NBV core")
        return getattr(self._ctl, name)


@pytest.mark.parametrize("name", ["random-nbv", "frontier-nbv"])
def test_agents_use_only_the_public_api_of_the_core(monkeypatch, name):
    from spatialscout_gym.baselines import nbv_agents
    from spatialscout_gym.baselines.registry import make_agent
    monkeypatch.setattr(nbv_agents, "NBVController", lambda *a, **k: PublicOnly(NBVController(*a, **k)))
    spec, renderer, ep = fake_episode(8)
    make_agent(name).run(ep, rng=np.random.default_rng(0), privileged=PrivilegedAccess(spec, renderer))
    assert ep.done and ep.images_used >= 2


def test_core_public_api_the_heuristics_read():
    spec, renderer, ep = fake_episode(6)
    ctl = NBVController(ep, spec, renderer, make_mapper("oracle"), NBVConfig(motion="continuous"))
    assert [ctl.sector(y) for y in (0.0, 22.4, 22.6, 90.0, -45.0, 180.0)] == [0, 0, 1, 2, 7, 4]
    assert all(ctl.sector(y) == yaw_sector(y) for y in np.linspace(-360, 360, 49))
    frame0 = ctl.last_privileged
    assert frame0 is not None and frame0.depth_m.shape == (64, 64)   # frame 0's privileged frame
    ctl.step(np.array([0, 0, 0, 0.25, 0], np.float32))             # turn 45 degrees left, capture
    assert ctl.last_privileged is not frame0
    np.testing.assert_array_equal(ctl.last_privileged.depth_m,
                                  renderer.capture_privileged(ep.frames[max(ep.frames)].pose).depth_m)
    assert ctl.pose_world == ep.pose and ctl.capture_pose() == ep.pose
    assert ctl.cell(np.array([1.5, -0.2, 1.0])) == (1, -1)
    with pytest.raises(ValueError, match="continuous NBV action must be 5 finite numbers"):
        ctl.check_action([0, 0])


OLD_NAMES = ["NextBestViewWrapper", "NBVController", "NBVConfig", "DISCRETE_MOTIONS", "N_SECTORS", "make_nbv_env",
             "nbv_observation_space", "nbv_action_space", "motion_args", "ViewHistory", "nbv_observation",
             "MAP_CHANNELS", "move_parts", "depth_rays", "TRANSLATION_AXIS_M", "MOTIONS"]
"""What ``spatialscout_gym.nbv.wrapper`` exported before the split."""


def test_the_nbv_wrapper_module_still_exports_its_names_of_before_the_split():
    from spatialscout_gym.nbv import wrapper as nbv
    assert all(hasattr(nbv, name) for name in OLD_NAMES)
    assert set(OLD_NAMES) - {"MOTIONS"} <= set(nbv.__all__)
    assert nbv.NBVController is NBVController and issubclass(NBVController, NBVCore)


def test_workers_that_disagree_on_their_spaces_are_refused():
    from spatialscout_gym.nbv.config import NBVConfig, nbv_action_space, nbv_observation_space
    from spatialscout_gym.nbv.workers import agreed_spaces

    def reply(config):
        return {"observation_space": nbv_observation_space(config), "action_space": nbv_action_space(config),
                "config": config}
    same = [reply(NBVConfig()), reply(NBVConfig())]
    assert agreed_spaces(same) is same[0]
    with pytest.raises(RuntimeError, match=r"disagree on their observation space: .* worker 1 has"):
        agreed_spaces([reply(NBVConfig()), reply(NBVConfig(obs_size=32))])
    with pytest.raises(RuntimeError, match=r"disagree on their action space: .*worker 2 has Discrete\(18\)"):
        agreed_spaces([reply(NBVConfig()), reply(NBVConfig()), reply(NBVConfig(motion="heading"))])
