"""The viewer's and the play page's servers under load (127.0.0.1): a bounded pool of handler
threads with a bounded wait, so every request of a burst gets an answer (200, or 503 with
``Retry-After`` when the server is full), none a silent time-out."""

from __future__ import annotations

import socket
import threading
import time
import urllib.error
import urllib.request

import pytest

from fakes import served_play_game
from spatialscout_gym.servers.viewer.server import serve_directory

BOUND_S = 60
"""How long a request may go unanswered before the test calls it hung (a bound, not a measurement)."""
BURST = 60


def _get(url: str) -> tuple[int, dict]:
    try:
        with urllib.request.urlopen(url, timeout=BOUND_S) as r:
            r.read()
            return r.status, dict(r.headers)
    except urllib.error.HTTPError as exc:
        return exc.code, dict(exc.headers)


def _burst(url: str) -> list[object]:
    """``BURST`` GETs at once, each on its own thread; the status of each, or the error it met."""
    results: list[object] = [None] * BURST
    start = threading.Barrier(BURST)

    def one(i: int) -> None:
        start.wait()
        try:
            results[i] = _get(url)[0]
        except Exception as exc:   # a reset, a time-out: recorded, asserted below
            results[i] = f"{type(exc).__name__}: {exc}"
    threads = [threading.Thread(target=one, args=(i,)) for i in range(BURST)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(BOUND_S * 2)
    return results


@pytest.fixture()
def site(tmp_path):
    (tmp_path / "index.html").write_text("<!doctype html><title>site</title>" + "x" * 20000)
    return tmp_path


def test_every_request_of_a_burst_to_a_small_view_server_is_answered(site):
    server = serve_directory(site, workers=2, waiting=4)
    try:
        results = _burst(f"http://127.0.0.1:{server.server_address[1]}/index.html")
    finally:
        server.shutdown()
    assert all(r in (200, 503) for r in results), [r for r in results if r not in (200, 503)][:5]
    assert 200 in results


def test_every_request_of_a_burst_to_the_play_server_is_answered(tmp_path):
    with served_play_game(tmp_path) as (game, server):
        results = _burst(f"http://127.0.0.1:{server.server_address[1]}/api/state")
    assert all(r in (200, 503) for r in results), [r for r in results if r not in (200, 503)][:5]
    assert 200 in results


def _wait_for(predicate, what: str) -> None:
    for _ in range(BOUND_S * 20):
        if predicate():
            return
        time.sleep(0.05)
    pytest.fail(f"not within {BOUND_S} s: {what}")


def test_a_full_server_answers_503_at_once_and_recovers(site):
    """One worker held by a silent connection, the one waiting place taken by another: the next
    request gets 503 with Retry-After (not a wait for the silent ones' time-out); once they
    go, requests are served again."""
    server = serve_directory(site, workers=1, waiting=1)
    port = server.server_address[1]
    queued = server._waiting        # the accepted connections waiting for a worker
    silent = []
    try:
        silent.append(socket.create_connection(("127.0.0.1", port)))
        _wait_for(lambda: queued.unfinished_tasks == 1 and queued.qsize() == 0, "the worker takes the first")
        silent.append(socket.create_connection(("127.0.0.1", port)))
        _wait_for(lambda: queued.qsize() == 1, "the second waits")
        status, headers = _get(f"http://127.0.0.1:{port}/index.html")
        assert status == 503 and headers.get("Retry-After") == "1"
        assert headers.get("X-Content-Type-Options") == "nosniff"
        for s in silent:
            s.close()
        _wait_for(lambda: queued.qsize() == 0, "the silent connections are done")
        assert _get(f"http://127.0.0.1:{port}/index.html")[0] == 200
    finally:
        for s in silent:
            s.close()
        server.shutdown()
