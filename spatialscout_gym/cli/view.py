"""``spatialscout view DIR``: the episode viewer page of a run or evaluation directory, served on
127.0.0.1 (the URL is printed) or written as static files with ``--out SITE``."""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

from spatialscout_gym.cli.errors import CliError


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("view", help="step through an episode in the browser",
                       description="Open a local page (127.0.0.1) that steps through a run call by call: "
                                   "tool calls and results, frames with clicked pixels, a top-down map with "
                                   "the camera path, triangulated points and the accepted map, and after the "
                                   "episode the ground truth with per-target IoU (keys: left/right, g). An "
                                   "evaluation directory lists its episodes, sortable by score.")
    p.add_argument("dir", metavar="DIR", help="a run directory, or a directory holding run directories")
    p.add_argument("--out", metavar="SITE", help="write the page as static files here and exit")
    p.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (default: a free one)")
    p.add_argument("--overwrite", action="store_true", help="let --out replace an existing site (index.html)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from spatialscout_gym.servers.viewer.server import serve_directory
    from spatialscout_gym.servers.viewer.site import write_site
    src = Path(args.dir)
    if not src.is_dir():
        raise CliError(f"{src}: no such directory")
    if args.out and (Path(args.out) / "index.html").exists() and not args.overwrite:
        raise CliError(f"--out {args.out} already holds index.html; pass --overwrite to replace it")
    skipped: list[Path] = []
    try:
        if args.out:
            out = write_site(src, args.out, skipped)
        else:
            site = write_site(src, tempfile.mkdtemp(prefix="spatialscout-view-"), skipped)
    except FileNotFoundError as exc:
        raise CliError(str(exc)) from None
    except OSError as exc:   # the output cannot be written (a file where a folder goes, no space, ...)
        raise CliError(f"{exc.filename or args.out}: cannot be read or written ({exc.__class__.__name__}: "
                       f"{exc.strerror or exc})") from None
    for p in skipped[:5]:
        print(f"skipped {p}: a symbolic or hard link, a directory, not a regular file or not a PNG of frame "
              "size (the viewer copies only the run's own frame files)", file=sys.stderr)
    if len(skipped) > 5:
        print(f"skipped {len(skipped) - 5} more such entries", file=sys.stderr)
    if args.out:
        print(f"wrote {out}/index.html")
        return 0
    server = serve_directory(site, args.port)
    print(f"viewing {src} at http://127.0.0.1:{server.server_address[1]}/  (Ctrl-C stops)", flush=True)
    try:
        while True:
            time.sleep(3600)
    finally:
        server.shutdown()
