"""Reads a run directory (docs/protocol.md section 7) into the one JSON document the viewer page
draws. The only module of the viewer that knows the run-directory layout, so it can be switched to
another reader later.

Frames: positions are in the task frame (metres, x forward from the initial pose, y left, z up);
pixels are (u, v) in the captured image (0 at the top-left).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from spatialscout_gym.core.files import load_ground_truth, load_predictions
from spatialscout_gym.core.scoring import score_scene
from spatialscout_gym.envs.run_dir import RESULT_FILE, TRACE_FILE
from spatialscout_gym.eval.failures import (
    FACTOR_LABELS,
    submitted_errors,
    trajectory_factors,
)
from spatialscout_gym.eval.trajectory import load_trajectory

__all__ = ["ViewerError", "episode_document", "is_run_dir"]


class ViewerError(ValueError):
    """DIR is not a run directory the viewer can show."""


def is_run_dir(path: Path) -> bool:
    return (path / RESULT_FILE).is_file() and (path / TRACE_FILE).is_file()


def _read_json(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def _outcome(run: Path) -> tuple[dict, dict]:
    """(per-target scores, Table-4 outcome) of a completed run; empty dicts for a failed one."""
    if not (run / "ground_truth.json").is_file():
        return {}, {}
    gt = load_ground_truth(run)
    score = score_scene(gt, load_predictions(run, gt))
    traj = load_trajectory(run)
    factors = trajectory_factors(traj, submitted_errors(score), gt.num_targets)
    targets = [{"id": tid, "center": [float(x) for x in c], "size": [float(x) for x in sz],
                "iou": float(iou), "matched": mid}
               for tid, c, sz, iou, mid in zip(gt.ids, gt.centers_task, gt.sizes, score.iou, score.matched_id)]
    out = factors.to_dict()
    out["labels"] = {k: FACTOR_LABELS.get(k, k) for k in out["factors"]}
    return {"targets": targets}, out


def episode_document(run_dir: str | Path) -> dict:
    """The viewer's document of one run directory: ``result``, ``events`` (the trace, in order),
    ``frames`` (relative PNG paths by frame id), ``truth`` (ground-truth boxes and per-target IoU,
    shown only behind the page's toggle) and ``outcome`` (success and Table-4 factors)."""
    run = Path(run_dir)
    if not is_run_dir(run):
        raise ViewerError(f"{run} is not a run directory (no {RESULT_FILE} and {TRACE_FILE})")
    events = [json.loads(line) for line in (run / TRACE_FILE).read_text(encoding="utf-8").splitlines()
              if line.strip()]
    frames = {int(p.stem.split("_")[-1]): f"frames/{p.name}" for p in sorted((run / "frames").glob("frame_*.png"))}
    truth, outcome = _outcome(run)
    return {"result": _read_json(run / RESULT_FILE), "events": events, "frames": frames,
            "truth": truth, "outcome": outcome}
