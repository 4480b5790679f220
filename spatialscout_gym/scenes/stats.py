"""Catalog statistics (issue 3, item 3), a pure function over scene specs, with the paper's
release numbers (docs/protocol.md section 8) beside them.
"""

from __future__ import annotations

from collections import Counter

import numpy as np

from spatialscout_gym.core.spec import SceneSpec

__all__ = ["catalog_stats", "PAPER_STATS", "SIZE_TOL_M"]

SIZE_TOL_M = 1e-3
"""Two instances have *different sizes* when some side differs by more than this (metres)."""

PAPER_STATS: dict = {
    "n_scenes": 80, "n_targets": 3140, "scenes_35": 12, "scenes_40": 68,
    "radius_min_m": 1.95, "radius_max_m": 9.23, "n_categories": 209,
    "multi_instance_fraction": 1393 / 3140, "multi_instance_groups": 470,
    "groups_with_different_sizes": 402, "median_shortest_side_m": 0.117,
    "under_1cm_fraction": 210 / 3140,
    "top_categories": [["Chair", 192], ["Painting", 170], ["Window", 94], ["Book", 90]],
}


def catalog_stats(specs: list[SceneSpec], top: int = 10) -> dict:
    """Statistics of the targets of ``specs`` (docs/protocol.md section 8's list).

    Returns
    -------
    dict
        ``n_scenes``, ``n_targets``, ``scenes_35``, ``scenes_40``, ``radius_min_m``,
        ``radius_max_m``, ``n_categories``, ``multi_instance_fraction`` (targets sharing their
        group with another target of the same scene), ``multi_instance_groups``,
        ``groups_with_different_sizes`` (groups whose instances are not all the same size within
        :data:`SIZE_TOL_M`), ``median_shortest_side_m``, ``under_1cm_fraction`` (targets with
        a box side under 1 cm), ``top_categories`` (``[[name, count], ...]``), ``layouts``
        (scene count per layout kind).
    """
    if not specs:
        raise ValueError("catalog_stats needs at least one scene spec")
    n_t = 0
    multi = 0
    groups = 0
    diff = 0
    shortest: list[float] = []
    cats: Counter = Counter()
    radii = []
    counts = Counter()
    layouts: Counter = Counter()
    for spec in specs:
        targets = spec.targets
        n_t += len(targets)
        counts[len(targets)] += 1
        radii.append(spec.public.radius_m)
        d = spec.public.description
        layouts[d.get("camera_room") if d.get("layout") == "single_room" else d.get("layout", "unknown")] += 1
        by_group: dict[str, list[np.ndarray]] = {}
        for t in targets:
            by_group.setdefault(t.group, []).append(t.size)
            cats[t.category] += 1
            shortest.append(float(np.min(t.size)))
        for sizes in by_group.values():
            if len(sizes) > 1:
                multi += len(sizes)
                groups += 1
                s = np.array(sizes)
                diff += bool(np.any(np.abs(s - s[0]) > SIZE_TOL_M))
    shortest_arr = np.array(shortest)
    return {
        "n_scenes": len(specs), "n_targets": n_t, "scenes_35": counts[35], "scenes_40": counts[40],
        "radius_min_m": float(min(radii)), "radius_max_m": float(max(radii)),
        "n_categories": len(cats), "multi_instance_fraction": multi / n_t,
        "multi_instance_groups": groups, "groups_with_different_sizes": diff,
        "median_shortest_side_m": float(np.median(shortest_arr)),
        "under_1cm_fraction": float(np.mean(shortest_arr < 0.01)),
        "top_categories": [[k, v] for k, v in cats.most_common(top)],
        "layouts": dict(sorted(layouts.items())),
    }
