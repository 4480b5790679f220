"""Where one ``SpatialScout/NBV-v2`` step's CPU time goes, and how it compares with its capture.

    python benchmarks/profile_nbv_step.py                 # 64 px, 300 steps, single env
    python benchmarks/profile_nbv_step.py --steps 100 --resolution 32 --out /tmp/p.json

One env (procedural scenes, V = 20, ``reconfigure_every`` 16, uniformly random actions from a
seeded generator: scene generation, resets, rendering, mapping and scoring are all in), warmed up
with ``--warmup`` steps, then two passes over the same number of steps:

1. **timed** (no profiler): CPU seconds of this process (``time.process_time``, lavapipe's
   threads included) for the steps, and the CPU seconds spent inside the capture's render,
   ``SapienRenderer.capture_rgb`` (pose the camera, take the picture, read the colour target and
   turn it into the uint8 image the episode keeps). The figure is **step / capture**: a step's CPU
   time over its capture's, both measured in this one run, so a busy shared machine scales both.
2. **sections** (no profiler): the CPU seconds spent inside a few named parts of the step (each
   method wrapped on its class; inclusive, so a part holds the parts it calls), as a share of the
   pass's CPU seconds;
3. **profiled**: ``cProfile`` with a CPU-time clock over the same number of steps; the functions
   with the largest total (self) and cumulative CPU time, and ``get_picture`` calls per step (the
   render targets read back from the GPU image).

Prints both and writes ``benchmarks/results/profile_nbv_step.json`` (docs/speed.md quotes it).
"""

from __future__ import annotations

import argparse
import cProfile
import json
import os
import platform
import pstats
import time
from pathlib import Path
from typing import Any

import numpy as np


class _CaptureClock:
    """Adds up the CPU seconds spent in ``SapienRenderer.capture_rgb`` (the capture's render and its
    colour read) and in the reads of the same picture's privileged targets (segmentation, depth),
    each method wrapped on the class."""

    METHODS = ("capture_rgb", "_read_segmentation", "_read_depth")

    def __init__(self) -> None:
        from spatialscout_gym.render.sapien_renderer import SapienRenderer
        self.cls = SapienRenderer
        self.originals = {name: getattr(SapienRenderer, name) for name in self.METHODS}
        self.cpu_s = dict.fromkeys(self.METHODS, 0.0)
        self.calls = dict.fromkeys(self.METHODS, 0)
        for name, original in self.originals.items():
            setattr(SapienRenderer, name, self._timed(name, original))

    def _timed(self, name: str, original: Any) -> Any:
        def method(*a: Any) -> Any:
            c0 = time.process_time()
            try:
                return original(*a)
            finally:
                self.cpu_s[name] += time.process_time() - c0
                self.calls[name] += 1
        return method

    def reset(self) -> None:
        self.cpu_s = dict.fromkeys(self.METHODS, 0.0)
        self.calls = dict.fromkeys(self.METHODS, 0)

    def close(self) -> None:
        for name, original in self.originals.items():
            setattr(self.cls, name, original)


SECTIONS = (
    ("spatialscout_gym.render.sapien_renderer:SapienRenderer.capture_rgb", "the capture's render and colour read"),
    ("spatialscout_gym.render.sapien_renderer:SapienRenderer._read_segmentation", "its segmentation read"),
    ("spatialscout_gym.render.sapien_renderer:SapienRenderer._read_depth", "its depth read"),
    ("spatialscout_gym.envs.spatialscout_env:SpatialScoutEnv.reset", "tool env resets (new scenes included)"),
    ("spatialscout_gym.nbv.core:NBVCore.prepare", "motion: rotate and move tool calls, walls"),
    ("spatialscout_gym.nbv.ports:ToolEnvPort.capture", "capture_image tool call (holds the render)"),
    ("spatialscout_gym.nbv.core:NBVCore._after_capture", "after the capture: depth, mapper, submit"),
    ("spatialscout_gym.envs.spatialscout_env:SpatialScoutEnv._current_score", "scoring after a submit"),
    ("spatialscout_gym.nbv.core:NBVCore.observation", "observation features"),
    ("spatialscout_gym.envs.spatialscout_env:SpatialScoutEnv.decode_action", "tool env: decoding each call"),
    ("spatialscout_gym.episode.trace:event", "episode trace events"),
)
"""(``module:Class.method`` or ``module:function``, what it is) of the sections pass."""


