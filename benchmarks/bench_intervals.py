"""Interval benchmark: the two-stage bootstrap behind `report` and `compare` on a catalog-sized run.

    python benchmarks/bench_intervals.py [--scenes 80] [--seeds 3] [--repeats 3]

Two evaluations of ``--scenes`` scenes x ``--seeds`` seeds (35 targets per episode, random IoUs)
are summarised as `report` does (:func:`iqm_summary`) and compared as `compare` does
(:func:`paired_comparison` over every Table-3 figure and :func:`paired_iqm`), 9,999 resamples each.
Two cases in one run: every scene on every seed ("balanced"), and the same runs with one episode
missing ("one missing": scenes on unequal seeds, the case of a failed episode, which takes the
bootstrap's other branch). The ratio of the two is the figure to watch; before the unequal branch
drew its resamples as arrays it was above 100. Prints and writes
``benchmarks/results/bench_intervals.json``.
"""

from __future__ import annotations

import argparse
import os
import platform
import time
from pathlib import Path

import numpy as np

from spatialscout_gym.core.files import write_json_atomic
from spatialscout_gym.core.scoring import SceneScore
from spatialscout_gym.eval.analysis.stats import iqm_summary, paired_comparison, paired_iqm


def scored(scene: str, iou: np.ndarray) -> SceneScore:
    """A scored episode with these per-target IoUs (a target is submitted when its IoU > 0)."""
    return SceneScore(scene, int((iou > 0).sum()), iou, np.where(iou > 0, 0.1, np.nan),
                      ["x" if v > 0 else None for v in iou], np.stack([iou > 0, iou > 0.5, iou > 0.9]))


def run_cells(rng: np.random.Generator, scenes: int, seeds: int) -> dict:
    """``{(scene, seed): SceneScore}`` of 35 targets each, a quarter of them missed."""
    return {(f"s{i:02d}", k): scored(f"s{i:02d}", rng.random(35) * (rng.random(35) > 0.25))
            for i in range(scenes) for k in range(seeds)}


def timed(a: dict, b: dict, repeats: int) -> float:
    """Best wall seconds of one report-and-compare pass over runs ``a`` and ``b``."""
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        iqm_summary(a)
        iqm_summary(b)
        paired_comparison(a, b)
        paired_iqm(a, b)
        best = min(best, time.perf_counter() - t0)
    return best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--scenes", type=int, default=80)
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--out", type=Path, default=Path(__file__).parent / "results" / "bench_intervals.json")
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    a, b = run_cells(rng, args.scenes, args.seeds), run_cells(rng, args.scenes, args.seeds)
    balanced = timed(a, b, args.repeats)
    missing = next(iter(sorted(a)))
    a_short = {c: s for c, s in a.items() if c != missing}
    one_missing = timed(a_short, b, args.repeats)
    out = {"machine": platform.platform(), "cpus": os.cpu_count(), "scenes": args.scenes, "seeds": args.seeds,
           "balanced_s": round(balanced, 4), "one_missing_s": round(one_missing, 4),
           "ratio_one_missing_to_balanced": round(one_missing / balanced, 2)}
    print(f"report + compare, {args.scenes} scenes x {args.seeds} seeds, 9,999 resamples: "
          f"balanced {balanced:.3f} s, one episode missing {one_missing:.3f} s "
          f"(x{one_missing / balanced:.2f})")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    write_json_atomic(args.out, out)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
