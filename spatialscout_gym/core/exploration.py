"""An NBV episode's exploration, derived from its trace alone: the run record's ``exploration``
block (docs/protocol.md section 7; the definitions in docs/nbv.md, "Exploration metrics").

From the ``nbv_step`` events (each step's action, blocked flag, position and ``explored`` figures;
step 0's ``scene`` with the scene's interior voxels, floor cells and rooms and frame 0's figures):

* ``known_occupancy_fraction``: the interior voxels known after the last step over the scene's
  interior voxels (its free volume, walls, floors and ceilings excluded);
* ``explored_floor_fraction``: the floor cells explored (the union of every event's new cells, frame
  0 included) over the scene's floor cells;
* ``rooms_visited`` of ``rooms``: the distinct rooms the camera was in, at the start and after each
  step;
* ``blocked_moves`` of ``steps``.

From the tool calls and captures (any run): ``coverage_curve`` and ``iou_curve``, the coverage and
all-target mean IoU of the map accepted by the time of each image (point k: every submission
before image k + 1 was captured, or before the end), and their areas under the curve over the image
budget V, ``coverage_auc`` and ``iou_auc``: the mean of the curve's V points, an episode that ended
before V images keeping its last value (1.0: everything mapped from the first image on).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from spatialscout_gym.core.record_fields import derived as _derived
from spatialscout_gym.core.scoring import GroundTruth, score_scene
from spatialscout_gym.core.trace_events import CaptureEvent, Trace

__all__ = ["ExplorationFigures", "derive_exploration", "curve_auc", "NBV_STEP_EVENT"]

NBV_STEP_EVENT = "nbv_step"
"""The trace event of one NBV step (docs/protocol.md section 7), written by the NBV agents
(``baselines/nbv_agents.py``): ``step`` (0-based), ``action`` (the index, or the continuous
vector), ``blocked`` and ``block_cause`` (walls stopped the move: ``wall``,
``floor``, ``ceiling``, ``off_floor``; None), ``captured``, ``position_world`` (the camera centre
after the step, world metres) and ``tool_calls`` (``[first, end)`` indices of the tool calls the
step made), so the exploration figures a run records are recomputable from its trace.
``explored`` (:meth:`~spatialscout_gym.nbv.exploration_scene.SceneExploration.take`): the interior
voxels known after the step, the floor cells its capture newly explored and the room the camera is
in; step 0's event also has ``scene``: the scene's interior voxels, floor cells and rooms, and
``start``, frame 0's ``explored``, and ``dynamics``: what the run ran under
(:func:`~spatialscout_gym.nbv.config.dynamics_record`: env id, walls, wall margin, motion,
observation keys), which ``verify`` replays the steps under. A blocked step has its event like any other."""


@dataclass(frozen=True)
class ExplorationFigures:
    """The run record's ``exploration`` block (see the module docstring)."""

    known_occupancy_fraction: float = _derived()
    interior_voxels: int = _derived()
    explored_floor_fraction: float = _derived()
    floor_cells: int = _derived()
    rooms_visited: int = _derived()
    rooms: int = _derived()
    blocked_moves: int = _derived()
    steps: int = _derived()
    coverage_curve: list[float] = _derived()
    iou_curve: list[float] = _derived()
    coverage_auc: float = _derived()
    iou_auc: float = _derived()


def curve_auc(curve: Sequence[float], budget: int) -> float:
    """Mean of the curve's first ``budget`` points, the last point repeated past its end (0 when empty)."""
    if not curve or budget <= 0:
        return 0.0
    pts = list(curve[:budget]) + [curve[-1]] * max(0, budget - len(curve))
    return float(sum(pts) / budget)


def _curves(trace: Trace, gt: GroundTruth) -> tuple[list[float], list[float]]:
    caps = [i for i, e in enumerate(trace.events) if isinstance(e, CaptureEvent)]
    cov: list[float] = []
    iou: list[float] = []
    for n, _ in enumerate(caps):
        stop = caps[n + 1] if n + 1 < len(caps) else len(trace.events)
        m = score_scene(gt, trace.accepted_map(stop)).metrics()
        cov.append(float(m["coverage"]))
        iou.append(float(m["all"]["mean_iou"]))
    return cov, iou


def _count(x: object) -> int:
    return x if isinstance(x, int) and not isinstance(x, bool) else 0


def derive_exploration(trace: Trace, gt: GroundTruth, image_budget: int) -> ExplorationFigures | None:
    """The exploration block of an ended NBV episode's trace; None when its steps carry no scene
    figures (not an NBV run, or one traced before they existed)."""
    steps = trace.nbv_steps
    scene = steps[0].scene if steps else None
    if scene is None or not all(e.explored is not None for e in steps):
        return None
    start = scene.get("start")
    explored = [start if isinstance(start, dict) else {}] + [e.explored or {} for e in steps]
    interior = _count(scene.get("interior_voxels"))
    floor = _count(scene.get("floor_cells"))
    cells = {(int(c[0]), int(c[1])) for x in explored for c in x.get("floor_cells") or []}
    rooms = {x.get("room") for x in explored} - {None}
    cov, iou = _curves(trace, gt)
    return ExplorationFigures(
        known_occupancy_fraction=_count(explored[-1].get("known_voxels")) / interior if interior else 0.0,
        interior_voxels=interior, explored_floor_fraction=len(cells) / floor if floor else 0.0,
        floor_cells=floor, rooms_visited=len(rooms), rooms=_count(scene.get("rooms")),
        blocked_moves=sum(e.blocked for e in steps), steps=len(steps),
        coverage_curve=cov, iou_curve=iou, coverage_auc=curve_auc(cov, image_budget),
        iou_auc=curve_auc(iou, image_budget))
