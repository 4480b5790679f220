"""Model services behind the VLM agent: OpenAI chat-completions, OpenAI Responses and Anthropic
messages clients (``api_mode``: ``chat_completions``, ``responses``, ``messages``).

Each provider turns the neutral conversation of :mod:`spatialscout_gym.conversation.messages` into
one request (wire formats: :mod:`spatialscout_gym.conversation.codecs`, one module per format) with the real SDK client, and its response into a
:class:`~spatialscout_gym.conversation.messages.ModelReply`.

Requests follow docs/protocol.md section 5: a 180 s timeout per HTTP request and up to 3 attempts with
1 s and 2 s backoff on network failure (connection errors, timeouts, HTTP 5xx and 429), all
configurable; a longer ``Retry-After`` is waited instead of the backoff, and HTTP 429 answers are
waited out for up to :data:`RATE_LIMIT_WAIT_S` per call without spending attempts (each wait kept in
:attr:`ModelProvider.waits`; the shared per-minute limits: :mod:`.rate_limits`). The SDKs'
own retries are off (``max_retries=0``) so that logical model calls (:attr:`ModelProvider.calls`)
and HTTP attempts (:attr:`ModelProvider.http_attempts`) are counted apart. Any other failure, or
the last failed attempt, raises :class:`ModelServiceError`; the runner then records the episode
as failed.

Output tokens (docs/protocol.md section 5; the paper imposes "no explicit limit on output or
reasoning tokens"): no cap is sent unless the user sets ``max_tokens`` (``--max-tokens``). The
Anthropic messages API requires ``max_tokens``; without a user value the provider sends the model's
own maximum, read once from Anthropic's Models API (``GET /v1/models/{model}``, field
``max_tokens``: "Maximum value for the max_tokens parameter when using this model"), or
:data:`ANTHROPIC_FALLBACK_MAX_TOKENS` when that endpoint does not answer (e.g. a compatible local
server). Where the value came from is kept in :attr:`ModelProvider.max_tokens_source` and written
to the run. A reply cut off at a cap is a failed attempt (:mod:`spatialscout_gym.baselines.vlm`).

Reasoning effort (docs/protocol.md section 10): the paper ran every model at ``xhigh`` but one row
(GPT-6 Astra also at ``medium``), so :data:`DEFAULT_REASONING_EFFORT` is ``xhigh``; ``None`` sends
none. Chat Completions sends it as ``reasoning_effort``, Responses as ``reasoning={"effort": ...}``,
Anthropic as extended thinking (``thinking={"type": "enabled", "budget_tokens": N}``: for the
paper's ``xhigh`` N = ``max_tokens - 1``, the largest the API accepts; other efforts from
:data:`THINKING_BUDGET_TOKENS`) plus ``output_config={"effort": ...}``. A service that refuses one of
these parameters (HTTP 400 or 422 naming it) is detected on the first request that carries it: the
request is sent again at once without that parameter, the parameter is never sent again by this
provider, and :attr:`ModelProvider.effort_refused` keeps what was refused and the service's words
for the run's records.

The SDKs are imported when a provider is built, never at package import.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, replace
from typing import Any, Callable, Sequence, TypeVar

from spatialscout_gym.core.errors import ConfigError, SpatialScoutError
from spatialscout_gym.core.redact import (endpoint_shown, redact, redact_strings, register_endpoint, register_secret,
                                         url_problem)
from spatialscout_gym.conversation.codecs import anthropic_messages
from spatialscout_gym.conversation.codecs import chat_completions
from spatialscout_gym.conversation.codecs import responses
from spatialscout_gym.conversation.codecs.common import cache_write_tokens, cached_input_tokens
from spatialscout_gym.conversation.effort_record import EffortRecord
from spatialscout_gym.conversation.messages import WIRE_FORMATS, Message, ModelReply
from spatialscout_gym.conversation.rate_limits import RateLimiter, estimate_request_tokens, retry_after_s

__all__ = ["PROVIDERS", "ProviderEntry", "model_api", "provider_entry", "ModelProvider", "OpenAIProvider", "OpenAIResponsesProvider", "AnthropicProvider", "ModelServiceError",
           "PreflightError", "EffortRefusedError", "TIMEOUT_S", "ATTEMPTS", "BACKOFF_S", "RATE_LIMIT_WAIT_S",
           "ANTHROPIC_FALLBACK_MAX_TOKENS", "DEFAULT_REASONING_EFFORT",
           "THINKING_BUDGET_TOKENS", "UNCAPPED_EFFORT", "MIN_THINKING_BUDGET_TOKENS", "THINKING_REPLY_TOKENS",
           "redacted_reply"]

TIMEOUT_S = 180.0
"""Per-HTTP-request timeout, seconds."""
ATTEMPTS = 3
"""HTTP attempts per logical model call."""
BACKOFF_S: tuple[float, ...] = (1.0, 2.0)
"""Waits before the second and third attempts, seconds."""
RATE_LIMIT_WAIT_S = 900.0
"""Seconds one model call may wait out HTTP 429 answers (a quota) before they count as failed
attempts: a quota of requests or tokens per minute passes well within it."""
ANTHROPIC_FALLBACK_MAX_TOKENS = 64_000
"""``max_tokens`` sent to an Anthropic-format endpoint whose Models API does not state the model's
maximum: 64,000, the largest output limit Anthropic documents for its Claude 4.5 models (models
overview). A model with a lower limit refuses it; pass ``--max-tokens`` then."""


DEFAULT_REASONING_EFFORT = "xhigh"
"""The effort of the paper's runs (Table 3: every model at xhigh; GPT-6 Astra also at medium)."""
THINKING_BUDGET_TOKENS: dict[str, int] = {"minimal": 1_024, "low": 4_096, "medium": 16_384, "high": 32_768}
"""Anthropic extended thinking: ``budget_tokens`` sent for the efforts below the paper's (``none``
turns thinking off); the step doubles from medium up. The paper's effort, :data:`UNCAPPED_EFFORT`,
has no entry: it gets the largest budget the API accepts (docs/protocol.md section 10.2)."""
UNCAPPED_EFFORT = "xhigh"
"""The effort whose thinking budget is ``max_tokens - 1``, the largest ``budget_tokens`` Anthropic
accepts (it must be below ``max_tokens``): the paper set "no explicit limit on output or reasoning
tokens", and with ``max_tokens`` at the model's own maximum this adds no limit of its own."""
MIN_THINKING_BUDGET_TOKENS = 1_024
"""The smallest ``budget_tokens`` Anthropic accepts; below it thinking is not sent (and recorded)."""
THINKING_REPLY_TOKENS = 1_024
"""Tokens of ``max_tokens`` kept for the reply: the thinking budget is at most
``max_tokens - THINKING_REPLY_TOKENS`` (Anthropic requires ``budget_tokens < max_tokens``)."""
_REFUSAL_CODES = (400, 422)


