"""Test doubles: a tiny hand-built scene and a renderer that needs no Vulkan.

``FakeRenderer`` draws a deterministic image from the pose (so two poses give different images and
one pose always gives the same image) and answers ``capture_privileged`` by ray-casting the
scene's box parts analytically.
"""

from __future__ import annotations

import contextlib
import json
from pathlib import Path

import numpy as np

from spatialscout_gym.core.camera import Intrinsics, pixel_to_ray_camera
from spatialscout_gym.core.frames import CameraPose
from spatialscout_gym.core.renderer_api import PrivilegedFrame
from spatialscout_gym.core.spec import Light, Material, Part, SceneObject, SceneSpec


SCRIPTED_PRICES = {"scripted": {"input_per_mtok": 10.0, "output_per_mtok": 40.0}}
"""A price table for the model ``scripted`` of the scripted model server (``vlm_scripted.py``): one
call of a small-scene episode costs about $0.012."""


def write_price_table(directory, prices: dict | None = None, name: str = "prices.json") -> Path:
    """``prices`` (default :data:`SCRIPTED_PRICES`) written as a price-table file ``directory/name``,
    as ``--price-table`` takes it; its path."""
    path = Path(directory) / name
    path.write_text(json.dumps(SCRIPTED_PRICES if prices is None else prices))
    return path


def box_object(obj_id: str, category: str, group: str, center, half, role="target") -> SceneObject:
    part = Part("box", np.asarray(center, float), half_size=np.asarray(half, float),
                material=Material((0.6, 0.3, 0.2, 1.0)))
    return SceneObject(obj_id, category, group, role, [part])


def small_scene(width: int = 64, height: int = 48, pitch_deg: float = 0.0,
                yaw_deg: float = 30.0, scene_id: str = "fake-room") -> SceneSpec:
    """Four targets (two interchangeable chairs), one hidden candidate and a floor."""
    objects = [
        box_object("chair_1", "Chair", "chair", [2.0, 1.5, 0.45], [0.25, 0.25, 0.45]),
        box_object("chair_2", "Chair", "chair", [3.0, 2.5, 0.45], [0.22, 0.25, 0.45]),
        box_object("table_1", "Table", "table", [2.5, 0.0, 0.4], [0.6, 0.4, 0.4]),
        box_object("lamp_1", "Lamp", "lamp", [1.0, 3.0, 1.2], [0.1, 0.1, 0.3]),
        box_object("vase_9", "Vase", "vase", [0.5, -1.0, 0.2], [0.05, 0.05, 0.2], role="hidden"),
        box_object("floor", "Floor", "floor", [0.0, 0.0, -0.05], [6.0, 6.0, 0.05], role="static"),
    ]
    camera = CameraPose(np.array([-1.0, 0.5, 1.4]), yaw_deg, pitch_deg)
    K = Intrinsics.from_fov(width, height, 60.0)
    return SceneSpec.from_objects(scene_id, objects, camera, K,
                                  [Light("directional", (1.0, 1.0, 1.0), direction_world=np.array([0, 0, -1.0]))])


class FakeRenderer:
    """Implements :class:`spatialscout_gym.core.renderer_api.Renderer` without a GPU."""

    def __init__(self, spec: SceneSpec, width: int | None = None, height: int | None = None) -> None:
        K = spec.public.intrinsics
        self._K = K if width is None else K.scaled(width, height or width)
        self.spec = spec
        self.captures = 0
        self.closed = False

    @property
    def intrinsics(self) -> Intrinsics:
        return self._K

    def set_scene(self, spec: SceneSpec) -> None:
        self.spec = spec

    def capture_rgb(self, pose: CameraPose) -> np.ndarray:
        self.captures += 1
        K = self._K
        u = np.arange(K.width)[None, :]
        v = np.arange(K.height)[:, None]
        p = pose.position_world
        r = (u * 3 + v + int(round(p[0] * 97 + pose.yaw_deg * 5))) % 256
        g = (u + v * 2 + int(round(p[1] * 89 + pose.pitch_deg * 7))) % 256
        b = np.broadcast_to((u * v + int(round(p[2] * 71))) % 256, r.shape)
        return np.stack([r, np.broadcast_to(g, r.shape), b], axis=-1).astype(np.uint8)

    def capture_privileged(self, pose: CameraPose) -> PrivilegedFrame:
        """Analytic ray cast against axis-aligned box parts (the fixture only has those)."""
        K = self._K
        uu, vv = np.meshgrid(np.arange(K.width), np.arange(K.height))
        d_cam = pixel_to_ray_camera(K, uu, vv)
        d = d_cam @ pose.R_world_cam.T
        o = pose.position_world
        best = np.full(uu.shape, np.inf)
        seg = np.full(uu.shape, -1, dtype=np.int32)
        with np.errstate(divide="ignore", invalid="ignore"):
            for i, obj in enumerate(self.spec.private.objects):
                lo, hi = obj.aabb_world
                t1, t2 = (lo - o) / d, (hi - o) / d
                tmin = np.nanmax(np.minimum(t1, t2), axis=-1)
                tmax = np.nanmin(np.maximum(t1, t2), axis=-1)
                hit = (tmax >= np.maximum(tmin, 0)) & (tmin > 0) & (tmin < best)
                best[hit] = tmin[hit]
                seg[hit] = i
        pos = np.where(np.isfinite(best)[..., None], o + d * best[..., None], np.nan).astype(np.float32)
        depth = np.where(np.isfinite(best), best * d_cam[..., 0], 0.0).astype(np.float32)
        return PrivilegedFrame(depth, seg, pos)

    def close(self) -> None:
        self.closed = True


@contextlib.contextmanager
def served_play_game(root):
    """A ``play`` game on :func:`small_scene` with :class:`FakeRenderer` (32 px, V = 5, 20 tool calls),
    recorded under ``root/me`` and served on 127.0.0.1: yields ``(game, server)``."""
    from spatialscout_gym.envs.session import EpisodeSession
    from spatialscout_gym.servers.viewer.play import PlayGame, serve_play
    spec = small_scene(32, 32)
    with EpisodeSession(resolution=32, image_budget=5, tool_call_budget=20, renderer=FakeRenderer(spec)) as s:
        s.load(spec)
        g = PlayGame(s, root / "me", "tester")
        server = serve_play(g)
        try:
            yield g, server
        finally:
            server.shutdown()
