"""VLM agents: a tool-calling model drives the episode (``--agent openai:MODEL``,
``openai-responses:MODEL`` (the OpenAI Responses API) or ``anthropic:MODEL``).

The agent loop is provider-neutral: a :class:`~spatialscout_gym.wrappers.tool_call.ToolCallWrapper`
around the scene's registered Gymnasium env keeps the conversation and turns each tool call into
one env step, a :class:`~spatialscout_gym.conversation.providers.ModelProvider` sends the
conversation to the model. The loop ends
when the wrapper ends the episode (docs/protocol.md section 5). A service failure raises
:class:`~spatialscout_gym.conversation.providers.ModelServiceError`; the runner records the episode as
failed and leaves it out of aggregates.

Output caps (docs/protocol.md section 5): a reply the service cut off at an output-token limit
(stop reason in :data:`TRUNCATED_STOP_REASONS`) is not an answer: it is recorded in the trace
(``model_response`` with ``truncated: true`` and the stop reason; its tool calls are not run) and
the attempt fails with :class:`OutputCapError`, so the runner records a failed attempt instead of a
completed "no tool call" episode.

Records: :meth:`VLMAgent.run_records` gives the files every attempt directory holds
(``harness.json``: the full prompt and first message, the tool schema as sent, budgets, model, API
mode, reasoning and request settings, image settings; ``prompt.txt``: the same prompt as text).

Cost: with a price table ``{model: {"input_per_mtok": USD, "output_per_mtok": USD}}`` the
episode's cost is ``input_tokens * input_per_mtok / 1e6 + output_tokens * output_per_mtok / 1e6``;
an entry's optional ``cached_input_per_mtok`` prices the input tokens the service answered from its
prompt cache (``model.cached_input_tokens``) instead, and ``cache_write_per_mtok`` those it wrote to
it (``model.cache_write_input_tokens``, Anthropic; the input price where not given).

Examples
--------
>>> agent = make_vlm_agent("openai", "qwen2.5-vl", base_url="http://127.0.0.1:8000/v1",
...                        api_key="local")                            # doctest: +SKIP
>>> run_episode(agent, "procedural:7", "runs/qwen-p7")                 # doctest: +SKIP
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import math
import os
import time
import warnings
from typing import Any, Mapping

from spatialscout_gym.baselines.passive import PASSIVE_VIEWS, check_views_baseline, scripted_path
from spatialscout_gym.conversation.providers import DEFAULT_REASONING_EFFORT
from spatialscout_gym.core.errors import ConfigError, ResourceMissingError
from spatialscout_gym.core.pricing import OPTIONAL_PRICES, episode_cost
from spatialscout_gym.core.redact import redact
from spatialscout_gym.core.run_files import DELIVERED_FILE, HARNESS_FILE, PROMPT_FILE
from spatialscout_gym.conversation.messages import WIRE_FORMATS, ModelReply, clean_usage, limit_image_history
from spatialscout_gym.conversation.images import JPEG_QUALITY, MAX_SIDE_PX, delivered_size
from spatialscout_gym.conversation.prompt import DEFAULT_PROMPT_STYLE, REMINDER_AT, check_prompt_style
from spatialscout_gym.conversation.schemas import tool_schemas
from spatialscout_gym.wrappers.tool_call import ToolCallWrapper

__all__ = ["VLMAgent", "make_vlm_agent", "model_agent",
           "load_price_table", "episode_cost", "MODES", "OutputCapError", "TRUNCATED_STOP_REASONS"]

MODES = ("active", "passive", "blind")
TRUNCATED_STOP_REASONS = frozenset({"length", "max_tokens", "max_output_tokens", "model_context_window_exceeded"})
"""Stop reasons meaning "cut off at an output limit": OpenAI chat ``length``, Anthropic
``max_tokens`` / ``model_context_window_exceeded``, Responses ``max_output_tokens``."""


class OutputCapError(RuntimeError):
    """A model reply was cut off at an output-token limit: the attempt failed (it is not a
    completed episode)."""



def load_price_table(path: str | os.PathLike) -> dict[str, dict[str, float]]:
    """Read a price table JSON ``{model: {"input_per_mtok": x, "output_per_mtok": y}}`` (USD per
    million tokens); a readable ``ValueError`` names the first bad entry."""
    if not os.path.isfile(path):
        raise ResourceMissingError(f"price table {str(path)!r} does not exist; expected a JSON file "
                                   f"{{model: {{\"input_per_mtok\": x, \"output_per_mtok\": y}}}}")
    with open(path, encoding="utf-8") as f:
        try:
            table = json.load(f)
        except json.JSONDecodeError as exc:
            raise ConfigError(f"{path}: not valid JSON ({exc.msg} at line {exc.lineno})") from None
    if not isinstance(table, dict):
        raise ConfigError(f"{path}: expected an object {{model: {{input_per_mtok, output_per_mtok}}}}, "
                         f"got {type(table).__name__}")

    def price(v: Any) -> bool:
        return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and v >= 0

    known = ("input_per_mtok", "output_per_mtok", *OPTIONAL_PRICES)
    for model, row in table.items():
        unknown = sorted(set(row) - set(known)) if isinstance(row, dict) else []
        if unknown:   # a misspelt price would be dropped and the tokens priced at the input rate
            raise ConfigError(f"{path}: entry {model!r} has an unknown key {unknown[0]!r}; "
                              f"the keys are {', '.join(known)}")
        if not (isinstance(row, dict) and all(price(row.get(k)) for k in ("input_per_mtok", "output_per_mtok"))
                and all(row.get(k) is None or price(row[k]) for k in OPTIONAL_PRICES)):
            raise ConfigError(f"{path}: entry {model!r} must be {{\"input_per_mtok\": number >= 0, "
                              f"\"output_per_mtok\": number >= 0}} (optional "
                              f"{', '.join(repr(k) for k in OPTIONAL_PRICES)}), got {row!r}")
    return {m: {k: float(r[k]) for k in known if r.get(k) is not None} for m, r in table.items()}


def _served_from_cache(http: dict) -> bool:
    """Whether a call was answered from the request cache (a replay costs nothing now: the money
    was spent when the call was sent live)."""
    answers = [c for c in http.get("cache") or [] if not c.get("refused")]
    return bool(answers) and all(c.get("cached") for c in answers)


class VLMAgent:
    """A model behind a provider, driving one episode through the ten tools.

    Parameters
    ----------
    provider : ModelProvider
        Sends the conversation to the model and counts calls and HTTP attempts.
    name : str
        Registry name, e.g. ``"openai:gpt-x"``.
    mode : {"active", "passive", "blind"}
        ``passive``: the model gets ``passive_views`` fixed views (:mod:`.passive`) and the camera
        tools are refused. ``blind``: as ``active``, but no image is sent (each frame's caption says
        it is withheld): the blind control.
    model_call_budget : int
        B (docs/protocol.md section 5: 100).
    passive_views : int
        Frames in passive mode, frame 0 included.
    price_table : dict, optional
        See :func:`load_price_table`.
    prompt_style : {"appendix-a", "content-list", "detailed", "legacy"}
        Wording of prompt, first message and reminders (:mod:`spatialscout_gym.conversation.prompt`);
        ``legacy`` only when asked for by name. Recorded in every result.
    image_max_side : int
        Longest side of a delivered image, pixels (docs/protocol.md section 3: 384). Recorded.
    request_limiter : context manager, optional
        Entered around each model request (the evaluation's ``--max-concurrency``).
    image_history : int, optional
        Send only the last ``image_history`` images with each request, older ones replaced by a
        note after their captions (:func:`~spatialscout_gym.conversation.messages.limit_image_history`);
        None (default) sends every image, as the paper does. Recorded in ``result.json``.
    """

    privileged = False
    counts_model_calls = True
    """The runner gives the episode no tool-call budget: this agent counts model calls (B)."""

    def __init__(self, provider: Any, *, name: str, mode: str = "active", model_call_budget: int = 100,
                 passive_views: int = PASSIVE_VIEWS,
                 price_table: Mapping[str, Mapping[str, float]] | None = None,
                 prompt_style: str = DEFAULT_PROMPT_STYLE, image_max_side: int = MAX_SIDE_PX,
                 request_limiter: Any = None, image_history: int | None = None) -> None:
        if mode not in MODES:
            raise ConfigError(f"mode must be one of {MODES}, got {mode!r}")
        if int(model_call_budget) < 1:
            raise ConfigError(f"model_call_budget must be >= 1, got {model_call_budget}")
        self.provider = provider
        self.name = name
        self.mode = mode
        self.request_cache_dir: str | os.PathLike | None = None   # conversation/request_cache.py; off by default
        self.model_call_budget = int(model_call_budget)
        self.passive_views = int(passive_views)
        self.price_table = dict(price_table) if price_table else None
        self.prompt_style = check_prompt_style(prompt_style)
        if not 16 <= int(image_max_side) <= 4096:
            raise ConfigError(f"image_max_side must be between 16 and 4096 pixels, got {image_max_side}")
        self.image_max_side = int(image_max_side)
        if image_history is not None and int(image_history) < 0:
            raise ConfigError(f"image_history must be >= 0 images or None (keep all), got {image_history}")
        self.image_history = None if image_history is None else int(image_history)
        self.request_limiter = request_limiter if request_limiter is not None else contextlib.nullcontext()
        self.spend_ledger: Any = None   # conversation/spend.py SpendLedger: --max-cost-usd
        self.wrapper: ToolCallWrapper | None = None
        self.passive_frames: list[int] | None = None
        self.passive_baseline_m: float | None = None
        self.warnings: list[str] = []

    def run_env(self, env: Any, *, seed: int = 0) -> None:
        """Wrap ``env`` (a SpatialScout env, possibly wrapped) in a :class:`ToolCallWrapper`, reset
        it and alternate model calls and env steps until the episode ends.

        Raises
        ------
        ModelServiceError
            The model service failed (the runner records the episode as failed).
        OutputCapError
            A reply was cut off at an output-token limit (the attempt failed).
        CostCapReached
            The run's spend reached its cap before a request (:attr:`spend_ledger`).
        """
        w = self.begin_episode(env, seed=seed)
        self.failed_call_http = None
        while not w.done:
            if self.spend_ledger is not None:
                self.spend_ledger.check()   # the run's spend reached --max-cost-usd: no request
            messages = limit_image_history(w.request(), self.image_history)
            marks = self._call_marks()
            try:
                with self.request_limiter:
                    reply = self.provider.complete(messages)
            except BaseException:
                self.failed_call_http = self._call_record(marks)[0]   # traced with the failure
                raise
            http, cache_parts = self._call_record(marks)
            reply = dataclasses.replace(reply, usage={**reply.usage, **cache_parts}, http=http)
            if self.spend_ledger is not None and not _served_from_cache(http):
                self.spend_ledger.add(episode_cost(clean_usage(reply.usage), getattr(self.provider, "model", ""),
                                                   self.price_table) or 0.0)
            self.take_reply(reply)

    def _call_marks(self) -> tuple[int, int, int, int, int, int]:
        """Where the provider's (and the request cache's) running counts stand before a call."""
        p, cache = self.provider, getattr(self, "request_cache", None)
        return (int(getattr(p, "http_attempts", 0) or 0), len(getattr(p, "failures", []) or []),
                len(getattr(p, "waits", []) or []), int(getattr(p, "cached_input_tokens", 0) or 0),
                int(getattr(p, "cache_write_input_tokens", 0) or 0), len(cache.calls) if cache is not None else 0)

    def _call_record(self, marks: tuple[int, int, int, int, int, int]) -> tuple[dict, dict]:
        """One call's HTTP record for the trace (its attempts, failures, rate-limit waits and request
        cache answers: the growth of the provider's counts since ``marks``) and its prompt-cache
        token counts, which go into the reply's usage."""
        p, cache = self.provider, getattr(self, "request_cache", None)
        now = self._call_marks()
        http: dict[str, Any] = {"attempts": now[0] - marks[0],
                                "failures": [redact(f) for f in (getattr(p, "failures", []) or [])[marks[1]:]],
                                "waits": [dict(x) for x in (getattr(p, "waits", []) or [])[marks[2]:]]}
        if cache is not None:
            http["cache"] = [{"cached": bool(c.get("cached")), **({"refused": True} if c.get("refused") else {})}
                             for c in cache.calls[marks[5]:]]
        return http, {"cached_input_tokens": now[3] - marks[3], "cache_write_input_tokens": now[4] - marks[4]}

    def begin_episode(self, env: Any, *, seed: int = 0) -> ToolCallWrapper:
        """Wrap ``env`` in this agent's :class:`ToolCallWrapper` and reset it; the caller then
        alternates ``wrapper.request()``, a model call and :meth:`take_reply` until
        ``wrapper.done`` (:meth:`run_env` does; so does a harness with its own model client)."""
        passive = self.mode == "passive"
        self.wrapper = w = ToolCallWrapper(env, model_call_budget=self.model_call_budget,
                                           passive_views=self.passive_views if passive else None,
                                           passive_path=scripted_path() if passive else None,
                                           max_side=self.image_max_side, prompt_style=self.prompt_style,
                                           blind=self.mode == "blind",
                                           clock=time.time,   # tool_call events get execution times
                                           wire_format=getattr(self.provider, "api_mode", None)
                                           if getattr(self.provider, "api_mode", None) in WIRE_FORMATS else None)
        self.provider.tool_names = w.tool_names   # passive mode: only the enabled tools are sent
        if self.request_cache_dir:
            from spatialscout_gym.conversation.request_cache import RequestCache
            self.request_cache = RequestCache(self.request_cache_dir, seed).install(self.provider)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            w.reset(seed=seed)
            if passive:
                self.passive_frames = sorted(w.episode.frames)
                self.passive_baseline_m = check_views_baseline(w.episode, self.passive_frames)
        for wmsg in caught:
            self.warnings.append(str(wmsg.message))
            warnings.warn_explicit(wmsg.message, wmsg.category, wmsg.filename, wmsg.lineno)
        return w

    def take_reply(self, reply: ModelReply) -> None:
        """Run one model reply's tool calls on the episode; a reply cut off at an output-token
        limit is recorded and raises :class:`OutputCapError` instead."""
        wrapper = self.wrapper
        assert wrapper is not None, "take_reply runs inside an episode (start_episode first)"
        if reply.stop_reason in TRUNCATED_STOP_REASONS:
            self._fail_truncated(wrapper, reply)
        wrapper.step(reply)

    @property
    def end_reason(self) -> str | None:
        return self.wrapper.end_reason if self.wrapper is not None else None

    def trace(self) -> list[dict]:
        events = self.wrapper.trace() if self.wrapper is not None else []
        cache = getattr(self, "request_cache", None)
        if cache is not None:   # mark each model response answered from the request cache
            answered = [c for c in cache.calls if not c.get("refused")]   # a refused effort has no response
            for e in events:
                i = e.get("model_call_index")
                if e.get("event") == "model_response" and isinstance(i, int) and i < len(answered):
                    e["cached"] = answered[i]["cached"]
        return events

    def _fail_truncated(self, w: ToolCallWrapper, reply: ModelReply) -> None:
        """Record a cut-off reply in the trace (its tool calls are not run) and fail the attempt."""
        index = w.model_calls - 1
        w.record_truncated(reply)
        cap = getattr(self.provider, "max_output_tokens", None)
        source = getattr(self.provider, "max_tokens_source", "")
        if cap is not None:
            who = (f"at the output-token cap the harness sent (max_tokens={cap}, {source}); rerun "
                   f"without --max-tokens or with a larger value")
        else:
            who = "by the service (no output cap was sent); the model's own output limit was reached"
        raise OutputCapError(f"model call {index + 1} was cut off {who} (stop reason "
                             f"{reply.stop_reason!r}); a cut-off reply fails the attempt")

    # ---- records -------------------------------------------------------------------------------
    def harness_settings(self) -> dict:
        """What this agent sent and how (``harness.json``; docs/protocol.md section 7)."""
        w = self.wrapper
        provider_settings = (self.provider.settings() if callable(getattr(self.provider, "settings", None))
                             else {"provider": getattr(self.provider, "provider", None),
                                   "name": getattr(self.provider, "model", None)})
        schema = (self.provider.tool_schema() if callable(getattr(self.provider, "tool_schema", None))
                  else tool_schemas(w.tool_names if w else None))
        ep = w.episode if w is not None and w.messages else None   # None before reset
        role = w.prompt_role if w else None
        opening = [m for m in (w.messages if w else []) if m.role in ("system", "user")][:2]
        prompt = None if not opening else (opening[0].text if role == "system" else opening[0].content[0])
        first = None if not opening else (opening[1] if role == "system" and len(opening) > 1 else opening[0])
        size = delivered_size(ep.intrinsics.width, ep.intrinsics.height, self.image_max_side) if ep else None
        return {
            "agent": self.name, "prompt_style": self.prompt_style, "mode": self.mode,
            "prompt_role": role,
            "reasoning_effort": (getattr(self.provider, "reasoning_effort", None) or "none sent"),
            "reasoning": (self.provider.reasoning_record()
                          if callable(getattr(self.provider, "reasoning_record", None)) else None),
            "model": provider_settings,
            "budgets": {"model_call_budget": self.model_call_budget,
                        "image_budget": ep.image_budget if ep else None,
                        "tool_call_budget": ep.tool_call_budget if ep else None,
                        "reminders_at_calls_left": list(REMINDER_AT)},
            "images": {"max_side_px": self.image_max_side, "jpeg_quality": JPEG_QUALITY, "history": self.image_history,
                       "delivered_size": list(size) if size else None,
                       "render_size": [ep.intrinsics.width, ep.intrinsics.height] if ep else None},
            "passive": ({"views": self.passive_views, "frames": self.passive_frames,
                         "baseline_m": self.passive_baseline_m} if self.mode == "passive" else None),
            "warnings": list(self.warnings),
            "task_prompt": prompt,
            "system_prompt": prompt if role == "system" else None,
            "first_message": ([p if isinstance(p, str) else p.reference() for p in first.content]
                              if first else None),
            "tool_names": list(w.tool_names) if w else None,
            "tool_schema": schema,
            "request_cache": self.request_cache_dir is not None,
        }

    def run_records(self) -> dict[str, Any]:
        """Files for the attempt directory: ``{name: dict (JSON) or str (text)}``."""
        h = self.harness_settings()
        text = prompt_file_text(self.prompt_style, h["prompt_role"], h["task_prompt"], h["first_message"])
        cache = getattr(self, "request_cache", None)
        return {HARNESS_FILE: h, PROMPT_FILE: text, DELIVERED_FILE: self.delivered_hashes(),
                **({"request_cache.json": cache.record()} if cache else {})}

    def delivered_hashes(self) -> dict:
        """SHA-256 of the bytes the model received for every delivered image (the JPEG), by frame
        id, with the encoding settings (``verify --images`` re-encodes a re-render with them)."""
        seen: dict[str, str] = {}
        for m in (self.wrapper.messages if self.wrapper is not None else []):
            for part in m.content:
                if not isinstance(part, str) and hasattr(part, "jpeg"):
                    seen[str(part.frame_id)] = hashlib.sha256(part.jpeg).hexdigest()
        return {"max_side_px": self.image_max_side, "jpeg_quality": JPEG_QUALITY, "jpeg_sha256": seen}

    def _effort_sent(self) -> dict:
        record = getattr(self.provider, "reasoning_record", None)
        return dict(record().get("sent_as") or {}) if callable(record) else {}

    def extra_result(self) -> dict:
        """Model-side figures for ``result.json``: calls, HTTP attempts, tokens, cost, mode."""
        w = self.wrapper
        usage = dict(w.usage) if w else {"input_tokens": 0, "output_tokens": 0}
        cached = int(getattr(self.provider, "cached_input_tokens", 0) or 0)
        written = int(getattr(self.provider, "cache_write_input_tokens", 0) or 0)
        return {"model": {
            "provider": getattr(self.provider, "provider", None),
            "name": getattr(self.provider, "model", None),
            # The endpoint is never written (it can name a private host); only whether one was set.
            "custom_endpoint": getattr(self.provider, "base_url", None) is not None,
            "api_mode": getattr(self.provider, "api_mode", None),
            "reasoning_effort": getattr(self.provider, "reasoning_effort", None),
            "reasoning_effort_source": getattr(self.provider, "reasoning_effort_source", None),
            # parameters the service refused: the run went on without them (harness.json has the words)
            "reasoning_effort_refused": sorted(getattr(self.provider, "effort_refused", {}) or {}),
            # the effort parameters still sent after any refusal ({}: none)
            "reasoning_effort_sent": self._effort_sent(),
            "max_output_tokens": getattr(self.provider, "max_output_tokens", None),
            "max_output_tokens_source": getattr(self.provider, "max_tokens_source", None),
            "prompt_style": self.prompt_style, "image_max_side_px": self.image_max_side,
            "warnings": list(self.warnings),
            "mode": self.mode, "model_call_budget": self.model_call_budget,
            "image_history": self.image_history,
            "model_calls": w.model_calls if w else 0,
            "http_attempts": int(getattr(self.provider, "http_attempts", 0)),
            "attempt_failures": [redact(f) for f in getattr(self.provider, "failures", [])],
            # waits for rate limits (HTTP 429, Retry-After, the per-minute limits): counted and listed
            "rate_limit_waits": len(getattr(self.provider, "waits", [])),
            "rate_limit_wait_s": round(sum(w["seconds"] for w in getattr(self.provider, "waits", [])), 3),
            "waits": list(getattr(self.provider, "waits", [])),
            "usage": usage,
            # input tokens the service answered from its prompt cache (part of usage's input_tokens)
            "cached_input_tokens": cached,
            # input tokens the service wrote to its prompt cache (Anthropic cache_control; part of input_tokens)
            "cache_write_input_tokens": written,
            "cost_usd": episode_cost({**usage, "cached_input_tokens": cached, "cache_write_input_tokens": written},
                                     getattr(self.provider, "model", ""),
                                     self.price_table),
            **self._cache_figures(),
        }}

    def _cache_figures(self) -> dict:
        """With the request cache: calls answered from it and sent live, and the cost this run
        incurred (live calls only; ``cost_usd`` stays the episode's)."""
        cache = getattr(self, "request_cache", None)
        if cache is None:
            return {}
        live = cache.live_usage()
        return {"request_cache": {"cached_calls": sum(c["cached"] for c in cache.calls),
                                  "live_calls": sum(not c["cached"] for c in cache.calls)},
                "usage_incurred": live,
                "cost_incurred_usd": episode_cost(live, getattr(self.provider, "model", ""), self.price_table)}


