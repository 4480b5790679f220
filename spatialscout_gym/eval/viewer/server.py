"""Serves or writes the viewer: the static page in ``static/`` plus ``episode.json`` (from
:mod:`.data`) and the run's ``frames/``. Python's standard ``http.server`` on 127.0.0.1 only."""

from __future__ import annotations

import functools
import json
import shutil
import threading
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from spatialscout_gym.eval.viewer.data import episode_document

__all__ = ["STATIC_DIR", "serve", "write_site"]

STATIC_DIR = Path(__file__).resolve().parent / "static"


def write_site(run_dir: str | Path, out: str | Path) -> Path:
    """Write the viewer of ``run_dir`` as static files under ``out`` (index.html opens it)."""
    run, site = Path(run_dir), Path(out)
    doc = episode_document(run)
    site.mkdir(parents=True, exist_ok=True)
    for f in STATIC_DIR.iterdir():
        shutil.copy2(f, site / f.name)
    (site / "episode.json").write_text(json.dumps(doc), encoding="utf-8")
    # a script file too, so index.html works when opened from disk (file:// blocks fetch)
    (site / "episode.js").write_text("window.EPISODE = " + json.dumps(doc) + ";\n", encoding="utf-8")
    if (site / "frames").exists():
        shutil.rmtree(site / "frames")
    if (run / "frames").is_dir():
        shutil.copytree(run / "frames", site / "frames")
    return site


class _Quiet(SimpleHTTPRequestHandler):
    def log_message(self, *args) -> None:  # the CLI prints the URL; no per-request lines
        pass


def serve(site: str | Path, port: int = 0) -> tuple[ThreadingHTTPServer, threading.Thread, str]:
    """Serve ``site`` on 127.0.0.1:``port`` (0: a free port) from a daemon thread; returns the
    server, its thread and the page URL."""
    handler = functools.partial(_Quiet, directory=str(site))
    httpd = ThreadingHTTPServer(("127.0.0.1", port), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    return httpd, thread, f"http://127.0.0.1:{httpd.server_address[1]}/index.html"
