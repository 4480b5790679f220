"""``CameraGroup``: render the cameras of many :class:`SapienRenderer` s in one call (docs/architecture.md
"Sessions and fast NBV").

:meth:`CameraGroup.render` takes one camera pose per renderer (None: skip it) and leaves each
renderer holding its picture at that pose (:meth:`SapienRenderer.prepare`), so that renderer's next
``capture_rgb`` / ``capture_privileged`` at exactly that pose reads it instead of rendering again.

* Sequential (every renderer not on a CUDA device, e.g. lavapipe): the renderers render one after
  another, each on its own camera: the same pictures as unbatched captures, bit for bit.
* CUDA (every renderer built with ``device="cuda..."``): SAPIEN's batched cameras, the recipe
  verified on an NVIDIA H200 with SAPIEN 3.0.3 (docs/architecture.md "Sessions and fast NBV"): one
  ``sapien.render.RenderSystemGroup`` over the renderers' render systems, one camera group over
  their cameras; per call: pose each camera, ``update_render()`` each scene, one
  ``take_picture()``, then ``get_picture_cuda(target)`` -> (N, H, W, C) on the GPU, copied to the
  host once per target and handed out per renderer. The group is rebuilt lazily when any member's
  scene changed (``set_scene``). **This branch is untested on a GPU in this repository** (it was
  written on a machine without one, following the probe's recipe); the probe found the batched
  "Color" equal to the sequential one. The depth target (``"GbufferDepth"``) is requested too; if
  SAPIEN refuses it in a camera group, the group carries Color + PositionSegmentation only and a
  privileged frame's depth is rendered on the renderer's own camera when first read.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from spatialscout_gym.core.frames import CameraPose
from spatialscout_gym.render.device import RenderDeviceError

__all__ = ["CameraGroup", "BATCH_TARGETS"]

BATCH_TARGETS: tuple[str, ...] = ("Color", "PositionSegmentation", "GbufferDepth")
"""SAPIEN render targets a CUDA camera group carries: RGB and what a privileged frame reads
("minimal" shader)."""


def _is_cuda(device: str | None) -> bool:
    return device is not None and str(device).startswith("cuda")


class CameraGroup:
    """Render the cameras of ``renderers`` together.

    Parameters
    ----------
    renderers : sequence of SapienRenderer
        All of the same width x height and shader; on CUDA all on the same CUDA device.
    mode : {"auto", "cuda", "sequential"}
        "cuda": one SAPIEN camera-group call (needs every renderer on a CUDA device; raises
        :class:`RenderDeviceError` otherwise). "sequential": one renderer after another. "auto":
        "cuda" where every renderer is on a CUDA device, else "sequential".

    Attributes
    ----------
    calls : int
        :meth:`render` calls that rendered anything.
    builds : int
        Times the CUDA camera group was (re)built.
    """

    def __init__(self, renderers: Sequence[Any], mode: str = "auto") -> None:
        self.renderers = list(renderers)
        if not self.renderers:
            raise ValueError("CameraGroup needs at least one renderer")
        on_cuda = all(_is_cuda(getattr(r, "device", None)) for r in self.renderers)
        if mode not in ("auto", "cuda", "sequential"):
            raise ValueError(f"mode must be 'auto', 'cuda' or 'sequential', got {mode!r}")
        batched = on_cuda if mode == "auto" else mode == "cuda"
        if batched and not on_cuda:
            devices = sorted({str(getattr(r, "device", None)) for r in self.renderers})
            raise RenderDeviceError(f"batched camera-group rendering needs every renderer on a CUDA device "
                                    f"(SapienRenderer(device='cuda'), NBVVectorEnv(render_device='cuda')); "
                                    f"got render devices {devices}. Use mode='sequential' (or 'auto') on a "
                                    f"machine without a CUDA GPU.")
        shapes = {(r.width, r.height, getattr(r, "shader", None)) for r in self.renderers}
        if batched and len(shapes) != 1:
            raise ValueError(f"a camera group needs renderers of one size and shader; got {sorted(shapes)}")
        self.mode = "cuda" if batched else "sequential"
        self.calls = 0
        self.builds = 0
        self._group: Any = None
        self._cameras: Any = None
        self._targets: tuple[str, ...] = ()
        self._versions: list[int] | None = None

    def render(self, poses: Sequence[CameraPose | None]) -> None:
        """Render renderer ``i`` at ``poses[i]`` (None: leave it alone) and hand it the picture."""
        if len(poses) != len(self.renderers):
            raise ValueError(f"render needs one pose (or None) per renderer: {len(self.renderers)}, "
                             f"got {len(poses)}")
        todo = [(r, p) for r, p in zip(self.renderers, poses) if p is not None]
        if not todo:
            return
        self.calls += 1
        if self.mode == "sequential":
            for r, p in todo:
                r.prepare(p)
            return
        self._render_cuda(poses)

    # ---- CUDA: SAPIEN's batched cameras (untested on a GPU in this repository) ----------------------
    def _build(self) -> None:
        import sapien  # heavy
        self._group = self._cameras = None  # release the old group's hold on the cameras first
        systems = [r.render_system for r in self.renderers]
        cameras = [r.camera for r in self.renderers]
        self._group = sapien.render.RenderSystemGroup(systems)
        try:
            self._cameras = self._group.create_camera_group(cameras, list(BATCH_TARGETS))
            self._targets = BATCH_TARGETS
        except RuntimeError:  # a target SAPIEN cannot batch: carry the two the probe verified
            self._targets = ("Color", "PositionSegmentation")
            self._cameras = self._group.create_camera_group(cameras, list(self._targets))
        self._versions = [r.scene_version for r in self.renderers]
        self.builds += 1

    def _render_cuda(self, poses: Sequence[CameraPose | None]) -> None:
        if self._group is None or self._versions != [r.scene_version for r in self.renderers]:
            self._build()
        for r, p in zip(self.renderers, poses):
            if p is not None:
                r.set_camera_pose(p)   # pose + update_render; an idle member keeps its last pose
        self._cameras.take_picture()
        host: dict[str, np.ndarray] = {}
        for name in self._targets:
            handle = self._cameras.get_picture_cuda(name)
            if hasattr(handle, "torch"):
                tensor = handle.torch()
            else:
                import torch  # optional
                tensor = torch.as_tensor(handle, device="cuda")
            host[name] = tensor.cpu().numpy()   # one copy per target for the whole group
        for i, (r, p) in enumerate(zip(self.renderers, poses)):
            if p is not None:
                r.prepare(p, {name: host[name][i] for name in self._targets})

    def close(self) -> None:
        """Drop the CUDA camera group (the renderers stay usable)."""
        self._group = self._cameras = None
        self._versions = None
