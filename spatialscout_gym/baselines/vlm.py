"""VLM agents: a tool-calling model drives the episode (``--agent openai:MODEL``,
``openai-responses:MODEL`` (the OpenAI Responses API) or ``anthropic:MODEL``).

The agent loop is provider-neutral: a :class:`~spatialscout_gym.wrappers.tool_call.ToolCallWrapper`
around the scene's registered Gymnasium env keeps the conversation and turns each tool call into
one env step, a :class:`~spatialscout_gym.baselines.providers.ModelProvider` sends the
conversation to the model. The loop ends
when the wrapper ends the episode (docs/protocol.md section 5). A service failure raises
:class:`~spatialscout_gym.baselines.providers.ModelServiceError`; the runner records the episode as
failed and leaves it out of aggregates.

Cost: with a price table ``{model: {"input_per_mtok": USD, "output_per_mtok": USD}}`` the
episode's cost is ``input_tokens * input_per_mtok / 1e6 + output_tokens * output_per_mtok / 1e6``.

Examples
--------
>>> agent = make_vlm_agent("openai", "qwen2.5-vl", base_url="http://127.0.0.1:8000/v1",
...                        api_key="local")                            # doctest: +SKIP
>>> run_episode(agent, "procedural:7", "runs/qwen-p7")                 # doctest: +SKIP
"""

from __future__ import annotations

import contextlib
import json
import os
from typing import Any, Mapping

from spatialscout_gym.baselines.passive import PASSIVE_VIEWS, scripted_path
from spatialscout_gym.wrappers.conversation import limit_image_history
from spatialscout_gym.wrappers.tool_call import ToolCallWrapper

__all__ = ["VLMAgent", "make_vlm_agent", "openai_agent", "openai_responses_agent", "anthropic_agent", "load_price_table",
           "episode_cost", "MODES"]

MODES = ("active", "passive")


def load_price_table(path: str | os.PathLike) -> dict[str, dict[str, float]]:
    """Read a price table JSON ``{model: {"input_per_mtok": x, "output_per_mtok": y}}`` (USD per
    million tokens); a readable ``ValueError`` names the first bad entry."""
    with open(path, encoding="utf-8") as f:
        try:
            table = json.load(f)
        except json.JSONDecodeError as exc:
            raise ValueError(f"{path}: not valid JSON ({exc.msg} at line {exc.lineno})") from None
    if not isinstance(table, dict):
        raise ValueError(f"{path}: expected an object {{model: {{input_per_mtok, output_per_mtok}}}}, "
                         f"got {type(table).__name__}")
    for model, row in table.items():
        if not (isinstance(row, dict) and all(isinstance(row.get(k), (int, float)) and row[k] >= 0
                                              for k in ("input_per_mtok", "output_per_mtok"))):
            raise ValueError(f"{path}: entry {model!r} must be {{\"input_per_mtok\": number >= 0, "
                             f"\"output_per_mtok\": number >= 0}}, got {row!r}")
    return {m: {k: float(r[k]) for k in ("input_per_mtok", "output_per_mtok")} for m, r in table.items()}


def episode_cost(usage: Mapping[str, int], model: str,
                 price_table: Mapping[str, Mapping[str, float]] | None) -> float | None:
    """USD for ``usage`` at ``model``'s prices; None without a table or an entry for the model."""
    if not price_table or model not in price_table:
        return None
    p = price_table[model]
    return (usage.get("input_tokens", 0) * p["input_per_mtok"]
            + usage.get("output_tokens", 0) * p["output_per_mtok"]) / 1e6