def _sections(env: Any, rng: np.random.Generator, steps: int) -> list[dict]:
    """CPU seconds inside each of :data:`SECTIONS` over ``steps`` steps, as a share of the pass."""
    import importlib
    spent: dict[str, float] = {}
    undo = []
    for target, label in SECTIONS:
        module_name, attr = target.split(":")
        owner: Any = importlib.import_module(module_name)
        *path, name = attr.split(".")
        for part in path:
            owner = getattr(owner, part)
        original = owner.__dict__[name]

        def timed(*a: Any, _original: Any = original, _target: str = target, **k: Any) -> Any:
            c0 = time.process_time()
            try:
                return _original(*a, **k)
            finally:
                spent[_target] = spent.get(_target, 0.0) + time.process_time() - c0
        setattr(owner, name, timed)
        undo.append((owner, name, original))
    try:
        c0 = time.process_time()
        _run(env, rng, steps)
        total = time.process_time() - c0
    finally:
        for owner, name, original in undo:
            setattr(owner, name, original)
    return [{"section": target.split(":")[1], "what": label, "cpu_ms_per_step": round(1000 * spent.get(target, 0.0) / steps, 3),
             "share": round(spent.get(target, 0.0) / total, 3)} for target, label in SECTIONS]


def _run(env: Any, rng: np.random.Generator, steps: int) -> tuple[int, float]:
    """``steps`` random steps (reset when an episode ends); returns the episodes ended and the
    CPU seconds their resets took."""
    ended, reset_cpu = 0, 0.0
    for _ in range(steps):
        _, _, term, trunc, _ = env.step(int(rng.integers(env.action_space.n)))
        if term or trunc:
            c0 = time.process_time()
            env.reset()
            reset_cpu += time.process_time() - c0
            ended += 1
    return ended, reset_cpu


def _top(stats: pstats.Stats, key: str, n: int, total_s: float) -> list[dict]:
    """The ``n`` functions with the largest ``key`` (``"tottime"`` or ``"cumtime"``) CPU seconds."""
    rows = []
    for (file, line, name), (cc, nc, tt, ct, _) in stats.stats.items():   # type: ignore[attr-defined]
        rows.append({"function": f"{Path(file).name}:{line}({name})", "calls": nc,
                     "tottime_s": round(tt, 4), "cumtime_s": round(ct, 4),
                     "share": round((tt if key == "tottime" else ct) / total_s, 3)})
    rows.sort(key=lambda r: -r[key + "_s"])
    return rows[:n]


