"""``spatialscout evaluate`` against a model service: a wrong endpoint, key or model is one line and
exit 2 within seconds, before any scene is built (a preflight ``GET /models``); a batch stops after
consecutive identical service failures; worker processes exit when ``evaluate`` is killed."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import psutil

from spatialscout_gym.cli.main import main


class _Server:
    """A local OpenAI-compatible stand-in: ``models`` answers ``GET /v1/models`` (None: 404),
    ``get_status`` its status, ``post_status`` every POST (``"hang"``: never answers)."""

    def __init__(self, *, models=None, get_status=200, post_status=400):
        self.models, self.get_status, self.post_status = models, get_status, post_status
        self.posts = 0
        outer = self

        class H(BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def _send(self, code, body):
                data = json.dumps(body).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self):
                if outer.models is None:
                    return self._send(404, {"error": {"message": "not found"}})
                self._send(outer.get_status, {"object": "list", "data": [{"id": m, "object": "model"}
                                                                       for m in outer.models]})

            def do_POST(self):
                outer.posts += 1
                self.rfile.read(int(self.headers.get("Content-Length", 0)))
                if outer.post_status == "hang":
                    time.sleep(120)
                    return
                self._send(outer.post_status, {"error": {"message": "model overloaded, try later"}})

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.httpd.daemon_threads = True
        self.httpd.block_on_close = False   # closing must not wait for a hung answer's 120 s
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

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


def _evaluate(out: Path, url: str, *extra: str, scenes: int = 4) -> list[str]:
    return ["evaluate", "--agent", "openai:m1", "--base-url", url, "--api-key", "local-key-1234",
            "--scenes", *(f"procedural:{i}" for i in range(1, scenes + 1)), "--out", str(out),
            "--resolution", "32", "--image-budget", "2", "--call-budget", "2", "--no-progress", *extra]


def test_a_wrong_base_url_is_one_line_before_any_scene(tmp_path, capsys):
    code = main(_evaluate(tmp_path / "e", f"http://127.0.0.1:{_free_port()}/v1"))
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1 and "--base-url" in err
    assert not (tmp_path / "e").exists()       # refused before any scene was built (its time: bench_answers.py)


def test_a_refused_key_and_an_unserved_model_are_named(tmp_path, capsys):
    with _Server(models=["m1"], get_status=401) as server:
        assert main(_evaluate(tmp_path / "e", server.url)) == 2
    assert "refused the API key" in capsys.readouterr().err
    with _Server(models=["qwen-vl", "llava"]) as server:
        assert main(_evaluate(tmp_path / "e", server.url)) == 2
    err = capsys.readouterr().err
    assert "does not serve model 'm1'" in err and "qwen-vl" in err and server.posts == 0


def test_a_batch_stops_after_three_identical_service_failures(tmp_path, capsys):
    with _Server(models=None, post_status=400) as server:   # no model list: the preflight passes
        code = main(_evaluate(tmp_path / "e", server.url, "--workers", "1", scenes=12))
    err = capsys.readouterr().err
    assert code == 2 and "3 consecutive episodes failed the same way" in err
    assert server.posts < 12   # episodes the pool had not started never ran


def test_stop_after_failures_zero_runs_the_whole_batch(tmp_path, capsys):
    with _Server(models=None, post_status=400) as server:
        code = main(_evaluate(tmp_path / "e", server.url, "--workers", "1", "--stop-after-failures", "0"))
    assert code == 1 and server.posts == 4 and "4 failed" in capsys.readouterr().out


def test_workers_exit_when_evaluate_is_killed(tmp_path):
    with _Server(models=None, post_status="hang") as server:
        # two requests in flight at once (no effort to settle first), so both workers are mid-episode
        cmd = [str(Path(sys.executable).with_name("spatialscout")), *_evaluate(tmp_path / "e", server.url,
                                                                               "--workers", "2", "--max-concurrency", "2",
                                                                               "--no-reasoning-effort")]
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            deadline = time.time() + 120
            while server.posts < 2 and time.time() < deadline:   # both workers are mid-episode
                time.sleep(0.5)
            assert server.posts == 2
            children = psutil.Process(proc.pid).children(recursive=True)
            assert children
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait()
            gone, alive = psutil.wait_procs(children, timeout=15)
            assert alive == [], f"{len(alive)} worker processes outlived evaluate"
        finally:
            if proc.poll() is None:
                proc.kill()
