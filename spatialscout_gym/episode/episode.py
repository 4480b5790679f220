"""One SpatialScout episode: the ten tools as a state machine (docs/protocol.md sections 4-5).

The episode sees only the public half of a scene (:class:`~spatialscout_gym.core.spec.PublicScene`)
and a renderer with the small interface of :mod:`spatialscout_gym.core.renderer_api`; it never
reads target boxes, so nothing it returns can leak them.

State: the current camera pose (world frame, roll 0), the captured frames (id, pose, intrinsics,
RGB), the accepted map (target id -> task-frame centre), counters and the trace.

Rules (docs/protocol.md section 4 unless noted):

* ``move_camera(forward, right, up)``: forward/right along the current *horizontal* heading and
  its right, up along world vertical; ``|(forward, right, up)| <= 1`` m.
* ``rotate_camera(yaw, pitch)``: degrees, ``|yaw|, |pitch| <= 180``; yaw positive turns left
  (counter-clockwise from above), pitch positive looks up; the final pitch is clamped to
  ``[-85, 85]``; roll stays 0.
* ``set_camera_position(position, yaw_deg, pitch_deg)``: task-frame position; yaw relative to the
  initial heading, pitch the absolute elevation (clamped like ``rotate_camera``); an omitted angle
  keeps its current value.
* Every world coordinate of the camera stays within ``+-15`` m; a request that would leave the box
  is refused and nothing moves.
* ``capture_image``: the initial image (frame 0, captured when the episode starts) counts
  against the image budget V (docs/protocol.md section 5); after V images captures are refused.
* ``submit_positions``: per entry, a known id and three finite numbers with ``|p| <= r + 0.5`` m;
  valid entries replace earlier ones; the reply is the whole accepted map plus per-entry refusals.
* ``finish_mapping`` freezes the map and ends the episode; every later call is refused.
* Arguments nested deeper than 6 levels, holding more than 2000 values or a string longer than
  1000 characters are refused before anything else reads them (the trace keeps a note, not them).
* Every call (refused ones included) counts against ``tool_call_budget``; when it is used up the episode
  ends with ``end_reason == "tool_call_budget"``. ``tool_call_budget=None`` means unlimited (a VLM wrapper
  counts model calls itself).

A refusal is a :class:`ToolResult` with ``ok=False`` and a reason; the pose, frames and map are
unchanged (the call and trace counters still advance).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Mapping

import numpy as np

from spatialscout_gym.core import exact
from spatialscout_gym.core.camera import Intrinsics
from spatialscout_gym.core.errors import ConfigError
from spatialscout_gym.core.frames import CameraPose, TaskFrame, wrap_degrees
from spatialscout_gym.core.renderer_api import FrameSource
from spatialscout_gym.core.spec import PublicScene
from spatialscout_gym.core.types import ArrayLike3, is_finite_number

if TYPE_CHECKING:
    from spatialscout_gym.core.triangulation import FrameGeometry
from spatialscout_gym.episode import trace as tr
from spatialscout_gym.episode.tools import (BOUND_TOLERANCE_M, MAX_ROTATION_DEG, MAX_TRANSLATION_M, PITCH_LIMIT_DEG,
                                            SUBMIT_MARGIN_M, TOOL_NAMES, WORLD_BOX_M, ToolResult,
                                            argument_size_problem, safe_repr, to_jsonable,
                                            validate_args)

__all__ = ["Episode", "EpisodeFrame"]


@dataclass(frozen=True)
class EpisodeFrame:
    """A captured frame.

    Attributes
    ----------
    frame_id : int
    pose : CameraPose
        Camera pose in the world frame at capture time.
    position_task : ndarray, shape (3,)
        Camera centre in the task frame, metres.
    R_task_cam : ndarray, shape (3, 3)
        Task-from-camera rotation; columns are the camera's forward, left, up in the task frame.
    intrinsics : Intrinsics
    image : ndarray, shape (H, W, 3), uint8
    """

    frame_id: int
    pose: CameraPose
    position_task: np.ndarray
    R_task_cam: np.ndarray
    intrinsics: Intrinsics
    image: np.ndarray

    @property
    def geometry(self) -> FrameGeometry:
        """The frame as :class:`spatialscout_gym.core.triangulation.FrameGeometry`."""
        from spatialscout_gym.core.triangulation import FrameGeometry
        return FrameGeometry(self.position_task, self.R_task_cam, self.intrinsics)


class Episode:
    """The ten tools of docs/protocol.md section 4 over one scene (see the module docstring for the rules).

    Parameters
    ----------
    public : PublicScene
        Inventory, initial camera (world), intrinsics and search radius ``r``.
    renderer : FrameSource
        Anything with ``intrinsics`` and ``capture_rgb(pose) -> (H, W, 3) uint8``.
    image_budget : int
        V, images per episode including the initial one (>= 1).
    tool_call_budget : int or None
        Tool calls per episode; None for unlimited.

    Examples
    --------
    >>> ep = Episode(scene.public, renderer)                     # doctest: +SKIP
    >>> ep.call("move_camera", {"forward": 0.5}).ok              # doctest: +SKIP
    True
    """

    def __init__(self, public: PublicScene, renderer: FrameSource, *, image_budget: int = 100,
                 tool_call_budget: int | None = 100) -> None:
        if int(image_budget) < 1:
            raise ConfigError(f"image_budget must be >= 1 (the initial image counts), got {image_budget}")
        if tool_call_budget is not None and int(tool_call_budget) < 1:
            raise ConfigError(f"tool_call_budget must be >= 1 or None (unlimited), got {tool_call_budget}")
        self.public = public
        self.renderer = renderer
        self.image_budget = int(image_budget)
        self.tool_call_budget = None if tool_call_budget is None else int(tool_call_budget)
        self.task_frame: TaskFrame = TaskFrame.from_initial_pose(public.initial_camera)
        self.intrinsics: Intrinsics = renderer.intrinsics
        self._ids = [e.id for e in public.inventory]
        self._id_set = set(self._ids)
        self._pose: CameraPose = public.initial_camera
        self._frames: dict[int, EpisodeFrame] = {}
        self._accepted: dict[str, np.ndarray] = {}
        self.map_version = 0
        """Counts changes of the accepted map (successful ``submit_positions`` calls), so a
        caller can tell whether a copy it built from :attr:`accepted_map` is still current."""
        self._pose_task: tuple[CameraPose, dict] | None = None
        self.tool_calls = 0
        self.clock: Callable[[], float] | None = None
        """Set to a wall clock (``time.time``) to stamp each ``tool_call`` event with
        ``started_unix_s`` and ``execution_s`` (seconds); None keeps traces free of times, so two
        runs of a deterministic agent write identical traces."""
        self.done = False
        self.end_reason: str | None = None
        self.trace: list[dict] = [tr.event(
            "start", scene_id=public.scene_id, image_budget=self.image_budget,
            tool_call_budget=self.tool_call_budget, initial_pose_world=public.initial_camera.to_dict(),
            intrinsics=self.intrinsics.to_dict(), radius_m=float(public.radius_m))]
        self._capture(tool_call_index=None)  # frame 0, counted against V

    # ---- accessors -----------------------------------------------------------------------
    @property
    def pose(self) -> CameraPose:
        """Current camera pose, world frame."""
        return self._pose

    @property
    def frames(self) -> Mapping[int, EpisodeFrame]:
        """Captured frames by frame id (read-only view)."""
        return dict(self._frames)

    @property
    def accepted_map(self) -> dict[str, np.ndarray]:
        """Accepted centres: target id -> task-frame position, shape (3,), metres."""
        return {k: v.copy() for k, v in self._accepted.items()}

    @property
    def inventory_ids(self) -> list[str]:
        return list(self._ids)

    @property
    def images_used(self) -> int:
        return len(self._frames)

    @property
    def images_left(self) -> int:
        return self.image_budget - len(self._frames)

    @property
    def calls_left(self) -> int | None:
        return None if self.tool_call_budget is None else self.tool_call_budget - self.tool_calls

    @property
    def latest_image(self) -> np.ndarray:
        return self._frames[max(self._frames)].image

    def pose_task(self, pose: CameraPose | None = None) -> dict:
        """``task_frame.pose_to_task(pose)`` (default: the current pose) as a new dict; computed
        once per pose (a step reports the same pose in its result, the trace and the env's
        observation)."""
        pose = self._pose if pose is None else pose
        cached = self._pose_task
        if cached is None or cached[0] is not pose:
            cached = self._pose_task = (pose, self.task_frame.pose_to_task(pose))
        return {k: (list(v) if isinstance(v, list) else v) for k, v in cached[1].items()}

    def counters(self) -> dict:
        """Tool calls, images used/left, calls left, done and end reason."""
        return {"tool_calls": self.tool_calls, "images_used": self.images_used,
                "images_left": self.images_left, "calls_left": self.calls_left,
                "done": self.done, "end_reason": self.end_reason}

    # ---- the single entry point -----------------------------------------------------------
    def call(self, tool: str, args: dict | None = None) -> ToolResult:
        """Run one tool. Never raises for bad input: a refusal is ``ToolResult(ok=False)`` (also for
        an argument whose ``repr``, ``str``, hash or comparison raises); a counted call always
        applies the budget's end."""
        args = {} if args is None else args
        tool = tool if isinstance(tool, str) else safe_repr(tool)
        if self.done:
            res = ToolResult(str(tool), False, error=(
                f"the episode has ended ({self.end_reason}); no further tools run"))
            return res
        index = self.tool_calls
        self.tool_calls += 1
        try:
            return self._counted_call(index, tool, args)
        finally:
            if not self.done and self.tool_call_budget is not None and self.tool_calls >= self.tool_call_budget:
                self._end("tool_call_budget")

    def _counted_call(self, index: int, tool: str, args: Any) -> ToolResult:
        started = self.clock() if self.clock is not None else None
        # Size first: nothing (validation, the trace, a wrapper's history) may walk an over-deep or
        # over-large argument; the trace then keeps a note instead of the arguments.
        try:
            too_big = argument_size_problem(args)
            reason = f"{tool[:60]}: {too_big}" if too_big else validate_args(tool, args)
        except Exception as exc:   # an argument whose repr, str, hash or comparison raises
            too_big, reason = None, (f"{tool[:60]}: the arguments could not be read ({type(exc).__name__} "
                                     f"from one of them); send JSON numbers, strings, lists and objects")
        if reason is not None:
            res = ToolResult(tool[:60] if too_big else str(tool), False, error=reason)
        else:
            # A JSON null for an optional argument means "not given" (validate_args agrees).
            given = {k: v for k, v in args.items() if v is not None}
            res = getattr(self, f"_tool_{tool}")(index=index, **given)
        times = {} if started is None or self.clock is None else \
            {"started_unix_s": started, "execution_s": self.clock() - started}
        if too_big:
            logged: Any = {"omitted": "arguments over the size bounds (docs/protocol.md section 4)"}
        else:
            try:
                logged = to_jsonable(args) if isinstance(args, dict) else repr(args)[:2000]
            except Exception:   # as above: kept as a note, the refusal says why
                logged = {"omitted": "arguments that could not be written (their repr or str raised)"}
        self.trace.append(tr.event("tool_call", index=index, tool=str(tool)[:200], args=logged,
                                   result=res.to_dict(), **times))
        if res.ok and tool == "submit_positions":
            self._snapshot(index)
        if res.ok and tool == "finish_mapping":
            self._end("finish_mapping")
        return res

    # ---- typed per-tool methods -------------------------------------------------------------
    def list_entities(self) -> ToolResult:
        return self.call("list_entities", {})

    def get_camera_pose(self) -> ToolResult:
        return self.call("get_camera_pose", {})

    def get_camera_intrinsics(self) -> ToolResult:
        return self.call("get_camera_intrinsics", {})

    def set_camera_position(self, position: ArrayLike3, yaw_deg: float | None = None,
                            pitch_deg: float | None = None) -> ToolResult:
        args: dict[str, Any] = {"position": list(np.asarray(position, dtype=float).tolist())}
        if yaw_deg is not None:
            args["yaw_deg"] = yaw_deg
        if pitch_deg is not None:
            args["pitch_deg"] = pitch_deg
        return self.call("set_camera_position", args)

    def move_camera(self, forward: float = 0.0, right: float = 0.0, up: float = 0.0) -> ToolResult:
        return self.call("move_camera", {"forward": forward, "right": right, "up": up})

    def rotate_camera(self, yaw: float = 0.0, pitch: float = 0.0) -> ToolResult:
        return self.call("rotate_camera", {"yaw": yaw, "pitch": pitch})

    def capture_image(self) -> ToolResult:
        return self.call("capture_image", {})

    def triangulate_observations(self, observations: list[dict]) -> ToolResult:
        return self.call("triangulate_observations", {"observations": observations})

    def submit_positions(self, positions: Mapping[str, Any]) -> ToolResult:
        return self.call("submit_positions", {"positions": dict(positions)})

    def finish_mapping(self) -> ToolResult:
        return self.call("finish_mapping", {})

    # ---- tool implementations --------------------------------------------------------------
    def _budgets(self) -> dict:
        return {"image_budget": self.image_budget, "images_used": self.images_used,
                "images_left": self.images_left, "tool_call_budget": self.tool_call_budget,
                "tool_calls": self.tool_calls, "calls_left": self.calls_left}

    def _tool_list_entities(self, *, index: int) -> ToolResult:
        return ToolResult("list_entities", True, {
            "entities": [e.to_dict() for e in self.public.inventory],
            "count": len(self._ids), "radius_m": float(self.public.radius_m),
            "submit_bound_m": float(self.public.radius_m) + SUBMIT_MARGIN_M,
            "budgets": self._budgets()})

    def _tool_get_camera_pose(self, *, index: int) -> ToolResult:
        return ToolResult("get_camera_pose", True, self.pose_task())

    def _tool_get_camera_intrinsics(self, *, index: int) -> ToolResult:
        return ToolResult("get_camera_intrinsics", True, self.intrinsics.to_dict())

    def _out_of_box(self, position_world: np.ndarray) -> str | None:
        if np.all(np.abs(position_world) <= WORLD_BOX_M + BOUND_TOLERANCE_M):
            return None
        return (f"the camera must stay within +-{WORLD_BOX_M:g} m on every world axis; this request "
                f"would put it at world {np.round(position_world, 3).tolist()}; nothing moved")

    def _moved(self, tool: str, new_pose: CameraPose, extra: dict | None = None) -> ToolResult:
        reason = self._out_of_box(new_pose.position_world)
        if reason:
            return ToolResult(tool, False, error=f"{tool}: {reason}")
        self._pose = new_pose
        out = self.pose_task(new_pose)
        out.update(extra or {})
        return ToolResult(tool, True, out)

    def _tool_set_camera_position(self, *, index: int, position, yaw_deg=None,
                                  pitch_deg=None) -> ToolResult:
        cur = self.pose_task()
        yaw = cur["yaw_deg"] if yaw_deg is None else float(yaw_deg)
        pitch = self._pose.pitch_deg if pitch_deg is None else float(pitch_deg)
        clamped = float(np.clip(pitch, -PITCH_LIMIT_DEG, PITCH_LIMIT_DEG))
        extra = {"pitch_clamped": True} if clamped != pitch else {}
        if yaw_deg is None:  # keep the exact current heading (no round trip through 6 decimals)
            new = CameraPose(self.task_frame.to_world(np.asarray(position, dtype=float)),
                             self._pose.yaw_deg, clamped)
        else:
            new = self.task_frame.pose_from_task(np.asarray(position, dtype=float), yaw, clamped)
        return self._moved("set_camera_position", new, extra)

    def _tool_move_camera(self, *, index: int, forward=0.0, right=0.0, up=0.0) -> ToolResult:
        f, r, u = float(forward), float(right), float(up)
        norm = exact.norm([f, r, u])
        if norm > MAX_TRANSLATION_M + BOUND_TOLERANCE_M:
            return ToolResult("move_camera", False, error=(
                f"move_camera: |(forward, right, up)| must be <= {MAX_TRANSLATION_M:g} m per call, "
                f"got {norm:.3f} m; split the move into smaller steps; nothing moved"))
        p = self._pose
        delta = f * p.horizontal_forward_world + r * p.horizontal_right_world + u * np.array([0.0, 0.0, 1.0])
        return self._moved("move_camera", CameraPose(p.position_world + delta, p.yaw_deg, p.pitch_deg))

    def _tool_rotate_camera(self, *, index: int, yaw=0.0, pitch=0.0) -> ToolResult:
        y, pi = float(yaw), float(pitch)
        for name, val in (("yaw", y), ("pitch", pi)):
            if abs(val) > MAX_ROTATION_DEG:
                return ToolResult("rotate_camera", False, error=(
                    f"rotate_camera: |{name}| must be <= {MAX_ROTATION_DEG:g} degrees per call, got "
                    f"{val:g}; nothing moved"))
        p = self._pose
        want = p.pitch_deg + pi
        new_pitch = float(np.clip(want, -PITCH_LIMIT_DEG, PITCH_LIMIT_DEG))
        extra = {"pitch_clamped": True} if new_pitch != want else {}
        return self._moved("rotate_camera",
                           CameraPose(p.position_world, wrap_degrees(p.yaw_deg + y), new_pitch), extra)

    def _capture(self, tool_call_index: int | None) -> EpisodeFrame:
        image = np.asarray(self.renderer.capture_rgb(self._pose))
        K = self.intrinsics
        if image.shape != (K.height, K.width, 3) or image.dtype != np.uint8:
            raise RuntimeError(f"renderer returned an image of shape {image.shape} and dtype "
                               f"{image.dtype}; expected ({K.height}, {K.width}, 3) uint8")
        fid = len(self._frames)
        R_task_cam = exact.matmul(self.task_frame.R_world_task.T, self._pose.R_world_cam)
        frame = EpisodeFrame(fid, self._pose, self.task_frame.to_task(self._pose.position_world),
                             R_task_cam, K, image)
        self._frames[fid] = frame
        self.trace.append(tr.event("capture", frame_id=fid, tool_call_index=tool_call_index,
                                   pose_world=self._pose.to_dict(),
                                   pose_task=self.pose_task(),
                                   intrinsics=K.to_dict(), images_used=self.images_used))
        return frame

    def _tool_capture_image(self, *, index: int) -> ToolResult:
        if self.images_left <= 0:
            return ToolResult("capture_image", False, error=(
                f"capture_image: the image budget of {self.image_budget} images (initial image "
                f"included) is used up; you can still triangulate on frames 0-{self.images_used - 1}, "
                f"submit and finish"))
        frame = self._capture(tool_call_index=index)
        return ToolResult("capture_image", True, {
            "frame_id": frame.frame_id, "pose": self.pose_task(frame.pose),
            "intrinsics": frame.intrinsics.to_dict(), "images_used": self.images_used,
            "images_left": self.images_left}, frame_id=frame.frame_id)

    def _tool_triangulate_observations(self, *, index: int, observations) -> ToolResult:
        from spatialscout_gym.core.triangulation import triangulate_marks
        marks = [{"frame_id": int(m["frame_id"]), "u": float(m["u"]), "v": float(m["v"])}
                 for m in observations]
        geometry = {fid: f.geometry for fid, f in self._frames.items()}
        res = triangulate_marks(marks, geometry, float(self.public.radius_m))
        out = to_jsonable(res.to_dict())
        if not res.ok:
            return ToolResult("triangulate_observations", False, out,
                              error=f"triangulate_observations: {res.reason}")
        return ToolResult("triangulate_observations", True, out)

    def _map_json(self) -> dict:
        return {k: [round(float(x), 6) for x in self._accepted[k]] for k in self._ids if k in self._accepted}

    def _tool_submit_positions(self, *, index: int, positions) -> ToolResult:
        bound = float(self.public.radius_m) + SUBMIT_MARGIN_M
        refused: dict[str, str] = {}
        accepted: dict[str, np.ndarray] = {}
        for key, value in positions.items():
            k = key if isinstance(key, str) else safe_repr(key)
            if k not in self._id_set:
                refused[k] = f"unknown id {k!r}; ids are listed by list_entities"
                continue
            vals = value.tolist() if isinstance(value, np.ndarray) else value
            ok = isinstance(vals, (list, tuple)) and len(vals) == 3 and all(map(is_finite_number, vals))
            if not ok:
                refused[k] = f"position must be three finite numbers [x, y, z] (task frame, m), got {safe_repr(to_jsonable(value))}"
                continue
            p = np.array([float(x) for x in vals])
            dist = exact.norm(p)
            if dist > bound + BOUND_TOLERANCE_M:
                refused[k] = (f"|p| = {dist:.3f} m exceeds the bound r + {SUBMIT_MARGIN_M:g} = "
                              f"{bound:.3f} m (task frame)")
                continue
            accepted[k] = p
        if positions and not accepted:
            return ToolResult("submit_positions", False,
                              {"accepted": [], "refused": refused, "accepted_map": self._map_json()},
                              error="submit_positions: every entry was refused: " +
                              "; ".join(f"{k}: {v}" for k, v in refused.items()))
        self._accepted.update(accepted)
        self.map_version += 1
        return ToolResult("submit_positions", True, {
            "accepted": sorted(accepted, key=self._ids.index), "refused": refused,
            "accepted_map": self._map_json(), "submitted_count": len(self._accepted),
            "inventory_count": len(self._ids)})

    def _tool_finish_mapping(self, *, index: int) -> ToolResult:
        res = ToolResult("finish_mapping", True, {"accepted_map": self._map_json(),
                                                  "submitted_count": len(self._accepted)})
        return res  # call() ends the episode after recording this call

    # ---- bookkeeping -----------------------------------------------------------------------
    def _snapshot(self, index: int) -> None:
        self.trace.append(tr.event("map", tool_call_index=index, images_used=self.images_used,
                                   accepted_map=self._map_json()))

    def _end(self, reason: str) -> None:
        """End the episode (idempotent). Wrappers call it for reasons like ``"no_tool_call"``."""
        if self.done:
            return
        self.done = True
        self.end_reason = reason
        self.trace.append(tr.event("end", reason=reason, tool_calls=self.tool_calls,
                                   images_used=self.images_used))

    def end(self, reason: str) -> None:
        """End the episode from outside (e.g. ``"no_tool_call"``, ``"truncated"``)."""
        self._end(reason)


assert all(hasattr(Episode, f"_tool_{t}") for t in TOOL_NAMES)
