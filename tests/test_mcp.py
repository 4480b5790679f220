"""``spatialscout mcp`` with the real ``mcp`` client: stdio (a subprocess of the CLI) and
streamable HTTP on 127.0.0.1, on a catalog scene rendered by SAPIEN."""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys
import time

import anyio
import pytest

from mcp_client_episode import check_run_dir, client_session, scene_id, stdio_episode

pytestmark = [pytest.mark.render, pytest.mark.slow, pytest.mark.xdist_group("mcp")]   # the shared episode: one worker


def test_mcp_stdio_subprocess(tmp_path_factory):
    """The episode over stdio from a subprocess of the CLI (shared with the MCP journey, made once);
    ``--prompt`` chooses the wording served, as for ``run``. (That the handshake does not wait for
    the renderer is shown in process below; its time is ``benchmarks/bench_answers.py``'s.)"""
    episode = stdio_episode(tmp_path_factory)
    assert episode.instructions == episode.detailed
    assert episode.result_before_close        # written at finish_mapping, before the server stops
    check_run_dir(episode.out)
    assert json.loads((episode.out / "harness.json").read_text())["prompt_style"] == "detailed"


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
    proc = subprocess.Popen([sys.executable, "-m", "spatialscout_gym.cli.main", "mcp", "--scene", scene_id(),
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
                await client_session(client, scene_id())
        anyio.run(main)
        check_run_dir(out)
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=60)
    assert json.loads((out / "result.json").read_text())["end_reason"] == "finish_mapping"
