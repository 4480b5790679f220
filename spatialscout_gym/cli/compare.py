"""``spatialscout compare DIR DIR ...``: evaluations side by side.

Every pair (or every run against ``--baseline DIR``): paired differences, the interquartile mean
with a stratified interval, per-scene differences. Refuses evaluations that are not comparable
(:mod:`spatialscout_gym.eval.settings_check` lists what is checked) unless ``--force``.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from spatialscout_gym.cli.errors import CliError
from spatialscout_gym.cli.options import check_evaluation_dirs


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    from spatialscout_gym.eval.settings_check import checked_settings_text
    p = subparsers.add_parser(
        "compare", help="put several evaluation reports side by side",
        # the description is printed as written (argparse %-formats only the arguments' help)
        description="Completed and failed episode counts, Table-3 rows (object-micro, scene-macro) "
                    "with 95% bootstrap intervals over scenes, each run's interquartile mean (IQM) of "
                    "the episodes' all-target mean IoU with a 95% interval stratified by scene, and "
                    "per-category mean IoU for each evaluation directory. Every pair of directories "
                    "(or, with --baseline, every directory against the baseline) is paired on the "
                    "(scene, seed) cells both scored: the difference of each headline figure with its "
                    "interval and a paired permutation p-value over scenes, naming the cells used; the "
                    "IQM difference with its stratified interval; and a per-scene table (scene, mean A, "
                    "mean B, difference). Runs that are not comparable are refused unless --force, each "
                    "difference named with both values. " + checked_settings_text())
    p.add_argument("dirs", nargs="+", type=Path, metavar="DIR", help="evaluation directories")
    p.add_argument("--baseline", type=Path, default=None, metavar="DIR",
                   help="pair every other directory with this one (default: every pair)")
    p.add_argument("--force", action="store_true", help="compare across catalog versions, scene hashes and "
                   "protocol settings (the output names each difference)")
    p.add_argument("--out", type=Path, default=None, help="also write the markdown to this file (refused when it "
                   "exists, unless --overwrite)")
    p.add_argument("--overwrite", action="store_true", help="let --out replace an existing file")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from spatialscout_gym.eval.pages.report import CompareError, compare_reports
    from spatialscout_gym.core.files import SceneFileError
    from spatialscout_gym.eval.layout import EvalDirError, publish_text
    check_evaluation_dirs(args.dirs + ([args.baseline] if args.baseline is not None else []))
    if args.out is not None and args.out.exists() and (args.out.is_dir() or not args.overwrite):
        raise CliError(f"--out {args.out} already exists" + ("" if args.out.is_dir() else
                       "; pass --overwrite to replace it"))
    try:
        text, _ = compare_reports(args.dirs, force=args.force, baseline=args.baseline)
    except (CompareError, EvalDirError, SceneFileError, FileNotFoundError) as exc:
        raise CliError(str(exc)) from None
    print(text)
    if args.out is not None:
        publish_text(args.out, text)
    return 0
