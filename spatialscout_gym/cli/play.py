"""``spatialscout play --scene SCENE --out DIR [--name NAME]``: a person plays one episode in the
browser with the model's ten tools, bounds and budgets; the run directory (agent ``human:NAME``)
is written when the episode ends and is read by ``report``, ``score`` and ``leaderboard`` like any
agent's."""

from __future__ import annotations

import argparse
import re
import time
from pathlib import Path

from spatialscout_gym.cli.errors import CliError

STARTUP_S = 20
"""Seconds from ``spatialscout play`` to the open port, about (SAPIEN's start and the scene load on a
CPU renderer; less with a GPU)."""


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("play", help="play an episode yourself in the browser (a human baseline)",
                       description="Serve a page on 127.0.0.1 where you do the episode with exactly the ten "
                                   "tools, bounds and budgets a model gets (buttons and keys: W/S/A/D/R/F move, "
                                   "Q/E/Z/X rotate, C capture, click pixels then T triangulate). No score or "
                                   "ground truth until finish_mapping; then the run directory is written with "
                                   "agent human:NAME and the server stops.")
    p.add_argument("--scene", required=True, help="catalog scene id, procedural:<seed>, or a scene spec JSON path")
    p.add_argument("--out", required=True, help="run directory to create")
    p.add_argument("--name", default="anonymous", help="your name in the agent column, human:NAME (default anonymous)")
    p.add_argument("--image-budget", type=int, default=100, help="images per episode, initial one included (default 100)")
    p.add_argument("--call-budget", type=int, default=100, help="tool calls per episode (default 100)")
    p.add_argument("--resolution", type=int, default=512, help="square render grid in pixels (default 512)")
    p.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (default: a free one)")
    p.add_argument("--overwrite", action="store_true", help="replace an existing --out")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from spatialscout_gym.cli.options import check_episode_bounds, scene_from_arg
    from spatialscout_gym.cli.run import check_out_dir
    if not re.fullmatch(r"[A-Za-z0-9_.-]{1,40}", args.name):
        raise CliError(f"--name must be 1-40 letters, digits, '_', '.' or '-', got {args.name!r}")
    check_episode_bounds(args)
    if args.call_budget < 1:
        raise CliError(f"--call-budget must be >= 1, got {args.call_budget}")
    if Path(args.out).exists() and not args.overwrite:
        raise CliError(f"{args.out} exists; pass --overwrite to replace it")
    check_out_dir(Path(args.out), overwrite=args.overwrite)  # --overwrite replaces only a run directory
    spec = scene_from_arg(args.scene)
    from spatialscout_gym.envs.session import EpisodeSession
    from spatialscout_gym.servers.viewer.play import PlayGame, serve_play
    t0 = time.perf_counter()
    print(f"loading {spec.scene_id}: the page's port opens in about {STARTUP_S} s (the renderer starts and "
          "the scene loads); its URL follows", flush=True)
    with EpisodeSession(resolution=args.resolution, image_budget=args.image_budget,
                        tool_call_budget=args.call_budget) as session:
        session.load(spec)
        game = PlayGame(session, args.out, args.name)
        server = serve_play(game, args.port)
        print(f"play {spec.scene_id} at {server.url}  (ready after {time.perf_counter() - t0:.0f} s; the "
              "token in the URL lets only this page make calls; Ctrl-C abandons)", flush=True)
        try:
            while game.written is None:
                time.sleep(0.2)
            time.sleep(1.0)   # let the page fetch its last reply
        finally:
            server.shutdown()
    r = game.written
    mean = "-" if r.all is None else f"{r.all.mean_iou:.4f}"
    coverage = "-" if r.coverage is None else f"{r.coverage:.3f}"
    print(f"wrote {args.out}/  agent {r.agent}  score: all-target mean IoU {mean}  "
          f"coverage {coverage} ({r.num_submitted} of {r.num_targets} targets)")
    return 0
