"""Uncertainty of Table-3 figures: bootstrap intervals over scenes, paired differences, ranks.

Every Table-3 figure (object-micro and scene-macro: all-target and submitted mean IoU, the
``IoU > 0 / 0.5 / 0.9`` rates, coverage) is a ratio of sums over scored entries, so it is
recomputed exactly from per-scene sums. The resampling unit is the **scene**: an entry's targets
and all its seeds stay together (docs/protocol.md section 6.6 defines the figures).

* :func:`bootstrap_intervals`: 95% percentile intervals from :func:`scipy.stats.bootstrap`
  (``N_RESAMPLES`` resamples of the scenes, seed ``SEED``; the same seed gives the same interval).
* :func:`paired_comparison`: on the (scene, seed) cells two runs share, the difference B - A of
  each figure, its interval from a two-stage bootstrap (:func:`hierarchical_bootstrap`: scenes
  drawn with replacement, then each drawn scene's seeds) and a two-sided paired permutation p-value from
  :func:`scipy.stats.permutation_test` (``permutation_type="samples"``: within each scene the two
  runs' results are swapped; exact when ``2**scenes <= N_RESAMPLES``).
* :func:`rank_intervals`: each run's rank by object-micro all-target mean IoU, and the ranks the
  paired rule allows (:func:`pairwise_separation`: a run's interval spans every rank not excluded by
  a separated run above or below it), so a rank interval and "separated from next" never disagree.

The figures RL papers report (rliable's conventions) take the **episode** as the unit: each
(scene, seed) cell's all-target mean IoU (:func:`episode_scores`).

* :func:`iqm`: the interquartile mean, :func:`scipy.stats.trim_mean` with 25% cut at each end.
* :func:`hierarchical_bootstrap`: percentile interval of a statistic of the pooled episodes over
  two-stage resamples, the scenes (the unit of the benchmark) and then the seeds within each drawn
  scene; :func:`stratified_bootstrap` resamples seeds within fixed scenes only (kept for callers;
  no interval of this module uses it: it leaves out the variation between scenes).
* :func:`iqm_summary` (one run) and :func:`paired_iqm` (B - A on shared cells, the same cells drawn
  for both runs), each with the two-stage interval; :func:`per_scene_differences`.
"""

from __future__ import annotations

import functools

from collections import defaultdict
from typing import Any, Callable, Iterable, Sequence

import numpy as np

from spatialscout_gym.core.scoring import THRESHOLD_KEYS, aggregate

__all__ = ["FIGURES", "N_RESAMPLES", "SEED", "CONFIDENCE", "METHOD", "Cell", "figure_sums",
           "bootstrap_intervals", "paired_comparison", "separated", "rank_intervals", "pairwise_separation",
           "hierarchical_bootstrap", "method_note", "PAIRED_METHOD", "RANK_METHOD",
           "min_p_value", "min_scenes_to_separate", "iqm", "stratified_bootstrap", "episode_scores",
           "iqm_summary", "paired_iqm", "per_scene_differences", "IQM_METHOD", "iqm_method_note", "seed_spread"]

N_RESAMPLES = 9999
SEED = 20260101
CONFIDENCE = 0.95
METHOD = "percentile bootstrap over scenes (scipy.stats.bootstrap)"
PAIRED_METHOD = ("percentile bootstrap over scenes and, within each drawn scene, its seeds (two-stage, numpy "
                 "Generator), the same cells for both runs")
RANK_METHOD = ("rank interval: from 1 + the rows separated above to the rows less those separated below, "
               "'separated' being the paired rule (the difference's interval excludes 0 and its paired "
               "permutation p < 0.05), so ranks and 'separated from next' cannot disagree")

FIGURES: tuple[str, ...] = tuple(
    [f"object_micro.{v}.{k}" for v in ("all", "submitted") for k in ("mean_iou",) + THRESHOLD_KEYS]
    + ["object_micro.coverage"]
    + [f"scene_macro.{v}.{k}" for v in ("all", "submitted") for k in ("mean_iou",) + THRESHOLD_KEYS]
    + ["scene_macro.coverage"])
"""The Table-3 figures, as dotted paths into the scorer's aggregate dict."""

Cell = tuple[str, int]
"""A (scene id, seed) cell: one scored episode."""


