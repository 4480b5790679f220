"""``spatialscout compare DIR DIR ...``: evaluations side by side.

Refuses evaluations made on different catalog versions or scene contents, or under different protocol
settings (V, B, resolution, prompt style, reasoning effort, ...), unless ``--force``.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from spatialscout_gym.cli.errors import CliError
from spatialscout_gym.cli.options import check_evaluation_dirs


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "compare", help="put several evaluation reports side by side",
        description="Completed and failed episode counts, Table-3 rows (object-micro, scene-macro) "
                    "with 95%% bootstrap intervals over scenes and per-category mean IoU for each "
                    "evaluation directory; each later directory is paired with the first on the (scene, "
                    "seed) cells both scored: the difference of each headline figure with its interval "
                    "and a paired permutation p-value over scenes, naming the cells used. Runs on different catalog versions or scene contents, "
                    "or under different protocol settings (V, B, resolution, prompt style, reasoning "
                    "effort, ...), are refused unless --force, each differing setting named.")
    p.add_argument("dirs", nargs="+", type=Path, metavar="DIR", help="evaluation directories")
    p.add_argument("--force", action="store_true", help="compare across catalog versions, scene hashes and protocol settings")
    p.add_argument("--out", type=Path, default=None, help="also write the markdown to this file (refused when it "
                   "exists, unless --overwrite)")
    p.add_argument("--overwrite", action="store_true", help="let --out replace an existing file")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from spatialscout_gym.eval.report import CompareError, compare_reports
    from spatialscout_gym.core.files import SceneFileError
    from spatialscout_gym.eval.layout import EvalDirError, publish_text
    check_evaluation_dirs(args.dirs)
    if args.out is not None and args.out.exists() and (args.out.is_dir() or not args.overwrite):
        raise CliError(f"--out {args.out} already exists" + ("" if args.out.is_dir() else
                       "; pass --overwrite to replace it"))
    try:
        text, _ = compare_reports(args.dirs, force=args.force)
    except (CompareError, EvalDirError, SceneFileError, FileNotFoundError) as exc:
        raise CliError(str(exc)) from None
    print(text)
    if args.out is not None:
        publish_text(args.out, text)
    return 0
