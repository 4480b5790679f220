"""Catalog statistics, a pure function over scene specs, with the paper's figures and the
release's (docs/protocol.md section 8) beside them, each labelled by its source.
"""

from __future__ import annotations

import os
from collections import Counter

import numpy as np

from spatialscout_gym.core.spec import SceneObject, SceneSpec

__all__ = ["catalog_stats", "PAPER_STATS", "RELEASE_STATS", "SCENE_SOURCES", "SIZE_TOL_M", "size_comparison", "own_box_size", "reference_losses",
           "PAPER_REFERENCE_LOSSES_M", "PAPER_REFERENCE_LOSSES_OTHER_VERSION_M", "plot_size_comparison"]

SIZE_TOL_M = 1e-3
"""Two instances have *different sizes* when some side differs by more than this (metres)."""

PAPER_STATS: dict = {
    "n_scenes": 80, "n_targets": 12 * 35 + 68 * 40, "scenes_35": 12, "scenes_40": 68,
    "radius_min_m": 1.95, "radius_max_m": 9.23,
    "multi_instance_targets": 1489, "multi_instance_fraction": 0.433,
    "median_shortest_side_m": 0.117, "under_1cm_fraction": 0.067,
}
"""The paper's own figures (its section 2.2), as it states them. ``n_targets`` is 12 x 35 + 68 x 40
(the text says "totaling 3,410"); its 1,489 multi-instance targets are not 43.3% of either count
(docs/protocol.md section 8). The median shortest side (11.7 cm) and the share of targets with a
side under 1 cm (6.7%) are the paper's section 2.2 figures as the primer and the outside audit give
them; the version of the paper docs/protocol.md restates does not print them (the paper's versions
differ)."""

RELEASE_STATS: dict = {
    "n_scenes": 80, "n_targets": 3140, "scenes_35": 12, "scenes_40": 68,
    "radius_min_m": 1.954, "radius_max_m": 9.231, "n_categories": 209,
    "multi_instance_targets": 1393, "multi_instance_fraction": 1393 / 3140, "multi_instance_groups": 470,
    "groups_with_different_sizes": 402, "median_shortest_side_m": 0.117,
    "under_1cm_fraction": 210 / 3140,
    "top_categories": [["Chair", 192], ["Painting", 170], ["Window", 94], ["Book", 90]],
}
"""The authors' released annotation files as an outside audit measured them (3,140 targets in 12
scenes of 35 and 68 of 40, radius 1.954-9.231 m, ...); the paper does not give the release's
counts."""

SCENE_SOURCES: dict = {
    "paper": {"iTHOR": 32, "RoboTHOR": 12, "ArchitecTHOR": 10, "ReplicaCAD": 6, "ProcTHOR": 30},
    "release": {"iTHOR": 24, "RoboTHOR": 12, "ArchitecTHOR": 8, "ReplicaCAD": 6, "ProcTHOR": 30},
}
"""Scenes per source dataset: the paper's list (section 2.2; it adds up to 90 for its 80 scenes) and
the release's count (80)."""

PAPER_REFERENCE_LOSSES_M: dict = {"origin": 2.984, "uniform_ball": 4.487}
"""The paper's Appendix B.2, in the version docs/protocol.md restates: scene-macro full-scene losses
of the inventory-only references, metres."""
PAPER_REFERENCE_LOSSES_OTHER_VERSION_M: dict = {"origin": 3.113, "uniform_ball": 4.701}
"""The same two losses as another version of the paper gives them: the outside audit reports 3.113 m
as the paper's Appendix B.2 figure, and the primer gives 3.113 m and 4.701 m. The paper's versions
disagree; neither is this package's."""


