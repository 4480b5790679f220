"""An action outside the Gym action space raises one clear ValueError saying
what was expected (a NaN tool index, a wrong shape, a missing key, not a dict)."""

from __future__ import annotations

import numpy as np
import pytest

from fakes import FakeRenderer, small_scene
from spatialscout_gym.envs.spatialscout_env import MAX_MARKS, SpatialScoutEnv
from spatialscout_gym.episode import TOOL_NAMES


@pytest.fixture()
def env():
    spec = small_scene(32, 32)
    e = SpatialScoutEnv(spec, renderer=FakeRenderer(spec), resolution=32)
    e.reset(seed=0)
    return e


def action(env, tool, **fields):
    a = {k: np.zeros(s.shape, s.dtype) for k, s in env.action_space.spaces.items()}
    a["tool"] = TOOL_NAMES.index(tool)
    a.update(fields)
    return a


@pytest.mark.parametrize("make, detail", [
    (lambda e: {**action(e, "move_camera"), "tool": np.float32("nan")}, "'tool' must be an integer from 0 to 9"),
    (lambda e: {**action(e, "move_camera"), "tool": 12}, "'tool' must be an integer from 0 to 9"),
    (lambda e: {**action(e, "move_camera"), "tool": 2.5}, "'tool' must be an integer from 0 to 9"),
    (lambda e: {**action(e, "move_camera"), "tool": [1, 2]}, "'tool' must be numbers of shape ()"),
    (lambda e: {**action(e, "move_camera"), "translation": np.zeros(2)}, "'translation' must be numbers of shape (3,)"),
    (lambda e: {k: v for k, v in action(e, "rotate_camera").items() if k != "rotation"}, "the key 'rotation' is missing"),
    (lambda e: {k: v for k, v in action(e, "move_camera").items() if k != "tool"}, "the key 'tool' is missing"),
    (lambda e: {**action(e, "triangulate_observations"), "num_marks": 99}, f"'num_marks' must be an integer from 0 to {MAX_MARKS}"),
    (lambda e: {**action(e, "submit_positions"), "positions": np.zeros((3, 3))}, "'positions' must be numbers of shape (40, 3)"),
    (lambda e: {**action(e, "move_camera"), "translation": np.array(["a", "b", "c"])}, "'translation' must be numbers"),
    (lambda e: [1, 2, 3], "got list, not a dict"),
])
def test_out_of_space_action_is_one_clear_value_error(env, make, detail):
    with pytest.raises(ValueError) as info:
        env.step(make(env))
    msg = str(info.value)
    assert msg.startswith("action outside the action space: ") and detail in msg, msg
    assert "Expected a dict with 'tool'" in msg
    assert env.episode.tool_calls == 0          # nothing ran


def test_in_space_actions_still_decode(env):
    tool, args = env.decode_action(action(env, "move_camera", translation=np.array([0.5, 0, 0], np.float32)))
    assert tool == "move_camera" and args["forward"] == pytest.approx(0.5)
    assert env.step(env.action_space.sample())[4]["tool_result"]["tool"] in TOOL_NAMES
