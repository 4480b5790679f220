"""The task prompt is an MCP prompt (listed and fetched by the real ``mcp``
client), the instructions are worded for a tool server, and the HTTP transport can require a
bearer token (a client without it is refused). Fake renderer: fast, no SAPIEN."""

from __future__ import annotations

import json
import os
import socket
import threading

import anyio
import pytest

from fakes import FakeRenderer, small_scene
from spatialscout_gym.cli.main import main
from spatialscout_gym.servers.mcp_server import PROMPT_NAME, McpEpisode, build_server, serve_http

TOKEN = "test-token-0123456789abcdef"


def _session(tmp_path) -> McpEpisode:
    spec = small_scene(32, 32)
    return McpEpisode(spec, tmp_path / "run", renderer=FakeRenderer(spec), resolution=32)


def test_task_prompt_is_an_mcp_prompt_listed_and_fetched_by_the_client(tmp_path):
    from mcp import Client
    session = _session(tmp_path)

    async def run():
        async with Client(build_server(session)) as client:
            listed = await client.list_prompts()
            assert [p.name for p in listed.prompts] == [PROMPT_NAME]
            got = await client.get_prompt(PROMPT_NAME)
            text = got.messages[0].content.text
            assert got.messages[0].role == "user"
            assert "Task axes" in text and "bounding box" in text and "chair_1" not in text
            assert text == client.instructions
            return text
    text = anyio.run(run)
    # worded for a tool server: no reply-without-a-tool-call rule, budget in tool calls
    assert "without a tool call" not in text and "answer without" not in text
    assert "Budgets: tool calls 100;" in text
    session.close()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_http_bearer_token_refuses_a_client_without_it(tmp_path):
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client
    session = _session(tmp_path)
    port, ready, stop = _free_port(), threading.Event(), threading.Event()
    thread = threading.Thread(target=serve_http, args=(session, port),
                              kwargs={"ready": ready, "token": TOKEN, "stop": stop}, daemon=True)
    thread.start()
    assert ready.wait(30)
    url = f"http://127.0.0.1:{port}/mcp"
    try:
        # without the token (and with a wrong one): 401 before any MCP handling
        for headers in ({}, {"Authorization": "Bearer wrong-token-0123456789"}):
            r = httpx2.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"}, headers=headers)
            assert r.status_code == 401 and "Authorization: Bearer" in r.json()["error"]
        # two Authorization headers, a wrong one first or last, or the right one twice: refused
        right, wrong = ("Authorization", f"Bearer {TOKEN}"), ("authorization", "Bearer wrong-token-0123456789")
        for pair in ([wrong, right], [right, wrong], [right, right]):
            r = httpx2.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"}, headers=pair)
            assert r.status_code == 401 and "this request has 2" in r.json()["error"], pair

        async def without():
            async with Client(url) as client:
                await client.call_tool("move_camera", {"forward": 0.5})
        with pytest.raises(BaseException):
            anyio.run(without)
        assert session.episode.tool_calls == 0        # the intruder moved nothing

        async def with_token():
            http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {TOKEN}"})
            async with http, Client(streamable_http_client(url, http_client=http)) as client:
                assert PROMPT_NAME in [p.name for p in (await client.list_prompts()).prompts]
                res = await client.call_tool("move_camera", {"forward": 0.5})
                assert not res.is_error and json.loads(res.content[3].text)["ok"]   # after frame 0
        anyio.run(with_token)
        assert session.episode.tool_calls == 1
    finally:
        stop.set()
        thread.join(30)
    assert (tmp_path / "run" / "result.json").is_file()


@pytest.mark.parametrize("argv, env, needle", [
    (["--generate-token"], {}, "applies to --transport http"),
    (["--transport", "http", "--token-file", "{tmp}/none.txt"], {}, "does not exist"),
    (["--transport", "http", "--token-file", "{tmp}/latin1.txt"], {}, "latin1.txt: not UTF-8 text (byte 5, line 1)"),
    (["--transport", "http", "--token-file", "{tmp}/fifo"], {}, "fifo: a FIFO, not a regular file"),
    (["--transport", "http", "--token-file", "{tmp}/folder"], {}, "folder: a directory, not a regular file"),
    (["--transport", "http"], {"SPATIALSCOUT_MCP_TOKEN": "short"}, "at least 16 characters"),
])
def test_token_options_are_checked_in_one_line(argv, env, needle, tmp_path, capsys, monkeypatch):
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    (tmp_path / "latin1.txt").write_bytes(b"token\xe9" + b"x" * 20)
    os.mkfifo(tmp_path / "fifo")     # no writer: a reader that opened it would wait forever
    (tmp_path / "folder").mkdir()
    rc = main(["mcp", "--scene", "procedural:1", "--out", str(tmp_path / "m")]
              + [a.replace("{tmp}", str(tmp_path)) for a in argv])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1 and needle in err[0], err


def test_mcp_run_directory_has_harness_and_prompt_and_frame_0_comes_first(tmp_path):
    session = _session(tmp_path)
    blocks, err = session.call("capture_image", {})
    texts = [b["text"] for b in blocks if b["type"] == "text"]
    assert texts[0] == "Initial image of this episode:" and texts[1].startswith("Frame 0:")
    assert json.loads(texts[2])["result"]["frame_id"] == 1 and texts[3].startswith("Frame 1:")
    session.call("finish_mapping", {})
    run = tmp_path / "run"
    h = json.loads((run / "harness.json").read_text())
    assert h["task_prompt"] == session.instructions and h["prompt_style"] == "appendix-a"
    assert "MCP" in h["prompt_role"] and len(h["tool_schema"]) == 10
    assert session.instructions in (run / "prompt.txt").read_text()
    session.close()


def test_readme_mcp_client_example_runs_over_http_with_the_token(tmp_path, capsys):
    """The README's MCP client, as printed: its ``http`` coroutine against a token-protected server."""
    import re
    from pathlib import Path
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    section = readme[readme.index("### Any MCP client"):]
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    assert len(code.strip().splitlines()) <= 18 and "mcp.client.streamable_http" in code
    session = _session(tmp_path)
    port, ready, stop = _free_port(), threading.Event(), threading.Event()
    thread = threading.Thread(target=serve_http, args=(session, port),
                              kwargs={"ready": ready, "token": TOKEN, "stop": stop}, daemon=True)
    thread.start()
    assert ready.wait(30)
    try:
        scope: dict = {}
        exec(compile(code.replace("anyio.run(stdio)", "").replace("8765", str(port)), "README.md", "exec"), scope)
        anyio.run(scope["http"], TOKEN)
    finally:
        stop.set()
        thread.join(30)
    assert "capture_image" in capsys.readouterr().out
