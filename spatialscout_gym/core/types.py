"""Small shared type aliases and validators used across the core layer."""

from __future__ import annotations

import sys
from typing import Any, Callable, Sequence, Union

import numpy as np

ArrayLike3 = Union[Sequence[float], np.ndarray]


def as_vec3(value: ArrayLike3, name: str = "value") -> np.ndarray:
    """Return ``value`` as a float array of shape (3,), or raise ``ValueError`` quoting the shape."""
    arr = np.asarray(value, dtype=float)
    if arr.shape != (3,):
        raise ValueError(f"{name} must have shape (3,), got shape {arr.shape}")
    return arr


def is_finite_number(x: object) -> bool:
    """True for a finite real number that fits a float; bools and integers past 1.8e308 are not."""
    if isinstance(x, (bool, np.bool_)) or not isinstance(x, (int, float, np.integer, np.floating)):
        return False
    try:
        return bool(np.isfinite(float(x)))
    except OverflowError:
        return False


def is_finite_vec3(value: object) -> bool:
    """True when ``value`` is a length-3 sequence of finite real numbers (see :func:`is_finite_number`)."""
    return isinstance(value, (list, tuple, np.ndarray)) and len(value) == 3 and all(map(is_finite_number, value))


UNLIMITED = 1_000_000
"""The one spelling of "unlimited" where a number must stand for it: calls left in an observation
when the tool-call budget is None, and the budget a prompt states for an episode without one."""


def natural_number(text: str) -> int | None:
    """The non-negative integer ``text`` writes in the ASCII digits 0-9 (leading zeros allowed),
    else None. The one reader of integers a user types (``--seeds``, ``procedural:<seed>``,
    ``-T seeds``, ``-T repeats``) and of numbered directory names: ``str.isdigit`` also accepts
    ``'²'``, which ``int`` refuses, and ``int`` reads other scripts' digits and ``' 7'``. More digits
    than ``int`` reads from text (``sys.get_int_max_str_digits()``, 4300) give None too."""
    if not (isinstance(text, str) and text.isascii() and text.isdigit()):
        return None
    limit = getattr(sys, "get_int_max_str_digits", lambda: 0)()
    return None if limit and len(text) > limit else int(text)


def map_strings(x: Any, fn: Callable[[str], str], max_depth: int, depth: int = 0) -> Any:
    """``x`` with ``fn`` applied to every string in it, dict keys too, through dicts, lists and
    tuples (JSON as parsed, or a reply's parts). Containers deeper than ``max_depth`` levels are
    returned as they are, so the walk is bounded by the value's size and depth."""
    if isinstance(x, str):
        return fn(x)
    if depth > max_depth:
        return x
    if isinstance(x, dict):
        return {map_strings(k, fn, max_depth, depth + 1): map_strings(v, fn, max_depth, depth + 1) for k, v in x.items()}
    if isinstance(x, list):
        return [map_strings(v, fn, max_depth, depth + 1) for v in x]
    if isinstance(x, tuple):
        return tuple(map_strings(v, fn, max_depth, depth + 1) for v in x)
    return x
