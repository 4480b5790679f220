"""The top-down trajectory plot of an NBV episode (``spatialscout replay`` on an NBV run):
world x-y, metres. Every capture of the trace (docs/protocol.md section 7, ``capture`` events) is a
numbered dot with an arrow along its heading, joined in order; the start is a star. The scene's
floors, walls and the targets (``ground_truth.json`` boxes; the ones the accepted map holds
filled) are drawn beneath when the scene can be rebuilt from its catalog id (walls and floors)
and always from ``ground_truth.json`` (targets). The title carries the dynamics and the
exploration metrics of ``result.json``'s ``nbv`` block."""

from __future__ import annotations

import json
import os
from pathlib import Path

from spatialscout_gym.core.run_files import GROUND_TRUTH_FILE, PREDICTIONS_FILE, RESULT_FILE, TRACE_FILE
from spatialscout_gym.eval.layout import load_trace, read_record

__all__ = ["is_nbv_run", "capture_poses", "plot_nbv_trajectory", "write_nbv_trajectories"]


def is_nbv_run(run_dir: str | os.PathLike) -> bool:
    """Whether the run directory holds an NBV agent's episode (``result.json`` has an ``nbv`` block)."""
    path = Path(run_dir) / RESULT_FILE
    return path.is_file() and read_record(path).nbv is not None


def capture_poses(run_dir: str | os.PathLike) -> list[tuple[float, float, float]]:
    """``(x, y, yaw_deg)`` (world) of every capture of the trace, in order."""
    out = []
    for e in load_trace(Path(run_dir) / TRACE_FILE).captures:
        p = e.pose_world
        out.append((float(p["position_world"][0]), float(p["position_world"][1]), float(p["yaw_deg"])))
    return out


def _scene_boxes(scene_id: str):
    """World AABBs of the scene's walls and floors, or None when the id is not a catalog scene."""
    try:
        from spatialscout_gym.nbv.walls import WallMap
        from spatialscout_gym.scenes.catalog import load_scene
        walls = WallMap.from_spec(load_scene(scene_id))
    except Exception:   # a procedural or imported scene: drawn without its shell
        return None
    return walls.walls, walls.floors


def plot_nbv_trajectory(run_dir: str | os.PathLike, path: str | os.PathLike) -> Path:
    """Write the trajectory PNG of the NBV run in ``run_dir`` to ``path``; return ``path``."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np
    from matplotlib.patches import Rectangle

    run = Path(run_dir)
    record = read_record(run / RESULT_FILE)
    poses = capture_poses(run)
    fig, ax = plt.subplots(figsize=(7, 7))
    shell = _scene_boxes(record.scene_id)
    if shell is not None:
        walls, floors = shell
        for lo, hi in floors:
            ax.add_patch(Rectangle((lo[0], lo[1]), hi[0] - lo[0], hi[1] - lo[1], color="#f1ede4", zorder=0))
        for lo, hi in walls:
            ax.add_patch(Rectangle((lo[0], lo[1]), hi[0] - lo[0], hi[1] - lo[1], color="#555555", zorder=1))
    gt_path = run / GROUND_TRUTH_FILE
    pred_path = run / PREDICTIONS_FILE
    mapped = set(json.loads(pred_path.read_text()).get("positions", {})) if pred_path.is_file() else set()
    if gt_path.is_file():
        for t in json.loads(gt_path.read_text()).get("targets", []):
            lo, hi = np.asarray(t["box_min"]), np.asarray(t["box_max"])
            ax.add_patch(Rectangle((lo[0], lo[1]), hi[0] - lo[0], hi[1] - lo[1], fill=t["id"] in mapped, color="#3a7d44", alpha=0.6,
                                   lw=1.0, zorder=2))
    if poses:
        xy = np.array([(x, y) for x, y, _ in poses])
        ax.plot(xy[:, 0], xy[:, 1], "-", color="#c0392b", lw=1.5, zorder=3)
        yaw = np.radians([w for _, _, w in poses])
        ax.quiver(xy[:, 0], xy[:, 1], np.cos(yaw), np.sin(yaw), color="#c0392b", scale=18, width=0.004, zorder=4)
        ax.scatter(xy[:, 0], xy[:, 1], s=16, color="#c0392b", zorder=4)
        ax.scatter(xy[:1, 0], xy[:1, 1], s=160, marker="*", color="#f39c12", zorder=5, label="start")
        for i, (x, y) in enumerate(xy):
            ax.annotate(str(i), (x, y), textcoords="offset points", xytext=(4, 4), fontsize=7, zorder=6)
    nbv = record.nbv   # claimed: the agent's own figures (the derived ones are record.exploration)
    title = f"{record.agent} on {record.scene_id} (seed {record.seed}), {nbv.env_id if nbv else '?'}"
    e = nbv.exploration if nbv is not None else None
    if e is not None:
        title += (f"\n{len(poses)} captures, path {e.path_length_m:.1f} m, blocked {e.blocked_moves}, "
                  f"black frames {e.black_frames}, floor seen {e.explored_floor_m2:.1f} m^2, "
                  f"coverage {100 * (record.coverage or 0.0):.0f}%")
    ax.set_title(title, fontsize=9)
    ax.set_xlabel("world x (m)")
    ax.set_ylabel("world y (m)")
    ax.set_aspect("equal")
    ax.autoscale_view()
    ax.legend(loc="upper right", fontsize=8)
    fig.tight_layout()
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out


def write_nbv_trajectories(out_dir: str | os.PathLike, target: str | os.PathLike) -> list[Path]:
    """A trajectory PNG under ``target`` for every NBV run of the evaluation (or run) directory
    ``out_dir``: ``trajectory.png`` for a run directory, ``trajectory_<scene>_seed_<k>.png`` for
    each run of an evaluation; [] when none is an NBV run."""
    from spatialscout_gym.eval.layout import EvalDir
    out = Path(out_dir)
    runs = [d for d in EvalDir(out).trace_dirs() if is_nbv_run(d)]
    written = []
    for d in runs:
        name = "trajectory.png" if d.resolve() == out.resolve() else f"trajectory_{d.parent.name}_{d.name}.png"
        written.append(plot_nbv_trajectory(d, Path(target) / name))
    return written