def catalog_stats(specs: list[SceneSpec], top: int = 10) -> dict:
    """Statistics of the targets of ``specs`` (docs/protocol.md section 8's list).

    Returns
    -------
    dict
        ``n_scenes``, ``n_targets``, ``scenes_35``, ``scenes_40``, ``radius_min_m``,
        ``radius_max_m``, ``n_categories``, ``multi_instance_targets`` and
        ``multi_instance_fraction`` (targets sharing their group with another target of the same
        scene), ``multi_instance_groups``,
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
    counts: Counter = Counter()
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
        "n_categories": len(cats), "multi_instance_targets": multi, "multi_instance_fraction": multi / n_t,
        "multi_instance_groups": groups, "groups_with_different_sizes": diff,
        "median_shortest_side_m": float(np.median(shortest_arr)),
        "under_1cm_fraction": float(np.mean(shortest_arr < 0.01)),
        "top_categories": [[k, v] for k, v in cats.most_common(top)],
        "layouts": dict(sorted(layouts.items())),
    }


# ---------------------------------------------------------------- sizes vs AI2-THOR -------------
def own_box_size(obj: SceneObject) -> np.ndarray:
    """An object's own box: the sides (metres, sorted large to small) of its smallest-volume box
    about a vertical axis, over the yaws its parts are posed at. For a yawed object this is the
    box it was built in, not the larger world-axis AABB."""
    from spatialscout_gym.core.frames import quat_to_matrix
    from spatialscout_gym.core.spec import part_world_aabb
    from spatialscout_gym.scenes.geometry import place
    yaws = {0.0}
    for p in obj.parts:
        R = quat_to_matrix(p.quat_wxyz)
        for col in (0, 1):
            a = R[:, col]
            if abs(a[2]) < 0.99:
                yaws.add(round(float(np.degrees(np.arctan2(a[1], a[0]))) % 90.0, 3))
    best: np.ndarray | None = None
    for yaw in sorted(yaws)[:12]:
        parts = place(obj.parts, np.zeros(3), -yaw) if yaw else obj.parts
        boxes = [part_world_aabb(p) for p in parts]
        ext = np.max([b[1] for b in boxes], axis=0) - np.min([b[0] for b in boxes], axis=0)
        if best is None or np.prod(ext) < np.prod(best) - 1e-12:
            best = ext
    assert best is not None
    return -np.sort(-best)


def size_comparison(specs: list[SceneSpec]) -> dict:
    """Per category, our targets' median cube-root box volume against AI2-THOR's assets'
    (scenes/data/ai2thor_sizes.json), measured on the objects' own boxes (:func:`own_box_size`).

    Returns
    -------
    dict
        ``categories``: ``{name: {"n_targets", "ours_m", "ai2thor_m", "ratio"}}`` (cube-root
        volumes in metres; only categories AI2-THOR has); ``weighted_ratio``: the target-weighted
        geometric mean of the ratios; ``spread_factor``: exp of the target-weighted standard
        deviation of log ratio (1.0: every category off by the same factor); ``n_targets_compared``
        and ``n_targets``; ``not_in_ai2thor``: target counts of our categories AI2-THOR lacks.
    """
    from spatialscout_gym.scenes.sizes import ai2thor_reference
    ref = ai2thor_reference()
    median_q = ref["quantiles"].index(0.5)
    vols: dict[str, list[float]] = {}
    n_all = 0
    for spec in specs:
        for o in spec.private.objects:
            if o.role != "target":
                continue
            n_all += 1
            vols.setdefault(o.category, []).append(float(np.cbrt(np.prod(own_box_size(o)))))
    cats, missing = {}, {}
    for name, v in sorted(vols.items()):
        row = ref["categories"].get(name)
        if row is None:
            missing[name] = len(v)
            continue
        ours, theirs = float(np.median(v)), float(row["cbrt_volume_m"][median_q])
        cats[name] = {"n_targets": len(v), "ours_m": ours, "ai2thor_m": theirs, "ratio": ours / theirs}
    w = np.array([c["n_targets"] for c in cats.values()], float)
    lr = np.log([c["ratio"] for c in cats.values()])
    mean = float(np.sum(w * lr) / w.sum())
    return {"categories": cats, "weighted_ratio": float(np.exp(mean)),
            "spread_factor": float(np.exp(np.sqrt(np.sum(w * (lr - mean) ** 2) / w.sum()))),
            "n_targets_compared": int(w.sum()), "n_targets": n_all, "not_in_ai2thor": missing,
            "source": ref["source"], "measured_on": "objects' own boxes (smallest box about a vertical axis)"}


def reference_losses(specs: list[SceneSpec], seed: int = 0) -> dict:
    """Scene-macro full-scene losses (metres) of the inventory-only references (docs/protocol.md
    section 6): ``origin`` (every target at the start) and ``uniform_ball`` (uniform in the
    search ball), as ``spatialscout score --reference`` computes them on exported scenes."""
    import zlib

    from spatialscout_gym.core.references import origin_predictions, uniform_ball_predictions
    from spatialscout_gym.core.scoring import GroundTruth, score_scene
    out: dict[str, list] = {"origin": [], "uniform_ball": []}
    for spec in specs:
        gt = GroundTruth.from_dict(spec.ground_truth_dict())
        out["origin"].append(score_scene(gt, origin_predictions(gt)).metrics()["full_scene_loss_m"])
        rng = np.random.default_rng([seed, zlib.crc32(gt.scene_id.encode("utf-8"))])
        out["uniform_ball"].append(
            score_scene(gt, uniform_ball_predictions(gt.ids, gt.radius_m, rng)).metrics()["full_scene_loss_m"])
    return {k: float(np.mean(v)) for k, v in out.items()}


def plot_size_comparison(sizes: dict, path: str | os.PathLike, title: str = "") -> None:
    """A PNG: per category (most targets first), our median cube-root box volume against
    AI2-THOR's, on a log scale, with the weighted ratio in the title."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from pathlib import Path
    cats = sorted(sizes["categories"].items(), key=lambda kv: -kv[1]["n_targets"])
    names = [k for k, _ in cats]
    x = np.arange(len(names))
    fig, ax = plt.subplots(figsize=(max(8, 0.18 * len(names)), 4.5))
    ax.bar(x - 0.2, [c["ours_m"] for _, c in cats], 0.4, label="ours (median)")
    ax.bar(x + 0.2, [c["ai2thor_m"] for _, c in cats], 0.4, label="AI2-THOR assets (median)")
    ax.set_yscale("log")
    ax.set_xticks(x, names, rotation=90, fontsize=6)
    ax.set_ylabel("cube-root box volume (m)")
    ax.set_title(f"{title}: object size vs AI2-THOR, weighted ratio {sizes['weighted_ratio']:.3f}, "
                 f"spread x{sizes['spread_factor']:.3f}")
    ax.legend()
    fig.tight_layout()
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)


