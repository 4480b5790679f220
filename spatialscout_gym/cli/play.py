"""``spatialscout play --scene SCENE --out DIR [--name NAME]``: a person plays one episode in the
browser with the ten tools, bounds and budgets a model gets (docs/protocol.md sections 4-5), and the
episode is written as a standard run directory with agent ``human:NAME`` (section 7)."""

from __future__ import annotations

import argparse
import getpass
import re
import time

from spatialscout_gym.cli.errors import CliError


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "play", help="play an episode yourself in the browser (a human baseline run directory)",
        description="Serve a page on 127.0.0.1 where you are the agent: move and rotate the camera "
                    "(buttons or keys), capture, click the same object in two or more frames and "
                    "triangulate, submit positions to inventory ids, finish. The same ten tools, "
                    "bounds and budgets a model gets; no score or ground truth until the end. When "
                    "the episode ends (finish_mapping or a budget) DIR is written like any agent's "
                    "run (agent human:NAME): report, leaderboard and view read it.")
    p.add_argument("--scene", required=True, help="catalog scene id, procedural:<seed>, or a scene spec JSON path")
    p.add_argument("--out", required=True, help="run directory to create")
    p.add_argument("--name", default=None, help="your name in the agent column, human:NAME (default: login name)")
    p.add_argument("--image-budget", type=int, default=100, help="images per episode (default 100)")
    p.add_argument("--call-budget", type=int, default=100, help="tool calls per episode (default 100)")
    p.add_argument("--resolution", type=int, default=512, help="square frame size, pixels (default 512)")
    p.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (default: a free one)")
    p.add_argument("--overwrite", action="store_true", help="replace an existing DIR")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from spatialscout_gym.core.errors import SpatialScoutError, message_of
    from spatialscout_gym.eval.runner import resolve_scene
    from spatialscout_gym.eval.viewer.play import PlayGame, serve_play
    name = args.name or getpass.getuser()
    if not re.fullmatch(r"[A-Za-z0-9_.-]{1,40}", name):
        raise CliError(f"--name must be 1-40 letters, digits, '_', '.' or '-', got {name!r}")
    out = Path(args.out)
    if out.exists() and any(out.iterdir()) and not args.overwrite:
        raise CliError(f"{out} exists and is not empty; choose another --out or pass --overwrite")
    if not 0 <= args.port < 65536:
        raise CliError(f"--port must be in 0..65535, got {args.port}")
    try:
        game = PlayGame(resolve_scene(args.scene), out, name, resolution=args.resolution,
                        image_budget=args.image_budget, tool_call_budget=args.call_budget)
    except (SpatialScoutError, ValueError) as exc:
        raise CliError(f"cannot play scene {args.scene!r}: {message_of(exc) if isinstance(exc, SpatialScoutError) else exc}") from None
    httpd, _, url = serve_play(game, args.port)
    print(f"play {args.scene} as human:{name} at {url}  (the run is written to {out} when the episode ends)", flush=True)
    try:
        while game.result is None:
            time.sleep(0.2)
        time.sleep(1.0)   # let the page fetch its last answer
        r = game.result
        print(f"episode over ({r['end_reason']}): all-target mean IoU {r['all']['mean_iou']:.4f}  "
              f"coverage {r['coverage']:.3f}; wrote {out}/")
    finally:
        httpd.shutdown()
        game.session.close()
    return 0
