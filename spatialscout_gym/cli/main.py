"""``spatialscout``: the command-line entry point.

Each subcommand lives in its own module of this package exposing ``register(subparsers)``; the
module's ``register`` adds a parser whose ``func(args) -> int`` runs it. Only the named command's
module is imported (``spatialscout score ...`` never loads the scene generator or SAPIEN), and
``spatialscout --help`` lists the commands from :data:`SUMMARIES` without importing any of them. Expected user errors are
raised as :class:`CliError`; together with the package's own error types
(:class:`~spatialscout_gym.core.errors.SpatialScoutError`) they are printed as one line with exit
code 2, and so is a missing optional extra (the extra and its ``pip install`` named).
``spatialscout --debug COMMAND ...`` prints the traceback as well. Any other exception is a
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
    "spend",
    "replay",
    "report",
    "verify",
    "plan",
    "train_nbv",
    "mcp",
    "view",
    "play",
)

SUMMARIES: dict[str, str] = {
    "score": "score maps (predictions.json) against ground_truth.json, Table-3 style",
    "scenes": "list, measure, export and render the offline scene catalog",
    "doctor": "check that SAPIEN can render here; print fixes if not",
    "run": "run one episode of an agent and write trace, predictions, result and frames",
    "evaluate": "run an agent on many scenes in parallel (resumable) and write a report",
    "compare": "put several evaluation reports side by side",
    "leaderboard": "one static page (plus JSON and markdown) over many evaluation directories",
    "spend": "show an evaluation's spend ledger and recorded spend; --rebuild a ledger that cannot be read",
    "replay": "score every map snapshot in the traces; write curves (JSON and PNG)",
    "report": "write report.json/md, replay curves, figures and index.html for an evaluation",
    "verify": "re-execute the recorded tool calls of runs and check their traces and scores",
    "plan": "how many scenes and seeds a comparison needs to detect a given difference",
    "train_nbv": "train a PPO next-best-view policy on procedural scenes (needs the [rl] extra; "
                 "--backend rllib: RLlib on a Ray cluster, the [ray] extra too)",
    "mcp": "serve one episode's ten tools over MCP (stdio or streamable HTTP on 127.0.0.1)",
    "view": "step through an episode in the browser",
    "play": "play an episode yourself in the browser (a human baseline)",
}
"""Command module -> the one line ``spatialscout --help`` shows for it: the ``help=`` its own
``register`` gives (a test keeps the two equal), here so the listing imports no command module."""


def named_command(argv: list[str]) -> str | None:
    """The subcommand module ``argv`` names (``train-nbv`` -> ``train_nbv``), or None: the first
    token that is not a top-level option, when it is a known command."""
    token = next((a for a in argv if not a.startswith("-")), None)
    name = token.replace("-", "_") if token else None
    return name if name in COMMANDS else None


def _top_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="spatialscout",
        description="SpatialScout as Gymnasium environments: score maps, browse and render the "
                    "offline scene catalog, run and evaluate agents.")
    from spatialscout_gym import __version__
    parser.add_argument("--version", action="version", version=f"spatialscout-gym {__version__}")
    parser.add_argument("--debug", action="store_true",
                        help="print the full traceback of an error instead of one line")
    return parser


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The full parser, or with ``only`` one that registers just that command: each command
    module imports what it needs at import time, and ``score`` must not pay for the scene
    generator or the episode (``benchmarks/bench_score_cli.py``)."""
    parser = _top_parser()
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMANDS if only is None else (only,):
        importlib.import_module(f"spatialscout_gym.cli.{name}").register(sub)
    return parser


def listing_parser() -> argparse.ArgumentParser:
    """The parser when no command is named (``spatialscout --help``, a typo): every command
    listed with its :data:`SUMMARIES` line, no command module imported
    (``benchmarks/bench_cli_startup.py``)."""
    parser = _top_parser()
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMANDS:
        sub.add_parser(name.replace("_", "-"), help=SUMMARIES.get(name, ""), add_help=False)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    name = named_command(argv)
    parser = build_parser(name) if name else listing_parser()
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
        # a preflight names the URL the user typed (credentials already removed); keys stay hidden
        shown = redact(message_of(exc), endpoints=not getattr(exc, "shows_endpoint", False))
        print(f"spatialscout: error: {shown}", file=sys.stderr)
        return 2
    except ModuleNotFoundError as exc:   # an optional extra that is not installed: one line, exit 2
        from spatialscout_gym.cli.errors import missing_extra_message
        line = missing_extra_message(exc)
        if line is None or getattr(args, "debug", False):
            raise
        print(f"spatialscout: error: {line}", file=sys.stderr)
        return 2
    except OSError as exc:   # a full disk, a path too long: one line, exit 2 (any other OSError is a bug: traceback)
        from spatialscout_gym.cli.errors import os_error_message
        line = os_error_message(exc)
        if line is None or getattr(args, "debug", False):
            raise
        print(f"spatialscout: error: {line}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("spatialscout: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
