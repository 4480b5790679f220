"""``spatialscout report DIR``: report.json/report.md, replay curves, Figure-4 pictures and
``DIR/index.html`` for an evaluation directory.

    spatialscout report runs/origin            # everything
    spatialscout report runs/origin --no-figures
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from spatialscout_gym.cli.errors import CliError


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = subparsers.add_parser(
        "report", help="write report.json/md, replay curves, figures and index.html for an evaluation",
        description="Re-score an evaluation directory and write DIR/report.json, DIR/report.md, "
                    "DIR/replay/ (curves), DIR/figures/ (Figure 4: the reference scene vs. each "
                    "target's mesh at the submitted centre, rendered with SAPIEN) and DIR/index.html.")
    p.add_argument("dir", type=Path, metavar="DIR", help="evaluation directory")
    p.add_argument("--no-figures", action="store_true", help="skip the SAPIEN-rendered figures")
    p.add_argument("--figure-seed", type=int, default=0,
                   help="draw figures for this agent seed only (default 0)")
    p.add_argument("--figure-style", choices=("meshes", "boxes"), default="meshes",
                   help="Figure 4 with each target's own mesh at the submitted centre (default, as the "
                        "paper) or with coloured boxes")
    p.set_defaults(func=run)


def make_site(out: Path, figures: bool = True, figure_seed: int | None = 0, figure_style: str = "meshes") -> Path:
    """Report, replay (with plots), figures and index.html; returns the index path."""
    from spatialscout_gym.eval.pages.figures import plots_available, write_index_html, write_run_figures
    from spatialscout_gym.eval.running.replay import write_replay
    from spatialscout_gym.eval.pages.report import write_report
    report = write_report(out)
    if report.object_micro is None:   # every episode failed: a page of the failures, nothing to replay
        return write_index_html(out, report, None, {})
    replay = write_replay(out, plots=plots_available())   # without the plots extra: tables and curve data only
    figs = write_run_figures(out, seed=figure_seed, style=figure_style) if figures else {}
    return write_index_html(out, report, replay, figs)


def run(args: argparse.Namespace) -> int:
    from spatialscout_gym.core.files import SceneFileError
    from spatialscout_gym.eval.layout import EvalDirError
    if not args.dir.is_dir():
        raise CliError(f"{args.dir} is not a directory (expected an evaluation directory)")
    try:
        index = make_site(args.dir, figures=not args.no_figures, figure_seed=args.figure_seed,
                          figure_style=args.figure_style)
    except (FileNotFoundError, SceneFileError, EvalDirError) as exc:
        raise CliError(str(exc)) from None
    from spatialscout_gym.eval.pages.figures import no_plots_note, plots_available
    if not plots_available():
        print(no_plots_note(), file=sys.stderr)
    print(f"wrote {args.dir}/report.json, report.md, replay/, "
          + ("" if args.no_figures else "figures/, ") + f"and {index}")
    return 0
