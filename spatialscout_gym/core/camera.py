"""Pinhole intrinsics and pixel conventions (docs/protocol.md section 3).

Pixel ``(u, v)``: u to the right, v down, integer values at pixel centres, origin at the
top-left pixel's centre. So the image centre is ``((W - 1) / 2, (H - 1) / 2)``.

Camera-frame directions use the body convention of :mod:`spatialscout_gym.core.frames`
(forward, left, up), not OpenCV's (right, down, forward).

>>> K = Intrinsics.from_fov(512, 512, 90.0)
>>> d = pixel_to_ray_camera(K, K.cx, K.cy)
>>> [round(float(x), 6) for x in d]
[1.0, -0.0, -0.0]
>>> delivered_to_render(0.0, 0.0, 384, 384, 512, 512)
(0.16666666666666663, 0.16666666666666663)
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from spatialscout_gym.core.exact import rows_times
from spatialscout_gym.core.frames import CameraPose

__all__ = ["Intrinsics", "pixel_to_ray_camera", "pixel_to_ray_world", "project_world_to_pixel",
           "delivered_to_render", "render_to_delivered"]


@dataclass(frozen=True)
class Intrinsics:
    """Pinhole intrinsics of the render grid, in pixels (docs/protocol.md section 3)."""

    width: int
    height: int
    fx: float
    fy: float
    cx: float
    cy: float

    @classmethod
    def from_fov(cls, width: int, height: int, fov_y_deg: float) -> "Intrinsics":
        """Square pixels; vertical field of view ``fov_y_deg`` spans the full image height."""
        if width <= 0 or height <= 0:
            raise ValueError(f"image size must be positive, got {width} x {height}")
        if not 0.0 < fov_y_deg < 180.0:
            raise ValueError(f"fov_y_deg must be in (0, 180), got {fov_y_deg}")
        f = (height / 2.0) / np.tan(np.deg2rad(fov_y_deg) / 2.0)
        return cls(int(width), int(height), float(f), float(f), (width - 1) / 2.0, (height - 1) / 2.0)

    @property
    def fov_y_deg(self) -> float:
        return float(np.rad2deg(2.0 * np.arctan((self.height / 2.0) / self.fy)))

    @property
    def K(self) -> np.ndarray:
        """The 3x3 OpenCV-style intrinsic matrix (pixel-centre convention above)."""
        return np.array([[self.fx, 0.0, self.cx], [0.0, self.fy, self.cy], [0.0, 0.0, 1.0]])

    def scaled(self, width: int, height: int) -> "Intrinsics":
        """The same camera on a ``width x height`` grid (same field of view)."""
        sx, sy = width / self.width, height / self.height
        return Intrinsics(int(width), int(height), self.fx * sx, self.fy * sy,
                          (self.cx + 0.5) * sx - 0.5, (self.cy + 0.5) * sy - 0.5)

    def contains(self, u: float, v: float) -> bool:
        """True when ``(u, v)`` lies on the image: within half a pixel of the outer pixel centres."""
        return bool(-0.5 <= u <= self.width - 0.5 and -0.5 <= v <= self.height - 0.5)

    def to_dict(self) -> dict:
        return {"fx": self.fx, "fy": self.fy, "cx": self.cx, "cy": self.cy,
                "width": self.width, "height": self.height}

    @classmethod
    def from_dict(cls, d: dict) -> "Intrinsics":
        return cls(int(d["width"]), int(d["height"]), float(d["fx"]), float(d["fy"]),
                   float(d["cx"]), float(d["cy"]))


def pixel_to_ray_camera(K: Intrinsics, u: np.ndarray | float, v: np.ndarray | float) -> np.ndarray:
    """Unit ray directions in the camera body frame (forward, left, up).

    Parameters
    ----------
    u, v : float or array_like, shape (...)
        Pixel coordinates on the render grid.

    Returns
    -------
    d : ndarray, shape (..., 3)
    """
    u = np.asarray(u, dtype=float)
    v = np.asarray(v, dtype=float)
    x_right = (u - K.cx) / K.fx
    y_down = (v - K.cy) / K.fy
    d = np.stack([np.ones_like(x_right), -x_right, -y_down], axis=-1)
    return d / np.linalg.norm(d, axis=-1, keepdims=True)


def pixel_to_ray_world(K: Intrinsics, pose: CameraPose, u: np.ndarray | float,
                       v: np.ndarray | float) -> tuple[np.ndarray, np.ndarray]:
    """Ray origin (shape (3,)) and unit directions (shape (..., 3)) in the world frame."""
    return pose.position_world.copy(), rows_times(pixel_to_ray_camera(K, u, v), pose.R_world_cam.T)


def project_world_to_pixel(K: Intrinsics, pose: CameraPose, points_world: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Project world points, shape (..., 3), to pixels.

    Returns
    -------
    uv : ndarray, shape (..., 2)
    depth : ndarray, shape (...)
        Distance along the optical axis, metres; points with ``depth <= 0`` are behind the camera.
    """
    p_cam = rows_times(np.asarray(points_world, dtype=float) - pose.position_world, pose.R_world_cam)
    depth = p_cam[..., 0]
    with np.errstate(divide="ignore", invalid="ignore"):
        u = K.cx - K.fx * p_cam[..., 1] / depth
        v = K.cy - K.fy * p_cam[..., 2] / depth
    return np.stack([u, v], axis=-1), depth


def delivered_to_render(u_d: float, v_d: float, width_d: int, height_d: int,
                        width: int, height: int) -> tuple[float, float]:
    """Map a pixel on a delivered (downscaled) image back to the render grid (docs/protocol.md section 3):
    ``u = (u_d + 1/2) W / W_d - 1/2``, ``v = (v_d + 1/2) H / H_d - 1/2``."""
    return (u_d + 0.5) * width / width_d - 0.5, (v_d + 0.5) * height / height_d - 0.5


def render_to_delivered(u: float, v: float, width: int, height: int,
                        width_d: int, height_d: int) -> tuple[float, float]:
    """Inverse of :func:`delivered_to_render`."""
    return (u + 0.5) * width_d / width - 0.5, (v + 0.5) * height_d / height - 0.5
