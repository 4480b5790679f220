"""The viewer's and the play page's HTTP servers (standard library :mod:`http.server`, 127.0.0.1).

Both refuse what a local web server must not take from other pages (the same rules as the MCP
server's streamable HTTP transport; docs/serving.md): :class:`GuardedHandler` answers
403 to a request whose ``Host`` is not ``127.0.0.1:PORT`` or ``localhost:PORT`` (DNS rebinding) or
whose ``Origin`` names another page (and a state-changing one whose ``Sec-Fetch-Site`` says another
site sent it); with a token, every
state-changing request must carry it in the ``X-SpatialScout-Token`` header (401 otherwise); and a
request body is refused by its ``Content-Length`` before a byte is read (411 when absent, 400 when
not a non-negative integer, 413 above the limit), and a body that pauses :data:`BODY_PAUSE_S`
short of it is refused (400). A connection that opens with a TLS handshake or other bytes no
request line starts with is refused at once (400). A socket that stops sending times out.

A request must carry exactly one ``Host`` header (400 otherwise) and a path without a NUL byte
(``/%00/...``: 400). Every response carries the headers a static site should send
(:data:`SECURITY_HEADERS`: no MIME sniffing, a Content-Security-Policy that lets the pages load
only their own scripts, styles, images and API, no framing, no referrer). The static site
server lists no directory and serves only regular files with one link (no symbolic or hard link:
a hard link made inside the site could name any file of the machine). A client that hangs up
early is no error: nothing is printed.

Load: a fixed pool of :data:`WORKERS` threads handles connections, with at most :data:`WAITING`
accepted connections waiting for one; a connection beyond that is answered at once with ``503
Service Unavailable`` and ``Retry-After: 1`` (docs/serving.md), so a burst of requests gets answers,
never a silent time-out, and the server's threads stay bounded.
"""

from __future__ import annotations

import functools
import hmac
import http.server
import io
import os
import queue
import socket
import stat
import sys
import threading
from pathlib import Path
from typing import Any, cast
from urllib.parse import unquote, urlsplit

__all__ = ["GuardedHandler", "LocalServer", "serve_directory", "start_server", "TOKEN_HEADER", "MAX_BODY_BYTES",
           "BODY_PAUSE_S", "SECURITY_HEADERS", "WORKERS", "WAITING"]

TOKEN_HEADER = "X-SpatialScout-Token"
"""The request header that carries a server's per-run token."""
MAX_BODY_BYTES = 1 << 20
"""The largest request body read (a tool call's JSON is a few kB)."""
BODY_PAUSE_S = 2.0
"""Seconds a request body may pause before the request is refused as shorter than its
``Content-Length`` (a page on this machine sends its few kB at once): a short body does not hold a
worker for the socket's whole :attr:`GuardedHandler.timeout`."""


SECURITY_HEADERS: dict[str, str] = {
    "X-Content-Type-Options": "nosniff",
    # the pages load their own scripts, style sheets, frames and API only; style="" attributes
    # (legend swatches, layout) are the one inline thing they use
    "Content-Security-Policy": "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
                               "img-src 'self'; connect-src 'self'; base-uri 'none'; form-action 'none'; "
                               "frame-ancestors 'none'",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "no-referrer",
}
"""Headers of every response of both servers."""

WORKERS = 16
"""Threads that handle connections, per server."""
WAITING = 64
"""Accepted connections that may wait for a worker; one more is answered 503 at once."""


