"""``spatialscout verify DIR...``: re-execute recorded tool calls and check every recorded figure.

    spatialscout verify runs/origin runs/gpt-x          # one line per episode; exit 0 when all verify
    spatialscout verify runs/origin --json              # the verdicts as JSON

Each DIR (an evaluation directory or a lone run directory, e.g. from ``play``) gets
``DIR/verify.json`` (a record for the submitter: ``report`` and ``leaderboard`` verify for
themselves and never trust it). Verdicts are also kept, keyed by the digest of the files they
judged, the code and data of the package and every other file verification reads, in a cache
outside the directory (``$XDG_CACHE_HOME/spatialscout/verify``), which ``report`` and
``leaderboard`` reuse; ``--no-cache`` re-executes everything.
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from pathlib import Path

from spatialscout_gym.cli.errors import CliError


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = subparsers.add_parser(
        "verify", help="re-execute the recorded tool calls of runs and check their traces and scores",
        description="For every planned episode of each DIR (a run directory or an evaluation "
                    "directory), check that its path names the scene and seed its records name, rebuild "
                    "the scene (its content hash and catalog version must match the record) and replay "
                    "it with no renderer: a model run's recorded replies go through the same harness "
                    "(every request, tool call, reminder, the end rule, usage and harness.json are "
                    "re-derived), any other run's tool calls on a fresh episode. Every trace event, the "
                    "predictions, the ground truth and result.json must equal the recomputed ones "
                    "(numbers within a relative 1e-9, texts word for word with their numbers compared "
                    "the same way). Prints 'KEY: verified', 'KEY: diverged at event N: tool, field, "
                    "recorded vs recomputed', 'KEY: tool-side only' (a model run without a complete "
                    "harness.json), 'KEY: unplanned' or 'KEY: missing' (planned, no result) per episode; exit 0 "
                    "only when every planned episode verified or is recorded as failed (its failed attempt archived "
                    "with its trace; a note alone is refused). Writes "
                    "DIR/verify.json into each DIR (evaluation or run directory). See docs/verify.md.")
    p.add_argument("dirs", nargs="+", type=Path, metavar="DIR", help="run or evaluation directories")
    p.add_argument("--json", action="store_true", help="print the verdicts as one JSON object")
    p.add_argument("--images", action="store_true",
                   help="also re-render every capture with SAPIEN and compare the SHA-256 of the raw RGB "
                        "frames with frames/sha256.json (another renderer: 'not comparable', not a failure)")
    p.add_argument("--allow-tool-side-only", action="store_true",
                   help="exit 0 even when a model run has no complete harness.json, so only its tool calls "
                        "could be re-executed (its replies unchecked); such runs are still listed as "
                        "'tool-side only', never as verified")
    p.add_argument("--workers", type=int, default=1, metavar="N",
                   help="verify N episodes at a time in separate processes (default 1)")
    p.add_argument("--no-cache", action="store_true",
                   help="re-execute every episode: neither reuse nor keep a verdict in the cache outside "
                        "the directory")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from spatialscout_gym.eval.layout import EvalDirError
    from spatialscout_gym.eval.verification.verify import (ABS_TOLERANCE, REL_TOLERANCE, TOOL_SIDE_ONLY, verify_dir,
                                              write_verification)
    out: dict[str, list] = {}
    for d in args.dirs:
        if not d.is_dir():
            raise CliError(f"{d} is not a directory (expected a run or evaluation directory)")
        try:
            checks = verify_dir(d, progress=not args.no_progress and not args.json, images=args.images,
                                workers=max(1, args.workers), use_cache=not args.no_cache)
        except (FileNotFoundError, EvalDirError) as exc:
            raise CliError(str(exc)) from None
        # a lone run directory (e.g. a `play` run) keeps its verdict too, so its leaderboard row
        # can show verified; verify.json is not one of the checked files
        write_verification(d, checks)
        out[str(d)] = checks
        if not args.json:
            for c in checks:
                print(f"{d}/{c.line()}" if len(args.dirs) > 1 else c.line())
    # a failed episode (every attempt failed) is accounted for by report; any other status fails
    # a repeated scene (every seed one conversation: a deterministic model) verified and counts once
    accepted = ("verified", "repeated", "failed") + ((TOOL_SIDE_ONLY,) if args.allow_tool_side_only else ())
    ok = all(c.status in accepted for cs in out.values() for c in cs)
    if args.json:
        print(json.dumps({"verified": ok, "tool_side_only_allowed": bool(args.allow_tool_side_only),
                          "rel_tolerance": REL_TOLERANCE, "abs_tolerance": ABS_TOLERANCE,
                          "dirs": {d: [c.to_json() for c in cs] for d, cs in out.items()}}, indent=2))
    else:
        counts = Counter(c.status for cs in out.values() for c in cs)
        n = sum(counts.values()) - counts["failed"]
        rest = [f"{counts[k]} {k}" for k in ("repeated", TOOL_SIDE_ONLY, "diverged", "refused", "unplanned", "missing",
                                             "failed")
                if counts[k]]
        note = (" (tool-side only accepted by --allow-tool-side-only: those replies are unchecked)"
                if args.allow_tool_side_only and counts[TOOL_SIDE_ONLY] else "")
        print(f"{counts['verified']} of {n} episode(s) verified" + (f"; {', '.join(rest)}" if rest else "") + note)
    return 0 if ok else 1
