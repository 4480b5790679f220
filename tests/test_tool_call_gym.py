"""ToolCallWrapper as a Gymnasium wrapper: inner wrappers see the tool calls, every valid call is a
fixed-shape env action, model replies in every form a user holds, and one reply formatter shared
with the MCP server. Fake renderer; real gymnasium wrappers and real SDK message types."""

from __future__ import annotations

import json

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.wrappers import RecordEpisodeStatistics

from fakes import FakeRenderer, small_scene
from spatialscout_gym.envs.spatialscout_env import MAX_MARKS, MAX_TARGETS, SpatialScoutEnv
from spatialscout_gym.episode import TOOL_NAMES
from spatialscout_gym.wrappers.encode import encode_call
from spatialscout_gym.conversation.replies import MAX_ERROR_CHARS
from spatialscout_gym.wrappers.tool_call import ToolCallWrapper


class CountSteps(gym.Wrapper):
    """A user's wrapper: counts env steps and keeps the actions."""

    def __init__(self, env):
        super().__init__(env)
        self.actions: list[dict] = []

    def step(self, action):
        self.actions.append(action)
        return self.env.step(action)


def _env(res=32, spec=None, **kw):
    spec = spec or small_scene(res, res)
    return gym.make("SpatialScout/Procedural-v0", scene=spec, renderer=FakeRenderer(spec), resolution=res,
                    image_budget=kw.pop("image_budget", 10), tool_call_budget=kw.pop("tool_call_budget", None), **kw)


def test_is_a_gymnasium_wrapper_and_inner_wrappers_see_each_tool_call():
    assert issubclass(ToolCallWrapper, gym.Wrapper)
    counter = CountSteps(_env())
    stats = RecordEpisodeStatistics(counter)
    w = ToolCallWrapper(stats, model_call_budget=12)
    opening, info = w.reset(seed=0)
    assert [m.role for m in opening] == ["user"] and len(opening[0].images) == 1   # the paper's user prompt
    assert info["model_call_budget"] == 12 and info["scene_id"] == "fake-room"
    calls = [("move_camera", '{"right": 0.3}'), ("capture_image", "{}"),
             ("triangulate_observations", {"observations": [{"frame_id": 0, "u": 10, "v": 12},
                                                            {"frame_id": 1, "u": 14, "v": 12}]}),
             ("move_camera", {"fwd": 1}),          # the episode refuses it (and counts it)
             ("fly", "{}")]                        # an unknown tool: refused here, no env step
    messages, _, terminated, truncated, info = w.step([{"name": n, "arguments": a} for n, a in calls])
    assert len(counter.actions) == 4 == len([r for r in info["tool_results"] if r["tool"] != "fly"])
    assert [TOOL_NAMES[int(a["tool"])] for a in counter.actions] == [c[0] for c in calls[:4]]
    assert [m.role for m in messages] == ["tool"] * 5 and len(messages[1].images) == 1
    assert [m.is_error for m in messages] == [False, False, messages[2].is_error, True, True]
    assert not (terminated or truncated) and info["counters"]["tool_calls"] == 4
    messages, reward, terminated, truncated, info = w.step(
        [{"name": "submit_positions", "arguments": {"positions": {"chair_1": [3.0, -0.6, -0.9]}}},
         {"name": "finish_mapping", "arguments": {}}])
    assert terminated and not truncated and w.end_reason == "finish_mapping"
    assert len(counter.actions) == 6
    # RecordEpisodeStatistics inside saw the whole episode: six tool calls and the score as return
    assert info["episode"]["l"] == 6
    assert info["episode"]["r"] == pytest.approx(info["metrics"]["all"]["mean_iou"]) and reward > 0


def test_a_time_limit_inside_truncates_and_skips_the_rest():
    w = ToolCallWrapper(gym.wrappers.TimeLimit(_env(), max_episode_steps=2), model_call_budget=10)
    w.reset(seed=0)
    messages, _, terminated, truncated, info = w.step([{"name": "get_camera_pose", "arguments": {}}] * 3)
    assert truncated and not terminated and w.done
    assert json.loads(messages[2].text)["error"].startswith("skipped: the episode ended")


