"""Env actions of every kind never raise anything but the documented ``ValueError`` ("action
outside the action space") and never run a call past the budget: complex numbers, timedeltas and
flags other than 0 and 1 are refused like other values the space does not hold (tool index,
translation, ``given``, ``submit_mask``, ...), and an argument whose ``repr`` (or ``str``,
hash, comparison, float conversion) raises is refused inside ``Episode.call`` with the call counted
and the budget's end applied. A seeded fuzz, bounded in size."""

from __future__ import annotations

import random
import traceback
import warnings

import numpy as np
import pytest

from fakes import FakeRenderer, small_scene
from spatialscout_gym.envs.spatialscout_env import SpatialScoutEnv
from spatialscout_gym.episode.tools import TOOL_NAMES

BUDGET = 7
ACTIONS = 4_000


class Hostile(Exception):
    """Raised by the hostile objects below (no code path expects it)."""


class _Raises:
    """An object whose every conversion raises: repr, str, format, hash, ==, float, int, len, iter."""

    def _boom(self, *a, **k):
        raise Hostile("no")

    __repr__ = __str__ = __format__ = __hash__ = __eq__ = __float__ = __int__ = __index__ = _boom
    __len__ = __iter__ = __bool__ = __lt__ = _boom


class _BadKey:
    """A dict key whose repr and str raise (hashable, so it can be a key)."""

    def __repr__(self):
        raise Hostile("key")

    __str__ = __repr__


class _BadRepr(float):
    """A float whose repr and str raise (it passes every number check)."""

    def __repr__(self):
        raise Hostile("repr")

    __str__ = __repr__


def _env() -> SpatialScoutEnv:
    spec = small_scene(16, 16)
    env = SpatialScoutEnv(spec, renderer=FakeRenderer(spec), resolution=16, tool_call_budget=BUDGET, image_budget=3)
    env.reset(seed=0)
    return env


def _value(rng: random.Random) -> object:
    return rng.choice([0.5, -1.0, 3, np.float32(0.2), np.complex128(4), np.complex64(1 + 2j), 1j, float("nan"),
                       np.int64(2), True, "x", None, _Raises(), _BadRepr(0.1), [0.1, 0.2, 0.3],
                       [1j, 0, 0], np.array([0.1, 1j, 0]), [_Raises(), 0, 0], [_BadRepr(1), 0, 0], {"a": _Raises()}])


def _args(rng: random.Random, tool: str) -> dict:
    names = {"move_camera": ["forward", "right", "up"], "rotate_camera": ["yaw", "pitch"],
             "set_camera_position": ["position", "yaw_deg", "pitch_deg"],
             "triangulate_observations": ["observations"], "submit_positions": ["positions"]}.get(tool, ["x"])
    args = {rng.choice(names): _value(rng) for _ in range(rng.randrange(3))}
    if rng.random() < 0.2:
        args[_BadKey()] = 1
    if tool == "submit_positions" and rng.random() < 0.5:
        args = {"positions": {rng.choice(["chair_1", "x", _BadKey()]): _value(rng)}}
    if tool == "triangulate_observations" and rng.random() < 0.5:
        args = {"observations": [{"frame_id": _value(rng), "u": _value(rng), "v": _value(rng)}]}
    return args


def _action(rng: random.Random, env: SpatialScoutEnv) -> dict:
    k = rng.randrange(len(TOOL_NAMES))
    a = {key: np.zeros(sp.shape, sp.dtype) for key, sp in env.action_space.spaces.items()}
    a["tool"] = rng.choice([k, k, np.complex128(k), complex(k, 1), np.float64(k), _Raises(), np.timedelta64(k)])
    if rng.random() < 0.5:
        a["arguments"] = _args(rng, TOOL_NAMES[k])
    else:
        key = rng.choice(["translation", "rotation", "position", "yaw_pitch", "given", "submit_mask"])
        a[key] = rng.choice([a[key].astype(complex) + 1j, a[key] + 0.1, a[key].astype(object),
                             a[key].astype("m8[s]") + np.timedelta64(1, "s"), a[key] + rng.choice([2, -1, 0.5, np.nan])])
    return a


def _misread(action: dict) -> bool:
    """Whether a field the chosen tool reads holds what the space does not: a timedelta, or
    ``given``/``submit_mask`` flags other than 0 and 1 (so an accepted action was misread)."""
    tool = action["tool"]
    if isinstance(tool, np.timedelta64):
        return True
    if "arguments" in action or not isinstance(tool, (int, np.floating)):
        return False
    name = TOOL_NAMES[int(tool)]
    used = ["given"] + {"move_camera": ["translation"], "rotate_camera": ["rotation"],
                        "submit_positions": ["positions", "submit_mask"]}.get(name, [])
    for key in used:
        v = np.asarray(action[key])
        if v.dtype.kind == "m" or (key in ("given", "submit_mask") and v.dtype.kind in "biuf"
                                    and not np.all(np.isin(v, (0, 1)))):
            return True
    return False


def test_env_action_fuzz_has_no_internal_exception_and_no_call_past_the_budget():
    rng = random.Random(7)
    env = _env()
    errors, refused_actions, past_budget = [], 0, 0
    with warnings.catch_warnings():
        warnings.simplefilter("error", np.exceptions.ComplexWarning)   # a dropped imaginary part fails
        for i in range(ACTIONS):
            if env.episode.done:
                env.reset(seed=0)
            ep = env.episode
            action = _action(rng, env)
            try:
                env.step(action)
                if _misread(action):
                    errors.append(f"action {i}: accepted although outside the space: {action['tool']!r}")
            except ValueError as exc:
                if "action outside the action space" not in str(exc):
                    errors.append(f"action {i}: ValueError: {exc}"[:300])
                refused_actions += 1
            except Exception as exc:   # the count is the test: every escape is listed
                where = traceback.extract_tb(exc.__traceback__)[-1]
                errors.append(f"action {i}: {type(exc).__name__} at {where.name}:{where.lineno}: "
                              + "<".join(f"{f.name}:{f.lineno}" for f in traceback.extract_tb(exc.__traceback__)[-5:]))
            past_budget += ep.tool_calls > BUDGET or (ep.tool_calls >= BUDGET and not ep.done)
    assert errors == [], f"{len(errors)} internal exceptions or misread actions over {ACTIONS} actions, e.g. {errors[:4]}"
    assert past_budget == 0
    assert 0 < refused_actions < ACTIONS


@pytest.mark.parametrize("field,value", [("tool", np.complex128(4)), ("tool", complex(2, 0)),
                                         ("translation", np.array([0.5, 0, 0], complex) + 1j),
                                         ("translation", np.array([0.5, 0, 0], complex))])
def test_complex_values_are_refused_like_other_non_real_numbers(field, value):
    env = _env()
    before = env.episode.pose_task()["position"]
    a = {"tool": TOOL_NAMES.index("move_camera"), "translation": np.array([0.5, 0, 0])}
    a[field] = value
    with pytest.raises(ValueError, match="action outside the action space: 'tool|translation"):
        env.step(a)
    assert env.episode.pose_task()["position"] == before and env.episode.tool_calls == 0


def test_an_argument_whose_repr_raises_is_refused_and_the_budget_ends():
    env = _env()
    for k in range(BUDGET):
        _, _, terminated, _, info = env.step({"tool": TOOL_NAMES.index("move_camera"),
                                              "arguments": {"forward": _Raises()}})
        assert not info["tool_result"]["ok"] and "could not be read" in info["tool_result"]["error"]
    assert terminated and env.episode.end_reason == "tool_call_budget" and env.episode.tool_calls == BUDGET
