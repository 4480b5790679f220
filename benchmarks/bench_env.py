"""Env benchmark: reset time and steps per second of a tool mix on CPU (software Vulkan).

    python benchmarks/bench_env.py [--scene SCENE] [--resolution 512] [--steps 300]

Writes ``benchmarks/results/bench_env.json``. The tool mix is what a mapping agent does: mostly
moves and rotations, a capture every few steps, pose queries, submissions, triangulations.
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from pathlib import Path

import numpy as np

MIX = (["move_camera"] * 3 + ["rotate_camera"] * 2 + ["capture_image"] * 2 + ["get_camera_pose",
       "submit_positions", "triangulate_observations"])


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scene", default="procedural", help="catalog id or 'procedural' (default)")
    ap.add_argument("--resolution", type=int, default=512)
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--resets", type=int, default=3)
    ap.add_argument("--out", type=Path, default=Path(__file__).parent / "results" / "bench_env.json")
    args = ap.parse_args(argv)

    from spatialscout_gym.core.limits import MAX_IMAGE_BUDGET
    from spatialscout_gym.envs.spatialscout_env import SpatialScoutEnv
    from spatialscout_gym.episode import TOOL_NAMES

    t0 = time.perf_counter()
    env = SpatialScoutEnv(args.scene, resolution=args.resolution, image_budget=MAX_IMAGE_BUDGET,
                          tool_call_budget=None)   # the most images an episode may have: no capture refused
    construct_s = time.perf_counter() - t0
    reset_s = []
    for i in range(args.resets):
        t = time.perf_counter()
        env.reset(seed=i)
        reset_s.append(time.perf_counter() - t)
    rng = np.random.default_rng(0)
    env.action_space.seed(0)
    tools = [MIX[i] for i in rng.integers(0, len(MIX), args.steps)]
    counts: dict[str, int] = {}
    t = time.perf_counter()
    for tool in tools:
        a = env.action_space.sample()
        a["tool"] = TOOL_NAMES.index(tool)
        if tool == "triangulate_observations":
            a["marks"][:, 0] = np.arange(len(a["marks"])) % 2  # frames 0 and 1 exist after 1 capture
        env.step(a)
        counts[tool] = counts.get(tool, 0) + 1
    step_s = time.perf_counter() - t
    env.close()
    result = {
        "scene": args.scene, "resolution": args.resolution, "steps": args.steps,
        "construct_s": round(construct_s, 3),
        "first_reset_s": round(reset_s[0], 3),
        "reset_s_median_after_first": round(float(np.median(reset_s[1:])), 4) if len(reset_s) > 1 else None,
        "steps_per_s": round(args.steps / step_s, 1), "tool_mix": counts,
        "machine": {"cpu": platform.processor() or platform.machine(), "python": platform.python_version()},
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))
    return result


if __name__ == "__main__":
    main()
