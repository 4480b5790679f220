"""Tool-use behaviour over an episode (paper Figures 5-6), per model.

Counted from traces (:mod:`spatialscout_gym.eval.analysis.trajectory`): every tool the agent *asked for*
counts once, refused calls included (a refusal is still behaviour), under its tool name or
``"other"`` for an unknown name. Calls are model calls for model agents, tool calls otherwise.

* ``total_per_task[tool]``: tool uses per episode, averaged over the model's completed episodes.
* ``per_bin[tool][b]``: tool uses in calls ``[b * bin_calls, (b + 1) * bin_calls)`` per episode
  that was still running at the bin's first call (``calls_used > b * bin_calls``), so episodes
  that stopped early do not dilute later bins; ``episodes_in_bin[b]`` says how many that was.
* ``share[tool]``: the tool's share of all uses.

:func:`plot_behaviour` draws both (matplotlib, Agg backend, imported there).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Mapping, Sequence

from spatialscout_gym.episode.tools import TOOL_NAMES
from spatialscout_gym.eval.analysis.trajectory import OTHER_TOOL, Trajectory

__all__ = ["tool_behaviour", "plot_behaviour", "BIN_CALLS", "TOOLS"]

BIN_CALLS = 10
"""Calls per bin of the over-the-episode profile."""
TOOLS: tuple[str, ...] = TOOL_NAMES + (OTHER_TOOL,)


def tool_behaviour(trajectories: Sequence[Trajectory], bin_calls: int = BIN_CALLS) -> dict:
    """The behaviour dict of one model's episodes (see the module docstring).

    Returns
    -------
    dict
        ``episodes``, ``calls_kind``, ``bin_calls``, ``bins`` (``[[first call, end call), ...]``),
        ``episodes_in_bin``, ``per_bin`` ({tool: [uses per running episode]}), ``total_per_task``
        ({tool: uses per episode}), ``share`` ({tool: fraction}), ``calls_per_task``.
    """
    if bin_calls < 1:
        raise ValueError(f"bin_calls must be >= 1, got {bin_calls}")
    n = len(trajectories)
    last_call = max((u.call for t in trajectories for u in t.tool_uses), default=-1)
    longest = max([t.calls_used for t in trajectories] + [last_call + 1], default=0)
    n_bins = max(1, -(-longest // bin_calls))
    sums = {tool: [0] * n_bins for tool in TOOLS}
    totals = {tool: 0 for tool in TOOLS}
    running = [sum(1 for t in trajectories if max(t.calls_used, 1) > b * bin_calls) for b in range(n_bins)]
    for t in trajectories:
        for u in t.tool_uses:
            b = max(u.call, 0) // bin_calls
            sums[u.tool][b] += 1
            totals[u.tool] += 1
    all_uses = sum(totals.values())
    kinds = sorted({t.calls_kind for t in trajectories})
    return {
        "episodes": n, "calls_kind": kinds[0] if len(kinds) == 1 else kinds, "bin_calls": bin_calls,
        "bins": [[b * bin_calls, (b + 1) * bin_calls] for b in range(n_bins)],
        "episodes_in_bin": running,
        "per_bin": {tool: [s / r if r else 0.0 for s, r in zip(sums[tool], running)] for tool in TOOLS},
        "total_per_task": {tool: totals[tool] / n if n else 0.0 for tool in TOOLS},
        "share": {tool: totals[tool] / all_uses if all_uses else 0.0 for tool in TOOLS},
        "calls_per_task": sum(t.calls_used for t in trajectories) / n if n else 0.0,
    }


def plot_behaviour(behaviour: Mapping[str, dict], out_dir: str | os.PathLike) -> dict[str, Path]:
    """Write ``behaviour_totals.png`` (uses per task of each tool, one bar group per model) and
    ``behaviour_over_calls.png`` (one panel per model: uses per running episode in each bin of
    calls, stacked bars, one colour per tool; models counted in model calls and in tool calls
    are in separate groups with their own heading, never on one axis) to ``out_dir``; returns
    ``{name: path}``. Tools nobody used are left out of both."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    names = list(behaviour)
    used = [t for t in TOOLS if any(b["total_per_task"][t] > 0 for b in behaviour.values())] or list(TOOL_NAMES)
    colors = {t: plt.get_cmap("tab10")(i % 10) if i < 10 else (0.35, 0.35, 0.35, 1.0) for i, t in enumerate(TOOLS)}
    paths: dict[str, Path] = {}

    fig, ax = plt.subplots(figsize=(max(6.0, 1.2 * len(names) + 4), 4.2))
    width = 0.8 / len(used)
    x = np.arange(len(names))
    for i, tool in enumerate(used):
        ax.bar(x + (i - (len(used) - 1) / 2) * width, [behaviour[n]["total_per_task"][tool] for n in names],
               width, label=tool, color=colors[tool])
    ax.set_xticks(x, names, rotation=15, ha="right", fontsize=8)
    ax.set_ylabel("tool uses per task")
    ax.set_title("Tool use per task (all calls of completed episodes)")
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    ax.grid(axis="y", lw=0.3)
    fig.tight_layout()
    paths["behaviour_totals"] = out / "behaviour_totals.png"
    fig.savefig(paths["behaviour_totals"], dpi=100)
    plt.close(fig)

    # One group of panels per kind of x axis (model calls, tool calls), each with its own heading,
    # so that the two counts never share an axis; stacked bars, so no tool hides another.
    def kind_of(name: str) -> str:
        k = behaviour[name]["calls_kind"]
        return k if isinstance(k, str) else "calls"

    kinds = sorted({kind_of(n) for n in names}, key=lambda k: (k != "model_calls", k))
    groups = [(k, [n for n in names if kind_of(n) == k]) for k in kinds]
    cols = min(3, max(len(g) for _, g in groups))
    group_rows = [-(-len(g) // cols) for _, g in groups]
    fig = plt.figure(figsize=(4.6 * cols + 1.8, sum(3.3 * r + 0.5 for r in group_rows)))
    subfigs = fig.subfigures(len(groups), 1, squeeze=False, height_ratios=[3.3 * r + 0.5 for r in group_rows])
    for (kind, group), rows, sub in zip(groups, group_rows, subfigs[:, 0]):
        axs = sub.subplots(rows, cols, squeeze=False)
        sub.suptitle(f"x axis: {kind.replace('_', ' ')}", fontsize=10, fontweight="bold")
        for k, name in enumerate(group):
            b = behaviour[name]
            ax = axs[k // cols][k % cols]
            lefts = [lo for lo, _ in b["bins"]]
            width = b["bins"][0][1] - b["bins"][0][0] if b["bins"] else 1
            bottom = np.zeros(len(lefts))
            for tool in used:
                ys = np.asarray(b["per_bin"][tool], dtype=float)
                ax.bar(lefts, ys, width * 0.9, bottom=bottom, align="edge", color=colors[tool], label=tool)
                bottom += ys
            ax.set_xlim(0, b["bins"][-1][1] if b["bins"] else 1)
            ax.set_xlabel(f"{kind.replace('_', ' ')} (bins of {b['bin_calls']})")
            ax.set_ylabel("uses per running episode")
            ax.set_title(name, fontsize=9)
            ax.grid(axis="y", lw=0.3)
        for k in range(len(group), rows * cols):
            axs[k // cols][k % cols].axis("off")
        sub.subplots_adjust(left=0.9 / (4.6 * cols + 1.8), right=1 - 1.8 / (4.6 * cols + 1.8), bottom=0.2,
                            top=0.82, wspace=0.35, hspace=0.6)
    handles = [plt.Rectangle((0, 0), 1, 1, color=colors[t]) for t in used]
    fig.legend(handles, used, loc="center right", fontsize=7, frameon=False, title="tool", title_fontsize=8)
    paths["behaviour_over_calls"] = out / "behaviour_over_calls.png"
    fig.savefig(paths["behaviour_over_calls"], dpi=100)
    plt.close(fig)
    return paths
