"""The ``scan`` feature's per-bin medians come from one sort (``features._bin_medians``): the same
numbers, bit for bit, as ``np.median`` of each bin, ties, infinities and NaN included."""

from __future__ import annotations

import numpy as np

from spatialscout_gym.nbv.config import NBVConfig
from spatialscout_gym.nbv.features import ViewHistory, _bin_medians


def test_bin_medians_equal_numpy_median_of_each_bin_bit_for_bit():
    rng = np.random.default_rng(7)
    for case in range(3000):
        n, m = int(rng.integers(1, 13)), int(rng.integers(1, 50))
        values = [rng.random(m) * 6.0, np.round(rng.random(m) * 3.0, 1), np.full(m, 6.0)][case % 3]
        if case % 11 == 0:
            values[rng.integers(m)] = np.nan
        if case % 13 == 0:
            values[rng.integers(m)] = np.inf
        bins = rng.integers(0, n, m)
        expected = np.zeros(n)
        for k in np.unique(bins):
            expected[k] = np.median(values[bins == k])
        assert _bin_medians(values, bins, n).tobytes() == expected.tobytes()


def test_scan_equals_the_per_bin_median_it_documents():
    """A history of captures with many rays per bin (even and odd counts): each bin's value is
    np.median of its free distances / scan_range_m, as ``ViewHistory.scan`` documents."""
    config = NBVConfig()
    rng = np.random.default_rng(3)
    history = ViewHistory(config.cell_m)
    for _ in range(9):
        history.record(rng.random(3) * 0.5, float(rng.uniform(-180, 180)),
                       (np.linspace(-30, 30, 16), np.round(rng.random(16) * 8.0, 2)))
    position, yaw = np.array([0.2, 0.1, 0.0]), 25.0
    heading = np.concatenate([a for a, _ in history._rays]) - yaw
    free = np.minimum(np.concatenate([f for _, f in history._rays]), config.scan_range_m)
    n = config.scan_bins
    bins = np.floor(((heading + 180.0 / n) % 360.0) / (360.0 / n)).astype(int) % n
    expected = np.zeros(n, np.float32)
    for k in np.unique(bins):
        expected[k] = np.median(free[bins == k]) / config.scan_range_m
    got = history.scan(position, yaw, config)
    assert (np.bincount(bins, minlength=n) % 2 == 0).any() and got.tobytes() == np.clip(expected, 0, 1).tobytes()
