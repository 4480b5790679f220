"""The MCP server stays responsive: a tool call runs off the event loop, so a ping is answered while a
slow call is still running (the real ``mcp`` client over streamable HTTP on 127.0.0.1), and a stdio
line that is no JSON-RPC message (not JSON, or a batch) is answered with the same JSON-RPC error
the HTTP transport gives, so a client never waits for ever. Fake renderer: no SAPIEN."""

from __future__ import annotations

import json
import os
import select
import socket
import subprocess
import sys
import threading
from pathlib import Path

import anyio
import pytest

from fakes import FakeRenderer, small_scene
from spatialscout_gym.servers.mcp_server import McpEpisode, serve_http

TESTS = Path(__file__).resolve().parent
BOUND_S = 60
"""How long a reply may take before the test calls the server stalled (a bound, not a measurement)."""


class GatedRenderer(FakeRenderer):
    """A renderer whose captures wait for ``release`` once ``gate`` is set (frame 0 renders freely)."""

    def __init__(self, spec) -> None:
        super().__init__(spec)
        self.gate, self.entered, self.release = threading.Event(), threading.Event(), threading.Event()

    def capture_rgb(self, pose):
        if self.gate.is_set():
            self.entered.set()
            assert self.release.wait(BOUND_S * 5), "the test never released the capture"
        return super().capture_rgb(pose)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _http_server(session: McpEpisode):
    port, ready, stop = _free_port(), threading.Event(), threading.Event()
    thread = threading.Thread(target=serve_http, args=(session, port), kwargs={"ready": ready, "stop": stop},
                              daemon=True)
    thread.start()
    assert ready.wait(30)
    return f"http://127.0.0.1:{port}/mcp", stop, thread


def test_a_ping_is_answered_while_a_slow_tool_call_runs(tmp_path):
    from mcp import Client
    spec = small_scene(32, 32)
    renderer = GatedRenderer(spec)
    session = McpEpisode(spec, tmp_path / "run", renderer=renderer, resolution=32)
    url, stop, thread = _http_server(session)
    events: list[str] = []
    renderer.gate.set()
    try:
        async def main() -> None:
            async with Client(url, mode="legacy") as client:   # ping is a legacy-era request
                async def slow_call() -> None:
                    res = await client.call_tool("capture_image", {})
                    events.append("call answered" if not res.is_error else "call failed")

                async with anyio.create_task_group() as tg:
                    tg.start_soon(slow_call)
                    await anyio.to_thread.run_sync(renderer.entered.wait, BOUND_S)   # the call is rendering
                    assert renderer.entered.is_set()
                    try:
                        with anyio.fail_after(BOUND_S):        # a stalled event loop never answers
                            await client.send_ping()
                        events.append("ping answered" + (" while the call waits" if not renderer.release.is_set() else ""))
                    finally:
                        renderer.release.set()
        anyio.run(main)
    finally:
        renderer.release.set()
        stop.set()
        thread.join(30)
    assert events == ["ping answered while the call waits", "call answered"]


STDIO_SERVER = """
import sys
sys.path.insert(0, sys.argv[2])
from fakes import FakeRenderer, small_scene
from spatialscout_gym.servers.mcp_server import McpEpisode, serve_stdio
spec = small_scene(32, 32)
serve_stdio(McpEpisode(spec, sys.argv[1], renderer=FakeRenderer(spec), resolution=32))
"""

BAD_LINES = ["this is not json", '{"jsonrpc": "2.0", "id": 5, "method": ',
             '[{"jsonrpc": "2.0", "id": 1, "method": "ping"}, {"jsonrpc": "2.0", "id": 2, "method": "ping"}]',
             '{"id": 7}']


def _read_line(proc: subprocess.Popen) -> dict:
    ready, _, _ = select.select([proc.stdout], [], [], BOUND_S)
    assert ready, "the stdio server did not answer"
    line = proc.stdout.readline()
    assert line, f"the stdio server closed its output: {proc.stderr.read()[-2000:] if proc.stderr else ''}"
    return json.loads(line)


def _http_errors(tmp_path) -> list[tuple[int, object]]:
    import httpx2
    spec = small_scene(32, 32)
    session = McpEpisode(spec, tmp_path / "http", renderer=FakeRenderer(spec), resolution=32)
    url, stop, thread = _http_server(session)
    headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    try:
        replies = [httpx2.post(url, content=line.encode(), headers=headers, timeout=BOUND_S) for line in BAD_LINES]
    finally:
        stop.set()
        thread.join(30)
    assert all(r.status_code == 400 for r in replies)
    return [(r.json()["error"]["code"], r.json()["id"]) for r in replies]


def test_stdio_answers_malformed_lines_and_batches_as_http_does(tmp_path):
    proc = subprocess.Popen([sys.executable, "-c", STDIO_SERVER, str(tmp_path / "stdio"), str(TESTS)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONUNBUFFERED": "1"})
    try:
        got = []
        for line in BAD_LINES:
            proc.stdin.write(line + "\n")
            proc.stdin.flush()
            reply = _read_line(proc)
            assert reply["jsonrpc"] == "2.0" and reply["id"] is None and reply["error"]["message"], reply
            got.append((reply["error"]["code"], reply["id"]))
        proc.stdin.write(json.dumps({"jsonrpc": "2.0", "id": 9, "method": "ping"}) + "\n")
        proc.stdin.flush()
        assert _read_line(proc) == {"jsonrpc": "2.0", "id": 9, "result": {}}   # still serving
    finally:
        proc.stdin.close()
        try:
            proc.wait(BOUND_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            pytest.fail("the stdio server did not stop when its input closed")
    assert [code for code, _ in got] == [-32700, -32700, -32602, -32602]
    assert got == _http_errors(tmp_path)
