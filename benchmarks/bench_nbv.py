"""NBV benchmark: next-best-view steps per second, resets included, for single envs and the vector
env, with host (and GPU) memory.

    python benchmarks/bench_nbv.py                         # CPU defaults: 64 and 128 px
    python benchmarks/bench_nbv.py --num-envs 1 4 16 64 256 1024 --seconds 20   # on a GPU machine
    python benchmarks/bench_nbv.py --env-id SpatialScout/NBV-v2 SpatialScout/NBV-v3   # both, one after the other

Every env is ``SpatialScout/NBV-v2`` (the default: the heading motion, the shipped recipe, walls),
``SpatialScout/NBV-v3`` (NBV-v2 with the ``blocked`` observation), ``SpatialScout/NBV-v1`` (no
walls) or ``SpatialScout/NBV-v0`` (random discrete motions); ``--env-id`` takes one or more,
measured one after the other in the same run, each row naming its env id; on procedural scenes with
``reconfigure_every`` 16 (a new
scene every 16 resets), V = 20 images, the oracle mapper and uniformly random actions, so the
figure includes scene generation and upload, resets, rendering, privileged segmentation, mapping
and scoring. Rows:

* ``single``: one ``gym.make`` env stepped in a loop (the reference);
* ``async``: ``gymnasium.vector.AsyncVectorEnv`` with one process per env (``--async-envs``);
* ``vector``: ``gym.make_vec(..., vectorization_mode="vector_entry_point")``, N envs in one process;
* ``workers``: the same with ``num_workers=W`` (``--workers``): N envs in W processes, one
  ``NBVVectorEnv`` chunk each;
  ``--batched-render on|off|auto`` sets its ``batched_render`` (all N captures of a step rendered in
  one camera-group call; on a CUDA device with ``--render-device cuda`` one SAPIEN batched call,
  elsewhere one after another) and each vector row records the value it ran with.

Each row builds its envs, runs one warm-up episode per env (pipeline compilation, texture
library), then counts steps for ``--seconds``: per wall-clock second and per CPU second of the
process and its workers (lavapipe's threads included; the steadier figure on a shared machine,
and the one to compare versions with there). Prints a table and the device, writes
``benchmarks/results/bench_nbv.json``.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import subprocess
import time
from pathlib import Path

import numpy as np


def _rss_mb() -> float:
    import psutil
    proc = psutil.Process()
    return (proc.memory_info().rss + sum(c.memory_info().rss for c in proc.children(recursive=True))) / 2**20


def _cpu_s() -> float:
    """CPU seconds used so far by this process (all threads, lavapipe's included) and its
    children (the async row's workers): on a shared machine, steps per CPU second compare two
    versions more steadily than steps per wall second."""
    import psutil
    proc = psutil.Process()
    times = [proc.cpu_times()] + [c.cpu_times() for c in proc.children(recursive=True)]
    return sum(t.user + t.system for t in times)


def _gpu_mb() -> float | None:
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=memory.used", "--format=csv,noheader,nounits"],
                             capture_output=True, text=True, timeout=10)
        return float(out.stdout.split()[0]) if out.returncode == 0 and out.stdout.strip() else None
    except (OSError, ValueError, subprocess.TimeoutExpired):
        return None


def _kwargs(res: int, image_budget: int, reconfigure_every: int) -> dict:
    return dict(resolution=res, obs_size=res, image_budget=image_budget, reconfigure_every=reconfigure_every)


def _measure(make, num_envs: int, seconds: float, vector: bool, seed: int) -> dict:
    import gymnasium as gym  # noqa: F401
    t0 = time.perf_counter()
    env = make()
    build_s = time.perf_counter() - t0
    rng = np.random.default_rng(seed)
    space = getattr(env, "single_action_space", env.action_space)
    n_actions = int(space.n)   # the discrete motions of NBV-v0 (10) or the headings of NBV-v1 to v3 (18)
    env.reset(seed=seed)
    # warm-up: one episode per env (shader compilation, texture library)
    for _ in range(25):
        if vector:
            env.step(rng.integers(n_actions, size=num_envs))
        elif any(env.step(int(rng.integers(n_actions)))[2:4]):
            env.reset()
    steps, resets = 0, 0
    cpu0 = _cpu_s()
    t = time.perf_counter()
    while time.perf_counter() - t < seconds:
        if vector:
            _, _, term, trunc, _ = env.step(rng.integers(n_actions, size=num_envs))
            steps += num_envs
            resets += int(np.sum(term | trunc))
        else:
            _, _, term, trunc, _ = env.step(int(rng.integers(n_actions)))
            steps += 1
            if term or trunc:
                env.reset()
                resets += 1
    wall = time.perf_counter() - t
    cpu = _cpu_s() - cpu0
    row = {"num_envs": num_envs, "steps": steps, "episodes": resets, "seconds": round(wall, 2),
           "steps_per_s": round(steps / wall, 1), "cpu_s": round(cpu, 2),
           "steps_per_cpu_s": round(steps / cpu, 1) if cpu > 0 else None, "build_s": round(build_s, 2),
           "host_rss_mb": round(_rss_mb(), 1), "gpu_used_mb": _gpu_mb()}
    if vector and hasattr(env, "batched_render"):   # NBVVectorEnv: what it ran with
        row["batched_render"] = bool(env.batched_render)
    env.close()
    gc.collect()
    return row


def _memory_curve(n_scenes: int) -> list[dict]:
    """Host memory (and GPU memory where nvidia-smi answers) while one env loads ``n_scenes``
    procedural scenes, one per reset."""
    from tqdm import tqdm

    from spatialscout_gym.envs.spatialscout_env import SpatialScoutEnv
    env = SpatialScoutEnv("procedural", resolution=64, reconfigure_every=1)
    points, every = [], max(1, n_scenes // 10)
    for i in tqdm(range(n_scenes), desc="memory", unit="scene", disable=None):
        env.reset(seed=i)
        if (i + 1) % every == 0 or i == 0:
            points.append({"scenes": i + 1, "host_rss_mb": round(_rss_mb(), 1), "gpu_used_mb": _gpu_mb(),
                           "gpu_textures": env.session.renderer.texture_count})
            print(f"  after {i + 1:>5} scenes: host {points[-1]['host_rss_mb']:.0f} MB, "
                  f"{points[-1]['gpu_textures']} textures held", flush=True)
    env.close()
    return points


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--resolutions", type=int, nargs="+", default=[64, 128])
    ap.add_argument("--num-envs", type=int, nargs="+", default=[1, 4, 16, 64])
    ap.add_argument("--async-envs", type=int, default=os.cpu_count() or 2,
                    help="processes of the async row (default: CPU count)")
    ap.add_argument("--seconds", type=float, default=10.0, help="measured seconds per row (default 10)")
    ap.add_argument("--image-budget", type=int, default=20)
    ap.add_argument("--env-id", nargs="+", default=["SpatialScout/NBV-v2"],
                    choices=["SpatialScout/NBV-v2", "SpatialScout/NBV-v3", "SpatialScout/NBV-v1",
                             "SpatialScout/NBV-v0"],
                    help="the NBV env(s) to measure, one after the other (default NBV-v2, the shipped policy's "
                         "env; NBV-v3: with the blocked observation; NBV-v1: no walls; NBV-v0: random "
                         "discrete motions)")
    ap.add_argument("--reconfigure-every", type=int, default=16)
    ap.add_argument("--memory-scenes", type=int, default=0,
                    help="also load this many procedural scenes in one env (reconfigure_every 1) and "
                         "record host memory every 10%% of them (default 0: skip)")
    ap.add_argument("--lavapipe-threads", type=int, default=None,
                    help="set LP_NUM_THREADS (Mesa's software rasteriser threads) before rendering starts; "
                         "0 renders on the submitting thread, which at 64-128 px on a few cores is "
                         "faster (same pictures); default: leave the environment as it is")
    ap.add_argument("--batched-render", choices=["auto", "on", "off"], default="auto",
                    help="vector rows: NBVVectorEnv(batched_render=...); auto (default) is off, the path that "
                         "passes the pixel check (docs/speed.md); on: one camera-group call per step")
    ap.add_argument("--workers", type=int, default=0,
                    help="also measure the vector env spread over this many worker processes "
                         "(make_vec(..., num_workers=W), one NBVVectorEnv chunk per process) for every "
                         "--num-envs >= W (default 0: skip)")
    ap.add_argument("--render-device", default=None,
                    help="vector rows: SAPIEN render device of the sub-envs (e.g. cuda; default: SAPIEN's default)")
    ap.add_argument("--out", type=Path, default=Path(__file__).parent / "results" / "bench_nbv.json")
    args = ap.parse_args(argv)
    if args.lavapipe_threads is not None:   # before the first Vulkan instance (workers inherit it)
        os.environ["LP_NUM_THREADS"] = str(args.lavapipe_threads)

    import gymnasium as gym

    import spatialscout_gym  # noqa: F401  (registers the NBV ids)
    from spatialscout_gym.render.device import check_vulkan

    device = check_vulkan()
    lp_threads = os.environ.get("LP_NUM_THREADS")
    print(f"device: {device.device or 'none'}  ({platform.node()}, {os.cpu_count()} CPUs"
          + (f", LP_NUM_THREADS={lp_threads}" if lp_threads is not None else "") + ")")
    rows = []
    for env_id, res in [(e, r) for e in args.env_id for r in args.resolutions]:
        kw = _kwargs(res, args.image_budget, args.reconfigure_every)
        plan = [("single", 1, lambda: gym.make(env_id, disable_env_checker=True, **kw), False)]
        if args.async_envs > 1:
            plan.append(("async", args.async_envs, lambda: gym.make_vec(
                env_id, num_envs=args.async_envs, vectorization_mode="async", **kw), True))
        vkw = dict(kw, batched_render={"on": True, "off": False}.get(args.batched_render, "auto"))
        if args.render_device is not None:
            vkw["render_device"] = args.render_device
        plan += [("vector", n, (lambda n=n: gym.make_vec(env_id, num_envs=n,
                                                          vectorization_mode="vector_entry_point", **vkw)), True)
                 for n in args.num_envs]
        if args.workers > 1:
            plan += [("workers", n, (lambda n=n: gym.make_vec(
                env_id, num_envs=n, vectorization_mode="vector_entry_point",
                num_workers=args.workers, **vkw)), True) for n in args.num_envs if n >= args.workers]
        for kind, n, make, vector in plan:
            row = {"env_id": env_id, "kind": kind, "resolution": res,
                   **_measure(make, n, args.seconds, vector, seed=len(rows))}
            if kind == "vector":
                row["render_device"] = args.render_device
            if kind == "workers":
                row["num_workers"] = args.workers
            rows.append(row)
            print(f"{env_id.split('/')[-1]:>6} {kind:>7} {res:>4} px  envs {n:>4}  {row['steps_per_s']:>9.1f} steps/s  "
                  + ("batched  " if row.get("batched_render") else "")
                  + f"{row['steps_per_cpu_s'] or 0:>7.1f} per CPU s  "
                  f"build {row['build_s']:>6.1f} s  host {row['host_rss_mb']:>7.0f} MB"
                  + (f"  gpu {row['gpu_used_mb']:.0f} MB" if row["gpu_used_mb"] is not None else ""), flush=True)
    memory = _memory_curve(args.memory_scenes) if args.memory_scenes > 0 else []
    result = {"env_ids": args.env_id, "device": device.device, "cpus": os.cpu_count(), "machine": platform.machine(),
              "lp_num_threads": lp_threads,
              "batched_render": args.batched_render, "render_device": args.render_device,
              "image_budget": args.image_budget, "reconfigure_every": args.reconfigure_every,
              "seconds_per_row": args.seconds, "rows": rows, "memory_over_scenes": memory}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2))
    print(f"wrote {args.out}")
    return result


if __name__ == "__main__":
    main()
