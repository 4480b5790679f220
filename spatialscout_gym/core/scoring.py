"""The paper's scorer (docs/protocol.md section 6, paper Appendix B.2): pure functions, numpy/scipy only.

For one scene with N targets and M accepted submissions:

1. Within each equivalence *group*, predictions are matched one-to-one to targets minimising the
   total Euclidean distance (rectangular Hungarian, :func:`scipy.optimize.linear_sum_assignment`;
   small groups whose optimum is unique are solved by enumeration, which gives the same answer
   without importing scipy.optimize, about 0.6 s, see :func:`assign`).
   Ties are broken reproducibly: predictions are ordered lexicographically by task-frame
   coordinates (then id), targets by task-frame centre, then world-box side lengths (then id).
2. Centre error of a matched pair: ``|p_hat - p|`` (metres); mean, median and RMSE. A coordinate
   beyond :data:`FAR_M` (a hand-edited ``predictions.json``; the episode never accepts one) counts
   as :data:`FAR_M`: such a box is far from every target (IoU 0 either way), and distances, their
   squares and the assignment's costs stay finite.
3. IoU of a pair: the **matched target's** world AABB, every side floored at 1 cm, is translated so
   its centre sits on the prediction and intersected with itself in place. The offset is measured
   along the box's own (world) axes, ``d = R0 (p_hat - p)``; for equal boxes
   ``I = prod_a max(0, l_a - |d_a|)`` and ``IoU = I / (2V - I)``.
4. Mean IoU uses the distance assignment. The hit rate at each strict threshold
   ``tau in {0, 0.5, 0.9}`` uses its own within-group assignment that maximises the number of pairs
   with ``IoU > tau`` and then the total IoU.
5. Views: *submitted* (over M) and *all* (over N, omissions score 0); coverage ``C = M / N``.
6. Aggregation: *object-micro* pools targets across scenes (the headline); *scene-macro* averages
   per-scene ratios. Empty maps give 0 for IoU aggregates; undefined centre errors are left out.
7. Full-scene loss ``L = C * mean_error + (1 - C) * lambda`` (``lambda = 5 m``); an empty map
   scores ``lambda``.

``compat="release"`` reproduces the authors' released scorer (docs/protocol.md section 6, "Known release
discrepancy"): no 1 cm floor (a zero-thickness target never scores) and the box that is moved is
the one of the *submitted id*, intersected with the matched target's box in place.

The metric dict ``M`` (:meth:`SceneScore.metrics`, :func:`aggregate`)::

    {"num_targets", "num_submitted", "coverage",
     "all": {"mean_iou", "gt_0", "gt_50", "gt_90"},
     "submitted": {"mean_iou", "gt_0", "gt_50", "gt_90"},
     "center_error_m": {"mean", "median", "rmse"},      # None when no prediction was matched
     "full_scene_loss_m"}

Ratios are fractions in [0, 1]; ``_m`` keys are metres.

What the scorer saves with a result (paper Appendix B.2; :meth:`SceneScore.record`)::

    {"metric_version", "compat", "min_side_m", "lambda_m",
     "Q": matched IoU sum, "H": {"gt_0": hits, "gt_50": hits, "gt_90": hits}, "M": M, "N": N}

>>> gt = GroundTruth.from_dict({"scene_id": "s", "radius_m": 1.0,
...     "world_from_task": {"rotation": [[1, 0, 0], [0, 1, 0], [0, 0, 1]], "translation": [0, 0, 0]},
...     "targets": [{"id": "a", "category": "Box", "group": "Box", "center": [1, 0, 0],
...                  "box_min": [0.5, -0.5, -0.5], "box_max": [1.5, 0.5, 0.5]}]})
>>> m = score_scene(gt, {"a": [1.1, 0.0, 0.0]}).metrics()
>>> round(m["all"]["mean_iou"], 6)          # (1 - 0.1) / (1 + 0.1)
0.818182
"""

from __future__ import annotations

import functools
import sys
from dataclasses import dataclass, field
from typing import Any, Literal, Mapping, Sequence

import numpy as np

from spatialscout_gym.core.exact import matmul, rows_times
from spatialscout_gym.core.spec import TargetBox
from spatialscout_gym.core.types import ArrayLike3, is_finite_number, is_finite_vec3

