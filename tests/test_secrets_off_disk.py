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
