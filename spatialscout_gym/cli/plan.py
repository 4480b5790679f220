"""``spatialscout plan DIR --detect POINTS``: how many scenes and seeds a comparison needs.

    spatialscout plan runs/origin --detect 3        # to detect 3 points of all-target mean IoU
"""

from __future__ import annotations

import argparse
from pathlib import Path

from spatialscout_gym.cli.errors import CliError


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = subparsers.add_parser(
        "plan", help="how many scenes and seeds a comparison needs to detect a given difference",
        description="From the between-scene and between-seed variance of the per-episode all-target "
                    "mean IoU in an evaluation directory, estimate how many scenes (for 1, 2, 3 and 5 "
                    "seeds per scene) a comparison of two agents needs to detect a difference of POINTS "
                    "percentage points with 80%% power (two-sided test at 5%%). Prints the assumption it "
                    "makes.")
    p.add_argument("dir", type=Path, metavar="DIR", help="evaluation directory (ideally 2+ seeds per scene)")
    p.add_argument("--detect", type=float, required=True, metavar="POINTS",
                   help="difference to detect, percentage points of all-target mean IoU (> 0)")
    p.add_argument("--power", type=float, default=0.8, help="power (default 0.8)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from spatialscout_gym.core.files import SceneFileError
    from spatialscout_gym.eval.layout import EvalDirError
    from spatialscout_gym.eval.pages.report import cells, find_runs
    from spatialscout_gym.eval.analysis.stats import (min_p_value, min_scenes_to_separate, scenes_needed,
                                              variance_components)
    if not args.dir.is_dir():
        raise CliError(f"{args.dir} is not a directory (expected an evaluation directory)")
    if not args.detect > 0 or args.detect >= 100:
        raise CliError(f"--detect must be between 0 and 100 percentage points, got {args.detect:g}")
    if not 0 < args.power < 1:
        raise CliError(f"--power must be between 0 and 1, got {args.power:g}")
    try:
        runs = find_runs(args.dir)
    except (SceneFileError, EvalDirError) as exc:
        raise CliError(str(exc)) from None
    comp = variance_components(cells(runs))
    if comp["scenes"] < 2:
        raise CliError(f"{args.dir} has {comp['scenes']} scored scene(s); the between-scene variance needs two or more")
    sd = lambda v: "unknown" if v is None else f"{100 * v ** 0.5:.2f}"  # noqa: E731
    print(f"{args.dir}: {comp['scenes']} scenes, {comp['seeds_per_scene']:.1g} seeds per scene on average; "
          f"between-scene sd {sd(comp['scene_var'])} points, between-seed sd {sd(comp['seed_var'])} points")
    if comp["seed_var"] is None:
        print("no scene ran on two seeds: the between-seed variance is unknown and taken as 0 "
              "(evaluate with --repeats 2 or more to measure it)")
    print(f"to detect {args.detect:g} points with {100 * args.power:.0f}% power (two-sided, 5% level):")
    for seeds in (1, 2, 3, 5):
        print(f"  {seeds} seed(s) per scene: {scenes_needed(comp, args.detect, seeds, args.power)} scenes")
    need = min_scenes_to_separate()
    print(f"floor: {need} scenes; with fewer, the paired permutation test `spatialscout compare` uses cannot "
          f"reach p < 0.05 whatever the difference (with {need - 1} its smallest p is {min_p_value(need - 1):.3g})")
    print("assumption: the two agents vary like this one and independently of each other (normal "
          "approximation, n = (z_0.975 + z_power)^2 * 2 * (scene var + seed var / seeds) / difference^2); "
          "a paired comparison on shared scenes, as `spatialscout compare` makes, needs at most this many.")
    return 0
