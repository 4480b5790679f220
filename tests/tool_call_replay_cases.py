"""Recorded model replies for the tool-call replay test (``test_tool_call_replay.py``).

Each case is a scene size, budgets, an optional passive view count and the model's replies, one
list of ``(name, arguments)`` per model call (``arguments`` as the provider sent it: a JSON text
like OpenAI's or an object like Anthropic's). The replies cover valid calls of every tool,
partial and null arguments, integer-valued numbers, every kind of refusal (unknown tool, bad JSON,
wrong types, unknown ids, out-of-range values, huge integers, a call after ``finish_mapping``) and
the three endings (``finish_mapping``, a reply without a tool call, B model calls).

``tests/data/tool_call_replay.json`` holds what the pre-gymnasium ``ToolCallWrapper`` (which drove
the ``Episode`` directly; commit 4c46094) produced for these replies: traces, the text of every
message the model received, scores and counters. It was written by
``tests/data/record_tool_call_replay.py`` at that commit.

What has changed on purpose since that recording, and how the replay test holds it to the same
record: the prompt was rewritten in the paper's words (the recording's wording is
``prompt_style="legacy"``, which the replay uses), the passive views follow a new stereo path (the
replay gives the wrapper the recording's path, :data:`OLD_PASSIVE_PATH`), wrapper events carry
``time_unix_s`` (ignored) and tool results are written by ``model_json`` (3 decimals, no ``-0.0``;
the test rounds the recorded texts the same way and checks that nothing else changed).
"""

from __future__ import annotations

_OLD_SWEEP_YAWS_DEG = (45.0, 90.0, 135.0, 180.0, -135.0, -90.0, -45.0, 0.0)
_OLD_STATIONS = ((0.0, 0.0, 0.0), (1.0, 0.0, 0.0), (0.0, 1.0, 0.0), (0.0, -1.0, 0.0), (-1.0, 0.0, 0.0),
                 (2.0, 0.0, 0.0), (0.0, 2.0, 0.0), (0.0, -2.0, 0.0), (-2.0, 0.0, 0.0))
OLD_PASSIVE_PATH = [(list(station), yaw, -20.0) for i, station in enumerate(_OLD_STATIONS)
                    for yaw in _OLD_SWEEP_YAWS_DEG if not (i == 0 and yaw == 0.0)]
"""The passive path of the recording's commit (``baselines.passive.scripted_path`` then): sweeps of 8
headings at the origin and 1 m / 2 m forward, left, right and back, pitch -20 degrees."""

MARKS_9 = [{"frame_id": i % 2, "u": 10.0 + i, "v": 12.0 + i} for i in range(9)]

ACTIVE = [
    [("list_entities", "{}"), ("get_camera_pose", ""), ("get_camera_intrinsics", None)],
    [("move_camera", '{"forward": 0.5}'), ("capture_image", "{}")],
    [("move_camera", {"forward": 0.2, "right": -0.3, "up": 0.1}), ("rotate_camera", '{"yaw": 30}'),
     ("capture_image", {})],
    [("set_camera_position", {"position": [0.3, 0.2, 0.1], "yaw_deg": -15}),
     ("set_camera_position", '{"position": [0, 0.1, 0], "yaw_deg": 10.5, "pitch_deg": -20}'),
     ("set_camera_position", {"position": [0.1, 0, 0], "pitch_deg": 5, "yaw_deg": None}),
     ("capture_image", "{}")],
    [("triangulate_observations", {"observations": [{"frame_id": 1, "u": 20, "v": 21.5},
                                                    {"frame_id": 2.0, "u": 25.25, "v": 22}]}),
     ("triangulate_observations", {"observations": MARKS_9}),
     ("triangulate_observations", {"observations": [{"frame_id": 1, "u": 3}]}),
     ("triangulate_observations", {"observations": [{"frame_id": 0, "u": 1, "v": 2}]}),
     ("triangulate_observations", {"observations": [{"frame_id": 9, "u": 1, "v": 2},
                                                    {"frame_id": 1, "u": 1, "v": 2}]})],
    [("submit_positions", {"positions": {"table_1": [2.7, -2.1, -0.95], "chair_1": [3.05, -0.6, -0.9]}}),
     ("submit_positions", '{"positions": {"lamp_1": [2.95, 1.2, -0.25], "vase_9": [0, 0, 0], "x": [1, 2]}}'),
     ("submit_positions", {"positions": {"chair_2": [40, 0, 0], "chair_1": "here", "table_1": [2.8, -2.2, -1]}}),
     ("submit_positions", {"positions": {"nope": [1, 1, 1]}}),
     ("submit_positions", {"positions": {}})],
    [("fly", "{}"), ("move_camera", "{not json"), ("move_camera", "[1, 2]"), ("rotate_camera", 7),
     ("move_camera", '{"forward": 1' + "0" * 400 + "}"), ("move_camera", {"fwd": 1}),
     ("set_camera_position", {}), ("move_camera", {"forward": "far"}), ("move_camera", {"forward": 2.0}),
     ("rotate_camera", {"yaw": 200, "pitch": 0}), ("rotate_camera", '{"pitch": NaN}'),
     ("move_camera", {}), ("rotate_camera", {"yaw": True}), ("capture_image", {"now": True})],
    [("rotate_camera", {"pitch": -100}), ("capture_image", "{}"), ("get_camera_pose", "{}")],
    [("submit_positions", {"positions": {"chair_2": [4.4, -0.3, -0.9]}}), ("finish_mapping", "{}"),
     ("capture_image", "{}"), ("fly", "{}")],
]

CASES: dict[str, dict] = {
    "active_finish": {"res": 48, "image_budget": 6, "model_call_budget": 20, "replies": ACTIVE},
    "no_tool_call": {"res": 40, "image_budget": 5, "model_call_budget": 20,
                     "replies": [[("capture_image", "{}")], [("submit_positions", {"positions": {"chair_2": [4.5, -0.2, -1.0]}})], []]},
    "budget_with_reminders": {"res": 32, "image_budget": 4, "model_call_budget": 12,
                              "replies": [[("capture_image", "{}"), ("move_camera", {"right": 0.25})]] * 12},
    "budget_three": {"res": 32, "image_budget": 3, "model_call_budget": 3,
                     "replies": [[("list_entities", "{}")]] * 3},
    "passive": {"res": 40, "image_budget": 10, "model_call_budget": 6, "passive_views": 6,
                "replies": [[("capture_image", "{}"), ("move_camera", {"forward": 0.5}),
                             ("get_camera_pose", "{}"),
                             ("triangulate_observations", {"observations": [
                                 {"frame_id": 1, "u": 10, "v": 12}, {"frame_id": 4, "u": 30, "v": 11}]})],
                            [("submit_positions", {"positions": {"lamp_1": [3.0, 1.1, -0.2], "chair_1": [3, -0.7, -1]}})],
                            [("finish_mapping", "{}")]]},
}
