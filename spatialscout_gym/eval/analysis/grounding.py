"""Geometric grounding (paper Table 5): how well submitted positions rest on triangulation.

Definitions (each computed from a trace by :func:`object_support` and pooled by
:func:`grounding_summary`; docs/protocol.md section 7 for the trace):

**Triangulation support of a submitted object.** Let ``p_i`` be object ``i``'s position in the
final accepted map (the one that is scored) and ``s_i`` the last successful ``submit_positions``
call that accepted ``i`` (the call that set ``p_i``). Object ``i`` is *supported* when some
successful ``triangulate_observations`` call with a smaller tool-call index than ``s_i`` (an
earlier model call, or earlier in the same model response, since a response's tools run in order)
returned a point ``q`` with ``|q - p_i| <= SUPPORT_RADIUS_M`` (task frame). 0.5 m allows for the
step from a triangulated *surface* point to the object's centre (half the depth of a large piece
of furniture) while rejecting a point on another object across the room. The *linked*
triangulation of ``i`` is the qualifying one nearest to ``p_i`` (the latest on a tie); the failure
factors (:mod:`~spatialscout_gym.eval.analysis.failures`) read its residual and warnings.

**Table-5 metrics per model** (pooled over the completed episodes):

* ``supported_share``: supported objects / submitted objects (final maps);
* ``warning_share``: successful triangulation calls with at least one warning / successful
  triangulation calls (warnings: widest ray angle < 3 deg, residual > 0.1 m, point beyond
  ``r + 0.5`` m; docs/protocol.md section 4);
* ``captures_per_task``: successful ``capture_image`` calls per episode (the initial image is not
  a capture);
* ``median_center_error_m``: median, over every submitted object of every episode, of the
  scorer's centre error (distance assignment within groups, docs/protocol.md section 6).
"""

from __future__ import annotations

import dataclasses
from typing import Iterable, Sequence

import numpy as np

from spatialscout_gym.eval.analysis.trajectory import Trajectory, Triangulation

__all__ = ["SUPPORT_RADIUS_M", "Support", "object_support", "grounding_summary"]

SUPPORT_RADIUS_M = 0.5
"""A triangulated point this close to a submitted position (metres) supports it."""


@dataclasses.dataclass(frozen=True)
class Support:
    """The triangulation support of one submitted object.

    ``linked`` is the nearest qualifying triangulation (None: unsupported); ``distance_m`` its
    distance to the submitted position.
    """

    target_id: str
    linked: Triangulation | None
    distance_m: float | None

    @property
    def supported(self) -> bool:
        return self.linked is not None


def object_support(traj: Trajectory, radius_m: float = SUPPORT_RADIUS_M) -> dict[str, Support]:
    """The :class:`Support` of every object in the final map (see the module docstring)."""
    good = [t for t in traj.triangulations if t.ok and t.point_task is not None]
    out: dict[str, Support] = {}
    for tid, p in traj.final_map.items():
        sub = traj.last_submission_of(tid)
        best: Triangulation | None = None
        best_d = None
        if sub is not None:
            for t in good:
                if t.index >= sub.index:
                    continue
                d = float(np.linalg.norm(t.point_task - p))
                if d <= radius_m + 1e-9 and (best_d is None or d <= best_d):
                    best, best_d = t, d
        out[tid] = Support(tid, best, best_d)
    return out


def grounding_summary(trajectories: Sequence[Trajectory], submitted_errors_m: Iterable[float],
                      radius_m: float = SUPPORT_RADIUS_M) -> dict:
    """Table-5 metrics of one model's completed episodes.

    Parameters
    ----------
    trajectories : sequence of Trajectory
    submitted_errors_m : iterable of float
        The scorer's centre error of every submitted object of these episodes, metres.
    radius_m : float
        See :data:`SUPPORT_RADIUS_M`.

    Returns
    -------
    dict
        ``submitted``, ``supported``, ``supported_share``, ``triangulations`` (successful),
        ``triangulations_failed``, ``with_warnings``, ``warning_share``, ``captures_per_task``,
        ``median_center_error_m`` (shares and medians None when undefined), ``support_radius_m``.
    """
    submitted = supported = tri_ok = tri_bad = warned = captures = 0
    for traj in trajectories:
        sup = object_support(traj, radius_m)
        submitted += len(sup)
        supported += sum(s.supported for s in sup.values())
        tri_ok += sum(t.ok for t in traj.triangulations)
        tri_bad += sum(not t.ok for t in traj.triangulations)
        warned += sum(bool(t.ok and t.warnings) for t in traj.triangulations)
        captures += traj.captures
    errs = np.array([e for e in submitted_errors_m if e is not None and np.isfinite(e)], float)
    n = len(trajectories)
    return {"episodes": n, "submitted": submitted, "supported": supported,
            "supported_share": supported / submitted if submitted else None,
            "triangulations": tri_ok, "triangulations_failed": tri_bad, "with_warnings": warned,
            "warning_share": warned / tri_ok if tri_ok else None,
            "captures_per_task": captures / n if n else None,
            "median_center_error_m": float(np.median(errs)) if errs.size else None,
            "support_radius_m": float(radius_m)}