class ModelServiceError(SpatialScoutError, RuntimeError):
    """A model call failed: the service refused it, or every attempt failed on the network."""


class EffortRefusedError(ModelServiceError):
    """The service refused the reasoning effort and the run requires it (``require_effort``,
    ``--require-effort``): the run stops instead of going on without it."""


class PreflightError(ModelServiceError):
    """The endpoint, key or model check before a batch failed; printed, never stored. It names the
    endpoint as typed, less user info and query (:func:`~spatialscout_gym.core.redact.endpoint_shown`;
    docs/models.md), keys removed, and the flag to fix."""

    shows_endpoint = True


class ModelProvider:
    """Shared retry loop and counters; subclasses implement ``_send`` and ``_parse``.

    Parameters
    ----------
    model : str
        The service's model name.
    api_key : str, optional
        Defaults to the provider's environment variable.
    base_url : str, optional
        Another endpoint speaking the same wire format (e.g. a local vLLM or Ollama server).
    max_tokens : int, optional
        Output token limit per response; None sends no limit (or, where the API requires one, the
        model's maximum: see the module docstring).
    reasoning_effort : str, optional
        Sent to the service (module docstring); None sends none.
    reasoning_effort_source : str, optional
        Who chose the effort, for the records (e.g. "default: the paper's", "--reasoning-effort").
    require_effort : bool
        A refused effort parameter raises :class:`EffortRefusedError` instead of the run going on
        without it (``--require-effort``).
    timeout_s, attempts, backoff_s :
        The retry policy (defaults: docs/protocol.md section 5); a failed request's
        ``Retry-After`` is waited when it asks for more than the backoff.
    rate_limit_wait_s : float
        Seconds one call may wait out HTTP 429 answers (their ``Retry-After``) without spending its
        attempts (:data:`RATE_LIMIT_WAIT_S`; 0: a 429 is a failed attempt like a 5xx).
    sleep : callable
        Waits between attempts (``time.sleep``; tests pass a recorder).

    Attributes
    ----------
    calls : int
        Logical model calls.
    http_attempts : int
        HTTP attempts over all calls (>= ``calls``).
    failures : list of str
        One line per failed attempt (keys, bearer tokens and the endpoint redacted).
    tool_names : tuple of str or None
        The tools sent with each request (None: all ten); the agent sets it (passive mode sends
        only the enabled tools).
    max_tokens_source : str
        Where the output cap sent comes from ("not sent", "--max-tokens", the Models API, ...).
    effort_refused : dict of str to str
        Effort parameters the service refused (wire name -> the refusal, redacted); never sent again.
    effort_record : EffortRecord or None
        The run's shared answer about effort parameters (``evaluate`` sets one per evaluation
        directory); None: this provider finds out alone.
    offline : bool
        With a request cache: a request the cache cannot answer is refused, never sent
        (``--offline``; :mod:`~spatialscout_gym.conversation.request_cache`).
    """

    provider = "base"
    env_var = ""
    _sdk: Any = None
    """The SDK module (``openai``, ``anthropic``), set by each client when it is built."""
    api_mode = "base"
    """The wire API: ``"chat_completions"``, ``"responses"`` or ``"messages"`` (recorded in every result)."""

    def __init__(self, model: str, *, api_key: str | None = None, base_url: str | None = None,
                 max_tokens: int | None = None, reasoning_effort: str | None = None,
                 reasoning_effort_source: str | None = None, require_effort: bool = False,
                 timeout_s: float = TIMEOUT_S, attempts: int = ATTEMPTS,
                 backoff_s: Sequence[float] = BACKOFF_S, rate_limit_wait_s: float = RATE_LIMIT_WAIT_S,
                 sleep: Callable[[float], None] = time.sleep, offline: bool = False) -> None:
        if not model:
            raise ConfigError(f"a {self.provider} model name is required, e.g. {self.provider}:MODEL")
        if int(attempts) < 1:
            raise ConfigError(f"attempts must be >= 1, got {attempts}")
        if len(backoff_s) < int(attempts) - 1:
            raise ConfigError(f"backoff_s needs one wait per retry ({int(attempts) - 1}), got {list(backoff_s)}")
        if max_tokens is not None and int(max_tokens) < 1:
            raise ConfigError(f"max_tokens must be >= 1, got {max_tokens}")
        key = api_key if api_key is not None else os.environ.get(self.env_var)
        if not key:
            raise ConfigError(f"no API key for {self.provider}: set {self.env_var} or pass --api-key "
                             f"(any placeholder string works for a local server without keys)")
        # Error texts are redacted of the key and the endpoint before they are kept or raised
        # (a server may echo the Authorization header or its own URL).
        register_secret(key)
        problem = url_problem(base_url) if base_url else None
        if problem is not None:   # before any parser sees it: its traceback would print the password
            raise ConfigError(f"--base-url is not a usable URL: {problem}")
        register_endpoint(base_url)
        self.model = model
        self.base_url = base_url
        self.max_tokens = None if max_tokens is None else int(max_tokens)
        self.reasoning_effort = reasoning_effort or None
        self.reasoning_effort_source = reasoning_effort_source or ("set by the caller" if reasoning_effort
                                                                   else "none sent")
        self.effort_refused: dict[str, str] = {}
        self.require_effort = bool(require_effort)
        self.effort_record: EffortRecord | None = None
        self.effort_memory: Any = None   # the request cache (it sets itself): the cached run's effort answer
        self.offline = bool(offline)     # the request cache answers every request or none is sent
        self._effort_settled = False
        if not 0 <= float(rate_limit_wait_s) < float("inf"):   # nan and inf included: it is recorded as JSON
            raise ConfigError(f"rate_limit_wait_s must be a finite number >= 0 seconds, got {rate_limit_wait_s}")
        if not all(0 <= float(b) < float("inf") for b in backoff_s):
            raise ConfigError(f"backoff_s must be finite numbers >= 0 seconds, got {list(backoff_s)}")
        self.rate_limit_wait_s = float(rate_limit_wait_s)
        self.rate_limiter: RateLimiter | None = None
        self.waits: list[dict] = []
        self.cached_input_tokens = 0
        self.cache_write_input_tokens = 0
        self.timeout_s = float(timeout_s)
        self.attempts = int(attempts)
        self.backoff_s = tuple(float(b) for b in backoff_s)
        self._sleep = sleep
        self.calls = 0
        self.http_attempts = 0
        self.failures: list[str] = []
        self.tool_names: tuple[str, ...] | None = None
        self.max_tokens_source = "--max-tokens" if self.max_tokens is not None else "not sent (no cap)"
        self._client = self._make_client(key)

    # ---- what a run records ------------------------------------------------------------------------
    def tool_schema(self) -> list[dict]:
        """The tool list exactly as this provider sends it (its wire format); subclasses override
        this, the default is the neutral form ``{"name", "description", "parameters"}``."""
        from spatialscout_gym.conversation.schemas import tool_schemas
        return tool_schemas(self.tool_names)

    @property
    def max_output_tokens(self) -> int | None:
        """The output-token cap sent with each request (None: none sent)."""
        return self.max_tokens

    def settings(self) -> dict:
        """Model, API mode, reasoning and request settings, for the run's records."""
        return {"provider": self.provider, "name": self.model, "api_mode": self.api_mode,
                "reasoning_effort": self.reasoning_effort, "temperature": None,
                "max_output_tokens": self.max_output_tokens, "max_output_tokens_source": self.max_tokens_source,
                "timeout_s": self.timeout_s, "http_attempts_per_call": self.attempts,
                "backoff_s": list(self.backoff_s), "rate_limit_wait_s": self.rate_limit_wait_s,
                "requests_per_minute": getattr(self.rate_limiter, "rpm", None),
                "tokens_per_minute": getattr(self.rate_limiter, "tpm", None),
                "require_effort": self.require_effort,
                "reasoning": self.reasoning_record()}

    # ---- reasoning effort ----------------------------------------------------------------------------
    def _effort_params(self) -> dict[str, Any]:
        """The request parameters that carry the effort (wire name -> value), all of them, before
        refusals are taken out; subclasses override."""
        return {}

    def _effort_kwargs(self) -> dict[str, Any]:
        """The effort parameters this request carries: those the service has not refused."""
        return {k: v for k, v in self._effort_params().items() if k not in self.effort_refused}

    def reasoning_record(self) -> dict:
        """Effort, who chose it, how it is sent and what the service refused (``harness.json``);
        asks the service nothing."""
        self._resolve_cap = False
        try:
            params = self._effort_params()
        finally:
            self._resolve_cap = True
        return {"effort": self.reasoning_effort, "source": self.reasoning_effort_source,
                "sent_as": {k: v for k, v in params.items() if k not in self.effort_refused},
                "refused": dict(self.effort_refused),
                "note": self._effort_note(params)}

    def _effort_note(self, params: dict[str, Any]) -> str:
        if not self.reasoning_effort:
            return "no reasoning effort sent"
        if not params:
            return f"effort {self.reasoning_effort!r} has no parameter in this API"
        if self.effort_refused and all(k in self.effort_refused for k in params):
            return (f"the service refused the effort ({', '.join(self.effort_refused)}); the run continued "
                    f"without it after the first request")
        if self.effort_refused:
            return f"the service refused {', '.join(self.effort_refused)}; the rest was sent"
        return "sent with every request"

    def _refused_effort_param(self, exc: Exception, sent: dict[str, Any]) -> list[str]:
        """The effort parameters of ``sent`` an HTTP 400/422 names (none for any other failure)."""
        if _status(exc) not in _REFUSAL_CODES or not sent:
            return []
        text = f"{exc} {getattr(exc, 'body', '')}".lower()
        return [k for k in sent if any(word in text for word in self._effort_words(k))]

    def _effort_words(self, param: str) -> tuple[str, ...]:
        """Words in a refusal that name ``param``."""
        return (param.lower(),)

    # ---- subclass hooks ------------------------------------------------------------------------
    def _make_client(self, key: str) -> Any:
        raise NotImplementedError

    def _send(self, messages: list[Message]) -> Any:
        raise NotImplementedError

    def _parse(self, response: Any) -> ModelReply:
        raise NotImplementedError

    def _retryable(self, exc: Exception) -> bool:
        """Network failures (timeouts included), 5xx and 429 are retried; both SDKs name these
        ``APIConnectionError`` and ``status_code``. ``self._sdk`` is the SDK module."""
        if isinstance(exc, self._sdk.APIConnectionError):
            return True
        code = _status(exc)
        return code is not None and (code >= 500 or code == 429)

    # ---- the retry loop --------------------------------------------------------------------------
    def complete(self, messages: list[Message]) -> ModelReply:
        """One logical model call: up to ``attempts`` HTTP requests.

        With a shared :attr:`effort_record` (one per run, all workers), the first request that
        would carry an effort parameter whose fate the run does not know yet is sent while holding
        the record, and its answer is written there; every other provider of the run reads it first,
        so a refused parameter reaches the service once per run.

        Raises
        ------
        ModelServiceError
            A non-retryable error, or the last attempt failed.
        """
        self.calls += 1
        record = self.effort_record
        if record is None or self._effort_settled or not self._effort_kwargs():
            return self._attempt(messages)
        known = record.known()
        if known is None:
            with record.probing() as (known, settle):
                memory = self.effort_memory
                if known is None and memory is not None:   # a replay: the cached run's answer, for every worker
                    known = memory.effort_known(self)
                    if known is not None:
                        settle(known)
                if known is None:   # this request asks the service for the run
                    try:
                        reply = self._attempt(messages)
                    except ModelServiceError:
                        if self.effort_refused:   # what was refused is known even if the call failed
                            self._settle_effort(settle)
                        raise
                    self._settle_effort(settle)   # answered: {} when every parameter was taken
                    self._effort_settled = True
                    return reply
        self.effort_refused.update(known)
        self._effort_settled = True
        self._check_effort_required()
        return self._attempt(messages)

    def _settle_effort(self, settle: Callable[[dict[str, str]], None]) -> None:
        """Write the service's answer to the run's record, and to the request cache (a replay of
        this run settles it from there, whichever worker asks first)."""
        settle(dict(self.effort_refused))
        if self.effort_memory is not None:
            self.effort_memory.remember_effort(self, dict(self.effort_refused))

    def _check_effort_required(self) -> None:
        """With ``require_effort``, a refused effort parameter ends the call (and the run)."""
        if self.require_effort and self.effort_refused:
            names = ", ".join(sorted(self.effort_refused))
            raise EffortRefusedError(f"{self.provider} refused the reasoning effort {self.reasoning_effort!r} "
                                     f"({names}) and --require-effort is set; rerun without --require-effort "
                                     f"to go on without it, or choose another --reasoning-effort")

    def _attempt(self, messages: list[Message]) -> ModelReply:
        """The attempts of one logical model call (:meth:`complete`)."""
        attempt = 0
        while attempt < self.attempts:
            attempt += 1
            self.http_attempts += 1
            sent = self._effort_kwargs()
            slot = self._take_rate_slot(messages)
            try:
                response = self._send(messages)
            except Exception as exc:  # the SDKs' error classes; anything else is a bug and re-raised
                self._settle_rate_slot(slot, 0)
                if not self._is_sdk_error(exc):
                    raise
                line = redact(f"call {self.calls} attempt {attempt}: {type(exc).__name__}: {exc}")
                self.failures.append(line)
                refused = self._refused_effort_param(exc, sent)
                if refused:   # the model takes no such parameter: drop it for good and resend now
                    for k in refused:
                        self.effort_refused[k] = line
                    self._check_effort_required()
                    attempt -= 1   # not a network failure: the retry budget is untouched
                    continue
                if not self._retryable(exc):
                    raise ModelServiceError(f"{self.provider} refused the request ({line}); check the "
                                            f"model name, key and options") from exc
                asked = retry_after_s(exc)
                quota = self._quota_wait(exc, asked)
                if quota is not None:   # a rate limit: wait it out; the attempts are for failures
                    self._wait("429 Retry-After" if asked is not None else "429", quota)
                    attempt -= 1
                    continue
                if attempt == self.attempts:
                    raise ModelServiceError(f"{self.provider} model call {self.calls} failed after "
                                            f"{self.attempts} attempts; last: {line}") from exc
                backoff = self.backoff_s[attempt - 1]
                if asked is not None and asked > backoff:
                    left = self.rate_limit_wait_s - self._waited_s()
                    if asked > left:   # never slept: a wait past the budget is a call that fails
                        raise ModelServiceError(
                            f"{self.provider} model call {self.calls}: the service asked to wait {asked:.0f} s "
                            f"(Retry-After), more than the {max(left, 0.0):.0f} s left of --rate-limit-wait "
                            f"{self.rate_limit_wait_s:g}; not waited. Last: {line}") from exc
                    self._wait("Retry-After", asked)
                else:
                    self._sleep(backoff)
                continue
            if isinstance(response, (str, bytes, bytearray)):
                # the SDKs hand over a body that is not JSON (an HTML login or error page sent with
                # HTTP 200) as text: no model reply, and it may hold anything, so none of it is kept
                line = (f"call {self.calls} attempt {attempt}: the service answered with a body that is not "
                        f"JSON ({len(response)} characters, not kept)")
                self.failures.append(line)
                if attempt == self.attempts:
                    raise ModelServiceError(f"{self.provider} model call {self.calls} failed after "
                                            f"{self.attempts} attempts; last: {line}")
                self._sleep(self.backoff_s[attempt - 1])
                continue
            reply = redacted_reply(self._parse(response))
            self.cached_input_tokens += cached_input_tokens(response)   # the service's prompt cache
            self.cache_write_input_tokens += cache_write_tokens(response)
            self._settle_rate_slot(slot, sum(v for v in reply.usage.values() if isinstance(v, int)) or None)
            reply.attempts = attempt
            return reply
        raise AssertionError("unreachable")

    def _is_sdk_error(self, exc: Exception) -> bool:
        raise NotImplementedError

    # ---- rate limits -------------------------------------------------------------------------------
    def _wait(self, reason: str, seconds: float) -> None:
        """Sleep ``seconds`` and record the wait (``result.json``'s model block, the report)."""
        self.waits.append({"call": self.calls, "reason": reason, "seconds": round(float(seconds), 3)})
        self._sleep(seconds)

    def _quota_wait(self, exc: Exception, asked: float | None) -> float | None:
        """Seconds to wait before resending a request the service answered HTTP 429 without
        spending an attempt, or None (the attempt counts, as for a 5xx).

        The wait is the service's ``Retry-After`` (``asked``; None when it asked for no wait or
        for one that cannot be read), else twice this call's last 429 wait, from the longest
        backoff, at most 60 s; never less than the first backoff, so a service that answers
        ``Retry-After: 0`` is not asked again at once. Every wait counts against
        ``rate_limit_wait_s``: one that does not fit in what is left of it is None."""
        if _status(exc) != 429:
            return None
        mine = [w["seconds"] for w in self.waits if w["call"] == self.calls and w["reason"].startswith("429")]
        floor = self.backoff_s[0] if self.backoff_s else 1.0
        wait = asked if asked is not None else min(60.0, 2 * mine[-1] if mine else max(self.backoff_s, default=1.0))
        wait = max(wait, floor)
        if self._waited_s() + wait > self.rate_limit_wait_s:
            return None
        return wait

    def _waited_s(self) -> float:
        """Seconds this call has waited for the service's rate limits (429s, ``Retry-After``): what
        ``rate_limit_wait_s`` bounds. The shared per-minute limits' own waits are not counted."""
        return sum(w["seconds"] for w in self.waits
                   if w["call"] == self.calls and (w["reason"].startswith("429") or w["reason"] == "Retry-After"))

    def _take_rate_slot(self, messages: list[Message]) -> str | None:
        """Wait for room under the shared requests- and tokens-per-minute limits (if any)."""
        if self.rate_limiter is None:
            return None
        key, waits = self.rate_limiter.acquire(estimate_request_tokens(messages, self.api_mode))
        for reason, seconds in waits:
            self.waits.append({"call": self.calls, "reason": reason, "seconds": round(float(seconds), 3)})
        return key

    def _settle_rate_slot(self, slot: str | None, tokens: int | None) -> None:
        if slot is not None and self.rate_limiter is not None:
            self.rate_limiter.settle(slot, tokens)

    # ---- preflight -------------------------------------------------------------------------------
    def preflight(self) -> None:
        """Check the endpoint, the key and the model once with a cheap request (``GET /models``, no
        model call, nothing counted) before a batch; one readable line when one of them is wrong.
        A server that answers without a model list (404, 405, 501, any other status) passes; its
        model is then checked by the first call.

        Raises
        ------
        ModelServiceError
            The endpoint does not answer, refuses the key, or does not serve the model.
        """
        # printed, never stored: the endpoint as typed, less user info and query (docs/models.md)
        where = endpoint_shown(self.base_url) if self.base_url else f"the {self.provider} service"
        if getattr(self._client, "models", None) is None:
            return
        try:
            listing = self._client.models.list(timeout=min(self.timeout_s, 15.0))
            listed = [getattr(m, "id", None) for m in getattr(listing, "data", None) or []]
        except Exception as exc:
            if not self._is_sdk_error(exc):
                raise
            code = _status(exc)
            if isinstance(exc, self._sdk.APIConnectionError):
                raise PreflightError(f"cannot reach {where} ({type(exc).__name__}); check --base-url "
                                        f"and that the server is running") from None
            if code in (401, 403):
                raise PreflightError(f"{where} refused the API key (HTTP {code}); check --api-key or "
                                        f"${self.env_var}") from None
            return   # no model list here (404, 405, 501, ...): the first model call checks the rest
        served = [m for m in listed if isinstance(m, str)]
        if served and self.model not in served:
            shown = ", ".join(served[:8]) + (f" and {len(served) - 8} more" if len(served) > 8 else "")
            raise PreflightError(f"{where} does not serve model {self.model!r} (it serves {redact(shown)}); "
                                    f"check the model name in --agent")