__all__ = ["GroundTruth", "SceneScore", "score_scene", "aggregate", "box_iou", "assign",
           "THRESHOLDS", "THRESHOLD_KEYS", "MIN_SIDE_M", "DEFAULT_LAMBDA_M", "FAR_M", "COMPAT_MODES",
           "METRIC_VERSION"]

METRIC_VERSION = "spatialscout-paper-b2/1"
"""The scorer's metric version, saved with every result: the rules of paper Appendix B.2 as this
module implements them (bump it when a rule changes)."""

THRESHOLDS: tuple[float, ...] = (0.0, 0.5, 0.9)
"""Strict IoU thresholds of the hit rates (``IoU > tau``)."""
THRESHOLD_KEYS: tuple[str, ...] = ("gt_0", "gt_50", "gt_90")
MIN_SIDE_M = 0.01
"""The paper's floor on every reference box side, metres (not applied under ``compat="release"``)."""
DEFAULT_LAMBDA_M = 5.0
FAR_M = 1e6
"""Largest ``|coordinate|`` of a prediction the scorer uses, metres; farther ones are clipped (see
the module docstring, item 2): ``[1e155, 0, 0]`` would overflow every distance."""
"""Omission penalty of the full-scene loss, metres."""
COMPAT_MODES = ("paper", "release")
Compat = Literal["paper", "release"]

_CENTER_TOLERANCE_M = 1e-3
_ROTATION_TOLERANCE = 1e-6


# ---------------------------------------------------------------------------------------------
# Ground truth
# ---------------------------------------------------------------------------------------------
def _vec3(value: Any, where: str) -> np.ndarray:
    if not is_finite_vec3(value):
        raise ValueError(f"{where} must be a list of 3 finite numbers, got {value!r}")
    return np.asarray(value, dtype=float)


_TARGET_KEYS = ("id", "category", "group", "center", "box_min", "box_max")


def _targets_fast(raw: list, R: np.ndarray, origin: np.ndarray) -> list[TargetBox] | None:
    """The targets of a well-formed ``targets`` list, checked with whole-array operations (80
    scenes of 40 targets: 0.4 s of per-number checks otherwise); None when anything is off, and
    then :meth:`GroundTruth.from_dict`'s loop finds the first bad field and says which."""
    if not all(type(t) is dict and all(k in t for k in _TARGET_KEYS) and type(t["id"]) is str
               and type(t["category"]) is str and type(t["group"]) is str for t in raw):
        return None
    vecs = [t[k] for t in raw for k in ("center", "box_min", "box_max")]
    if not all(type(v) is list and len(v) == 3 for v in vecs):
        return None
    if not {type(x) for v in vecs for x in v} <= {int, float}:     # no bools, strings or None
        return None
    try:
        arr = np.array(vecs, dtype=float).reshape(len(raw), 3, 3)
    except OverflowError:                  # an integer past 1.8e308
        return None
    center, lo, hi = arr[:, 0], arr[:, 1], arr[:, 2]
    if not np.all(np.isfinite(arr)) or np.any(hi < lo):
        return None
    if np.max(np.abs(rows_times((lo + hi) / 2 - origin, R) - center)) > _CENTER_TOLERANCE_M:
        return None
    return [TargetBox(t["id"], t["category"], t["group"], c, a, b)
            for t, c, a, b in zip(raw, center.copy(), lo.copy(), hi.copy())]


