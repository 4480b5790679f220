"""Passive control: a fixed set of views along a scripted path (the same for every model).

A report can then separate perception from exploration: in passive mode the model receives these
frames up front and the camera tools are refused (:class:`~spatialscout_gym.wrappers.tool_call.ToolCallWrapper`
with ``passive_views`` and ``passive_path=scripted_path()``, which captures these views as env steps).

The path depends only on the initial pose (the task frame) and the number of views: at each
station a sweep of 8 headings (45 degrees apart, pitch -20 degrees); the stations are the task
origin, then 1 m forward, left, right and back, then 2 m along the same directions. Views are taken
in that order until ``n_views`` frames exist (the initial frame 0 included), so a smaller budget is
a prefix of a larger one; the path holds 72 views (frame 0 included). A station outside the +-15 m world box is skipped (the episode refuses it).
"""

from __future__ import annotations

from spatialscout_gym.episode.episode import Episode

__all__ = ["scripted_path", "capture_scripted_views", "PASSIVE_VIEWS", "SWEEP_YAWS_DEG", "SWEEP_PITCH_DEG"]

PASSIVE_VIEWS = 24
"""Default number of passive views, the initial image included."""
SWEEP_YAWS_DEG: tuple[float, ...] = (45.0, 90.0, 135.0, 180.0, -135.0, -90.0, -45.0, 0.0)
"""Headings of one sweep, degrees relative to the initial heading (0 last: frame 0 covers it at
the origin)."""
SWEEP_PITCH_DEG = -20.0
"""Elevation of the sweep views, degrees."""
_STATIONS: tuple[tuple[float, float, float], ...] = (
    (0.0, 0.0, 0.0), (1.0, 0.0, 0.0), (0.0, 1.0, 0.0), (0.0, -1.0, 0.0), (-1.0, 0.0, 0.0),
    (2.0, 0.0, 0.0), (0.0, 2.0, 0.0), (0.0, -2.0, 0.0), (-2.0, 0.0, 0.0))


def scripted_path() -> list[tuple[list[float], float, float]]:
    """Every ``(position_task, yaw_deg, pitch_deg)`` of the path, in capture order.

    Positions are task-frame metres with the station's height equal to the origin's; the origin
    sweep skips yaw 0 (frame 0 is that view, up to pitch).
    """
    poses = []
    for i, station in enumerate(_STATIONS):
        for yaw in SWEEP_YAWS_DEG:
            if i == 0 and yaw == 0.0:
                continue
            poses.append((list(station), yaw, SWEEP_PITCH_DEG))
    return poses


def capture_scripted_views(episode: Episode, n_views: int = PASSIVE_VIEWS) -> list[int]:
    """Capture the path's views on ``episode`` until it holds ``n_views`` frames.

    Parameters
    ----------
    episode : Episode
        A fresh episode (frame 0 captured). Its tool calls here are the evaluator's, not the
        model's; they appear in the trace like any other.
    n_views : int
        Frames wanted, frame 0 included; at most the image budget V.

    Returns
    -------
    list of int
        The frame ids, frame 0 first.
    """
    if not 1 <= int(n_views) <= episode.image_budget:
        raise ValueError(f"n_views must be between 1 and the image budget {episode.image_budget}, got {n_views}")
    for position, yaw, pitch in scripted_path():
        if episode.images_used >= int(n_views):
            break
        if episode.set_camera_position(position, yaw, pitch).ok:
            episode.capture_image()
    episode.set_camera_position([0.0, 0.0, 0.0], 0.0, episode.public.initial_camera.pitch_deg)
    return sorted(episode.frames)
