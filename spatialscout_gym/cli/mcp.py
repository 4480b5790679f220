"""``spatialscout mcp``: serve one episode's ten tools to any MCP client.

    spatialscout mcp --scene procedural:7 --out runs/mcp-p7                      # stdio
    spatialscout mcp --scene procedural:7 --out runs/mcp-p7 --transport http --port 8765
                                                     # http://127.0.0.1:8765/mcp (loopback only)
    spatialscout mcp --scene procedural:7 --out runs/mcp-p7 --transport http --generate-token
                               # prints a random token; clients send "Authorization: Bearer <token>"

The task prompt (--prompt STYLE, as for `run`) is the server's instructions and also the MCP
prompt "spatialscout_task" (for clients that ignore instructions). The server answers the
client's handshake at once; the renderer warms up meanwhile and the first tool call waits for it. Over HTTP, a bearer token (SPATIALSCOUT_MCP_TOKEN, --token-file
or --generate-token) keeps other local clients out of the episode.

The run directory (trace.jsonl, result.json, predictions.json, ground_truth.json, frames/) is
written when the episode ends (finish_mapping) or when the server stops.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from spatialscout_gym.cli.errors import CliError
from spatialscout_gym.cli.options import check_episode_options, scene_from_arg
from spatialscout_gym.conversation.prompt import DEFAULT_PROMPT_STYLE, PROMPT_STYLE_ALIASES, PROMPT_STYLES


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = subparsers.add_parser(
        "mcp", help="serve one episode's ten tools over MCP (stdio or streamable HTTP on 127.0.0.1)",
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--scene", required=True, help="catalog scene id, procedural:<seed>, or a scene spec JSON path")
    p.add_argument("--out", required=True, type=Path, help="run directory to write when the episode ends")
    p.add_argument("--transport", choices=("stdio", "http"), default="stdio", help="default stdio")
    p.add_argument("--port", type=int, default=8765, help="HTTP port on 127.0.0.1 (default 8765)")
    p.add_argument("--resolution", type=int, default=512, help="square render size in pixels (default 512)")
    p.add_argument("--image-budget", type=int, default=100, help="images, the initial one included (default 100)")
    p.add_argument("--call-budget", type=int, default=100, help="tool calls per episode (default 100)")
    p.add_argument("--overwrite", action="store_true", help="replace an existing non-empty --out")
    p.add_argument("--prompt", dest="prompt_style", choices=PROMPT_STYLES + tuple(PROMPT_STYLE_ALIASES),
                   default=DEFAULT_PROMPT_STYLE, metavar="STYLE",
                   help="the task prompt's wording, served as the instructions and the MCP prompt: "
                        f"{', '.join(PROMPT_STYLES)} (default {DEFAULT_PROMPT_STYLE}), as `run --prompt` "
                        "(docs/protocol.md section 10.1)")
    p.add_argument("--token-file", type=Path, default=None,
                   help="HTTP only: require 'Authorization: Bearer <token>' with the token in this file "
                        "(default: $SPATIALSCOUT_MCP_TOKEN if set; else no token)")
    p.add_argument("--generate-token", action="store_true",
                   help="HTTP only: require a fresh random bearer token, printed to stderr")
    p.set_defaults(func=run)


TOKEN_ENV = "SPATIALSCOUT_MCP_TOKEN"
MIN_TOKEN_CHARS = 16


TOKEN_FILE_LIMIT = 4096
"""Bytes a ``--token-file`` may hold (a token is a few dozen)."""


def http_token(args: argparse.Namespace) -> str | None:
    """The bearer token the HTTP transport requires, or None; a one-line error for a token given
    with stdio, a missing or short token file."""
    import os
    import secrets
    given = [n for n, v in (("--token-file", args.token_file), ("--generate-token", args.generate_token)) if v]
    if len(given) > 1:
        raise CliError("give either --token-file or --generate-token, not both")
    if given and args.transport != "http":
        raise CliError(f"{given[0]} applies to --transport http (stdio has no other clients)")
    if args.transport != "http":
        return None
    if args.generate_token:
        return secrets.token_urlsafe(24)
    if args.token_file is not None:
        if not os.path.lexists(args.token_file):
            raise CliError(f"--token-file {args.token_file} does not exist")
        # a FIFO, a directory or a device is refused as such, before anything opens it (a FIFO opened
        # to read would meet its writer); bytes that are not UTF-8 in one line
        import stat
        from spatialscout_gym.cli.input_files import read_text
        try:
            mode = os.stat(args.token_file).st_mode
        except OSError as exc:
            raise CliError(f"--token-file {args.token_file}: cannot read it ({exc.strerror})") from None
        if not stat.S_ISREG(mode):
            kind = "a directory" if stat.S_ISDIR(mode) else "a FIFO" if stat.S_ISFIFO(mode) else "a device or socket"
            raise CliError(f"--token-file {args.token_file}: {kind}, not a regular file")
        token = read_text(args.token_file, "--token-file", TOKEN_FILE_LIMIT).strip()
        source = f"--token-file {args.token_file}"
    else:
        token = os.environ.get(TOKEN_ENV, "").strip()
        source = f"${TOKEN_ENV}"
        if not token:
            return None
    if len(token) < MIN_TOKEN_CHARS or any(c.isspace() for c in token):
        raise CliError(f"the bearer token from {source} must be at least {MIN_TOKEN_CHARS} characters "
                       f"without spaces (or use --generate-token)")
    return token


STDIO_REFUSAL_WAIT_S = 10.0
"""How long a server that cannot start waits for the client's first request to answer it."""


