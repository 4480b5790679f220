"""Success and failure factors of trajectories (paper Table 4), from the trace and the final score.

Every completed episode is first classed **success** or not; then each factor below is tested.
Success factors are tested on successful trajectories only and failure factors on unsuccessful
ones only, as in the paper; a trajectory may show several factors (they are not exclusive).
"Submitted objects" are the ids in the final accepted map; an object's *error* is the scorer's
centre error of its matched pair (docs/protocol.md section 6); *support* and the *linked*
triangulation are defined in :mod:`spatialscout_gym.eval.analysis.grounding`. ``N`` is the number of
targets, ``C`` the coverage, ``V`` the image budget, and *calls* are model calls for model agents
and tool calls otherwise (:mod:`spatialscout_gym.eval.analysis.trajectory`).

**success**: ``C >= 0.9`` and the mean error over submitted objects ``<= 0.2 m`` (the paper's
case-study criterion).

Success factors

* ``multi_view_grounding`` (sufficient multi-view grounding): at least 75 % of the submitted
  objects are supported by a triangulation.
* ``incremental_submission`` (incremental submission with continued coverage expansion): at least
  two ``submit_positions`` calls each add ids that were not yet in the map.
* ``continued_refinement``: at least one ``submit_positions`` call moves an id already in the map
  (by more than 1 mm).

Failure factors

* ``incomplete_coverage``: ``C < 0.9``.
* ``inaccurate_despite_low_residual`` (suspected correspondence errors despite low triangulation
  residuals): some submitted object has error ``> 0.5 m`` while its linked triangulation has
  residual ``<= 0.1 m`` (below the tool's residual warning).
* ``inaccurate_with_warnings`` (unresolved inconsistencies in geometric measurements): some
  submitted object has error ``> 0.5 m`` and its linked triangulation carried at least one warning.
* ``early_termination`` (early termination before coverage): ``C < 0.9`` and the episode ended
  with at least 10 calls of its budget left (never for an unlimited budget).
* ``unsupported_positions`` (position estimates lacking triangulation support): more than 25 % of
  the submitted objects are unsupported (at least one object submitted).
* ``observation_without_progress`` (extensive observation with limited localization progress): at
  least one capture and at least half of the ``V - 1`` images the agent could capture were
  captured, and fewer than 25 % of the ``N`` targets end with error ``<= 0.2 m``.
* ``late_refinement_without_new_objects`` (late-stage refinement without recovering missing
  objects): some target is missing at the end, and the submissions in the last quarter of the
  calls used (call index ``>= 0.75 * calls used``) revise at least one id and add none.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from typing import TYPE_CHECKING, Mapping, Sequence

import numpy as np

from spatialscout_gym.eval.analysis.grounding import SUPPORT_RADIUS_M, object_support
from spatialscout_gym.eval.analysis.trajectory import Trajectory
from spatialscout_gym.core.triangulation import MAX_RESIDUAL_M

if TYPE_CHECKING:
    from spatialscout_gym.core.scoring import SceneScore

__all__ = ["SUCCESS_FACTORS", "FAILURE_FACTORS", "FACTOR_LABELS", "TrajectoryFactors", "trajectory_factors",
           "count_factors", "submitted_errors", "SUCCESS_COVERAGE", "SUCCESS_ERROR_M", "INACCURATE_M",
           "EARLY_CALLS_LEFT", "UNSUPPORTED_SHARE", "GROUNDED_SHARE", "MANY_IMAGES_SHARE",
           "PROGRESS_SHARE", "LATE_WINDOW", "table4_thresholds"]

SUCCESS_COVERAGE = 0.9
"""Coverage needed for success (and below which coverage is incomplete)."""
SUCCESS_ERROR_M = 0.2
"""Mean error over submitted objects allowed for success; also "localized" for progress, metres."""
INACCURATE_M = 0.5
"""Error above which a submitted position is substantially inaccurate, metres."""
LOW_RESIDUAL_M = MAX_RESIDUAL_M
"""A linked triangulation's residual at or below this is low (the tool warns above it), metres."""
EARLY_CALLS_LEFT = 10
"""Calls left at the end that make a stop with incomplete coverage early."""
UNSUPPORTED_SHARE = 0.25
"""Share of unsupported submitted objects above which positions lack support."""
GROUNDED_SHARE = 1.0 - UNSUPPORTED_SHARE
"""Share of supported submitted objects needed for sufficient grounding."""
MANY_IMAGES_SHARE = 0.5
"""Share of the ``V - 1`` capturable images captured that counts as extensive observation."""
PROGRESS_SHARE = 0.25
"""Share of targets localized within ``SUCCESS_ERROR_M`` below which progress is limited."""
LATE_WINDOW = 0.25
"""The last share of the calls used that counts as late."""

def table4_thresholds() -> str:
    """This project's thresholds behind the factors, in words, for every page that shows them."""
    from spatialscout_gym.eval.analysis.grounding import SUPPORT_RADIUS_M
    return (f"success: coverage >= {SUCCESS_COVERAGE:.0%} and mean error <= {SUCCESS_ERROR_M:g} m; "
            f"sufficient grounding: >= {GROUNDED_SHARE:.0%} of submitted objects supported (within "
            f"{SUPPORT_RADIUS_M:g} m of an earlier successful triangulation); unsupported positions: "
            f"> {UNSUPPORTED_SHARE:.0%} unsupported; inaccurate: error > {INACCURATE_M:g} m; low residual: "
            f"<= {LOW_RESIDUAL_M:g} m; early stop: >= {EARLY_CALLS_LEFT} calls left; extensive observation: "
            f">= {MANY_IMAGES_SHARE:.0%} of the capturable images; limited progress: < {PROGRESS_SHARE:.0%} of "
            f"targets within {SUCCESS_ERROR_M:g} m; late: the last {LATE_WINDOW:.0%} of the calls used")


