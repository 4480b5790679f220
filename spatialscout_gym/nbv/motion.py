"""NBV motions: an action of :func:`~spatialscout_gym.nbv.config.nbv_action_space` as a
relative rotation and a translation (:func:`motion_args`), and how many ``move_camera`` calls
carry the translation within the per-call bound of docs/protocol.md section 4 (:func:`move_parts`)."""

from __future__ import annotations

import numpy as np

from spatialscout_gym.episode.tools import MAX_TRANSLATION_M
from spatialscout_gym.nbv.config import DISCRETE_MOTIONS, NBVConfig

__all__ = ["TRANSLATION_AXIS_M", "motion_args", "move_parts"]

TRANSLATION_AXIS_M = MAX_TRANSLATION_M / np.sqrt(3.0)
"""Per-axis bound of one ``move_camera`` call in an NBV step (the inner env's ``translation`` box),
metres: a longer motion is sent as :func:`move_parts` equal calls (by the NBV core, whatever its port)."""


def motion_args(config: NBVConfig, action, pitch_deg: float = 0.0
                ) -> tuple[tuple[float, float], tuple[float, float, float]]:
    """``((yaw_deg, pitch_deg), (forward_m, right_m, up_m))`` for ``action``; the rotation is
    applied first, so forward/right refer to the new heading. ``pitch_deg`` is the camera's pitch
    now (the heading motion turns it to ``hold_pitch_deg``). Raises ``ValueError`` for an action
    outside the action space (saying what was expected)."""
    c = config
    if c.motion == "heading":
        n = int(c.headings) * len(c.strides_m)
        arr = np.asarray(action)
        if arr.size != 1 or not np.issubdtype(arr.dtype, np.number) or not np.isfinite(arr).all() \
                or float(arr.item()) != int(arr.item()) or not 0 <= int(arr.item()) < n:
            raise ValueError(f"heading NBV action must be one integer in [0, {n - 1}] (heading index x "
                             f"{len(c.strides_m)} + stride index), got {np.asarray(action).tolist()!r}")
        k, d = divmod(int(arr.item()), len(c.strides_m))
        yaw = (360.0 / int(c.headings)) * k
        yaw = yaw - 360.0 if yaw > 180.0 else yaw
        pitch = float(c.hold_pitch_deg) - float(pitch_deg)
        return (float(yaw), pitch if abs(pitch) > 1e-9 else 0.0), (float(c.strides_m[d]), 0.0, 0.0)
    if c.motion == "discrete":
        arr = np.asarray(action)
        if arr.size != 1 or not np.issubdtype(arr.dtype, np.number) or not np.isfinite(arr).all() \
                or float(arr.item()) != int(arr.item()):
            raise ValueError(f"discrete NBV action must be one integer in [0, {len(DISCRETE_MOTIONS) - 1}] "
                             f"({', '.join(DISCRETE_MOTIONS)}), got {np.asarray(action).tolist()!r}")
        a = int(arr.item())
        if not 0 <= a < len(DISCRETE_MOTIONS):
            raise ValueError(f"discrete NBV action must be in [0, {len(DISCRETE_MOTIONS) - 1}] "
                             f"({', '.join(DISCRETE_MOTIONS)}), got {a}")
        name = DISCRETE_MOTIONS[a]
        rot = {"turn_left": (c.turn_deg, 0.0), "turn_right": (-c.turn_deg, 0.0),
               "look_up": (0.0, c.tilt_deg), "look_down": (0.0, -c.tilt_deg)}.get(name, (0.0, 0.0))
        move = {"forward": (c.move_m, 0, 0), "back": (-c.move_m, 0, 0), "left": (0, -c.move_m, 0),
                "right": (0, c.move_m, 0), "up": (0, 0, c.lift_m),
                "down": (0, 0, -c.lift_m)}.get(name, (0.0, 0.0, 0.0))
        return rot, tuple(float(x) for x in move)
    a = np.asarray(action, dtype=float).reshape(-1)
    if a.shape != (5,) or not np.all(np.isfinite(a)):
        raise ValueError(f"continuous NBV action must be 5 finite numbers in [-1, 1] (forward, "
                         f"right, up, yaw, pitch), got {np.asarray(action).tolist()}")
    a = np.clip(a, -1.0, 1.0)
    t = a[:3] * MAX_TRANSLATION_M
    norm = float(np.linalg.norm(t))
    if norm > MAX_TRANSLATION_M:
        t = t * (MAX_TRANSLATION_M / norm) * (1 - 1e-9)
    return (float(a[3] * c.max_yaw_deg), float(a[4] * c.max_pitch_deg)), tuple(float(x) for x in t)


def move_parts(move) -> int:
    """How many equal ``move_camera`` calls carry ``move`` (forward, right, up; metres): each
    stays within :data:`TRANSLATION_AXIS_M` per axis (so within the 1 m move bound)."""
    return max(1, int(np.ceil(float(np.max(np.abs(move))) / TRANSLATION_AXIS_M - 1e-9)))

