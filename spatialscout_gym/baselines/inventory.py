"""Inventory-only reference policies (docs/protocol.md section 6, item 8): no camera use at all.

* ``origin``: every target at the task origin ``[0, 0, 0]``.
* ``uniform-ball``: each target at an independent uniform point of the ball ``|p| <= r``.

Both submit through ``submit_positions`` and then ``finish_mapping``, like any agent.
"""

from __future__ import annotations

import numpy as np

from spatialscout_gym.baselines.base import PrivilegedAccess
from spatialscout_gym.baselines.registry import register_agent
from spatialscout_gym.core.references import origin_predictions, uniform_ball_predictions
from spatialscout_gym.episode.episode import Episode

__all__ = ["OriginAgent", "UniformBallAgent"]


@register_agent("origin", kind="reference")
class OriginAgent:
    """Submits ``[0, 0, 0]`` for every inventory id, then finishes."""

    def run(self, episode: Episode, *, rng: np.random.Generator,
            privileged: PrivilegedAccess | None = None) -> None:
        inventory = episode.list_entities().result["entities"]
        episode.submit_positions(origin_predictions(inventory))
        episode.finish_mapping()


@register_agent("uniform-ball", kind="reference")
class UniformBallAgent:
    """Submits a uniform draw of the ball of radius ``r`` (public) per id, then finishes."""

    def run(self, episode: Episode, *, rng: np.random.Generator,
            privileged: PrivilegedAccess | None = None) -> None:
        listing = episode.list_entities().result
        ids = [e["id"] for e in listing["entities"]]
        episode.submit_positions(uniform_ball_predictions(ids, float(listing["radius_m"]), rng))
        episode.finish_mapping()