@dataclass(frozen=True, eq=False)
class GroundTruth:
    """The private target table of one scene (``ground_truth.json``).

    Attributes
    ----------
    scene_id : str
    radius_m : float
        Search radius ``r = max_i |p_i|``, metres.
    R_world_task : ndarray, shape (3, 3)
        ``R0``: world-from-task rotation (columns: initial camera forward, left, up in world).
    origin : ndarray, shape (3,)
        ``o0``: the task origin (initial camera centre) in world coordinates, metres.
    targets : list of TargetBox
        Inventory order; ``center_task`` in the task frame, ``box_min``/``box_max`` world AABB.
    """

    scene_id: str
    radius_m: float
    R_world_task: np.ndarray
    origin: np.ndarray
    targets: list[TargetBox]
    # derived, for vectorised scoring
    ids: tuple[str, ...] = field(init=False, repr=False)
    index: dict[str, int] = field(init=False, repr=False)
    centers_task: np.ndarray = field(init=False, repr=False)
    sizes: np.ndarray = field(init=False, repr=False)
    group_index: np.ndarray = field(init=False, repr=False)
    group_members: tuple[np.ndarray, ...] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        if not self.targets:
            raise ValueError(f"scene {self.scene_id!r} has no targets")
        ids = tuple(t.id for t in self.targets)
        if len(set(ids)) != len(ids):
            dup = sorted({i for i in ids if ids.count(i) > 1})
            raise ValueError(f"scene {self.scene_id!r} lists target ids more than once: {dup}")
        centers = np.array([t.center_task for t in self.targets], dtype=float)
        sizes = np.array([t.size for t in self.targets], dtype=float)
        names = sorted({t.group for t in self.targets})
        gidx = {g: i for i, g in enumerate(names)}
        group_index = np.array([gidx[t.group] for t in self.targets], dtype=int)
        # targets of each group in the canonical tie-breaking order: centre, side lengths, id
        members = []
        for g in range(len(names)):
            idx = np.flatnonzero(group_index == g)
            members.append(np.array(sorted(idx, key=lambda i: (*centers[i], *sizes[i], ids[i])), dtype=int))
        object.__setattr__(self, "ids", ids)
        object.__setattr__(self, "index", {t: i for i, t in enumerate(ids)})
        object.__setattr__(self, "centers_task", centers)
        object.__setattr__(self, "sizes", sizes)
        object.__setattr__(self, "group_index", group_index)
        object.__setattr__(self, "group_members", tuple(members))

    @property
    def num_targets(self) -> int:
        return len(self.targets)

    @classmethod
    def from_dict(cls, d: Any) -> "GroundTruth":
        """Parse and validate a ``ground_truth.json`` dict; ``ValueError`` names the bad field."""
        if not isinstance(d, dict):
            raise ValueError(f"ground truth must be a JSON object, got {type(d).__name__}")
        for key in ("scene_id", "radius_m", "world_from_task", "targets"):
            if key not in d:
                raise ValueError(f"missing key {key!r} (expected scene_id, radius_m, world_from_task, targets)")
        scene_id = d["scene_id"]
        if not isinstance(scene_id, str) or not scene_id:
            raise ValueError(f"scene_id must be a non-empty string, got {scene_id!r}")
        radius = d["radius_m"]
        if not is_finite_number(radius) or radius < 0:
            raise ValueError(f"radius_m must be a finite number >= 0, got {radius!r}")
        wft = d["world_from_task"]
        if not isinstance(wft, dict) or "rotation" not in wft or "translation" not in wft:
            raise ValueError("world_from_task must be {\"rotation\": 3x3, \"translation\": [3]}")
        rows = wft["rotation"]
        if not isinstance(rows, list) or len(rows) != 3:
            raise ValueError(f"world_from_task.rotation must be 3 rows of 3 numbers, got {rows!r}")
        R = np.array([_vec3(r, f"world_from_task.rotation[{i}]") for i, r in enumerate(rows)])
        if not np.allclose(matmul(R.T, R), np.eye(3), atol=_ROTATION_TOLERANCE) or np.linalg.det(R) < 0:
            raise ValueError("world_from_task.rotation must be a proper rotation matrix (orthonormal, det +1)")
        origin = _vec3(wft["translation"], "world_from_task.translation")
        raw_targets = d["targets"]
        if not isinstance(raw_targets, list) or not raw_targets:
            raise ValueError("targets must be a non-empty list")
        targets = _targets_fast(raw_targets, R, origin)
        if targets is not None:
            return cls(scene_id, float(radius), R, origin, targets)
        targets = []                          # the field-by-field loop names the first bad field
        for i, t in enumerate(raw_targets):
            where = f"targets[{i}]"
            if not isinstance(t, dict):
                raise ValueError(f"{where} must be an object, got {t!r}")
            for key in ("id", "category", "group", "center", "box_min", "box_max"):
                if key not in t:
                    raise ValueError(f"{where} is missing key {key!r}")
            for key in ("id", "category", "group"):
                if not isinstance(t[key], str):
                    raise ValueError(f"{where}.{key} must be a string, got {t[key]!r}")
            center = _vec3(t["center"], f"{where}.center")
            lo, hi = _vec3(t["box_min"], f"{where}.box_min"), _vec3(t["box_max"], f"{where}.box_max")
            if np.any(hi < lo):
                raise ValueError(f"{where} ({t['id']!r}): box_max {hi.tolist()} is below box_min {lo.tolist()}")
            expected = rows_times((lo + hi) / 2 - origin, R)
            if np.max(np.abs(expected - center)) > _CENTER_TOLERANCE_M:
                raise ValueError(
                    f"{where} ({t['id']!r}): center {center.tolist()} is not the task-frame centre of its "
                    f"box, R0^T((box_min + box_max)/2 - o0) = {np.round(expected, 6).tolist()}; check "
                    f"world_from_task")
            targets.append(TargetBox(t["id"], t["category"], t["group"], center, lo, hi))
        return cls(scene_id, float(radius), R, origin, targets)

    @classmethod
    def from_spec(cls, spec: Any) -> "GroundTruth":
        """From a :class:`spatialscout_gym.core.spec.SceneSpec`."""
        return cls.from_dict(spec.ground_truth_dict())

    def reframed(self, task_frame: Any) -> "GroundTruth":
        """The same targets in another task frame (a turned start of the same scene): what
        :meth:`from_spec` gives for the spec with that initial camera, bit for bit, without
        recomputing the world boxes from the scene geometry.

        Parameters
        ----------
        task_frame : TaskFrame
            The new task frame (:class:`spatialscout_gym.core.frames.TaskFrame`).
        """
        # the same operations as SceneSpec.targets (centre = frame.to_task((lo + hi) / 2)) and
        # from_dict (arrays rebuilt from Python floats), so every value is identical
        targets = [TargetBox(t.id, t.category, t.group,
                             np.asarray(task_frame.to_task((t.box_min + t.box_max) / 2), dtype=float),
                             t.box_min, t.box_max) for t in self.targets]
        R = np.array(task_frame.R_world_task.tolist(), dtype=float)
        origin = np.array(task_frame.origin_world.tolist(), dtype=float)
        return GroundTruth(self.scene_id, self.radius_m, R, origin, targets)

    def to_dict(self) -> dict:
        """The ``ground_truth.json`` dict (inverse of :meth:`from_dict`)."""
        return {"scene_id": self.scene_id, "radius_m": float(self.radius_m),
                "world_from_task": {"rotation": self.R_world_task.tolist(),
                                    "translation": self.origin.tolist()},
                "targets": [t.to_dict() for t in self.targets]}


