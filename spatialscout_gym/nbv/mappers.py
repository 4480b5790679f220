"""Mappers: turn captured frames into ``submit_positions`` batches for next-best-view agents.

A mapper is the "perception" half of an NBV agent: the policy chooses views, the mapper decides
what each capture adds to the accepted map. The NBV wrapper (:mod:`spatialscout_gym.nbv.wrapper`)
and the NBV agents (:mod:`spatialscout_gym.baselines.nbv_agents`) call

* ``mapper.reset(spec)`` at the start of an episode, and
* ``mapper.observe(frame, privileged_frame, task_frame) -> {id: centre_task}`` after each capture,
  returning only the entries to submit now (new or improved estimates, task frame, metres).

Two oracle-perception mappers are provided (both read the evaluator-only
:class:`~spatialscout_gym.core.renderer_api.PrivilegedFrame` of each capture, so an agent using
them is ``privileged``; they measure view selection, not perception):

* :class:`OraclePerceptionMapper` (``"oracle"``, the default): every target with at least
  ``min_pixels`` pixels in the instance segmentation of a capture is submitted at its reference
  centre (docs/protocol.md section 2). Its all-target mean IoU equals its coverage.
* :class:`OracleSurfaceMapper` (``"oracle-surface"``): the same detections, but the estimate is the
  mean of the target's seen surface points, accumulated over captures (what perfect depth and
  segmentation give without reasoning about the unseen back of an object).
"""

from __future__ import annotations

from typing import Callable, Protocol, runtime_checkable

import numpy as np

from spatialscout_gym.core.frames import TaskFrame
from spatialscout_gym.core.renderer_api import PrivilegedFrame
from spatialscout_gym.core.spec import PrivateScene, SceneSpec
from spatialscout_gym.episode.episode import EpisodeFrame

__all__ = ["Mapper", "OraclePerceptionMapper", "OracleSurfaceMapper", "make_mapper", "MAPPERS",
           "seen_targets", "seen_target_ids"]


@runtime_checkable
class Mapper(Protocol):
    """Turns captures into submissions (see the module docstring)."""

    name: str
    needs_privileged: bool

    def reset(self, spec: SceneSpec) -> None:
        """Forget the previous episode; ``spec`` is the scene of the new one."""
        ...

    def observe(self, frame: EpisodeFrame | None, privileged_frame: PrivilegedFrame | None,
                task_frame: TaskFrame) -> dict[str, np.ndarray]:
        """Entries to submit after ``frame`` (an :class:`~spatialscout_gym.episode.EpisodeFrame`,
        or None from :class:`~spatialscout_gym.nbv.wrapper.NextBestViewWrapper`, which sees only
        the env's observation): target id -> centre estimate, task frame, metres, shape (3,)."""
        ...


def seen_targets(privileged_frame: PrivilegedFrame, target_index: dict[int, str],
                 min_pixels: int = 1) -> dict[str, np.ndarray]:
    """Targets visible in one privileged capture and their pixel masks.

    Parameters
    ----------
    privileged_frame : PrivilegedFrame
        ``segmentation`` (H, W) int32 indexes ``spec.private.objects`` (-1: nothing).
    target_index : dict
        Object index -> target id, for the objects whose role is ``"target"``.
    min_pixels : int
        A target counts as seen when at least this many pixels show it.

    Returns
    -------
    dict
        Target id -> boolean mask, shape (H, W).
    """
    seg = np.asarray(privileged_frame.segmentation)
    indices, counts = np.unique(seg[seg >= 0], return_counts=True)
    out: dict[str, np.ndarray] = {}
    for index, count in zip(indices.tolist(), counts.tolist()):
        tid = target_index.get(int(index))
        if tid is not None and count >= min_pixels:
            out[tid] = seg == index
    return out


def seen_target_ids(privileged_frame: PrivilegedFrame, target_index: dict[int, str],
                    min_pixels: int = 1) -> list[str]:
    """The ids of :func:`seen_targets`, in the same order (ascending object index), without
    building the pixel masks (what :class:`OraclePerceptionMapper` needs)."""
    seg = np.asarray(privileged_frame.segmentation)
    counts = np.bincount(seg[seg >= 0].ravel())
    out: list[str] = []
    for index in np.flatnonzero(counts >= min_pixels).tolist():
        tid = target_index.get(index)
        if tid is not None:
            out.append(tid)
    return out


def _target_index(spec: SceneSpec) -> dict[int, str]:
    return {i: o.id for i, o in enumerate(spec.private.objects) if o.role == "target"}