def redacted_reply(reply: ModelReply) -> ModelReply:
    """``reply`` with keys, credentials and the endpoint removed from its text, tool-call arguments,
    provider content and malformed notes, as from error texts (core/redact.py): a service or model
    that echoes the request would otherwise put them into ``trace.jsonl``."""
    calls = [replace(c, arguments=redact_strings(c.arguments)) for c in reply.tool_calls] \
        if isinstance(reply.tool_calls, list) else reply.tool_calls
    return replace(reply, text=redact_strings(reply.text), tool_calls=calls,
                   provider_content=redact_strings(reply.provider_content),
                   malformed=[redact(m) for m in reply.malformed])


def _status(exc: Exception) -> int | None:
    code = getattr(exc, "status_code", None)
    return int(code) if isinstance(code, int) else None


@dataclass(frozen=True)
class ProviderEntry:
    """One model service as the package knows it: the agent prefix (``openai`` in ``openai:MODEL``),
    its client class, the wire format its replies are decoded with (one codec of
    :mod:`spatialscout_gym.conversation.codecs`), the SDK module it imports and the extra that
    installs that SDK."""

    name: str
    client: type
    wire_format: str
    sdk: str
    extra: str = "vlm"


PROVIDERS: dict[str, ProviderEntry] = {}
"""Every model service by agent prefix: the one place that knows them (the agent registry, the CLI
and the wrapper read it), filled by :func:`model_api`."""


