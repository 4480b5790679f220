"""Small shared type aliases and validators used across the core layer."""

from __future__ import annotations

from typing import Sequence, Union

import numpy as np

ArrayLike3 = Union[Sequence[float], np.ndarray]


def as_vec3(value: ArrayLike3, name: str = "value") -> np.ndarray:
    """Return ``value`` as a float array of shape (3,), or raise ``ValueError`` quoting the shape."""
    arr = np.asarray(value, dtype=float)
    if arr.shape != (3,):
        raise ValueError(f"{name} must have shape (3,), got shape {arr.shape}")
    return arr


def is_finite_vec3(value: object) -> bool:
    """True when ``value`` is a length-3 sequence of finite real numbers (bools rejected)."""
    if not isinstance(value, (list, tuple, np.ndarray)) or len(value) != 3:
        return False
    for x in value:
        if isinstance(x, bool) or not isinstance(x, (int, float, np.integer, np.floating)):
            return False
        if not np.isfinite(float(x)):
            return False
    return True
