"""Steps per CPU second of ``SpatialScout/NBV-v2`` (``--env-id``) with each research observation on
(``privileged_obs``), against the plain env, in one run: what depth, segmentation, the point cloud
and the occupancy grid cost.

    python benchmarks/bench_nbv_obs.py                  # 64 px, 8 rounds of 40 steps per row
    python benchmarks/bench_nbv_obs.py --rounds 4 --steps 25

Every row is one env made with the same arguments and seed (procedural scenes, V = 20,
``reconfigure_every`` 16, the same random actions: the same scenes and camera paths), so scene
generation, resets, rendering, mapping and scoring are all in. All rows' envs are built and warmed
up first; then the rows take turns, ``--steps`` steps each per round, for ``--rounds`` rounds, so a
change in the machine's load hits every row alike. Per row: steps per CPU second of this process
(``time.process_time``: the steadier figure on a shared machine) and per wall-clock second, and the
ratio of each to the plain row. Prints a table and writes ``benchmarks/results/bench_nbv_obs.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from pathlib import Path

import numpy as np

ENV_IDS = ("SpatialScout/NBV-v2", "SpatialScout/NBV-v3", "SpatialScout/NBV-v1")

ROWS: dict[str, dict] = {
    "plain": {},
    "depth": {"privileged_obs": ["depth"]},
    "segmentation": {"privileged_obs": ["segmentation"]},
    "points": {"privileged_obs": ["points"]},
    "occupancy": {"privileged_obs": ["occupancy"]},
    "occupancy reward": {"reward_occupancy_weight": 1.0},
    "depth+segmentation+occupancy": {"privileged_obs": ["depth", "segmentation", "occupancy"]},
    "all four": {"privileged_obs": True},
}
"""Row name -> the arguments it adds to the plain env's."""


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--env-id", default="SpatialScout/NBV-v2", choices=ENV_IDS,
                   help="the NBV env measured (default NBV-v2)")
    p.add_argument("--resolution", type=int, default=64)
    p.add_argument("--rounds", type=int, default=8)
    p.add_argument("--steps", type=int, default=40, help="steps per row and round (default 40)")
    p.add_argument("--warmup", type=int, default=25)
    p.add_argument("--rows", nargs="+", choices=list(ROWS), default=list(ROWS))
    p.add_argument("--out", type=Path, default=Path(__file__).resolve().parent / "results" / "bench_nbv_obs.json")
    args = p.parse_args(argv)
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    import gymnasium as gym

    import spatialscout_gym  # noqa: F401
    base = {"resolution": args.resolution, "obs_size": args.resolution}
    envs, rngs = {}, {}
    for name in args.rows:
        env = gym.make(args.env_id, **base, **ROWS[name])
        env.reset(seed=0)
        rngs[name] = np.random.default_rng(0)
        envs[name] = env
        for _ in range(args.warmup):
            _step(env, rngs[name])
    cpu = dict.fromkeys(envs, 0.0)
    wall = dict.fromkeys(envs, 0.0)
    steps = dict.fromkeys(envs, 0)
    for _ in range(args.rounds):
        for name, env in envs.items():
            c0, t0 = time.process_time(), time.perf_counter()
            for _ in range(args.steps):
                _step(env, rngs[name])
            cpu[name] += time.process_time() - c0
            wall[name] += time.perf_counter() - t0
            steps[name] += args.steps
    for env in envs.values():
        env.close()
    rows = [{"row": n, "arguments": ROWS[n], "steps": steps[n], "cpu_s": round(cpu[n], 3),
             "wall_s": round(wall[n], 3), "steps_per_cpu_s": round(steps[n] / cpu[n], 1),
             "steps_per_s": round(steps[n] / wall[n], 1)} for n in envs]
    ref = rows[0]
    for r in rows:
        r["cpu_ratio_to_" + ref["row"]] = round(r["steps_per_cpu_s"] / ref["steps_per_cpu_s"], 2)
        r["wall_ratio_to_" + ref["row"]] = round(r["steps_per_s"] / ref["steps_per_s"], 2)
    load = os.getloadavg() if hasattr(os, "getloadavg") else None
    print(f"\n{args.env_id}, {args.resolution} px, {args.rounds} rounds x {args.steps} steps a row; "
          f"{os.cpu_count()} CPUs, load average {load}\n")
    print(f"| observation | steps per CPU s | x {ref['row']} (CPU) | steps/s (wall) | x {ref['row']} (wall) |")
    print("|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['row']} | {r['steps_per_cpu_s']} | {r['cpu_ratio_to_' + ref['row']]} | {r['steps_per_s']} | "
              f"{r['wall_ratio_to_' + ref['row']]} |")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"env_id": args.env_id, "resolution": args.resolution,
                                    "rounds": args.rounds, "steps": args.steps, "machine": platform.platform(),
                                    "cpus": os.cpu_count(), "load_average": load, "rows": rows}, indent=1))
    return 0


def _step(env, rng: np.random.Generator) -> None:
    _, _, term, trunc, _ = env.step(int(rng.integers(env.action_space.n)))
    if term or trunc:
        env.reset()


if __name__ == "__main__":
    raise SystemExit(main())
