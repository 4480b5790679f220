"""``oracle-silhouette``: marks what a careful model would mark.

``oracle-click`` marks one *surface* point in several views, so its triangulated points sit on the
objects' fronts. A careful model looking at a picture points at the middle of the object it sees.
This agent does that with perfect recognition: for each target it marks the **centre of the
target's visible silhouette** (the mean pixel of its instance mask, from the privileged
segmentation of its own captures) in two or more views chosen for a **wide baseline**, triangulates
those marks with the tool and submits the point. Everything else (view plan, budgets, tools) is
``oracle-click``'s (:mod:`spatialscout_gym.baselines.oracle`), so the two rows differ only in what
is marked: the gap between them is what choosing the point costs, and this row is a ceiling of the
ten tools with perfect recognition and a plain "middle of what I see" rule.

**Views for one target.** Candidate views show at least ``min_pixels`` of its mask; views whose
mask touches the image border (the silhouette is cut off, so its centre is biased) are used only
when fewer than two others exist. The anchor is the view where the target is largest; each further
view is the one whose centre ray makes the widest smallest angle with the rays chosen so far, among
views whose camera centre is at least ``min_baseline_m`` from every chosen one, until
``max_views`` views or no candidate adds at least ``min_angle_deg``. Fewer than two views: the
target is left out.

Silhouette centres of the same object seen from different sides are not images of one 3D point,
so the triangulated point is near, not at, the box centre (closer for compact objects); the
triangulation residual measures the disagreement.
"""

from __future__ import annotations

import numpy as np

from spatialscout_gym.baselines.oracle import OracleClickAgent
from spatialscout_gym.baselines.registry import register_agent
from spatialscout_gym.core.camera import pixel_to_ray_world

__all__ = ["OracleSilhouetteAgent"]


@register_agent("oracle-silhouette", kind="privileged")
class OracleSilhouetteAgent(OracleClickAgent):
    """Triangulates the centre of each target's visible silhouette across wide-baseline views.

    Parameters
    ----------
    sweep, pitch_deg, min_pixels : see :class:`~spatialscout_gym.baselines.oracle.OracleClickAgent`.
    max_views : int
        Marks per triangulation (2 or more).
    min_baseline_m : float
        Camera centres of two chosen views are at least this far apart, metres.
    min_angle_deg : float
        A further view is added only when its centre ray is at least this many degrees from every
        chosen view's.
    """

    def __init__(self, sweep: int = 6, pitch_deg: float = -20.0, min_pixels: int = 4, max_views: int = 4,
                 min_baseline_m: float = 0.3, min_angle_deg: float = 5.0) -> None:
        if int(max_views) < 2:
            raise ValueError(f"max_views must be >= 2 (a triangulation needs two marks), got {max_views}")
        super().__init__(sweep=sweep, pitch_deg=pitch_deg, min_pixels=min_pixels, max_views=max_views,
                         min_baseline_m=min_baseline_m)
        self.min_angle_deg = float(min_angle_deg)

    def _marks(self, target: int, seen: list[int], views, frames, K, edt) -> list[dict] | None:
        """Silhouette-centre marks of ``target`` in wide-baseline views (``seen``: largest first)."""
        info = {}
        for fid in seen:
            seg = views[fid][0]
            vs, us = np.nonzero(seg == target)
            border = bool(us.min() == 0 or vs.min() == 0 or us.max() == K.width - 1 or vs.max() == K.height - 1)
            u, v = float(us.mean()), float(vs.mean())
            _, ray = pixel_to_ray_world(K, frames[fid].pose, u, v)
            info[fid] = (u, v, np.asarray(ray, float).reshape(3) / np.linalg.norm(ray), border)
        whole = [f for f in seen if not info[f][3]]
        pool = whole if len(whole) >= 2 else list(seen)
        chosen = [pool[0]]
        centre = {f: frames[f].pose.position_world for f in pool}
        while len(chosen) < self.max_views:
            best, best_angle = None, self.min_angle_deg
            for f in pool:
                if f in chosen or any(np.linalg.norm(centre[f] - centre[c]) < self.min_baseline_m for c in chosen):
                    continue
                angle = min(np.degrees(np.arccos(np.clip(info[f][2] @ info[c][2], -1.0, 1.0))) for c in chosen)
                if angle >= best_angle:
                    best, best_angle = f, angle
            if best is None:
                break
            chosen.append(best)
        if len(chosen) < 2:
            return None
        return [{"frame_id": f, "u": info[f][0], "v": info[f][1]} for f in chosen]
