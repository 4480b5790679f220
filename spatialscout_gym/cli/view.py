"""``spatialscout view DIR``: the browser trajectory viewer of one run directory
(docs/protocol.md section 7), served on 127.0.0.1 or written as static files with ``--out``."""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from spatialscout_gym.cli.errors import CliError


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "view", help="step through an episode in the browser (camera path, frames, marks, map)",
        description="Open a local page that steps through a run directory call by call: each tool "
                    "call with its result, the frame it shows with the marked pixels, the camera "
                    "path, triangulated points with their rays and the accepted map on a top-down "
                    "map, and (a toggle) the ground-truth boxes and per-target IoU. Keys: "
                    "left/right or j/k step, Home/End, t toggles the ground truth.")
    p.add_argument("dir", type=Path, metavar="DIR", help="run directory (with result.json and trace.jsonl)")
    p.add_argument("--out", type=Path, metavar="SITE",
                   help="write the page as static files under SITE (open SITE/index.html) and exit")
    p.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (default: a free one)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from spatialscout_gym.eval.viewer.data import ViewerError
    from spatialscout_gym.eval.viewer.server import serve, write_site
    if not args.dir.is_dir():
        raise CliError(f"{args.dir} is not a directory (expected a run directory)")
    if not 0 <= args.port < 65536:
        raise CliError(f"--port must be in 0..65535, got {args.port}")
    try:
        if args.out is not None:
            site = write_site(args.dir, args.out)
            print(f"wrote {site}/index.html")
            return 0
        site = write_site(args.dir, tempfile.mkdtemp(prefix="spatialscout-view-"))
        httpd, _, url = serve(site, args.port)
    except ViewerError as exc:
        raise CliError(str(exc)) from None
    except OSError as exc:
        raise CliError(f"cannot serve on 127.0.0.1:{args.port}: {exc.strerror}") from None
    print(f"viewer of {args.dir} at {url}  (Ctrl-C stops)", flush=True)
    try:
        while True:
            time.sleep(3600)
    finally:
        httpd.shutdown()
