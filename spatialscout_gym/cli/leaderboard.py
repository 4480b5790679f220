"""``spatialscout leaderboard DIR... --out SITE``: one static page over many evaluations.

    spatialscout leaderboard runs/origin runs/oracle-click runs/gpt-x --out site
    spatialscout leaderboard runs/* --out site --figure-scene procedural_7

Writes ``SITE/index.html`` (sortable Table 3 with spend, tool-use plots, the cost picture with its
Pareto frontier, Tables 4-5), ``SITE/leaderboard.json`` and ``SITE/leaderboard.md``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from spatialscout_gym.cli.errors import CliError
from spatialscout_gym.cli.options import check_evaluation_dirs, check_output_dir


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    from spatialscout_gym.eval.settings_check import checked_settings_text
    p = subparsers.add_parser(
        "leaderboard", help="one static page (plus JSON and markdown) over many evaluation directories",
        description="Table-3 rows (object-micro and scene-macro, seed spread), coverage, centre error, "
                    "full-scene loss, cost, tokens, model calls and images per task, completed and "
                    "failed episodes; tool use over the episode (paper Figures 5-6), accuracy vs. cost "
                    "with the Pareto frontier (Figure 7), success and failure factors and geometric grounding "
                    "after the paper's Tables 4 and 5 (this project's rules and thresholds, listed on the "
                    "page; the paper's came from a 40-trajectory case study), all computed from the traces. Evaluations on "
                    "different catalog versions, scene contents or protocol settings are refused unless --force "
                    "(the page then names each difference). " + checked_settings_text())
    p.add_argument("dirs", nargs="+", type=Path, metavar="DIR",
                   help="evaluation directories (from `spatialscout evaluate --out DIR`), one row each")
    p.add_argument("--out", type=Path, default=None, metavar="SITE",
                   help="folder for index.html, leaderboard.json, leaderboard.md and plots/ (required "
                        "unless --watch)")
    p.add_argument("--watch", action="store_true",
                   help="instead of a page: show each evaluation's finished and failed episodes, spend so far, "
                        "rate-limit waits and time left, refreshed every --interval seconds (evaluations "
                        "still being written are fine), until Ctrl-C or none is running")
    p.add_argument("--interval", type=interval_arg, default=10.0, metavar="S",
                   help=f"--watch refresh, seconds (default 10; more than 0, at most {MAX_INTERVAL_S:g})")
    p.add_argument("--refreshes", type=int, default=None, metavar="N",
                   help="--watch: stop after N tables (default: until Ctrl-C or none is running)")
    p.add_argument("--force", action="store_true", help="rank rows that differ in catalog version, scene hashes or "
                   "protocol settings (the page names each difference)")
    p.add_argument("--lambda", dest="lam", type=float, default=5.0, metavar="M",
                   help="omission penalty of the full-scene loss, metres (default 5)")
    p.add_argument("--figure-scene", default=None, metavar="SCENE_DIR",
                   help="also draw Figure 4 (the scene's own meshes at the submitted centres) of this "
                        "scene's seed-0 episode for every row, e.g. procedural_7 (renders with SAPIEN)")
    p.add_argument("--figure-px", type=int, default=256, help="side of one Figure-4 view, pixels (default 256)")
    p.add_argument("--verified-only", action="store_true",
                   help="keep only rows whose every episode re-executed to its records (the leaderboard "
                        "verifies every row itself; a 'tool-side only' row is dropped too)")
    p.add_argument("--workers", type=int, default=1, metavar="N",
                   help="verify N episodes at a time in separate processes (default 1); verdicts are kept "
                        "in $XDG_CACHE_HOME/spatialscout/verify, so unchanged files are verified once")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("--overwrite", action="store_true", help="let --out replace an existing site (index.html)")
    p.set_defaults(func=run)


MAX_INTERVAL_S = 86400.0
"""Longest ``--watch`` refresh, seconds (a day): ``time.sleep`` refuses far longer waits."""


def interval_arg(text: str) -> float:
    """``--interval``: a number of seconds above 0 and at most :data:`MAX_INTERVAL_S` (``nan``,
    ``inf`` and ``1e300`` are refused by argparse, exit 2)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text!r}") from None
    if not 0 < value <= MAX_INTERVAL_S:   # false for nan too
        raise argparse.ArgumentTypeError(f"expected seconds above 0 and at most {MAX_INTERVAL_S:g}, got {text!r}")
    return value


def watch(args: argparse.Namespace) -> int:
    """``--watch``: print the progress table every ``--interval`` seconds until Ctrl-C, no
    evaluation is running, or ``--refreshes`` tables."""
    import time

    from spatialscout_gym.eval.layout import EvalDirError
    from spatialscout_gym.eval.pages.progress import progress_row, progress_table
    if args.interval <= 0 or (args.refreshes is not None and args.refreshes < 1):
        raise CliError("--interval must be > 0 and --refreshes >= 1")
    from spatialscout_gym.eval.pages.progress import is_running
    dirs, runs = _watched(args.dirs)
    shown = 0
    try:
        while True:
            busy = {r for r in runs if is_running(r)}   # a presets run between two models locks no model
            try:
                rows = [progress_row(d) for d in dirs]
            except EvalDirError as exc:
                raise CliError(str(exc)) from None
            for d, r in zip(dirs, rows):
                r["waiting"] = d.parent in busy and not r["running"] and not (r["planned"] and r["done"] == r["planned"])
            print(time.strftime("%H:%M:%S") + "\n" + progress_table(rows) + "\n", flush=True)
            shown += 1
            if not (busy or any(r["running"] for r in rows)) or (args.refreshes is not None and shown >= args.refreshes):
                return 0
            time.sleep(args.interval)
    except KeyboardInterrupt:
        return 0


