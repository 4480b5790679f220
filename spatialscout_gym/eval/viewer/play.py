"""``spatialscout play``: a person plays one episode in the browser with the ten tools, bounds and
budgets a model gets (docs/protocol.md sections 4-5). Every action is one
:meth:`~spatialscout_gym.episode.episode.Episode.call` on an
:class:`~spatialscout_gym.envs.session.EpisodeSession` episode; refusals come back with the
episode's own text; no score, ground truth or privileged view is sent to the page. When the episode
ends the session writes a standard run directory (docs/protocol.md section 7) with agent
``human:NAME``.
"""

from __future__ import annotations

import io
import json
import threading
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from spatialscout_gym.core.spec import SceneSpec
from spatialscout_gym.envs.session import EpisodeSession
from spatialscout_gym.episode.tools import to_jsonable

__all__ = ["HumanAgent", "PlayGame", "serve_play"]

STATIC_DIR = Path(__file__).resolve().parent / "static"


class HumanAgent:
    """The agent record of a person: ``name`` is ``human:NAME``."""

    def __init__(self, name: str) -> None:
        self.name = f"human:{name}"


class PlayGame:
    """One human episode: :meth:`call` runs a tool; the run directory is written when it ends."""

    def __init__(self, spec: SceneSpec, out_dir: str | Path, name: str, *, resolution: int = 512,
                 image_budget: int = 100, tool_call_budget: int | None = 100) -> None:
        self.out_dir = Path(out_dir)
        self.agent = HumanAgent(name)
        self.session = EpisodeSession(resolution=resolution, image_budget=image_budget,
                                      tool_call_budget=tool_call_budget)
        self.session.load(spec)
        self.episode = self.session.new_episode()
        self.result: dict | None = None
        self.lock = threading.Lock()

    def state(self) -> dict:
        ep = self.episode
        return {"frames": sorted(ep.frames), "images_left": ep.images_left, "calls_left": ep.calls_left,
                "pose": ep.pose_task(), "done": ep.end_reason is not None, "end_reason": ep.end_reason,
                "written": str(self.out_dir) if self.result is not None else None}

    def call(self, tool: str, args: dict | None) -> dict:
        """Run ``tool`` with ``args`` on the episode; returns the tool result and the new state."""
        with self.lock:
            res = to_jsonable(self.episode.call(tool, args or {}).to_dict())
            if self.episode.end_reason is not None and self.result is None:
                self.result = self.session.write_run(self.out_dir, self.agent, seed=0)
            return {"result": res, "state": self.state()}

    def frame_png(self, frame_id: int) -> bytes:
        from PIL import Image
        buf = io.BytesIO()
        Image.fromarray(self.episode.frames[frame_id].image).save(buf, format="PNG")
        return buf.getvalue()


class _Handler(SimpleHTTPRequestHandler):
    game: PlayGame

    def log_message(self, *args) -> None:
        pass

    def _json(self, obj: Any, code: int = 200) -> None:
        body = json.dumps(obj).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        if self.path == "/" or self.path.startswith("/?"):
            self.path = "/play.html"
        if self.path == "/api/state":
            return self._json(self.game.state())
        if self.path.startswith("/api/frame/"):
            try:
                png = self.game.frame_png(int(self.path.rsplit("/", 1)[1].split(".")[0]))
            except (ValueError, KeyError):
                return self._json({"error": "no such frame"}, 404)
            self.send_response(200)
            self.send_header("Content-Type", "image/png")
            self.send_header("Content-Length", str(len(png)))
            self.end_headers()
            self.wfile.write(png)
            return None
        return super().do_GET()

    def do_POST(self) -> None:
        if self.path != "/api/call":
            return self._json({"error": "unknown endpoint"}, 404)
        try:
            req = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
            tool, args = str(req["tool"]), req.get("args") or {}
        except (ValueError, KeyError, TypeError):
            return self._json({"error": "expected {\"tool\": NAME, \"args\": {...}}"}, 400)
        return self._json(self.game.call(tool, args))


def serve_play(game: PlayGame, port: int = 0) -> tuple[ThreadingHTTPServer, threading.Thread, str]:
    """Serve the play page of ``game`` on 127.0.0.1:``port`` from a daemon thread; returns the
    server, its thread and the URL."""
    handler = type("PlayHandler", (_Handler,), {"game": game})
    httpd = ThreadingHTTPServer(("127.0.0.1", port), partial(handler, directory=str(STATIC_DIR)))
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    return httpd, thread, f"http://127.0.0.1:{httpd.server_address[1]}/"
