"""``EpisodeSession``: the one place that builds scene + renderer + ground truth + episode.

After ManiSkill3's split of ``_load_scene`` (heavy, rare) from ``_initialize_episode`` (cheap, every
reset):

* :meth:`EpisodeSession.load` does the heavy work once per scene: build the renderer or switch it
  to the new scene (geometry upload, textures from the bounded library of
  :mod:`spatialscout_gym.render.textures`), and the scorer's :class:`GroundTruth`.
* :meth:`EpisodeSession.new_episode` does the cheap work per episode: a fresh
  :class:`~spatialscout_gym.episode.Episode` (camera at the start pose, budgets, empty accepted map,
  frame 0 captured). With ``start_yaw_deg`` the episode starts from the scene's initial camera
  turned by that yaw (same position, so the start stays inside the scene; the task frame follows
  the new start, docs/protocol.md section 2): the training envs use it to vary episodes between
  two scene loads.

Renderer ownership, one rule: a session closes a renderer it built itself and never one it was
given. ``shared=True`` borrows a process-wide renderer from a reference-counted pool; the last
session to close releases it. The pool is keyed by everything that changes the pixels: the
resolution and the renderer factory (a :class:`SapienFactory` compares by its render device and
shader), so a session that asks for a CUDA renderer never gets another session's default-device
one. A shared renderer is switched back to this session's scene before every capture, and before a
privileged frame captured earlier renders its buffers (one SAPIEN context for many scenes; not
thread-safe).

Used by :class:`~spatialscout_gym.envs.spatialscout_env.SpatialScoutEnv`, the NBV env, the episode
runner, the MCP server and the evaluate workers.
"""

from __future__ import annotations

import dataclasses
import os
from typing import TYPE_CHECKING, Any, Callable, Hashable

import numpy as np

from spatialscout_gym.core.camera import Intrinsics
from spatialscout_gym.core.frames import CameraPose
from spatialscout_gym.core.limits import MAX_RESOLUTION_PX, check_episode_settings
from spatialscout_gym.core.renderer_api import FrameSource, PrivilegedFrame, Renderer
from spatialscout_gym.core.spec import SceneSpec
from spatialscout_gym.envs.run_dir import write_run
from spatialscout_gym.episode.episode import Episode

if TYPE_CHECKING:
    from spatialscout_gym.core.scoring import GroundTruth

__all__ = ["EpisodeSession", "RendererFactory", "SapienFactory", "sapien_factory", "shared_renderer_count",
           "shared_renderer", "MAX_RESOLUTION"]

RendererFactory = Callable[[SceneSpec, int, int], Renderer]
"""``factory(spec, width, height) -> Renderer`` (default: ``SapienRenderer``)."""

MAX_RESOLUTION = MAX_RESOLUTION_PX
"""Largest square render grid a session accepts, pixels (:mod:`spatialscout_gym.core.limits`)."""

_SHARED: dict[tuple[int, Hashable], list] = {}
"""(resolution, renderer factory) -> [renderer, number of sessions holding it]."""


def shared_renderer_count() -> int:
    """How many process-wide shared renderers are alive (0 once every holder closed)."""
    return len(_SHARED)


def shared_renderer(resolution: int, factory: RendererFactory | None = None) -> Renderer | None:
    """The pooled renderer of ``(resolution, factory)`` (default factory: SAPIEN's default device),
    or None when no session holds one."""
    entry = _SHARED.get((int(resolution), factory or _default_factory))
    return None if entry is None else entry[0]


@dataclasses.dataclass(frozen=True)
class SapienFactory:
    """Builds ``SapienRenderer(spec, width, height, shader=shader, device=device)``.

    Two factories are equal when their renderers draw the same pixels (same SAPIEN render device,
    e.g. ``"cuda"`` or None for SAPIEN's default Vulkan device, and same shader), which is what
    the shared-renderer pool keys on."""

    device: str | None = None
    shader: str = "minimal"

    def __call__(self, spec: SceneSpec, width: int, height: int) -> Any:
        from spatialscout_gym.render.sapien_renderer import SapienRenderer  # heavy
        return SapienRenderer(spec, width, height, shader=self.shader, device=self.device)


_default_factory: RendererFactory = SapienFactory()


def sapien_factory(device: str | None = None, shader: str = "minimal") -> SapienFactory:
    """A factory of ``SapienRenderer`` s on SAPIEN render device ``device`` (e.g. ``"cuda"``;
    None: SAPIEN's default Vulkan device) with camera shader ``shader``."""
    return SapienFactory(None if device is None else str(device), str(shader))


def _uses_texture_library(spec: SceneSpec) -> bool:
    """Catalog v1.0 scenes render with their exact per-seed textures (as released); every other
    scene with the bounded texture library."""
    from spatialscout_gym.scenes.catalog import uses_texture_library
    return uses_texture_library(spec)


