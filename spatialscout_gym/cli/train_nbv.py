"""``spatialscout train-nbv``: train a PPO next-best-view policy (options: ``--help``).

    spatialscout train-nbv --total-timesteps 200000 --num-envs 4 --time-limit-s 1800 --out runs/nbv
    spatialscout train-nbv --backend rllib --ray-address auto --num-env-runners 8 --num-envs 16 ...

The options are the fields of :class:`spatialscout_gym.nbv.training.sb3.Args`, parsed by tyro.
"""

from __future__ import annotations

import argparse

from spatialscout_gym.cli.errors import CliError


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = subparsers.add_parser(
        "train-nbv", add_help=False, prefix_chars="+",  # every "-..." option goes to tyro
        help="train a PPO next-best-view policy on procedural scenes (needs the [rl] extra; "
             "--backend rllib: RLlib on a Ray cluster, the [ray] extra too)",
        description="Train SB3 PPO (or RLlib PPO: --backend rllib) on procedural NBV scenes.")
    p.add_argument("options", nargs=argparse.REMAINDER,
                   help="trainer options (spatialscout train-nbv --help lists them)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    try:
        from spatialscout_gym.nbv.training.sb3 import main
    except ImportError as exc:  # pragma: no cover - depends on the install
        from spatialscout_gym.core.errors import install_command
        raise CliError(f"train-nbv needs the RL extra ({exc}); {install_command('rl')}") from None
    main(list(args.options))   # a bad option raises ConfigError: one line at the CLI edge
    return 0