class LocalServer(http.server.ThreadingHTTPServer):
    """A server with a bounded pool of handler threads (``workers``; at most ``waiting`` accepted
    connections queued for them, 503 beyond) that says nothing when a client hangs up early (a
    closed tab, a cancelled image load): those are not errors of the server."""

    daemon_threads = True
    request_queue_size = 128    # the listen backlog: a burst is accepted, not dropped by the kernel
    url: str | None = None
    """The page's URL with its per-run token, for a server that has one (``play``)."""

    def __init__(self, address: tuple[str, int], handler: Any, *, workers: int = WORKERS,
                 waiting: int = WAITING) -> None:
        if workers < 1 or waiting < 1:
            raise ValueError(f"a server needs at least 1 worker and 1 waiting place, got {workers} and {waiting}")
        super().__init__(address, handler)
        self._waiting: queue.Queue = queue.Queue(maxsize=waiting)
        self._workers = [threading.Thread(target=self._work, daemon=True, name=f"spatialscout-http-{i}")
                         for i in range(workers)]
        for t in self._workers:
            t.start()

    def process_request(self, request: Any, client_address: Any) -> None:
        try:
            self._waiting.put_nowait((request, client_address))
        except queue.Full:
            self._busy(request)

    def _work(self) -> None:
        while True:
            request, client_address = self._waiting.get()
            if request is None:
                return
            try:
                self.finish_request(request, client_address)
            except Exception:
                self.handle_error(request, client_address)
            finally:
                self.shutdown_request(request)

    def _busy(self, request: socket.socket) -> None:
        """Answer 503 without a worker: the request head that has arrived is read (so that closing
        sends no reset that could drop the answer), the response written, the socket closed."""
        body = b"server busy: too many requests at once; retry in a second\n"
        head = ["HTTP/1.1 503 Service Unavailable", "Content-Type: text/plain; charset=utf-8",
                f"Content-Length: {len(body)}", "Retry-After: 1", "Connection: close",
                *(f"{k}: {v}" for k, v in SECURITY_HEADERS.items())]
        try:
            request.settimeout(0.5)
            try:
                request.recv(65536)
            except OSError:
                pass
            request.sendall(("\r\n".join(head) + "\r\n\r\n").encode("ascii") + body)
        except OSError:
            pass
        finally:
            self.shutdown_request(request)

    def shutdown(self) -> None:
        super().shutdown()
        self._stop_workers()

    def server_close(self) -> None:
        super().server_close()
        self._stop_workers()

    def _stop_workers(self) -> None:
        for t in self._workers:     # a worker takes one sentinel and ends
            if t.is_alive():
                try:
                    self._waiting.put((None, None), timeout=1)
                except queue.Full:
                    break
        self._workers = []

    def handle_error(self, request: socket.socket | tuple[bytes, socket.socket], client_address: Any) -> None:
        if isinstance(sys.exc_info()[1], (ConnectionError, TimeoutError)):
            return
        super().handle_error(request, client_address)


class BodyRefused(Exception):
    """A request body refused by its ``Content-Length``; the response is already sent."""


