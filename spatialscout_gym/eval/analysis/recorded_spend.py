"""The money an evaluation's recorded model calls cost (``spatialscout spend DIR``): the sum over
every ``result.json`` under the directory (episodes and their archived attempts) of the dollars its
live calls cost, a lower bound of what was paid (a call that failed before its episode wrote a
result is not recorded). It is what a spend ledger that can no longer be read is rebuilt from
(docs/models.md, "Cost before and during")."""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from pathlib import Path

from spatialscout_gym.core.errors import SpatialScoutError
from spatialscout_gym.core.files import read_json
from spatialscout_gym.core.run_files import RESULT_FILE

__all__ = ["RecordedSpend", "recorded_spend"]


@dataclass
class RecordedSpend:
    """``usd`` and live ``calls`` summed over ``runs`` result files; ``unreadable`` result files
    and ``unpriced`` model runs (no price, or a cost that is not a finite amount) add nothing."""

    usd: float = 0.0
    calls: int = 0
    runs: int = 0
    unpriced: int = 0
    unreadable: int = 0


def _amount(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(value) and value >= 0 else None


def recorded_spend(eval_dir: str | os.PathLike) -> RecordedSpend:
    """The recorded spend under ``eval_dir`` (module docstring). Hidden folders (a killed run's
    temporary copies) and symbolic links are not followed."""
    out = RecordedSpend()
    for root, dirs, files in os.walk(os.fspath(eval_dir)):
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and not os.path.islink(os.path.join(root, d)))
        if RESULT_FILE not in files:
            continue
        try:
            result = read_json(Path(root) / RESULT_FILE)
        except SpatialScoutError:
            out.unreadable += 1
            continue
        model = result.get("model") if isinstance(result, dict) else None
        if not isinstance(model, dict):
            continue   # not a model agent's run: it cost nothing
        out.runs += 1
        cached = isinstance(model.get("request_cache"), dict)
        # with the request cache, only the calls sent live were paid by this run
        usd = _amount(model.get("cost_incurred_usd") if cached else model.get("cost_usd"))
        calls = model.get("request_cache", {}).get("live_calls") if cached else model.get("model_calls")
        if usd is None:
            out.unpriced += 1
        else:
            out.usd += usd
        out.calls += calls if type(calls) is int and calls > 0 else 0
    return out
