"""NBV actions that are not what the space holds get the documented one-line ``ValueError`` ("...
NBV action must be ...") and move nothing, in every motion kind: complex numbers, timedeltas,
datetimes, booleans, objects whose ``__array__`` or ``__repr__`` raises; plus a seeded fuzz of
such values, bounded in size, that counts every other exception."""

from __future__ import annotations

import random

import gymnasium as gym
import numpy as np
import pytest

import spatialscout_gym  # noqa: F401  (registers the ids)
from fakes import FakeRenderer, small_scene
from spatialscout_gym.nbv.wrapper import NextBestViewWrapper


class _ArrayRaises:
    def __array__(self, *a, **k):
        raise RuntimeError("no array")


class _ReprRaises:
    def __repr__(self):
        raise RuntimeError("no repr")

    __str__ = __repr__


class _IntReprRaises(int):
    """An integer that passes as 3 but cannot be shown."""

    def __repr__(self):
        raise RuntimeError("no repr")

    __str__ = __repr__


def _env(**kw):
    spec = small_scene(32, 32)
    env = gym.make("SpatialScout/NBV-v1", scene=spec, renderer=FakeRenderer(spec), resolution=32, **kw)
    env.reset(seed=0)
    return env


BAD = [np.complex128(3), np.array([3 + 0j]), complex(3, 0), np.timedelta64(3, "s"), np.array([3], "m8[s]"),
       np.datetime64(3, "s"), np.bool_(True), True, _ArrayRaises(), _ReprRaises(), [_ReprRaises()],
       np.array([_ReprRaises()], object), "3", None, 3.5, np.nan, [3, 4],
       # size 1 is not enough: a float, any array or list of shape (1,) or deeper, a masked value
       1.0, np.float64(3), np.array([[[2.0]]]), np.array([[[2]]]), np.ma.masked_array([3], mask=[True]),
       np.ma.masked_array(3, mask=True), np.ma.masked_array([3], mask=[False]),
       # what gymnasium's Discrete(18).contains refuses: shape (1,), a list, a dtype with no safe cast to int64
       np.array([1]), [1], (1,), np.uint64(1)]


@pytest.mark.parametrize("value", BAD, ids=[type(v).__name__ + str(i) for i, v in enumerate(BAD)])
def test_nbv_v1_refuses_values_the_space_does_not_hold_and_moves_nothing(value):
    env = _env()
    port = env.unwrapped.core.port
    before = repr(port.camera())   # position (m), yaw and pitch (deg)
    with pytest.raises(ValueError, match=r"^heading NBV action must be one integer in \[0, 17\]"):
        env.unwrapped.step(value)
    assert repr(port.camera()) == before
    env.unwrapped.step(3)   # an integer still steps: heading 1 turns the camera 60 degrees
    assert repr(port.camera()) != before
    env.close()


@pytest.mark.parametrize("value", [1, np.int64(1), np.int8(1), np.uint32(1), np.array(1), np.array(1, np.uint8)])
def test_nbv_v1_takes_what_the_discrete_space_holds(value):
    """The other side of the refusals: every value ``Discrete(18).contains`` holds steps."""
    env = _env()
    assert env.action_space.contains(value)
    before = repr(env.unwrapped.core.port.camera())
    env.unwrapped.step(value)
    assert repr(env.unwrapped.core.port.camera()) != before   # action 1: heading 0, the middle stride
    env.close()


@pytest.mark.parametrize("value", [np.array([1]), [1], np.uint64(1)])
def test_the_refusal_says_why_a_near_miss_is_not_discrete(value):
    env = _env()
    assert not env.action_space.contains(value)
    with pytest.raises(ValueError, match=r"shape \(1,\), where a Discrete space holds one integer scalar|"
                                         r"uint64, which does not cast safely"):
        env.unwrapped.step(value)
    env.close()


@pytest.mark.parametrize("motion,pattern", [("discrete", r"^discrete NBV action must be one integer"),
                                            ("continuous", r"^continuous NBV action must be 5 finite numbers")])
def test_nbv_v0_motions_refuse_complex_timedelta_and_hostile_objects(motion, pattern):
    spec = small_scene(32, 32)
    env = gym.make("SpatialScout/NBV-v0", scene=spec, renderer=FakeRenderer(spec), resolution=32, motion=motion)
    env.reset(seed=0)
    nbv = env
    while not isinstance(nbv, NextBestViewWrapper):   # below gymnasium's own checkers
        nbv = nbv.env
    shape = (5,) if motion == "continuous" else ()
    for value in (np.zeros(shape, complex), np.zeros(shape, "m8[s]"), _ArrayRaises(), np.full(shape, _ReprRaises())):
        with pytest.raises(ValueError, match=pattern):
            nbv.step(value)
    env.close()


def test_nbv_action_fuzz_raises_only_the_documented_error():
    rng = random.Random(11)
    env = _env(image_budget=1000)
    errors, refused = [], 0
    for i in range(600):
        k = rng.randrange(18)
        value = rng.choice([k, np.int64(k), np.float64(k), np.complex128(k), np.array([k + 0j]), np.timedelta64(k, "s"),
                            np.array([k], "m8[s]"), _ArrayRaises(), _ReprRaises(), _IntReprRaises(k), k + 0.5,
                            np.array([k, k]), [[k]], np.float32(np.inf)])
        try:
            env.unwrapped.step(value)
        except ValueError as exc:
            if "NBV action must be" not in str(exc):
                errors.append(f"step {i}: {exc}"[:200])
            refused += 1
        except Exception as exc:   # the count is the test
            errors.append(f"step {i}: {type(exc).__name__}: {exc}"[:200])
        if env.unwrapped.core.port.done:
            env.reset(seed=0)
    assert errors == [], f"{len(errors)} unexpected exceptions, e.g. {errors[:3]}"
    assert 0 < refused < 600
    env.close()
