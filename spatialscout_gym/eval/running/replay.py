"""Offline replay of traces (docs/protocol.md section 7).

Every ``map`` event of a trace holds the whole accepted map after a ``submit_positions``; replay
scores each snapshot against the run's ``ground_truth.json`` and gives, per episode and pooled
over the evaluation (object-micro), the all-target mean IoU, coverage, centre error and the
full-scene loss for lambda in {1, 2, 5, 10} m as functions of

* **calls**: model calls made so far (``model_call_index + 1`` when the trace records model calls,
  as a VLM runner does), else tool calls made so far (``tool_call_index + 1``);
* **images**: images used so far (the initial image included).

Each episode's curve starts with the empty map at its start (0 calls, the images used then) and
its last point is the final accepted map, so the last point equals the run's final score. The
pooled value at ``x`` uses each episode's latest snapshot at or before ``x`` (an episode that has
ended keeps its final map).

Outputs under ``DIR/replay/``: ``replay.json``, ``curves_calls.png``, ``curves_images.png``,
``loss_lambda.png`` (matplotlib with the Agg backend, imported in :func:`plot_replay` only).
"""

from __future__ import annotations

import bisect
import dataclasses
import os
from pathlib import Path
from typing import Any, Sequence

from spatialscout_gym.core.files import load_ground_truth, write_json_atomic
from spatialscout_gym.core.scoring import DEFAULT_LAMBDA_M, GroundTruth, SceneScore, aggregate, score_scene
from spatialscout_gym.core.run_files import RESULT_FILE, TRACE_FILE
from spatialscout_gym.core.trace_events import MapEvent
from spatialscout_gym.eval.layout import EvalDir, load_trace, read_record

__all__ = ["LAMBDAS_M", "Snapshot", "EpisodeCurve", "replay_episode", "replay_runs", "pooled_curve",
           "write_replay", "plot_replay", "REPLAY_DIR"]

LAMBDAS_M: tuple[float, ...] = (1.0, 2.0, 5.0, 10.0)
"""Omission penalties of the re-scored full-scene loss, metres (docs/protocol.md section 7)."""
REPLAY_DIR = "replay"
AXES = ("calls", "images")


@dataclasses.dataclass
class Snapshot:
    """One accepted map of an episode and where it was made."""

    calls: int
    images: int
    score: SceneScore


@dataclasses.dataclass
class EpisodeCurve:
    """The scored snapshots of one run directory, in trace order (first: the empty start map).

    Attributes
    ----------
    key : str
        ``<scene dir>/seed_<k>`` (or the run directory name).
    x_calls : {"model_calls", "tool_calls"}
        What the ``calls`` axis counts.
    snapshots : list of Snapshot
    """

    key: str
    scene_id: str
    x_calls: str
    snapshots: list[Snapshot]

    def to_dict(self, lams: Sequence[float] = LAMBDAS_M) -> dict:
        pts = []
        for s in self.snapshots:
            m = s.score.metrics()
            pts.append({"calls": s.calls, "images": s.images, "all_mean_iou": m["all"]["mean_iou"],
                        "coverage": m["coverage"], "center_error_mean_m": m["center_error_m"]["mean"],
                        "center_error_median_m": m["center_error_m"]["median"],
                        "loss_m": {_lam_key(l): s.score.metrics(l)["full_scene_loss_m"] for l in lams}})
        return {"key": self.key, "scene_id": self.scene_id, "x_calls": self.x_calls, "points": pts}


def _lam_key(lam: float) -> str:
    return f"{lam:g}"


def replay_episode(run_dir: str | os.PathLike, gt: GroundTruth | None = None) -> EpisodeCurve:
    """Score every accepted-map snapshot in ``run_dir/trace.jsonl``.

    Raises
    ------
    FileNotFoundError
        No ``trace.jsonl`` or ``ground_truth.json`` in ``run_dir``.
    """
    d = Path(run_dir)
    if not (d / TRACE_FILE).is_file():
        raise FileNotFoundError(f"{d} has no trace.jsonl (expected a run directory of `spatialscout run` "
                                f"or `spatialscout evaluate`)")
    gt = gt if gt is not None else load_ground_truth(d)
    trace = load_trace(d / TRACE_FILE)
    model_calls = trace.is_model_run
    snaps = [Snapshot(0, 1, score_scene(gt, {}))]
    for e in trace.of(MapEvent):
        calls = (e.model_call_index if model_calls and e.model_call_index is not None else e.tool_call_index) + 1
        snaps.append(Snapshot(calls, e.images_used, score_scene(gt, e.accepted_map)))
    key = EvalDir.key_of(d)
    return EpisodeCurve(key, gt.scene_id, "model_calls" if model_calls else "tool_calls", snaps)


def _failed(run_dir: Path) -> bool:
    """True when ``run_dir/result.json`` records a failed episode (no ground truth is written)."""
    path = run_dir / RESULT_FILE
    return path.is_file() and read_record(path).status == "failed"