# ---------------------------------------------------------------------------------------------
# IoU
# ---------------------------------------------------------------------------------------------
def box_iou(size_moved: np.ndarray, size_fixed: np.ndarray, offset: np.ndarray) -> np.ndarray:
    """IoU of two axis-aligned boxes whose centres differ by ``offset``.

    Parameters
    ----------
    size_moved, size_fixed : array_like, shape (..., 3)
        Side lengths along the box axes (world axes here), metres.
    offset : array_like, shape (..., 3)
        Centre of the moved box minus centre of the fixed box, along the same axes, metres.

    Returns
    -------
    iou : ndarray, shape (...)
        In [0, 1]; 0 when both boxes have zero volume.

    >>> float(box_iou([1.0, 1.0, 1.0], [1.0, 1.0, 1.0], [0.5, 0.0, 0.0]))   # (1 - .5)/(1 + .5)
    0.3333333333333333
    """
    a, b = np.asarray(size_moved, dtype=float), np.asarray(size_fixed, dtype=float)
    overlap = np.clip((a + b) / 2 - np.abs(np.asarray(offset, dtype=float)), 0.0, np.minimum(a, b))
    inter = np.prod(overlap, axis=-1)
    union = np.prod(a, axis=-1) + np.prod(b, axis=-1) - inter
    return np.divide(inter, union, out=np.zeros_like(inter), where=union > 0)


