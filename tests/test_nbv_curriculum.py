"""Training knobs of the NBV task: the layout mix of procedural training scenes
(``single_room_share``) and the reward's submitted-mean-IoU term (``reward_submitted_weight``),
from the generator through the envs to ``train-nbv``."""

from __future__ import annotations

import math

import gymnasium as gym
import numpy as np
import pytest

import spatialscout_gym  # noqa: F401  (registers the ids)
from fakes import FakeRenderer, small_scene
from spatialscout_gym.nbv.training.sb3 import Args, _env_kwargs
from spatialscout_gym.scenes.procedural import SINGLE_ROOM_SHARE, procedural_scene
from spatialscout_gym.nbv.wrapper import NBVConfig, make_nbv_env


def _layout(spec) -> str:
    return spec.public.description["layout"]


def _fingerprint(spec) -> list:
    return [(o.id, o.category, tuple(np.round(o.aabb_world[0], 6))) for o in spec.private.objects]


@pytest.mark.parametrize("seed", [0, 7, 11])
def test_the_default_share_keeps_every_seeds_scene(seed):
    a = procedural_scene(seed)
    b = procedural_scene(seed, single_room_share=SINGLE_ROOM_SHARE)
    assert _fingerprint(a) == _fingerprint(b) and a.public.description == b.public.description
    assert "single_room_share" not in a.private.source


def test_the_share_sets_the_layout_mix_and_is_recorded():
    rooms = [procedural_scene(s, single_room_share=1.0) for s in range(8)]
    flats = [procedural_scene(s, single_room_share=0.0) for s in range(8)]
    assert {_layout(s) for s in rooms} == {"single_room"}
    assert {_layout(s) for s in flats} == {"apartment"}
    assert rooms[0].private.source["single_room_share"] == 1.0
    # the default mix has both kinds among these seeds, so the two shares really changed scenes
    assert {_layout(procedural_scene(s)) for s in range(8)} == {"single_room", "apartment"}


@pytest.mark.parametrize("bad", [-0.1, 1.5, math.nan])
def test_a_share_outside_zero_one_is_refused(bad):
    with pytest.raises(ValueError, match="single_room_share must be"):
        procedural_scene(0, single_room_share=bad)


def test_procedural_env_draws_training_scenes_with_the_share():
    placeholder = small_scene(64, 64)
    env = gym.make("SpatialScout/Procedural-v0", resolution=64, single_room_share=1.0,
                   renderer=FakeRenderer(placeholder), disable_env_checker=True)
    layouts = set()
    for seed in range(4):
        env.reset(seed=seed)
        layouts.add(_layout(env.unwrapped.scene_spec))
    assert layouts == {"single_room"}
    env.close()


def test_the_env_refuses_a_share_outside_zero_one_when_it_is_made():
    with pytest.raises(ValueError, match="single_room_share must be a probability"):
        gym.make("SpatialScout/Procedural-v0", resolution=64, single_room_share=1.5,
                 renderer=FakeRenderer(small_scene(64, 64)), disable_env_checker=True)


def test_a_share_on_a_fixed_scene_is_refused():
    spec = small_scene(64, 64)
    with pytest.raises(ValueError, match="procedural training scenes only"):
        gym.make("SpatialScout/Procedural-v0", scene=spec, renderer=FakeRenderer(spec),
                 single_room_share=0.5, disable_env_checker=True)


def _episode(weight: float):
    """One NBV-v1 episode on the fixture scene with the surface mapper: the rewards, and the
    all-target and submitted mean IoU at the start and the end."""
    spec = small_scene(64, 64)
    env = gym.make("SpatialScout/NBV-v1", scene=spec, renderer=FakeRenderer(spec), mapper="oracle-surface",
                   image_budget=8, reward_submitted_weight=weight)
    env.reset(seed=0)
    start = env.unwrapped.tool_env.metrics()
    rewards, actions = [], [0, 3, 6, 9, 12, 15, 1]   # turn about, then stride
    for a in actions:
        _, r, term, trunc, info = env.step(a)
        rewards.append(r)
        if term or trunc:
            break
    end = info["metrics"]
    env.close()
    return rewards, start, end


def test_the_reward_adds_the_weighted_change_of_submitted_mean_iou():
    plain, s0, e0 = _episode(0.0)
    mixed, s1, e1 = _episode(0.5)
    assert e0 == e1                          # the weight changes the reward, never the episode
    d_all = e0["all"]["mean_iou"] - s0["all"]["mean_iou"]
    d_sub = e0["submitted"]["mean_iou"] - s0["submitted"]["mean_iou"]
    assert sum(plain) == pytest.approx(d_all, abs=1e-9)
    assert sum(mixed) == pytest.approx(d_all + 0.5 * d_sub, abs=1e-9)
    assert abs(d_sub) > 1e-6                 # the fixture moves submitted IoU, so the test can fail


@pytest.mark.parametrize("bad", [-0.5, math.inf, math.nan])
def test_a_negative_or_infinite_weight_is_refused(bad):
    with pytest.raises(ValueError, match="reward_submitted_weight must be"):
        NBVConfig(motion="heading", reward_submitted_weight=bad)


def test_train_nbv_hands_both_knobs_to_every_env():
    kwargs = _env_kwargs(Args(single_room_share=0.8, reward_submitted_weight=0.5))
    env = make_nbv_env(**{**kwargs, "renderer": FakeRenderer(small_scene(64, 64))})
    assert env.unwrapped.single_room_share == 0.8 and env.config.reward_submitted_weight == 0.5
    env.close()
    assert "single_room_share" not in _env_kwargs(Args())      # negative default: the generator's mix


@pytest.mark.parametrize("flag, value, message", [
    ("--single-room-share", "1.5", "--single-room-share must be a probability in [0, 1]"),
    ("--reward-submitted-weight", "-1", "reward_submitted_weight must be a finite number >= 0"),
])
def test_train_nbv_refuses_bad_knobs_in_one_line(tmp_path, capsys, flag, value, message):
    from spatialscout_gym.cli.main import main
    assert main(["train-nbv", flag, value, "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err
    assert not list(tmp_path.iterdir())