def replay_runs(out_dir: str | os.PathLike) -> list[EpisodeCurve]:
    """Replay every run directory of an evaluation (or ``out_dir`` itself when it is one).

    Failed episodes (``"status": "failed"`` in ``result.json``) are left out, as from every
    aggregate (docs/protocol.md section 5).
    """
    out = Path(out_dir)
    dirs = EvalDir(out).trace_dirs()
    if not dirs:
        raise FileNotFoundError(f"{out} holds no run directory with a trace.jsonl")
    kept = [d for d in dirs if not _failed(d)]
    if not kept:
        raise FileNotFoundError(f"{out} holds only failed episodes ({len(dirs)}; see their result.json); "
                                f"nothing to replay")
    return [replay_episode(d) for d in kept]


def pooled_curve(curves: Sequence[EpisodeCurve], axis: str, lams: Sequence[float] = LAMBDAS_M) -> dict:
    """Object-micro curves over the evaluation against ``axis`` (``"calls"`` or ``"images"``).

    Returns
    -------
    dict
        ``{"x": [...], "all_mean_iou", "coverage", "center_error_mean_m", "center_error_median_m":
        [...], "loss_m": {lambda: [...]}, "loss_macro_m": {lambda: [...]}}``, one entry per x.
    """
    if axis not in AXES:
        raise ValueError(f"axis must be one of {AXES}, got {axis!r}")
    once = len({c.scene_id for c in curves}) == len(curves)
    xs = sorted({getattr(s, axis) for c in curves for s in c.snapshots})
    keys_per_curve = []
    for c in curves:
        # the last snapshot at each x (several maps may share an image count)
        keys_per_curve.append([getattr(s, axis) for s in c.snapshots])
    out: dict[str, Any] = {"x": xs, "all_mean_iou": [], "coverage": [], "center_error_mean_m": [],
                           "center_error_median_m": [], "loss_m": {_lam_key(l): [] for l in lams},
                           "loss_macro_m": {_lam_key(l): [] for l in lams}}
    for x in xs:
        scores = []
        for c, keys in zip(curves, keys_per_curve):
            i = bisect.bisect_right(keys, x) - 1
            s = c.snapshots[max(i, 0)].score
            scores.append(s if once else dataclasses.replace(s, scene_id=c.key))
        agg = aggregate(scores, DEFAULT_LAMBDA_M)
        om = agg["object_micro"]
        out["all_mean_iou"].append(om["all"]["mean_iou"])
        out["coverage"].append(om["coverage"])
        out["center_error_mean_m"].append(om["center_error_m"]["mean"])
        out["center_error_median_m"].append(om["center_error_m"]["median"])
        for l in lams:
            a = aggregate(scores, l)
            out["loss_m"][_lam_key(l)].append(a["object_micro"]["full_scene_loss_m"])
            out["loss_macro_m"][_lam_key(l)].append(a["scene_macro"]["full_scene_loss_m"])
    return out


