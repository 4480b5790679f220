"""A model server whose errors echo the API key and its own URL leaves neither in
any file under the run directory nor on stdout/stderr (real ``openai``/``anthropic`` clients, a fake
server on 127.0.0.1)."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from spatialscout_gym.cli.main import main
from spatialscout_gym.core.redact import redact

KEY = "local-secret-Zq8vX3pL0w"   # not shaped like sk-...: only the registered value can catch it


class EchoingServer:
    """Answers every request with an error whose body repeats the Authorization header, the
    x-api-key header, the bare key and the URL it was called at. Request 0 gets a 500 (retried),
    later ones a 401 (not retried)."""

    def __init__(self) -> None:
        outer = self
        self.count = 0

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def do_POST(self):
                self.rfile.read(int(self.headers.get("Content-Length", 0)))
                auth = self.headers.get("Authorization") or ""
                xkey = self.headers.get("x-api-key") or ""
                url = f"http://127.0.0.1:{outer.port}{self.path}"
                msg = (f"denied; you sent Authorization: {auth} and x-api-key: {xkey}; key {xkey or auth[7:]} "
                       f"is not valid at {url}")
                code = 500 if outer.count == 0 else 401
                outer.count += 1
                data = json.dumps({"error": {"message": msg, "type": "auth_error"}}).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.httpd.server_address[1]
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.httpd.shutdown()
        self.httpd.server_close()


def _assert_clean(out_dir, text: str, port: int) -> None:
    needles = [KEY, f"127.0.0.1:{port}"]
    files = [p for p in out_dir.rglob("*") if p.is_file() and p.suffix in (".json", ".jsonl", ".md", ".txt")]
    assert files, "nothing was written"
    for p in files:
        body = p.read_text(errors="replace")
        for n in needles:
            assert n not in body, f"{n!r} written to {p}"
    for n in needles:
        assert n not in text, f"{n!r} printed"


@pytest.mark.parametrize("fmt,suffix", [("openai", "/v1"), ("anthropic", "")])
def test_evaluate_with_an_echoing_server_keeps_key_and_endpoint_off_disk(tmp_path, capfd, monkeypatch, fmt, suffix):
    import spatialscout_gym.conversation.providers as providers
    monkeypatch.setattr(providers.time, "sleep", lambda s: None)
    out = tmp_path / "ev"
    with EchoingServer() as server:
        rc = main(["evaluate", "--agent", f"{fmt}:echo", "--base-url", f"http://127.0.0.1:{server.port}{suffix}",
                   "--api-key", KEY, "--scenes", "procedural:11", "--out", str(out), "--resolution", "32",
                   "--image-budget", "3", "--call-budget", "3", "--no-progress"])
        assert server.count >= 2   # the error really came back (500 then 401)
    captured = capfd.readouterr()
    assert rc == 1
    result = json.loads(next(out.rglob("result.json")).read_text())
    assert result["status"] == "failed" and "[redacted]" in result["error"]
    assert result["model"]["attempt_failures"] and "base_url" not in result["model"]
    _assert_clean(out, captured.out + captured.err, server.port)


def test_run_with_an_echoing_server_keeps_key_and_endpoint_off_disk(tmp_path, capfd, monkeypatch):
    import spatialscout_gym.conversation.providers as providers
    monkeypatch.setattr(providers.time, "sleep", lambda s: None)
    out = tmp_path / "run"
    with EchoingServer() as server:
        main(["run", "--agent", "openai:echo", "--base-url", f"http://127.0.0.1:{server.port}/v1",
              "--api-key", KEY, "--scene", "procedural:11", "--out", str(out), "--resolution", "32",
              "--image-budget", "3", "--call-budget", "3"])
    captured = capfd.readouterr()
    _assert_clean(out, captured.out + captured.err, server.port)


def test_redact_patterns_without_registration():
    text = ('Authorization: Bearer abc123XYZ, "x-api-key": "k-999-zzz", api_key=foo.bar '
            'and sk-proj-ABCDEFGH12345678 here')
    out = redact(text)
    for s in ("abc123XYZ", "k-999-zzz", "foo.bar", "sk-proj-ABCDEFGH12345678"):
        assert s not in out
    assert out.count("[redacted]") == 4


def test_a_percent_encoded_key_is_redacted_too():
    from urllib.parse import quote, quote_plus
    from spatialscout_gym.core.redact import register_secret
    key = "k3y/with+special&chars=?# x"
    register_secret(key)
    text = f"echo: {quote(key, safe='')} | {quote_plus(key)} | {quote(key)} | {key}"
    out = redact(text)
    assert out.count("[redacted]") == 4 and "special" not in out


def test_the_cli_own_words_are_not_redacted():
    line = "the bearer token from $SPATIALSCOUT_MCP_TOKEN must be at least 16 characters"
    assert redact(line) == line
    assert redact("Bearer sometokenvalue1") == "Bearer [redacted]"
    assert redact("bearer abcdefghijklmnopqrstuvwxyz") == "Bearer [redacted]"


USER, PASSWORD = "scout", "Pw-7c1d9e2f4a6b8"   # 16 characters; the probe found 15 of them on disk


class ReplyServer:
    """A chat-completions server answering HTTP 200. ``"echo"``: a model reply whose text and tool
    call arguments repeat every request header and the URL it was called at (a proxy or a model
    that echoes its input). ``"html"``: a login page (text/html) that names the password."""

    def __init__(self, kind: str) -> None:
        outer = self
        self.posts = 0

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def do_POST(self):
                self.rfile.read(int(self.headers.get("Content-Length", 0)))
                outer.posts += 1
                echo = f"{dict(self.headers)} at http://127.0.0.1:{outer.port}{self.path}"
                if kind == "html":
                    data = f"<html><body>Sign in again: password {PASSWORD} expired</body></html>".encode()
                    ctype = "text/html"
                else:
                    call = {"id": f"c{outer.posts}", "type": "function", "function": {
                        "name": "rotate_camera", "arguments": json.dumps({"yaw": 10, "note": echo})}}
                    data = json.dumps({"id": "x", "object": "chat.completion", "created": 0, "model": "echo",
                                       "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
                                           "role": "assistant", "content": echo, "tool_calls": [call]}}],
                                       "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}).encode()
                    ctype = "application/json"
                self.send_response(200)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.httpd.server_address[1]
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.httpd.shutdown()
        self.httpd.server_close()


def _run_against(server: ReplyServer, out, extra: list[str]) -> int:
    return main(["run", "--agent", "openai:echo", "--base-url", f"http://{USER}:{PASSWORD}@127.0.0.1:{server.port}/v1",
                 "--api-key", KEY, "--scene", "procedural:11", "--out", str(out), "--resolution", "32",
                 "--image-budget", "3", *extra])


def _leaked(out, text: str, port: int) -> list[str]:
    """Which secrets (the key, the password, 8 characters of it, the Basic credential, the
    endpoint) are in a file under ``out`` or in ``text``."""
    import base64
    basic = base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode()
    needles = [KEY, PASSWORD, PASSWORD[:8], basic, f"127.0.0.1:{port}"]
    bodies = [p.read_text(errors="replace") for p in out.rglob("*") if p.is_file()
              and p.suffix in (".json", ".jsonl", ".md", ".txt")] + [text]
    return [n for n in needles if any(n in b for b in bodies)]


def test_a_reply_that_echoes_the_request_is_redacted_in_the_trace(tmp_path, capfd):
    out = tmp_path / "run"
    with ReplyServer("echo") as server:
        _run_against(server, out, ["--call-budget", "2"])
        assert server.posts == 2
    captured = capfd.readouterr()
    trace = (out / "trace.jsonl").read_text()
    assert "rotate_camera" in trace and "[redacted]" in trace and "[endpoint]" in trace
    assert _leaked(out, captured.out + captured.err, server.port) == []


def test_an_html_page_with_status_200_is_a_failed_attempt_not_a_scored_reply(tmp_path, capfd, monkeypatch):
    import spatialscout_gym.conversation.providers as providers
    monkeypatch.setattr(providers.time, "sleep", lambda s: None)
    out = tmp_path / "run"
    with ReplyServer("html") as server:
        rc = _run_against(server, out, ["--call-budget", "3"])
        assert server.posts >= 2   # retried like a server error
    captured = capfd.readouterr()
    result = json.loads((out / "result.json").read_text())
    assert rc == 1 and result["status"] == "failed" and "not JSON" in result["error"]
    assert _leaked(out, captured.out + captured.err, server.port) == []


def test_the_request_cache_keeps_no_secret_and_replays_the_redacted_reply(tmp_path, capfd):
    """A reply that echoes the request is stored redacted in ``--request-cache DIR``; a rerun with the
    endpoint gone is answered from it with the reply the live run recorded."""
    cache, first, second = tmp_path / "cache", tmp_path / "first", tmp_path / "second"
    with ReplyServer("echo") as server:
        port = server.port
        _run_against(server, first, ["--call-budget", "2", "--request-cache", str(cache)])
        assert server.posts == 2
    entries = list(cache.glob("*.json"))
    assert len(entries) == 2 and any("[redacted]" in e.read_text() for e in entries)
    _run_against(server, second, ["--call-budget", "2", "--request-cache", str(cache), "--offline"])   # nothing listens now
    captured = capfd.readouterr()
    assert _leaked(cache, captured.out + captured.err, port) == [] and _leaked(first, "", port) == []

    def replies(run):
        return [(e.get("text"), e.get("tool_calls")) for e in map(json.loads, (run / "trace.jsonl").read_text().splitlines())
                if e.get("event") == "model_response"]
    assert len(replies(first)) == 2 and replies(second) == replies(first)
    assert all(c["cached"] for c in json.loads((second / "request_cache.json").read_text())["calls"])


@pytest.mark.parametrize("text", ["'Authorization': 'Bearer local-secret-Zq8vX3pL0w'", "x-api-key: abc123def",
                                  '{"api_key": "sk-abcdefghijkl"}', "Authorization: Basic c2NvdXQ6cHc=",
                                  "access_token=tok_9876543210&x=1", "Bearer abcdefghijklmnopqrstuvwxyz"])
def test_redacting_twice_gives_what_redacting_once_gave(text):
    """The trace and the request cache redact one reply at two places (the cache's copy is redacted
    again when replayed), so :func:`redact` must be idempotent."""
    once = redact(text)
    assert once != text and redact(once) == once
