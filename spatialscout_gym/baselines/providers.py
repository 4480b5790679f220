"""Model services behind the VLM agent: OpenAI chat-completions, OpenAI Responses and Anthropic
messages clients (``api_mode``: ``chat_completions``, ``responses``, ``messages``).

Each provider turns the neutral conversation of :mod:`spatialscout_gym.wrappers.conversation` into
one request (wire formats: :mod:`spatialscout_gym.baselines.wire`) with the real SDK client, and its response into a
:class:`~spatialscout_gym.wrappers.conversation.ModelReply`.

Requests follow docs/protocol.md section 5: a 180 s timeout per HTTP request and up to 3 attempts with
1 s and 2 s backoff on network failure (connection errors, timeouts, HTTP 5xx and 429). The SDKs'
own retries are off (``max_retries=0``) so that logical model calls (:attr:`ModelProvider.calls`)
and HTTP attempts (:attr:`ModelProvider.http_attempts`) are counted apart. Any other failure, or
the last failed attempt, raises :class:`ModelServiceError`; the runner then records the episode
as failed.

The SDKs are imported when a provider is built, never at package import.
"""

from __future__ import annotations

import os
import time
from typing import Any, Callable, Sequence

from spatialscout_gym.baselines.wire import (anthropic_tools, openai_tools, responses_tools, to_anthropic_messages,
                                             to_openai_messages, to_responses_input)
from spatialscout_gym.wrappers.conversation import Message, ModelReply, ToolCall

__all__ = ["ModelProvider", "OpenAIProvider", "OpenAIResponsesProvider", "AnthropicProvider", "ModelServiceError",
           "TIMEOUT_S", "ATTEMPTS", "BACKOFF_S"]

TIMEOUT_S = 180.0
"""Per-HTTP-request timeout, seconds."""
ATTEMPTS = 3
"""HTTP attempts per logical model call."""
BACKOFF_S: tuple[float, ...] = (1.0, 2.0)
"""Waits before the second and third attempts, seconds."""


class ModelServiceError(RuntimeError):
    """A model call failed: the service refused it, or every attempt failed on the network."""


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
        Output token limit per response.
    reasoning_effort : str, optional
        Passed through to the service (OpenAI ``reasoning_effort``; Anthropic ``output_config.effort``).
    timeout_s, attempts, backoff_s :
        The retry policy (defaults: docs/protocol.md section 5).
    sleep : callable
        Waits between attempts (``time.sleep``; tests pass a recorder).

    Attributes
    ----------
    calls : int
        Logical model calls.
    http_attempts : int
        HTTP attempts over all calls (>= ``calls``).
    failures : list of str
        One line per failed attempt.
    """

    provider = "base"
    api_mode = ""
    """The service API this provider speaks (recorded with every result)."""
    env_var = ""

    def __init__(self, model: str, *, api_key: str | None = None, base_url: str | None = None,
                 max_tokens: int | None = None, reasoning_effort: str | None = None,
                 timeout_s: float = TIMEOUT_S, attempts: int = ATTEMPTS,
                 backoff_s: Sequence[float] = BACKOFF_S, sleep: Callable[[float], None] = time.sleep) -> None:
        if not model:
            raise ValueError(f"a {self.provider} model name is required, e.g. {self.provider}:MODEL")
        if int(attempts) < 1:
            raise ValueError(f"attempts must be >= 1, got {attempts}")
        if len(backoff_s) < int(attempts) - 1:
            raise ValueError(f"backoff_s needs one wait per retry ({int(attempts) - 1}), got {list(backoff_s)}")
        if max_tokens is not None and int(max_tokens) < 1:
            raise ValueError(f"max_tokens must be >= 1, got {max_tokens}")
        key = api_key if api_key is not None else os.environ.get(self.env_var)
        if not key:
            raise ValueError(f"no API key for {self.provider}: set {self.env_var} or pass --api-key "
                             f"(any placeholder string works for a local server without keys)")
        self.model = model
        self.base_url = base_url
        self.max_tokens = None if max_tokens is None else int(max_tokens)
        self.reasoning_effort = reasoning_effort
        self.timeout_s = float(timeout_s)
        self.attempts = int(attempts)
        self.backoff_s = tuple(float(b) for b in backoff_s)
        self._sleep = sleep
        self.calls = 0
        self.http_attempts = 0
        self.failures: list[str] = []
        self._client = self._make_client(key)

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

        Raises
        ------
        ModelServiceError
            A non-retryable error, or the last attempt failed.
        """
        self.calls += 1
        for attempt in range(1, self.attempts + 1):
            self.http_attempts += 1
            try:
                response = self._send(messages)
            except Exception as exc:  # the SDKs' error classes; anything else is a bug and re-raised
                if not self._is_sdk_error(exc):
                    raise
                line = f"call {self.calls} attempt {attempt}: {type(exc).__name__}: {exc}"
                self.failures.append(line)
                if not self._retryable(exc):
                    raise ModelServiceError(f"{self.provider} refused the request ({line}); check the "
                                            f"model name, key and options") from exc
                if attempt == self.attempts:
                    raise ModelServiceError(f"{self.provider} model call {self.calls} failed after "
                                            f"{self.attempts} attempts; last: {line}") from exc
                self._sleep(self.backoff_s[attempt - 1])
                continue
            reply = self._parse(response)
            reply.attempts = attempt
            return reply
        raise AssertionError("unreachable")

    def _is_sdk_error(self, exc: Exception) -> bool:
        raise NotImplementedError