# ---------------------------------------------------------------------------------------------
# Scoring one scene
# ---------------------------------------------------------------------------------------------
@dataclass
class SceneScore:
    """Per-target results of one scene, in the ground truth's inventory order.

    Attributes
    ----------
    scene_id : str
    num_submitted : int
        M, the number of accepted predictions.
    iou : ndarray, shape (N,)
        IoU under the distance assignment; 0 for targets no prediction was matched to.
    center_error_m : ndarray, shape (N,)
        Centre error under the distance assignment, metres; NaN where unmatched.
    matched_id : list of (str or None), length N
        The submitted id matched to each target by the distance assignment.
    hits : ndarray, shape (len(THRESHOLDS), N), bool
        ``hits[k, i]``: target i is hit (``IoU > THRESHOLDS[k]``) in the hit-maximising
        assignment for that threshold.
    compat : {"paper", "release"}
    lam : float
        Default omission penalty for :meth:`metrics`, metres.
    """

    scene_id: str
    num_submitted: int
    iou: np.ndarray
    center_error_m: np.ndarray
    matched_id: list[str | None]
    hits: np.ndarray
    compat: str = "paper"
    lam: float = DEFAULT_LAMBDA_M

    @property
    def num_targets(self) -> int:
        return int(self.iou.shape[0])

    def record(self, lam: float | None = None) -> dict:
        """What the scorer saves with a result (paper Appendix B.2): metric version, minimum side
        length, the matched IoU sum ``Q``, hit counts ``H`` per threshold and the denominators
        ``M`` (submitted) and ``N`` (targets)."""
        return {"metric_version": METRIC_VERSION, "compat": self.compat,
                "min_side_m": MIN_SIDE_M if self.compat == "paper" else 0.0,
                "lambda_m": float(self.lam if lam is None else lam),
                "Q": float(self.iou.sum()),
                "H": {k: int(h) for k, h in zip(THRESHOLD_KEYS, self.hits.sum(axis=1))},
                "M": int(self.num_submitted), "N": int(self.num_targets)}

    def metrics(self, lam: float | None = None) -> dict:
        """The metric dict M of this scene (see the module docstring)."""
        errors = self.center_error_m[np.isfinite(self.center_error_m)]
        return _metrics(self.num_targets, self.num_submitted, float(self.iou.sum()),
                        self.hits.sum(axis=1), errors, self.lam if lam is None else lam)


def _check_lambda(lam: float) -> float:
    if not is_finite_number(lam) or lam < 0:
        raise ValueError(f"lambda (the omission penalty) must be a finite number of metres >= 0, got {lam!r}")
    return float(lam)


def _error_stats(errors: np.ndarray) -> dict:
    if errors.size == 0:
        return {"mean": None, "median": None, "rmse": None}
    return {"mean": float(np.mean(errors)), "median": float(np.median(errors)),
            "rmse": float(np.sqrt(np.mean(errors ** 2)))}


def _view(q: float, hits: np.ndarray, denominator: int) -> dict:
    out = {"mean_iou": q / denominator if denominator else 0.0}
    for key, h in zip(THRESHOLD_KEYS, hits):
        out[key] = float(h) / denominator if denominator else 0.0
    return out


def _metrics(n: int, m: int, q: float, hits: np.ndarray, errors: np.ndarray, lam: float) -> dict:
    coverage = m / n if n else 0.0
    err = _error_stats(errors)
    loss = lam if err["mean"] is None else coverage * err["mean"] + (1.0 - coverage) * lam
    return {"num_targets": int(n), "num_submitted": int(m), "coverage": float(coverage),
            "all": _view(q, hits, n), "submitted": _view(q, hits, m),
            "center_error_m": err, "full_scene_loss_m": float(loss)}


def _parse_positions(gt: GroundTruth, positions: Mapping[str, ArrayLike3]) -> tuple[list[str], np.ndarray]:
    ids, rows = [], []
    for key, value in positions.items():
        if key not in gt.index:
            known = ", ".join(gt.ids[:5]) + (", ..." if len(gt.ids) > 5 else "")
            raise ValueError(f"unknown target id {key!r}: scene {gt.scene_id!r} has ids {known}")
        if not is_finite_vec3(value):
            raise ValueError(f"position of {key!r} must be three finite numbers [x, y, z] (task frame, "
                             f"metres), got {value!r}")
        ids.append(key)
        rows.append(value)
    return ids, np.asarray(rows, dtype=float).reshape(-1, 3)


