"""Oracle reference agents: perfect perception, a fixed systematic view plan.

Both agents act through the ten tools (``set_camera_position``, ``capture_image``,
``triangulate_observations``, ``submit_positions``, ``finish_mapping``) and read evaluator-only
:class:`~spatialscout_gym.baselines.base.PrivilegedAccess` (scene geometry for the plan, and the
segmentation and depth of their own captures); they are ``privileged`` and the runner passes it.

* ``oracle-explorer``: maps every target it has *seen* (at least one pixel of its instance mask
  in some capture) at its reference centre (docs/protocol.md section 2). Its all-target mean IoU equals its
  coverage: a ceiling for exploration under the image budget.
* ``oracle-click``: perfect correspondences, honest geometry. For each target it takes the most
  interior pixel of its mask in the view where the target is largest, finds the same surface point
  in other views (project, then check segmentation and depth), triangulates those marks with the
  tool and submits the triangulated point. Because that point lies on the target's *surface*, not
  at its centre (docs/protocol.md section 4), the gap between its submitted mean IoU and the explorer's 100 %
  measures what "a surface point is not the centre" costs. A target seen from one camera centre
  only cannot be triangulated and is left out.

**View plan** (:func:`view_plan`): camera positions at eye height (the initial camera's), on a
0.5 m grid over the floors inside the search radius, away from walls and furniture, chosen by
farthest-point sampling starting at the initial camera; at each, a yaw sweep of ``sweep`` headings
at pitch ``pitch_deg``. Positions and headings use the privileged geometry, nothing else.
"""

from __future__ import annotations

import numpy as np

from spatialscout_gym.baselines.base import PrivilegedAccess
from spatialscout_gym.baselines.registry import register_agent
from spatialscout_gym.nbv.mappers import make_mapper
from spatialscout_gym.core.camera import pixel_to_ray_camera, project_world_to_pixel
from spatialscout_gym.core.frames import CameraPose, wrap_degrees
from spatialscout_gym.core.spec import SceneSpec
from spatialscout_gym.episode.episode import Episode

__all__ = ["OracleExplorerAgent", "OracleClickAgent", "view_plan", "free_positions"]

_STRUCTURE = ("Floor", "Ceiling")


def free_positions(spec: SceneSpec, *, grid_m: float = 0.5, clearance_m: float = 0.3) -> np.ndarray:
    """Candidate camera centres (world, metres, shape (M, 3)) at the initial camera's height.

    Grid points over the floor objects' footprints (a disc of radius ``r`` around the initial
    camera when the scene has no ``Floor`` object), within ``r`` of the initial camera
    horizontally, and at least ``clearance_m`` from every other rendered object whose box spans the
    camera height. The initial camera centre is always the first row.
    """
    o0 = spec.public.initial_camera.position_world
    r = float(spec.public.radius_m)
    z = float(o0[2])
    floors = [o.aabb_world for o in spec.private.objects if o.role != "hidden" and o.category == "Floor"]
    if not floors:
        floors = [(o0 - r, o0 + r)]
    blockers = []
    for o in spec.private.objects:
        if o.role == "hidden" or o.category in _STRUCTURE:
            continue
        lo, hi = o.aabb_world
        if lo[2] - 0.1 <= z <= hi[2] + 0.1:
            blockers.append((lo[:2] - clearance_m, hi[:2] + clearance_m))
    pts = []
    for lo, hi in floors:
        xs = np.arange(lo[0] + clearance_m, hi[0] - clearance_m + 1e-9, grid_m)
        ys = np.arange(lo[1] + clearance_m, hi[1] - clearance_m + 1e-9, grid_m)
        for x in xs:
            for y in ys:
                pts.append((x, y))
    keep = [o0.copy()]
    for x, y in pts:
        if np.hypot(x - o0[0], y - o0[1]) > r:
            continue
        if any(b_lo[0] <= x <= b_hi[0] and b_lo[1] <= y <= b_hi[1] for b_lo, b_hi in blockers):
            continue
        keep.append(np.array([x, y, z]))
    return np.array(keep)


