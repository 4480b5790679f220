"""The one pricing function: USD of a model's token usage at a price table's rates.

Every cost the package shows (an episode's ``cost_usd``, what a run incurred, the spend ledger, the
estimate) is this function of per-call usage recorded in the trace (docs/protocol.md section 7).
"""

from __future__ import annotations

from typing import Mapping

__all__ = ["episode_cost", "OPTIONAL_PRICES", "USAGE_KEYS"]

#: Price-table keys an entry may add to input_per_mtok and output_per_mtok (USD per million tokens).
OPTIONAL_PRICES = ("cached_input_per_mtok", "cache_write_per_mtok")

USAGE_KEYS = ("input_tokens", "output_tokens", "cached_input_tokens", "cache_write_input_tokens")
"""The token counts a reply's usage records: ``cached_input_tokens`` (answered from the service's
prompt cache) and ``cache_write_input_tokens`` (written to it) are parts of ``input_tokens``."""


def episode_cost(usage: Mapping[str, int], model: str,
                 price_table: Mapping[str, Mapping[str, float]] | None) -> float | None:
    """USD for ``usage`` at ``model``'s prices; None without a table or an entry for the model.
    ``cached_input_tokens`` and ``cache_write_input_tokens`` (both part of ``input_tokens``) cost
    ``cached_input_per_mtok`` and ``cache_write_per_mtok`` where the table gives them, else the
    input price."""
    if not price_table or model not in price_table:
        return None
    p = price_table[model]
    total = usage.get("input_tokens", 0)
    cached = min(usage.get("cached_input_tokens", 0), total)   # parts of the input
    written = min(usage.get("cache_write_input_tokens", 0), total - cached)
    return ((total - cached - written) * p["input_per_mtok"]
            + cached * p.get("cached_input_per_mtok", p["input_per_mtok"])
            + written * p.get("cache_write_per_mtok", p["input_per_mtok"])
            + usage.get("output_tokens", 0) * p["output_per_mtok"]) / 1e6
