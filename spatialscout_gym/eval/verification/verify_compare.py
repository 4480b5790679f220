"""How ``verify`` compares a recorded value with its recomputation (docs/protocol.md section 7,
"Numbers that travel").

A run must verify on any machine: another CPU, BLAS kernel (``OPENBLAS_CORETYPE``), thread count
or C library may change the last bits of a float. So:

* numbers agree when ``|a - b| <= REL_TOLERANCE * max(|a|, |b|, 1)``: relative 1e-9, and
  absolute 1e-9 below magnitude 1 (a scene built on another BLAS kernel moves a centre by about
  1e-12 m; a score of 0 can become 1e-12); the largest deviation seen is kept;
* what the agent submitted (tool arguments, accepted maps, ``predictions.json``: the fields named
  by :data:`EXACT_FIELDS`) is compared **exactly**, to the bit: it is copied, never computed, so
  no machine changes it;
* a text (what the model read) agrees when its words are equal and its numbers agree as above; a
  number rounded into such a text (a short decimal such as ``14.04``) that differs by exactly one
  unit in its last decimal from the recomputed one is a **rounding boundary** (a value within the
  tolerance of the midpoint rounds either way): noted, never a divergence. The rule holds only
  inside texts, never for a number recorded as a number;
* the condition number quoted by the near-parallel triangulation refusal is a measure of numerical
  noise (a model never acts on its value), so it is masked in texts before comparing.
"""

from __future__ import annotations

import math
import re
from typing import Any, Literal

__all__ = ["REL_TOLERANCE", "ABS_TOLERANCE", "EXACT_FIELDS", "Comparison"]

REL_TOLERANCE = 1e-9
"""Recorded and recomputed floats agree within this relative difference."""
ABS_TOLERANCE = 1e-9
"""... or this absolute difference below magnitude 1 (metres, degrees, pixels, scores)."""
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?")
_NOISE = re.compile(r"(condition number )\S+( of)")
EXACT_FIELDS = ("args", "arguments", "accepted_map", "positions", "tool_calls")
"""Fields holding what the agent submitted: a number anywhere below one must equal its recomputation."""
_EXACT = re.compile(r"(^|\.)(" + "|".join(EXACT_FIELDS) + r")(\.|\[|$)")


def _one_unit_apart(a: float, b: float, decimals: int | None) -> bool:
    if decimals is None or decimals > 6:
        return False
    units = abs(a - b) * 10 ** decimals
    return abs(units - 1.0) < 1e-6


class Comparison:
    """Compares recorded with recomputed values and keeps what it saw.

    Attributes
    ----------
    max_deviation : float
        Largest ``|a - b| / max(|a|, |b|, 1)`` of two numbers that agreed (0.0: all equal).
    where : str
        Where it was seen (``"event 3: tool_call, result.point[0]"``).
    boundaries : list of str
        Rounding-boundary cases (noted, not divergences).
    """

    def __init__(self) -> None:
        self.max_deviation = 0.0
        self.where = ""
        self.boundaries: list[str] = []

    def _numbers(self, a: float, b: float, at: str, decimals: int | None = None, exact: bool = False) -> bool:
        """``decimals``: the number was rounded into a text to that many decimals (the rounding
        boundary rule applies); None: a number recorded as a number (it does not)."""
        if a == b:
            return True
        if exact or not (math.isfinite(a) and math.isfinite(b)):
            return False
        dev = abs(a - b) / max(abs(a), abs(b), ABS_TOLERANCE / REL_TOLERANCE)
        if dev <= REL_TOLERANCE:
            if dev > self.max_deviation:
                self.max_deviation, self.where = dev, at
            return True
        if _one_unit_apart(a, b, decimals):
            self.boundaries.append(f"{at}: recorded {a!r} vs recomputed {b!r} (a rounding boundary)")
            return True
        return False

    def text(self, recorded: str, recomputed: str, at: str) -> bool:
        """Equal words, numbers equal within the tolerance (or at a rounding boundary)."""
        if recorded == recomputed:
            return True
        recorded, recomputed = _NOISE.sub(r"\1#\2", recorded), _NOISE.sub(r"\1#\2", recomputed)
        if recorded == recomputed:
            return True
        if _NUMBER.split(recorded) != _NUMBER.split(recomputed):
            return False
        for x, y in zip(_NUMBER.findall(recorded), _NUMBER.findall(recomputed)):
            if x == y:
                continue
            dx = len(x.split(".", 1)[1]) if "." in x and "e" not in x.lower() else None
            dy = len(y.split(".", 1)[1]) if "." in y and "e" not in y.lower() else None
            if not self._numbers(float(x), float(y), at, dx if dx == dy else 99):
                return False
        return True

    def first_diff(self, recorded: Any, recomputed: Any, path: str = "", at: str = "", *,
                   extra_ok: Literal[True] | tuple[str, ...] = True, exact: bool = False) -> tuple[str, Any, Any] | None:
        """The first field where ``recorded`` differs from ``recomputed``, or None.

        ``extra_ok``: True, keys the recomputed dict lacks are not checked (a record with fields of
        its own); a tuple, only those keys may be extra (timings) and any other is a difference;
        ``exact``: numbers must be equal (below an :data:`EXACT_FIELDS` field they always must)."""
        if isinstance(recomputed, dict):
            if not isinstance(recorded, dict):
                return path or "(value)", recorded, recomputed
            for k, v in recomputed.items():
                if k not in recorded:
                    return f"{path}.{k}".lstrip("."), "(missing)", v
                d = self.first_diff(recorded[k], v, f"{path}.{k}", at, extra_ok=extra_ok, exact=exact)
                if d:
                    return d
            if extra_ok is not True:
                for k in recorded:
                    if k not in recomputed and k not in extra_ok:
                        return f"{path}.{k}".lstrip("."), recorded[k], "(no such field)"
            return None
        if isinstance(recomputed, list):
            if not isinstance(recorded, list) or len(recorded) != len(recomputed):
                return path.lstrip("."), recorded, recomputed
            for i, (a, b) in enumerate(zip(recorded, recomputed)):
                d = self.first_diff(a, b, f"{path}[{i}]", at, extra_ok=extra_ok, exact=exact)
                if d:
                    return d
            return None
        here = ", ".join(x for x in (at, path.lstrip(".")) if x)
        numbers = [isinstance(x, (int, float)) and not isinstance(x, bool) for x in (recorded, recomputed)]
        if all(numbers):
            same = self._numbers(float(recorded), float(recomputed), here,
                                 exact=exact or bool(_EXACT.search(path)))
        elif isinstance(recorded, str) and isinstance(recomputed, str):
            same = recorded == recomputed if exact or _EXACT.search(path) else self.text(recorded, recomputed, here)
        else:
            same = recorded == recomputed and type(recorded) is type(recomputed)
        return None if same else (path.lstrip("."), recorded, recomputed)

    def summary(self) -> dict:
        return {"max_relative_deviation": self.max_deviation, "where": self.where,
                "rounding_boundaries": list(self.boundaries)}

