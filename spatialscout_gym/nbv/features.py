"""What an NBV policy observes, built from the captures of an episode: the free space ahead of a
capture (:func:`depth_rays`), the memory of where and how captures were taken (:class:`ViewHistory`:
the ``sectors``, ``map`` and ``scan`` features) and the observation dict (:func:`nbv_observation`).
Positions are task-frame metres (docs/protocol.md section 2), angles degrees."""

from __future__ import annotations

import numpy as np

from spatialscout_gym.episode.tools import PITCH_LIMIT_DEG, SUBMIT_MARGIN_M
from spatialscout_gym.nbv.config import MAP_CHANNELS, N_SECTORS, NBVConfig

__all__ = ["ViewHistory", "depth_rays", "nbv_observation", "resize_image", "yaw_sector"]

def resize_image(image: np.ndarray, size: int) -> np.ndarray:
    """Area-resize an (H, W, 3) uint8 image to (size, size, 3) pixels (block mean where the size
    divides it, else bilinear)."""
    h, w = image.shape[:2]
    if (h, w) == (size, size):
        return image.copy()
    if h % size == 0 and w % size == 0:
        fh, fw = h // size, w // size
        blocks = image.reshape(size, fh, size, fw, 3).astype(np.float32).mean(axis=(1, 3))
        return np.rint(blocks).astype(np.uint8)
    from PIL import Image
    return np.asarray(Image.fromarray(image).resize((size, size), Image.Resampling.BILINEAR), dtype=np.uint8)


