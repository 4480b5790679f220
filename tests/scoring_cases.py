"""Ground-truth builders shared by the scoring and CLI tests (not a test module)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from spatialscout_gym.core.frames import CameraPose, TaskFrame
from spatialscout_gym.core.scoring import GroundTruth

IDENTITY = TaskFrame(np.eye(3), np.zeros(3))
TILTED = TaskFrame.from_initial_pose(CameraPose(np.array([1.0, 2.0, 1.3]), 30.0, -10.0))


def make_gt(targets, frame: TaskFrame = TILTED, scene_id: str = "scene") -> GroundTruth:
    """``targets``: iterable of ``(id, group, center_task, size_world)``; boxes are built around
    the world position of each task-frame centre."""
    rows = []
    for tid, group, center, size in targets:
        center, size = np.asarray(center, float), np.asarray(size, float)
        cw = frame.to_world(center)
        rows.append({"id": tid, "category": group, "group": group, "center": center.tolist(),
                     "box_min": (cw - size / 2).tolist(), "box_max": (cw + size / 2).tolist()})
    radius = max(float(np.linalg.norm(r["center"])) for r in rows)
    return GroundTruth.from_dict({"scene_id": scene_id, "radius_m": radius,
                                  "world_from_task": frame.to_dict(), "targets": rows})


def exact_map(gt: GroundTruth) -> dict[str, list[float]]:
    return {t.id: t.center_task.tolist() for t in gt.targets}


def write_scene(directory: Path, gt: GroundTruth, positions: dict | None) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "ground_truth.json").write_text(json.dumps(gt.to_dict()))
    if positions is not None:
        (directory / "predictions.json").write_text(json.dumps({"positions": positions}))
    return directory


def mixed_scene(scene_id: str = "mixed", frame: TaskFrame = TILTED) -> GroundTruth:
    """Singletons, a 3-chair group of different sizes, a 2-book group and a zero-thickness poster."""
    return make_gt([
        ("chair_0", "Chair", [2.0, 1.0, -0.8], [0.5, 0.5, 0.9]),
        ("chair_1", "Chair", [2.5, -1.0, -0.8], [0.45, 0.55, 0.8]),
        ("chair_2", "Chair", [3.5, 0.2, -0.7], [0.6, 0.6, 1.0]),
        ("book_0", "Book", [1.0, 0.5, 0.0], [0.2, 0.15, 0.03]),
        ("book_1", "Book", [1.2, -0.5, 0.0], [0.25, 0.18, 0.04]),
        ("sofa_0", "Sofa", [4.0, 2.0, -0.6], [2.0, 0.9, 0.8]),
        ("poster_0", "Poster", [3.0, 3.0, 0.5], [0.6, 0.0, 0.8]),
        ("lamp_0", "Lamp", [0.8, -2.0, 0.2], [0.3, 0.3, 0.6]),
    ], frame, scene_id)