class _SceneBound:
    """A shared renderer seen through one session: switches to that session's scene first."""

    def __init__(self, renderer: Renderer, spec: SceneSpec) -> None:
        self.renderer, self.spec = renderer, spec

    @property
    def intrinsics(self) -> Intrinsics:
        return self.renderer.intrinsics

    def _activate(self) -> None:
        if self.renderer.spec is not self.spec:
            if hasattr(self.renderer, "texture_library"):
                self.renderer.texture_library = _uses_texture_library(self.spec)
            self.renderer.set_scene(self.spec)

    def capture_rgb(self, pose: CameraPose) -> np.ndarray:
        self._activate()
        return self.renderer.capture_rgb(pose)

    def capture_privileged(self, pose: CameraPose) -> PrivilegedFrame:
        self._activate()
        frame = self.renderer.capture_privileged(pose)
        if hasattr(frame, "restore_scene"):   # a lazy frame read late renders in this scene
            frame.restore_scene = self._activate
        return frame


class EpisodeSession:
    """Scene, renderer, ground truth and the current episode.

    Parameters
    ----------
    resolution : int
        Square render grid, pixels (8 to :data:`MAX_RESOLUTION`).
    image_budget : int
        V, images per episode including the initial one (docs/protocol.md section 5).
    tool_call_budget : int or None
        Tool calls per episode; None: unlimited (docs/protocol.md section 5).
    renderer : Renderer, optional
        Use this renderer (switched with ``set_scene``; never closed by the session).
    shared : bool
        Borrow the process-wide renderer of this resolution and factory (see the module
        docstring).
    renderer_factory : callable, optional
        Builds the renderer (default: :class:`SapienFactory` on SAPIEN's default device). With
        ``shared`` it is part of the pool key, so it must be hashable; equal factories share.

    Examples
    --------
    >>> session = EpisodeSession(resolution=128, image_budget=20)       # doctest: +SKIP
    >>> session.load(scene_by_name("Kitchen_01"))                       # heavy, once
    >>> episode = session.new_episode()                                 # cheap, per reset
    >>> session.metrics()["all"]["mean_iou"]
    0.0
    """

    def __init__(self, *, resolution: int = 512, image_budget: int = 100,
                 tool_call_budget: int | None = 100, renderer: Any = None, shared: bool = False,
                 renderer_factory: RendererFactory | None = None) -> None:
        check_episode_settings(resolution=resolution, image_budget=image_budget)  # one set of bounds
        if tool_call_budget is not None and int(tool_call_budget) < 1:
            raise ValueError(f"tool_call_budget must be >= 1 or None (unlimited), got {tool_call_budget}")
        if renderer is not None and shared:
            raise ValueError("pass either renderer= or shared=True, not both")
        self.resolution = int(resolution)
        self.image_budget = int(image_budget)
        self.tool_call_budget = None if tool_call_budget is None else int(tool_call_budget)
        self._factory = renderer_factory or _default_factory
        self._pool_key = (self.resolution, self._factory)
        """The shared pool's key: everything that changes the pixels (grid, device, shader)."""
        if shared:
            try:
                hash(self._factory)
            except TypeError:
                raise ValueError("shared=True keys the renderer pool by the renderer_factory, which must "
                                 "be hashable (e.g. sapien_factory(device=...))") from None
        self._renderer = renderer
        self._owns = False
        self._shared = bool(shared)
        self._holds_shared = False
        self.spec: SceneSpec | None = None
        """The loaded scene."""
        self.episode_spec: SceneSpec | None = None
        """The current episode's scene: :attr:`spec`, or its turned-start variant."""
        self.ground_truth: GroundTruth | None = None
        self._episode_gt: GroundTruth | None = None
        self._score_cache: tuple[Any, dict] = (None, {})
        """(ground truth, score_scene's group cache for it); emptied per episode."""
        self._closed = False
        self.episode: Episode | None = None
        self.loads = 0
        """How many times :meth:`load` built or switched a scene (the heavy path)."""

    # ---- heavy: the scene ------------------------------------------------------------------
    def load(self, spec: SceneSpec) -> None:
        """Make ``spec`` the current scene (heavy: renderer build or ``set_scene``); ends the
        current episode's use (call :meth:`new_episode` next)."""
        from spatialscout_gym.core.scoring import GroundTruth  # scipy
        if self._closed:
            raise RuntimeError("this EpisodeSession is closed; create a new one")
        if self._renderer is None and self._shared:
            entry = _SHARED.get(self._pool_key)
            if entry is None:
                entry = _SHARED[self._pool_key] = [self._factory(spec, self.resolution, self.resolution), 0]
            entry[1] += 1
            self._renderer, self._holds_shared = entry[0], True
        if self._renderer is None:
            self._renderer = self._factory(spec, self.resolution, self.resolution)
            self._owns = True
        elif getattr(self._renderer, "spec", None) is not spec:
            self._renderer.set_scene(spec)
        want = _uses_texture_library(spec)
        if getattr(self._renderer, "texture_library", want) != want:  # catalog v1.0: exact textures
            self._renderer.texture_library = want
            self._renderer.set_scene(spec)
        K = self._renderer.intrinsics
        if (K.width, K.height) != (self.resolution, self.resolution):
            raise ValueError(f"the renderer's grid is {K.width} x {K.height}; this session was made "
                             f"with resolution={self.resolution}; pass a renderer of that size")
        self.spec = spec
        self.ground_truth = self._episode_gt = GroundTruth.from_spec(spec)
        self.episode_spec, self.episode = None, None
        self.loads += 1

    # ---- cheap: the episode ----------------------------------------------------------------
    def new_episode(self, start_yaw_deg: float | None = None) -> Episode:
        """A fresh episode of the current scene (frame 0 captured).

        Parameters
        ----------
        start_yaw_deg : float, optional
            Turn the scene's initial camera by this yaw (degrees, left +) before the episode
            starts. The task frame, the target table and the ground truth follow the turned camera
            (:attr:`episode_spec`); the search radius is unchanged. None or 0: the scene's own start
            (always the case for evaluation).
        """
        if self.spec is None:
            raise RuntimeError("load(spec) a scene before new_episode()")
        spec = self.spec
        if start_yaw_deg is not None and float(start_yaw_deg) != 0.0:
            cam = spec.public.initial_camera
            yaw = (cam.yaw_deg + float(start_yaw_deg) + 180.0) % 360.0 - 180.0
            turned = CameraPose(cam.position_world, yaw, cam.pitch_deg)
            spec = SceneSpec(dataclasses.replace(spec.public, initial_camera=turned), spec.private)
        if spec is not self.episode_spec:
            # the scene's boxes seen from the turned start (no geometry pass per episode)
            assert self.ground_truth is not None   # load() set it
            self._episode_gt = self.ground_truth if spec is self.spec else \
                self.ground_truth.reframed(spec.task_frame)
        self.episode_spec = spec
        self._score_cache = (None, {})
        self.episode = Episode(spec.public, self.renderer, image_budget=self.image_budget,
                               tool_call_budget=self.tool_call_budget)
        return self.episode

    # ---- views --------------------------------------------------------------------------------
    @property
    def renderer(self) -> FrameSource:
        """The renderer to capture with (for a shared one, a view that switches scenes first)."""
        if self._holds_shared and self.spec is not None:
            return _SceneBound(self._renderer, self.spec)
        return self._renderer

    def metrics(self) -> dict:
        """The scorer's metrics dict of the current accepted map (docs/protocol.md section 6;
        evaluator-only data)."""
        from spatialscout_gym.core.scoring import score_scene
        if self.episode is None:
            raise RuntimeError("no episode: call new_episode() first")
        assert self._episode_gt is not None   # new_episode() set it with the episode
        if self._score_cache[0] is not self._episode_gt:   # group results hold for one ground truth
            self._score_cache = (self._episode_gt, {})
        return score_scene(self._episode_gt, self.episode.accepted_map, group_cache=self._score_cache[1]).metrics()

    def write_run(self, out_dir: str | os.PathLike, agent: Any, *, seed: int = 0,
                  failure: BaseException | None = None, attempt: int | None = None,
                  keep_attempts: bool = False, node: dict | None = None) -> dict:
        """Score the current episode and write its run directory (docs/protocol.md section 7);
        returns ``result.json``'s contents. ``attempt``, ``keep_attempts`` and ``node``: see
        :func:`spatialscout_gym.eval.running.runner.run_episode`."""
        if self.episode is None:
            raise RuntimeError("no episode: call new_episode() first")
        assert self.episode_spec is not None   # set with the episode
        return write_run(out_dir, self.episode_spec, self.episode, agent, seed=seed, resolution=self.resolution,
                         image_budget=self.image_budget, tool_call_budget=self.tool_call_budget,
                         failure=failure, attempt=attempt, keep_attempts=keep_attempts, node=node)

    def close(self) -> None:
        """Release the renderer by the ownership rule; the session cannot load afterwards."""
        if self._closed:
            return
        self._closed = True
        if self._holds_shared:
            entry = _SHARED.get(self._pool_key)
            if entry is not None and entry[0] is self._renderer:
                entry[1] -= 1
                if entry[1] <= 0:
                    del _SHARED[self._pool_key]
                    entry[0].close()
        elif self._owns and self._renderer is not None:
            self._renderer.close()
        self._renderer = None
        self.episode = None

    def __enter__(self) -> "EpisodeSession":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