class _SceneTargets:
    """Per-scene data the oracle mappers need, kept while episodes stay on one scene: the target
    index and the targets' world boxes (a turned start shares ``spec.private`` with its scene, so
    only the task-frame centres are recomputed, exactly as ``SceneSpec.targets`` does)."""

    def __init__(self) -> None:
        self._private: PrivateScene | None = None
        self.index: dict[int, str] = {}
        self._boxes: list[tuple[str, np.ndarray, np.ndarray]] = []

    def update(self, spec: SceneSpec) -> None:
        if spec.private is not self._private:
            self.index = _target_index(spec)
            self._boxes = [(t.id, t.box_min, t.box_max) for t in spec.targets]
            self._private = spec.private

    def centres(self, spec: SceneSpec) -> dict[str, np.ndarray]:
        """Target id -> reference centre, task frame of ``spec``, metres (= ``spec.targets``)."""
        frame = spec.task_frame
        return {tid: np.asarray(frame.to_task((lo + hi) / 2), dtype=float) for tid, lo, hi in self._boxes}


class OraclePerceptionMapper:
    """Submit the reference centre of every target seen in a capture (evaluator-only data).

    Parameters
    ----------
    min_pixels : int
        Pixels of a target's instance mask needed to count it as seen (default 1).
    """

    name = "oracle"
    needs_privileged = True

    def __init__(self, min_pixels: int = 1) -> None:
        if int(min_pixels) < 1:
            raise ValueError(f"min_pixels must be >= 1, got {min_pixels}")
        self.min_pixels = int(min_pixels)
        self._index: dict[int, str] = {}
        self._centres: dict[str, np.ndarray] = {}
        self._done: set[str] = set()
        self._scene = _SceneTargets()

    def reset(self, spec: SceneSpec) -> None:
        self._scene.update(spec)
        self._index = self._scene.index
        self._centres = self._scene.centres(spec)
        self._done = set()

    def observe(self, frame: EpisodeFrame | None, privileged_frame: PrivilegedFrame | None,
                task_frame: TaskFrame) -> dict[str, np.ndarray]:
        if privileged_frame is None:
            raise ValueError("OraclePerceptionMapper needs the privileged frame of each capture "
                             "(segmentation); got None. Build the env/agent with privileged access.")
        new = {tid: self._centres[tid] for tid in seen_target_ids(privileged_frame, self._index,
                                                                  self.min_pixels)
               if tid not in self._done}
        self._done.update(new)
        return new


class OracleSurfaceMapper:
    """Submit the mean of each target's seen surface points (perfect depth and segmentation).

    Parameters
    ----------
    min_pixels : int
        Pixels of a target's mask needed to count it as seen in one capture (default 1).
    """

    name = "oracle-surface"
    needs_privileged = True

    def __init__(self, min_pixels: int = 1) -> None:
        if int(min_pixels) < 1:
            raise ValueError(f"min_pixels must be >= 1, got {min_pixels}")
        self.min_pixels = int(min_pixels)
        self._index: dict[int, str] = {}
        self._sum: dict[str, np.ndarray] = {}
        self._count: dict[str, int] = {}

    def reset(self, spec: SceneSpec) -> None:
        self._index = _target_index(spec)
        self._sum, self._count = {}, {}

    def observe(self, frame: EpisodeFrame | None, privileged_frame: PrivilegedFrame | None,
                task_frame: TaskFrame) -> dict[str, np.ndarray]:
        if privileged_frame is None:
            raise ValueError("OracleSurfaceMapper needs the privileged frame of each capture "
                             "(segmentation and world positions); got None.")
        out: dict[str, np.ndarray] = {}
        pos = np.asarray(privileged_frame.position_world, dtype=float)
        for tid, mask in seen_targets(privileged_frame, self._index, self.min_pixels).items():
            pts = pos[mask]
            pts = pts[np.all(np.isfinite(pts), axis=1)]
            if len(pts) == 0:
                continue
            self._sum[tid] = self._sum.get(tid, np.zeros(3)) + pts.sum(axis=0)
            self._count[tid] = self._count.get(tid, 0) + len(pts)
            out[tid] = task_frame.to_task(self._sum[tid] / self._count[tid])
        return out


MAPPERS: dict[str, Callable[..., Mapper]] = {"oracle": OraclePerceptionMapper,
                                             "oracle-surface": OracleSurfaceMapper}


def make_mapper(name: str, **options: int) -> Mapper:
    """A mapper by name: ``"oracle"`` (default) or ``"oracle-surface"``."""
    try:
        return MAPPERS[name](**options)
    except KeyError:
        raise ValueError(f"unknown mapper {name!r}; known mappers: {', '.join(MAPPERS)}") from None
