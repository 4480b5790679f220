"""``spatialscout spend DIR``: an evaluation's spend ledger (``DIR/spend.json``, kept by
``--max-cost-usd``) next to the spend its run directories record; ``--rebuild`` writes a ledger
that cannot be read anew from the recorded model calls (docs/models.md, "Cost before and during").

The rebuilt total is a lower bound (a call whose episode wrote no result is not recorded), and it
never lowers a ledger that can still be read: money spent stays spent."""

from __future__ import annotations

import argparse
import os
import stat
from pathlib import Path

from spatialscout_gym.cli.errors import CliError

HELP = "show an evaluation's spend ledger and recorded spend; --rebuild a ledger that cannot be read"


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = subparsers.add_parser("spend", help=HELP, description=__doc__.split("\n\n")[0].replace("``", ""))
    p.add_argument("dir", type=Path, metavar="DIR", help="evaluation directory")
    p.add_argument("--rebuild", action="store_true",
                   help="write DIR/spend.json from the recorded model calls (a lower bound; never below a "
                        "ledger that can still be read); a link, FIFO or file there is replaced, never its target")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from spatialscout_gym.conversation.spend import SPEND_FILE, SpendLedgerError, read_spend
    from spatialscout_gym.core.files import write_json_atomic
    from spatialscout_gym.eval.analysis.recorded_spend import recorded_spend
    from spatialscout_gym.eval.pages.progress import is_running
    root: Path = args.dir
    if not root.is_dir():
        raise CliError(f"{root} is not a directory: give an evaluation directory (evaluate --out)")
    ledger_path = root / SPEND_FILE
    try:
        ledger: float | None = read_spend(ledger_path)
        problem = None
    except SpendLedgerError as exc:
        ledger, problem = None, str(exc).split("; the run's spend", 1)[0]
    rec = recorded_spend(root)
    shown = "none" if ledger is None and problem is None else ("unreadable" if ledger is None else f"${ledger:.4f}")
    print(f"ledger {ledger_path}: {shown}")
    if problem:
        print(f"  {problem}")
    print(f"recorded: ${rec.usd:.4f} over {rec.calls} live model calls in {rec.runs} model runs"
          + (f" ({rec.unpriced} without a price)" if rec.unpriced else "")
          + (f" ({rec.unreadable} result.json unreadable)" if rec.unreadable else ""))
    if not args.rebuild:
        return 0
    if is_running(root):
        raise CliError(f"an evaluate is running in {root}: stop it before rebuilding its ledger")
    try:
        st = os.lstat(ledger_path)
    except FileNotFoundError:
        st = None
    if st is not None and stat.S_ISDIR(st.st_mode):
        raise CliError(f"{ledger_path} is a directory: move it away, then rebuild")
    usd = max(rec.usd, ledger or 0.0)
    # os.replace puts the new file in the link's (or FIFO's) place; the link's target is not touched
    write_json_atomic(ledger_path, {"usd": usd, "calls": rec.calls}, indent=None)
    print(f"wrote {ledger_path}: ${usd:.4f}" + (" (the ledger's own total, above the recorded spend)"
                                                   if ledger is not None and ledger > rec.usd else
                                                   " (the recorded spend: a lower bound)"))
    return 0