def method_note(n_resamples: int = N_RESAMPLES) -> str:
    """One sentence naming the method, for every output that shows an interval."""
    return (f"95% intervals: {METHOD}, {n_resamples} resamples, seed {SEED}; a scene's targets and "
            "seeds are resampled together.")


def _entry_sums(score: Any) -> dict[str, tuple[float, float]]:
    """(numerator, denominator) of every figure for one scored episode (a SceneScore)."""
    n, m = float(score.num_targets), float(score.num_submitted)
    q = float(score.iou.sum())
    h = dict(zip(THRESHOLD_KEYS, (float(x) for x in score.hits.sum(axis=1))))
    num = {"mean_iou": q, **h}
    out = {}
    for view, den in (("all", n), ("submitted", m)):
        for k, v in num.items():
            out[f"object_micro.{view}.{k}"] = (v, den)
            out[f"scene_macro.{view}.{k}"] = (v / den if den else 0.0, 1.0)
    out["object_micro.coverage"] = (m, n)
    out["scene_macro.coverage"] = (m / n if n else 0.0, 1.0)
    return out


def figure_sums(cells: dict[Cell, Any]) -> tuple[list[str], np.ndarray, np.ndarray]:
    """Per-scene sums of every figure's numerator and denominator.

    Parameters
    ----------
    cells : dict
        ``{(scene id, seed): SceneScore}``.

    Returns
    -------
    scenes : list of str
        The clusters, sorted.
    num, den : ndarray, shape (len(FIGURES), len(scenes))
        Figure ``f`` over a set ``S`` of scenes is ``num[f, S].sum() / den[f, S].sum()`` (0 when
        the denominator is 0), exactly the scorer's object-micro and scene-macro figures.
    """
    scenes = sorted({s for s, _ in cells})
    col = {s: i for i, s in enumerate(scenes)}
    num = np.zeros((len(FIGURES), len(scenes)))
    den = np.zeros((len(FIGURES), len(scenes)))
    for (scene, _), score in cells.items():
        sums = _entry_sums(score)
        for f, name in enumerate(FIGURES):
            num[f, col[scene]] += sums[name][0]
            den[f, col[scene]] += sums[name][1]
    return scenes, num, den