_Provider = TypeVar("_Provider", bound="type[ModelProvider]")


def model_api(name: str, *, sdk: str, extra: str = "vlm") -> Callable[[_Provider], _Provider]:
    """Class decorator registering a :class:`ModelProvider` subclass as the model service ``name``
    (its agents are ``name:MODEL``). The class's ``api_mode`` names its wire format.

    Examples
    --------
    >>> @model_api("my-service", sdk="openai")            # doctest: +SKIP
    ... class MyProvider(OpenAIProvider): ...
    """
    def register(cls: _Provider) -> _Provider:
        if cls.api_mode not in WIRE_FORMATS:
            raise ValueError(f"{cls.__name__}.api_mode must be one of {WIRE_FORMATS}, got {cls.api_mode!r}")
        if name in PROVIDERS and PROVIDERS[name].client is not cls:
            raise ValueError(f"model service {name!r} is already registered ({PROVIDERS[name].client.__name__})")
        cls.provider = name
        PROVIDERS[name] = ProviderEntry(name, cls, cls.api_mode, sdk, extra)
        return cls
    return register


def provider_entry(name: str) -> ProviderEntry:
    """The registered model service ``name``; :class:`ConfigError` listing the known ones otherwise."""
    if name not in PROVIDERS:
        raise ConfigError(f"unknown model service {name!r}; expected one of {', '.join(PROVIDERS)}")
    return PROVIDERS[name]


