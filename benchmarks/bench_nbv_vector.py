"""Vector envs for ``SpatialScout/NBV-v2`` (``--env-id``), measured in one run at the same settings: which one to
train with on a CPU machine.

    python benchmarks/bench_nbv_vector.py                       # 16 envs, 64 px, 20 s a row
    python benchmarks/bench_nbv_vector.py --num-envs 16 --seconds 10 --rows sync nbv-workers

Rows (every env NBV-v2 unless ``--env-id`` says otherwise, on procedural scenes, V = 20, ``reconfigure_every`` 16, random actions, so
scene generation, resets, rendering, mapping and scoring are all included):

* ``single``: one ``gym.make`` env in a loop (the reference; always one env);
* ``sync``: ``gymnasium.vector.SyncVectorEnv`` (``gym.make_vec(..., vectorization_mode="sync")``), one process;
* ``async``: ``gymnasium.vector.AsyncVectorEnv`` (``vectorization_mode="async"``), one process per env;
* ``sb3-dummy`` / ``sb3-subproc``: Stable-Baselines3's ``DummyVecEnv`` / ``SubprocVecEnv`` from
  ``make_vec_env("SpatialScout/NBV-v2", ...)`` (one process / one per env);
* ``nbv-vector``: the project's ``NBVVectorEnv`` (``vectorization_mode="vector_entry_point"``), one process;
* ``nbv-workers``: the project's ``NBVWorkerVectorEnv`` (``num_workers=W``), N envs in W processes.

Each row: build, ``--warmup`` (25) warm-up steps, then steps counted for ``--seconds``, per wall-clock second and
per CPU second of this process and all its children (the steadier figure on a shared machine).
Prints a table with each row's ratio to ``sync`` and writes ``benchmarks/results/bench_nbv_vector.json``.
This one command gives every NBV speed figure the docs quote (docs/rl.md "Speed").
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_nbv import _cpu_s, _rss_mb  # the same CPU and memory accounting

ENV_IDS = ("SpatialScout/NBV-v2", "SpatialScout/NBV-v3", "SpatialScout/NBV-v1")
ROWS = ("single", "sync", "async", "sb3-dummy", "sb3-subproc", "nbv-vector", "nbv-workers")


class _Single:
    """One ``gym.make`` env stepped like a vector env of one (reset when it ends): the reference."""

    def __init__(self, env) -> None:
        self.env = env
        self.single_action_space = env.action_space

    def reset(self, seed: int | None = None):
        return self.env.reset(seed=seed)

    def step(self, actions):
        obs, reward, term, trunc, info = self.env.step(int(actions[0]))
        if term or trunc:
            self.env.reset()
        return obs, np.array([reward]), np.array([term]), np.array([trunc]), info

    def close(self) -> None:
        self.env.close()


class _SB3Adapter:
    """A Stable-Baselines3 ``VecEnv`` stepped like a Gymnasium vector env (what the loop needs)."""

    def __init__(self, venv) -> None:
        self.venv = venv
        self.single_action_space = venv.action_space

    def reset(self, seed: int | None = None):
        self.venv.seed(seed)
        return self.venv.reset(), {}

    def step(self, actions):
        obs, rewards, dones, infos = self.venv.step(np.asarray(actions))
        return obs, rewards, dones, np.zeros_like(dones), infos   # SB3 resets ended envs itself

    def close(self) -> None:
        self.venv.close()


def make_row(kind: str, num_envs: int, workers: int, env_kwargs: dict, env_id: str = ENV_IDS[0]):
    import gymnasium as gym

    import spatialscout_gym  # noqa: F401
    if kind == "single":
        return _Single(gym.make(env_id, **env_kwargs))
    if kind in ("sync", "async"):
        return gym.make_vec(env_id, num_envs=num_envs, vectorization_mode=kind, **env_kwargs)
    if kind == "nbv-vector":
        return gym.make_vec(env_id, num_envs=num_envs, vectorization_mode="vector_entry_point", **env_kwargs)
    if kind == "nbv-workers":
        return gym.make_vec(env_id, num_envs=num_envs, vectorization_mode="vector_entry_point",
                            num_workers=workers, **env_kwargs)
    from stable_baselines3.common.env_util import make_vec_env
    from stable_baselines3.common.vec_env import DummyVecEnv, SubprocVecEnv
    cls = SubprocVecEnv if kind == "sb3-subproc" else DummyVecEnv
    # "module:id" so that SubprocVecEnv's fresh processes import the package and know the id
    return _SB3Adapter(make_vec_env("spatialscout_gym:" + env_id, n_envs=num_envs, env_kwargs=env_kwargs,
                                    vec_env_cls=cls))


def measure(kind: str, num_envs: int, workers: int, seconds: float, env_kwargs: dict, seed: int = 0,
            warmup: int = 25, env_id: str = ENV_IDS[0]) -> dict:
    num_envs = 1 if kind == "single" else num_envs
    t0 = time.perf_counter()
    env = make_row(kind, num_envs, workers, env_kwargs, env_id)
    build_s = time.perf_counter() - t0
    rng = np.random.default_rng(seed)
    n_actions = int(env.single_action_space.n)
    env.reset(seed=seed)
    for _ in range(warmup):                 # warm-up: shaders, texture library, first scenes
        env.step(rng.integers(n_actions, size=num_envs))
    steps = episodes = 0
    cpu0, t = _cpu_s(), time.perf_counter()
    while time.perf_counter() - t < seconds:
        _, _, term, trunc, _ = env.step(rng.integers(n_actions, size=num_envs))
        steps += num_envs
        episodes += int(np.sum(np.logical_or(term, trunc)))
    wall, cpu = time.perf_counter() - t, _cpu_s() - cpu0
    row = {"row": kind, "num_envs": num_envs, "processes": {"async": num_envs, "sb3-subproc": num_envs,
                                                            "nbv-workers": workers}.get(kind, 1),
           "steps": steps, "episodes": episodes, "seconds": round(wall, 2), "steps_per_s": round(steps / wall, 1),
           "cpu_s": round(cpu, 2), "steps_per_cpu_s": round(steps / cpu, 1) if cpu > 0 else None,
           "build_s": round(build_s, 2), "host_rss_mb": round(_rss_mb(), 1)}
    env.close()
    gc.collect()
    return row


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--env-id", default=ENV_IDS[0], choices=ENV_IDS, help="the NBV env measured (default NBV-v2)")
    p.add_argument("--num-envs", type=int, default=16)
    p.add_argument("--workers", type=int, default=2, help="processes of the nbv-workers row (default 2)")
    p.add_argument("--seconds", type=float, default=20.0, help="measured seconds per row (default 20)")
    p.add_argument("--resolution", type=int, default=64)
    p.add_argument("--warmup", type=int, default=25, help="vector steps before counting (default 25)")
    p.add_argument("--rows", nargs="+", choices=ROWS, default=list(ROWS))
    p.add_argument("--out", type=Path, default=Path(__file__).resolve().parent / "results" / "bench_nbv_vector.json")
    args = p.parse_args(argv)
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    env_kwargs = {"resolution": args.resolution, "obs_size": args.resolution}
    rows = []
    for kind in args.rows:
        row = measure(kind, args.num_envs, args.workers, args.seconds, env_kwargs, warmup=args.warmup, env_id=args.env_id)
        rows.append(row)
        print(f"# {kind}: {row['steps_per_s']} steps/s, {row['steps_per_cpu_s']} per CPU s", flush=True)
        args.out.parent.mkdir(parents=True, exist_ok=True)    # kept row by row: a long run cut short keeps them
        args.out.write_text(json.dumps({"env_id": args.env_id, "rows": rows}, indent=1))
    base = next((r for r in rows if r["row"] == "sync"), rows[0])
    for r in rows:
        r["ratio_to_" + base["row"]] = round(r["steps_per_s"] / base["steps_per_s"], 2)
        r["cpu_ratio_to_" + base["row"]] = (round(r["steps_per_cpu_s"] / base["steps_per_cpu_s"], 2)
                                            if r["steps_per_cpu_s"] and base["steps_per_cpu_s"] else None)
    load = os.getloadavg() if hasattr(os, "getloadavg") else None
    print(f"\n{args.env_id}, {args.num_envs} envs, {args.resolution} px, {args.seconds:g} s a row; "
          f"{os.cpu_count()} CPUs, load average {load}\n")
    print(f"| row | processes | steps/s | steps per CPU s | x {base['row']} (wall) | x {base['row']} (CPU) | "
          "build s | host MB |")
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['row']} | {r['processes']} | {r['steps_per_s']} | {r['steps_per_cpu_s']} | "
              f"{r['ratio_to_' + base['row']]} | {r['cpu_ratio_to_' + base['row']]} | {r['build_s']} | "
              f"{r['host_rss_mb']} |")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"env_id": args.env_id, "num_envs": args.num_envs,
                                    "resolution": args.resolution, "seconds": args.seconds,
                                    "machine": platform.platform(), "cpus": os.cpu_count(), "load_average": load,
                                    "rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