def refuse_stdio_client(reason: str) -> None:
    """Answer the stdio client's first request (``initialize``) with a JSON-RPC error carrying
    ``reason``, so that the client reports it; the server then exits (the caller prints the same
    line to stderr). Gives up after :data:`STDIO_REFUSAL_WAIT_S` seconds without a request."""
    import json
    import os
    import select
    import sys
    import time
    from spatialscout_gym.core.redact import redact
    deadline = time.monotonic() + STDIO_REFUSAL_WAIT_S
    buf = b""
    try:
        if sys.stdin is None or sys.stdin.isatty():   # a person at a terminal reads stderr
            return
        fd = sys.stdin.fileno()
        while time.monotonic() < deadline:
            ready, _, _ = select.select([fd], [], [], max(0.0, deadline - time.monotonic()))
            chunk = os.read(fd, 65536) if ready else b""
            if not chunk:
                return
            buf += chunk
            while b"\n" in buf:
                line, buf = buf.split(b"\n", 1)
                try:
                    msg = json.loads(line)
                except ValueError:
                    continue
                if isinstance(msg, dict) and "id" in msg and "method" in msg:
                    reply = {"jsonrpc": "2.0", "id": msg["id"], "error": {"code": -32603, "message": redact(reason)}}
                    sys.stdout.write(json.dumps(reply) + "\n")
                    sys.stdout.flush()
                    return
    except (OSError, ValueError):   # no usable stdin (not a stdio client): stderr has the line
        return


def check_vlm_extra(transport: str) -> None:
    """Raise ``ModuleNotFoundError`` for the first module of the ``vlm`` extra the server needs and
    cannot import (the CLI prints the one-line install hint), before any scene is built."""
    import importlib
    for module in ("anyio", "mcp", "mcp.types") + (("uvicorn", "starlette") if transport != "stdio" else ()):
        importlib.import_module(module)


def run(args: argparse.Namespace) -> int:
    from spatialscout_gym.servers.mcp_server import McpEpisode, serve_http, serve_stdio, stdout_to_stderr
    check_vlm_extra(args.transport)
    check_episode_options(args)
    if not 1 <= args.port <= 65535:
        raise CliError(f"--port must be in 1..65535, got {args.port}")
    token = http_token(args)
    from spatialscout_gym.core.errors import SpatialScoutError, message_of
    try:
        with stdout_to_stderr():  # keep the stdio wire clean while the scene is built
            try:
                spec = scene_from_arg(args.scene)
                # the renderer warms up in the background: the client's handshake is answered at once,
                # the first tool call waits for frame 0
                session = McpEpisode(spec, args.out, resolution=args.resolution, image_budget=args.image_budget,
                                     tool_call_budget=args.call_budget, overwrite=args.overwrite,
                                     prompt_style=args.prompt_style, background=True)
            except FileExistsError as exc:
                raise CliError(f"{exc}; choose another --out or pass --overwrite") from None
    except (CliError, SpatialScoutError) as exc:
        if args.transport == "stdio":   # the client hears why, not just "Connection closed"
            refuse_stdio_client(f"spatialscout mcp cannot start: {message_of(exc)}")
        raise
    if args.transport == "stdio":
        serve_stdio(session)
    else:
        import sys
        print(f"spatialscout mcp: serving {spec.scene_id} on http://127.0.0.1:{args.port}/mcp "
              f"(Ctrl-C to stop; run directory {args.out})", file=sys.stderr)
        if token is None:
            print("spatialscout mcp: no bearer token: any local process can call the tools "
                  "(set SPATIALSCOUT_MCP_TOKEN, --token-file or --generate-token)", file=sys.stderr)
        elif args.generate_token:
            print(f"spatialscout mcp: clients must send the header 'Authorization: Bearer {token}'",
                  file=sys.stderr)
        serve_http(session, args.port, token=token)
    return 0
