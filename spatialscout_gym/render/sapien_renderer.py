"""Build a SAPIEN 3 scene from a :class:`~spatialscout_gym.core.spec.SceneSpec` and capture images
(docs/architecture.md "render" layer).

* One SAPIEN scene with a render system only (no physics), one camera. Heavy work (geometry,
  textures) happens in :meth:`SapienRenderer.set_scene`; a capture only poses the camera.
* Objects with role ``"target"`` or ``"static"`` render; ``"hidden"`` candidates never do
  (docs/protocol.md section 8). Each rendered object is one SAPIEN entity whose per-scene id maps to its
  index in ``spec.private.objects`` (the segmentation of :class:`PrivilegedFrame`).
* Camera: :class:`CameraPose` forward/left/up are SAPIEN's camera-link x/y/z, so
  ``CameraPose.quat_wxyz()`` is the SAPIEN pose quaternion. Intrinsics follow docs/protocol.md section 3
  (pixel centres at integers, ``cx = (W - 1) / 2``); SAPIEN's principal point is measured from the
  image's top-left *corner*, so it is set to ``cx + 0.5``.
* The "minimal" shader gives RGB plus the depth buffer and a per-pixel entity id
  ("PositionSegmentation"), so privileged captures cost one extra read, not a second camera.
  Depth comes from the depth buffer (linearised, float64) for sub-millimetre precision nearby.
  SAPIEN's "minimal" pack is drawn without its BRDF lookup table (``render/shaders.py``): the
  scenes set no environment map, so the table changes no pixel, and building it is 10 s of every
  rendering process's first picture on software Vulkan.
* SAPIEN's Vulkan context is held for the process once a renderer was built (one empty render system
  per device), so later renderers skip its warm-up; it is let go before a fork while no renderer is
  open, since a forked child of a process holding it hangs in the driver. A process forked while
  a renderer was open refuses to build one (:class:`ForkedContextError`, naming ``context="spawn"``)
  instead of hanging.
"""

from __future__ import annotations

import os
import weakref
from typing import Any, Callable

import numpy as np

from spatialscout_gym.core.camera import Intrinsics, pixel_to_ray_camera
from spatialscout_gym.core.frames import CameraPose
from spatialscout_gym.core.renderer_api import PrivilegedFrame
from spatialscout_gym.core.spec import Material, Part, SceneSpec
from spatialscout_gym.render.device import RenderDeviceError, fix_message, is_no_device_error
from spatialscout_gym.render.meshes import box_mesh, cylinder_mesh, flat_mesh
from spatialscout_gym.render.shaders import camera_shader_dir
from spatialscout_gym.render.textures import (library_texture, texture_image, texture_key, texture_mode,
                                              tile_size_m)

__all__ = ["SapienRenderer", "StaleFrameError", "ForkedContextError", "RENDERED_ROLES", "NEAR_M", "FAR_M"]

RENDERED_ROLES = ("target", "static")
NEAR_M = 0.01
FAR_M = 100.0
SHADERS = ("minimal", "default")

_CONTEXT_ANCHORS: dict[str | None, Any] = {}
"""Render device -> an empty SAPIEN render system held while the process has no reason to let it go.
SAPIEN tears its Vulkan context down when the last render system goes and rebuilds it (pipelines,
default lighting maps) for the next one, a cost the next renderer's first picture pays on software
Vulkan (docs/speed.md). Holding one empty system keeps the context, so a renderer built after
another was closed starts at once; the pictures are the same bits."""

_OPEN: "weakref.WeakSet[SapienRenderer]" = weakref.WeakSet()
"""Renderers built in this process (open while their scene is not None)."""


def _release_idle_context() -> None:
    """Before a fork: let the held context go when no renderer is open. A child forked from a
    process that holds a Vulkan context hangs in the driver (software Vulkan's threads do not
    survive a fork), so a fork with no renderer open stays as safe as it was before the context
    was held; the next renderer then pays the warm-up once more."""
    if not any(r._scene is not None for r in list(_OPEN)):
        _CONTEXT_ANCHORS.clear()


class ForkedContextError(SystemExit, RuntimeError):
    """A renderer was asked for in a process forked while its parent held a Vulkan context.

    A ``RuntimeError`` to ``except Exception``; also a ``SystemExit``, so a forked worker that dies
    of it (Gymnasium's ``AsyncVectorEnv`` builds its env outside any ``try``) prints its one line,
    not a traceback, and exits with status 1."""


