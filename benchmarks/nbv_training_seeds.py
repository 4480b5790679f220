"""Fine-tune seeds of an NBV policy side by side: each training seed's evaluation, their spread, and
intervals over training seeds the way rliable reports them.

Each argument is ``SEED=DIR``: the training seed of a policy and the evaluation directory that
``spatialscout evaluate --agent ppo:... --scenes catalog --seeds 0 1 2`` wrote for it (the same
scenes and agent seeds for every one). Per episode the figure is the object-micro coverage (the
share of the scene's targets the episode mapped) as ``spatialscout compare`` re-scores it from the
run files; a run's score on a scene (rliable's "task") is the mean over its agent seeds. Printed
and written (``--out``, JSON): per training seed the mean episode coverage and its episodes
blocked on more than a quarter of their moves; across training seeds the mean and the
spread (max - min); the mean and the interquartile mean over all (training seed, scene) scores
with 95% stratified bootstrap intervals (resampling training seeds within each scene,
:func:`spatialscout_gym.eval.analysis.stats.stratified_bootstrap`, scipy's bootstrap: rliable's
method), 9,999 resamples, seed 20260101.

    python benchmarks/nbv_training_seeds.py 4=runs/v3eval/nbv_ppo_v3 7=runs/v3eval/seed7 \\
        8=runs/v3eval/seed8 --out docs/nbv_training_seeds.json
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np


def _episodes(d: Path) -> dict[tuple[str, int], tuple[float, float]]:
    """``{(scene id, agent seed): (coverage, blocked fraction)}`` of an evaluation's completed
    episodes: coverage re-scored from the run files, the blocked fraction (blocked moves over the
    moves taken) from the trace's NBV step events (evaluations written before the run record
    derived its exploration block have them too)."""
    from spatialscout_gym.core.exploration import NBV_STEP_EVENT
    from spatialscout_gym.core.run_files import TRACE_FILE
    from spatialscout_gym.eval.layout import read_trace
    from spatialscout_gym.eval.pages.report import find_runs
    out = {}
    for r in find_runs(d):
        steps = [e for e in read_trace(r.run_dir / TRACE_FILE) if e.get("event") == NBV_STEP_EVENT]
        blocked = sum(bool(e.get("blocked")) for e in steps) / len(steps) if steps else 0.0
        out[(r.scene_id, r.seed)] = (float(r.score.metrics()["coverage"]), float(blocked))
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("runs", nargs="+", metavar="SEED=DIR", help="a training seed and its evaluation directory")
    p.add_argument("--out", type=Path, help="write the figures as JSON here")
    args = p.parse_args(argv)
    from spatialscout_gym.eval.analysis.stats import N_RESAMPLES, SEED, iqm, stratified_bootstrap
    runs: dict[int, dict] = {}
    for item in args.runs:
        seed, sep, d = item.partition("=")
        if not sep or not seed.isdigit() or not Path(d).is_dir():
            p.error(f"{item!r}: expected SEED=DIR, an integer and an evaluation directory")
        runs[int(seed)] = _episodes(Path(d))
    cells = sorted(set.intersection(*(set(r) for r in runs.values())))
    if not cells:
        p.error("the evaluations share no (scene, seed) episode")
    if any(set(r) != set(cells) for r in runs.values()):
        print(f"note: comparing the {len(cells)} episodes every evaluation has", file=sys.stderr)
    scenes = sorted({s for s, _ in cells})
    seeds = sorted(runs)
    # scores[t, k]: training seed t's mean coverage on scene k over its agent seeds
    scores = np.array([[np.mean([runs[t][c][0] for c in cells if c[0] == s]) for s in scenes] for t in seeds])
    flat = scores.T.reshape(-1)               # scene-major: stratum k holds scene k's training seeds
    strata = [len(seeds)] * len(scenes)
    figures: dict = {"scenes": len(scenes), "episodes_per_seed": len(cells), "training_seeds": seeds,
                     "method": "stratified bootstrap over training seeds within each scene (rliable's; "
                               "scipy.stats.bootstrap)", "n_resamples": N_RESAMPLES, "seed": SEED, "per_seed": {}}
    for t in seeds:
        cov = np.array([runs[t][c][0] for c in cells])
        over = sum(runs[t][c][1] > 0.25 for c in cells)
        figures["per_seed"][str(t)] = {"coverage_pct": 100 * float(cov.mean()), "over_quarter_blocked": int(over),
                                       "max_blocked_fraction": float(max(runs[t][c][1] for c in cells))}
    means = [figures["per_seed"][str(t)]["coverage_pct"] for t in seeds]
    figures["across_seeds"] = {"mean_pct": float(np.mean(means)), "spread_pct": float(max(means) - min(means)),
                               "std_pct": float(np.std(means, ddof=1)) if len(means) > 1 else 0.0}
    for name, stat in (("mean", lambda x: np.mean(x, axis=-1)), ("iqm", lambda x: iqm(x, axis=-1))):
        ci = stratified_bootstrap(strata, lambda idx, f=stat: f(flat[idx.astype(int)]))
        figures[name] = {"estimate_pct": 100 * float(stat(flat)),
                         "low_pct": None if ci is None else 100 * float(ci[0]),
                         "high_pct": None if ci is None else 100 * float(ci[1])}
    print(f"{len(seeds)} training seeds x {len(scenes)} scenes ({len(cells)} episodes each), mean episode coverage:")
    print("| training seed | coverage (%) | episodes blocked on more than a quarter | worst blocked fraction |")
    print("|---|---|---|---|")
    for t in seeds:
        s = figures["per_seed"][str(t)]
        print(f"| {t} | {s['coverage_pct']:.2f} | {s['over_quarter_blocked']} of {len(cells)} | "
              f"{s['max_blocked_fraction']:.3f} |")
    a = figures["across_seeds"]
    print(f"\nacross training seeds: mean {a['mean_pct']:.2f}, spread {a['spread_pct']:.2f}, std {a['std_pct']:.2f}")
    for name in ("mean", "iqm"):
        f = figures[name]
        bounds = "no interval" if f["low_pct"] is None else f"[{f['low_pct']:.2f}, {f['high_pct']:.2f}]"
        print(f"{name} over (training seed, scene) scores: {f['estimate_pct']:.2f} {bounds}")
    if args.out:
        args.out.write_text(json.dumps(figures, indent=1) + "\n")
        print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
