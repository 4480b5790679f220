"""The pages served on 127.0.0.1 (``spatialscout view``, ``spatialscout play``) take requests only
from themselves, and serve nothing from outside the run directory: Host and Origin checks, the
play page's per-run token, bodies refused by their Content-Length before they are read (a negative
one included), symbolic links never followed. Raw sockets and ``http.client`` against servers the
tests start; a cross-origin page in headless Chromium; an MCP client told why the server cannot
start."""

from __future__ import annotations

import http.client
import json
import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from browser import headless_chrome, needs_browser

from fakes import FakeRenderer, served_play_game, small_scene
from spatialscout_gym.envs.session import EpisodeSession
from spatialscout_gym.servers.viewer.play import PlayGame
from spatialscout_gym.servers.viewer.server import TOKEN_HEADER, serve_directory
from spatialscout_gym.servers.viewer.site import write_site

REPO = Path(__file__).resolve().parents[1]


def _request(port: int, method: str, path: str, body: bytes | None = None, headers: dict | None = None,
             host: str | None = None) -> tuple[int, bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    conn.putrequest(method, path, skip_host=True, skip_accept_encoding=True)
    conn.putheader("Host", host or f"127.0.0.1:{port}")
    for k, v in (headers or {}).items():
        conn.putheader(k, v)
    if body is not None and "Content-Length" not in (headers or {}):
        conn.putheader("Content-Length", str(len(body)))
    conn.endheaders(body)
    r = conn.getresponse()
    out = (r.status, r.read())
    conn.close()
    return out


@pytest.fixture()
def game(tmp_path):
    with served_play_game(tmp_path) as served:
        yield served


def _calls(g: PlayGame) -> int:
    return g.episode.counters()["tool_calls"]


def test_play_needs_its_token_host_and_origin_for_a_call(game):
    g, server = game
    port, token = server.server_address[1], server.url.split("token=")[1]
    assert server.url.startswith(f"http://127.0.0.1:{port}/?token=") and len(token) >= 24
    call = json.dumps({"tool": "rotate_camera", "args": {"yaw": 15}}).encode()
    ok = {"Content-Type": "application/json", TOKEN_HEADER: token}
    # the page itself and its state load without a token
    assert _request(port, "GET", "/")[0] == 200
    assert _request(port, "GET", "/", host=f"localhost:{port}")[0] == 200
    # refused: no token, a wrong one, a cross-origin text/plain form post, another Host (DNS rebinding)
    assert _request(port, "POST", "/api/call", call, {"Content-Type": "text/plain"})[0] == 401
    wrong = token[:-1] + ("y" if token.endswith("x") else "x")     # one character off, never the token itself
    assert _request(port, "POST", "/api/call", call, {**ok, TOKEN_HEADER: wrong})[0] == 401
    assert _request(port, "POST", "/api/call", call, {"Content-Type": "text/plain", "Origin": "http://evil.example",
                                                       "Sec-Fetch-Site": "cross-site"})[0] == 403
    assert _request(port, "POST", "/api/call", call, {**ok, "Origin": "http://evil.example"})[0] == 403
    assert _request(port, "POST", "/api/call", call, {**ok, "Sec-Fetch-Site": "same-site"})[0] == 403
    assert _request(port, "POST", "/api/call", call, ok, host=f"evil.example:{port}")[0] == 403
    assert _request(port, "GET", "/api/state", host="evil.example")[0] == 403
    assert _calls(g) == 0                              # nothing above moved the camera or spent budget
    status, body = _request(port, "POST", "/api/call", call, {**ok, "Origin": f"http://127.0.0.1:{port}"})
    assert status == 200 and json.loads(body)["result"]["ok"] and _calls(g) == 1


def test_play_refuses_bodies_by_content_length_before_reading(game):
    g, server = game
    port, token = server.server_address[1], server.url.split("token=")[1]
    for length, code in (("-1", 400), ("abc", 400), ("1e3", 400), ("\u00b2", 400), ("300000000", 413),
                         ("99999999999999999999", 400)):
        # answered without reading a body: the server's own read would wait 20 s, past this timeout
        with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
            sock.sendall(f"POST /api/call HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n{TOKEN_HEADER}: {token}\r\n"
                         f"Content-Length: {length}\r\n\r\n".encode("latin-1"))
            assert sock.recv(100).startswith(f"HTTP/1.0 {code}".encode()), length
    # no Content-Length: refused, not read to the end of the connection
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(f"POST /api/call HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n{TOKEN_HEADER}: {token}\r\n\r\n".encode())
        assert sock.recv(100).startswith(b"HTTP/1.0 411")
    # a 300 MB body announced and partly sent is refused without being read
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(f"POST /api/call HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n{TOKEN_HEADER}: {token}\r\n"
                     f"Content-Length: {300 << 20}\r\n\r\n".encode() + b"x" * 65536)
        assert sock.recv(100).startswith(b"HTTP/1.0 413")
    assert _calls(g) == 0


def _answer(sock: socket.socket) -> bytes:
    """Everything the server sends until it closes the connection."""
    parts = []
    while part := sock.recv(4096):
        parts.append(part)
    return b"".join(parts)


def test_a_tls_handshake_or_binary_bytes_are_refused_at_once(game):
    """``https://`` to the plain-HTTP play page: its ClientHello has no line end, so reading a
    request line waited for the socket's 20 s timeout (past this 10 s one); now a 400 at once."""
    import ssl
    _, server = game
    port = server.server_address[1]
    for first, said in ((b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03" + bytes(32), b"not TLS"),
                        (b"\x00\xff binary", b"not an HTTP request")):
        with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
            sock.sendall(first)
            answer = _answer(sock)
            assert answer.startswith(b"HTTP/1.0 400") and said in answer, answer[:200]
    context = ssl.create_default_context()
    context.check_hostname, context.verify_mode = False, ssl.CERT_NONE
    with socket.create_connection(("127.0.0.1", port), timeout=10) as raw:
        with pytest.raises(ssl.SSLError):             # a real client: refused, not left waiting
            context.wrap_socket(raw, server_hostname="127.0.0.1")
    assert _request(port, "GET", "/")[0] == 200      # the page itself still loads


def test_a_body_shorter_than_its_content_length_is_refused_not_waited_for(game, monkeypatch):
    from spatialscout_gym.servers.viewer import server as served
    g, server = game
    port, token = server.server_address[1], server.url.split("token=")[1]
    head = (f"POST /api/call HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n{TOKEN_HEADER}: {token}\r\n"
            f"Content-Type: application/json\r\n")
    call = json.dumps({"tool": "rotate_camera", "args": {"yaw": 15}}).encode()
    # a body sent in two parts within the pause allowed is read whole
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(f"{head}Content-Length: {len(call)}\r\n\r\n".encode() + call[:10])
        time.sleep(0.05)
        sock.sendall(call[10:])
        assert sock.recv(100).startswith(b"HTTP/1.0 200")
    assert _calls(g) == 1
    monkeypatch.setattr(served, "BODY_PAUSE_S", 0.3, raising=False)   # was: 20 s, past this 10 s timeout
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:   # 10 of 100 bytes, then silence
        sock.sendall(f"{head}Content-Length: 100\r\n\r\n".encode() + call[:10])
        answer = _answer(sock)
        assert answer.startswith(b"HTTP/1.0 400") and b"shorter than its Content-Length (10 of 100" in answer
    assert _calls(g) == 1


@pytest.fixture()
def run_with_links(tmp_path) -> tuple[Path, Path]:
    """A run directory (one scripted episode, Vulkan-free renderer) whose frames/ holds a link to a
    file outside it, a link to a directory outside it and a real directory."""
    spec = small_scene(32, 32)
    run = tmp_path / "run"
    with EpisodeSession(resolution=32, image_budget=5, tool_call_budget=20, renderer=FakeRenderer(spec)) as s:
        s.load(spec)
        ep = s.new_episode()
        ep.call("rotate_camera", {"yaw": 20})
        ep.call("capture_image")
        ep.call("finish_mapping")
        s.write_run(run, type("A", (), {"name": "scripted"})())
    secret = tmp_path / "outside" / "secret.txt"
    secret.parent.mkdir()
    secret.write_text("SECRET-CONTENT")
    frame = run / "frames" / "frame_001.png"
    frame.unlink()
    frame.symlink_to(secret)
    (run / "frames" / "linked_dir").symlink_to(secret.parent, target_is_directory=True)
    (run / "frames" / "real_dir").mkdir()
    (run / "frames" / "real_dir" / "x.png").write_bytes(b"x")
    return run, secret


def _site_files(site: Path) -> list[str]:
    return sorted(p.relative_to(site).as_posix() for p in site.rglob("*"))


def test_view_never_follows_a_link_out_of_the_run(run_with_links, tmp_path):
    run, secret = run_with_links
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]))
    p = subprocess.run([sys.executable, "-m", "spatialscout_gym.cli.main", "view", str(run), "--out", str(tmp_path / "S")],
                       capture_output=True, text=True, env=env)
    assert p.returncode == 0, p.stderr
    assert "skipped" in p.stderr and "frame_001.png" in p.stderr and "linked_dir" in p.stderr
    site = tmp_path / "S"
    files = _site_files(site)
    assert "frames/frame_000.png" in files and "frames/frame_001.png" not in files
    assert not any("linked_dir" in f or "real_dir" in f for f in files)
    assert not any(p.is_symlink() for p in site.rglob("*"))
    assert not any(b"SECRET-CONTENT" in p.read_bytes() for p in site.rglob("*") if p.is_file())
    # served: the linked frame is not there, and the server answers only its own Host and Origin
    server = serve_directory(site)
    try:
        port = server.server_address[1]
        assert _request(port, "GET", "/frames/frame_000.png")[0] == 200
        status, body = _request(port, "GET", "/frames/frame_001.png")
        assert status == 404 and b"SECRET" not in body
        assert _request(port, "GET", "/index.html", host="attacker.example")[0] == 403
        assert _request(port, "GET", "/index.html", headers={"Origin": "http://attacker.example"})[0] == 403
    finally:
        server.shutdown()
    # a result.json or trace.jsonl that is a link leading out of the run is refused, naming it
    outside = tmp_path / "outside" / "result.json"
    shutil.copy(run / "result.json", outside)
    (run / "result.json").unlink()
    (run / "result.json").symlink_to(outside)
    p = subprocess.run([sys.executable, "-m", "spatialscout_gym.cli.main", "view", str(run), "--out", str(tmp_path / "S2")],
                       capture_output=True, text=True, env=env)
    assert p.returncode == 2 and "Traceback" not in p.stderr
    assert f"{run / 'result.json'}: a symbolic link leading out of the run directory" in p.stderr