def _watched(dirs: list[Path]) -> tuple[list[Path], list[Path]]:
    """The evaluation directories ``--watch`` shows and the presets runs they belong to: a presets
    run's ``--out`` (or any of its models' directories) stands for every model it lists, in order,
    those not started yet included."""
    from spatialscout_gym.cli.presets import presets_plan
    shown: list[Path] = []
    runs: list[Path] = []
    for d in dirs:
        root = d if presets_plan(d) is not None else d.parent if d.name in (presets_plan(d.parent) or []) else None
        if root is None:
            shown += [d] if d not in shown else []
        elif root not in runs:
            runs.append(root)
            shown += [root / m for m in presets_plan(root) or [] if root / m not in shown]
    return shown, runs


def run(args: argparse.Namespace) -> int:
    from spatialscout_gym.core.files import SceneFileError
    if args.watch:
        check_evaluation_dirs(args.dirs)
        return watch(args)
    if args.out is None:
        raise CliError("--out SITE is required (or --watch)")
    from spatialscout_gym.eval.layout import EvalDirError
    from spatialscout_gym.eval.pages.leaderboard import LeaderboardError, write_leaderboard
    check_evaluation_dirs(args.dirs)
    check_output_dir(args.out)
    if (args.out / "index.html").exists() and not args.overwrite:
        raise CliError(f"--out {args.out} already holds index.html; pass --overwrite to replace it")
    try:
        board = write_leaderboard(args.dirs, args.out, force=args.force, lam=args.lam,
                                  figure_scene=args.figure_scene, figure_px=args.figure_px,
                                  progress=not args.no_progress, verified_only=args.verified_only,
                                  verify_workers=max(1, args.workers))
    except (LeaderboardError, EvalDirError, FileNotFoundError, SceneFileError, ValueError) as exc:
        raise CliError(str(exc)) from None
    print(f"{'rank':>4}  {'model':32s} {'all mIoU':>8}  {'done':>5} {'failed':>6}  checked")
    for name, row in board["rows"].items():   # sorted by rank; fits an 80-column terminal
        shown = name if len(name) <= 32 else name[:31] + "~"
        print(f"{row['rank']['rank']:>4}  {shown:32s} {100 * row['object_micro']['all']['mean_iou']:7.2f}%  "
              f"{row['completed']:>5} {row['failed']:>6}  {row['verified']}")
    if board["blind_rows"]:   # listed apart: ranked among blind controls only
        print("blind controls (no image sent; ranked among themselves, never with the rows above):")
    for name, row in board["blind_rows"].items():
        shown = name if len(name) <= 32 else name[:31] + "~"
        print(f"{row['rank']['rank']:>4}  {shown:32s} {100 * row['object_micro']['all']['mean_iou']:7.2f}%  "
              f"{row['completed']:>5} {row['failed']:>6}  {row['verified']}")
    if board.get("tool_rows"):   # listed apart: B counts tool calls there
        print("MCP clients and people (B counts tool calls; ranked among themselves):")
    for name, row in (board.get("tool_rows") or {}).items():
        shown = name if len(name) <= 32 else name[:31] + "~"
        print(f"{row['rank']['rank']:>4}  {shown:32s} {100 * row['object_micro']['all']['mean_iou']:7.2f}%  "
              f"{row['completed']:>5} {row['failed']:>6}  {row['verified']}")
    if board["problems"]:   # plain text: what --force let through
        print("forced (--force): " + "; ".join(board["problems"]))
    if board["dropped_unverified"]:
        print("dropped (not verified): " + ", ".join(board["dropped_unverified"]))
    ver = [r["verification"] for r in [*board["rows"].values(), *board["blind_rows"].values(),
                                       *(board.get("tool_rows") or {}).values()]]
    fresh = [v for v in ver if v["seconds_per_episode"]]
    each = sum(v["seconds_per_episode"] for v in fresh) / len(fresh) if fresh else 0.0
    print(f"verified every row here: {sum(v['seconds'] for v in ver):.1f} s ({each:.2f} s per episode "
          f"re-executed, {sum(v['cached'] for v in ver)} verdict(s) from the cache)")
    from spatialscout_gym.eval.pages.figures import no_plots_note, plots_available
    if not plots_available():
        print(no_plots_note(), file=sys.stderr)
    print(f"wrote {args.out}/index.html, leaderboard.json, leaderboard.md" + (" and plots/" if board["plots"] else ""))
    return 0