def test_every_valid_call_is_a_fixed_shape_action_in_the_space():
    """The largest inventory (40 targets) submitted at once, MAX_MARKS marks, each optional
    argument alone: all encoded in the Dict space (no passthrough) and decoded back exactly."""
    from spatialscout_gym.scenes.catalog import catalog_scene_ids, scene_by_name
    spec = next(s for s in map(scene_by_name, catalog_scene_ids()) if len(s.public.inventory) == MAX_TARGETS)
    env = SpatialScoutEnv(spec, renderer=FakeRenderer(spec, 64, 64), resolution=64, image_budget=100)
    env.reset(seed=0)
    ids = env.unwrapped.episode.inventory_ids
    r = float(spec.public.radius_m)
    rng = np.random.default_rng(0)
    calls = [(t, {}) for t in ("list_entities", "get_camera_pose", "get_camera_intrinsics", "capture_image",
                               "finish_mapping")]
    calls += [("submit_positions", {"positions": {i: (rng.uniform(-1, 1, 3) * r / 2).tolist() for i in ids}}),
              ("submit_positions", {"positions": {ids[5]: [0.5, 1, -0.25]}}),
              ("submit_positions", {"positions": {}}),
              ("triangulate_observations", {"observations": [
                  {"frame_id": int(k % 3), "u": float(rng.uniform(0, 63)), "v": float(rng.uniform(0, 63))}
                  for k in range(MAX_MARKS)]}),
              ("set_camera_position", {"position": [0.5, -0.25, 0.1]}),
              ("set_camera_position", {"position": [0.5, -0.25, 0.1], "yaw_deg": 30}),
              ("set_camera_position", {"position": [0, 0, 0], "pitch_deg": -12.5}),
              ("set_camera_position", {"position": [0, 0, 0], "yaw_deg": 1e-3, "pitch_deg": 80})]
    calls += [("move_camera", {n: 0.3}) for n in ("forward", "right", "up")]
    calls += [("move_camera", {"forward": 0.1, "up": -0.2}), ("rotate_camera", {"yaw": -179.5, "pitch": 3})]
    calls += [("rotate_camera", {n: 45}) for n in ("yaw", "pitch")]
    space = env.action_space
    for name, args in calls:
        action = encode_call(name, args, space, ids, env.decode_action)
        assert "arguments" not in action, (name, args)
        assert space.contains(action), (name, args)
        tool, decoded = env.decode_action(action)
        assert tool == name and json.loads(json.dumps(decoded)) == json.loads(json.dumps(args))
    # a call the fields cannot hold is passed as it came, and the episode refuses it with its reason
    action = encode_call("submit_positions", {"positions": {"sofa_99": [1, 2, 3]}}, space, ids, env.decode_action)
    assert action["arguments"] == {"positions": {"sofa_99": [1, 2, 3]}}
    _, _, _, _, info = env.step(action)
    assert not info["tool_result"]["ok"] and "unknown id 'sofa_99'" in info["tool_result"]["error"]


