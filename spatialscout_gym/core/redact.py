"""Keep secrets and endpoints out of every error text that is stored or printed.

A model server's error can echo the request's ``Authorization: Bearer <key>`` header or the
endpoint it was sent to; those texts end up in ``result.json`` (``error``, ``attempt_failures``),
in ``<run dir>.failed.json`` and on the terminal. :func:`redact` removes

* bearer tokens, ``Authorization``/``x-api-key``/``api_key`` values and ``sk-...``-shaped keys
  (patterns, whatever the key), and
* every value registered with :func:`register_secret` (the API key in use and the model
  endpoint's ``scheme://host:port``; providers register theirs when they are built).

>>> redact("401: bad header Authorization: Bearer abc.DEF-123 from client")
'401: bad header Authorization: [redacted] from client'
"""

from __future__ import annotations

import re
from typing import Iterable
from urllib.parse import quote, quote_plus, urlsplit

__all__ = ["redact", "register_secret", "register_endpoint", "REDACTED"]

REDACTED = "[redacted]"
_ENDPOINT = "[endpoint]"
_SECRETS: set[str] = set()
_ENDPOINTS: set[str] = set()

_PATTERNS: tuple[tuple[re.Pattern[str], str], ...] = (
    # header or field name, separator, value: Authorization: Bearer x / "x-api-key": "x" / api_key=x
    (re.compile(r"(?i)\b(authorization|proxy-authorization|x-api-key|api[-_]?key|access[-_]?token)"
                r"(\W{0,3}\s*[:=]\s*['\"]?)(?:bearer\s+|basic\s+)?[^\s'\",;}\]]+"), r"\1\2" + REDACTED),
    # a bare "Bearer <token>": a token has 8+ characters with a digit or symbol, or 20+ characters,
    # so that the CLI's own words ("the bearer token from ...") stay readable
    (re.compile(r"(?i)\bbearer\s+(?:(?=[A-Za-z]*[0-9._~+/=-])[A-Za-z0-9._~+/=-]{8,}|[A-Za-z0-9._~+/=-]{20,})"),
     "Bearer " + REDACTED),
    (re.compile(r"\b(sk|pk|rk)-[A-Za-z0-9_-]{8,}"), REDACTED),
)


def register_secret(value: str | None) -> None:
    """Remember ``value`` (an API key) so that :func:`redact` removes it from any text.
    Values shorter than 4 characters are ignored (they would mangle ordinary words). Its
    percent-encoded forms are removed too."""
    if value and len(value) >= 4:
        # a server may echo the key percent-encoded (in a URL or a form body)
        _SECRETS.update({value, quote(value, safe=""), quote_plus(value), quote(value)})


def register_endpoint(url: str | None) -> None:
    """Remember an endpoint URL: :func:`redact` replaces it, and its ``host:port``, by ``[endpoint]``."""
    if not url:
        return
    _ENDPOINTS.add(url.rstrip("/"))
    parts = urlsplit(url if "//" in url else "//" + url)
    if parts.netloc:
        if parts.scheme:
            _ENDPOINTS.add(f"{parts.scheme}://{parts.netloc}")
        _ENDPOINTS.add(parts.netloc)


def redact(text: object, secrets: Iterable[str] = ()) -> str:
    """``str(text)`` with keys, bearer tokens and registered endpoints removed.

    ``secrets`` adds values to remove for this call only (besides the registered ones)."""
    s = str(text)
    extra = {f(v) for v in secrets if v and len(v) >= 4 for f in (str, lambda x: quote(x, safe=""), quote_plus)}
    for value in sorted({*_SECRETS, *extra}, key=len, reverse=True):
        s = s.replace(value, REDACTED)
    for url in sorted(_ENDPOINTS, key=len, reverse=True):  # longest first: the full URL before its host
        s = s.replace(url, _ENDPOINT)
    for pattern, repl in _PATTERNS:
        s = pattern.sub(repl, s)
    return s
