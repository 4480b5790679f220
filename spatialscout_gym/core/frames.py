"""World and task frames, camera poses (docs/protocol.md sections 2 and 4).

Conventions
-----------
* **World**: z up, metres.
* **Camera body frame**: columns of ``R_world_cam`` are the camera's *forward* (optical axis),
  *left* and *up* directions in world coordinates. This is also SAPIEN's camera-link convention,
  so a :class:`CameraPose` converts to a SAPIEN pose without axis swaps.
* **Camera orientation** is stored as world yaw and pitch (roll is always 0, docs/protocol.md section 4):
  ``yaw_deg`` is the heading of the forward axis, counter-clockwise from world +x seen from above;
  ``pitch_deg`` is the elevation of the forward axis above the world horizontal (positive looks up).
* **Task frame** (docs/protocol.md section 2): origin at the initial camera position ``o0``; axes are the
  initial camera's forward, left, up (``R0 = R_world_cam`` of the initial pose). A point maps as
  ``p_task = R0^T (p_world - o0)`` and back as ``p_world = o0 + R0 p_task``.
* **Reported orientation** (``get_camera_pose``): ``yaw_deg`` relative to the initial heading
  (0 at the start, positive = turned left) and ``pitch_deg`` as the absolute elevation above the
  world horizontal (the same value the [-85, 85] deg clamp applies to), plus the camera's
  forward/left/up axes as unit vectors in the task frame, which are unambiguous even when the
  initial camera is pitched.

>>> import numpy as np
>>> frame = TaskFrame.from_initial_pose(CameraPose(np.array([1.0, 2.0, 1.5]), 90.0, -10.0))
>>> p = np.array([0.3, -0.2, 0.7])
>>> bool(np.allclose(frame.to_task(frame.to_world(p)), p))
True
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from spatialscout_gym.core.exact import matmul, norm, rows_times
from spatialscout_gym.core.types import ArrayLike3, as_vec3

__all__ = ["CameraPose", "TaskFrame", "quat_mul", "quat_to_matrix", "rotation_world_from_camera", "wrap_degrees"]


def quat_mul(a: npt.ArrayLike, b: npt.ArrayLike) -> np.ndarray:
    """Hamilton product ``a * b`` of two (w, x, y, z) quaternions (SAPIEN's order), shape (4,):
    rotating by ``b`` first, then by ``a``."""
    w1, x1, y1, z1 = np.asarray(a, dtype=float)
    w2, x2, y2, z2 = np.asarray(b, dtype=float)
    return np.array([w1 * w2 - x1 * x2 - y1 * y2 - z1 * z2,
                     w1 * x2 + x1 * w2 + y1 * z2 - z1 * y2,
                     w1 * y2 - x1 * z2 + y1 * w2 + z1 * x2,
                     w1 * z2 + x1 * y2 - y1 * x2 + z1 * w2])


def quat_to_matrix(q: npt.ArrayLike) -> np.ndarray:
    """The (3, 3) rotation matrix of a (w, x, y, z) quaternion (SAPIEN's order), normalised first."""
    w, x, y, z = np.asarray(q, dtype=float) / norm(q)
    return np.array([
        [1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
        [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
        [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)],
    ])


def wrap_degrees(angle_deg: float) -> float:
    """Wrap an angle to [-180, 180) degrees."""
    wrapped = float((angle_deg + 180.0) % 360.0 - 180.0)
    return -180.0 if wrapped >= 180.0 else wrapped  # (x % 360) rounds up to 360 for x just below 0


def rotation_world_from_camera(yaw_deg: float, pitch_deg: float) -> np.ndarray:
    """World-from-camera rotation for a roll-free camera.

    Parameters
    ----------
    yaw_deg : float
        Heading of the optical axis, counter-clockwise from world +x seen from above.
    pitch_deg : float
        Elevation of the optical axis above the world horizontal; positive looks up.

    Returns
    -------
    R : ndarray, shape (3, 3)
        Columns are the camera's forward, left and up directions in world coordinates.
    """
    y, p = np.deg2rad(yaw_deg), np.deg2rad(pitch_deg)
    cy, sy, cp, sp = np.cos(y), np.sin(y), np.cos(p), np.sin(p)
    forward = np.array([cp * cy, cp * sy, sp])
    left = np.array([-sy, cy, 0.0])
    up = np.array([-sp * cy, -sp * sy, cp])
    return np.stack([forward, left, up], axis=1)


@dataclass(frozen=True)
class CameraPose:
    """A roll-free camera pose in the world frame.

    Attributes
    ----------
    position_world : ndarray, shape (3,)
        Camera centre in world coordinates, metres.
    yaw_deg : float
        World heading of the optical axis, degrees, counter-clockwise seen from above.
    pitch_deg : float
        Elevation of the optical axis above the horizontal, degrees, positive looks up.
    """

    position_world: np.ndarray
    yaw_deg: float
    pitch_deg: float

    def __post_init__(self) -> None:
        object.__setattr__(self, "position_world", as_vec3(self.position_world, "position_world"))
        object.__setattr__(self, "yaw_deg", float(self.yaw_deg))
        object.__setattr__(self, "pitch_deg", float(self.pitch_deg))

    @property
    def R_world_cam(self) -> np.ndarray:
        """World-from-camera rotation, shape (3, 3); columns forward, left, up."""
        return rotation_world_from_camera(self.yaw_deg, self.pitch_deg)

    @property
    def T_world_cam(self) -> np.ndarray:
        """Homogeneous world-from-camera transform, shape (4, 4)."""
        T = np.eye(4)
        T[:3, :3] = self.R_world_cam
        T[:3, 3] = self.position_world
        return T

    @property
    def forward_world(self) -> np.ndarray:
        return self.R_world_cam[:, 0]

    @property
    def horizontal_forward_world(self) -> np.ndarray:
        """Unit heading on the floor plane (docs/protocol.md section 4: ``move_camera`` forward)."""
        y = np.deg2rad(self.yaw_deg)
        return np.array([np.cos(y), np.sin(y), 0.0])

    @property
    def horizontal_right_world(self) -> np.ndarray:
        """Unit right direction on the floor plane (``move_camera`` right)."""
        y = np.deg2rad(self.yaw_deg)
        return np.array([np.sin(y), -np.cos(y), 0.0])

    def quat_wxyz(self) -> np.ndarray:
        """Orientation as a unit quaternion, (w, x, y, z) order (SAPIEN's order)."""
        half_y, half_p = np.deg2rad(self.yaw_deg) / 2, np.deg2rad(-self.pitch_deg) / 2
        # q = Rz(yaw) * Ry(-pitch): pitching up rotates forward towards +z, i.e. about -y.
        qz = np.array([np.cos(half_y), 0.0, 0.0, np.sin(half_y)])
        qy = np.array([np.cos(half_p), 0.0, np.sin(half_p), 0.0])
        return quat_mul(qz, qy)

    def to_dict(self) -> dict:
        return {"position_world": self.position_world.tolist(), "yaw_deg": self.yaw_deg,
                "pitch_deg": self.pitch_deg}

    @classmethod
    def from_dict(cls, d: dict) -> "CameraPose":
        return cls(np.asarray(d["position_world"], dtype=float), d["yaw_deg"], d["pitch_deg"])


@dataclass(frozen=True)
class TaskFrame:
    """The task frame of docs/protocol.md section 2, fixed by the initial camera pose.

    Attributes
    ----------
    R_world_task : ndarray, shape (3, 3)
        ``R0``: columns are the initial camera's forward, left, up in world coordinates.
    origin_world : ndarray, shape (3,)
        ``o0``: the initial camera centre in world coordinates, metres.
    initial_yaw_deg : float
        World heading of the initial camera; reported yaw is relative to it.
    """

    R_world_task: np.ndarray
    origin_world: np.ndarray
    initial_yaw_deg: float = 0.0

    @classmethod
    def from_initial_pose(cls, pose: CameraPose) -> "TaskFrame":
        return cls(pose.R_world_cam, pose.position_world.copy(), pose.yaw_deg)

    def to_task(self, points_world: np.ndarray) -> np.ndarray:
        """World points, shape (..., 3), to task-frame points, shape (..., 3)."""
        p = np.asarray(points_world, dtype=float)
        return rows_times(p - self.origin_world, self.R_world_task)

    def to_world(self, points_task: np.ndarray) -> np.ndarray:
        """Task-frame points, shape (..., 3), to world points, shape (..., 3)."""
        p = np.asarray(points_task, dtype=float)
        return rows_times(p, self.R_world_task.T) + self.origin_world

    def direction_to_task(self, directions_world: np.ndarray) -> np.ndarray:
        """Rotate world directions, shape (..., 3), into the task frame."""
        return rows_times(directions_world, self.R_world_task)

    def direction_to_world(self, directions_task: np.ndarray) -> np.ndarray:
        """Rotate task-frame directions, shape (..., 3), into the world frame."""
        return rows_times(directions_task, self.R_world_task.T)

    def pose_to_task(self, pose: CameraPose) -> dict:
        """A camera pose as ``get_camera_pose`` reports it (task frame; see module docstring).

        Returns ``{"position": [x, y, z], "yaw_deg", "pitch_deg", "forward", "left", "up"}``,
        position in metres and axes as unit vectors, all in the task frame.
        """
        R_task_cam = matmul(self.R_world_task.T, pose.R_world_cam)
        return {
            "position": [round(float(x), 6) for x in self.to_task(pose.position_world)],
            "yaw_deg": round(wrap_degrees(pose.yaw_deg - self.initial_yaw_deg), 6),
            "pitch_deg": round(pose.pitch_deg, 6),
            "forward": [round(float(x), 6) for x in R_task_cam[:, 0]],
            "left": [round(float(x), 6) for x in R_task_cam[:, 1]],
            "up": [round(float(x), 6) for x in R_task_cam[:, 2]],
        }

    def pose_from_task(self, position_task: ArrayLike3, yaw_deg: float, pitch_deg: float) -> CameraPose:
        """Inverse of :meth:`pose_to_task` for ``set_camera_position``: task position, relative
        yaw and absolute pitch to a world :class:`CameraPose`."""
        return CameraPose(self.to_world(as_vec3(position_task, "position")),
                          wrap_degrees(self.initial_yaw_deg + yaw_deg), pitch_deg)

    def to_dict(self) -> dict:
        """The scorer's ``world_from_task`` block: ``{"rotation": 3x3, "translation": [3]}``."""
        return {"rotation": self.R_world_task.tolist(), "translation": self.origin_world.tolist()}

    @classmethod
    def from_dict(cls, d: dict, initial_yaw_deg: float | None = None) -> "TaskFrame":
        R = np.asarray(d["rotation"], dtype=float)
        if initial_yaw_deg is None:
            f = R[:, 0]
            initial_yaw_deg = float(np.rad2deg(np.arctan2(f[1], f[0])))
        return cls(R, np.asarray(d["translation"], dtype=float), initial_yaw_deg)