_HELD_AT_FORK = False
"""Set in the parent just before a fork: a renderer was open, so the context stayed held."""

_INHERITED_CONTEXT = False
"""True in a process forked while its parent held the context: SAPIEN would hang here."""


def _before_fork() -> None:
    global _HELD_AT_FORK
    _release_idle_context()
    _HELD_AT_FORK = bool(_CONTEXT_ANCHORS)


def _after_fork_in_child() -> None:
    global _INHERITED_CONTEXT
    _INHERITED_CONTEXT = _INHERITED_CONTEXT or _HELD_AT_FORK


if hasattr(os, "register_at_fork"):
    os.register_at_fork(before=_before_fork, after_in_child=_after_fork_in_child)


def _import_sapien():
    try:
        import sapien  # heavy; imported where used
    except ImportError as exc:  # pragma: no cover - depends on the install
        from spatialscout_gym.core.errors import install_command
        raise ImportError(f"rendering needs SAPIEN: {install_command('render')} (sapien==3.0.3)") from exc
    return sapien


class SapienRenderer:
    """Renders one :class:`SceneSpec` with SAPIEN; implements ``core.renderer_api.Renderer``.

    Parameters
    ----------
    spec : SceneSpec
        The scene; its public intrinsics are rescaled to ``width x height``.
    width, height : int
        Render grid in pixels (docs/protocol.md: 512 x 512).
    shader : {"minimal", "default"}
        SAPIEN camera shader for every capture. "minimal" (about 10 ms per 512 x 512 frame on
        lavapipe) is the default; "default" adds specular lighting at about 60 ms.
    texture_library : bool
        Draw textures from the bounded library (default; catalog v2.0 and training scenes);
        False draws each texture's exact per-seed picture (catalog v1.0's look).
    device : str, optional
        SAPIEN render device, e.g. ``"cuda"`` or ``"cuda:1"`` (``sapien.Device(device)``); None
        (default): SAPIEN's default Vulkan device (lavapipe on CPU machines). Batched rendering
        (:class:`~spatialscout_gym.render.camera_group.CameraGroup`) needs a CUDA device.

    Raises
    ------
    RenderDeviceError
        SAPIEN found no Vulkan device; the message names the commands that install one.
    """

    def __init__(self, spec: SceneSpec, width: int = 512, height: int = 512, shader: str = "minimal",
                 texture_library: bool = True, device: str | None = None):
        if shader not in SHADERS:
            raise ValueError(f"shader must be one of {SHADERS}, got {shader!r}")
        if width <= 0 or height <= 0:
            raise ValueError(f"image size must be positive, got {width} x {height}")
        if _INHERITED_CONTEXT:   # fail at once: SAPIEN would hang silently in this process
            raise ForkedContextError(
                "this process was forked while its parent had a SAPIEN renderer open (an NBV or "
                "SpatialScout env), and a forked copy of a Vulkan context hangs: start workers with "
                "context=\"spawn\" (gymnasium.vector.AsyncVectorEnv(..., context=\"spawn\"), SB3's "
                "SubprocVecEnv(..., start_method=\"spawn\")), or close the parent's env before forking")
        sapien = _import_sapien()
        self._sapien = sapien
        self.width, self.height, self.shader = int(width), int(height), shader
        self.device = None if device is None else str(device)
        try:
            self._scene = sapien.Scene([_render_system(sapien, self.device)])
            _OPEN.add(self)
            if self.device not in _CONTEXT_ANCHORS:
                _CONTEXT_ANCHORS[self.device] = _render_system(sapien, self.device)
        except RuntimeError as exc:
            if is_no_device_error(str(exc)):
                raise RenderDeviceError(fix_message(str(exc))) from exc
            raise
        self.shader_dir = camera_shader_dir(shader, os.path.join(os.path.dirname(sapien.__file__), "vulkan_shader"))
        """The folder of GLSL files SAPIEN's camera draws with (``render/shaders.py``)."""
        self._camera_entity = sapien.Entity()
        self._camera = sapien.render.RenderCameraComponent(self.width, self.height, self.shader_dir)
        self._camera_entity.add_component(self._camera)
        self._camera_entity.set_name("spatialscout_camera")
        self._scene.add_entity(self._camera_entity)
        self._camera.near, self._camera.far = NEAR_M, FAR_M
        self.texture_library = bool(texture_library)
        self._textures: dict[str, Any] = {}
        self._old_textures: dict[str, Any] = {}
        self._taken: tuple | None = None
        self._taken_pose: CameraPose | None = None
        self._prepared: dict[str, np.ndarray] | None = None
        self.render_count = 0
        """Pictures this renderer's own camera took (a prepared picture is not counted)."""
        self.scene_version = 0
        """Incremented by every :meth:`set_scene` (a camera group rebuilds when it changed; a lazy
        privileged frame re-checks its scene)."""
        self._entities: list[Any] = []
        self._lights: list[Any] = []
        self._id_to_index_clip = np.full(1, -1, dtype=np.int32)
        self._spec: SceneSpec | None = None
        self._intrinsics: Intrinsics | None = None
        self.set_scene(spec)

    # ---- Renderer protocol ---------------------------------------------------------------
    @property
    def intrinsics(self) -> Intrinsics:
        """The spec's intrinsics on this renderer's ``width x height`` grid (docs/protocol.md section 3)."""
        assert self._intrinsics is not None
        return self._intrinsics

    @property
    def spec(self) -> SceneSpec:
        assert self._spec is not None
        return self._spec

    def capture_rgb(self, pose: CameraPose) -> np.ndarray:
        """RGB image at ``pose``, shape (H, W, 3), uint8."""
        self._take(pose)
        rgba = self._picture("Color")
        return np.rint(np.clip(rgba[..., :3], 0.0, 1.0) * 255.0).astype(np.uint8)

    def capture_privileged(self, pose: CameraPose) -> PrivilegedFrame:
        """Depth (metres, along the optical axis), instance segmentation (index into
        ``spec.private.objects``, -1 for none) and world positions (NaN where nothing was hit).

        Right after :meth:`capture_rgb` at the same pose it reads the same picture (no second
        render). The buffers are read when first used (an oracle mapper that needs only the
        segmentation never pays for depth and positions); a frame read after the camera moved on
        re-renders its own pose first, in its own scene: the frame remembers the scene it was
        captured in (:attr:`scene_version` and the spec), re-renders when the renderer was set to
        that same spec again, and raises :class:`StaleFrameError` when the renderer now shows
        another scene (a shared renderer's session view switches back to its scene first)."""
        self._take(pose)
        return _LazyPrivilegedFrame(self, pose, self._taken)

    def _read_segmentation(self) -> np.ndarray:
        if self.shader == "minimal":
            entity_id = self._picture("PositionSegmentation")[..., 3]
        else:
            entity_id = self._picture("Segmentation")[..., 1]
        # no rendered object has per-scene id 0 (the camera entity came first), so lut[0] == -1
        # marks background and the depth buffer is not needed to find it; the lut ends with one
        # more -1, which clipping maps every id past the scene's objects to
        return self._id_to_index_clip.take(entity_id, mode="clip")

    def _read_depth(self) -> np.ndarray:
        zbuf = self._picture("GbufferDepth").astype(np.float64) if self.shader == "minimal" \
            else self._picture("Position")[..., 3].astype(np.float64)
        hit = zbuf < 1.0
        # Vulkan depth in [0, 1]: d = f (z - n) / (z (f - n))  =>  z = n f / (f - d (f - n))
        return np.where(hit, NEAR_M * FAR_M / (FAR_M - zbuf * (FAR_M - NEAR_M)), 0.0)

    def _positions(self, pose: CameraPose, depth: np.ndarray, K: Intrinsics | None = None) -> np.ndarray:
        """World positions (metres) of ``depth`` seen at ``pose`` with ``K`` (default: the current
        scene's intrinsics)."""
        K = self.intrinsics if K is None else K
        v, u = np.mgrid[0:K.height, 0:K.width]
        rays = pixel_to_ray_camera(K, u, v)
        p_cam = rays / rays[..., :1] * depth[..., None]
        pos = p_cam @ pose.R_world_cam.T + pose.position_world
        pos[depth <= 0] = np.nan
        return pos.astype(np.float32)

    def close(self) -> None:
        """Release the SAPIEN scene; the renderer cannot capture afterwards."""
        if getattr(self, "_scene", None) is not None:
            for e in self._entities + self._lights:
                self._scene.remove_entity(e)
            self._entities, self._lights = [], []
            self._textures, self._old_textures = {}, {}
            self._scene = None

    def __enter__(self) -> "SapienRenderer":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # ---- scene building --------------------------------------------------------------------
    @property
    def render_system(self) -> Any:
        """The SAPIEN render system of this renderer's scene (a camera group batches several); None
        after :meth:`close`."""
        return None if self._scene is None else self._scene.render_system

    @property
    def camera(self) -> Any:
        """This renderer's SAPIEN ``RenderCameraComponent`` (a camera group takes its pictures)."""
        return self._camera

    def set_scene(self, spec: SceneSpec) -> None:
        """Replace the rendered scene by ``spec``, keeping the render system and camera. GPU
        textures the new scene shares with the old one are reused; the others are released, so
        memory stays flat over any number of scenes."""
        if self._scene is None:
            raise RuntimeError("this SapienRenderer is closed; create a new one")
        sapien = self._sapien
        for e in self._entities + self._lights:
            self._scene.remove_entity(e)
        self._entities, self._lights = [], []
        self._taken, self._taken_pose, self._prepared = None, None, None
        self.scene_version += 1
        self._old_textures, self._textures = self._textures, {}
        self._spec = spec
        K = spec.public.intrinsics.scaled(self.width, self.height)
        self._intrinsics = K
        self._camera.set_focal_lengths(K.fx, K.fy)
        self._camera.set_principal_point(K.cx + 0.5, K.cy + 0.5)

        pairs: list[tuple[int, int]] = []
        for index, obj in enumerate(spec.private.objects):
            if obj.role not in RENDERED_ROLES:
                continue
            body = sapien.render.RenderBodyComponent()
            for part in obj.parts:
                body.attach(self._shape(part))
            entity = sapien.Entity()
            entity.set_name(obj.id)
            entity.add_component(body)
            self._scene.add_entity(entity)
            self._entities.append(entity)
            pairs.append((entity.per_scene_id, index))
        if any(eid == 0 for eid, _ in pairs):  # background is id 0 (see _read_segmentation)
            raise RuntimeError("a rendered object got SAPIEN per-scene id 0; segmentation would confuse it "
                               "with the background")
        lut = np.full(max([p[0] for p in pairs], default=0) + 1, -1, dtype=np.int32)
        for eid, index in pairs:
            lut[eid] = index
        self._id_to_index_clip = np.append(lut, np.int32(-1))   # the clip index past the end: -1

        self._scene.set_ambient_light(list(map(float, spec.private.ambient_light)))
        for light in spec.private.lights:
            color = [float(c) for c in light.color]
            if light.kind == "point":
                assert light.position_world is not None   # SceneSpec checks each light's fields
                e = self._scene.add_point_light(list(map(float, light.position_world)), color, shadow=False)
            elif light.kind == "directional":
                assert light.direction_world is not None
                e = self._scene.add_directional_light(list(map(float, light.direction_world)), color,
                                                      shadow=False)
            else:
                raise ValueError(f"light kind {light.kind!r} is not 'point' or 'directional'")
            self._lights.append(e.entity)
        self._old_textures = {}  # textures the new scene does not use: released here

    @property
    def texture_count(self) -> int:
        """GPU textures held for the current scene."""
        return len(self._textures)

    def _material(self, material: Material):
        sapien = self._sapien
        m = sapien.render.RenderMaterial(base_color=[float(c) for c in material.base_color],
                                         roughness=float(material.roughness),
                                         metallic=float(material.metallic))
        if material.texture is not None:
            entry = library_texture(material.texture) if self.texture_library else material.texture
            key = texture_key(entry)
            tex = self._textures.get(key)
            if tex is None:
                tex = self._old_textures.get(key)
            if tex is None:
                img = np.ascontiguousarray(texture_image(material.texture, library=self.texture_library))
                tex = sapien.render.RenderTexture2D(img, "R8G8B8A8Unorm", srgb=True)
            self._textures[key] = tex
            m.base_color_texture = tex
        return m

    def _file_mesh_shape(self, part: Part):
        """A mesh part read from ``part.path`` (dataset assets; added by the ManiSkill
        adapter). The file takes precedence over inline vertices, which such parts carry only as a
        box proxy for their AABB (scenes/maniskill.py). ``material.texture == {"kind": "file"}``
        keeps the file's own materials and textures; any other material replaces them."""
        sapien = self._sapien
        scale = np.ones(3) if part.scale is None else np.asarray(part.scale, dtype=float)
        tex = part.material.texture
        mat = None if tex is not None and tex.get("kind") == "file" else self._material(part.material)
        shape = sapien.render.RenderShapeTriangleMesh(str(part.path), scale.astype(np.float32), mat)
        shape.local_pose = sapien.Pose(np.asarray(part.position_world, np.float32),
                                       np.asarray(part.quat_wxyz, np.float32))
        return shape

    def _shape(self, part: Part):
        if part.shape == "mesh" and part.path is not None:
            return self._file_mesh_shape(part)
        sapien = self._sapien
        R = sapien.render
        mat = self._material(part.material)
        tex = part.material.texture
        tile = None if tex is None or texture_mode(tex["kind"]) == "fit" else tile_size_m(tex)
        if part.shape == "box":
            assert part.half_size is not None   # SceneSpec checks each shape's fields
            if tex is None:
                shape = R.RenderShapeBox(np.asarray(part.half_size, np.float32), mat)
            else:
                shape = R.RenderShapeTriangleMesh(*box_mesh(part.half_size, tile), mat)
        elif part.shape == "cylinder":
            assert part.radius is not None and part.half_length is not None
            if tex is None:
                shape = R.RenderShapeCylinder(float(part.radius), float(part.half_length), mat)
            else:
                shape = R.RenderShapeTriangleMesh(*cylinder_mesh(part.radius, part.half_length, tile), mat)
        elif part.shape == "capsule":
            assert part.radius is not None and part.half_length is not None
            shape = R.RenderShapeCapsule(float(part.radius), float(part.half_length), mat)
        elif part.shape == "sphere":
            assert part.radius is not None
            shape = R.RenderShapeSphere(float(part.radius), mat)
        elif part.shape == "mesh":
            scale = np.ones(3) if part.scale is None else np.asarray(part.scale, dtype=float)
            if part.vertices is not None:
                assert part.faces is not None
                shape = R.RenderShapeTriangleMesh(
                    *flat_mesh(np.asarray(part.vertices, dtype=float) * scale, part.faces, tile), mat)
            elif part.path is not None:
                shape = R.RenderShapeTriangleMesh(part.path, scale.astype(np.float32), mat)
            else:
                raise ValueError("mesh part needs inline vertices/faces or a path; got neither")
        else:
            raise ValueError(f"unknown part shape {part.shape!r}; expected box, cylinder, capsule, "
                             f"sphere or mesh")
        shape.local_pose = sapien.Pose(np.asarray(part.position_world, np.float32),
                                       np.asarray(part.quat_wxyz, np.float32))
        return shape

    # ---- pictures ----------------------------------------------------------------------------
    @staticmethod
    def pose_key(pose: CameraPose) -> tuple[bytes, bytes]:
        """The exact (float32) camera pose a picture is taken at: equal keys, the same picture."""
        return (pose.position_world.astype(np.float32).tobytes(), pose.quat_wxyz().astype(np.float32).tobytes())

    def set_camera_pose(self, pose: CameraPose) -> None:
        """Pose the camera entity and update the scene's render state (no picture taken)."""
        if self._scene is None:
            raise RuntimeError("this SapienRenderer is closed; create a new one")
        self._camera_entity.set_pose(self._sapien.Pose(pose.position_world.astype(np.float32),
                                                       pose.quat_wxyz().astype(np.float32)))
        self._scene.update_render()

    def prepare(self, pose: CameraPose, pictures: dict[str, np.ndarray] | None = None) -> None:
        """Make the picture at ``pose`` current, so the next :meth:`capture_rgb` /
        :meth:`capture_privileged` at exactly this pose read it instead of rendering.

        ``pictures`` (SAPIEN render-target name -> array as ``camera.get_picture`` returns it, e.g.
        ``"Color"`` (H, W, 4) float32) was rendered elsewhere at ``pose`` (a batched camera group);
        a target it lacks is rendered on this renderer's own camera when first read. None: render
        here now (the sequential path)."""
        if pictures is None:
            self._take(pose)
            return
        if self._scene is None:
            raise RuntimeError("this SapienRenderer is closed; create a new one")
        self._taken, self._taken_pose, self._prepared = self.pose_key(pose), pose, dict(pictures)

    def _picture(self, name: str) -> np.ndarray:
        """Render target ``name`` of the current picture (prepared, or this camera's)."""
        if self._prepared is not None:
            if name in self._prepared:
                return self._prepared[name]
            assert self._taken_pose is not None
            self._render(self._taken_pose)  # a target the batch did not carry: render it here
        return self._camera.get_picture(name)

    def _take(self, pose: CameraPose) -> None:
        """Render at ``pose`` unless the current picture was taken there (same scene)."""
        if self._scene is None:
            raise RuntimeError("this SapienRenderer is closed; create a new one")
        if self.pose_key(pose) == self._taken:
            return
        self._render(pose)

    def _render(self, pose: CameraPose) -> None:
        self.set_camera_pose(pose)
        self._camera.take_picture()
        self.render_count += 1
        self._taken, self._taken_pose, self._prepared = self.pose_key(pose), pose, None


