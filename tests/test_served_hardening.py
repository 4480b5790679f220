"""What the two local servers (``view``, ``play``) and ``view --out`` never hand out: a file with a
hard link into the run (``ln /etc/passwd RUN/frames/frame_002.png``) is neither copied nor served,
nor read as a run file; every response carries the security headers of a static site; no
directory is listed; a request with two ``Host`` headers or a NUL byte in its path is a 400
without a traceback; clients that hang up early print nothing; ``--out`` keeps an existing
``index.html`` unless ``--overwrite``; ``play`` refuses arguments that are not an object as the
model's wrapper does, without counting the call."""

from __future__ import annotations

import http.client
import json
import os
import socket
import struct
from pathlib import Path

import pytest

from fakes import FakeRenderer, served_play_game, small_scene
from spatialscout_gym.cli.main import main
from spatialscout_gym.envs.session import EpisodeSession
from spatialscout_gym.servers.viewer.server import SECURITY_HEADERS, TOKEN_HEADER, serve_directory

SECRET = b"SECRET-OUTSIDE-THE-RUN\n" * 4


def _get(port: int, path: str) -> tuple[int, dict[str, str], bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    conn.request("GET", path)
    r = conn.getresponse()
    out = (r.status, dict(r.getheaders()), r.read())
    conn.close()
    return out


def _raw(port: int, request: bytes) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(request)
        chunks = []
        while chunk := sock.recv(65536):
            chunks.append(chunk)
    return b"".join(chunks)


@pytest.fixture()
def run(tmp_path) -> Path:
    """One scripted episode (Vulkan-free renderer) with two captures, and a file outside it."""
    spec = small_scene(32, 32)
    run = tmp_path / "run"
    with EpisodeSession(resolution=32, image_budget=5, tool_call_budget=20, renderer=FakeRenderer(spec)) as s:
        s.load(spec)
        ep = s.new_episode()
        ep.call("capture_image")
        ep.call("finish_mapping")
        s.write_run(run, type("A", (), {"name": "scripted"})())
    (tmp_path / "outside.txt").write_bytes(SECRET)
    return run


@pytest.fixture()
def game(tmp_path):
    with served_play_game(tmp_path) as served:
        yield served


def test_view_out_copies_no_byte_of_a_hard_link_and_the_server_serves_none(run, tmp_path, capsys):
    os.link(tmp_path / "outside.txt", run / "frames" / "frame_002.png")
    site = tmp_path / "S"
    assert main(["view", str(run), "--out", str(site)]) == 0
    err = capsys.readouterr().err
    assert "skipped" in err and "frame_002.png" in err
    files = [p for p in site.rglob("*") if p.is_file()]
    assert (site / "frames" / "frame_000.png").is_file() and not (site / "frames" / "frame_002.png").exists()
    assert not any(SECRET[:20] in p.read_bytes() for p in files)
    # a hard link made inside a served site is not served either
    os.link(tmp_path / "outside.txt", site / "frames" / "planted.png")
    server = serve_directory(site)
    try:
        port = server.server_address[1]
        assert _get(port, "/frames/frame_000.png")[0] == 200
        status, _, body = _get(port, "/frames/planted.png")
        assert status == 404 and SECRET[:20] not in body
    finally:
        server.shutdown()


def test_view_refuses_a_run_file_that_is_a_hard_link(run, tmp_path, capsys):
    outside = tmp_path / "outside_result.json"
    os.replace(run / "result.json", outside)
    os.link(outside, run / "result.json")
    assert main(["view", str(run), "--out", str(tmp_path / "S")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "result.json: a file with more than one (hard) link" in err[0]


def test_both_servers_send_the_security_headers_and_list_no_directory(run, tmp_path, game):
    site = tmp_path / "S"
    assert main(["view", str(run), "--out", str(site)]) == 0
    (site / "sub").mkdir()
    (site / "sub" / "a.txt").write_text("a")
    view = serve_directory(site)
    try:
        vport = view.server_address[1]
        for path in ("/index.html", "/frames/frame_000.png", "/nothing-here"):
            status, headers, _ = _get(vport, path)
            assert {k: headers.get(k) for k in SECURITY_HEADERS} == SECURITY_HEADERS, path
        for path in ("/frames/", "/sub/", "/"):
            status, headers, body = _get(vport, path)
            assert (status == 404 and b"a.txt" not in body and b"frame_000" not in body) or (
                path == "/" and status == 200 and b"<script" in body), path
    finally:
        view.shutdown()
    _, server = game
    pport = server.server_address[1]
    for path in ("/", "/static/play.js", "/api/state", "/frames/0.png", "/nope"):
        status, headers, _ = _get(pport, path)
        assert {k: headers.get(k) for k in SECURITY_HEADERS} == SECURITY_HEADERS, path
    assert "frame-ancestors 'none'" in SECURITY_HEADERS["Content-Security-Policy"]


def test_two_host_headers_and_a_nul_byte_are_refused_without_a_traceback(run, tmp_path, game, capfd):
    site = tmp_path / "S"
    assert main(["view", str(run), "--out", str(site)]) == 0
    view = serve_directory(site)
    _, play = game
    try:
        for port in (view.server_address[1], play.server_address[1]):
            two = _raw(port, f"GET /index.html HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nHost: evil.example\r\n"
                             "Connection: close\r\n\r\n".encode())
            assert two.startswith(b"HTTP/1.0 400"), two[:80]
            nul = _raw(port, f"GET /%00/x HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n".encode())
            assert nul.startswith(b"HTTP/1.0 400"), nul[:80]
            assert _get(port, "/index.html")[0] == 200   # the server still answers
    finally:
        view.shutdown()
    err = capfd.readouterr().err
    assert "Traceback" not in err and "ValueError" not in err


def test_clients_that_hang_up_early_print_no_traceback(run, tmp_path, capfd):
    site = tmp_path / "S"
    assert main(["view", str(run), "--out", str(site)]) == 0
    (site / "big.bin").write_bytes(os.urandom(8 << 20))
    view = serve_directory(site)
    port = view.server_address[1]
    try:
        for _ in range(20):
            sock = socket.create_connection(("127.0.0.1", port), timeout=10)
            sock.sendall(f"GET /big.bin HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n".encode())
            sock.recv(1024)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))   # reset, not FIN
            sock.close()
        assert _get(port, "/index.html")[0] == 200
    finally:
        view.shutdown()
    err = capfd.readouterr().err
    assert "Traceback" not in err and "BrokenPipeError" not in err and "ConnectionResetError" not in err, err[-500:]


@pytest.mark.parametrize("command", ["view", "leaderboard"])
def test_out_keeps_an_existing_index_html_unless_overwrite(command, run, tmp_path, capsys):
    site = tmp_path / "S"
    site.mkdir()
    (site / "index.html").write_text("mine")
    ev = tmp_path / "ev" / "scene" / "seed_0"
    ev.parent.mkdir(parents=True)
    os.rename(run, ev)
    argv = {"view": ["view", str(ev), "--out", str(site)],
            "leaderboard": ["leaderboard", str(tmp_path / "ev"), "--out", str(site), "--no-progress"]}[command]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "already holds index.html; pass --overwrite" in err and (site / "index.html").read_text() == "mine"
    if command == "view":   # the leaderboard of a bare run directory is another test's matter
        assert main(argv + ["--overwrite"]) == 0 and (site / "index.html").read_text() != "mine"


def test_play_refuses_arguments_that_are_not_an_object_like_the_wrapper(game):
    g, server = game
    port, token = server.server_address[1], server.url.split("token=")[1]
    for args in ([1], 5, "[1]", True):
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        conn.request("POST", "/api/call", json.dumps({"tool": "move_camera", "args": args}),
                     {"Content-Type": "application/json", TOKEN_HEADER: token})
        reply = json.loads(conn.getresponse().read())
        conn.close()
        assert not reply["result"]["ok"], args
        assert "move_camera: the arguments must be a JSON object (name -> value)" in reply["result"]["error"]
    assert g.episode.counters()["tool_calls"] == 0
