"""How a record type marks each field: derived (recomputed from the trace and named inputs) or
claimed (stated by the run: wall times, the host). The run record (:mod:`spatialscout_gym.core.records`)
and the blocks it holds (:mod:`spatialscout_gym.core.exploration`) mark their fields with these."""

from __future__ import annotations

from dataclasses import field
from typing import Any

__all__ = ["DERIVED", "CLAIMED", "derived", "claimed"]

DERIVED, CLAIMED = "derived", "claimed"


def derived(**kw: Any) -> Any:
    """A dataclass field recomputed from the trace (``verify`` compares it)."""
    return field(metadata={"kind": DERIVED}, **kw)


def claimed(**kw: Any) -> Any:
    """A dataclass field the run states and nothing recomputes (pages show it as claimed)."""
    return field(metadata={"kind": CLAIMED}, **kw)
