"""``spatialscout compare DIR DIR ...``: evaluations side by side.

Refuses evaluations made on different catalog versions or scene contents unless ``--force``.
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
                    "and per-category mean IoU for each "
                    "evaluation directory. Runs on different catalog versions or scene contents are "
                    "refused unless --force.")
    p.add_argument("dirs", nargs="+", type=Path, metavar="DIR", help="evaluation directories")
    p.add_argument("--force", action="store_true", help="compare across catalog versions / scene hashes")
    p.add_argument("--out", type=Path, default=None, help="also write the markdown table to this file")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from spatialscout_gym.eval.report import CompareError, compare_reports
    check_evaluation_dirs(args.dirs)
    try:
        text, _ = compare_reports(args.dirs, force=args.force)
    except (CompareError, FileNotFoundError) as exc:
        raise CliError(str(exc)) from None
    print(text)
    if args.out is not None:
        args.out.write_text(text, encoding="utf-8")
    return 0
