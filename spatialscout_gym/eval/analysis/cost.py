"""Accuracy against cost (paper Figure 7): all-target mean IoU vs. average cost per task, with the
Pareto frontier.

A model is *priced* when every one of its completed episodes recorded a cost (``model.cost_usd``
in ``result.json``, from a price table); its cost per task is the mean over those episodes, USD.
Models without a price (no price table, reference agents) are listed, not plotted.

The **Pareto frontier** is the set of priced models that no other priced model dominates; ``a``
dominates ``b`` when ``cost_a <= cost_b`` and ``iou_a >= iou_b`` with at least one strict. It is
returned in increasing cost.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Mapping

__all__ = ["pareto_frontier", "cost_summary", "plot_cost"]


def pareto_frontier(points: Mapping[str, tuple[float, float]]) -> list[str]:
    """Names of the non-dominated ``{name: (cost, iou)}`` points, by increasing cost.

    >>> pareto_frontier({"a": (1.0, 0.3), "b": (2.0, 0.2), "c": (3.0, 0.5)})
    ['a', 'c']
    """
    front = []
    for n, (c, q) in points.items():
        dominated = any((c2 <= c and q2 >= q) and (c2 < c or q2 > q) for m, (c2, q2) in points.items() if m != n)
        if not dominated:
            front.append(n)
    return sorted(front, key=lambda n: (points[n][0], -points[n][1], n))


def cost_summary(rows: Mapping[str, dict]) -> dict:
    """``{"points": {name: {"cost_per_task_usd", "all_mean_iou"}}, "frontier": [...],
    "unpriced": [...]}`` from leaderboard rows (their ``cost_per_task_usd`` and
    ``object_micro.all.mean_iou``)."""
    points = {n: (r["cost_per_task_usd"], r["object_micro"]["all"]["mean_iou"]) for n, r in rows.items()
              if r.get("cost_per_task_usd") is not None and r["cost_per_task_usd"] > 0}
    return {"points": {n: {"cost_per_task_usd": c, "all_mean_iou": q} for n, (c, q) in points.items()},
            "frontier": pareto_frontier(points),
            "unpriced": sorted(n for n in rows if n not in points)}


def plot_cost(summary: dict, path: str | os.PathLike) -> Path | None:
    """Draw the cost picture (log cost axis, frontier as a step line) to ``path``; None (nothing
    written) when no model is priced. Each point carries a number, and the key under the axes names
    it: a row's name is often longer than the room beside its point, and a name drawn there spilled
    over the axes and out of the figure."""
    pts = summary["points"]
    if not pts:
        return None
    import textwrap

    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FuncFormatter, LogLocator

    front = summary["frontier"]
    key = [f"{i}  {n}" + ("  (Pareto)" if n in front else "") for i, n in enumerate(pts, 1)]
    unpriced = ("no price, not plotted: " + ", ".join(summary["unpriced"])) if summary["unpriced"] else ""
    lines = [*key, *textwrap.wrap(unpriced, 110)]
    key_in = 0.16 * len(lines) + 0.3          # the key's height under the axes, inches
    fig = plt.figure(figsize=(6.4, 4.4 + key_in))
    ax = fig.add_axes((0.12, (key_in + 0.55) / (4.4 + key_in), 0.84, 3.45 / (4.4 + key_in)))
    for i, (n, p) in enumerate(pts.items(), 1):
        on = n in front
        x, y = p["cost_per_task_usd"], 100 * p["all_mean_iou"]
        ax.scatter(x, y, s=45 if on else 30, color="C3" if on else "C0", zorder=3)
        ax.annotate(str(i), (x, y), fontsize=8, xytext=(4, 4), textcoords="offset points", annotation_clip=True)
    if front:
        xs = [pts[n]["cost_per_task_usd"] for n in front]
        ys = [100 * pts[n]["all_mean_iou"] for n in front]
        ax.step(xs, ys, where="post", color="C3", lw=1.2, label="Pareto frontier")
        ax.legend(fontsize=8, loc="best")
    ax.set_xscale("log")
    ax.margins(x=0.12, y=0.12)                # room for each point's number inside the axes
    ax.xaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    ax.xaxis.set_minor_formatter(FuncFormatter(lambda v, _: ""))
    ax.set_xlabel("average cost per task (USD, log scale)")
    ax.set_ylabel("all-target mean IoU (%)")
    ax.set_title("Accuracy vs. cost")
    ax.grid(True, which="both", lw=0.3)
    top = (key_in + 0.05) / (4.4 + key_in)
    for j, line in enumerate(lines):
        fig.text(0.02, top - (j + 1) * 0.16 / (4.4 + key_in), line, fontsize=7,
                 color="0.15" if j < len(key) else "0.4", family="monospace" if j < len(key) else None)
    out = Path(path)
    fig.savefig(out, dpi=100)
    plt.close(fig)
    return out
