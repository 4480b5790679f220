"""How soon refusals and handshakes are answered: seconds the tests assert as behaviour only.

    python benchmarks/bench_answers.py [--repeats 5] [--scene Kitchen_01]

- ``mcp handshake``: ``spatialscout mcp --scene SCENE`` over stdio with the real ``mcp`` client, from
  the process start to the answered handshake, beside the time a fresh interpreter takes to import
  the server's modules, and to the first tool result (which waits for the renderer's warm-up);
- ``6000 marks refused``: a triangulation of 6000 marks and of 6000 rays, refused before any solve;
- ``unreachable endpoint``: ``spatialscout run`` and ``evaluate`` with a ``--base-url`` nobody
  listens on, refused in one line before any scene is built.

Median and minimum of ``--repeats`` (one MCP episode per repeat). Prints and writes
``benchmarks/results/bench_answers.json``.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench_scoring import machine, publish


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def mcp_episode(scene: str, resolution: int) -> dict[str, float]:
    """Seconds from launching ``spatialscout mcp`` to its answered handshake and first tool result."""
    import anyio
    from mcp import Client, StdioServerParameters
    from mcp.client.stdio import stdio_client
    times: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as tmp:
        params = StdioServerParameters(command=sys.executable, env=dict(os.environ), args=[
            "-m", "spatialscout_gym.cli.main", "mcp", "--scene", scene, "--out", str(Path(tmp) / "run"),
            "--resolution", str(resolution)])

        async def main() -> None:
            t0 = time.perf_counter()
            async with Client(stdio_client(params, errlog=subprocess.DEVNULL), mode="legacy") as client:
                times["handshake_s"] = time.perf_counter() - t0
                await client.call_tool("get_camera_pose", {})
                times["first_tool_result_s"] = time.perf_counter() - t0
                await client.call_tool("finish_mapping", {})
        anyio.run(main)
    return times


def server_imports() -> float:
    """Seconds a fresh interpreter takes to import what ``spatialscout mcp`` imports before it answers."""
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-c", "import spatialscout_gym.cli.main, mcp.server.stdio, "
                    "spatialscout_gym.servers.mcp_server"], check=True)
    return time.perf_counter() - t0


def refuse_marks() -> float:
    """Seconds to refuse 6000 marks (two frames' geometry) and 6000 rays."""
    from spatialscout_gym.core.renderer_api import BlankRenderer
    from spatialscout_gym.episode import Episode
    from spatialscout_gym.core.triangulation import triangulate_marks, triangulate_rays
    from spatialscout_gym.scenes.catalog import scene_by_name
    spec = scene_by_name("procedural:1")
    ep = Episode(spec.public, BlankRenderer(spec, spec.public.intrinsics.scaled(64, 64)), image_budget=10,
                 tool_call_budget=20)
    ep.move_camera(right=0.5)
    ep.capture_image()
    marks = [{"frame_id": i % 2, "u": 10.0, "v": 10.0} for i in range(6000)]
    t0 = time.perf_counter()
    results = [ep.triangulate_observations(marks),
               triangulate_marks(marks, {f: fr.geometry for f, fr in ep.frames.items()}, 3.0),
               triangulate_rays([[0, 0, 0]] * 6000, [[1, 0, 0]] * 6000)]
    elapsed = time.perf_counter() - t0
    assert not any(r.ok for r in results)
    return elapsed


def refuse_endpoint(command: str, tmp: Path) -> float:
    """Seconds for ``run``/``evaluate`` to refuse a ``--base-url`` nobody listens on (exit code 2)."""
    from spatialscout_gym.cli.main import main
    url = f"http://127.0.0.1:{_free_port()}/v1"
    out = tmp / f"{command}-{time.perf_counter_ns()}"
    where = ["--scene", "procedural:1"] if command == "run" else ["--scenes", "procedural:1", "--no-progress"]
    t0 = time.perf_counter()
    with contextlib.redirect_stderr(io.StringIO()), contextlib.redirect_stdout(io.StringIO()):
        code = main([command, "--agent", "openai:m1", "--base-url", url, "--api-key", "local", *where,
                     "--out", str(out)])
    elapsed = time.perf_counter() - t0
    assert code == 2 and not out.exists(), code
    return elapsed


def _row(name: str, values: list[float]) -> dict:
    row = {"case": name, "s_median": round(statistics.median(values), 4), "s_min": round(min(values), 4),
           "runs": len(values)}
    print(f"{name:36s} {row['s_median']:.4f} s median (min {row['s_min']:.4f}, {len(values)} runs)", file=sys.stderr)
    return row


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--scene", default="Kitchen_01", help="the MCP episode's scene")
    ap.add_argument("--resolution", type=int, default=256, help="the MCP episode's render grid")
    ap.add_argument("--out", type=Path, default=Path(__file__).parent / "results" / "bench_answers.json")
    args = ap.parse_args(argv)
    episodes = [mcp_episode(args.scene, args.resolution) for _ in range(args.repeats)]
    rows = [_row("mcp handshake (stdio)", [e["handshake_s"] for e in episodes]),
            _row("mcp server imports (fresh process)", [server_imports() for _ in range(args.repeats)]),
            _row("mcp first tool result (warm-up)", [e["first_tool_result_s"] for e in episodes]),
            _row("6000 marks and rays refused", [refuse_marks() for _ in range(args.repeats)])]
    with tempfile.TemporaryDirectory() as tmp:
        for command in ("run", "evaluate"):
            rows.append(_row(f"{command}: unreachable --base-url refused",
                             [refuse_endpoint(command, Path(tmp)) for _ in range(args.repeats)]))
    return publish({"benchmark": "answers", "repeats": args.repeats, "scene": args.scene,
                    "resolution": args.resolution, "machine": machine(), "load_average": list(os.getloadavg()),
                    "rows": rows}, args.out)


if __name__ == "__main__":
    main()