def plot_replay(data: dict, out_dir: str | os.PathLike) -> dict[str, Path]:
    """Write ``curves_calls.png``, ``curves_images.png`` and ``loss_lambda.png`` from the
    :func:`write_replay` dict; return their paths."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    import numpy as np
    from matplotlib.ticker import MaxNLocator

    out = Path(out_dir)
    paths = {}
    calls_label = "model calls" if data["x_calls"] == "model_calls" else "tool calls"

    def percent_axis(a, values) -> None:
        # from 0 (a sliver below, so a curve at 0 is not hidden by the axis), with headroom; never
        # the -0.04..0.04 of an all-zero curve
        top = max([0.0, *[v for v in values if v is not None]])
        top = min(100.0, max(10.0, 10 * np.ceil(top * 1.15 / 10)))
        a.set_ylim(-0.02 * top, top)

    def x_end(axis: str) -> float:
        """The last x any episode reached (a pooled curve is drawn on to it at its last value)."""
        return max([1, *data["pooled"][axis]["x"], *[p[axis] for ep in data["episodes"] for p in ep["points"]]])

    def extended(xs, ys, end):
        xs, ys = list(xs), list(ys)
        if xs and xs[-1] < end:
            xs, ys = xs + [end], ys + [ys[-1]]
        return xs, ys

    for axis, label in (("calls", calls_label), ("images", "images used")):
        pooled = data["pooled"][axis]
        fig, axs = plt.subplots(1, 3, figsize=(13, 3.9))
        seen: dict[str, list[float]] = {"iou": [], "cov": []}
        for ep in data["episodes"]:
            xs = [p[axis] for p in ep["points"]]
            iou = [100 * p["all_mean_iou"] for p in ep["points"]]
            cov = [100 * p["coverage"] for p in ep["points"]]
            seen["iou"] += iou
            seen["cov"] += cov
            axs[0].step(xs, iou, where="post", color="0.8", lw=0.7)
            axs[1].step(xs, cov, where="post", color="0.8", lw=0.7)
        end = x_end(axis)
        iou = [100 * v for v in pooled["all_mean_iou"]]
        cov = [100 * v for v in pooled["coverage"]]
        axs[0].step(*extended(pooled["x"], iou, end), where="post", color="C0", lw=2, marker="o", ms=3)
        axs[1].step(*extended(pooled["x"], cov, end), where="post", color="C1", lw=2, marker="o", ms=3)
        percent_axis(axs[0], seen["iou"] + iou)
        percent_axis(axs[1], seen["cov"] + cov)
        drawn = False
        for key, style in (("center_error_median_m", "-"), ("center_error_mean_m", "--")):
            pts = [(x, v) for x, v in zip(pooled["x"], pooled[key]) if v is not None]
            if pts:
                drawn = True
                axs[2].step(*zip(*pts), where="post", ls=style, color="C2", lw=2, marker="o", ms=3,
                            label=key.split("_")[2] + " (matched)")
        if drawn:
            axs[2].set_ylim(bottom=0)
            axs[2].legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=2, frameon=False)
        else:
            axs[2].text(0.5, 0.5, "no matched submission yet", ha="center", va="center",
                        transform=axs[2].transAxes, color="0.4")
            axs[2].set_yticks([])
        axs[0].set_ylabel("all-target mean IoU (%)")
        axs[1].set_ylabel("coverage (%)")
        axs[2].set_ylabel("centre error (m)")
        for a in axs:
            a.set_xlabel(label)
            a.set_xlim(0, end)
            a.xaxis.set_major_locator(MaxNLocator(integer=True))   # calls and images are counts
            a.grid(True, lw=0.3)
        fig.suptitle(f"{data['name']}: replay against {label} (colour: object-micro pooled; grey: single "
                     f"episodes)")
        fig.tight_layout()
        paths[axis] = out / f"curves_{axis}.png"
        fig.savefig(paths[axis], dpi=100)
        plt.close(fig)

    fig, axs = plt.subplots(1, 2, figsize=(10, 4.2))
    for a, (axis, label) in zip(axs, (("calls", calls_label), ("images", "images used"))):
        pooled = data["pooled"][axis]
        end = x_end(axis)
        for k, (lam, ys) in enumerate(pooled["loss_m"].items()):
            a.step(*extended(pooled["x"], ys, end), where="post", color=f"C{k}", lw=2, marker="o", ms=3,
                   label=f"lambda = {lam} m")
        a.set_xlabel(label)
        a.set_ylabel("full-scene loss, object-micro (m)")
        a.set_ylim(bottom=0)
        a.set_xlim(0, end)
        a.xaxis.set_major_locator(MaxNLocator(integer=True))
        a.grid(True, lw=0.3)
    handles, labels = axs[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=max(1, len(labels)), fontsize=8, frameon=False)
    fig.suptitle(f"{data['name']}: full-scene loss L = C * mean error + (1 - C) * lambda")
    fig.tight_layout(rect=(0, 0.08, 1, 1))
    paths["loss"] = out / "loss_lambda.png"
    fig.savefig(paths["loss"], dpi=100)
    plt.close(fig)
    return paths


def write_replay(out_dir: str | os.PathLike, *, plots: bool = True,
                 lams: Sequence[float] = LAMBDAS_M) -> dict:
    """Replay an evaluation (or one run directory) and write ``<out_dir>/replay/replay.json`` and,
    with ``plots``, the PNG curves; return the JSON dict.

    The dict: ``{"name", "x_calls", "lambdas_m", "episodes": [EpisodeCurve dicts],
    "pooled": {"calls": pooled curve, "images": pooled curve}, "final": {...}}`` where ``final``
    is the pooled value at the last x (equal to the evaluation's final object-micro score).
    """
    out = Path(out_dir)
    curves = replay_runs(out)
    kinds = {c.x_calls for c in curves}
    data: dict[str, Any] = {"name": out.resolve().name, "x_calls": "model_calls" if kinds == {"model_calls"} else "tool_calls",
            "lambdas_m": list(lams), "episodes": [c.to_dict(lams) for c in curves],
            "pooled": {axis: pooled_curve(curves, axis, lams) for axis in AXES}}
    p = data["pooled"]["calls"]
    data["final"] = {"all_mean_iou": p["all_mean_iou"][-1], "coverage": p["coverage"][-1],
                     "center_error_median_m": p["center_error_median_m"][-1],
                     "loss_m": {k: v[-1] for k, v in p["loss_m"].items()}}
    rdir = out / REPLAY_DIR
    rdir.mkdir(parents=True, exist_ok=True)
    write_json_atomic(rdir / "replay.json", data, indent=None)
    if plots:
        plot_replay(data, rdir)
    return data