@model_api("openai", sdk="openai")
class OpenAIProvider(ModelProvider):
    """The OpenAI chat-completions API (or any compatible server via ``base_url``).

    ``max_tokens`` is sent as ``max_completion_tokens`` to the OpenAI service and as ``max_tokens``
    to a custom ``base_url`` (what local servers read).
    """

    env_var = "OPENAI_API_KEY"
    api_mode = "chat_completions"

    def _make_client(self, key: str) -> Any:
        import openai
        self._sdk = openai
        return openai.OpenAI(api_key=key, base_url=self.base_url, max_retries=0, timeout=self.timeout_s)

    def _is_sdk_error(self, exc: Exception) -> bool:
        return isinstance(exc, self._sdk.OpenAIError)

    def _send(self, messages: list[Message]) -> Any:
        kwargs: dict[str, Any] = {}
        if self.max_tokens is not None:
            kwargs["max_tokens" if self.base_url else "max_completion_tokens"] = self.max_tokens
        kwargs.update(self._effort_kwargs())
        return self._client.chat.completions.create(
            model=self.model, timeout=self.timeout_s, **chat_completions.to_request(messages, self.tool_names),
            **kwargs)

    def _effort_params(self) -> dict[str, Any]:
        return {"reasoning_effort": self.reasoning_effort} if self.reasoning_effort else {}

    def tool_schema(self) -> list[dict]:
        return chat_completions.tools(self.tool_names)

    def _parse(self, response: Any) -> ModelReply:
        try:
            return chat_completions.parse_response(response)
        except ValueError as exc:
            raise ModelServiceError(f"openai {exc}") from exc