class GuardedHandler(http.server.BaseHTTPRequestHandler):
    """Host, Origin, token and body-size checks for a handler of a server on 127.0.0.1.

    Subclasses call :meth:`guard` first in every ``do_*`` (it answers and returns False when the
    request is refused) and read a body only through :meth:`read_body`. ``token`` is set on the
    class by :func:`start_server`; None means no token is asked for."""

    token: str | None = None
    timeout = 20          # seconds a socket may stay silent (a body that never comes)

    def log_message(self, format: str, *args: Any) -> None:   # the CLI prints the URL; no per-request noise
        pass

    def end_headers(self) -> None:
        for name, value in SECURITY_HEADERS.items():
            self.send_header(name, value)
        super().end_headers()

    def handle_one_request(self) -> None:
        try:
            if self._not_http():
                return
            super().handle_one_request()
        except (ConnectionError, TimeoutError):   # the client hung up: nothing to answer
            self.close_connection = True

    def _not_http(self) -> bool:
        """Refuse at once (400, connection closed) a connection whose first byte cannot begin an
        HTTP request line: a TLS handshake (``https://`` to this plain-HTTP server: its ClientHello
        has no line end, so reading the request line would wait for the socket's timeout) or other
        binary bytes. True when refused."""
        first = cast("io.BufferedReader", self.rfile).peek(1)[:1]   # rbufsize -1: a buffered reader
        if not first or first.isalpha() or first in (b"\r", b"\n"):
            return False
        self.request_version, self.requestline = "HTTP/1.0", ""   # no request line was read
        port = cast("tuple[str, int]", self.server.server_address)[1]
        if first == b"\x16":
            self._refuse(400, f"refused: this server speaks plain HTTP, not TLS; open http://127.0.0.1:{port}/")
        else:
            self._refuse(400, "refused: not an HTTP request")
        return True

    def _refuse(self, code: int, text: str) -> bool:
        body = (text + "\n").encode()
        self.send_response(code)
        self.send_header("Content-Type", "text/plain; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(body)
        self.close_connection = True
        return False

    def _origins(self) -> tuple[str, ...]:
        # both servers bind an IPv4 (host, port) address; socketserver types it for every family
        port = cast("tuple[str, int]", self.server.server_address)[1]
        return (f"127.0.0.1:{port}", f"localhost:{port}")

    def guard(self, *, changes_state: bool = False) -> bool:
        """True when the request may proceed; else the refusal is sent and False returned."""
        hosts = self._origins()
        if len(self.headers.get_all("Host") or []) != 1:
            self._refuse(400, "refused: a request must carry exactly one Host header")
            return False
        if "\x00" in unquote(urlsplit(self.path).path):
            self._refuse(400, "refused: a NUL byte in the path")
            return False
        if self.headers.get("Host", "") not in hosts:
            return self._refuse(403, f"refused: Host must be one of {', '.join(hosts)} (this server "
                                     "answers local pages only)")
        origin = self.headers.get("Origin")
        if origin is not None and origin not in tuple(f"http://{h}" for h in hosts):
            return self._refuse(403, "refused: a request from another web page (Origin "
                                     f"{origin[:80]!r})")
        if changes_state and self.headers.get("Sec-Fetch-Site", "same-origin") not in ("same-origin", "none"):
            return self._refuse(403, "refused: a request from another web site (Sec-Fetch-Site)")
        if changes_state and self.token is not None:
            got = self.headers.get(TOKEN_HEADER, "")
            if not hmac.compare_digest(got.encode("utf-8", "replace"), self.token.encode()):
                return self._refuse(401, f"refused: the {TOKEN_HEADER} header must carry this run's "
                                         "token (open the URL the command printed)")
        return True

    def read_body(self, limit: int = MAX_BODY_BYTES) -> bytes:
        """The request body, refused (response sent, :class:`BodyRefused` raised) by its
        ``Content-Length`` before anything is read: absent, not a non-negative integer, or above
        ``limit`` bytes."""
        raw = self.headers.get("Content-Length")
        if raw is None:
            self._refuse(411, "refused: a request body needs a Content-Length")
            raise BodyRefused
        raw = raw.strip()
        if not (raw.isascii() and raw.isdigit()) or len(raw) > 12:
            self._refuse(400, f"refused: Content-Length must be a non-negative integer, got {raw[:20]!r}")
            raise BodyRefused
        n = int(raw)
        if n > limit:
            self._refuse(413, f"refused: the body has {n} bytes; at most {limit} are read")
            raise BodyRefused
        return self._read_exactly(n)

    def _read_exactly(self, n: int) -> bytes:
        """``n`` body bytes, each part arriving within :data:`BODY_PAUSE_S` of the last; a body
        that ends or pauses short of ``n`` is refused (400, :class:`BodyRefused`)."""
        parts: list[bytes] = []
        got = 0
        self.connection.settimeout(BODY_PAUSE_S)
        try:
            while got < n:
                try:
                    part = self.rfile.read1(n - got)
                except TimeoutError:
                    part = b""
                if not part:
                    self._refuse(400, f"refused: the body is shorter than its Content-Length ({got} of {n} bytes "
                                      f"arrived)")
                    raise BodyRefused
                parts.append(part)
                got += len(part)
        finally:
            self.connection.settimeout(self.timeout)
        return b"".join(parts)


class _SiteHandler(GuardedHandler, http.server.SimpleHTTPRequestHandler):
    """Static files of a written site (read-only: GET and HEAD only): regular files with one link
    only, no directory listing."""

    def list_directory(self, path):
        self.send_error(404, "not found")
        return None

    def send_head(self):
        path = self.translate_path(self.path)
        if os.path.isdir(path):
            if not urlsplit(self.path).path.endswith("/"):
                return super().send_head()   # the redirect to "dir/"
            path = os.path.join(path, "index.html")
        try:
            st = os.lstat(path)
        except (OSError, ValueError):
            st = None
        if st is None or not stat.S_ISREG(st.st_mode) or st.st_nlink != 1:
            self.send_error(404, "not found")
            return None
        return super().send_head()

    def do_GET(self) -> None:
        if self.guard():
            super().do_GET()

    def do_HEAD(self) -> None:
        if self.guard():
            super().do_HEAD()


def start_server(handler: type[GuardedHandler], port: int = 0, token: str | None = None, *,
                 workers: int = WORKERS, waiting: int = WAITING, **kwargs: Any) -> LocalServer:
    """A started :class:`LocalServer` (a :class:`~http.server.ThreadingHTTPServer`) on 127.0.0.1 (``port`` 0: a free one) with
    ``handler`` (given ``token`` and ``kwargs``), serving on a daemon thread with ``workers``
    handler threads and ``waiting`` queued connections; ``server_address[1]`` is the port,
    ``server.shutdown()`` stops it."""
    cls = type(handler.__name__, (handler,), {"token": token})
    server = LocalServer(("127.0.0.1", port), functools.partial(cls, **kwargs) if kwargs else cls,
                         workers=workers, waiting=waiting)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def serve_directory(root: str | Path, port: int = 0, *, workers: int = WORKERS, waiting: int = WAITING) -> LocalServer:
    """A started server for the static site ``root`` (written by
    :func:`~spatialscout_gym.servers.viewer.site.write_site`, which copies no symbolic link) on 127.0.0.1."""
    return start_server(_SiteHandler, port, workers=workers, waiting=waiting, directory=str(root))