SUCCESS_FACTORS: tuple[str, ...] = ("multi_view_grounding", "incremental_submission", "continued_refinement")
FAILURE_FACTORS: tuple[str, ...] = ("incomplete_coverage", "inaccurate_despite_low_residual",
                                    "inaccurate_with_warnings", "early_termination",
                                    "unsupported_positions", "observation_without_progress",
                                    "late_refinement_without_new_objects")
FACTOR_LABELS: dict[str, str] = {
    "multi_view_grounding": "Sufficient multi-view grounding",
    "incremental_submission": "Incremental submission with continued coverage expansion",
    "continued_refinement": "Continued refinement",
    "incomplete_coverage": "Incomplete object coverage",
    "inaccurate_despite_low_residual": "Suspected correspondence errors despite low triangulation residuals",
    "inaccurate_with_warnings": "Unresolved inconsistencies in geometric measurements",
    "early_termination": "Early termination before coverage",
    "unsupported_positions": "Position estimates lacking triangulation support",
    "observation_without_progress": "Extensive observation with limited localization progress",
    "late_refinement_without_new_objects": "Late-stage refinement without recovering missing objects",
}


@dataclasses.dataclass(frozen=True)
class TrajectoryFactors:
    """The outcome of one trajectory: ``success`` and the factors it shows (names above)."""

    success: bool
    factors: tuple[str, ...]
    coverage: float
    mean_error_m: float | None

    def to_dict(self) -> dict:
        return {"success": self.success, "factors": list(self.factors), "coverage": self.coverage,
                "mean_error_m": self.mean_error_m}


def submitted_errors(score: SceneScore) -> dict[str, float]:
    """``{submitted id: centre error (m)}`` of a :class:`~spatialscout_gym.core.scoring.SceneScore`
    (each submitted id is matched to one target of its group by the distance assignment)."""
    return {mid: float(e) for mid, e in zip(score.matched_id, score.center_error_m) if mid is not None}


def trajectory_factors(traj: Trajectory, errors_m: Mapping[str, float], num_targets: int,
                       radius_m: float = SUPPORT_RADIUS_M) -> TrajectoryFactors:
    """Success and the factors of one trajectory (rules in the module docstring).

    Parameters
    ----------
    traj : Trajectory
    errors_m : mapping of str to float
        Centre error of every submitted object (:func:`submitted_errors`), metres.
    num_targets : int
        ``N``.
    radius_m : float
        Support radius (:data:`~spatialscout_gym.eval.analysis.grounding.SUPPORT_RADIUS_M`).
    """
    if num_targets <= 0:
        raise ValueError(f"num_targets must be positive, got {num_targets}")
    ids = list(traj.final_map)
    m = len(ids)
    coverage = m / num_targets
    errs = [errors_m[k] for k in ids if k in errors_m]
    mean_err = float(np.mean(errs)) if errs else None
    success = coverage >= SUCCESS_COVERAGE and mean_err is not None and mean_err <= SUCCESS_ERROR_M
    support = object_support(traj, radius_m)
    supported = sum(s.supported for s in support.values())
    found: list[str] = []
    if success:
        if m and supported / m >= GROUNDED_SHARE:
            found.append("multi_view_grounding")
        if sum(1 for s in traj.submissions if s.new_ids) >= 2:
            found.append("incremental_submission")
        if any(s.revised_ids for s in traj.submissions):
            found.append("continued_refinement")
        return TrajectoryFactors(True, tuple(found), coverage, mean_err)

    inaccurate = [k for k in ids if errors_m.get(k, 0.0) > INACCURATE_M]
    linked = [t for t in (support[k].linked for k in inaccurate) if t is not None]
    if coverage < SUCCESS_COVERAGE:
        found.append("incomplete_coverage")
    if any(t.residual_m is not None and t.residual_m <= LOW_RESIDUAL_M for t in linked):
        found.append("inaccurate_despite_low_residual")
    if any(t.warnings for t in linked):
        found.append("inaccurate_with_warnings")
    left = traj.calls_left
    if coverage < SUCCESS_COVERAGE and left is not None and left >= EARLY_CALLS_LEFT:
        found.append("early_termination")
    if m and (m - supported) / m > UNSUPPORTED_SHARE:
        found.append("unsupported_positions")
    localized = sum(1 for k in ids if errors_m.get(k, np.inf) <= SUCCESS_ERROR_M)
    capturable = (traj.image_budget or 1) - 1   # the initial image is given, not captured
    if (traj.captures >= 1 and traj.captures >= MANY_IMAGES_SHARE * capturable
            and localized < PROGRESS_SHARE * num_targets):
        found.append("observation_without_progress")
    late_from = (1.0 - LATE_WINDOW) * traj.calls_used
    late = [s for s in traj.submissions if s.call >= late_from]
    if m < num_targets and late and any(s.revised_ids for s in late) and not any(s.new_ids for s in late):
        found.append("late_refinement_without_new_objects")
    return TrajectoryFactors(False, tuple(found), coverage, mean_err)


def count_factors(outcomes: Sequence[TrajectoryFactors]) -> dict:
    """Table-4 counts of one model: ``{"trajectories", "success", "failure", "factors": {name: n}}``
    (every factor name present, zeros included)."""
    counts = Counter(f for o in outcomes for f in o.factors)
    return {"trajectories": len(outcomes), "success": sum(o.success for o in outcomes),
            "failure": sum(not o.success for o in outcomes),
            "factors": {f: int(counts.get(f, 0)) for f in SUCCESS_FACTORS + FAILURE_FACTORS}}