def _ratio(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    return np.divide(num, den, out=np.zeros(np.broadcast(num, den).shape), where=den != 0)


def _bootstrap(stat: Callable[[np.ndarray], np.ndarray], n: int, n_resamples: int) -> tuple[float, float]:
    """Percentile interval of ``stat(indices)`` over resamples of ``n`` scenes."""
    from scipy.stats import bootstrap
    res = bootstrap((np.arange(n, dtype=float),), lambda idx, axis=-1: stat(idx.astype(int)), vectorized=True,
                    n_resamples=n_resamples, confidence_level=CONFIDENCE, method="percentile",
                    rng=np.random.default_rng(SEED))
    return float(res.confidence_interval.low), float(res.confidence_interval.high)


def hierarchical_bootstrap(strata: Sequence[int], statistic: Callable[[np.ndarray], np.ndarray],
                           n_resamples: int = N_RESAMPLES) -> tuple[np.ndarray, np.ndarray] | None:
    """Percentile interval of ``statistic`` over two-stage resamples: the scenes drawn with
    replacement (the benchmark's unit), then within each drawn scene its seeds drawn with
    replacement (numpy ``Generator`` seeded with ``SEED``; scipy's bootstrap has no two-stage form).

    Parameters
    ----------
    strata : sequence of int
        Seeds per scene of the pooled data, in order: scene ``k`` holds the positions
        ``sum(strata[:k]) ... sum(strata[:k + 1]) - 1``.
    statistic : callable
        Maps positions, an int array of shape ``(resamples, n)``, to the statistic along the last
        axis (shape ``(resamples,)``, or ``(m, resamples)`` for m statistics at once).

    Returns
    -------
    (low, high) or None
        None with fewer than two scenes (nothing to resample at the benchmark's unit).
    """
    sizes = np.asarray(strata, dtype=int)
    if len(sizes) < 2:
        return None
    offsets = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    rng = np.random.default_rng(SEED)
    scenes = rng.integers(0, len(sizes), (n_resamples, len(sizes)))
    if (sizes == sizes[0]).all():         # every scene on as many seeds: one array of draws
        seeds = rng.integers(0, sizes[0], (n_resamples, len(sizes), sizes[0]))
        vals = np.asarray(statistic((offsets[scenes][..., None] + seeds).reshape(n_resamples, -1)))
    else:
        # Every drawn scene gets sizes.max() seed slots, of which its first sizes[k] count; a
        # resample's length is the sum of its scenes' sizes, so the resamples of one length form
        # one array and the statistic is called once per length (a few calls, not one per resample).
        drawn = sizes[scenes]                                               # (resamples, scenes)
        slots = np.arange(sizes.max())
        seeds = np.floor(rng.random((n_resamples, len(sizes), len(slots))) * drawn[..., None]).astype(int)
        keep = slots < drawn[..., None]
        positions = (offsets[scenes][..., None] + seeds)[keep]             # row-major: each resample in turn
        lengths = drawn.sum(-1)
        starts = np.concatenate([[0], np.cumsum(lengths)[:-1]])
        parts: dict[int, np.ndarray] = {}
        for length in np.unique(lengths):
            rows = np.flatnonzero(lengths == length)
            idx = positions[starts[rows][:, None] + np.arange(length)]    # (rows, length)
            parts[int(length)] = np.asarray(statistic(idx))
        first = next(iter(parts.values()))
        vals = np.empty(first.shape[:-1] + (n_resamples,))
        for length, part in parts.items():
            vals[..., lengths == length] = part
    q = 100 * (1 - CONFIDENCE) / 2
    low, high = np.percentile(vals, [q, 100 - q], axis=-1)
    return low, high


def bootstrap_intervals(cells: dict[Cell, Any], n_resamples: int = N_RESAMPLES) -> dict:
    """95% interval of every Table-3 figure over scenes.

    Returns
    -------
    dict
        ``{"method", "n_resamples", "seed", "confidence", "scenes": n, "figures": {name:
        {"estimate", "low", "high"}}}``; ``low`` and ``high`` are None with fewer than two scenes.
    """
    scenes, num, den = figure_sums(cells)
    figures = {}
    for f, name in enumerate(FIGURES):
        est = float(_ratio(num[f].sum(), den[f].sum()))
        low = high = None
        if len(scenes) >= 2:
            def figure_stat(idx: np.ndarray, f: int = f) -> np.ndarray:
                return _ratio(num[f][idx].sum(-1), den[f][idx].sum(-1))
            low, high = _bootstrap(figure_stat, len(scenes), n_resamples)
        figures[name] = {"estimate": est, "low": low, "high": high}
    return {"method": METHOD, "n_resamples": n_resamples, "seed": SEED, "confidence": CONFIDENCE,
            "scenes": len(scenes), "figures": figures}


def paired_comparison(a: dict[Cell, Any], b: dict[Cell, Any], n_resamples: int = N_RESAMPLES,
                      figures: Sequence[str] = FIGURES) -> dict:
    """B - A on the (scene, seed) cells both runs scored.

    Returns
    -------
    dict
        ``{"cells": [[scene, seed], ...], "scenes": n, "method", "n_resamples", "seed",
        "figures": {name: {"a", "b", "difference", "low", "high", "p_value"}}}``; the interval
        and p-value are None with fewer than two shared scenes.
    """
    from scipy.stats import permutation_test
    shared = sorted(set(a) & set(b))
    sa, na, da = figure_sums({c: a[c] for c in shared})
    _, nb, db = figure_sums({c: b[c] for c in shared})
    out: dict[str, Any] = {"cells": [[s, k] for s, k in shared], "scenes": len(sa), "method": PAIRED_METHOD,
                           "test": "paired permutation over scenes (scipy.stats.permutation_test)",
                           "n_resamples": n_resamples, "seed": SEED, "figures": {}}
    if not shared:
        return out
    strata = [sum(1 for c in shared if c[0] == sc) for sc in sa]       # seeds per shared scene, in order
    ea = np.array([[_entry_sums(a[c])[name] for name in FIGURES] for c in shared])   # (cells, figures, 2)
    eb = np.array([[_entry_sums(b[c])[name] for name in FIGURES] for c in shared])
    for name in figures:
        f = FIGURES.index(name)
        num = np.concatenate([na[f], nb[f]])
        den = np.concatenate([da[f], db[f]])
        n = len(sa)

        def diff(ix: np.ndarray, iy: np.ndarray) -> np.ndarray:
            ix, iy = ix.astype(int), iy.astype(int)
            return _ratio(num[iy].sum(-1), den[iy].sum(-1)) - _ratio(num[ix].sum(-1), den[ix].sum(-1))

        def cell_diff(idx: np.ndarray, f: int = f) -> np.ndarray:
            return (_ratio(eb[idx, f, 0].sum(-1), eb[idx, f, 1].sum(-1))
                    - _ratio(ea[idx, f, 0].sum(-1), ea[idx, f, 1].sum(-1)))

        ra, rb = float(_ratio(na[f].sum(), da[f].sum())), float(_ratio(nb[f].sum(), db[f].sum()))
        row = {"a": ra, "b": rb, "difference": rb - ra, "low": None, "high": None, "p_value": None}
        if n >= 2:
            ia, ib = np.arange(n, dtype=float), np.arange(n, 2 * n, dtype=float)
            ci = hierarchical_bootstrap(strata, cell_diff, n_resamples)
            assert ci is not None        # two or more scenes
            row["low"], row["high"] = float(ci[0]), float(ci[1])
            test = permutation_test((ia, ib), lambda x, y, axis=-1: diff(x, y), permutation_type="samples",
                                    vectorized=True, n_resamples=n_resamples, alternative="two-sided",
                                    rng=np.random.default_rng(SEED))
            row["p_value"] = float(test.pvalue)
        out["figures"][name] = row
    return out


def _paired_test(x: np.ndarray, y: np.ndarray, n_resamples: int = N_RESAMPLES) -> float:
    """The p-value of :func:`paired_comparison`'s test (two-sided paired permutation over scenes)
    for the mean difference of per-scene figures ``x`` and ``y``."""
    from scipy.stats import permutation_test
    test = permutation_test((x, y), lambda a, b, axis=-1: np.mean(b - a, axis=axis), permutation_type="samples",
                            vectorized=True, n_resamples=n_resamples, alternative="two-sided",
                            rng=np.random.default_rng(SEED))
    return float(test.pvalue)


@functools.lru_cache(maxsize=64)
def min_p_value(scenes: int, n_resamples: int = N_RESAMPLES) -> float:
    """The smallest p-value the paired permutation test over ``scenes`` scenes can give: its value
    when B beats A on every scene by distinct margins (no arrangement is more extreme). With few
    scenes the test is exact over the 2^scenes swaps and cannot go below 2 / 2^scenes."""
    return _paired_test(np.zeros(scenes), np.arange(1.0, scenes + 1.0), n_resamples)


def min_scenes_to_separate(alpha: float = 1 - CONFIDENCE, n_resamples: int = N_RESAMPLES) -> int:
    """The fewest shared scenes with which the paired test can reach p < ``alpha`` at all."""
    n = 2
    while min_p_value(n, n_resamples) >= alpha:
        n += 1
    return n


def separated(fig: dict, alpha: float = 1 - CONFIDENCE) -> bool:
    """A paired figure separates the runs: its interval excludes 0 and its p-value is below
    ``alpha`` (with few scenes the percentile interval alone is too narrow to trust)."""
    if fig.get("low") is None or fig.get("p_value") is None:
        return False
    return (fig["low"] > 0 or fig["high"] < 0) and fig["p_value"] < alpha


def pairwise_separation(runs: dict[str, dict[Cell, Any]], figure: str = "object_micro.all.mean_iou",
                        n_resamples: int = N_RESAMPLES) -> dict[tuple[str, str], dict]:
    """:func:`paired_comparison` of ``figure`` for every pair of runs on the cells **every** run
    shares: ``{(a, b): {"difference" (B - A), "low", "high", "p_value", "separated", "cells"}}``,
    both orders (the reverse pair negated)."""
    names = list(runs)
    shared = set.intersection(*(set(r) for r in runs.values())) if runs else set()
    out: dict[tuple[str, str], dict] = {}
    for i, x in enumerate(names):
        for y in names[i + 1:]:
            pair = paired_comparison({c: runs[x][c] for c in shared}, {c: runs[y][c] for c in shared},
                                     n_resamples, figures=(figure,))
            fig = pair["figures"].get(figure) or {"difference": None, "low": None, "high": None, "p_value": None}
            row = {k: fig[k] for k in ("difference", "low", "high", "p_value")}
            out[(x, y)] = {**row, "separated": separated(row), "cells": len(pair["cells"])}
            neg = lambda v: None if v is None else -v  # noqa: E731
            out[(y, x)] = {"difference": neg(row["difference"]), "low": neg(row["high"]), "high": neg(row["low"]),
                           "p_value": row["p_value"], "separated": out[(x, y)]["separated"],
                           "cells": out[(x, y)]["cells"]}
    return out


def rank_intervals(runs: dict[str, dict[Cell, Any]], figure: str = "object_micro.all.mean_iou",
                   n_resamples: int = N_RESAMPLES, pairs: dict[tuple[str, str], dict] | None = None) -> dict:
    """Each run's rank (1 = best) by ``figure`` on the cells every run shares, with the range of
    ranks the paired tests allow: ``low`` is 1 + the runs **separated** above it, ``high`` the number
    of runs less those separated below it (:func:`separated` on :func:`pairwise_separation`, or
    ``pairs`` when given). One rule decides both the ranks and "separated from next", so a rank
    interval of one value never stands beside a "not separated" neighbour. Returns ``{name:
    {"rank", "low", "high"}}`` (bounds None with fewer than two shared scenes or one run)."""
    names = list(runs)
    shared = sorted(set.intersection(*(set(r) for r in runs.values()))) if runs else []
    f = FIGURES.index(figure)
    sums = [figure_sums({c: runs[n][c] for c in shared}) for n in names]
    vals = np.array([float(_ratio(s[1][f].sum(), s[2][f].sum())) for s in sums]) if shared else np.zeros(len(names))
    n_scenes = len({sc for sc, _ in shared})
    if pairs is None and n_scenes >= 2 and len(names) > 1:
        pairs = pairwise_separation(runs, figure, n_resamples)
    out: dict[str, dict] = {}
    for i, name in enumerate(names):
        rank = int(1 + (vals > vals[i]).sum())      # ties share the better rank
        low = high = None
        if pairs is not None and n_scenes >= 2 and len(names) > 1:
            # (other, name): name - other; separated and negative means other is better
            above = sum(pairs[(o, name)]["separated"] and pairs[(o, name)]["difference"] < 0 for o in names if o != name)
            below = sum(pairs[(o, name)]["separated"] and pairs[(o, name)]["difference"] > 0 for o in names if o != name)
            low, high = float(min(rank, 1 + above)), float(max(rank, len(names) - below))
        out[name] = {"rank": rank, "low": low, "high": high}
    return out


def variance_components(cells: dict[Cell, Any]) -> dict:
    """Between-scene and between-seed variance of the per-episode all-target mean IoU.

    One-way random-effects estimates by the method of moments: ``seed_var`` is the pooled
    within-scene variance across seeds (``ddof=1``; None without a scene run on two seeds),
    ``scene_var`` the variance of the scene means less ``seed_var / seeds`` (at least 0).
    Returns ``{"scenes", "seeds_per_scene", "scene_var", "seed_var"}`` (IoU squared, not percent).
    """
    by_scene: dict[str, list[float]] = defaultdict(list)
    for (scene, _), s in cells.items():
        by_scene[scene].append(float(s.iou.mean()) if s.num_targets else 0.0)
    groups = [np.asarray(v) for _, v in sorted(by_scene.items())]
    multi = [g for g in groups if len(g) > 1]
    seed_var = (float(sum(((g - g.mean()) ** 2).sum() for g in multi) / sum(len(g) - 1 for g in multi))
                if multi else None)
    m = float(np.mean([len(g) for g in groups])) if groups else 0.0
    means = np.array([g.mean() for g in groups])
    raw = float(means.var(ddof=1)) if len(means) > 1 else None
    scene_var = None if raw is None else max(0.0, raw - (seed_var or 0.0) / m)
    return {"scenes": len(groups), "seeds_per_scene": m, "scene_var": scene_var, "seed_var": seed_var}


def scenes_needed(components: dict, detect_points: float, seeds: int, power: float = 0.8,
                  alpha: float = 0.05) -> int | None:
    """Scenes a two-sided test at ``alpha`` needs to detect a difference of ``detect_points``
    (percentage points of all-target mean IoU) with ``power``, each scene run on ``seeds`` seeds.

    Normal approximation for two runs that are independent given these variance components (a
    paired design that shares scenes can only need fewer): ``n = (z_{1-alpha/2} + z_power)^2 * 2
    * (scene_var + seed_var / seeds) / delta^2``, rounded up. None when the scene variance is unknown.
    """
    from scipy.stats import norm
    if components["scene_var"] is None:
        return None
    var = components["scene_var"] + (components["seed_var"] or 0.0) / seeds
    delta = detect_points / 100.0
    z = norm.ppf(1 - alpha / 2) + norm.ppf(power)
    return max(min_scenes_to_separate(alpha), int(np.ceil(z ** 2 * 2 * var / delta ** 2)))


# ---- rliable's figures: the interquartile mean, stratified by scene ----------------------------
IQM_METHOD = ("interquartile mean of the per-episode all-target mean IoU (scipy.stats.trim_mean, 25% cut "
              "at each end); 95% percentile interval from a two-stage bootstrap: scenes, then seeds within them")


def iqm_method_note(n_resamples: int = N_RESAMPLES) -> str:
    """One sentence naming the IQM method, for every output that shows one."""
    return (f"IQM: mean of the middle half of the episodes' all-target mean IoU (scipy.stats.trim_mean, "
            f"25% cut at each end). 95% interval: percentile bootstrap over scenes and, within each drawn "
            f"scene, its seeds ({n_resamples} resamples, numpy Generator seed {SEED}); none with fewer than two "
            "scenes. A deterministic agent (every seed of a scene alike) still gets the width the scenes give.")


def iqm(x: np.ndarray, axis: int = -1) -> np.ndarray:
    """Interquartile mean along ``axis``: the mean of the middle 50% (rliable's IQM,
    :func:`scipy.stats.trim_mean` with 25% cut from each end)."""
    from scipy.stats import trim_mean
    return trim_mean(x, 0.25, axis=axis)


def stratified_bootstrap(strata: Sequence[int], statistic: Callable[[np.ndarray], np.ndarray],
                         n_resamples: int = N_RESAMPLES) -> tuple[np.ndarray, np.ndarray] | None:
    """Percentile interval of ``statistic`` over resamples stratified by scene.

    Parameters
    ----------
    strata : sequence of int
        Sizes of the strata (scenes) of the pooled data, in order: stratum ``k`` holds the
        positions ``sum(strata[:k]) ... sum(strata[:k + 1]) - 1``.
    statistic : callable
        Maps positions, an int array of shape ``(..., sum(strata))``, to the statistic along the
        last axis (a scalar per row, or a vector stacked on axis 0).

    Returns
    -------
    (low, high) or None
        Each resample draws every stratum's positions with replacement from that stratum alone
        (:func:`scipy.stats.bootstrap`, one sample per stratum; rliable's stratified bootstrap); a
        stratum of one position is kept as it is. None when no stratum has two positions.
    """
    from scipy.stats import bootstrap
    offsets = np.cumsum([0, *strata])
    blocks = [np.arange(o, o + k, dtype=float) for o, k in zip(offsets[:-1], strata)]
    free = tuple(b for b in blocks if len(b) >= 2)
    fixed = np.concatenate([b for b in blocks if len(b) < 2] or [np.zeros(0)])
    if not free:
        return None

    def stat(*samples: np.ndarray, axis: int = -1) -> np.ndarray:
        held = np.broadcast_to(fixed, samples[0].shape[:-1] + fixed.shape)
        return statistic(np.concatenate([*samples, held], axis=-1).astype(int))

    res = bootstrap(free, stat, vectorized=True, n_resamples=n_resamples, confidence_level=CONFIDENCE,
                    method="percentile", rng=np.random.default_rng(SEED))
    return res.confidence_interval.low, res.confidence_interval.high


def episode_scores(cells: dict[Cell, Any]) -> dict[str, np.ndarray]:
    """``{scene: per-episode all-target mean IoU by seed}`` (the seeds in increasing order; an
    episode of a scene without targets scores 0)."""
    out: dict[str, list[float]] = defaultdict(list)
    for (scene, _), score in sorted(cells.items()):
        out[scene].append(float(score.iou.mean()) if score.num_targets else 0.0)
    return {s: np.asarray(v) for s, v in sorted(out.items())}


def iqm_summary(cells: dict[Cell, Any], n_resamples: int = N_RESAMPLES) -> dict:
    """The IQM of one run's episodes with its two-stage interval (:func:`hierarchical_bootstrap`):
    ``{"iqm", "low", "high", "episodes", "scenes", "method", "n_resamples", "seed"}`` (bounds None
    with fewer than two scenes)."""
    by_scene = episode_scores(cells)
    flat = np.concatenate(list(by_scene.values()) or [np.zeros(0)])
    ci = hierarchical_bootstrap([len(v) for v in by_scene.values()], lambda idx: iqm(flat[idx], axis=-1),
                                n_resamples)
    return {"iqm": float(iqm(flat)) if flat.size else None,
            "low": None if ci is None else float(ci[0]), "high": None if ci is None else float(ci[1]),
            "episodes": int(flat.size), "scenes": len(by_scene), "method": IQM_METHOD,
            "n_resamples": n_resamples, "seed": SEED}


def paired_iqm(a: dict[Cell, Any], b: dict[Cell, Any], n_resamples: int = N_RESAMPLES) -> dict:
    """IQM of B minus IQM of A on the (scene, seed) cells both scored, with its interval: each
    resample draws the shared scenes with replacement, then each drawn scene's shared seeds, and
    takes the same cells from both runs. ``{"a", "b", "difference", "low", "high", "cells",
    "scenes"}`` (None without shared cells; bounds None with fewer than two shared scenes)."""
    shared = sorted(set(a) & set(b))
    sa, sb = episode_scores({c: a[c] for c in shared}), episode_scores({c: b[c] for c in shared})
    out: dict[str, Any] = {"cells": len(shared), "scenes": len(sa), "a": None, "b": None, "difference": None,
                           "low": None, "high": None}
    if not shared:
        return out
    va, vb = np.concatenate(list(sa.values())), np.concatenate(list(sb.values()))
    out["a"], out["b"] = float(iqm(va)), float(iqm(vb))
    out["difference"] = out["b"] - out["a"]
    ci = hierarchical_bootstrap([len(v) for v in sa.values()],
                                lambda idx: iqm(vb[idx], axis=-1) - iqm(va[idx], axis=-1), n_resamples)
    if ci is not None:
        out["low"], out["high"] = float(ci[0]), float(ci[1])
    return out


def per_scene_differences(a: dict[Cell, Any], b: dict[Cell, Any]) -> list[dict]:
    """Per shared scene: the mean over its shared seeds of each run's episode all-target mean IoU
    and B - A: ``[{"scene", "seeds", "a", "b", "difference"}]``, sorted by scene."""
    shared = sorted(set(a) & set(b))
    sa, sb = episode_scores({c: a[c] for c in shared}), episode_scores({c: b[c] for c in shared})
    return [{"scene": s, "seeds": len(sa[s]), "a": float(sa[s].mean()), "b": float(sb[s].mean()),
             "difference": float(sb[s].mean() - sa[s].mean())} for s in sa]


def seed_spread(scores: Iterable[tuple[int, Any]], lam: float) -> dict:
    """Object-micro all-target mean IoU of each seed's scenes and their spread across seeds.

    ``scores`` are ``(seed, SceneScore)``; returns ``{"seeds", "per_seed": {k: mean IoU}, "mean",
    "std"}`` with ``std`` the standard deviation across seeds (``ddof=1``; 0 for one seed).
    """
    by_seed: dict[int, list] = defaultdict(list)
    for seed, s in scores:
        by_seed[int(seed)].append(s)
    per_seed = {str(k): aggregate(v, lam)["object_micro"]["all"]["mean_iou"] for k, v in sorted(by_seed.items())}
    vals = np.array(list(per_seed.values()))
    return {"seeds": sorted(by_seed), "per_seed": per_seed, "mean": float(vals.mean()),
            "std": float(vals.std(ddof=1)) if len(vals) > 1 else 0.0}