class VLMAgent:
    """A model behind a provider, driving one episode through the ten tools.

    Parameters
    ----------
    provider : ModelProvider
        Sends the conversation to the model and counts calls and HTTP attempts.
    name : str
        Registry name, e.g. ``"openai:gpt-x"``.
    mode : {"active", "passive"}
        ``passive``: the model gets ``passive_views`` fixed views (:mod:`.passive`) and the camera
        tools are refused.
    model_call_budget : int
        B (docs/protocol.md section 5: 100).
    passive_views : int
        Frames in passive mode, frame 0 included.
    price_table : dict, optional
        See :func:`load_price_table`.
    request_limiter : context manager, optional
        Entered around each model request (the evaluation's ``--max-concurrency``).
    image_history : int, optional
        Send only the last ``image_history`` images with each request, older ones replaced by a
        note after their captions (:func:`~spatialscout_gym.wrappers.conversation.limit_image_history`);
        None (default) sends every image, as the paper does. Recorded in ``result.json``.
    """

    privileged = False
    counts_model_calls = True
    """The runner gives the episode no tool-call budget: this agent counts model calls (B)."""

    def __init__(self, provider: Any, *, name: str, mode: str = "active", model_call_budget: int = 100,
                 passive_views: int = PASSIVE_VIEWS,
                 price_table: Mapping[str, Mapping[str, float]] | None = None,
                 request_limiter: Any = None, image_history: int | None = None) -> None:
        if mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
        if int(model_call_budget) < 1:
            raise ValueError(f"model_call_budget must be >= 1, got {model_call_budget}")
        self.provider = provider
        self.name = name
        self.mode = mode
        self.model_call_budget = int(model_call_budget)
        self.passive_views = int(passive_views)
        self.price_table = dict(price_table) if price_table else None
        if image_history is not None and int(image_history) < 0:
            raise ValueError(f"image_history must be >= 0 images or None (keep all), got {image_history}")
        self.image_history = None if image_history is None else int(image_history)
        self.request_limiter = request_limiter if request_limiter is not None else contextlib.nullcontext()
        self.wrapper: ToolCallWrapper | None = None

    def run_env(self, env: Any, *, seed: int = 0) -> None:
        """Wrap ``env`` (a SpatialScout env, possibly wrapped) in a :class:`ToolCallWrapper`, reset
        it and alternate model calls and env steps until the episode ends.

        Raises
        ------
        ModelServiceError
            The model service failed (the runner records the episode as failed).
        """
        passive = self.mode == "passive"
        self.wrapper = w = ToolCallWrapper(env, model_call_budget=self.model_call_budget,
                                           passive_views=self.passive_views if passive else None,
                                           passive_path=scripted_path() if passive else None)
        w.reset(seed=seed)
        while not w.done:
            messages = limit_image_history(w.request(), self.image_history)
            with self.request_limiter:
                reply = self.provider.complete(messages)
            w.step(reply)

    @property
    def end_reason(self) -> str | None:
        return self.wrapper.end_reason if self.wrapper is not None else None

    def trace(self) -> list[dict]:
        return self.wrapper.trace() if self.wrapper is not None else []

    def extra_result(self) -> dict:
        """Model-side figures for ``result.json``: calls, HTTP attempts, tokens, cost, mode."""
        w = self.wrapper
        usage = dict(w.usage) if w else {"input_tokens": 0, "output_tokens": 0}
        return {"model": {
            "provider": self.provider.provider,
            "api_mode": self.provider.api_mode,
            "name": self.provider.model,
            "base_url": self.provider.base_url,
            "reasoning_effort": self.provider.reasoning_effort,
            "mode": self.mode, "model_call_budget": self.model_call_budget,
            "image_history": self.image_history,
            "model_calls": w.model_calls if w else 0,
            "http_attempts": int(self.provider.http_attempts),
            "attempt_failures": list(self.provider.failures),
            "usage": usage,
            "cost_usd": episode_cost(usage, self.provider.model, self.price_table),
        }}


def make_vlm_agent(provider: str, model: str, *, base_url: str | None = None, api_key: str | None = None,
                   reasoning_effort: str | None = None, max_tokens: int | None = None,
                   mode: str = "active", model_call_budget: int = 100, passive_views: int = PASSIVE_VIEWS,
                   price_table: Mapping[str, Mapping[str, float]] | str | None = None,
                   image_history: int | None = None, **provider_options: Any) -> VLMAgent:
    """Build a :class:`VLMAgent` for ``provider`` (``"openai"``, ``"openai-responses"`` or
    ``"anthropic"``) and ``model``.

    ``price_table`` may be a path (see :func:`load_price_table`). ``provider_options`` go to the
    provider (``timeout_s``, ``attempts``, ``backoff_s``, ``sleep``).
    """
    from spatialscout_gym.baselines.providers import AnthropicProvider, OpenAIProvider, OpenAIResponsesProvider
    classes = {"openai": OpenAIProvider, "openai-responses": OpenAIResponsesProvider,
               "anthropic": AnthropicProvider}
    if provider not in classes:
        raise ValueError(f"unknown provider {provider!r}; expected one of {sorted(classes)}")
    if isinstance(price_table, (str, os.PathLike)):
        price_table = load_price_table(price_table)
    client = classes[provider](model, api_key=api_key, base_url=base_url, max_tokens=max_tokens,
                               reasoning_effort=reasoning_effort, **provider_options)
    return VLMAgent(client, name=f"{provider}:{model}", mode=mode,
                    model_call_budget=model_call_budget, passive_views=passive_views,
                    price_table=price_table, image_history=image_history)


def openai_agent(model: str, **options: Any) -> VLMAgent:
    """Registry factory for ``openai:MODEL``."""
    return make_vlm_agent("openai", model, **options)


def openai_responses_agent(model: str, **options: Any) -> VLMAgent:
    """Registry factory for ``openai-responses:MODEL`` (the OpenAI Responses API)."""
    return make_vlm_agent("openai-responses", model, **options)


def anthropic_agent(model: str, **options: Any) -> VLMAgent:
    """Registry factory for ``anthropic:MODEL``."""
    return make_vlm_agent("anthropic", model, **options)
