"""What an evaluation will cost, before it runs (``evaluate --estimate``; docs/models.md, "Cost
before and during"): a range per model from the price table and the protocol's budgets, without
calling the model.

One episode is a conversation of C model calls. Every request resends the whole history (the paper's
harness: every image is resent), so call i (1-based) carries

    input_i  = P + (i - 1) * T + images_i * I        images_i = min(1 + (i - 1) * r, V)

with P the prompt, first message and tool schema, T the text one turn adds (the model's reply and
the tool results), I the tokens of one image (the wire format's rule at the delivered size), r the
new images per call and V the image budget; each call also produces O output tokens (reasoning
included). The range's two ends (:data:`LOW`, :data:`HIGH`):

* low: the episode ends after its first call (C = 1), P from the prompt and schema at 5 characters
  a token, no image but the initial one, :data:`LOW` output;
* high: every one of the B calls is made, one new image each (up to V), P at 3 characters a token,
  :data:`HIGH` turn text and output.

"If every call is made" gives C = B at the low rates, a narrower range for a model that uses its
budget. Cached input (a price ``cached_input_per_mtok``) is not assumed: the estimate prices every
input token at the full rate, an upper bound where the provider caches.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Mapping

from spatialscout_gym.core.errors import ConfigError

__all__ = ["Rates", "LOW", "HIGH", "PROMPT_CHARS", "MAX_ESTIMATE_CALLS", "episode_cost_range", "estimate_lines"]

PROMPT_CHARS = 6000
"""Characters of the prompt and the first message (the inventory included) assumed besides the tool
schema: the ``appendix-a`` prompt of a catalog scene is 3,000 to 5,000."""


MAX_ESTIMATE_CALLS = 10**15
"""Largest model-call budget an estimate takes: the closed form answers any budget at once, but the
sums of larger ones leave the range of a float."""


@dataclass(frozen=True)
class Rates:
    """One end of the range: characters per token of the prompt, tokens a turn adds, output tokens
    per call, new images per call."""

    chars_per_token: float
    turn_tokens: int
    output_tokens: int
    images_per_call: float


LOW = Rates(chars_per_token=5.0, turn_tokens=30, output_tokens=20, images_per_call=0.0)
HIGH = Rates(chars_per_token=3.0, turn_tokens=600, output_tokens=8000, images_per_call=1.0)


def _images_sent(calls: int, per_call: float, budget: int) -> float:
    """``sum(min(1 + j * per_call, budget) for j in range(calls))`` in closed form: the images
    the ``calls`` requests carry together (a budget of a trillion calls is answered at once)."""
    if calls <= 0:
        return 0.0
    if budget < 1:
        return float(calls * budget)
    # requests 0 .. growing-1 carry 1 + j * per_call images (<= budget); the rest carry the budget
    growing = calls if per_call <= 0 else min(calls, math.floor((budget - 1) / per_call) + 1)
    return growing + per_call * growing * (growing - 1) / 2 + (calls - growing) * budget


def _episode(calls: int, prompt_chars: int, image_tokens: int, image_budget: int, rates: Rates,
             price: Mapping[str, float]) -> float:
    """USD of ``calls`` requests (module docstring's sum over i, in closed form)."""
    p = prompt_chars / rates.chars_per_token
    tokens_in = (calls * p + rates.turn_tokens * calls * (calls - 1) / 2
                 + _images_sent(calls, rates.images_per_call, image_budget) * image_tokens)
    tokens_out = float(calls * rates.output_tokens)
    return (tokens_in * price["input_per_mtok"] + tokens_out * price["output_per_mtok"]) / 1e6


def episode_cost_range(*, model_call_budget: int, image_budget: int, schema_chars: int, image_tokens: int,
                       price: Mapping[str, float]) -> dict:
    """USD of one episode: ``low`` (one call), ``all_calls_low`` (B calls at the low rates) and
    ``high`` (B calls, one image each, the high rates); module docstring."""
    chars = PROMPT_CHARS + schema_chars
    b, v = int(model_call_budget), int(image_budget)
    if b > MAX_ESTIMATE_CALLS:
        shown = str(b) if b < 10**30 else f"{len(str(b))} digits"
        raise ConfigError(f"cannot estimate a model-call budget of {shown}: at most {MAX_ESTIMATE_CALLS:.0e} calls "
                          f"an episode (its cost would not fit in a number)")
    return {"low": _episode(1, chars, image_tokens, v, LOW, price),
            "all_calls_low": _episode(b, chars, image_tokens, v, LOW, price),
            "high": _episode(b, chars, image_tokens, v, HIGH, price)}


@dataclass(frozen=True)
class _AgentEstimate:
    """One model agent's per-episode range (:func:`episode_cost_range`) and the image size and
    tokens it assumed."""

    per_episode: dict
    image_tokens: int
    size: tuple[int, int]


def _agent_estimate(agent: object, *, model_call_budget: int, image_budget: int,
                    resolution: int) -> _AgentEstimate | None:
    """The range of one episode of ``agent`` from its price table, its wire format's image rule and
    its tool schema; None when the agent has no price."""
    from spatialscout_gym.conversation.codecs import CODECS
    from spatialscout_gym.conversation.images import delivered_size
    provider = getattr(agent, "provider", None)
    table = getattr(agent, "price_table", None) or {}
    model = getattr(provider, "model", None)
    if provider is None or model not in table:
        return None
    w, h = delivered_size(resolution, resolution, getattr(agent, "image_max_side", 384))
    codec = CODECS.get(getattr(provider, "api_mode", ""))
    per_image = (codec.image_tokens(w, h) if codec is not None
                 else max(c.image_tokens(w, h) for c in CODECS.values()))
    r = episode_cost_range(model_call_budget=model_call_budget, image_budget=image_budget,
                           schema_chars=len(json.dumps(provider.tool_schema())), image_tokens=per_image,
                           price=table[model])
    return _AgentEstimate(r, per_image, (w, h))


def estimate_lines(agent: object, *, episodes: int, model_call_budget: int, image_budget: int,
                   resolution: int) -> list[str]:
    """The printed estimate of one model agent for ``episodes`` episodes (:func:`estimate_usd`'s
    range); a line saying why not when the agent has no price."""
    name = getattr(agent, "name", "?")
    est = _agent_estimate(agent, model_call_budget=model_call_budget, image_budget=image_budget,
                          resolution=resolution)
    if est is None:
        model = getattr(getattr(agent, "provider", None), "model", None)
        return [f"{name}: no price (--price-table with an entry for {model}); nothing to estimate"]
    r, total, (w, h) = est.per_episode, _totals(est, episodes), est.size
    return [f"{name}: {episodes} episodes, ${total['low']:.2f} - ${total['high']:.2f} "
            f"(${total['all_calls_low']:.2f} - ${total['high']:.2f} if every episode makes all "
            f"{model_call_budget} calls); per episode ${r['low']:.4f} - ${r['high']:.4f}; "
            f"{est.image_tokens} tokens per {w}x{h} image"]


def _totals(est: _AgentEstimate, episodes: int) -> dict[str, float]:
    return {k: episodes * v for k, v in est.per_episode.items()}


def estimate_usd(agent: object, *, episodes: int, model_call_budget: int, image_budget: int,
                 resolution: int) -> dict[str, float] | None:
    """The range :func:`estimate_lines` prints, as numbers for all ``episodes`` (``low``,
    ``all_calls_low``, ``high``; USD), for the totals and the cap of a presets file; None when the
    agent has no price."""
    est = _agent_estimate(agent, model_call_budget=model_call_budget, image_budget=image_budget,
                          resolution=resolution)
    return None if est is None else _totals(est, episodes)