def depth_rays(depth_m: np.ndarray, fov_deg: float, columns: int = 16) -> tuple[np.ndarray, np.ndarray]:
    """Free space ahead of a capture, from its depth: ``(angles_deg, free_m)``, each (columns,).

    The central band of rows (35-65% of the height) is split into ``columns`` vertical strips;
    a strip's free distance is the median range (depth / cos of the strip's angle) of its hits,
    metres, or infinity where nothing was hit. ``angles_deg`` is each strip's horizontal angle
    from the optical axis (left +), for a horizontal field of view ``fov_deg``.
    """
    depth = np.asarray(depth_m, float)
    h, w = depth.shape
    band = depth[int(0.35 * h):int(0.65 * h) + 1]
    edges = np.linspace(0, w, int(columns) + 1).round().astype(int)
    f = (w / 2.0) / np.tan(np.deg2rad(float(fov_deg)) / 2.0)
    centres = (edges[:-1] + edges[1:]) / 2.0
    angles = np.arctan((w / 2.0 - centres) / f)
    n = int(columns)
    if w % n == 0:   # equal strips: all medians from one sort (misses sorted last as infinity)
        strips = band.reshape(band.shape[0], n, w // n).transpose(1, 0, 2).reshape(n, -1)
        k = (strips > 0).sum(axis=1)
        ordered = np.sort(np.where(strips > 0, strips, np.inf), axis=1)
        lo, hi = ordered[np.arange(n), np.maximum(k - 1, 0) // 2], ordered[np.arange(n), k // 2 % strips.shape[1]]
        median = np.where(k % 2 == 1, lo, (lo + hi) / 2.0)
        free = np.where(k > 0, median / np.cos(angles), np.inf)
        return np.rad2deg(angles), free
    free = np.full(n, np.inf)
    for i in range(n):
        hits = band[:, edges[i]:edges[i + 1]]
        hits = hits[hits > 0]
        if hits.size:
            free[i] = float(np.median(hits)) / np.cos(angles[i])
    return np.rad2deg(angles), free


def _bin_medians(values: np.ndarray, bins: np.ndarray, n: int) -> np.ndarray:
    """Shape (n,) float64: ``np.median(values[bins == k])`` for every bin k that holds a value, 0
    for the others; one sort for all bins instead of a median per bin (the same numbers: the
    middle value, or the mean of the two middle values, NaN where a bin holds a NaN)."""
    counts = np.bincount(bins, minlength=n)
    order = np.lexsort((values, bins))                 # by bin, then by value (NaN last in a bin)
    ordered = values[order]
    starts = np.cumsum(counts) - counts
    full = counts > 0
    lo = ordered[(starts + np.maximum(counts - 1, 0) // 2)[full]]
    hi = ordered[(starts + counts // 2)[full]]
    out = np.zeros(n)
    out[full] = np.where(counts[full] % 2 == 1, lo, (lo + hi) / 2.0)
    nan = np.isnan(values)
    if nan.any():                                      # np.median's answer for a bin with a NaN
        out[np.unique(bins[nan])] = np.nan
    return out


def yaw_sector(yaw_deg: float) -> int:
    """The 45-degree yaw sector (0-7, counter-clockwise, sector 0 centred on yaw 0) of a heading in
    degrees: the sector index of the ``sectors`` feature."""
    return int(np.floor(((yaw_deg + 22.5) % 360.0) / 45.0)) % N_SECTORS


class ViewHistory:
    """Where and with which heading every capture of the episode was taken: the memory behind the
    ``sectors`` and ``map`` observations.

    Positions are task-frame metres (docs/protocol.md section 2), of which only the x-y plane is used;
    headings are yaws relative to the initial heading, degrees. ``sectors`` counts captures per
    ``cell_m`` floor cell and 45-degree yaw sector.
    """

    def __init__(self, cell_m: float) -> None:
        self.cell_m = float(cell_m)
        self._visits: dict[tuple[int, int], np.ndarray] = {}
        self._xy: list[tuple[float, float]] = []
        self._yaw: list[float] = []
        self._rays: list[tuple[np.ndarray, np.ndarray]] = []   # per capture: heading (deg), free (m)

    def _cell(self, position_task: np.ndarray) -> tuple[int, int]:
        return (int(np.floor(float(position_task[0]) / self.cell_m)),
                int(np.floor(float(position_task[1]) / self.cell_m)))

    def record(self, position_task: np.ndarray, yaw_deg: float, rays: tuple[np.ndarray, np.ndarray] | None = None) -> None:
        """Note a capture at ``position_task`` (metres) with heading ``yaw_deg``; ``rays`` is its
        :func:`depth_rays` (angles relative to the heading, free distances), for ``scan``."""
        counts = self._visits.setdefault(self._cell(position_task), np.zeros(N_SECTORS))
        counts[yaw_sector(yaw_deg)] += 1
        self._xy.append((float(position_task[0]), float(position_task[1])))
        self._yaw.append(float(yaw_deg))
        empty = (np.zeros(0), np.zeros(0))
        self._rays.append(empty if rays is None else (np.asarray(rays[0], float) + float(yaw_deg),
                                                      np.asarray(rays[1], float)))

    def scan(self, position_task: np.ndarray, yaw_deg: float, config: NBVConfig) -> np.ndarray:
        """Shape (``scan_bins``,): a pseudo laser scan, in [0, 1]. Bin k covers egocentric headings
        ``[k - 1/2, k + 1/2] * 360 / scan_bins`` degrees (k = 0 ahead, counter-clockwise); its value
        is the median free distance (:func:`depth_rays`) of the rays of captures taken within
        ``scan_radius_m`` of ``position_task`` that fall in it, / ``scan_range_m``, clipped to 1;
        0 where no such ray exists (unknown)."""
        n = int(config.scan_bins)
        out = np.zeros(n, np.float32)
        if not self._xy:
            return out
        d = np.linalg.norm(np.asarray(self._xy, float) - np.asarray(position_task, float)[:2], axis=1)
        near = [self._rays[i] for i in np.flatnonzero(d <= float(config.scan_radius_m))]
        if not near:
            return out
        heading = np.concatenate([r[0] for r in near]) - float(yaw_deg)
        free = np.minimum(np.concatenate([r[1] for r in near]), float(config.scan_range_m))
        bins = np.floor(((heading + 180.0 / n) % 360.0) / (360.0 / n)).astype(int) % n
        out[:] = _bin_medians(free, bins, n) / float(config.scan_range_m)
        return np.clip(out, 0.0, 1.0)

    def sectors(self, position_task: np.ndarray, yaw_deg: float) -> np.ndarray:
        """Shape (8,): 1 where a capture was taken in the cell of ``position_task`` with a heading
        in sector k, egocentric (k = 0 the current heading, counter-clockwise in 45-degree steps)."""
        counts = self._visits.get(self._cell(position_task), np.zeros(N_SECTORS))
        return np.roll(counts > 0, -yaw_sector(yaw_deg)).astype(np.float32)

    def visit_map(self, position_task: np.ndarray, yaw_deg: float, radius_m: float, config: NBVConfig) -> np.ndarray:
        """The egocentric top-down ``map``, shape (3, M, M) with M = ``config.map_cells``, in [0, 1].

        Cell (i, j) is centred ``((M - 1) / 2 - i) * s`` metres ahead of the camera and
        ``(j - (M - 1) / 2) * s`` metres to its right (s = ``map_cell_m``; row 0 is farthest ahead,
        the camera sits at the centre, heading up). Channels (:data:`MAP_CHANNELS`):

        * ``visited``: captures taken in the cell, / 3, clipped to 1;
        * ``viewed``: captures whose horizontal view wedge (``view_fov_deg`` wide, ``view_range_m``
          deep, walls ignored) holds the cell centre, / 4, clipped to 1;
        * ``inside``: 1 where the cell centre is within the search radius ``radius_m`` + 0.5 m of
          the task origin (the public extent of the scene, docs/protocol.md section 1).
        """
        m, s = int(config.map_cells), float(config.map_cell_m)
        off = (np.arange(m) - (m - 1) / 2.0) * s
        yaw = np.deg2rad(float(yaw_deg))
        ahead, right = np.array([np.cos(yaw), np.sin(yaw)]), np.array([np.sin(yaw), -np.cos(yaw)])
        fwd, rgt = -off[:, None, None], off[None, :, None]          # (M, 1, 1), (1, M, 1)
        centres = np.asarray(position_task, float)[:2] + fwd * ahead + rgt * right   # (M, M, 2)
        out = np.zeros((len(MAP_CHANNELS), m, m), np.float32)
        if self._xy:
            caps = np.asarray(self._xy, float)                           # (K, 2)
            d = caps - np.asarray(position_task, float)[:2]
            row = np.floor(((m / 2.0) * s - d @ ahead) / s).astype(int)
            col = np.floor((d @ right + (m / 2.0) * s) / s).astype(int)
            ok = (row >= 0) & (row < m) & (col >= 0) & (col < m)
            np.add.at(out[0], (row[ok], col[ok]), 1.0 / 3.0)
            v = centres[:, :, None, :] - caps[None, None, :, :]         # (M, M, K, 2)
            dist = np.linalg.norm(v, axis=-1)
            rel = np.rad2deg(np.arctan2(v[..., 1], v[..., 0])) - np.asarray(self._yaw)
            rel = (rel + 180.0) % 360.0 - 180.0
            seen = (dist <= config.view_range_m) & ((np.abs(rel) <= config.view_fov_deg / 2.0) | (dist < s))
            out[1] = seen.sum(axis=-1) / 4.0
        out[2] = np.linalg.norm(centres, axis=-1) <= float(radius_m) + SUBMIT_MARGIN_M
        return np.clip(out, 0.0, 1.0)


def nbv_observation(config: NBVConfig, image: np.ndarray, position_task: np.ndarray, yaw_deg: float, pitch_deg: float,
                    radius_m: float, coverage: float, images_left_fraction: float,
                    history: ViewHistory) -> dict[str, np.ndarray]:
    """The observation of :func:`nbv_observation_space` (copies, never views): the camera's
    task-frame pose (metres, degrees), the search radius (metres), the inventory fraction mapped
    so far, the image-budget fraction left and the episode's :class:`ViewHistory`."""
    scale = float(radius_m) + SUBMIT_MARGIN_M
    pos = np.clip(np.asarray(position_task, float) / scale, -1.0, 1.0)
    yaw = np.deg2rad(float(yaw_deg))
    pose_feat = np.array([*pos, np.sin(yaw), np.cos(yaw), float(pitch_deg) / PITCH_LIMIT_DEG], np.float32)
    cov = np.array([coverage, images_left_fraction], np.float32)
    return {"image": resize_image(np.asarray(image), int(config.obs_size)),
            "pose": np.clip(pose_feat, -1.0, 1.0),
            "coverage": np.clip(cov, 0.0, 1.0),
            "sectors": history.sectors(position_task, yaw_deg),
            "map": history.visit_map(position_task, yaw_deg, radius_m, config),
            **({"scan": history.scan(position_task, yaw_deg, config)} if int(config.scan_bins) > 0 else {})}


