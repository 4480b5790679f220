"""Walls that stop the camera in the NBV layer (``walls=True``; ``SpatialScout/NBV-v2``'s default).

The scene's walls are its objects of category ``"Wall"`` (the room shells of
:func:`~spatialscout_gym.scenes.rooms.build_shell`: one box part per wall piece, with door openings
cut out and a lintel above each door), and its floor is the union of the footprints of its
``"Floor"`` objects (one per room). A camera move, the straight world-frame segment from the
camera centre to where the move would put it, is blocked when

* it enters a wall box inflated by ``margin_m`` on every side (a segment starting inside an
  inflated box, e.g. a start pose close to a wall, is tested against that box uninflated, so the
  camera can always back away); the rooms' floor and ceiling slabs (categories ``"Floor"`` and
  ``"Ceiling"``) are such boxes too, so a vertical move (``up``/``down``, a continuous action's
  third component) stops ``margin_m`` short of the floor and the ceiling, or
* it ends outside every floor footprint (x-y), e.g. through a gap the walls leave.

A blocked move does not happen at all: the camera stays where it was (no stopping short), so a
blocked step is the rotation alone. Scenes without walls or floors (none in the catalog) block
nothing of that kind. Metres, world frame (z up).
"""

from __future__ import annotations

import numpy as np

from spatialscout_gym.core.frames import CameraPose
from spatialscout_gym.core.spec import SceneSpec, part_world_aabb
from spatialscout_gym.nbv.config import BLOCK_CAUSES

__all__ = ["WallMap", "move_end_world"]


def _part_aabbs(spec: SceneSpec, category: str) -> np.ndarray:
    """World AABBs ``(n, 2, 3)`` (low, high corners) of the box parts of ``category``'s objects."""
    out = []
    for obj in spec.private.objects:
        if obj.category != category:
            continue
        for part in obj.parts:
            if part.shape != "box" or part.half_size is None:
                continue
            out.append(part_world_aabb(part))
    return np.asarray(out, float).reshape(-1, 2, 3)


def move_end_world(pose: CameraPose, move_m: np.ndarray) -> np.ndarray:
    """Where ``move_camera(forward, right, up)`` = ``move_m`` (metres) puts the camera at ``pose``:
    forward and right along the horizontal heading, up along world z (docs/protocol.md section 4)."""
    f, r, u = (float(v) for v in np.asarray(move_m, float).reshape(3))
    return pose.position_world + f * pose.horizontal_forward_world + r * pose.horizontal_right_world \
        + np.array([0.0, 0.0, u])


class WallMap:
    """A scene's walls and floor, for the blocked-move test (see the module docstring).

    Parameters
    ----------
    walls : ndarray, shape (n, 2, 3)
        Wall boxes' world AABBs (low, high), metres.
    floors : ndarray, shape (m, 2, 3)
        Floor boxes' world AABBs: their x-y footprint is where a move may end, and the boxes
        themselves block like walls (a move down through the floor).
    ceilings : ndarray, shape (k, 2, 3), optional
        Ceiling boxes' world AABBs; they block like walls (a move up through the ceiling).
    margin_m : float
        Clearance kept from a wall face, metres.
    """

    def __init__(self, walls: np.ndarray, floors: np.ndarray, margin_m: float = 0.1,
                 ceilings: np.ndarray | None = None) -> None:
        self.walls = np.asarray(walls, float).reshape(-1, 2, 3)
        self.floors = np.asarray(floors, float).reshape(-1, 2, 3)
        self.ceilings = np.zeros((0, 2, 3)) if ceilings is None else np.asarray(ceilings, float).reshape(-1, 2, 3)
        self.margin_m = float(margin_m)
        # every box a move may not enter: walls, and the floor and ceiling slabs (the vertical check)
        self.solid = np.concatenate([self.walls, self.floors, self.ceilings])
        # the cause (index into BLOCK_CAUSES) of each box in self.solid
        self._kind = np.repeat([0, 1, 2], [len(self.walls), len(self.floors), len(self.ceilings)])

    @classmethod
    def from_spec(cls, spec: SceneSpec, margin_m: float = 0.1) -> "WallMap":
        """The walls (category ``"Wall"``), floors (``"Floor"``) and ceilings (``"Ceiling"``) of ``spec``."""
        return cls(_part_aabbs(spec, "Wall"), _part_aabbs(spec, "Floor"), margin_m, _part_aabbs(spec, "Ceiling"))

    def on_floor(self, point_world: np.ndarray) -> bool:
        """Whether ``point_world``'s x-y lies over a floor footprint (True when the scene has none)."""
        if not len(self.floors):
            return True
        xy = np.asarray(point_world, float)[:2]
        return bool(np.any(np.all((self.floors[:, 0, :2] <= xy) & (xy <= self.floors[:, 1, :2]), axis=1)))

    def hits_wall(self, start_world: np.ndarray, end_world: np.ndarray) -> bool:
        """Whether the segment enters a wall, floor or ceiling box inflated by the margin (uninflated
        for a box the segment starts inside); all boxes at once (slab test)."""
        return bool(np.any(self._hits(start_world, end_world)[0]))

    def _hits(self, start_world: np.ndarray, end_world: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Per box of :attr:`solid`: whether the segment enters it (see :meth:`hits_wall`), and the
        segment parameter in [0, 1] where it does (its entry ``t_in``)."""
        boxes = self.solid
        if not len(boxes):
            return np.zeros(0, bool), np.zeros(0)
        s = np.asarray(start_world, float)
        d = np.asarray(end_world, float) - s
        lo, hi = boxes[:, 0] - self.margin_m, boxes[:, 1] + self.margin_m
        inside = np.all((lo <= s) & (s <= hi), axis=1)
        lo = np.where(inside[:, None], boxes[:, 0], lo)
        hi = np.where(inside[:, None], boxes[:, 1], hi)
        with np.errstate(divide="ignore", invalid="ignore"):
            t1, t2 = (lo - s) / d, (hi - s) / d
        still = d == 0   # no motion on that axis: inside the slab for all t, or never
        within = (lo <= s) & (s <= hi)
        t_in = np.where(still, np.where(within, -np.inf, np.inf), np.minimum(t1, t2)).max(axis=1)
        t_out = np.where(still, np.where(within, np.inf, -np.inf), np.maximum(t1, t2)).min(axis=1)
        return (t_in <= t_out) & (t_out >= 0.0) & (t_in <= 1.0), t_in

    def blocks(self, pose: CameraPose, move_m: np.ndarray) -> bool:
        """Whether ``move_camera(move_m)`` from ``pose`` is blocked."""
        end = move_end_world(pose, move_m)
        return self.hits_wall(pose.position_world, end) or not self.on_floor(end)

    def block_cause(self, pose: CameraPose, move_m: np.ndarray) -> str | None:
        """What blocks ``move_camera(move_m)`` from ``pose`` (one of :data:`BLOCK_CAUSES`: the kind
        of the box the segment enters first, else ``"off_floor"``), or None when it is not
        blocked; None exactly when :meth:`blocks` is False."""
        end = move_end_world(pose, move_m)
        hit, t_in = self._hits(pose.position_world, end)
        if np.any(hit):
            return BLOCK_CAUSES[int(self._kind[hit][np.argmin(t_in[hit])])]
        return None if self.on_floor(end) else "off_floor"
