"""The money an evaluation's recorded model calls cost (``spatialscout spend DIR``): the sum over
every ``result.json`` under the directory (episodes and their archived attempts) of the dollars its
live calls cost, a lower bound of what was paid (a call that failed before its episode wrote a
result is not recorded). It is what a spend ledger that can no longer be read is rebuilt from
(docs/models.md, "Cost before and during")."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from spatialscout_gym.core.errors import SpatialScoutError
from spatialscout_gym.core.records import load_run_record
from spatialscout_gym.core.run_files import RESULT_FILE

__all__ = ["RecordedSpend", "recorded_spend"]


@dataclass
class RecordedSpend:
    """``usd`` and live ``calls`` summed over ``runs`` result files; ``unreadable`` result files
    (not a run record: read strictly, as their type) and ``unpriced`` model runs (no price) add
    nothing."""

    usd: float = 0.0
    calls: int = 0
    runs: int = 0
    unpriced: int = 0
    unreadable: int = 0


def recorded_spend(eval_dir: str | os.PathLike) -> RecordedSpend:
    """The recorded spend under ``eval_dir`` (module docstring). Hidden folders (a killed run's
    temporary copies) and symbolic links are not followed."""
    out = RecordedSpend()
    for root, dirs, files in os.walk(os.fspath(eval_dir)):
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and not os.path.islink(os.path.join(root, d)))
        if RESULT_FILE not in files:
            continue
        try:
            record = load_run_record(Path(root) / RESULT_FILE)
        except SpatialScoutError:   # not a run record (read strictly): counted, adds nothing
            out.unreadable += 1
            continue
        model = record.model
        if model is None:
            continue   # not a model agent's run: it cost nothing
        out.runs += 1
        # with the request cache, only the calls sent live were paid by this run
        cache = model.request_cache
        usd = model.cost_incurred_usd if cache is not None else model.cost_usd
        if usd is None or usd < 0:
            out.unpriced += 1
        else:
            out.usd += usd
        out.calls += max(cache.live_calls if cache is not None else model.model_calls, 0)
    return out
