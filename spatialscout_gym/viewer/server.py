"""Serve a directory on 127.0.0.1 with the standard library's :mod:`http.server`."""

from __future__ import annotations

import functools
import http.server
import threading
from pathlib import Path

__all__ = ["serve_directory"]


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args) -> None:   # the CLI prints the URL; no per-request noise
        pass


def serve_directory(root: str | Path, port: int = 0) -> http.server.ThreadingHTTPServer:
    """A started server for ``root`` on 127.0.0.1 (``port`` 0: a free one), running on a daemon
    thread; ``server.server_address[1]`` is the port, ``server.shutdown()`` stops it."""
    handler = functools.partial(_Quiet, directory=str(root))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", port), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server
