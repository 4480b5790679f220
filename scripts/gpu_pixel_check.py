"""Pixels of the NBV vector env's camera-group render against one-camera-at-a-time rendering.

    python scripts/gpu_pixel_check.py --render-device cuda --num-envs 16 --steps 24 --out check.json

Two ``NBVVectorEnv`` with the same seeds and actions, one with ``batched_render=True`` (one
``CameraGroup`` render of every sub-env's capture per step; on CUDA SAPIEN's batched camera group)
and one with ``batched_render=False`` (each sub-env renders its own capture). Every observation
array is compared after every step. Writes the largest absolute difference per observation key,
the share of equal values and whether every step matched bit for bit; exit 0 only when they all
did. ``scripts/gpu_check.sh`` runs it.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--render-device", default=None, help="SAPIEN render device, e.g. cuda (default: SAPIEN's)")
    ap.add_argument("--num-envs", type=int, default=4)
    ap.add_argument("--steps", type=int, default=12)
    ap.add_argument("--resolution", type=int, default=64)
    ap.add_argument("--out", type=Path, required=True, help="JSON file to write")
    args = ap.parse_args(argv)

    import spatialscout_gym  # noqa: F401  (registers the ids)
    from spatialscout_gym.nbv import NBVVectorEnv

    kw = dict(resolution=args.resolution, obs_size=args.resolution, image_budget=8, reconfigure_every=2)
    if args.render_device:
        kw["render_device"] = args.render_device
    t0 = time.perf_counter()
    batched = NBVVectorEnv(args.num_envs, batched_render=True, **kw)
    plain = NBVVectorEnv(args.num_envs, batched_render=False, **kw)
    worst: dict[str, float] = {}
    equal = total = 0
    all_equal = True

    def compare(a: dict, b: dict) -> None:
        nonlocal equal, total, all_equal
        for k in a:
            x, y = np.asarray(a[k], dtype=np.float64), np.asarray(b[k], dtype=np.float64)
            diff = np.abs(x - y)
            worst[k] = max(worst.get(k, 0.0), float(np.nanmax(diff)) if diff.size else 0.0)
            same = (x == y) | (np.isnan(x) & np.isnan(y))
            equal, total = equal + int(same.sum()), total + same.size
            all_equal = all_equal and bool(same.all())

    ob, _ = batched.reset(seed=11)
    op, _ = plain.reset(seed=11)
    compare(ob, op)
    rng = np.random.default_rng(0)
    n_actions = int(batched.single_action_space.n)
    for _ in range(args.steps):
        actions = rng.integers(n_actions, size=args.num_envs)
        ob = batched.step(actions)[0]
        op = plain.step(actions)[0]
        compare(ob, op)
    result = {"render_device": args.render_device or "default", "num_envs": args.num_envs,
              "steps": args.steps, "resolution": args.resolution,
              "batched_render": bool(batched.batched_render), "bit_identical": all_equal,
              "equal_fraction": equal / max(total, 1), "max_abs_diff": worst,
              "seconds": round(time.perf_counter() - t0, 2)}
    batched.close()
    plain.close()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result))
    return 0 if all_equal else 1


if __name__ == "__main__":
    sys.exit(main())
