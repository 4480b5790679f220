"""Multi-view triangulation of marked pixels (docs/protocol.md section 4, paper Appendix B.1).

Each observation is a pixel ``(u, v)`` marked on a captured frame. It becomes a ray in the task
frame from the frame's camera centre ``o_k`` along the unit direction ``d_k``; with
``A_k = I - d_k d_k^T`` (the projector onto the plane perpendicular to the ray) the point closest to
all rays in the least-squares sense is::

    p = (sum_k A_k)^-1 sum_k A_k o_k

The result also carries the RMS perpendicular distance of the rays to ``p`` (``residual_m``) and
the widest pairwise angle between the rays (``max_angle_deg``).

Refusals are *values*, not exceptions, because a model reads them (:attr:`TriangulationResult.reason`):
fewer than 2 or more than 64 observations; all camera centres within 5 cm of each other; condition number of
``sum A_k`` above 1e6; the point behind any camera; an unknown frame id; a non-finite or
out-of-image pixel. Warnings accompany a successful result: widest angle below 3 degrees, residual
above 0.1 m, point farther than ``r + 0.5 m`` from the task origin.

A triangulated point lies on a *surface*, not at the box centre: the agent reasons from it to the
centre.

>>> import numpy as np
>>> res = triangulate_rays([[0.0, -1.0, 0.0], [0.0, 1.0, 0.0]],
...                        [[1.0, 1.0, 0.0], [1.0, -1.0, 0.0]])
>>> res.ok, [round(float(x), 6) for x in res.point_task], round(res.max_angle_deg, 3)
(True, [1.0, 0.0, 0.0], 90.0)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

import numpy as np

from spatialscout_gym.core.camera import Intrinsics, pixel_to_ray_camera
from spatialscout_gym.core.exact import cond3_symmetric, matmul, matvec, norm, solve3
from spatialscout_gym.core.frames import CameraPose, TaskFrame

__all__ = ["FrameGeometry", "TriangulationResult", "triangulate_rays", "triangulate_marks",
           "MIN_BASELINE_M", "MAX_CONDITION", "MAX_OBSERVATIONS", "MIN_ANGLE_DEG", "MAX_RESIDUAL_M", "RADIUS_MARGIN_M"]

MAX_OBSERVATIONS = 64
"""Most observations (rays) in one request; more are refused before any work, which keeps the
pairwise checks below (baseline, widest angle) at most 64 x 64 (docs/protocol.md section 4)."""
MIN_BASELINE_M = 0.05
"""Refused when every pair of camera centres is closer than this, metres."""
MAX_CONDITION = 1e6
"""Refused when the condition number of ``sum A_k`` exceeds this (near-parallel rays)."""
MIN_ANGLE_DEG = 3.0
"""Warned when the widest pairwise ray angle is below this, degrees."""
MAX_RESIDUAL_M = 0.1
"""Warned when the RMS perpendicular ray distance exceeds this, metres."""
RADIUS_MARGIN_M = 0.5
"""Warned when ``|p| > r + RADIUS_MARGIN_M`` (the submission bound of docs/protocol.md section 2)."""


@dataclass(frozen=True)
class FrameGeometry:
    """What an episode keeps of a capture for triangulation.

    Attributes
    ----------
    position_task : ndarray, shape (3,)
        Camera centre in the task frame, metres.
    R_task_cam : ndarray, shape (3, 3)
        Task-from-camera rotation: columns are the camera's forward, left and up directions in the
        task frame.
    intrinsics : Intrinsics
        The render grid's intrinsics; marks are pixels on that grid.
    """

    position_task: np.ndarray
    R_task_cam: np.ndarray
    intrinsics: Intrinsics

    def __post_init__(self) -> None:
        pos = np.asarray(self.position_task, dtype=float)
        R = np.asarray(self.R_task_cam, dtype=float)
        if pos.shape != (3,) or R.shape != (3, 3):
            raise ValueError(f"FrameGeometry needs position_task of shape (3,) and R_task_cam of shape "
                             f"(3, 3), got {pos.shape} and {R.shape}")
        object.__setattr__(self, "position_task", pos)
        object.__setattr__(self, "R_task_cam", R)

    @classmethod
    def from_pose(cls, task_frame: TaskFrame, pose: CameraPose, intrinsics: Intrinsics) -> "FrameGeometry":
        """The geometry of a capture at world ``pose``, expressed in ``task_frame``."""
        return cls(task_frame.to_task(pose.position_world),
                   matmul(task_frame.R_world_task.T, pose.R_world_cam), intrinsics)

    def ray_task(self, u: float, v: float) -> tuple[np.ndarray, np.ndarray]:
        """Origin, shape (3,), and unit direction, shape (3,), of pixel ``(u, v)`` in the task frame."""
        return self.position_task.copy(), matvec(self.R_task_cam, pixel_to_ray_camera(self.intrinsics, u, v))

    def to_dict(self) -> dict:
        return {"position_task": self.position_task.tolist(), "R_task_cam": self.R_task_cam.tolist(),
                "intrinsics": self.intrinsics.to_dict()}

    @classmethod
    def from_dict(cls, d: dict) -> "FrameGeometry":
        return cls(np.asarray(d["position_task"], dtype=float), np.asarray(d["R_task_cam"], dtype=float),
                   Intrinsics.from_dict(d["intrinsics"]))


@dataclass
class TriangulationResult:
    """The outcome of a triangulation request.

    Attributes
    ----------
    ok : bool
        False when the request was refused; :attr:`reason` then says why.
    point_task : ndarray, shape (3,), or None
        The least-squares point in the task frame, metres.
    residual_m : float or None
        RMS perpendicular distance from the rays to the point, metres.
    max_angle_deg : float or None
        Largest angle between any two rays, degrees.
    warnings : list of str
        Readable warnings about a successful result.
    reason : str or None
        Readable reason for a refusal.
    num_observations : int
        Number of observations in the request.
    """

    ok: bool
    point_task: np.ndarray | None = None
    residual_m: float | None = None
    max_angle_deg: float | None = None
    warnings: list[str] = field(default_factory=list)
    reason: str | None = None
    num_observations: int = 0

    @classmethod
    def refused(cls, reason: str, num_observations: int = 0) -> "TriangulationResult":
        return cls(ok=False, reason=reason, num_observations=num_observations)

    def to_dict(self) -> dict[str, Any]:
        """The JSON a model reads: rounded numbers (0.1 mm, 0.01 degree), nothing private."""
        if not self.ok:
            return {"ok": False, "reason": self.reason, "num_observations": self.num_observations}
        assert self.point_task is not None and self.residual_m is not None and self.max_angle_deg is not None
        return {"ok": True, "point": [round(float(x), 4) for x in self.point_task],
                "residual_m": round(float(self.residual_m), 4),
                "max_angle_deg": round(float(self.max_angle_deg), 2),
                "num_observations": self.num_observations, "warnings": list(self.warnings)}


def triangulate_rays(origins: Any, directions: Any, radius_m: float | None = None) -> TriangulationResult:
    """Least-squares intersection of K rays (docs/protocol.md section 4).

    Parameters
    ----------
    origins : array_like, shape (K, 3)
        Ray origins (camera centres), task frame, metres.
    directions : array_like, shape (K, 3)
        Ray directions, task frame; normalised here.
    radius_m : float, optional
        Search radius ``r``; when given, a point beyond ``r + 0.5 m`` gets a warning.

    Returns
    -------
    TriangulationResult
        Refused (``ok=False`` with a reason) for fewer than 2 or more than :data:`MAX_OBSERVATIONS` rays, non-finite input, camera
        centres all within 5 cm, condition number above 1e6, or a point behind any camera.
    """
    o = np.asarray(origins, dtype=float)
    d = np.asarray(directions, dtype=float)
    if o.ndim != 2 or o.shape[1:] != (3,) or d.shape != o.shape:
        return TriangulationResult.refused(
            f"origins and directions must both have shape (K, 3), got {o.shape} and {d.shape}")
    k = o.shape[0]
    if k < 2:
        return TriangulationResult.refused(
            f"need at least 2 observations of the same point from different camera positions, got {k}", k)
    if k > MAX_OBSERVATIONS:
        return TriangulationResult.refused(_too_many(k), k)
    if not (np.all(np.isfinite(o)) and np.all(np.isfinite(d))):
        return TriangulationResult.refused("ray origins and directions must be finite numbers", k)
    norms = np.linalg.norm(d, axis=1)
    if np.any(norms == 0.0):
        return TriangulationResult.refused("ray directions must be non-zero vectors", k)
    d = d / norms[:, None]

    baseline = float(np.max(np.linalg.norm(o[:, None, :] - o[None, :, :], axis=-1)))
    if baseline < MIN_BASELINE_M:
        return TriangulationResult.refused(
            f"the camera centres of all observations are within {MIN_BASELINE_M * 100:.0f} cm of each "
            f"other (largest separation {baseline:.3f} m), so depth is undetermined: move the camera "
            f"sideways (ideally by tens of centimetres or more), capture again and mark the same point "
            f"in frames from different positions", k)

    A_k = np.eye(3)[None, :, :] - d[:, :, None] * d[:, None, :]          # (K, 3, 3)
    A = A_k.sum(axis=0)
    cond = cond3_symmetric(A)     # closed form: the same bits on every BLAS kernel
    if not np.isfinite(cond) or cond > MAX_CONDITION:
        return TriangulationResult.refused(
            f"the rays are (nearly) parallel: condition number {cond:.3g} of sum(I - d d^T) exceeds "
            f"{MAX_CONDITION:.0e}; mark the point in frames whose viewing directions differ more", k)
    b = np.einsum("kij,kj->i", A_k, o)
    p = solve3(A, b)

    along = np.einsum("ki,ki->k", p[None, :] - o, d)                    # ray parameter of p
    behind = np.flatnonzero(along <= 0.0)
    if behind.size:
        return TriangulationResult.refused(
            f"the least-squares point lies behind the camera of observation(s) "
            f"{', '.join(str(int(i)) for i in behind)} (0-based), so the rays do not meet in front of "
            f"the cameras: the marked pixels probably show different points; check each mark", k)

    perp = np.einsum("kij,kj->ki", A_k, p[None, :] - o)
    residual = float(np.sqrt(np.mean(np.sum(perp ** 2, axis=1))))
    cosines = np.clip(np.einsum("ik,jk->ij", d, d), -1.0, 1.0)
    max_angle = float(np.degrees(np.arccos(np.min(cosines))))

    warnings: list[str] = []
    if max_angle < MIN_ANGLE_DEG:
        warnings.append(
            f"widest angle between the rays is {max_angle:.2f} deg (< {MIN_ANGLE_DEG:g} deg): depth "
            f"along the rays is poorly constrained; add a view from a position farther to the side")
    if residual > MAX_RESIDUAL_M:
        warnings.append(
            f"RMS distance of the rays from the point is {residual:.3f} m (> {MAX_RESIDUAL_M:g} m): the "
            f"marks may not show the same physical point; check each mark")
    if radius_m is not None:
        bound = float(radius_m) + RADIUS_MARGIN_M
        dist = norm(p)
        if dist > bound:
            warnings.append(
                f"the point is {dist:.2f} m from the task origin, beyond the search radius r + "
                f"{RADIUS_MARGIN_M:g} m = {bound:.2f} m, so it cannot be submitted; check the marks")
    return TriangulationResult(True, p, residual, max_angle, warnings, None, k)


def _too_many(k: int) -> str:
    return (f"at most {MAX_OBSERVATIONS} observations per request, got {k}; a few marks of the same "
            f"point in well-separated views are enough")


def _parse_mark(mark: Any) -> tuple[Any, Any, Any]:
    """``(frame_id, u, v)`` from a sequence or a mapping with those keys."""
    if isinstance(mark, Mapping):
        return mark["frame_id"], mark["u"], mark["v"]
    frame_id, u, v = mark
    return frame_id, u, v


def triangulate_marks(marks: Sequence[Any], frames: Mapping[int, FrameGeometry],
                      radius_m: float | None) -> TriangulationResult:
    """Triangulate pixels marked on captured frames (the ``triangulate_observations`` tool).

    Parameters
    ----------
    marks : sequence of (frame_id, u, v) or of {"frame_id", "u", "v"}
        Pixels on the *render grid* of each frame (convert delivered-image pixels first with
        :func:`spatialscout_gym.core.camera.delivered_to_render`).
    frames : mapping of int to FrameGeometry
        The captures the episode holds, by frame id.
    radius_m : float or None
        Search radius ``r`` for the ``r + 0.5 m`` warning.

    Returns
    -------
    TriangulationResult
        Also refused for an unknown frame id or a non-finite or out-of-image pixel.
    """
    k = len(marks)
    if k < 2:
        return TriangulationResult.refused(
            f"need at least 2 observations (frame_id, u, v) of the same point from different camera "
            f"positions, got {k}", k)
    if k > MAX_OBSERVATIONS:
        return TriangulationResult.refused(_too_many(k), k)
    origins, directions = np.empty((k, 3)), np.empty((k, 3))
    for i, mark in enumerate(marks):
        try:
            frame_id, u, v = _parse_mark(mark)
        except (KeyError, TypeError, ValueError):
            return TriangulationResult.refused(
                f"observation {i} must be (frame_id, u, v) or {{'frame_id', 'u', 'v'}}, got {mark!r}", k)
        if isinstance(frame_id, bool) or not isinstance(frame_id, (int, np.integer)) \
                or int(frame_id) not in frames:
            known = ", ".join(str(f) for f in sorted(frames)) or "none yet"
            return TriangulationResult.refused(
                f"observation {i} names unknown frame id {frame_id!r}; captured frame ids: {known}", k)
        geom = frames[int(frame_id)]
        try:
            u, v = float(u), float(v)
        except (TypeError, ValueError):
            return TriangulationResult.refused(
                f"observation {i} pixel must be two numbers (u, v), got ({u!r}, {v!r})", k)
        if not (np.isfinite(u) and np.isfinite(v)):
            return TriangulationResult.refused(
                f"observation {i} pixel ({u}, {v}) is not finite; give pixel coordinates as numbers", k)
        K = geom.intrinsics
        if not K.contains(u, v):
            return TriangulationResult.refused(
                f"observation {i} pixel ({u:g}, {v:g}) lies outside frame {int(frame_id)}'s "
                f"{K.width} x {K.height} render grid (u in [-0.5, {K.width - 0.5:g}], v in "
                f"[-0.5, {K.height - 0.5:g}]); convert delivered-image pixels to the render grid first", k)
        origins[i], directions[i] = geom.ray_task(u, v)
    return triangulate_rays(origins, directions, radius_m)