def _render_system(sapien: Any, device: str | None) -> Any:
    """A SAPIEN render system on ``device`` (None: SAPIEN's default Vulkan device)."""
    return sapien.render.RenderSystem() if device is None else sapien.render.RenderSystem(_sapien_device(sapien, device))


def _sapien_device(sapien: Any, device: str) -> Any:
    """``sapien.Device(device)``, or a :class:`RenderDeviceError` that says what exists."""
    try:
        return sapien.Device(device)
    except RuntimeError as exc:
        try:
            summary = sapien.render.get_device_summary()
        except Exception:  # only for the message
            summary = "(unavailable)"
        raise RenderDeviceError(f"render device {device!r} was requested but SAPIEN cannot find it ({exc}). "
                                f"SAPIEN sees:\n{summary}\nUse device=None (the default Vulkan device, "
                                f"lavapipe on CPU machines) or run on a machine with an NVIDIA GPU and "
                                f"driver.") from exc


class StaleFrameError(RuntimeError):
    """A lazy privileged frame was read after its renderer switched to another scene: its buffers
    would describe the wrong scene, so none is returned."""


class _LazyPrivilegedFrame(PrivilegedFrame):
    """A :class:`PrivilegedFrame` whose buffers are read from the renderer on first use.

    It belongs to the scene it was captured in (the renderer's ``scene_version`` and spec at
    capture): a buffer read after the camera moved on re-renders the frame's pose in that scene;
    after a ``set_scene`` it first calls :attr:`restore_scene` (if set), then re-renders when the
    renderer shows the frame's spec again, else raises :class:`StaleFrameError`."""

    def __init__(self, renderer: SapienRenderer, pose: CameraPose, taken: tuple | None) -> None:
        self._renderer, self._pose, self._key = renderer, pose, taken
        self._version, self._spec, self._K = renderer.scene_version, renderer.spec, renderer.intrinsics
        self._cache: dict[str, np.ndarray] = {}
        self.restore_scene: Callable[[], None] | None = None
        """Called before a re-render when the renderer's scene changed since the capture (a
        shared renderer's session view sets it to switch back to its own scene)."""

    def _picture(self) -> SapienRenderer:
        r = self._renderer
        if r.scene_version != self._version:     # a set_scene since the capture
            if self.restore_scene is not None:
                self.restore_scene()
            if r.spec is not self._spec:
                raise StaleFrameError(
                    f"this privileged frame was captured in scene {self._spec.scene_id!r}, but its "
                    f"renderer now shows {r.spec.scene_id!r}: read the frame's buffers before the "
                    f"renderer loads another scene, or capture the frame again")
            self._version, self._key = r.scene_version, None   # same scene again: render anew
        if r._taken is None or r._taken != self._key:   # the camera moved on: render this pose again
            r._take(self._pose)
            self._key = r._taken
        return r

    @property
    def segmentation(self) -> np.ndarray:  # type: ignore[override]  # the dataclass field, read lazily
        if "seg" not in self._cache:
            self._cache["seg"] = self._picture()._read_segmentation()
        return self._cache["seg"]

    @property
    def depth_m(self) -> np.ndarray:  # type: ignore[override]  # the dataclass field, read lazily
        if "depth" not in self._cache:
            self._cache["depth"] = self._picture()._read_depth()
        return self._cache["depth"].astype(np.float32)

    @property
    def position_world(self) -> np.ndarray:  # type: ignore[override]  # the dataclass field, read lazily
        if "pos" not in self._cache:
            depth = self._cache.get("depth")
            if depth is None:
                depth = self._cache["depth"] = self._picture()._read_depth()
            self._cache["pos"] = self._renderer._positions(self._pose, depth, self._K)
        return self._cache["pos"]
