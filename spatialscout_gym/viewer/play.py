"""``spatialscout play``: a person plays one episode in the browser through the episode's own tool
entry point (:meth:`~spatialscout_gym.episode.episode.Episode.call`, docs/protocol.md section 4),
so bounds, budgets and refusal texts are the model's. Nothing private is served: no score, no ground
truth, no privileged view. When the episode ends (``finish_mapping`` or a budget) the standard run
directory is written (docs/protocol.md section 7) with agent ``human:NAME``.

Routes (127.0.0.1 only): ``GET /`` the page, ``GET /static/...`` its files, ``GET /frames/N.png`` a
captured frame, ``GET /api/state`` budgets and frame ids, ``POST /api/call`` ``{"tool", "args"}``
-> the tool's result dict plus the state.
"""

from __future__ import annotations

import http.server
import io
import json
import threading
from importlib import resources
from pathlib import Path
from typing import Any

__all__ = ["HumanAgent", "PlayGame", "serve_play"]


class HumanAgent:
    """The run directory's agent: ``human:NAME``."""

    def __init__(self, name: str) -> None:
        self.name = f"human:{name}"

    def extra_result(self) -> dict:
        return {"human": True}


class PlayGame:
    """One episode of ``session``'s loaded scene, driven by tool calls; writes ``out`` at the end."""

    def __init__(self, session: Any, out: str | Path, name: str, seed: int = 0) -> None:
        self.session, self.out, self.agent, self.seed = session, Path(out), HumanAgent(name), seed
        self.episode = session.new_episode()
        self.written: dict | None = None
        self.lock = threading.Lock()

    def state(self) -> dict:
        ep = self.episode
        return {"counters": ep.counters(), "frames": sorted(ep.frames), "scene_id": self.session.spec.scene_id,
                "agent": self.agent.name, "run_dir": str(self.out) if self.written else None}

    def call(self, tool: str, args: dict | None) -> dict:
        with self.lock:
            res = self.episode.call(tool, args if isinstance(args, dict) else {})
            if self.episode.done and self.written is None:
                self.written = self.session.write_run(self.out, self.agent, seed=self.seed)
            return {"result": res.to_dict(), "state": self.state()}

    def frame_png(self, fid: int) -> bytes | None:
        from PIL import Image
        frame = self.episode.frames.get(fid)
        if frame is None:
            return None
        buf = io.BytesIO()
        Image.fromarray(frame.image).save(buf, format="PNG")
        return buf.getvalue()


_STATIC = {"play.js": "text/javascript", "common.js": "text/javascript", "style.css": "text/css"}


def _handler(game: PlayGame):
    class Handler(http.server.BaseHTTPRequestHandler):
        def log_message(self, *args) -> None:
            pass

        def _send(self, body: bytes, ctype: str, code: int = 200) -> None:
            self.send_response(code)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Cache-Control", "no-store")
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self) -> None:
            path = self.path.split("?")[0]
            static = resources.files("spatialscout_gym.viewer").joinpath("static")
            if path in ("/", "/index.html"):
                return self._send(static.joinpath("play.html").read_bytes(), "text/html; charset=utf-8")
            name = path.removeprefix("/static/")
            if name in _STATIC:
                return self._send(static.joinpath(name).read_bytes(), _STATIC[name])
            if path == "/api/state":
                return self._send(json.dumps(game.state()).encode(), "application/json")
            if path.startswith("/frames/") and path.endswith(".png"):
                try:
                    png = game.frame_png(int(path[len("/frames/"):-4]))
                except ValueError:
                    png = None
                if png is not None:
                    return self._send(png, "image/png")
            self._send(b"not found", "text/plain", 404)

        def do_POST(self) -> None:
            if self.path != "/api/call":
                return self._send(b"not found", "text/plain", 404)
            try:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
                tool, args = str(body.get("tool", "")), body.get("args") or {}
            except (ValueError, AttributeError):
                return self._send(b'{"error": "the body must be JSON {\\"tool\\", \\"args\\"}"}', "application/json", 400)
            self._send(json.dumps(game.call(tool, args)).encode(), "application/json")

    return Handler


def serve_play(game: PlayGame, port: int = 0) -> http.server.ThreadingHTTPServer:
    """A started server for ``game`` on 127.0.0.1 (daemon thread); ``server_address[1]`` is the port."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", port), _handler(game))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server