def test_a_linked_run_directory_outside_an_evaluation_is_not_listed(run_with_links, tmp_path):
    run, _ = run_with_links
    ev = tmp_path / "ev"
    ev.mkdir()
    shutil.copytree(run, ev / "scene_a" / "seed_0", symlinks=True)
    (ev / "scene_b").mkdir()
    (ev / "scene_b" / "seed_0").symlink_to(run, target_is_directory=True)
    site = write_site(ev, tmp_path / "S")
    listed = json.loads((site / "data.js").read_text().split("=", 1)[1].rstrip(";\n"))["episodes"]
    assert [r["path"] for r in listed] == ["scene_a/seed_0"]


@pytest.mark.slow
@needs_browser
def test_a_page_on_another_origin_cannot_drive_play(game, tmp_path):
    """What the report tried: another page's cross-origin ``text/plain`` POST (and a fetch with the
    token guessed wrong) moves nothing and spends no budget; the play page itself, opened at the
    printed URL, makes calls."""
    pytest.importorskip("selenium.webdriver", reason="selenium is not installed (test extra)")
    g, server = game
    port = server.server_address[1]
    evil = tmp_path / "evil"
    evil.mkdir()
    (evil / "index.html").write_text(
        "<script>window.results=[];"
        f"fetch('http://127.0.0.1:{port}/api/call',{{method:'POST',mode:'no-cors',headers:{{'Content-Type':'text/plain'}},"
        "body:JSON.stringify({tool:'move_camera',args:{forward:0.5}})}).then(()=>results.push('sent'),()=>results.push('err'));"
        f"fetch('http://127.0.0.1:{port}/api/call',{{method:'POST',headers:{{'Content-Type':'application/json',"
        "'X-SpatialScout-Token':'guess'},body:JSON.stringify({tool:'capture_image'})})"
        ".then(()=>results.push('sent'),()=>results.push('err'));</script>")
    other = _attacker_server(evil)   # the attacker's own server: none of our headers
    browser_gen = headless_chrome()
    browser = next(browser_gen)
    try:
        browser.get(f"http://localhost:{other.server_address[1]}/index.html")
        from selenium.webdriver.support.ui import WebDriverWait
        WebDriverWait(browser, 20).until(lambda d: len(d.execute_script("return window.results")) == 2)
        time.sleep(0.5)
        assert _calls(g) == 0 and g.episode.counters()["images_used"] == 1
        browser.get(server.url)
        WebDriverWait(browser, 20).until(lambda d: d.execute_script("return window.SS_PLAY && SS_PLAY.state"))
        browser.find_element("id", "yawl").click()
        WebDriverWait(browser, 20).until(lambda d: d.execute_script("return SS_PLAY.calls") == 1)
        assert _calls(g) == 1
    finally:
        other.shutdown()
        browser_gen.close()


def _attacker_server(root: Path):
    import functools
    import http.server
    import threading
    server = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(root)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def test_an_mcp_client_hears_why_the_server_cannot_start(tmp_path):
    """Reusing an --out directory: the stdio client's error carries the reason, not only
    'Connection closed'."""
    pytest.importorskip("mcp", reason="the vlm extra is not installed")
    import anyio
    from mcp import Client, StdioServerParameters
    out = tmp_path / "used"
    out.mkdir()
    (out / "result.json").write_text("{}")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]))
    params = StdioServerParameters(command=sys.executable, args=[
        "-m", "spatialscout_gym.cli.main", "mcp", "--scene", "Kitchen_01", "--out", str(out)], env=env)
    messages: list[str] = []

    def collect(exc: BaseException) -> None:
        messages.append(str(exc))
        for sub in getattr(exc, "exceptions", ()):
            collect(sub)

    async def main() -> None:
        try:
            async with Client(params, mode="legacy"):
                pass
        except BaseException as exc:   # the client raises the server's error inside task groups
            collect(exc)
    anyio.run(main)
    assert any(f"run directory {out} already exists and is not empty" in m and "--overwrite" in m
               for m in messages), messages
