"""Inventory-only reference policies (docs/protocol.md section 6.8): maps made without any image.

* *origin*: every target at the task origin, ``p = 0``.
* *uniform ball*: each target at a point drawn uniformly from the ball of radius ``r``: direction
  from a normalised standard Gaussian, radius ``r * U^(1/3)`` with ``U ~ Uniform[0, 1)``.

The paper's scene-macro full-scene losses for them over its 80 prepared scenes are 2.984 m and
4.487 m (paper Appendix B.2, "Inventory-only references"; the primer's 3.113 m and 4.701 m differ,
and the paper is the source).

>>> import numpy as np
>>> origin_predictions(["a", "b"])
{'a': [0.0, 0.0, 0.0], 'b': [0.0, 0.0, 0.0]}
>>> pts = uniform_ball_predictions(["a", "b"], 2.0, np.random.default_rng(0))
>>> all(np.linalg.norm(p) <= 2.0 for p in pts.values())
True
"""

from __future__ import annotations

from typing import Any, Iterable

import numpy as np

__all__ = ["origin_predictions", "uniform_ball_predictions", "inventory_ids"]


def inventory_ids(gt_or_inventory: Any) -> list[str]:
    """Target ids, in order, from a :class:`~spatialscout_gym.core.scoring.GroundTruth`, a
    :class:`~spatialscout_gym.core.spec.PublicScene`, or an iterable of ids, inventory entries or
    ``{"id": ...}`` dicts."""
    if hasattr(gt_or_inventory, "targets"):
        items: Iterable[Any] = gt_or_inventory.targets
    elif hasattr(gt_or_inventory, "inventory"):
        items = gt_or_inventory.inventory
    else:
        items = gt_or_inventory
    ids = []
    for item in items:
        if isinstance(item, str):
            ids.append(item)
        elif isinstance(item, dict):
            ids.append(str(item["id"]))
        else:
            ids.append(str(item.id))
    return ids


def origin_predictions(gt_or_inventory: Any) -> dict[str, list[float]]:
    """Every inventory id at the task origin ``[0, 0, 0]``."""
    return {i: [0.0, 0.0, 0.0] for i in inventory_ids(gt_or_inventory)}


def uniform_ball_predictions(ids: Iterable[str], radius_m: float,
                             rng: np.random.Generator) -> dict[str, list[float]]:
    """Each id at an independent uniform point of the ball ``|p| <= radius_m`` (task frame, m).

    Parameters
    ----------
    ids : iterable of str
        Target ids (their order fixes which draw each id gets).
    radius_m : float
        The scene's search radius ``r``.
    rng : numpy.random.Generator
        The only source of randomness.
    """
    ids = list(ids)
    if not np.isfinite(radius_m) or radius_m < 0:
        raise ValueError(f"radius_m must be a finite number >= 0, got {radius_m!r}")
    g = rng.standard_normal((len(ids), 3))
    norms = np.linalg.norm(g, axis=1, keepdims=True)
    direction = g / np.where(norms > 0, norms, 1.0)
    radius = radius_m * rng.random(len(ids)) ** (1.0 / 3.0)
    points = direction * radius[:, None]
    return {i: [float(x) for x in p] for i, p in zip(ids, points)}
