"""The small interface the episode needs from a renderer (docs/architecture.md: the episode layer is
renderer-agnostic, so it is tested without Vulkan). :class:`spatialscout_gym.render.SapienRenderer`
implements it; tests may pass any object with these methods.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import numpy as np

from spatialscout_gym.core.camera import Intrinsics
from spatialscout_gym.core.frames import CameraPose
from spatialscout_gym.core.spec import SceneSpec


@dataclass
class PrivilegedFrame:
    """Privileged buffers for oracle baselines and tests only; never shown to a model.

    Attributes
    ----------
    depth_m : ndarray, shape (H, W), float32
        Distance along the optical axis (forward), metres; 0 where no geometry was hit.
    segmentation : ndarray, shape (H, W), int32
        Index into ``spec.private.objects`` of the object seen at each pixel; -1 for none.
    position_world : ndarray, shape (H, W, 3), float32
        World position of the surface seen at each pixel, metres; NaN where nothing was hit.
    """

    depth_m: np.ndarray
    segmentation: np.ndarray
    position_world: np.ndarray


@runtime_checkable
class FrameSource(Protocol):
    """What an episode captures with: the render grid ``intrinsics`` (docs/protocol.md section 3)
    and the two captures of the current scene. A :class:`Renderer` is one; so is a session's view
    of a shared renderer, which switches it to the session's scene first."""

    @property
    def intrinsics(self) -> Intrinsics: ...

    def capture_rgb(self, pose: CameraPose) -> np.ndarray:
        """RGB image at ``pose``, shape (H, W, 3), uint8."""
        ...

    def capture_privileged(self, pose: CameraPose) -> PrivilegedFrame:
        """Depth, instance segmentation and surface positions at ``pose``."""
        ...


@runtime_checkable
class Renderer(FrameSource, Protocol):
    """Renders one scene at a time (a :class:`FrameSource`). ``spec`` is the scene it renders now
    and ``set_scene`` switches it (a warm renderer serves many episodes)."""

    @property
    def spec(self) -> SceneSpec: ...

    def set_scene(self, spec: SceneSpec) -> None:
        """Render ``spec`` from now on (same grid)."""
        ...

    def close(self) -> None: ...


class BlankRenderer:
    """A :class:`Renderer` that draws black frames of the grid's size and has no privileged frames:
    the one stand-in renderer, for re-executing recorded tool calls (``verify``), whose results never
    depend on pixels."""

    texture_library = False

    def __init__(self, spec: SceneSpec, intrinsics: Intrinsics) -> None:
        self._spec, self._intrinsics = spec, intrinsics

    @property
    def intrinsics(self) -> Intrinsics:
        return self._intrinsics

    @property
    def spec(self) -> SceneSpec:
        return self._spec

    def set_scene(self, spec: SceneSpec) -> None:
        self._spec = spec

    def capture_rgb(self, pose: CameraPose) -> np.ndarray:
        return np.zeros((self._intrinsics.height, self._intrinsics.width, 3), np.uint8)

    def capture_privileged(self, pose: CameraPose) -> PrivilegedFrame:
        raise RuntimeError("a stand-in renderer draws no privileged frames")

    def close(self) -> None:
        pass