_ENUMERATE_MAX = 24
"""Largest number of candidate assignments :func:`assign` enumerates before calling scipy, once
scipy.optimize is loaded (its solver is faster than enumerating more)."""
_ENUMERATE_MAX_COLD = 5040
"""The same while scipy.optimize is not loaded: groups of up to 7 instances, so that scoring an
ordinary map (``spatialscout score``) never pays its import, about 1 CPU s."""


@functools.lru_cache(maxsize=64)
def _permutations(n: int, k: int) -> np.ndarray:
    """All ordered choices of ``k`` of ``range(n)``, shape (n! / (n - k)!, k), read-only."""
    from itertools import permutations
    out = np.array(list(permutations(range(n), k)), dtype=int).reshape(-1, k)
    out.setflags(write=False)
    return out


def _unique_by_enumeration(cost: np.ndarray, maximize: bool) -> tuple[np.ndarray, np.ndarray] | None:
    """The optimal one-to-one assignment of a small matrix in scipy's form (row indices
    ascending), or None when the matrix is too large or the optimum is not unique (the runner-up
    within 1e-9 relative)."""
    import math
    a, b = cost.shape
    k = min(a, b)
    if k == 0:
        return np.zeros(0, dtype=int), np.zeros(0, dtype=int)
    limit = _ENUMERATE_MAX if "scipy.optimize" in sys.modules else _ENUMERATE_MAX_COLD
    if math.perm(max(a, b), k) > limit or not np.all(np.isfinite(cost)):
        return None
    m = -cost if maximize else cost
    t = m if a <= b else m.T                   # rows of t: the smaller side
    idx = np.arange(k)
    perms = _permutations(t.shape[1], k)
    totals = t[idx[None, :], perms].sum(axis=1)
    first = int(np.argmin(totals))             # the first minimum, as a stable sort's first
    best = totals[first]
    if len(totals) > 1 and np.partition(totals, 1)[1] - best <= 1e-9 * max(1.0, abs(best)):
        return None                            # the runner-up (a tie included) is too close
    chosen = perms[first]
    if a <= b:
        return idx.copy(), chosen
    sort = np.argsort(chosen)                  # t's rows are the matrix's columns
    return chosen[sort], idx[sort]


