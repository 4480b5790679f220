"""Checks of the episode options that ``run``, ``evaluate`` and ``mcp`` share."""

from __future__ import annotations

import argparse

from spatialscout_gym.cli.errors import CliError


def check_episode_options(args: argparse.Namespace) -> None:
    """Refuse an image budget or call budget below 1 or a render grid below 8 pixels."""
    if args.image_budget < 1:
        raise CliError(f"--image-budget must be >= 1 (the initial image counts), got {args.image_budget}")
    if args.call_budget < 1:
        raise CliError(f"--call-budget must be >= 1, got {args.call_budget}")
    if args.resolution < 8:
        raise CliError(f"--resolution must be >= 8 pixels, got {args.resolution}")
