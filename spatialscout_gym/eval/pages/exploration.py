"""The "Exploration of the scene" section of ``report`` and ``compare``: the run record's derived
``exploration`` block (:mod:`spatialscout_gym.core.exploration`; definitions in docs/nbv.md,
"Exploration metrics"), as means per episode, and the coverage and all-target IoU curves over
images."""

from __future__ import annotations

from typing import Any, Sequence

from spatialscout_gym.core.exploration import curve_auc
from spatialscout_gym.core.records import RunRecord

__all__ = ["scene_exploration_summary", "scene_exploration_lines", "SCENE_COLUMNS", "CURVE_POINTS"]

SCENE_COLUMNS = (("known_occupancy_fraction", "known occupancy (% of interior)", True),
                 ("explored_floor_fraction", "explored floor (% of floor)", True),
                 ("rooms_visited", "rooms visited", False),
                 ("multi_room", "episodes in 2+ rooms", False),
                 ("blocked_moves", "blocked moves", False),
                 ("coverage_auc", "coverage AUC (%)", True),
                 ("iou_auc", "IoU AUC (%)", True))
"""Summary key, column label, shown as a percentage."""

CURVE_POINTS = (1, 2, 5, 10, 20, 40, 80)
"""The images at which the curves are shown (those within the budget, and the budget itself)."""


def _mean(xs: Sequence[float]) -> float:
    return float(sum(xs) / len(xs)) if xs else float("nan")


def _mean_curve(curves: Sequence[Sequence[float]], budget: int) -> list[float]:
    """Mean over episodes at images 1..budget, an episode that ended early keeping its last value."""
    padded = [list(c[:budget]) + [c[-1]] * max(0, budget - len(c)) if c else [0.0] * budget for c in curves]
    return [_mean([p[k] for p in padded]) for k in range(budget)]


def scene_exploration_summary(records: Sequence[RunRecord]) -> dict[str, Any] | None:
    """Means per episode over the episodes whose record has an ``exploration`` block, with the mean
    curves over the image budget (the largest budget among them); None when none has one."""
    rows = [(r, b) for r in records if (b := r.exploration) is not None]
    if not rows:
        return None
    budget = max(r.image_budget or len(b.coverage_curve) for r, b in rows)
    blocks = [b for _, b in rows]
    cov = _mean_curve([b.coverage_curve for b in blocks], budget)
    iou = _mean_curve([b.iou_curve for b in blocks], budget)
    out: dict[str, Any] = {"episodes": len(blocks), "image_budget": budget,
                           "multi_room": sum(b.rooms_visited >= 2 for b in blocks),
                           "coverage_curve": cov, "iou_curve": iou}
    for k in ("known_occupancy_fraction", "explored_floor_fraction", "rooms_visited", "rooms", "blocked_moves",
              "coverage_auc", "iou_auc"):
        out[k] = _mean([float(getattr(b, k)) for b in blocks])
    out["mean_curve_auc"] = curve_auc(cov, budget)   # equals the mean of the episodes' coverage_auc
    return out


def _cell(e: dict, key: str, pct: bool) -> str:
    if key == "multi_room":
        return f"{e['multi_room']} of {e['episodes']}"
    if key == "rooms_visited":
        return f"{e['rooms_visited']:.2f} of {e['rooms']:.2f}"
    return f"{100 * e[key]:.1f}" if pct else f"{e[key]:.2f}"


def scene_exploration_lines(summaries: dict[str, dict | None]) -> list[str]:
    """Markdown: the exploration table (one row per run, named as given: Markdown-safe names) and the
    coverage and IoU curves over images; [] when no run has exploration figures."""
    rows = {n: e for n, e in summaries.items() if e}
    if not rows:
        return []
    lines = ["## Exploration of the scene (NBV agents, mean per episode)", "",
             "Known occupancy: interior voxels (0.25 m) the captures' rays made known, of the scene's interior; "
             "explored floor: 0.25 m floor cells a depth pixel hit, of the scene's floor (every pixel of every "
             "capture); AUC: mean of the curve over the V images (docs/nbv.md, \"Exploration metrics\").", "",
             "| run | episodes | " + " | ".join(label for _, label, _ in SCENE_COLUMNS) + " |",
             "|---|---|" + "---|" * len(SCENE_COLUMNS)]
    for n, e in rows.items():
        lines.append(f"| {n} | {e['episodes']} | " + " | ".join(_cell(e, k, p) for k, _, p in SCENE_COLUMNS) + " |")
    budget = max(int(e["image_budget"]) for e in rows.values())
    points = sorted({k for k in CURVE_POINTS if k <= budget} | {budget})
    lines += ["", "Coverage and all-target IoU (%) after k images, mean per episode:", "",
              "| run | curve | " + " | ".join(f"k={k}" for k in points) + " |",
              "|---|---|" + "---|" * len(points)]
    for n, e in rows.items():
        for name, key in (("coverage", "coverage_curve"), ("IoU", "iou_curve")):
            c = e[key]
            vals = [f"{100 * c[min(k, len(c)) - 1]:.1f}" if c else "-" for k in points]
            lines.append(f"| {n} | {name} | " + " | ".join(vals) + " |")
    return lines + [""]
