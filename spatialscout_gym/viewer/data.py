"""The viewer's one reader of run and evaluation directories (docs/protocol.md section 7).

Everything the page draws comes from :func:`run_payload` (one run directory) or
:func:`eval_payload` (a directory of run directories): plain JSON, built from the run's own files
through the package's readers (``trace.jsonl``, ``result.json``, ``ground_truth.json``), the scorer
(:func:`~spatialscout_gym.core.scoring.score_scene`) for per-target IoU and the paper's Table-4
factors (:mod:`spatialscout_gym.eval.failures`). Kept small and isolated so that a future owner of
the evaluation-directory layout can replace the directory walk in one place.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from spatialscout_gym.episode.trace import read_jsonl

__all__ = ["is_run_dir", "run_dirs", "run_payload", "eval_payload"]


def is_run_dir(path: Path) -> bool:
    """A run directory has ``trace.jsonl`` and ``result.json``."""
    return (path / "trace.jsonl").is_file() and (path / "result.json").is_file()


def run_dirs(root: Path) -> list[Path]:
    """The run directories at or under ``root`` (``attempts/`` of ``evaluate`` left out)."""
    if is_run_dir(root):
        return [root]
    return sorted(p.parent for p in root.rglob("result.json")
                  if is_run_dir(p.parent) and "attempts" not in p.relative_to(root).parts)


def _read_json(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None


def _scoring(run: Path, result: dict) -> tuple[list[dict], dict | None]:
    """Per-target rows (id, group, task-frame centre and size, IoU, matched id) and the Table-4
    factors; empty for failed runs (no ground truth)."""
    from spatialscout_gym.core.scoring import GroundTruth, score_scene
    from spatialscout_gym.eval.failures import submitted_errors, trajectory_factors
    from spatialscout_gym.eval.trajectory import parse_trajectory
    gt_dict = _read_json(run / "ground_truth.json")
    pred = _read_json(run / "predictions.json")
    if gt_dict is None or pred is None:
        return [], None
    gt = GroundTruth.from_dict(gt_dict)
    score = score_scene(gt, pred.get("positions", {}))
    rows = []
    for i, t in enumerate(gt_dict["targets"]):
        size = [float(b - a) for a, b in zip(t["box_min"], t["box_max"])]  # world-aligned box, m
        rows.append({"id": t["id"], "group": t.get("group"), "center": t["center"], "size": size,
                     "iou": float(score.iou[i]), "matched": score.matched_id[i]})
    traj = parse_trajectory(read_jsonl(run / "trace.jsonl"), result)
    errors = submitted_errors(score)
    factors = trajectory_factors(traj, errors, gt.num_targets).to_dict()
    factors["calls"] = _call_flags(traj, errors)
    return rows, factors


def _call_flags(traj: Any, errors: dict[str, float]) -> dict[str, list[str]]:
    """Table-4 factors at the tool calls where they arise, ``{tool-call index: [text]}``: the
    submission that set an unsupported final position (``unsupported_positions``), and the linked
    triangulation of an object off by more than 0.5 m that had a low residual
    (``inaccurate_despite_low_residual``) or warnings (``inaccurate_with_warnings``)."""
    from spatialscout_gym.eval.failures import INACCURATE_M, LOW_RESIDUAL_M
    from spatialscout_gym.eval.grounding import object_support
    flags: dict[str, list[str]] = {}
    add = lambda index, text: flags.setdefault(str(index), []).append(text)  # noqa: E731
    for oid, sup in object_support(traj).items():
        sub = traj.last_submission_of(oid)
        if sub is not None and not sup.supported:
            add(sub.index, f"unsupported position: {oid}")
        err, t = errors.get(oid), sup.linked
        if err is not None and err > INACCURATE_M and t is not None:
            if t.residual_m is not None and t.residual_m <= LOW_RESIDUAL_M:
                add(t.index, f"inaccurate despite low residual: {oid} off by {err:.2f} m")
            if t.warnings:
                add(t.index, f"inaccurate with warnings: {oid} off by {err:.2f} m")
    return flags


def run_payload(run: Path, frame_url: str = "frames") -> dict:
    """Everything the page shows of one run: result, the trace events, frame URLs, targets and
    factors. Frame URLs are ``{frame_url}/frame_NNN.png``."""
    result = _read_json(run / "result.json") or {}
    events = read_jsonl(run / "trace.jsonl")
    targets, factors = _scoring(run, result)
    frames = {str(e["frame_id"]): f"{frame_url}/frame_{int(e['frame_id']):03d}.png"
              for e in events if e.get("event") == "capture"}
    return {"kind": "run", "name": run.name, "result": result, "events": events, "frames": frames,
            "targets": targets, "factors": factors}


def eval_payload(root: Path, runs: list[Path]) -> dict:
    """The episode list of an evaluation directory: path, scene, agent, status, mean IoU."""
    rows = []
    for run in runs:
        r = _read_json(run / "result.json") or {}
        rows.append({"path": run.relative_to(root).as_posix(), "scene": r.get("scene_id"),
                     "agent": r.get("agent"), "status": r.get("status"),
                     "mean_iou": (r.get("all") or {}).get("mean_iou"),
                     "coverage": r.get("coverage"), "tool_calls": (r.get("counters") or {}).get("tool_calls")})
    return {"kind": "eval", "name": root.name, "episodes": rows}
