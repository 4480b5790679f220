"""A model-request cache for model agents (off by default; docs/protocol.md section 7).

With ``--request-cache DIR`` every model response is stored under the SHA-256 of the exact request
body the SDK client sends (endpoint, model, messages with their images, tools, options; the
per-request ``timeout`` left out) plus the episode's seed. Episodes are deterministic, so rerunning
a failed attempt sends the same requests: the calls already paid for are answered from ``DIR``
byte for byte, and the episode continues live from the failure. Another seed gives other keys, so
a repeated episode samples anew.

Entries are ``DIR/<key>.json``: ``{"format", "key", "endpoint", "seed", "response_type",
"response", "response_sha256"}``. A request the service refused for its reasoning-effort parameter
(docs/protocol.md section 10.2) is an entry too (``"refusal": true``, the error's status, message
and body): a rerun replays the refusal and the resend without the parameter, so it needs no
endpoint even in a new evaluation directory, whose run has not heard of the refusal yet. An entry that is not valid JSON, names another key, fails its
checksum or names a response type outside the three SDKs is refused (:class:`RequestCacheError`,
one line naming the file) and never used.

The service's answer about the effort parameters is kept too (``DIR/effort/<key>.json``, keyed by
provider, API, model and the effort parameters; :meth:`RequestCache.effort_known`): a run whose
shared effort record (:mod:`~spatialscout_gym.conversation.effort_record`) knows nothing yet takes
the answer the cached run settled, for every worker alike, so each worker sends exactly the
requests the cached run sent whichever worker would have asked the service first.

Offline (``--offline``, the provider's ``offline``): a request the cache cannot answer is not sent;
it raises :class:`RequestCacheError` (one line), so a replay never reaches an endpoint.

Entries are redacted as the trace is (core/redact.py): every string of a stored response or refusal
has the API key, credentials and the endpoint removed before it is written, so a service or model
that echoes the request leaves no secret in ``DIR``. The provider redacts every reply it reads the
same way, so a reply answered from the cache is the reply a live call gave the run.

:meth:`RequestCache.install` swaps a provider's SDK client for a proxy; nothing else of the
provider changes. :attr:`RequestCache.calls` records, per model request, its key and whether it
was answered from the cache (written to the run directory as ``request_cache.json``).
"""

from __future__ import annotations

import hashlib
import importlib
import json
import os
from pathlib import Path
from typing import Any

from spatialscout_gym.core.errors import SpatialScoutError
from spatialscout_gym.core.redact import redact, redact_strings

__all__ = ["RequestCache", "RequestCacheError", "CACHE_FORMAT", "RECORD_FILE", "EFFORT_DIR"]

CACHE_FORMAT = "spatialscout-request-cache/1"
RECORD_FILE = "request_cache.json"
EFFORT_DIR = "effort"
"""The cache's folder of settled effort answers (one file per provider, API, model and effort)."""
_ENDPOINTS = {("chat", "completions", "create"), ("responses", "create"), ("messages", "create")}
_SDK_MODULES = ("openai.", "anthropic.")
_SDKS = ("openai", "anthropic")


class RequestCacheError(SpatialScoutError, RuntimeError):
    """A cache entry that is corrupted or foreign; it is never used."""


def _canonical(obj: Any) -> bytes:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str).encode("utf-8")


def _norm(obj: Any) -> Any:
    return json.loads(json.dumps(obj, default=str))


def _refusal_error(cls: Any, payload: Any, path: Path) -> Exception:
    """The SDK error a cached refusal recorded (``status``, ``message``, ``body``), rebuilt."""
    sdk = importlib.import_module(cls.__module__.split(".")[0])
    if not (isinstance(cls, type) and issubclass(cls, sdk.APIStatusError)):
        raise RequestCacheError(f"request cache entry {path} names {cls!r}, not an HTTP error of the SDK; refused")
    if not isinstance(payload, dict) or not isinstance(payload.get("status"), int):
        raise RequestCacheError(f"request cache entry {path} holds a refusal without its status; refused")
    errors = importlib.import_module(sdk.__name__ + "._exceptions")
    httpx = getattr(errors, "httpx", None) or getattr(errors, "httpx2")   # the HTTP library the SDK uses
    request = httpx.Request("POST", "http://request-cache.invalid/")
    body = payload.get("body")
    response = httpx.Response(payload["status"], request=request, json=body)
    return cls(str(payload.get("message", "")), response=response, body=body)