def view_plan(spec: SceneSpec, n_images: int, *, sweep: int = 6, pitch_deg: float = -20.0,
              grid_m: float = 0.5) -> list[CameraPose]:
    """``n_images`` world poses: yaw sweeps from farthest-point-sampled free positions.

    The first sweep is at the initial camera centre and skips the initial heading (frame 0 already
    looks there); later sweeps start at the initial heading. Deterministic for a scene.
    """
    if n_images <= 0:
        return []
    cand = free_positions(spec, grid_m=grid_m)
    n_pos = int(np.ceil((n_images + 1) / sweep))
    chosen = [0]
    dist = np.linalg.norm(cand - cand[0], axis=1)
    while len(chosen) < min(n_pos, len(cand)):
        i = int(np.argmax(dist))
        if dist[i] <= 1e-9:
            break
        chosen.append(i)
        dist = np.minimum(dist, np.linalg.norm(cand - cand[i], axis=1))
    yaw0 = spec.public.initial_camera.yaw_deg
    poses: list[CameraPose] = []
    k = 0
    while len(poses) < n_images:
        position = cand[chosen[k % len(chosen)]]
        lap = k // len(chosen)  # revisits (only when free positions run out) shift the headings
        for j in range(sweep):
            if k == 0 and j == 0:
                continue
            yaw = wrap_degrees(yaw0 + (j + 0.5 * lap) * 360.0 / sweep)
            poses.append(CameraPose(position, yaw, pitch_deg))
            if len(poses) == n_images:
                break
        k += 1
    return poses


def _go(episode: Episode, pose: CameraPose) -> bool:
    tf = episode.task_frame
    res = episode.set_camera_position(tf.to_task(pose.position_world).tolist(),
                                      yaw_deg=wrap_degrees(pose.yaw_deg - tf.initial_yaw_deg),
                                      pitch_deg=pose.pitch_deg)
    return res.ok


def _capture_along(episode: Episode, poses, look) -> None:
    """Go to each pose of a view plan and capture there, calling ``look(frame_id)`` after each
    capture; stops at the first refused capture (the image budget is used up)."""
    for pose in poses:
        if not _go(episode, pose):
            continue
        res = episode.capture_image()
        if not res.ok:
            break
        look(res.frame_id)


def _require(privileged: PrivilegedAccess | None, name: str) -> PrivilegedAccess:
    if privileged is None:
        raise ValueError(f"agent {name!r} is privileged: run it through the runner (which passes "
                         f"PrivilegedAccess because agent.privileged is True), not with privileged=None")
    return privileged


