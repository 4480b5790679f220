"""Passive control: a fixed set of views along a scripted path (the same for every model).

A report can then separate perception from exploration: in passive mode the model receives these
frames up front and the camera tools are refused (:class:`~spatialscout_gym.wrappers.tool_call.ToolCallWrapper`
with ``passive_views`` and ``passive_path=scripted_path()``, which captures these views as env steps),
with a prompt of its own (:mod:`spatialscout_gym.conversation.prompt`).

The path is built so that every prefix of two or more views can be triangulated: the views come in
stereo groups. Headings (degrees, relative to the initial heading, positive = left) are taken in the
order 0, 45, -45, 90, -90, 135, -135, 180; for each heading, views from the task origin and from 1 m
to the left and 1 m to the right of it (sideways to the viewing direction, so the same objects are
seen across a 2 m baseline). Heading 0 skips the origin (frame 0 is that view), so frames 1 and 2
are frame 0's stereo partners. Then the same headings from 2 m left and right, from 1 m and 2 m
behind, and from 3 m left and right. Views are taken in that order until ``n_views`` frames exist
(frame 0 included), so a smaller budget is a prefix of a larger one; the path holds 71 views (72
frames with frame 0). Sweep views look down by 20 degrees; every station keeps the origin's height.
A station outside the +-15 m world box is refused by the episode and skipped.

The path depends only on the initial pose (the task frame) and the number of views.
"""

from __future__ import annotations

import math
import warnings
from typing import Iterable

from spatialscout_gym.core.triangulation import MIN_BASELINE_M
from spatialscout_gym.episode.episode import Episode

__all__ = ["scripted_path", "capture_scripted_views", "views_baseline_m", "check_views_baseline", "PassiveViewsWarning",
           "PASSIVE_VIEWS", "SWEEP_YAWS_DEG", "SWEEP_PITCH_DEG"]

PASSIVE_VIEWS = 24
"""Default number of passive views, the initial image included (8 headings x 3 stations)."""
SWEEP_YAWS_DEG: tuple[float, ...] = (0.0, 45.0, -45.0, 90.0, -90.0, 135.0, -135.0, 180.0)
"""Headings of the path, degrees relative to the initial heading, in capture order."""
SWEEP_PITCH_DEG = -20.0
"""Elevation of the path's views, degrees."""
_RINGS: tuple[tuple[tuple[float, float], ...], ...] = (
    ((0.0, 0.0), (0.0, 1.0), (0.0, -1.0)),     # (along the heading, to its left), metres
    ((0.0, 2.0), (0.0, -2.0)),
    ((-1.0, 0.0),),
    ((-2.0, 0.0),),
    ((0.0, 3.0), (0.0, -3.0)),
)


class PassiveViewsWarning(UserWarning):
    """The passive views share one camera centre: nothing can be triangulated from them."""


def scripted_path() -> list[tuple[list[float], float, float]]:
    """Every ``(position_task, yaw_deg, pitch_deg)`` of the path, in capture order (frame 0
    excluded). Positions are task-frame metres at the origin's height."""
    poses = []
    for ring in _RINGS:
        for yaw in SWEEP_YAWS_DEG:
            h = math.radians(yaw)
            for along, left in ring:
                if yaw == 0.0 and along == 0.0 and left == 0.0:
                    continue   # frame 0
                x = along * math.cos(h) - left * math.sin(h)
                y = along * math.sin(h) + left * math.cos(h)
                poses.append(([round(x, 12) + 0.0, round(y, 12) + 0.0, 0.0], yaw, SWEEP_PITCH_DEG))
    return poses


def views_baseline_m(episode: Episode, frame_ids: Iterable[int]) -> float:
    """The largest distance between the camera centres of ``frame_ids`` (metres)."""
    from spatialscout_gym.conversation.prompt import passive_baseline_m
    return passive_baseline_m([episode.frames[f].position_task for f in frame_ids])


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

    Warns
    -----
    PassiveViewsWarning
        The frames share one camera centre (one view, or every other station refused), so no
        point can be triangulated; the prompt says so too.
    """
    if not 1 <= int(n_views) <= episode.image_budget:
        raise ValueError(f"n_views must be between 1 and the image budget {episode.image_budget}, got {n_views}")
    for position, yaw, pitch in scripted_path():
        if episode.images_used >= int(n_views):
            break
        if episode.set_camera_position(position, yaw, pitch).ok:
            episode.capture_image()
    episode.set_camera_position([0.0, 0.0, 0.0], 0.0, episode.public.initial_camera.pitch_deg)
    frames = sorted(episode.frames)
    check_views_baseline(episode, frames, stacklevel=3)
    return frames


def check_views_baseline(episode: Episode, frame_ids: Iterable[int], *, stacklevel: int = 2) -> float:
    """The views' baseline (:func:`views_baseline_m`, metres); warns with :class:`PassiveViewsWarning`
    when it is too short to triangulate anything (``<= MIN_BASELINE_M``)."""
    frames = sorted(frame_ids)
    baseline = views_baseline_m(episode, frames)
    if baseline <= MIN_BASELINE_M:
        warnings.warn(PassiveViewsWarning(
            f"the {len(frames)} passive view(s) share one camera centre (baseline {baseline:.3f} m), so "
            f"nothing can be triangulated; use --passive-views 2 or more (frames 1 and 2 are 1 m left "
            f"and right of frame 0)"), stacklevel=stacklevel)
    return baseline
