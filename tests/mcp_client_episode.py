"""One MCP client episode over stdio (the real ``mcp`` client against ``spatialscout mcp`` as a
subprocess of the CLI, on a catalog scene rendered by SAPIEN), made once per test session and shared
by the tests that read its run directory (tests/test_mcp.py, the MCP journey); and the client
session both transports run."""

from __future__ import annotations

import base64
import dataclasses
import io
import json
import os
import sys
from pathlib import Path

import anyio
from PIL import Image

from spatialscout_gym.core.scoring import GroundTruth


def scene_id() -> str:
    from spatialscout_gym.scenes.catalog import catalog_scene_ids
    return catalog_scene_ids()[0]


async def client_session(client, scene_id: str) -> dict:
    """List tools, capture (image content), make a bad call, submit near-true centres, finish."""
    from spatialscout_gym.scenes.catalog import scene_by_name
    tools = await client.list_tools()
    names = {t.name for t in tools.tools}
    assert len(names) == 10 and "capture_image" in names
    cap = await client.call_tool("capture_image", {})
    images = [c for c in cap.content if c.type == "image"]
    assert not cap.is_error and len(images) == 2  # the new frame and, on the first call, frame 0
    im = Image.open(io.BytesIO(base64.b64decode(images[0].data)))
    assert im.format == "JPEG" and max(im.size) <= 384 and images[0].mime_type == "image/jpeg"
    assert cap.content[0].text == "Initial image of this episode:"   # frame 0 comes first
    assert json.loads(cap.content[3].text)["result"]["frame_id"] == 1
    bad = await client.call_tool("move_camera", {"forward": 5})
    assert bad.is_error and "<= 1 m" in bad.content[0].text
    unknown = await client.call_tool("fly_to_target", {"id": "x"})   # counted and traced like any refusal
    assert unknown.is_error and "unknown tool 'fly_to_target'" in unknown.content[0].text
    gt = GroundTruth.from_spec(scene_by_name(scene_id))
    positions = {tid: [float(x) + 0.02 for x in gt.centers_task[i]] for i, tid in enumerate(gt.ids)}
    sub = await client.call_tool("submit_positions", {"positions": positions})
    assert not sub.is_error and json.loads(sub.content[0].text)["result"]["submitted_count"] == len(gt.ids)
    fin = await client.call_tool("finish_mapping", {})
    assert not fin.is_error
    after = await client.call_tool("get_camera_pose", {})
    assert after.is_error and "has ended" in after.content[0].text
    return {"names": names}


def check_run_dir(out) -> dict:
    result = json.loads((out / "result.json").read_text())
    assert result["status"] == "ok" and result["end_reason"] == "finish_mapping"
    assert result["all"]["mean_iou"] > 0 and result["coverage"] == 1.0
    events = [json.loads(x)["event"] for x in (out / "trace.jsonl").read_text().splitlines()]
    assert events[0] == "start" and events[-1] == "end" and "map" in events
    assert (out / "frames" / "frame_001.png").exists()
    calls = [json.loads(x) for x in (out / "trace.jsonl").read_text().splitlines()]
    calls = [e for e in calls if e["event"] == "tool_call"]
    assert [e["tool"] for e in calls] == ["capture_image", "move_camera", "fly_to_target", "submit_positions",
                                          "finish_mapping"]
    assert not calls[2]["result"]["ok"] and result["counters"]["tool_calls"] == 5   # B counts it
    return result


@dataclasses.dataclass(frozen=True)
class StdioEpisode:
    out: Path
    """The run directory."""
    instructions: str | None
    """The server's instructions, as the client received them."""
    detailed: str
    """The task prompt in the ``detailed`` wording asked for (``--prompt detailed``)."""
    result_before_close: bool
    """``result.json`` was there at ``finish_mapping``, before the server stopped."""


_EPISODES: dict[str, StdioEpisode] = {}


def stdio_episode(tmp_path_factory) -> StdioEpisode:
    """``spatialscout mcp --scene SCENE --out DIR --resolution 256 --prompt detailed`` over stdio, one
    client session (:func:`client_session`); made on the first call of the session."""
    if "stdio" in _EPISODES:
        return _EPISODES["stdio"]
    from mcp import Client, StdioServerParameters
    from spatialscout_gym.conversation.prompt import task_prompt
    from spatialscout_gym.scenes.catalog import scene_by_name
    out = tmp_path_factory.mktemp("mcp_stdio") / "stdio"
    params = StdioServerParameters(command=sys.executable, args=[
        "-m", "spatialscout_gym.cli.main", "mcp", "--scene", scene_id(), "--out", str(out),
        "--resolution", "256", "--prompt", "detailed"], env=dict(os.environ))
    spec = scene_by_name(scene_id())
    detailed = task_prompt(spec.public, spec.public.intrinsics.scaled(256, 256), model_call_budget=100,
                           image_budget=100, budget_counts_tool_calls=True, style="detailed")
    seen: dict = {}

    async def main():
        from mcp.client.stdio import stdio_client
        # the server's stderr goes to this process's real stderr, whatever stream a test's capture
        # left in sys.stderr when mcp's stdio client was first imported (its default is bound then)
        async with Client(stdio_client(params, errlog=sys.__stderr__), mode="legacy") as client:
            seen["instructions"] = client.instructions
            await client_session(client, scene_id())
            seen["result"] = (out / "result.json").exists()
    anyio.run(main)
    _EPISODES["stdio"] = StdioEpisode(out, seen["instructions"], detailed, seen["result"])
    return _EPISODES["stdio"]
