"""Credentials in ``--base-url`` (``http://user:KEY@host/v1``) never leak: a server that echoes
the ``Authorization: Basic base64(user:KEY)`` header, the decoded ``user:KEY`` or the key in an
error body leaves none of them in ``result.json`` or on stdout, nor the endpoint's host and port
in the run's files; and ``run`` checks the endpoint first (a wrong port fails in about a second,
naming the flag to fix and printing neither the endpoint nor its credentials, before any scene is built)."""

from __future__ import annotations

import base64
import json
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from fakes import small_scene
from spatialscout_gym.cli.main import main

USER, KEY = "alice", "s3cretKEY42"
BASIC = base64.b64encode(f"{USER}:{KEY}".encode()).decode()


class _Echo:
    """``GET`` 404 (no model list: the preflight passes), every ``POST`` a 400 whose body echoes
    the Authorization header, its decoded form and the password."""

    def __init__(self) -> None:
        self.seen: list[str] = []
        outer = self

        class H(BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def _send(self, code: int, body: dict) -> None:
                data = json.dumps(body).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self):
                self._send(404, {"error": {"message": "no model list"}})

            def do_POST(self):
                self.rfile.read(int(self.headers.get("Content-Length", 0)))
                auth = self.headers.get("Authorization", "")
                outer.seen.append(auth)
                token = auth.split(" ", 1)[-1]
                decoded = base64.b64decode(token).decode() if auth.startswith("Basic ") else token
                self._send(400, {"error": {"message": f"bad credentials: you sent {auth!r} ({token}); "
                                                      f"decoded {decoded}; password {decoded.partition(':')[2]}"}})

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.httpd.daemon_threads = True
        self.port = self.httpd.server_address[1]

    def __enter__(self):
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc):
        self.httpd.shutdown()
        self.httpd.server_close()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _leaks(text: str, port: int) -> list[str]:
    return [s for s in (KEY, f"{USER}:{KEY}", BASIC, f"127.0.0.1:{port}") if s in text]


@pytest.mark.render
def test_an_echoed_basic_header_is_redacted_in_result_json_and_stdout(tmp_path, capsys):
    spec = tmp_path / "scene.json"
    spec.write_text(small_scene(32, 32).to_json())
    with _Echo() as server:
        code = main(["run", "--agent", "openai:m", "--base-url", f"http://{USER}:{KEY}@127.0.0.1:{server.port}/v1",
                     "--api-key", "placeholder", "--scene", str(spec), "--out", str(tmp_path / "run"),
                     "--resolution", "32", "--image-budget", "2", "--call-budget", "2"])
    assert server.seen and server.seen[0] == f"Basic {BASIC}"   # the client did send the credentials
    out = capsys.readouterr()
    assert code == 1 and "episode FAILED" in out.out and "bad credentials" in out.out
    assert _leaks(out.out + out.err, server.port) == []
    for f in (tmp_path / "run").rglob("*"):
        if f.is_file() and f.suffix in (".json", ".jsonl", ".txt"):
            assert _leaks(f.read_text(), server.port) == [], f


def test_run_checks_the_endpoint_first_and_prints_neither_the_endpoint_nor_credentials(tmp_path, capsys):
    port = _free_port()
    code = main(["run", "--agent", "openai:m1", "--base-url", f"http://{USER}:{KEY}@127.0.0.1:{port}/v1",
                 "--api-key", "placeholder", "--scene", "procedural:1", "--out", str(tmp_path / "run")])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1 and "--base-url" in err
    # the endpoint as typed, less its user info: which server did not answer (docs/models.md)
    assert f"cannot reach http://127.0.0.1:{port}/v1 " in err and KEY not in err and USER not in err
    assert not (tmp_path / "run").exists()       # refused before any scene was built


def test_evaluate_prints_neither_the_endpoint_nor_credentials(tmp_path, capsys):
    port = _free_port()
    code = main(["evaluate", "--agent", "openai:m1", "--base-url", f"http://{USER}:{KEY}@127.0.0.1:{port}/v1",
                 "--api-key", "placeholder", "--scenes", "procedural:1", "--out", str(tmp_path / "e"),
                 "--no-progress"])
    err = capsys.readouterr().err
    assert code == 2 and f"cannot reach http://127.0.0.1:{port}/v1 " in err and KEY not in err and USER not in err


MALFORMED = ["http://u:s3cr3t/part@127.0.0.1:1/v1", "http://127.0.0.1:notaport/v1", "http://[::1/v1",
             "http://u:s3cr3t@127.0.0.1:99999/v1"]
QUERY_KEY = "qk-9f8e7d6c5b4a"


def _cli(command: str, agent: str, url: str, tmp_path) -> list[str]:
    out = ["--out", str(tmp_path / command)]
    where = ["--scene", "procedural:1"] if command == "run" else ["--scenes", "procedural:1", "--no-progress"]
    return [command, "--agent", agent, "--base-url", url, "--api-key", "placeholder", *where, *out]


@pytest.mark.parametrize("url", MALFORMED)
@pytest.mark.parametrize("command,agent", [("run", "openai:m1"), ("evaluate", "anthropic:m1"),
                                           ("run", "openai-responses:m1")])
def test_a_malformed_base_url_is_one_line_without_the_password(tmp_path, capsys, command, agent, url):
    code = main(_cli(command, agent, url, tmp_path))
    out = capsys.readouterr()
    lines = (out.out + out.err).strip().splitlines()
    assert code == 2 and len(lines) == 1 and "--base-url is not a usable URL" in lines[0], lines
    assert "s3cr3t" not in lines[0] and "Traceback" not in lines[0]


@pytest.mark.parametrize("command,agent", [("run", "openai:m1"), ("evaluate", "anthropic:m1"),
                                           ("evaluate", "openai-responses:m1")])
def test_a_key_in_the_query_string_is_never_printed_in_the_cannot_reach_line(tmp_path, capsys, command, agent):
    port = _free_port()
    url = f"http://127.0.0.1:{port}/v1?api-version=2024&key={QUERY_KEY}"
    code = main(_cli(command, agent, url, tmp_path))
    out = capsys.readouterr()
    text = out.out + out.err
    assert code == 2 and "cannot reach" in text and QUERY_KEY not in text
    assert f"cannot reach http://127.0.0.1:{port}/v1 " in text and "api-version" not in text   # no query


def test_display_url_and_redact_share_one_rule_for_every_form():
    from spatialscout_gym.core.redact import display_url, redact, register_endpoint, url_problem
    url = f"https://{USER}:{KEY}@example.test:8443/v1?api-version=2024&key={QUERY_KEY}&sig=a%2Bb%3D"
    register_endpoint(url)
    assert display_url(url) == "https://example.test:8443/v1?api-version=2024&key=[redacted]&sig=[redacted]"
    echoed = f"404 for {url}; key={QUERY_KEY} sig a+b= user {USER}:{KEY}"
    assert not any(s in redact(echoed) for s in (QUERY_KEY, KEY, "a+b=", "a%2Bb%3D"))
    assert all(url_problem(u) is not None for u in MALFORMED) and url_problem(url) is None
    for u in MALFORMED:
        register_endpoint(u)   # never raises, whatever the text
        assert "s3cr3t" not in display_url(u)