def _status(exc: Exception) -> int | None:
    code = getattr(exc, "status_code", None)
    return int(code) if isinstance(code, int) else None


class OpenAIProvider(ModelProvider):
    """The OpenAI chat-completions API (or any compatible server via ``base_url``).

    ``max_tokens`` is sent as ``max_completion_tokens`` to the OpenAI service and as ``max_tokens``
    to a custom ``base_url`` (what local servers read).
    """

    provider = "openai"
    api_mode = "chat_completions"
    env_var = "OPENAI_API_KEY"

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
        if self.reasoning_effort:
            kwargs["reasoning_effort"] = self.reasoning_effort
        return self._client.chat.completions.create(
            model=self.model, messages=to_openai_messages(messages), tools=openai_tools(),
            tool_choice="auto", timeout=self.timeout_s, **kwargs)

    def _parse(self, response: Any) -> ModelReply:
        if not getattr(response, "choices", None):
            raise ModelServiceError(f"openai response without choices: {str(response)[:300]}")
        choice = response.choices[0]
        msg = choice.message
        calls = [ToolCall(tc.id, tc.function.name, tc.function.arguments)
                 for tc in (msg.tool_calls or []) if getattr(tc, "function", None) is not None]
        usage = {}
        if response.usage is not None:
            usage = {"input_tokens": int(response.usage.prompt_tokens or 0),
                     "output_tokens": int(response.usage.completion_tokens or 0)}
        return ModelReply(msg.content or "", calls, usage, stop_reason=choice.finish_reason)


class OpenAIResponsesProvider(OpenAIProvider):
    """The OpenAI Responses API (``client.responses.create``), the same loop, prompt and tools.

    Each request replays the previous turns' output items (reasoning items, function calls,
    messages) and answers every function call with a ``function_call_output``
    (:func:`~spatialscout_gym.baselines.wire.to_responses_input`); ``reasoning_effort`` is sent as
    ``reasoning={"effort": ...}`` and ``max_tokens`` as ``max_output_tokens``.
    """

    provider = "openai-responses"
    api_mode = "responses"

    def _send(self, messages: list[Message]) -> Any:
        instructions, items = to_responses_input(messages)
        kwargs: dict[str, Any] = {}
        if self.max_tokens is not None:
            kwargs["max_output_tokens"] = self.max_tokens
        if self.reasoning_effort:
            kwargs["reasoning"] = {"effort": self.reasoning_effort}
        return self._client.responses.create(model=self.model, instructions=instructions, input=items,
                                             tools=responses_tools(), tool_choice="auto", timeout=self.timeout_s,
                                             **kwargs)

    def _parse(self, response: Any) -> ModelReply:
        output = getattr(response, "output", None)
        if output is None:
            raise ModelServiceError(f"openai responses reply without output: {str(response)[:300]}")
        texts, calls = [], []
        for item in output:
            kind = getattr(item, "type", None)
            if kind == "function_call":
                calls.append(ToolCall(item.call_id, item.name, item.arguments))
            elif kind == "message":
                texts += [c.text for c in (item.content or []) if getattr(c, "type", None) == "output_text"]
        usage = {}
        if response.usage is not None:
            usage = {"input_tokens": int(response.usage.input_tokens or 0),
                     "output_tokens": int(response.usage.output_tokens or 0)}
        incomplete = getattr(response, "incomplete_details", None)
        stop = getattr(incomplete, "reason", None) if incomplete is not None else None
        return ModelReply("\n".join(texts), calls, usage, stop_reason=stop or getattr(response, "status", None),
                          provider_content=[item.model_dump(mode="json", exclude_none=True) for item in output])


class AnthropicProvider(ModelProvider):
    """The Anthropic messages API (``max_tokens`` defaults to 8192, the API requires one)."""

    provider = "anthropic"
    api_mode = "messages"
    env_var = "ANTHROPIC_API_KEY"
    default_max_tokens = 8192

    def _make_client(self, key: str) -> Any:
        import anthropic
        self._sdk = anthropic
        return anthropic.Anthropic(api_key=key, base_url=self.base_url, max_retries=0, timeout=self.timeout_s)

    def _is_sdk_error(self, exc: Exception) -> bool:
        return isinstance(exc, self._sdk.AnthropicError)

    def _send(self, messages: list[Message]) -> Any:
        system, msgs = to_anthropic_messages(messages)
        kwargs: dict[str, Any] = {}
        if self.reasoning_effort:
            kwargs["output_config"] = {"effort": self.reasoning_effort}
        return self._client.messages.create(
            model=self.model, max_tokens=self.max_tokens or self.default_max_tokens, system=system,
            messages=msgs, tools=anthropic_tools(), timeout=self.timeout_s, **kwargs)

    def _parse(self, response: Any) -> ModelReply:
        texts, calls, replay = [], [], False
        for block in response.content or []:
            kind = getattr(block, "type", None)
            if kind == "text":
                texts.append(block.text)
            elif kind == "tool_use":
                calls.append(ToolCall(block.id, block.name, block.input))
            elif kind in ("thinking", "redacted_thinking"):
                replay = True
        usage = {}
        if response.usage is not None:
            usage = {"input_tokens": int(response.usage.input_tokens or 0),
                     "output_tokens": int(response.usage.output_tokens or 0)}
        content = ([b.model_dump(mode="json", exclude_none=True) for b in response.content]
                   if replay else None)  # thinking blocks must be sent back verbatim
        return ModelReply("\n".join(texts), calls, usage, provider_content=content,
                          stop_reason=response.stop_reason)