def assign(cost: np.ndarray, maximize: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """``scipy.optimize.linear_sum_assignment(cost, maximize)``, importing scipy only when needed.

    A small matrix (at most :data:`_ENUMERATE_MAX` one-to-one assignments, or
    :data:`_ENUMERATE_MAX_COLD` before scipy.optimize is loaded) is solved by enumeration; when its
    optimum is unique that is the assignment scipy returns too. Ties and larger matrices go to
    scipy, so results never depend on which path ran.
    """
    c = np.asarray(cost, dtype=float)
    found = _unique_by_enumeration(c, maximize)
    if found is not None:
        return found
    from scipy.optimize import linear_sum_assignment  # about 1 CPU s; only for ties/large groups
    return linear_sum_assignment(c, maximize=maximize)


def _hit_assignment(weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The maximum-weight assignment of the nonnegative hit ``weights``, as far as hits go.

    Rows and columns without a positive weight are left out first: with nonnegative weights every
    optimal assignment then has the same positive pairs as the unique optimum of the rest (when it
    is unique), so the hits are the ones scipy's assignment of the whole matrix gives, whichever of
    its tied optima it returns. Otherwise the whole matrix goes to :func:`assign`."""
    rows = np.flatnonzero(weights.max(axis=1) > 0)
    cols = np.flatnonzero(weights.max(axis=0) > 0)
    found = _unique_by_enumeration(weights[np.ix_(rows, cols)], maximize=True)
    if found is not None:
        return rows[found[0]], cols[found[1]]
    return assign(weights, maximize=True)


def _hit_weights(iou: np.ndarray, tau: float) -> np.ndarray:
    """Weights whose maximum-sum assignment maximises hits first, then total IoU."""
    return (iou > tau) * (min(iou.shape) + 1.0) + iou


def score_scene(gt: GroundTruth, positions: Mapping[str, ArrayLike3], *,
                compat: Compat = "paper", lam: float = DEFAULT_LAMBDA_M,
                group_cache: dict | None = None) -> SceneScore:
    """Score one accepted map (docs/protocol.md section 6).

    Parameters
    ----------
    gt : GroundTruth
    positions : mapping of str to array_like, shape (3,)
        Accepted centre estimates by target id, task frame, metres.
    compat : {"paper", "release"}
        ``"release"`` reproduces the released scorer (no floor; box of the submitted id moved).
    lam : float
        Omission penalty ``lambda`` used by :meth:`SceneScore.metrics`, metres.
    group_cache : dict, optional
        Results of multi-instance groups (their assignments are most of the cost), keyed by the
        group and its exact predictions. Pass the same dict to repeated calls on the same ``gt``
        (e.g. after each change of an episode's accepted map) and only the groups whose
        predictions changed are solved again; the result is identical to a call without it.
        Never share one dict between two ground truths.

    Raises
    ------
    ValueError
        An unknown id, a position that is not three finite numbers, an unknown ``compat``.
    """
    if compat not in COMPAT_MODES:
        raise ValueError(f"compat must be one of {COMPAT_MODES}, got {compat!r}")
    lam = _check_lambda(lam)
    pred_ids, P = _parse_positions(gt, positions)
    P = np.clip(P, -FAR_M, FAR_M)
    n, m = gt.num_targets, len(pred_ids)
    R0 = gt.R_world_task
    paper = compat == "paper"
    sizes = np.maximum(gt.sizes, MIN_SIDE_M) if paper else gt.sizes
    pred_target = np.array([gt.index[k] for k in pred_ids], dtype=int)
    pred_group = gt.group_index[pred_target]

    iou = np.zeros(n)
    err = np.full(n, np.nan)
    matched: list[str | None] = [None] * n
    hits = np.zeros((len(THRESHOLDS), n), dtype=bool)
    if m == 0:
        return SceneScore(gt.scene_id, 0, iou, err, matched, hits, compat, lam)

    def pair_iou(pred: np.ndarray, tgt: np.ndarray) -> np.ndarray:
        """IoU of predictions ``pred`` (indices, shape (a,)) against targets ``tgt`` (shape (b,))."""
        offset = rows_times(P[pred][:, None, :] - gt.centers_task[tgt][None, :, :], R0.T)   # world axes
        fixed = sizes[tgt][None, :, :]
        moved = fixed if paper else sizes[pred_target[pred]][:, None, :]
        return box_iou(moved, fixed, offset)

    # Singleton groups (most targets): the only prediction goes to the only target.
    group_sizes = np.array([len(g) for g in gt.group_members])
    single = group_sizes[pred_group] == 1
    js = np.flatnonzero(single)
    if js.size:
        ts = pred_target[js]
        offset = rows_times(P[js] - gt.centers_task[ts], R0.T)
        iou[ts] = box_iou(sizes[ts], sizes[ts], offset)   # submitted id == matched target here
        err[ts] = np.linalg.norm(P[js] - gt.centers_task[ts], axis=1)
        for k, tau in enumerate(THRESHOLDS):
            hits[k, ts] = iou[ts] > tau
        for j, t in zip(js, ts):
            matched[t] = pred_ids[j]

    # Multi-instance groups: Hungarian assignments in the canonical order. A group's result
    # depends only on its own predictions (ids and positions in that order), hence the cache key.
    for g in np.unique(pred_group[~single]):
        tgt = gt.group_members[g]
        pred = np.flatnonzero(pred_group == g)
        pred = np.array(sorted(pred, key=lambda j: (*P[j], pred_ids[j])), dtype=int)
        key = None if group_cache is None else \
            (compat, int(g), tuple(pred_ids[j] for j in pred), P[pred].tobytes())
        result = None if group_cache is None else group_cache.get(key)
        if result is None:
            result = _score_group(tgt, pred, P, [pred_ids[j] for j in pred], gt.centers_task,
                                  pair_iou(pred, tgt))
            if group_cache is not None:
                group_cache[key] = result
        targets, iou_g, err_g, matched_g, hits_g = result
        iou[targets] = iou_g
        err[targets] = err_g
        for t, pid in matched_g:
            matched[t] = pid
        for k, t_k, h_k in hits_g:
            hits[k, t_k] = h_k
    return SceneScore(gt.scene_id, m, iou, err, matched, hits, compat, lam)


def _score_group(tgt: np.ndarray, pred: np.ndarray, P: np.ndarray, pred_ids: list[str],
                 centers_task: np.ndarray, pair: np.ndarray) -> tuple:
    """One multi-instance group of :func:`score_scene`: predictions ``pred`` (canonical order,
    ids ``pred_ids``) against the group's targets ``tgt`` with pair IoUs ``pair``. Returns
    ``(targets, iou, err, [(target, matched id)], [(threshold index, targets, hits)])``, the
    values :func:`score_scene` writes at those target indices (read-only arrays)."""
    dist = np.linalg.norm(P[pred][:, None, :] - centers_task[tgt][None, :, :], axis=-1)
    rows, cols = assign(dist)
    targets, iou_g, err_g = tgt[cols], pair[rows, cols], dist[rows, cols]
    matched = [(int(tgt[c]), pred_ids[r]) for r, c in zip(rows, cols)]
    hits = []
    for k, tau in enumerate(THRESHOLDS):
        if not np.any(pair > tau):   # no pair can hit: every assignment gives no hits
            continue
        rows_k, cols_k = _hit_assignment(_hit_weights(pair, tau))
        hits.append((k, tgt[cols_k], pair[rows_k, cols_k] > tau))
    for a in (targets, iou_g, err_g, *(h[1] for h in hits), *(h[2] for h in hits)):
        a.setflags(write=False)
    return targets, iou_g, err_g, matched, hits


# ---------------------------------------------------------------------------------------------
# Aggregation
# ---------------------------------------------------------------------------------------------
def _mean_defined(values: list[float | None]) -> float | None:
    defined = [v for v in values if v is not None]
    return float(np.mean(defined)) if defined else None


def aggregate(scores: Sequence[SceneScore], lam: float = DEFAULT_LAMBDA_M) -> dict:
    """Object-micro and scene-macro summaries (docs/protocol.md section 6.6).

    Returns
    -------
    dict
        ``{"object_micro": M, "scene_macro": M, "scenes": {scene_id: M}}``. Object-micro pools
        targets (and matched centre errors) across scenes. Scene-macro averages each per-scene
        ratio, centre-error statistic and loss over scenes (scenes with no matched prediction are
        left out of the centre-error averages); its ``num_targets`` and ``num_submitted`` are the
        totals.
    """
    if not scores:
        raise ValueError("aggregate needs at least one scene score")
    lam = _check_lambda(lam)
    per_scene: dict[str, dict] = {}
    for s in scores:
        if s.scene_id in per_scene:
            raise ValueError(f"scene id {s.scene_id!r} appears more than once")
        per_scene[s.scene_id] = s.metrics(lam)

    errors = np.concatenate([s.center_error_m[np.isfinite(s.center_error_m)] for s in scores])
    micro = _metrics(sum(s.num_targets for s in scores), sum(s.num_submitted for s in scores),
                     float(sum(s.iou.sum() for s in scores)),
                     np.sum([s.hits.sum(axis=1) for s in scores], axis=0), errors, lam)

    ms = list(per_scene.values())
    macro = {"num_targets": micro["num_targets"], "num_submitted": micro["num_submitted"],
             "coverage": float(np.mean([x["coverage"] for x in ms]))}
    for view in ("all", "submitted"):
        macro[view] = {key: float(np.mean([x[view][key] for x in ms])) for key in ms[0][view]}
    macro["center_error_m"] = {key: _mean_defined([x["center_error_m"][key] for x in ms])
                               for key in ("mean", "median", "rmse")}
    macro["full_scene_loss_m"] = float(np.mean([x["full_scene_loss_m"] for x in ms]))
    return {"object_micro": micro, "scene_macro": macro, "scenes": per_scene}