class _Path:
    """Attribute chain of the SDK client (``client.chat.completions``); ``create`` is cached."""

    def __init__(self, target: Any, path: tuple[str, ...], cache: "RequestCache") -> None:
        self._target, self._path, self._cache = target, path, cache

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._target, name)
        path = self._path + (name,)
        if path in _ENDPOINTS:
            return lambda **kwargs: self._cache.call(".".join(path), value, kwargs)
        if any(e[: len(path)] == path for e in _ENDPOINTS):
            return _Path(value, path, self._cache)
        return value


class RequestCache:
    """Responses by request for one episode's seed (see the module docstring).

    Parameters
    ----------
    root : path
        The cache directory (created).
    seed : int
        The episode's seed, part of every key.
    """

    def __init__(self, root: str | os.PathLike, seed: int = 0) -> None:
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)
        self.seed = int(seed)
        self.calls: list[dict] = []
        self._provider: Any = None

    def install(self, provider: Any) -> "RequestCache":
        """Route ``provider``'s SDK client through this cache (idempotent per provider)."""
        client = provider._client
        real = client._target if isinstance(client, _Path) else client
        provider._client = _Path(real, (), self)
        self._provider = provider
        if hasattr(provider, "effort_memory"):
            provider.effort_memory = self
        return self

    def _effort_path(self, provider: Any) -> Path:
        ident = {"provider": getattr(provider, "provider", None), "api_mode": getattr(provider, "api_mode", None),
                 "model": getattr(provider, "model", None), "effort": _norm(provider._effort_params())}
        return self.root / EFFORT_DIR / f"{hashlib.sha256(_canonical(ident)).hexdigest()}.json"

    def effort_known(self, provider: Any) -> dict[str, str] | None:
        """The effort parameters the cached run's service refused (``{}``: it took them all) for
        ``provider``'s provider, API, model and effort; None when the cache holds no answer.
        An entry that cannot be read is refused (:class:`RequestCacheError`), never guessed."""
        path = self._effort_path(provider)
        if not path.is_file():
            return None
        try:
            refused = json.loads(path.read_text(encoding="utf-8")).get("refused")
        except (OSError, ValueError, AttributeError) as exc:
            raise RequestCacheError(f"request cache entry {path} is corrupted ({type(exc).__name__}); delete it "
                                    "to ask the service again") from None
        if not isinstance(refused, dict):
            raise RequestCacheError(f"request cache entry {path} holds no effort answer; delete it to ask the "
                                    "service again")
        return {str(k): str(v) for k, v in refused.items()}

    def remember_effort(self, provider: Any, refused: dict[str, str]) -> None:
        """Keep the service's settled answer about ``provider``'s effort parameters (redacted)."""
        path = self._effort_path(provider)
        path.parent.mkdir(exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps({"format": CACHE_FORMAT, "refused": redact_strings(dict(refused))}),
                       encoding="utf-8")
        os.replace(tmp, path)

    def key(self, endpoint: str, body: dict) -> str:
        """SHA-256 of the canonical request body, the endpoint and the seed."""
        return hashlib.sha256(_canonical({"endpoint": endpoint, "body": body, "seed": self.seed})).hexdigest()

    def _load(self, path: Path, key: str) -> Any:
        try:
            entry = json.loads(path.read_text(encoding="utf-8"))
            if not isinstance(entry, dict):
                raise ValueError("not a JSON object")
        except (OSError, ValueError) as exc:
            raise RequestCacheError(f"request cache entry {path} is corrupted ({exc}); delete it to call the "
                                    "model again") from None
        if entry.get("format") != CACHE_FORMAT or entry.get("key") != key or entry.get("seed") != self.seed:
            raise RequestCacheError(f"request cache entry {path} is foreign (format, key or seed differ from "
                                    "the request); delete it to call the model again")
        if hashlib.sha256(_canonical(entry.get("response"))).hexdigest() != entry.get("response_sha256"):
            raise RequestCacheError(f"request cache entry {path} fails its checksum (edited or corrupted); "
                                    "delete it to call the model again")
        rtype = str(entry.get("response_type"))
        module, _, name = rtype.partition(":")
        sdk = module.split(".")[0] in _SDKS and (entry.get("refusal") or module.startswith(_SDK_MODULES))
        if not sdk or not name:
            raise RequestCacheError(f"request cache entry {path} names response type {rtype!r}, not one of "
                                    "the openai or anthropic SDK's; refused")
        cls = getattr(importlib.import_module(module), name)
        if entry.get("refusal"):   # the service refused this exact request: raise its error again
            return _refusal_error(cls, entry["response"], path)
        # built as the SDK builds a reply from the wire (leniently): a field the service left out is
        # stored as None, which a strict validation refuses (Responses' cache_write_tokens)
        return cls.construct(**entry["response"])

    def call(self, endpoint: str, create: Any, kwargs: dict) -> Any:
        """Answer one request from the cache, or send it and store the response."""
        body = {k: v for k, v in kwargs.items() if k != "timeout"}
        key = self.key(endpoint, body)
        path = self.root / f"{key}.json"
        if path.is_file():
            response = self._load(path, key)
            if isinstance(response, Exception):
                self.calls.append({"key": key, "cached": True, "refused": True})
                raise response
            self.calls.append({"key": key, "cached": True})
            return response
        if getattr(self._provider, "offline", False):
            raise RequestCacheError(f"offline: the request cache {self.root} holds no response for this request "
                                    f"({endpoint}, seed {self.seed}); nothing was sent. Rerun without --offline "
                                    "to send it")
        try:
            response = create(**kwargs)
        except Exception as exc:
            if self._is_effort_refusal(exc):   # deterministic for this exact request: a rerun needs no endpoint
                self._store(path, key, endpoint, exc, refusal=True)
                self.calls.append({"key": key, "cached": False, "refused": True})
            raise
        usage = {}
        try:   # tokens of this live call: the cost this run incurred
            usage = dict(self._provider._parse(response).usage) if self._provider is not None else {}
        except Exception:
            usage = {}
        self._store(path, key, endpoint, response)
        self.calls.append({"key": key, "cached": False, "usage": usage})
        return response

    def _is_effort_refusal(self, exc: Exception) -> bool:
        """An SDK error refusing a reasoning-effort parameter of the request (the provider's rule)."""
        p = self._provider
        if p is None or type(exc).__module__.split(".")[0] not in _SDKS or not hasattr(p, "_refused_effort_param"):
            return False
        return bool(p._refused_effort_param(exc, p._effort_kwargs()))

    def _store(self, path: Path, key: str, endpoint: str, response: Any, refusal: bool = False) -> None:
        if refusal:
            payload = {"status": getattr(response, "status_code", None), "message": redact(str(response)),
                       "body": redact_strings(_norm(getattr(response, "body", None)))}
        else:
            payload = redact_strings(response.model_dump(mode="json"))
        entry = {"format": CACHE_FORMAT, "key": key, "endpoint": endpoint, "seed": self.seed,
                 "response_type": f"{type(response).__module__}:{type(response).__qualname__}",
                 "response": payload, "response_sha256": hashlib.sha256(_canonical(payload)).hexdigest(),
                 **({"refusal": True} if refusal else {})}
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(entry), encoding="utf-8")
        os.replace(tmp, path)

    def live_usage(self) -> dict:
        """Tokens of the calls sent live in this run (input and output)."""
        out = {"input_tokens": 0, "output_tokens": 0}
        for c in self.calls:
            for k in out:
                out[k] += int((c.get("usage") or {}).get(k, 0))
        return out

    def record(self) -> dict:
        """What the run directory keeps: the directory, seed and every call's key and source."""
        return {"enabled": True, "dir": str(self.root), "seed": self.seed,
                "cached_calls": sum(c["cached"] for c in self.calls),
                "live_calls": sum(not c["cached"] for c in self.calls), "calls": list(self.calls)}
