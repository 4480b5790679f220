"""Bounds on episode settings: render resolution and image budget (docs/protocol.md sections 3 and 5).

One place for the numbers so that the CLI, the Gymnasium environment and the runner refuse the
same values with the same words, before anything is rendered or allocated.
"""

from __future__ import annotations

import numbers
from typing import TypeGuard

from spatialscout_gym.core.errors import ConfigError

__all__ = ["WORLD_BOX_M", "MIN_RESOLUTION_PX", "MAX_RESOLUTION_PX", "MAX_IMAGE_BUDGET", "resolution_problem",
           "image_budget_problem", "check_episode_settings"]

WORLD_BOX_M = 15.0
"""Every world coordinate of the camera stays within ``+-15`` m (docs/protocol.md section 4); the
generator keeps every scene's rooms inside it."""
MIN_RESOLUTION_PX = 8
"""Smallest side of the square render grid, pixels."""
MAX_RESOLUTION_PX = 4096
"""Largest side of the square render grid, pixels (a 4096 x 4096 RGB frame is 48 MB; the paper uses 512)."""
MAX_IMAGE_BUDGET = 1000
"""Largest image budget V, the initial image included (the paper uses 100)."""


def _is_int(x: object) -> TypeGuard[numbers.Integral]:
    return isinstance(x, numbers.Integral) and not isinstance(x, bool)


def resolution_problem(resolution: object, name: str = "resolution") -> str | None:
    """None for an integer in ``[MIN_RESOLUTION_PX, MAX_RESOLUTION_PX]``, else a readable reason."""
    if not _is_int(resolution) or not MIN_RESOLUTION_PX <= int(resolution) <= MAX_RESOLUTION_PX:
        return (f"{name} must be an integer number of pixels from {MIN_RESOLUTION_PX} to "
                f"{MAX_RESOLUTION_PX} (the paper renders 512), got {resolution!r}")
    return None


def image_budget_problem(image_budget: object, name: str = "image_budget") -> str | None:
    """None for an integer in ``[1, MAX_IMAGE_BUDGET]``, else a readable reason."""
    if not _is_int(image_budget) or not 1 <= int(image_budget) <= MAX_IMAGE_BUDGET:
        return (f"{name} must be an integer from 1 to {MAX_IMAGE_BUDGET} images, the initial image "
                f"included (the paper uses 100), got {image_budget!r}")
    return None


def check_episode_settings(*, resolution: object = None, image_budget: object = None) -> None:
    """Raise :class:`~spatialscout_gym.core.errors.ConfigError` (a ``ValueError``) with a readable reason for a resolution or image budget out of bounds
    (arguments left at None are not checked)."""
    for problem in ((resolution_problem(resolution) if resolution is not None else None),
                    (image_budget_problem(image_budget) if image_budget is not None else None)):
        if problem:
            raise ConfigError(problem)