def _images_affordable(episode: Episode, calls_per_image: int, reserve_calls: int) -> int:
    n = episode.images_left
    if episode.calls_left is not None:
        n = min(n, max(0, (episode.calls_left - reserve_calls) // calls_per_image))
    return n


@register_agent("oracle-explorer", kind="privileged")
class OracleExplorerAgent:
    """Sees with privileged segmentation and submits the reference centre of every seen target.

    Parameters
    ----------
    sweep : int
        Headings per position (6 covers 360 degrees with the 65 degree field of view).
    pitch_deg : float
        Pitch of every planned view, degrees (negative looks down).
    min_pixels : int
        Mask pixels needed to count a target as seen.
    mapper : str
        What a seen target's submission is (:mod:`spatialscout_gym.nbv.mappers`):
        ``"oracle"`` its reference centre (default), ``"oracle-surface"`` the mean of its seen
        surface points.
    """

    name: str             # both set by @register_agent
    privileged: bool

    def __init__(self, sweep: int = 6, pitch_deg: float = -20.0, min_pixels: int = 1,
                 mapper: str = "oracle") -> None:
        self.sweep, self.pitch_deg, self.min_pixels = int(sweep), float(pitch_deg), int(min_pixels)
        make_mapper(mapper)  # an unknown name fails here, saying which names exist
        self.mapper_name = str(mapper)

    def run(self, episode: Episode, *, rng: np.random.Generator,
            privileged: PrivilegedAccess | None) -> None:
        priv = _require(privileged, self.name)
        spec = priv.spec
        mapper = make_mapper(self.mapper_name, min_pixels=self.min_pixels)
        mapper.reset(spec)
        per_capture = episode.tool_call_budget is None  # unlimited calls: a map snapshot per image
        pending: dict[str, list[float]] = {}

        def look(frame_id: int) -> None:
            frame = episode.frames[frame_id]
            new = mapper.observe(frame, priv.capture_privileged(frame.pose), episode.task_frame)
            pending.update({tid: [float(x) for x in c] for tid, c in new.items()})
            if per_capture and pending and frame_id > 0:
                episode.submit_positions(pending)
                pending.clear()

        look(0)
        n = _images_affordable(episode, 2, reserve_calls=2)
        _capture_along(episode, view_plan(spec, n, sweep=self.sweep, pitch_deg=self.pitch_deg), look)
        if pending:
            episode.submit_positions(pending)
        episode.finish_mapping()


@register_agent("oracle-click", kind="privileged")
class OracleClickAgent:
    """Marks the same surface point of each target in several views and triangulates it.

    Parameters
    ----------
    sweep, pitch_deg : see :class:`OracleExplorerAgent`.
    min_pixels : int
        Mask pixels needed to consider a view of a target (default 4).
    max_views : int
        Marks per triangulation (the anchor view plus up to ``max_views - 1`` others).
    min_baseline_m : float
        Camera centres closer than this to the anchor's are not used (docs/protocol.md refuses < 5 cm).
    depth_tol_m : float
        A projected surface point counts as visible in another view when that view's depth at the
        pixel agrees within this tolerance.
    """

    name: str             # both set by @register_agent
    privileged: bool

    def __init__(self, sweep: int = 6, pitch_deg: float = -20.0, min_pixels: int = 4,
                 max_views: int = 4, min_baseline_m: float = 0.3, depth_tol_m: float = 0.03,
                 candidates: int = 12) -> None:
        self.sweep, self.pitch_deg = int(sweep), float(pitch_deg)
        self.min_pixels, self.max_views = int(min_pixels), int(max_views)
        self.min_baseline_m, self.depth_tol_m = float(min_baseline_m), float(depth_tol_m)
        self.candidates = int(candidates)

    def run(self, episode: Episode, *, rng: np.random.Generator,
            privileged: PrivilegedAccess | None) -> None:
        from scipy.ndimage import distance_transform_edt

        priv = _require(privileged, self.name)
        spec = priv.spec
        index = {i: o.id for i, o in enumerate(spec.private.objects) if o.role == "target"}
        obj_index = {tid: i for i, tid in index.items()}
        n_targets = len(episode.inventory_ids)
        views: dict[int, tuple[np.ndarray, np.ndarray]] = {}  # frame id -> (segmentation, depth)

        def look(frame_id: int) -> None:
            p = priv.capture_privileged(episode.frames[frame_id].pose)
            views[frame_id] = (np.asarray(p.segmentation, np.int32), np.asarray(p.depth_m, np.float32))

        look(0)
        n = _images_affordable(episode, 2, reserve_calls=n_targets + 2)
        _capture_along(episode, view_plan(spec, n, sweep=self.sweep, pitch_deg=self.pitch_deg), look)

        frames = episode.frames
        K = episode.intrinsics
        submit: dict[str, list[float]] = {}
        for tid in episode.inventory_ids:
            if episode.calls_left is not None and episode.calls_left <= 2:
                break
            target = obj_index[tid]
            sizes = {fid: int((seg == target).sum()) for fid, (seg, _) in views.items()}
            seen = sorted((f for f, s in sizes.items() if s >= self.min_pixels), key=lambda f: -sizes[f])
            if len(seen) < 2:
                continue
            marks = self._marks(target, seen, views, frames, K, distance_transform_edt)
            if marks is None:
                continue
            res = episode.triangulate_observations(marks)
            if res.ok:
                submit[tid] = [float(x) for x in res.result["point"]]
        if submit and not episode.done:
            episode.submit_positions(submit)
        if not episode.done:
            episode.finish_mapping()

    def _marks(self, target: int, seen: list[int], views, frames, K, edt) -> list[dict] | None:
        """Marks of one surface point of ``target`` in the anchor view and other views, or None."""
        anchor = seen[0]
        seg, depth = views[anchor]
        mask = seg == target
        interior = edt(mask)
        flat = np.argsort(-interior, axis=None)[: self.candidates]
        pose_a = frames[anchor].pose
        for idx in flat:
            v, u = np.unravel_index(int(idx), mask.shape)
            if not mask[v, u]:
                break
            ray = pixel_to_ray_camera(K, float(u), float(v))
            point_world = pose_a.position_world + pose_a.R_world_cam @ (ray / ray[0] * float(depth[v, u]))
            marks = [{"frame_id": anchor, "u": float(u), "v": float(v)}]
            for fid in seen[1:]:
                pose = frames[fid].pose
                if np.linalg.norm(pose.position_world - pose_a.position_world) < self.min_baseline_m:
                    continue
                uv, z = project_world_to_pixel(K, pose, point_world)
                ui, vi = int(round(uv[0])), int(round(uv[1]))
                if z <= 0 or not (0 <= ui < K.width and 0 <= vi < K.height):
                    continue
                seg_b, depth_b = views[fid]
                if seg_b[vi, ui] != target or abs(float(depth_b[vi, ui]) - float(z)) > self.depth_tol_m:
                    continue
                marks.append({"frame_id": fid, "u": float(uv[0]), "v": float(uv[1])})
                if len(marks) >= self.max_views:
                    break
            if len(marks) >= 2:
                return marks
        return None