def main(argv: list[str] | None = None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--env-id", default="SpatialScout/NBV-v2")
    p.add_argument("--resolution", type=int, default=64)
    p.add_argument("--steps", type=int, default=300, help="steps per pass (default 300)")
    p.add_argument("--warmup", type=int, default=40)
    p.add_argument("--top", type=int, default=15, help="functions listed per table (default 15)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", type=Path, default=Path(__file__).resolve().parent / "results" / "profile_nbv_step.json")
    args = p.parse_args(argv)
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    import gymnasium as gym

    import spatialscout_gym  # noqa: F401  (registers the NBV ids)

    clock = _CaptureClock()
    env = gym.make(args.env_id, resolution=args.resolution, obs_size=args.resolution, disable_env_checker=True)
    rng = np.random.default_rng(args.seed)
    env.reset(seed=args.seed)
    _run(env, rng, args.warmup)                      # shaders, texture library, the first scenes

    clock.reset()
    c0 = time.process_time()
    episodes, reset_cpu = _run(env, rng, args.steps)
    step_cpu = time.process_time() - c0
    capture = clock.cpu_s["capture_rgb"]
    reads = clock.cpu_s["_read_segmentation"] + clock.cpu_s["_read_depth"]
    captures = clock.calls["capture_rgb"]
    timed = {"steps": args.steps, "episodes": episodes, "cpu_s": round(step_cpu, 3),
             "steps_per_cpu_s": round(args.steps / step_cpu, 1), "captures": captures,
             "capture_cpu_s": round(capture, 3), "capture_cpu_ms": round(1000 * capture / max(captures, 1), 3),
             "privileged_reads_cpu_ms": round(1000 * reads / max(captures, 1), 3),
             "reset_cpu_s": round(reset_cpu, 3), "step_cpu_ms": round(1000 * step_cpu / args.steps, 3),
             # resets included (frame 0 of each is a capture too), as every NBV benchmark counts steps
             "step_to_capture": round(step_cpu / capture, 2) if capture > 0 else None,
             # the same with the privileged targets of each capture's picture counted as the capture's
             "step_to_capture_with_reads": round(step_cpu / (capture + reads), 2) if capture > 0 else None,
             # steps alone: the resets' CPU time (scene generation included) and their frame-0 captures out
             "step_to_capture_without_resets": round((step_cpu - reset_cpu) / (capture * args.steps / captures), 2)
             if capture > 0 else None}

    clock.close()                                     # the next passes see the plain methods
    sections = _sections(env, rng, args.steps)
    prof = cProfile.Profile(time.process_time)
    prof.enable()
    _run(env, rng, args.steps)
    prof.disable()
    env.close()
    stats = pstats.Stats(prof)
    total = float(stats.total_tt)                     # type: ignore[attr-defined]
    pictures = sum(v[1] for k, v in stats.stats.items() if "get_picture" in k[2] and k[0] == "~")   # type: ignore[attr-defined]
    capture = sum(v[3] for k, v in stats.stats.items()   # type: ignore[attr-defined]
                  if k[2] == "capture_rgb" and k[0].endswith("sapien_renderer.py"))
    profiled = {"steps": args.steps, "cpu_s": round(total, 3), "get_picture_calls": pictures,
                "get_picture_per_step": round(pictures / args.steps, 2),
                "capture_rgb_cumtime_s": round(capture, 3),
                "step_to_capture": round(total / capture, 2) if capture > 0 else None,
                "top_tottime": _top(stats, "tottime", args.top, total),
                "top_cumtime": _top(stats, "cumtime", args.top, total)}

    load = os.getloadavg() if hasattr(os, "getloadavg") else None
    print(f"\n{args.env_id}, {args.resolution} px, one env, {args.steps} steps a pass; "
          f"{os.cpu_count()} CPUs, load average {load}\n")
    print(f"timed:    {timed['steps_per_cpu_s']} steps per CPU s; step {timed['step_cpu_ms']} CPU ms, "
          f"capture {timed['capture_cpu_ms']} CPU ms ({timed['captures']} captures), its segmentation and "
          f"depth reads {timed['privileged_reads_cpu_ms']} CPU ms; resets {timed['reset_cpu_s']} CPU s "
          f"({timed['episodes']}); step / capture {timed['step_to_capture']} "
          f"({timed['step_to_capture_with_reads']} with the reads, {timed['step_to_capture_without_resets']} "
          f"without the resets)")
    print(f"profiled: step / capture {profiled['step_to_capture']}; "
          f"get_picture {profiled['get_picture_per_step']} per step\n")
    print("| section | what | CPU ms per step | share of the step |")
    print("|---|---|---:|---:|")
    for r in sections:
        print(f"| {r['section']} | {r['what']} | {r['cpu_ms_per_step']} | {r['share']:.1%} |")
    print()
    for key in ("tottime", "cumtime"):
        print(f"| function | calls | self s | cumulative s | share of CPU ({key}) |")
        print("|---|---:|---:|---:|---:|")
        for r in profiled["top_" + key]:
            print(f"| {r['function']} | {r['calls']} | {r['tottime_s']} | {r['cumtime_s']} | {r['share']:.1%} |")
        print()
    result = {"env_id": args.env_id, "resolution": args.resolution, "seed": args.seed, "warmup": args.warmup,
              "machine": platform.platform(), "cpus": os.cpu_count(), "load_average": load,
              "timed": timed, "sections": sections, "profiled": profiled}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1))
    print(f"wrote {args.out}")
    return result


if __name__ == "__main__":
    main()