def test_step_reads_replies_in_every_form():
    """Real SDK message objects (openai, anthropic), their JSON dicts and a plain list."""
    import anthropic.types as at
    import openai.types.chat as oc
    oa = {"role": "assistant", "content": "moving", "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "move_camera", "arguments": '{"forward": 0.25}'}}]}
    an = {"id": "m1", "type": "message", "role": "assistant", "model": "x", "stop_reason": "tool_use",
          "stop_sequence": None, "usage": {"input_tokens": 1, "output_tokens": 1},
          "content": [{"type": "text", "text": "moving"},
                      {"type": "tool_use", "id": "t1", "name": "move_camera", "input": {"forward": 0.25}}]}
    completion = {"id": "x", "object": "chat.completion", "created": 0, "model": "m",
                  "choices": [{"index": 0, "message": oa, "finish_reason": "tool_calls"}],
                  "usage": {"prompt_tokens": 11, "completion_tokens": 3, "total_tokens": 14}}
    forms = [oa, oc.ChatCompletionMessage.model_validate(oa), an, at.Message.model_validate(an),
             oc.ChatCompletion.model_validate(completion), [{"name": "move_camera", "arguments": {"forward": 0.25}}]]
    positions = []
    for reply in forms:
        w = ToolCallWrapper(_env(), model_call_budget=3)
        w.reset(seed=0)
        messages, *_ = w.step(reply)
        assert len(messages) == 1 and not messages[0].is_error
        positions.append(json.loads(messages[0].text)["result"]["position"])
    assert all(p == positions[0] for p in positions) and positions[0][0] == pytest.approx(0.25, abs=1e-6)
    assert w.usage == {"input_tokens": 0, "output_tokens": 0}
    w = ToolCallWrapper(_env(), model_call_budget=3)
    w.reset(seed=0)
    w.step(oc.ChatCompletion.model_validate(completion))
    assert w.usage == {"input_tokens": 11, "output_tokens": 3}
    # the episode's wire format is now chat completions: 42 is a malformed reply of that format
    _, _, terminated, _, _ = w.step(42)
    assert not terminated and any("malformed" in m.text for m in w.messages if m.role == "user")
    fresh = ToolCallWrapper(_env(), model_call_budget=3)
    fresh.reset(seed=0)
    with pytest.raises(TypeError, match="cannot read a model reply"):
        fresh.step(42)


def test_mcp_server_and_wrapper_send_the_same_text(tmp_path):
    """One formatter: the same calls give the same text over MCP and through the wrapper, long
    errors clipped in both, and the same frame caption."""
    from spatialscout_gym.servers.mcp_server import McpEpisode
    spec = small_scene(32, 32)
    session = McpEpisode(spec, tmp_path / "mcp", renderer=FakeRenderer(spec), resolution=32, image_budget=10,
                         tool_call_budget=None)
    w = ToolCallWrapper(_env(spec=spec), model_call_budget=5)
    w.reset(seed=0)
    long_ids = {f"missing_{i:03d}": [0, 0, 0] for i in range(40)}
    calls = [("fly", {}), ("move_camera", "{bad json"), ("move_camera", {"forward": 0.5}), ("capture_image", {}),
             ("rotate_camera", {"yaw": 500}), ("submit_positions", {"positions": long_ids}),
             ("submit_positions", {"positions": {"chair_1": [3, -0.6, -0.9]}})]
    messages, *_ = w.step([{"name": n, "arguments": a} for n, a in calls])
    for (name, args), msg in zip(calls, messages):
        blocks, err = session.call(name, args)
        if name == "fly":   # MCP's first reply opens with the initial image (text, caption, image)
            assert blocks[0]["text"] == "Initial image of this episode:" and blocks[2]["type"] == "image"
            blocks = blocks[3:]
        texts = [b["text"] for b in blocks if b["type"] == "text"]
        assert texts == [p for p in msg.content if isinstance(p, str)], name
        assert err == msg.is_error
    clipped = json.loads(messages[5].text)["error"]
    assert clipped.endswith("more characters]") and len(clipped) < MAX_ERROR_CHARS + 40
    session.close()


@pytest.mark.render
def test_readme_model_loop_runs_against_a_scripted_server(monkeypatch, capsys):
    """The README's ten-line loop, as printed, with the real OpenAI client (pointed at a scripted
    server on 127.0.0.1 through OPENAI_BASE_URL) on the registered Kitchen_01 env (SAPIEN)."""
    import re
    from pathlib import Path

    from vlm_scripted import ScriptedServer
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    section = readme[readme.index("### Your own model loop"):]
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    assert len(code.strip().splitlines()) <= 16
    policy = lambda step, body, fmt: [("capture_image", {})] if step == 0 else [("finish_mapping", {})]  # noqa: E731
    with ScriptedServer(policy) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.openai_url)
        monkeypatch.setenv("OPENAI_API_KEY", "local")
        scope: dict = {}
        exec(compile(code, "README.md", "exec"), scope)
        requests = list(server.requests)
    assert len(requests) == 2 and scope["info"]["end_reason"] == "finish_mapping"
    assert sum(m["role"] == "tool" for m in requests[1]["messages"]) == 1
    assert capsys.readouterr().out.startswith("finish_mapping ")
    scope["env"].close()


def test_spaces_contain_what_the_wrapper_returns_and_takes_and_gymnasiums_checker_passes():
    import warnings

    from gymnasium.utils.env_checker import check_env

    from spatialscout_gym.conversation.messages import Message
    env = ToolCallWrapper(_env())
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        check_env(env, skip_render_check=True)
    # the only warning left is Gymnasium's note that a wrapper is checked, not env.unwrapped
    assert [str(w.message) for w in caught if "unwrapped" not in str(w.message)] == []
    messages, _ = env.reset(seed=0)
    assert env.observation_space.contains(messages) and messages
    for reply in ([{"name": "capture_image", "arguments": {}}],
                  [{"name": "rotate_camera", "arguments": json.dumps({"yaw": 30, "pitch": 0})}],
                  [{"name": "no_such_tool", "arguments": {}}]):
        assert env.action_space.contains(reply)
        messages, *_ = env.step(reply)
        assert env.observation_space.contains(messages) and all(isinstance(m, Message) for m in messages)
    assert not env.action_space.contains(42) and not env.observation_space.contains([{"role": "user"}])
    assert env.action_space.contains(env.action_space.sample())
    assert env.observation_space.contains(env.observation_space.sample())
