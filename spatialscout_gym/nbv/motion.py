"""NBV motions: an action of :func:`~spatialscout_gym.nbv.config.nbv_action_space` as a
relative rotation and a translation (:func:`motion_args`), and how many ``move_camera`` calls
carry the translation within the per-call bound of docs/protocol.md section 4 (:func:`move_parts`)."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from spatialscout_gym.episode.tools import MAX_TRANSLATION_M
from spatialscout_gym.nbv.config import DISCRETE_MOTIONS, NBVConfig

__all__ = ["TRANSLATION_AXIS_M", "motion_args", "move_parts"]

TRANSLATION_AXIS_M = MAX_TRANSLATION_M / np.sqrt(3.0)
"""Per-axis bound of one ``move_camera`` call in an NBV step (the inner env's ``translation`` box),
metres: a longer motion is sent as :func:`move_parts` equal calls (by the NBV core, whatever its port)."""


def _shown(action) -> str:
    """``action`` for an error message, whatever it is (its ``tolist``/``repr`` may raise)."""
    try:
        return repr(np.asarray(action).tolist())[:200]
    except Exception:
        try:
            return repr(action)[:200]
        except Exception:
            return f"a {type(action).__name__} that cannot be shown"


def _real_array(action, expected: str) -> np.ndarray:
    """``action`` as an array of booleans, integers or floats, or the one-line ``ValueError`` that
    says ``expected``: a complex number, a timedelta (numpy counts it an integer), a datetime, an
    object or something whose conversion raises is no motion."""
    try:
        arr = np.asarray(action)
    except Exception:
        arr = None
    if arr is None or arr.dtype.kind not in "biuf":
        raise ValueError(f"{expected}, got {_shown(action)}")
    return arr


def _one_integer(action, n: int, expected: str) -> int:
    """The one integer in ``[0, n)`` that ``action`` is, as gymnasium's ``Discrete.contains``
    decides: a Python ``int`` or a numpy integer scalar (or 0-d array) whose dtype casts safely to
    the space's int64 (what a vector env hands each sub-env: an element of its batch), else the
    ``ValueError`` of :func:`_real_array`. A list or an array of shape (1,) (``[1]``,
    ``np.array([1])``), ``np.uint64`` (no safe cast to int64), a float (``1.0``), a boolean and a
    masked value are no index; unlike ``contains``, ``True`` is refused too."""
    arr = _real_array(action, expected)
    if isinstance(action, np.ma.MaskedArray) and np.ma.getmaskarray(action).any():
        raise ValueError(f"{expected}, got a masked array")
    if arr.ndim != 0 or isinstance(action, (list, tuple)):
        what = f"a {type(action).__name__}" if isinstance(action, (list, tuple)) else "an array"
        raise ValueError(f"{expected}, got {_shown(action)}: {what} of shape {arr.shape}, where a Discrete space "
                         f"holds one integer scalar")
    if arr.dtype.kind not in "iu":
        raise ValueError(f"{expected}, got {_shown(action)}")
    if not np.can_cast(arr.dtype, np.int64):
        raise ValueError(f"{expected}, got {_shown(action)} of dtype {arr.dtype}, which does not cast safely to the "
                         f"space's int64")
    x = arr.item()
    if float(x) != int(x) or not 0 <= int(x) < n:
        raise ValueError(f"{expected}, got {_shown(action)}")
    return int(x)


def motion_args(config: NBVConfig, action: npt.ArrayLike, pitch_deg: float = 0.0
                ) -> tuple[tuple[float, float], tuple[float, float, float]]:
    """``((yaw_deg, pitch_deg), (forward_m, right_m, up_m))`` for ``action``; the rotation is
    applied first, so forward/right refer to the new heading. ``pitch_deg`` is the camera's pitch
    now (the heading motion turns it to ``hold_pitch_deg``). Raises ``ValueError`` for an action
    outside the action space (saying what was expected): also a complex number, a timedelta, a
    datetime, a boolean where an index goes, and an object whose ``__array__`` or ``__repr__``
    raises."""
    c = config
    if c.motion == "heading":
        n = int(c.headings) * len(c.strides_m)
        k, d = divmod(_one_integer(action, n, f"heading NBV action must be one integer in [0, {n - 1}] (heading "
                                              f"index x {len(c.strides_m)} + stride index)"), len(c.strides_m))
        yaw = (360.0 / int(c.headings)) * k
        yaw = yaw - 360.0 if yaw > 180.0 else yaw
        pitch = float(c.hold_pitch_deg) - float(pitch_deg)
        return (float(yaw), pitch if abs(pitch) > 1e-9 else 0.0), (float(c.strides_m[d]), 0.0, 0.0)
    if c.motion == "discrete":
        name = DISCRETE_MOTIONS[_one_integer(action, len(DISCRETE_MOTIONS),
                                             f"discrete NBV action must be one integer in "
                                             f"[0, {len(DISCRETE_MOTIONS) - 1}] ({', '.join(DISCRETE_MOTIONS)})")]
        rot = {"turn_left": (c.turn_deg, 0.0), "turn_right": (-c.turn_deg, 0.0),
               "look_up": (0.0, c.tilt_deg), "look_down": (0.0, -c.tilt_deg)}.get(name, (0.0, 0.0))
        move = {"forward": (c.move_m, 0, 0), "back": (-c.move_m, 0, 0), "left": (0, -c.move_m, 0),
                "right": (0, c.move_m, 0), "up": (0, 0, c.lift_m),
                "down": (0, 0, -c.lift_m)}.get(name, (0.0, 0.0, 0.0))
        mx, my, mz = move
        return rot, (float(mx), float(my), float(mz))
    expected = "continuous NBV action must be 5 finite numbers in [-1, 1] (forward, right, up, yaw, pitch)"
    a = _real_array(action, expected).astype(float).reshape(-1)
    if a.shape != (5,) or not np.all(np.isfinite(a)):
        raise ValueError(f"{expected}, got {_shown(action)}")
    a = np.clip(a, -1.0, 1.0)
    t = a[:3] * MAX_TRANSLATION_M
    norm = float(np.linalg.norm(t))
    if norm > MAX_TRANSLATION_M:
        t = t * (MAX_TRANSLATION_M / norm) * (1 - 1e-9)
    return (float(a[3] * c.max_yaw_deg), float(a[4] * c.max_pitch_deg)), (float(t[0]), float(t[1]), float(t[2]))


def move_parts(move: npt.ArrayLike) -> int:
    """How many equal ``move_camera`` calls carry ``move`` (forward, right, up; metres): each
    stays within :data:`TRANSLATION_AXIS_M` per axis (so within the 1 m move bound)."""
    return max(1, int(np.ceil(float(np.max(np.abs(move))) / TRANSLATION_AXIS_M - 1e-9)))

