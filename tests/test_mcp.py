"""``spatialscout mcp`` with the real ``mcp`` client: stdio (a subprocess of the CLI) and
streamable HTTP on 127.0.0.1, on a catalog scene rendered by SAPIEN."""

from __future__ import annotations

import base64
import io
import json
import os
import signal
import socket
import subprocess
import sys
import time

import anyio
import pytest
from PIL import Image

from spatialscout_gym.core.scoring import GroundTruth

pytestmark = [pytest.mark.render, pytest.mark.slow]


def _scene_id() -> str:
    from spatialscout_gym.scenes.catalog import catalog_scene_ids
    return catalog_scene_ids()[0]


async def _session(client, scene_id: str) -> dict:
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


def _check_run_dir(out) -> dict:
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


def test_mcp_stdio_subprocess(tmp_path):
    """The episode over stdio from a subprocess of the CLI; ``--prompt`` chooses the wording served,
    as for ``run``. (That the handshake does not wait for the renderer is shown in process below;
    its time is ``benchmarks/bench_answers.py``'s.)"""
    from mcp import Client, StdioServerParameters
    from spatialscout_gym.conversation.prompt import task_prompt
    from spatialscout_gym.scenes.catalog import scene_by_name
    out = tmp_path / "stdio"
    params = StdioServerParameters(command=sys.executable, args=[
        "-m", "spatialscout_gym.cli.main", "mcp", "--scene", _scene_id(), "--out", str(out),
        "--resolution", "256", "--prompt", "detailed"], env=dict(os.environ))
    spec = scene_by_name(_scene_id())
    detailed = task_prompt(spec.public, spec.public.intrinsics.scaled(256, 256), model_call_budget=100,
                           image_budget=100, budget_counts_tool_calls=True, style="detailed")

    async def main():
        from mcp.client.stdio import stdio_client
        # the server's stderr goes to this process's real stderr, whatever stream a test's capture
        # left in sys.stderr when mcp's stdio client was first imported (its default is bound then)
        async with Client(stdio_client(params, errlog=sys.__stderr__), mode="legacy") as client:
            assert client.instructions == detailed
            await _session(client, _scene_id())
            assert (out / "result.json").exists()  # written at finish_mapping, before the server stops
    anyio.run(main)
    _check_run_dir(out)
    assert json.loads((out / "harness.json").read_text())["prompt_style"] == "detailed"


def test_the_handshake_and_tool_list_do_not_wait_for_the_renderer(tmp_path):
    """``background=True`` (what ``spatialscout mcp`` uses): the client's handshake and tool list are
    answered while frame 0 is still being rendered; the first tool call waits for it."""
    import threading
    from mcp import Client
    from fakes import FakeRenderer, small_scene
    from spatialscout_gym.servers.mcp_server import McpEpisode, build_server
    warmed = threading.Event()

    class SlowRenderer(FakeRenderer):
        def capture_rgb(self, pose):
            warmed.wait(120)          # the warm-up holds until the client has been answered
            return super().capture_rgb(pose)

    spec = small_scene()
    renderer = SlowRenderer(spec, 64, 64)
    session = McpEpisode(spec, tmp_path / "run", renderer=renderer, resolution=64, image_budget=5,
                         tool_call_budget=10, background=True)

    async def main():
        with anyio.fail_after(60):     # a handshake that waited for frame 0 would never come
            async with Client(build_server(session), mode="legacy") as client:
                assert client.instructions == session.instructions
                assert len((await client.list_tools()).tools) == 10
                assert renderer.captures == 0 and not warmed.is_set()   # frame 0 not rendered yet
                warmed.set()
                cap = await client.call_tool("capture_image", {})
                assert not cap.is_error and renderer.captures == 2       # frame 0, then frame 1
    try:
        anyio.run(main)
    finally:
        warmed.set()
        session.close()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_mcp_streamable_http_loopback(tmp_path):
    from mcp import Client
    out, port = tmp_path / "http", _free_port()
    proc = subprocess.Popen([sys.executable, "-m", "spatialscout_gym.cli.main", "mcp", "--scene", _scene_id(),
                             "--out", str(out), "--resolution", "128", "--transport", "http",
                             "--port", str(port)], stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.time() + 120
        while time.time() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                break
            except OSError:
                assert proc.poll() is None, proc.stderr.read()
                time.sleep(0.3)
        listening = subprocess.run(["ss", "-ltn"], capture_output=True, text=True).stdout
        if listening:
            assert f"127.0.0.1:{port}" in listening and f"0.0.0.0:{port}" not in listening

        async def main():
            async with Client(f"http://127.0.0.1:{port}/mcp") as client:
                await _session(client, _scene_id())
        anyio.run(main)
        _check_run_dir(out)
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=60)
    assert json.loads((out / "result.json").read_text())["end_reason"] == "finish_mapping"