# ---------------------------------------------------------------- room plausibility -------------
def room_plausibility(specs: list[SceneSpec], worst: int = 4) -> dict:
    """How many floor and surface targets sit in a room type where ProcTHOR never places their
    type (its placement annotations, scenes/placement.py; offices count as bedrooms).

    Only ProcTHOR types annotated by room and not hung on walls are judged. Returns
    ``{"single_rooms": {...}, "apartments": {...}}``, each with ``judged``, ``implausible``,
    ``fraction`` and ``by_room`` (per our room kind: ``judged``, ``implausible``, ``fraction``
    and ``worst``, the most frequent implausible categories as ``[[name, count], ...]``), and
    ``n_categories`` (distinct target categories) against ProcTHOR's type count.
    """
    from spatialscout_gym.scenes.placement import annotated_rooms, procthor_placement, procthor_room
    types = procthor_placement()["types"]
    out: dict = {}
    cats: set[str] = set()
    for key, single in (("single_rooms", True), ("apartments", False)):
        by_room: dict[str, dict] = {}
        for spec in specs:
            if (spec.public.description.get("layout") == "single_room") != single:
                continue
            for o in spec.private.objects:
                if o.role != "target":
                    continue
                cats.add(o.category)
                rooms = annotated_rooms(o.category)
                if rooms is None or types[o.category]["onWall"]:
                    continue
                kind = (o.room or "").rsplit("_", 1)[0]
                if kind not in ("Kitchen", "LivingRoom", "Bedroom", "Bathroom", "Office"):
                    continue
                r = by_room.setdefault(kind, {"judged": 0, "implausible": 0, "worst": Counter()})
                r["judged"] += 1
                if not rooms[procthor_room(kind)]:
                    r["implausible"] += 1
                    r["worst"][o.category] += 1
        judged = sum(r["judged"] for r in by_room.values())
        bad = sum(r["implausible"] for r in by_room.values())
        out[key] = {"judged": judged, "implausible": bad, "fraction": bad / judged if judged else 0.0,
                    "by_room": {k: {"judged": r["judged"], "implausible": r["implausible"],
                                    "fraction": r["implausible"] / r["judged"] if r["judged"] else 0.0,
                                    "worst": [[c, n] for c, n in r["worst"].most_common(worst)]}
                                for k, r in sorted(by_room.items())}}
    out["n_categories"] = len(cats)
    out["procthor_types"] = len(types)
    out["procthor_types_as_targets"] = len(cats & set(types))
    return out
