"""``spatialscout play``: a person plays one episode in the browser through the episode's own tool
entry point (:meth:`~spatialscout_gym.episode.episode.Episode.call`, docs/protocol.md section 4),
so bounds, budgets and refusal texts are the model's. Nothing private is served: no score, no ground
truth, no privileged view. When the episode ends (``finish_mapping`` or a budget) the standard run
directory is written (docs/protocol.md section 7) with agent ``human:NAME``.

Routes (127.0.0.1 only): ``GET /`` the page, ``GET /static/...`` its files, ``GET /frames/N.png`` a
captured frame, ``GET /api/state`` budgets and frame ids (and the score once the run is written),
``POST /api/call`` ``{"tool", "args"}`` -> the tool's result dict plus the state. Every request
passes :class:`~spatialscout_gym.servers.viewer.server.GuardedHandler`'s Host and Origin checks; a call
needs the per-run token (the ``token`` query parameter of the URL the command prints, sent back
by the page in the ``X-SpatialScout-Token`` header) and a body of at most 64 kB.
"""

from __future__ import annotations

import io
import json
import secrets
import threading
from importlib import resources
from pathlib import Path
from typing import Any

from spatialscout_gym.conversation.messages import parse_arguments
from spatialscout_gym.core.records import RunRecord, parse_run_record
from spatialscout_gym.episode.tools import ToolResult
from spatialscout_gym.servers.viewer.server import BodyRefused, GuardedHandler, LocalServer, start_server

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
        self.written: RunRecord | None = None
        """The run record written when the episode ended (None while it runs)."""
        self.lock = threading.Lock()

    def state(self) -> dict:
        ep = self.episode
        return {"counters": ep.counters(), "frames": sorted(ep.frames), "scene_id": self.session.spec.scene_id,
                "agent": self.agent.name, "run_dir": str(self.out) if self.written else None,
                "score": _score_of(self.written)}

    def call(self, tool: str, args: object) -> dict:
        """Run one call; ``args`` that are not an object (a list, a number) are refused without a
        step and not counted, with the text the model's wrapper sends
        (:func:`~spatialscout_gym.conversation.messages.parse_arguments`)."""
        with self.lock:
            parsed, reason = parse_arguments(args)
            if reason is not None:
                return {"result": ToolResult(tool, False, error=f"{tool}: {reason}").to_dict(), "state": self.state()}
            res = self.episode.call(tool, parsed)
            if self.episode.done and self.written is None:
                self.written = parse_run_record(self.session.write_run(self.out, self.agent, seed=self.seed))
            return {"result": res.to_dict(), "state": self.state()}

    def frame_png(self, fid: int) -> bytes | None:
        from PIL import Image
        frame = self.episode.frames.get(fid)
        if frame is None:
            return None
        buf = io.BytesIO()
        Image.fromarray(frame.image).save(buf, format="PNG")
        return buf.getvalue()


def _score_of(r: RunRecord | None) -> dict | None:
    """The headline figures of a written run, from its record (None while the episode runs: no
    score before it ends)."""
    if r is None:
        return None
    return {"all_mean_iou": None if r.all is None else r.all.mean_iou,
            "submitted_mean_iou": None if r.submitted is None else r.submitted.mean_iou,
            "coverage": r.coverage, "num_submitted": r.num_submitted, "num_targets": r.num_targets,
            "full_scene_loss_m": r.full_scene_loss_m}


MAX_CALL_BYTES = 64 * 1024
"""The largest ``POST /api/call`` body read."""

_STATIC = {"play.js": "text/javascript", "common.js": "text/javascript", "style.css": "text/css"}


def _handler(game: PlayGame):
    class Handler(GuardedHandler):
        def _send(self, body: bytes, ctype: str, code: int = 200) -> None:
            self.send_response(code)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Cache-Control", "no-store")
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self) -> None:
            if not self.guard():
                return
            path = self.path.split("?")[0]
            static = resources.files("spatialscout_gym.servers.viewer").joinpath("static")
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
            if not self.guard(changes_state=True):
                return
            if self.path != "/api/call":
                return self._send(b"not found", "text/plain", 404)
            try:
                body = json.loads(self.read_body(MAX_CALL_BYTES) or b"{}")
                tool, args = str(body.get("tool", "")), body.get("args")
            except BodyRefused:
                return
            except (ValueError, AttributeError, RecursionError):
                return self._send(b'{"error": "the body must be JSON {\\"tool\\", \\"args\\"}"}', "application/json", 400)
            self._send(json.dumps(game.call(tool, args)).encode(), "application/json")

    return Handler


def serve_play(game: PlayGame, port: int = 0, token: str | None = None) -> LocalServer:
    """A started server for ``game`` on 127.0.0.1 (daemon thread); ``server_address[1]`` is the port
    and ``server.url`` the page's URL with the per-run token (``token``, default a random one)."""
    token = token or secrets.token_urlsafe(24)
    server = start_server(_handler(game), port, token=token)
    server.url = f"http://127.0.0.1:{server.server_address[1]}/?token={token}"
    return server