@model_api("openai-responses", sdk="openai")
class OpenAIResponsesProvider(OpenAIProvider):
    """The OpenAI Responses API (``client.responses.create``), the same loop, prompt and tools.

    Each request replays the previous turns' output items (reasoning items, function calls,
    messages) and answers every function call with a ``function_call_output``
    (:func:`~spatialscout_gym.conversation.codecs.responses.input_items`); ``reasoning_effort`` is sent as
    ``reasoning={"effort": ...}`` and ``max_tokens`` as ``max_output_tokens``.
    """

    api_mode = "responses"

    def _send(self, messages: list[Message]) -> Any:
        kwargs: dict[str, Any] = {}
        if self.max_tokens is not None:
            kwargs["max_output_tokens"] = self.max_tokens
        kwargs.update(self._effort_kwargs())
        return self._client.responses.create(model=self.model, timeout=self.timeout_s,
                                             **responses.to_request(messages, self.tool_names), **kwargs)

    def tool_schema(self) -> list[dict]:
        return responses.tools(self.tool_names)

    def _effort_params(self) -> dict[str, Any]:
        return {"reasoning": {"effort": self.reasoning_effort}} if self.reasoning_effort else {}

    def _effort_words(self, param: str) -> tuple[str, ...]:
        # the parameter, not the reasoning items replayed in ``input``
        return ("reasoning.effort", "'reasoning'", '"reasoning"', "reasoning_effort")

    def _parse(self, response: Any) -> ModelReply:
        try:
            return responses.parse_response(response)
        except ValueError as exc:
            raise ModelServiceError(f"openai {exc}") from exc


