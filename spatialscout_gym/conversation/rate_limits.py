"""Requests-per-minute and tokens-per-minute limits of one model, shared by every worker of a run,
and the ``Retry-After`` wait a service asks for (docs/models.md, "Rate limits").

Sharing: a :class:`RateLimiter` keeps its window in a small JSON file (``evaluate`` puts it in the
evaluation directory, :data:`RATE_LIMIT_FILE`) and reads and rewrites it under an exclusive
``flock``, so worker processes on one machine (and Ray actors that see the same directory) share one
window; without a path it keeps the window in memory (one process, ``spatialscout run``).

The window holds one entry per HTTP request of the last ``window_s`` seconds (60: "per minute"),
with the tokens it is known or estimated to carry. Before a request, :meth:`RateLimiter.acquire`
waits until one more request, of the estimated size, fits under both limits; the entry is stamped
with the time its answer arrives (:meth:`RateLimiter.settle`) and its tokens become the tokens the
service counted (``usage``), so a window a service counts by arrival time is never exceeded by one
the client counts by answer time. Tokens are not known before a request: the estimate is the larger
of the last request's counted tokens (the history only grows) and :func:`estimate_request_tokens`
(text at 4 characters a token, images by the wire format's rule, each codec's ``image_tokens``). A request whose estimate alone is
over the limit is sent when the window is empty.
"""

from __future__ import annotations

import contextlib
import email.utils
import math
import os
import sys
import threading
import time
import uuid
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence

from spatialscout_gym.core.errors import SpatialScoutError
from spatialscout_gym.core.files import SharedFileError, locked_json_object

__all__ = ["RATE_LIMIT_FILE", "RateLimiter", "RateLimitFileError", "retry_after_s", "estimate_request_tokens", "CHARS_PER_TOKEN", "WINDOW_S"]

RATE_LIMIT_FILE = "rate_limit.json"
"""The shared window's file inside an evaluation directory."""
WINDOW_S = 60.0
"""The limits' window, seconds ("per minute")."""
CHARS_PER_TOKEN = 4.0
"""Text characters per token of the request estimate (English text in the services' tokenizers)."""


def retry_after_s(exc: Any, now: Callable[[], float] = time.time) -> float | None:
    """Seconds a failed request's ``Retry-After`` (or ``retry-after-ms``) header asks to wait: a
    number of seconds or an HTTP-date. None without the header, or with one that asks for no wait
    or cannot be taken: not a number, not finite (``nan``, ``inf``), zero, negative, or a date in
    the past; the caller then waits its own backoff (a ``0`` there would resend at once, forever)."""
    response = getattr(exc, "response", None)
    headers = getattr(response, "headers", None)
    if headers is None:
        return None
    ms = _positive_seconds(headers.get("retry-after-ms"), 1000.0)
    if ms is not None:
        return ms
    value = headers.get("retry-after")
    if value is None:
        return None
    seconds = _positive_seconds(value, 1.0)
    if seconds is not None:
        return seconds
    try:
        when = email.utils.parsedate_to_datetime(value)
        left = when.timestamp() - now()
    except (TypeError, ValueError, OverflowError, IndexError):
        return None
    return left if math.isfinite(left) and left > 0 else None


def _positive_seconds(text: Any, per_second: float) -> float | None:
    """``text`` as a finite number of seconds above 0 (``per_second`` units a second), else None."""
    if text is None:
        return None
    try:
        value = float(text) / per_second
    except (TypeError, ValueError):
        return None
    return value if math.isfinite(value) and value > 0 else None


class RateLimitFileError(SpatialScoutError, ValueError):
    """The shared window's file cannot be used (a link, not a regular file, not the window)."""


def _file_error(path: Path, problem: str) -> RateLimitFileError:
    return RateLimitFileError(f"{path}: {problem}; it is neither used nor changed. It holds only the "
                              f"last minute's requests: delete it and rerun")


def _entry_ok(entry: Any, latest: float) -> bool:
    """``[time, tokens, id]`` with a finite time up to ``latest`` and a token count in range."""
    if not isinstance(entry, list) or len(entry) != 3 or not isinstance(entry[2], str):
        return False
    t, tokens = entry[0], entry[1]
    return (type(t) in (int, float) and math.isfinite(t) and 0 <= t <= latest
            and type(tokens) in (int, float) and 0 <= tokens < 1e15)


def estimate_request_tokens(messages: Sequence[Any], api_mode: str | None = None) -> int:
    """A rough input-token count of a conversation: text at :data:`CHARS_PER_TOKEN`, each image by
    ``api_mode``'s codec rule at its delivered size (the larger rule of all when unknown)."""
    from spatialscout_gym.conversation.codecs import CODECS
    chars = 0
    sizes: list[tuple[int, int]] = []
    for m in messages:
        for part in getattr(m, "content", []) or []:
            if isinstance(part, str):
                chars += len(part)
            else:
                sizes.append((int(getattr(part, "width", 384) or 384), int(getattr(part, "height", 384) or 384)))
        for call in getattr(m, "tool_calls", []) or []:
            chars += len(str(getattr(call, "arguments", "")))
    rules = [CODECS[api_mode]] if api_mode in CODECS else list(CODECS.values())
    return int(chars / CHARS_PER_TOKEN) + sum(max(c.image_tokens(w, h) for c in rules) for w, h in sizes)