def prompt_file_text(style: str, role: str | None, task_prompt: str | None, first_message: list | None) -> str:
    """``prompt.txt`` of a model run: the task prompt of ``style`` as sent in ``role``, then the
    first user message (images by file). ``verify`` rebuilds it from the replay and compares exactly."""
    where = ("the system message" if role == "system" else
             "the opening of the first user message, which goes on below")
    return (f"# task prompt ({style} wording, sent as {where})\n\n{task_prompt}\n\n"
            f"# first user message (images by file)\n\n"
            + "\n".join(p if isinstance(p, str) else json.dumps(p) for p in (first_message or [])) + "\n")


def make_vlm_agent(provider: str, model: str, *, base_url: str | None = None, api_key: str | None = None,
                   reasoning_effort: str | None = DEFAULT_REASONING_EFFORT, max_tokens: int | None = None,
                   mode: str = "active", model_call_budget: int = 100, passive_views: int = PASSIVE_VIEWS,
                   price_table: Mapping[str, Mapping[str, float]] | str | None = None,
                   prompt_style: str = DEFAULT_PROMPT_STYLE, image_max_side: int = MAX_SIDE_PX,
                   image_history: int | None = None, request_cache: str | os.PathLike | None = None,
                   price_table_sha256: str | None = None, **provider_options: Any) -> VLMAgent:
    """Build a :class:`VLMAgent` for the model service ``provider`` (a name of
    :data:`~spatialscout_gym.conversation.providers.PROVIDERS`: ``"openai"``, ``"openai-responses"``,
    ``"anthropic"``, or one registered with ``model_api``) and ``model``.

    ``reasoning_effort`` defaults to the paper's ``xhigh``; None sends none (docs/protocol.md
    section 10). ``price_table`` may be a path (see :func:`load_price_table`). ``provider_options``
    go to the provider (``reasoning_effort_source``, ``require_effort``, ``timeout_s``, ``attempts``,
    ``backoff_s``, ``rate_limit_wait_s``, ``sleep``), but ``max_cost_usd`` sets the agent's
    :class:`~spatialscout_gym.conversation.spend.SpendLedger` and ``requests_per_minute``,
    ``tokens_per_minute`` and ``rate_limit_window_s`` build its
    :class:`~spatialscout_gym.conversation.rate_limits.RateLimiter`.
    """
    from spatialscout_gym.conversation.providers import provider_entry
    entry = provider_entry(provider)
    if isinstance(price_table, (str, os.PathLike)):
        if price_table_sha256 is not None:   # a resumed evaluation: the table it began with, byte for byte
            import hashlib
            try:
                with open(price_table, "rb") as fh:
                    same = hashlib.sha256(fh.read()).hexdigest() == price_table_sha256
            except OSError:
                same = True   # unreadable: load_price_table says so in one line
            if not same:
                raise ConfigError(f"price table {os.fspath(price_table)} changed since the evaluation began "
                                  "(its SHA-256 differs from the one recorded); restore it or use another --out")
        price_table = load_price_table(price_table)
    if "reasoning_effort_source" not in provider_options:
        provider_options["reasoning_effort_source"] = (
            "default: the paper's (Table 3)" if reasoning_effort == DEFAULT_REASONING_EFFORT else
            "set by the caller" if reasoning_effort else "none sent (set by the caller)")
    max_cost_usd = provider_options.pop("max_cost_usd", None)
    limits = {k: provider_options.pop(k) for k in ("requests_per_minute", "tokens_per_minute", "rate_limit_window_s")
              if k in provider_options}
    client = entry.client(model, api_key=api_key, base_url=base_url, max_tokens=max_tokens,
                               reasoning_effort=reasoning_effort, **provider_options)
    if limits.get("requests_per_minute") is not None or limits.get("tokens_per_minute") is not None:
        # in memory here; ``evaluate`` shares it through a file in the evaluation directory
        from spatialscout_gym.conversation.rate_limits import WINDOW_S, RateLimiter
        client.rate_limiter = RateLimiter(limits.get("requests_per_minute"), limits.get("tokens_per_minute"),
                                          window_s=limits.get("rate_limit_window_s") or WINDOW_S)
    agent = VLMAgent(client, name=f"{provider}:{model}", mode=mode,
                     model_call_budget=model_call_budget, passive_views=passive_views,
                     price_table=price_table, prompt_style=prompt_style, image_max_side=image_max_side,
                     image_history=image_history)
    agent.request_cache_dir = request_cache   # conversation/request_cache.py; off by default
    if max_cost_usd is not None:
        if not price_table or model not in price_table:
            raise ConfigError(f"max_cost_usd needs the price of {model} (--price-table with an entry for it)")
        from spatialscout_gym.conversation.spend import SpendLedger
        agent.spend_ledger = SpendLedger(max_cost_usd)   # ``evaluate`` shares it through DIR/spend.json
    return agent


def model_agent(provider: str, model: str, **options: Any) -> VLMAgent:
    """Registry factory for ``PROVIDER:MODEL`` (every registered model service)."""
    return make_vlm_agent(provider, model, **options)