@model_api("anthropic", sdk="anthropic")
class AnthropicProvider(ModelProvider):
    """The Anthropic messages API. It requires ``max_tokens``: without a user value the model's
    maximum is sent (module docstring)."""

    env_var = "ANTHROPIC_API_KEY"
    api_mode = "messages"
    _resolved_max_tokens: int | None = None
    _resolve_cap = True

    def __init__(self, model: str, **options: Any) -> None:
        effort = options.get("reasoning_effort")
        if effort and effort != "none" and effort not in THINKING_BUDGET_TOKENS and effort != UNCAPPED_EFFORT:
            raise ConfigError(f"reasoning effort {effort!r} has no Anthropic thinking budget; expected one of "
                              f"none, {', '.join(THINKING_BUDGET_TOKENS)}, {UNCAPPED_EFFORT} (or --no-reasoning-effort)")
        super().__init__(model, **options)

    @property
    def max_output_tokens(self) -> int | None:
        return self.max_tokens if self.max_tokens is not None else self._resolved_max_tokens

    def _model_max_tokens(self) -> int:
        """The model's own ``max_tokens`` limit from the Models API, asked once; the fallback when
        the endpoint cannot say. This lookup is not a model call and is not counted as one."""
        if self._resolved_max_tokens is None:
            try:
                limit = getattr(self._client.models.retrieve(self.model, timeout=self.timeout_s),
                                "max_tokens", None)
                why = f"gave no max_tokens for {self.model}"
            except self._sdk.AnthropicError as exc:   # e.g. a compatible server without /v1/models
                limit, why = None, f"did not answer: {type(exc).__name__}"
            if isinstance(limit, int) and limit > 0:
                self._resolved_max_tokens = limit
                self.max_tokens_source = f"Anthropic Models API: max_tokens of {self.model}"
            else:
                self._resolved_max_tokens = ANTHROPIC_FALLBACK_MAX_TOKENS
                self.max_tokens_source = f"fallback {ANTHROPIC_FALLBACK_MAX_TOKENS} (the Models API {why})"
        return self._resolved_max_tokens

    def tool_schema(self) -> list[dict]:
        return anthropic_messages.tools(self.tool_names)

    def _make_client(self, key: str) -> Any:
        import anthropic
        self._sdk = anthropic
        # the SDK appends /v1/... itself: a base URL given in the OpenAI form (.../v1) must not become /v1/v1
        base = self.base_url.rstrip("/") if self.base_url else None
        if base and base.endswith("/v1"):
            base = base[:-len("/v1")]
        return anthropic.Anthropic(api_key=key, base_url=base, max_retries=0, timeout=self.timeout_s)

    def _is_sdk_error(self, exc: Exception) -> bool:
        return isinstance(exc, self._sdk.AnthropicError)

    def _send(self, messages: list[Message]) -> Any:
        max_tokens = self.max_tokens if self.max_tokens is not None else self._model_max_tokens()
        return self._client.messages.create(
            model=self.model, max_tokens=max_tokens, timeout=self.timeout_s,
            **anthropic_messages.to_request(messages, self.tool_names, cache_breakpoints=anthropic_messages.CACHE_BREAKPOINTS),
            **self._effort_kwargs())

    def thinking_budget(self) -> int | None:
        """``budget_tokens`` for the effort: ``max_tokens - 1`` for :data:`UNCAPPED_EFFORT` (the
        largest the API accepts), else :data:`THINKING_BUDGET_TOKENS`, at most ``max_tokens -
        THINKING_REPLY_TOKENS``; None when the effort is unset or ``none``, when that is less than
        :data:`MIN_THINKING_BUDGET_TOKENS`, or (for a record written before any request) when the
        uncapped budget's ``max_tokens`` is not known yet."""
        if not self.reasoning_effort or self.reasoning_effort == "none":
            return None
        cap = self.max_output_tokens
        if cap is None:
            if not self._resolve_cap:   # a record written before any request: the table's value
                return THINKING_BUDGET_TOKENS.get(self.reasoning_effort)
            cap = self._model_max_tokens()
        if self.reasoning_effort == UNCAPPED_EFFORT:
            budget = cap - 1
        else:
            budget = min(THINKING_BUDGET_TOKENS[self.reasoning_effort], cap - THINKING_REPLY_TOKENS)
        return budget if budget >= MIN_THINKING_BUDGET_TOKENS else None

    def reasoning_record(self) -> dict:
        record = super().reasoning_record()
        if self.reasoning_effort and self.reasoning_effort != "none":
            record["thinking_budget_rule"] = (
                "max_tokens - 1, the largest budget_tokens the API accepts (the paper set no explicit limit "
                "on reasoning tokens)" if self.reasoning_effort == UNCAPPED_EFFORT else
                f"{THINKING_BUDGET_TOKENS[self.reasoning_effort]} tokens, at most max_tokens - {THINKING_REPLY_TOKENS}")
        return record

    def _effort_params(self) -> dict[str, Any]:
        if not self.reasoning_effort or self.reasoning_effort == "none":
            return {}
        budget = self.thinking_budget()
        params: dict[str, Any] = {}
        if budget is not None:
            params["thinking"] = {"type": "enabled", "budget_tokens": budget}
        params["output_config"] = {"effort": self.reasoning_effort}
        return params

    def _effort_words(self, param: str) -> tuple[str, ...]:
        return {"thinking": ("thinking", "budget_tokens"), "output_config": ("output_config", "effort")}.get(
            param, (param,))

    def _effort_note(self, params: dict[str, Any]) -> str:
        note = super()._effort_note(params)
        if self.reasoning_effort and self.reasoning_effort != "none" and "thinking" not in params:
            note += (f"; extended thinking not sent: max_tokens {self.max_output_tokens} leaves less than "
                     f"{MIN_THINKING_BUDGET_TOKENS} tokens for it")
        return note

    def _parse(self, response: Any) -> ModelReply:
        return anthropic_messages.parse_response(response)
