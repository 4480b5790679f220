"""``spatialscout``: the command-line entry point.

Each subcommand lives in its own module of this package exposing ``register(subparsers)``; the
module's ``register`` adds a parser whose ``func(args) -> int`` runs it. Expected user errors are
raised as :class:`CliError`; together with the package's own error types
(:class:`~spatialscout_gym.core.errors.SpatialScoutError`) they are printed as one line with exit
code 2. ``spatialscout --debug COMMAND ...`` prints the traceback as well. Any other exception is a
bug and keeps its traceback.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from spatialscout_gym.cli.errors import CliError

# Subcommand modules, in the order ``spatialscout --help`` lists them.
COMMANDS: tuple[str, ...] = (
    "score",
    "scenes",
    "doctor",
    "run",
    "evaluate",
    "compare",
    "leaderboard",
    "replay",
    "report",
    "train_nbv",
    "mcp",
    "view",
    "play",
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="spatialscout",
        description="SpatialScout as Gymnasium environments: score maps, browse and render the "
                    "offline scene catalog, run and evaluate agents.")
    from spatialscout_gym import __version__
    parser.add_argument("--version", action="version", version=f"spatialscout-gym {__version__}")
    parser.add_argument("--debug", action="store_true",
                        help="print the full traceback of an error instead of one line")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMANDS:
        importlib.import_module(f"spatialscout_gym.cli.{name}").register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    from spatialscout_gym.core.errors import SpatialScoutError, message_of
    try:
        return int(args.func(args) or 0)
    except (CliError, SpatialScoutError) as exc:
        from spatialscout_gym.core.redact import redact
        if getattr(args, "debug", False):
            import traceback
            print(redact("".join(traceback.format_exception(exc))), file=sys.stderr, end="")
        print(f"spatialscout: error: {redact(message_of(exc))}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("spatialscout: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
