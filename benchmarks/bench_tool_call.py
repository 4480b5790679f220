"""Tool-call wrapper benchmark: the cost of one tool call through ``ToolCallWrapper`` (reply
parsing, encoding into the env's Dict action, ``gym.make``'s checker wrappers, the env step, the
reply text, JPEG and caption) next to the same call on the bare ``Episode``.

    python benchmarks/bench_tool_call.py [--scene Kitchen_01] [--resolution 128] [--replies 60]

Writes ``benchmarks/results/bench_tool_call.json``. Each reply carries the same five calls (a move,
a rotation, a capture, a triangulation, a submission of the whole inventory); the capture's render
and JPEG encoding dominate both paths, so the figures also list a no-capture mix.
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from pathlib import Path


def _calls(ids: list[str], with_capture: bool) -> list[tuple[str, dict]]:
    calls = [("move_camera", {"right": 0.05}), ("rotate_camera", {"yaw": 3.0})]
    if with_capture:
        calls.append(("capture_image", {}))
    calls += [("triangulate_observations", {"observations": [{"frame_id": 0, "u": 10.0, "v": 12.0},
                                                             {"frame_id": 0, "u": 14.0, "v": 12.0}]}),
              ("submit_positions", {"positions": {i: [0.5, 0.1, -0.2] for i in ids}})]
    return calls


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scene", default="Kitchen_01")
    ap.add_argument("--resolution", type=int, default=128)
    ap.add_argument("--replies", type=int, default=60)
    ap.add_argument("--out", type=Path, default=Path(__file__).parent / "results" / "bench_tool_call.json")
    args = ap.parse_args(argv)

    import gymnasium as gym

    from spatialscout_gym.envs.session import EpisodeSession
    from spatialscout_gym.scenes.catalog import scene_by_name
    from spatialscout_gym.wrappers.tool_call import ToolCallWrapper

    spec = scene_by_name(args.scene)
    figures: dict = {"scene": args.scene, "resolution": args.resolution, "replies": args.replies,
                     "python": platform.python_version(), "machine": platform.machine()}
    for with_capture in (True, False):
        key = "with_capture" if with_capture else "no_capture"
        budget = 10 * args.replies + 10
        env = ToolCallWrapper(gym.make(f"SpatialScout/{args.scene}-v0", resolution=args.resolution,
                                       image_budget=budget, tool_call_budget=None), model_call_budget=budget)
        env.reset(seed=0)
        calls = _calls(env.episode.inventory_ids, with_capture)
        t = time.perf_counter()
        for _ in range(args.replies):
            env.step([{"name": n, "arguments": a} for n, a in calls])
        wrapped_s = (time.perf_counter() - t) / (args.replies * len(calls))
        env.close()
        with EpisodeSession(resolution=args.resolution, image_budget=budget, tool_call_budget=None) as session:
            session.load(spec)
            ep = session.new_episode()
            t = time.perf_counter()
            for _ in range(args.replies):
                for n, a in calls:
                    ep.call(n, a)
            bare_s = (time.perf_counter() - t) / (args.replies * len(calls))
        figures[key] = {"wrapper_ms_per_call": 1e3 * wrapped_s, "episode_ms_per_call": 1e3 * bare_s,
                        "overhead_ms_per_call": 1e3 * (wrapped_s - bare_s)}
        print(f"{key:13s} wrapper {1e3 * wrapped_s:7.3f} ms/call   bare episode {1e3 * bare_s:7.3f} ms/call   "
              f"overhead {1e3 * (wrapped_s - bare_s):6.3f} ms/call")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(figures, indent=1) + "\n")
    print(f"wrote {args.out}")
    return figures


if __name__ == "__main__":
    main()
