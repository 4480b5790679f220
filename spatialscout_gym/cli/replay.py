"""``spatialscout replay DIR``: score every accepted-map snapshot of the traces (docs/protocol.md section 7).

Writes ``DIR/replay/replay.json`` and PNG curves of all-target mean IoU, coverage and centre error
against model calls (tool calls when the trace has no model calls) and images, and the full-scene
loss for lambda in {1, 2, 5, 10} m; for an NBV agent's runs also a top-down trajectory PNG per
episode (``trajectory*.png``: :mod:`spatialscout_gym.eval.pages.nbv_trajectory`).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from spatialscout_gym.cli.errors import CliError


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = subparsers.add_parser(
        "replay", help="score every map snapshot in the traces; write curves (JSON and PNG)",
        description="Replay the traces of an evaluation directory or one run directory: curves of "
                    "all-target mean IoU, coverage, centre error and full-scene loss (lambda 1, 2, 5, "
                    "10 m) against calls and images, under DIR/replay/.")
    p.add_argument("dir", type=Path, metavar="DIR", help="evaluation directory or run directory")
    p.add_argument("--no-plots", action="store_true", help="write replay.json only")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from spatialscout_gym.core.files import SceneFileError
    from spatialscout_gym.eval.layout import EvalDirError
    from spatialscout_gym.eval.running.replay import write_replay
    if not args.dir.is_dir():
        raise CliError(f"{args.dir} is not a directory (expected an evaluation or run directory)")
    try:
        data = write_replay(args.dir, plots=not args.no_plots)
    except (FileNotFoundError, SceneFileError, EvalDirError) as exc:
        raise CliError(str(exc)) from None
    f = data["final"]
    n = len(data["episodes"])
    snaps = sum(len(e["points"]) - 1 for e in data["episodes"])
    print(f"replayed {n} episode(s), {snaps} map snapshot(s); final object-micro all-target mean IoU "
          f"{100 * f['all_mean_iou']:.3f}%  coverage {100 * f['coverage']:.1f}%  loss(lambda=5) "
          f"{f['loss_m']['5']:.3f} m")
    trajectories = []
    if not args.no_plots:   # NBV runs: a top-down trajectory per episode
        from spatialscout_gym.eval.pages.nbv_trajectory import write_nbv_trajectories
        trajectories = write_nbv_trajectories(args.dir, args.dir / "replay")
    print(f"wrote {args.dir / 'replay'}/ (replay.json" + ("" if args.no_plots else
          ", curves_calls.png, curves_images.png, loss_lambda.png") +
          (f", {len(trajectories)} NBV trajectory plot(s) trajectory*.png" if trajectories else "") + ")")
    return 0
