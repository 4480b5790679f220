"""Bad Dict actions get the documented one-line ``ValueError`` ("action outside the action space")
instead of OverflowError/KeyError/TypeError, and oversized array or bytes arguments are refused by
size in bounded time (docs/protocol.md section 4, "Argument bounds")."""

from __future__ import annotations

import numpy as np
import pytest

from fakes import FakeRenderer, small_scene
from spatialscout_gym.envs.spatialscout_env import SpatialScoutEnv
from spatialscout_gym.episode.tools import TOOL_NAMES, argument_size_problem


@pytest.fixture(scope="module")
def env():
    spec = small_scene(64, 64)
    e = SpatialScoutEnv(spec, renderer=FakeRenderer(spec), resolution=64, tool_call_budget=None)
    e.reset(seed=0)
    return e


def _action(env, tool, **fields):
    a = {k: np.zeros(sp.shape, sp.dtype) for k, sp in env.action_space.spaces.items()}
    a["tool"] = TOOL_NAMES.index(tool)
    a.update(fields)
    return a


@pytest.mark.parametrize("flag", [np.inf, -np.inf, np.nan, 2.0, -1.0])
def test_given_flags_that_are_not_0_or_1_are_refused_with_the_documented_message(env, flag):
    given = np.zeros(7)
    given[0] = flag
    with pytest.raises(ValueError, match="action outside the action space: 'given' flags must each be 0 or 1"):
        env.step(_action(env, "move_camera", given=given))


def test_set_camera_position_without_yaw_pitch_runs_when_no_angle_is_asked(env):
    a = {"tool": TOOL_NAMES.index("set_camera_position"), "position": np.zeros(3)}
    _, _, _, _, info = env.step(a)
    assert "tool_result" in info


@pytest.mark.parametrize("value", [object(), [[1, 2], [3]], {"a": 1}])
def test_object_and_ragged_values_are_refused_with_the_documented_message(env, value):
    with pytest.raises(ValueError, match="action outside the action space"):
        env.step(_action(env, "move_camera", translation=value))


def test_huge_numpy_array_and_bytes_arguments_are_refused_by_size(env):
    assert "more than" in argument_size_problem({"positions": np.zeros(10**7)})
    assert "bytes" in argument_size_problem({"x": b"a" * 10**7})
    assert argument_size_problem({"position": np.zeros(3)}) is None
    calls = env.episode.tool_calls
    _, _, _, _, info = env.step({"tool": TOOL_NAMES.index("submit_positions"),
                                 "arguments": {"positions": np.zeros(10**7)}})
    assert not info["tool_result"]["ok"] and "more than" in str(info["tool_result"])
    assert env.episode.tool_calls == calls + 1


@pytest.mark.parametrize("flag", [2, -1, 0.5, np.nan])
def test_submit_mask_values_other_than_0_and_1_are_refused_and_nothing_is_submitted(env, flag):
    mask = np.zeros(40)
    mask[0] = flag
    calls = env.episode.tool_calls
    with pytest.raises(ValueError, match="action outside the action space: 'submit_mask' flags must each be 0 or 1"):
        env.step(_action(env, "submit_positions", submit_mask=mask))
    assert env.episode.tool_calls == calls


class _HashesLikeAField:
    """A key that hashes like 'translation' and compares equal to it: a dict lookup of
    'translation' finds it."""

    def __hash__(self):
        return hash("translation")

    def __eq__(self, other):
        return other == "translation"


@pytest.mark.parametrize("field,value", [
    ("tool", np.timedelta64(4)), ("tool", np.datetime64(4, "s")),
    ("translation", np.zeros(3, "m8[s]")), ("translation", np.zeros(3, "M8[s]")),
    ("translation", np.zeros(3, object)), ("translation", np.zeros(3, complex)),
    ("given", np.zeros(7, "m8[s]")), ("yaw_pitch", np.zeros(2, "m8[s]")),
])
def test_timedelta_datetime_complex_and_object_values_are_refused(env, field, value):
    a = _action(env, "set_camera_position" if field == "yaw_pitch" else "move_camera", set_orientation=1)
    a[field] = value
    pose, calls = env.episode.pose_task(), env.episode.tool_calls
    with pytest.raises(ValueError, match=f"action outside the action space: '{field}' must be numbers"):
        env.step(a)
    assert env.episode.pose_task() == pose and env.episode.tool_calls == calls


def test_a_key_that_is_not_a_str_is_refused_with_the_documented_message(env):
    pose = env.episode.pose_task()
    with pytest.raises(ValueError, match="action outside the action space: every key must be a str"):
        env.step({"tool": TOOL_NAMES.index("move_camera"), _HashesLikeAField(): np.array([0.5, 0, 0])})
    assert env.episode.pose_task() == pose


def test_decoding_a_submission_before_the_first_reset_says_to_reset():
    spec = small_scene(64, 64)
    fresh = SpatialScoutEnv(spec, renderer=FakeRenderer(spec), resolution=64, tool_call_budget=None)
    with pytest.raises(RuntimeError, match=r"no episode yet: call reset\(\) first"):
        fresh.decode_action(_action(fresh, "submit_positions"))


def test_reset_options_that_name_no_scene_are_clear_errors():
    """A 10,000-character scene name is the unknown-scene error (not ``OSError: File name too
    long``); options that are not a dict say what reset takes (not ``TypeError: string indices``)."""
    from spatialscout_gym.core.errors import ConfigError
    from spatialscout_gym.scenes.catalog import UnknownSceneError
    spec = small_scene(32, 32)
    e = SpatialScoutEnv(spec, renderer=FakeRenderer(spec), resolution=32)
    with pytest.raises(UnknownSceneError, match="at most 4096 characters, got 10000"):
        e.reset(options={"scene": "x" * 10_000})
    with pytest.raises(UnknownSceneError, match=r"unknown scene 'yyyy.*\(300 characters\)"):
        e.reset(options={"scene": "y" * 300})   # one path component longer than a file name may be
    with pytest.raises(ConfigError, match="reset.options=.... takes a dict"):
        e.reset(options="scene")
    assert e.reset(seed=0)[1]["scene_id"] == spec.scene_id


def test_a_masked_tool_index_is_refused(env):
    """A fully masked ``tool`` (its data says 0, list_entities) is no index: refused, not run."""
    calls = env.unwrapped.episode.tool_calls if hasattr(env.unwrapped, "episode") else None
    with pytest.raises(ValueError, match="action outside the action space: 'tool' is a masked array"):
        env.step({"tool": np.ma.masked_array(0, mask=True)})
    with pytest.raises(ValueError, match="'translation' is a masked array"):
        env.step(_action(env, "move_camera", translation=np.ma.masked_array([0.1, 0, 0], mask=[True, False, False])))
    if calls is not None:
        assert env.unwrapped.episode.tool_calls == calls
