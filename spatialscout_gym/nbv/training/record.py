"""The run record both NBV trainers write (``train-nbv`` with SB3 or RLlib): the summary line a run
ends with, the learning curve drawn from ``progress.csv`` (chained over the runs an ``--init-model``
run continued) and its points. Kept apart from the trainers so neither imports the other."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

__all__ = ["summary_line", "curve_points", "INIT_PROGRESS", "CURVE_COLUMNS", "write_init_progress",
           "plot_learning_curve"]


def summary_line(steps: int, wall_s: float, episodes: int, returns: list[float], model_path: Path,
                 stopped_early: bool, interrupted: bool = False, agent: str = "ppo",
                 recent: tuple[int, float] | None = None) -> str:
    """The line ``train-nbv`` ends with: steps, wall time, steps/s, episodes finished, the mean
    return of the last 50 of ``returns`` (one per finished episode) or, given ``recent`` (episodes,
    mean return), of those episodes (RLlib reports per-iteration sums, not single episodes), and
    the model."""
    if recent is None:
        recent = (min(len(returns), 50), float(np.mean(returns[-50:])) if returns else float("nan"))
    ret = f"{recent[1]:.3f}" if recent[0] else "n/a"
    why = " (stopped by --time-limit-s)" if stopped_early else ""
    why = " (interrupted: Ctrl-C or SIGTERM)" if interrupted else why
    return (f"train-nbv: {steps} steps in {wall_s:.1f} s ({steps / max(wall_s, 1e-9):.1f} steps/s){why}, "
            f"{episodes} episodes, mean return of the last {recent[0]} {ret}; model saved to "
            f"{model_path}; evaluate with --agent {agent}:{model_path}")


def curve_points(progress: Path) -> np.ndarray:
    """Rows of ``progress.csv`` with finished episodes: columns environment steps, coverage,
    all-target mean IoU and elapsed seconds (NaN if not logged); shape (rows, 4), empty when none."""
    import csv

    rows = list(csv.DictReader(progress.open())) if progress.exists() else []
    pts = [(float(r["time/total_timesteps"]), float(r["charts/coverage"]), float(r["charts/all_mean_iou"]),
            float(r.get("time/time_elapsed") or "nan"))
           for r in rows if r.get("charts/coverage") and r.get("charts/all_mean_iou")
           and r.get("time/total_timesteps")]
    return np.asarray(pts, dtype=float).reshape(-1, 4)


INIT_PROGRESS = "init_progress.csv"
"""The curve of the run(s) an ``--init-model`` run continued, in its run directory: the earlier
run's ``progress.csv``, or, when that run continued another itself, the chain of their curve points
(:func:`write_init_progress`)."""

CURVE_COLUMNS = ("time/total_timesteps", "charts/coverage", "charts/all_mean_iou", "time/time_elapsed")
"""The ``progress.csv`` columns a learning curve reads (:func:`curve_points`)."""


def write_init_progress(init_model: Path, run_dir: Path) -> Path | None:
    """Write ``run_dir/INIT_PROGRESS`` for a run continuing ``init_model``: the earlier run's
    ``progress.csv`` as it is or, when that run continued another itself (an ``INIT_PROGRESS``
    beside it), that curve followed by the earlier run's own points with their steps counted on
    (:data:`CURVE_COLUMNS`; elapsed seconds stay each run's own), so a chain of continued runs draws
    as one curve. Returns the path, or None when the earlier run left no ``progress.csv``."""
    import shutil

    src = Path(init_model).parent
    own, out = src / "progress.csv", Path(run_dir) / INIT_PROGRESS
    if not own.exists():
        return None
    earlier = curve_points(src / INIT_PROGRESS)
    if not len(earlier):
        shutil.copyfile(own, out)
        return out
    pts = curve_points(own)
    pts[:, 0] += earlier[-1, 0]
    rows = np.vstack([earlier, pts])
    out.write_text(",".join(CURVE_COLUMNS) + "\n" + "".join(",".join(f"{v:.12g}" for v in r) + "\n" for r in rows))
    return out


def plot_learning_curve(run_dir: Path) -> Path | None:
    """Write ``run_dir/learning_curve.png`` from ``progress.csv``: environment steps vs the mean
    coverage and all-target mean IoU of the training episodes finished in each rollout (procedural
    training scenes). A run that continued another (``init_progress.csv`` beside it) is drawn after
    that run's curve, its steps counted on from the earlier run's last step, a dotted line where it
    took over (and a lighter one at each takeover inside a chain of earlier runs). Returns the
    path, or None when no episode has finished yet."""
    pts = curve_points(run_dir / "progress.csv")
    if not len(pts):
        return None
    earlier = curve_points(run_dir / INIT_PROGRESS)
    start = earlier[-1, 0] if len(earlier) else 0.0
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(6.4, 3.6), dpi=120)
    # one segment per run: a chain of earlier runs (write_init_progress) restarts its elapsed seconds
    cuts: np.ndarray | list[int] = np.flatnonzero(np.diff(earlier[:, 3]) < 0) + 1 if len(earlier) else []
    segments = [p for p in np.split(earlier, cuts) if len(p)] + [pts + np.array([start, 0.0, 0.0, 0.0])]
    for i, part in enumerate(segments):
        steps, cov, iou = part[:, 0], part[:, 1], part[:, 2]
        k = max(1, len(steps) // 25)    # a moving mean over k rollouts, drawn over the raw values

        def smooth(y: np.ndarray) -> np.ndarray:
            return np.convolve(y, np.ones(k) / k, mode="valid")

        for y, label, color, ls in ((cov, "coverage (inventory mapped)", "C0", "-"),
                                    (iou, "all-target mean IoU", "C1", "--")):
            ax.plot(steps, 100 * y, color=color, alpha=0.25, lw=0.8)
            ax.plot(steps[k - 1:], 100 * smooth(y), color=color, ls=ls, lw=1.5,
                    label=None if i else label + " (moving mean over rollouts)")
        if 0 < i < len(segments) - 1:
            ax.axvline(steps[0], color="0.7", ls=":", lw=1.0)
    if len(earlier):
        ax.axvline(start, color="0.4", ls=":", lw=1.0)
        args_path = run_dir / "args.json"
        run_args = json.loads(args_path.read_text()) if args_path.exists() else {}
        notes = [f"mapper {run_args['mapper']}"] if run_args.get("mapper") else []
        if run_args.get("single_room_share", -1) >= 0:
            notes.append(f"single-room share {run_args['single_room_share']:g}")
        if run_args.get("reward_submitted_weight"):
            notes.append(f"submitted weight {run_args['reward_submitted_weight']:g}")
        ax.annotate(" continued here" + "".join(f"\n {n}" for n in notes), (start, 0.7),
                    xycoords=("data", "axes fraction"), fontsize=7, color="0.3", va="top")
    minutes = f", {pts[-1, 3] / 60:.0f} min" if np.isfinite(pts[-1, 3]) else ""
    runs = "an earlier run" if len(segments) == 2 else f"{len(segments) - 1} earlier runs"
    before = f" after {int(start):,} of {runs}" if len(earlier) else ""
    ax.set_xlabel("environment steps (one motion + one capture each)")
    ax.set_ylabel("% (training episodes, V images)")
    ax.set_title(f"train-nbv {run_dir.name}: {int(pts[-1, 0]):,} steps{minutes}{before}", fontsize=9)
    ax.grid(alpha=0.3)
    ax.legend(loc="center left", bbox_to_anchor=(0.14, 0.42), fontsize=7, framealpha=0.9)
    fig.tight_layout()
    out = run_dir / "learning_curve.png"
    fig.savefig(out)
    plt.close(fig)
    return out