class RateLimiter:
    """Requests and tokens per ``window_s`` of one model, shared through ``path`` (module docstring).

    Parameters
    ----------
    requests_per_minute, tokens_per_minute : int, optional
        The limits (None: that one is not limited).
    path : path, optional
        The shared window file; None keeps it in memory.
    window_s : float
        The window, seconds (60; tests shorten it).
    sleep, clock : callable
        ``time.sleep`` and ``time.time`` (tests may pass others).
    """

    def __init__(self, requests_per_minute: int | None = None, tokens_per_minute: int | None = None, *,
                 path: str | os.PathLike | None = None, window_s: float = WINDOW_S,
                 sleep: Callable[[float], None] = time.sleep, clock: Callable[[], float] = time.time) -> None:
        self.rpm = None if requests_per_minute is None else int(requests_per_minute)
        self.tpm = None if tokens_per_minute is None else int(tokens_per_minute)
        self.path = None if path is None else Path(path)
        self.window_s = float(window_s)
        self._sleep, self._clock = sleep, clock
        self._memory: dict = {"events": [], "last_tokens": 0}
        self._mutex = threading.Lock()

    @contextlib.contextmanager
    def _state(self) -> Iterator[dict]:
        """The window, held exclusively; what the block leaves in it is written back. A shared
        file that is a link, not a regular file, or not the window's shape raises
        :class:`RateLimitFileError`; entries out of range are dropped (:meth:`_checked`)."""
        if self.path is None:
            with self._mutex:
                yield self._memory
            return
        try:
            with locked_json_object(self.path, finite=False) as state:
                self._checked(state)
                yield state
        except SharedFileError as exc:
            raise _file_error(self.path, exc.problem) from None

    def _checked(self, state: dict) -> None:
        """Refuse a window of the wrong shape; drop, with a note on stderr, entries that are not
        ``[time, tokens, id]`` with a finite time at most one window ahead of now (a time far in
        the future would hold every request until then) and a finite token count >= 0."""
        assert self.path is not None
        events = state.setdefault("events", [])
        last = state.setdefault("last_tokens", 0)
        if not isinstance(events, list):
            raise _file_error(self.path, f'"events" is a JSON {type(events).__name__}, not a list')
        if type(last) not in (int, float) or not 0 <= last < 1e15:
            raise _file_error(self.path, f'"last_tokens" is {last!r}, not a token count')
        for key in [k for k in state if k not in ("events", "last_tokens")]:
            del state[key]   # nothing else belongs here (a NaN there could not be written back)
        now = self._clock()
        kept = [e for e in events if _entry_ok(e, now + self.window_s)]
        if len(kept) < len(events):
            print(f"note: {self.path}: dropped {len(events) - len(kept)} entries that are not a request "
                  f"of the last minute (a time in the future or not finite, or a token count out of range)",
                  file=sys.stderr)
            state["events"] = kept
        state["last_tokens"] = int(last)

    def check(self) -> None:
        """Read the window once (:meth:`_state`'s refusals and notes), sending nothing."""
        with self._state():
            pass

    def acquire(self, estimate: int) -> tuple[str, list[tuple[str, float]]]:
        """Wait until one request of about ``estimate`` tokens fits, and enter it in the window.
        Returns its id (for :meth:`settle`) and the waits made, ``[(reason, seconds)]``."""
        waits: list[tuple[str, float]] = []
        key = uuid.uuid4().hex
        while True:
            with self._state() as state:
                now = self._clock()
                events = [e for e in state["events"] if e[0] > now - self.window_s]
                state["events"] = events
                est = max(int(estimate), int(state.get("last_tokens") or 0))
                wait, reason = self._wait_for(events, est, now)
                if wait <= 0:
                    events.append([now, est, key])
                    return key, waits
            waits.append((reason, wait))
            self._sleep(wait)

    def _wait_for(self, events: list, est: int, now: float) -> tuple[float, str]:
        """Seconds until the oldest entries leave the window enough for one more request (0: now)."""
        if not events:
            return 0.0, ""
        oldest = sorted(events, key=lambda e: e[0])
        if self.rpm is not None and len(events) + 1 > self.rpm:
            return oldest[len(events) - self.rpm][0] + self.window_s - now + 0.01, "requests per minute"
        if self.tpm is not None:
            total = sum(e[1] for e in events)
            if total + est > self.tpm:
                for e in oldest:   # the entries that must leave before the request fits
                    total -= e[1]
                    if total + est <= self.tpm:
                        return e[0] + self.window_s - now + 0.01, "tokens per minute"
                return oldest[-1][0] + self.window_s - now + 0.01, "tokens per minute"
        return 0.0, ""

    def settle(self, key: str, tokens: int | None) -> None:
        """The request ``key`` was answered now and counted ``tokens`` (None: unknown, the
        estimate stays)."""
        with self._state() as state:
            for e in state["events"]:
                if e[2] == key:
                    e[0] = self._clock()
                    if tokens is not None:
                        e[1] = int(tokens)
            if tokens:
                state["last_tokens"] = int(tokens)
