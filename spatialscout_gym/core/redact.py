"""Keep secrets and endpoints out of every error text that is stored or printed.

A model server's error can echo the request's ``Authorization: Bearer <key>`` header or the
endpoint it was sent to; those texts end up in ``result.json`` (``error``, ``attempt_failures``),
in ``<run dir>.failed.json`` and on the terminal. :func:`redact` removes

* bearer tokens, ``Authorization``/``x-api-key``/``api_key`` values and ``sk-...``-shaped keys
  (patterns, whatever the key), and
* every value registered with :func:`register_secret` (the API key in use and the model
  endpoint's ``scheme://host:port``; providers register theirs when they are built).

A URL the user typed is shown only through :func:`display_url`: credentials (``user:KEY@``) removed
and the value of every query parameter but ``api-version`` replaced by ``[redacted]`` (a key may
travel as ``?key=...``); :func:`url_problem` says in one line, without echoing any part of it, why a
URL cannot be used, so no parser's traceback ever prints a password.

>>> redact("401: bad header Authorization: Bearer abc.DEF-123 from client")
'401: bad header Authorization: [redacted] from client'
"""

from __future__ import annotations

import base64
import re
from typing import Any, Iterable

from spatialscout_gym.core.types import map_strings
from urllib.parse import quote, quote_plus, unquote, urlsplit, urlunsplit

__all__ = ["redact", "redact_strings", "register_secret", "register_endpoint", "display_url", "endpoint_shown", "url_problem",
           "REDACTED"]

REDACTED = "[redacted]"
_ENDPOINT = "[endpoint]"
_SECRETS: set[str] = set()
_ENDPOINTS: set[str] = set()

_PATTERNS: tuple[tuple[re.Pattern[str], str], ...] = (
    # header or field name, separator, value: Authorization: Bearer x / "x-api-key": "x" / api_key=x
    # (a value already redacted is left: redacting twice gives what redacting once gave)
    (re.compile(r"(?i)\b(authorization|proxy-authorization|x-api-key|api[-_]?key|access[-_]?token)"
                r"(\W{0,3}\s*[:=]\s*['\"]?)(?:bearer\s+|basic\s+)?(?!\[redacted\])[^\s'\",;}\]]+"), r"\1\2" + REDACTED),
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


_QUERY_SHOWN = frozenset({"api-version", "api_version"})
"""Query parameters whose values :func:`display_url` shows (a version, never a key)."""


def url_problem(url: str) -> str | None:
    """Why ``url`` cannot be a model endpoint (one sentence that quotes no part of it, since a
    malformed URL may hold a password where the parser expects a port), or None when it can."""
    try:
        parts = urlsplit(url)
        parts.port   # parsed on access: a port that is not a number raises here
    except ValueError:
        return ("it cannot be parsed: its port must be a number from 0 to 65535, an IPv6 host needs both "
                "[ and ], and a '/', '?', '#' or '@' inside a user name or password must be percent-encoded "
                "(e.g. %2F)")
    if parts.scheme not in ("http", "https"):
        return "it must start with http:// or https://"
    if not parts.hostname:
        return "it names no host"
    return None


def _query_secrets(query: str) -> list[str]:
    """The values of ``query``'s parameters that :func:`display_url` hides, raw and decoded."""
    out = []
    for item in query.split("&"):
        name, _, value = item.partition("=")
        if value and unquote(name).lower() not in _QUERY_SHOWN:
            out += [value, unquote(value), unquote(value.replace("+", " "))]
    return out


def register_endpoint(url: str | None) -> None:
    """Remember an endpoint URL: :func:`redact` replaces it, and its ``host:port``, by ``[endpoint]``.
    Credentials in it (``http://user:KEY@host/v1``) are registered as secrets in every form a
    server may echo: ``KEY``, ``user:KEY`` and ``base64(user:KEY)`` (the ``Basic`` header the
    client sends), percent-encoded or not; so are the query values :func:`display_url` hides."""
    if not url:
        return
    _ENDPOINTS.add(url.rstrip("/"))
    try:
        parts = urlsplit(url if "//" in url else "//" + url)
    except ValueError:   # not a URL (url_problem says why): only the text as given is known
        return
    for value in _query_secrets(parts.query):
        register_secret(value)
    if parts.netloc:
        hostport = parts.netloc.rpartition("@")[2]
        for netloc in {parts.netloc, hostport}:
            if parts.scheme:
                _ENDPOINTS.add(f"{parts.scheme}://{netloc}")
            _ENDPOINTS.add(netloc)
        _ENDPOINTS.add(display_url(url).rstrip("/"))
    if "@" in parts.netloc:
        user_raw, _, password_raw = parts.netloc.rpartition("@")[0].partition(":")
        for user, password in {(user_raw, password_raw), (unquote(user_raw), unquote(password_raw))}:
            basic = base64.b64encode(f"{user}:{password}".encode("utf-8")).decode("ascii")
            for value in (password, f"{user}:{password}", basic, user if not password else ""):
                register_secret(value)


def display_url(url: str | None) -> str:
    """``url`` as the user typed it, with credentials (``user:KEY@``) removed and every query value
    but ``api-version``'s replaced by ``[redacted]``: what messages show. A URL that
    :func:`url_problem` refuses is shown as ``[a URL that cannot be parsed]``."""
    if not url:
        return ""
    if url_problem(url) is not None:   # where its password ends is anyone's guess
        return "[a URL that cannot be parsed]"
    parts = urlsplit(url)
    query = "&".join(item if not item.partition("=")[2] or unquote(item.partition("=")[0]).lower() in _QUERY_SHOWN
                     else f"{item.partition('=')[0]}={REDACTED}" for item in parts.query.split("&")) \
        if parts.query else ""
    return urlunsplit(parts._replace(netloc=parts.netloc.rpartition("@")[2], query=query))


def endpoint_shown(url: str | None) -> str:
    """The endpoint ``url`` names, for a line that tells the user which server did not answer:
    scheme, host, port and path; never user info or the query (a key may travel in either), and
    registered secrets removed from what is left."""
    shown = display_url(url)
    if not shown or url_problem(shown) is not None:
        return shown
    return redact(urlunsplit(urlsplit(shown)._replace(query="", fragment="")), endpoints=False)


def redact(text: object, secrets: Iterable[str] = (), *, endpoints: bool = True) -> str:
    """``str(text)`` with keys, bearer tokens and registered endpoints removed.

    ``secrets`` adds values to remove for this call only (besides the registered ones);
    ``endpoints=False`` keeps endpoints (a message to the user naming the URL they typed)."""
    s = str(text)
    extra = {f(v) for v in secrets if v and len(v) >= 4 for f in (str, lambda x: quote(x, safe=""), quote_plus)}
    for value in sorted({*_SECRETS, *extra}, key=len, reverse=True):
        s = s.replace(value, REDACTED)
    for url in sorted(_ENDPOINTS if endpoints else (), key=len, reverse=True):  # the full URL before its host
        s = s.replace(url, _ENDPOINT)
    for pattern, repl in _PATTERNS:
        s = pattern.sub(repl, s)
    return s


def redact_strings(x: Any) -> Any:
    """``x`` with every string in it (dict keys too) passed through :func:`redact`: a reply or
    error body as an SDK parsed it (JSON), so the walk is bounded by its size (and by 64 levels)."""
    return map_strings(x, redact, 64)
