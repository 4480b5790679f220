"""The scan guard: an action filter a trained heading policy may act through, built from its own
``scan`` observation (docs/nbv.md, "The scan guard").

Under the heading motion (``Discrete(headings x len(strides_m))``, action ``a = S k + d``: turn by
``360 k / headings`` degrees, then stride ``strides_m[d]`` metres forward), the guard forbids a
stride longer than the free distance the ``scan`` observation shows in the stride's direction,
less a margin: the least of the bin the stride points into and its two neighbours, each projected
onto the stride's direction (a wall square to the stride, seen at an angle, is that much nearer
along it). It also forbids the headings ``closed`` names: the agent's memory of the moves it saw
blocked (its ``blocked`` observation) from where it stands. The scan is the free distance per
egocentric bin from the depth of the captures taken near the camera (0 where nothing was seen
there), so the guard reads nothing the policy does not observe: unlike ``action_masks()``, which
reads the scene's wall geometry, it is not privileged. Where no bin has depth it forbids nothing,
and turning in place (stride 0) is always allowed.

The scan costs coverage where it is wrong: its free distance ends at furniture the camera would pass
over as well as at walls. So a policy may hold it back (``scan_guard_after_blocked`` in its
``nbv_config.json``): until the episode has seen that many blocked moves the guard forbids only the
closed headings (``by_scan=False``), and from then on it also judges by the scan.
"""

from __future__ import annotations

from typing import Collection, Sequence

import numpy as np

from spatialscout_gym.nbv.config import NBVConfig

__all__ = ["scan_guard_mask", "heading_index", "closed_headings", "BLOCKED_RADIUS_M"]

BLOCKED_RADIUS_M = 0.25
"""A move seen blocked closes its heading within this floor distance of where it was tried, metres."""


def heading_index(turn_deg: float, config: NBVConfig, tolerance_deg: float = 15.0) -> int | None:
    """The heading action index ``k`` whose turn is ``turn_deg`` (left +, within ``tolerance_deg``),
    None when no heading turns that way."""
    step = 360.0 / int(config.headings)
    k = int(round(turn_deg / step)) % int(config.headings)
    off = (turn_deg - k * step + 180.0) % 360.0 - 180.0
    return k if abs(off) <= tolerance_deg else None


def closed_headings(blocked_from: Sequence[tuple[np.ndarray, float]], position_world: np.ndarray,
                    yaw_deg: float, config: NBVConfig) -> set[int]:
    """The heading indices whose moves were seen blocked from within :data:`BLOCKED_RADIUS_M` of
    ``position_world`` (world frame, metres), relative to the camera's world yaw ``yaw_deg``.

    ``blocked_from`` holds, for each move the episode saw blocked, the camera's world position and
    yaw (degrees) after it: a blocked move still turns the camera (NBV-v2), so after one the camera
    faces the way it could not go."""
    here = np.asarray(position_world, float)
    return {k for where, yaw in blocked_from
            if np.linalg.norm(np.asarray(where, float)[:2] - here[:2]) <= BLOCKED_RADIUS_M
            and (k := heading_index(yaw - float(yaw_deg), config)) is not None}


def scan_guard_mask(scan: np.ndarray, config: NBVConfig, margin_m: float,
                    closed: Collection[int] = (), by_scan: bool = True) -> np.ndarray:
    """Shape (n,) bool, one per heading action: True where the guard allows it.

    Parameters
    ----------
    scan : array, shape (scan_bins,)
        The ``scan`` observation (free distance / ``scan_range_m`` per egocentric bin, bin 0 ahead,
        counter-clockwise; 0 = unknown).
    config : NBVConfig
        The policy's settings (``motion`` must be ``"heading"``).
    margin_m : float
        Metres kept between the stride's end and the free distance the scan shows (>= 0).
    closed : collection of int
        Heading indices whose strides are forbidden whatever the scan shows (moves seen blocked
        from here).
    by_scan : bool
        Judge the strides by the scan (default); False: forbid only the ``closed`` headings' strides.
    """
    if config.motion != "heading":
        raise ValueError(f"the scan guard needs the heading motion, got motion {config.motion!r}")
    if not margin_m >= 0:
        raise ValueError(f"the scan guard's margin must be >= 0 metres, got {margin_m!r}")
    bins = int(config.scan_bins)
    if bins < 1 or np.shape(scan) != (bins,):
        raise ValueError(f"the scan guard needs the scan observation of {bins} bins, got shape {np.shape(scan)}")
    strides = np.asarray(config.strides_m, float)
    headings = int(config.headings)
    free = np.asarray(scan, float) * float(config.scan_range_m)
    width = 360.0 / bins
    allowed = np.ones(headings * len(strides), bool)
    for k in range(headings):
        rows = slice(k * len(strides), (k + 1) * len(strides))
        if k in closed:
            allowed[rows] = strides == 0
            continue
        if not by_scan:
            continue
        turn = 360.0 * k / headings                       # left +, egocentric, the bin it points into
        b = int(np.floor(((turn + width / 2) % 360.0) / width)) % bins
        along = [free[i % bins] * np.cos(np.radians(width * j)) for i, j in ((b, 0), (b - 1, 1), (b + 1, 1))
                 if free[i % bins] > 0]
        if not along:                                     # nothing seen that way: the guard cannot say
            continue
        allowed[rows] = (strides == 0) | (strides + margin_m <= min(along))
    return allowed
