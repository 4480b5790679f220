"""Render benchmark: scene generation and build time (first and later) and capture times.

Goals on 2 CPU cores with software Vulkan: generate the largest catalog scene (a 5-room apartment)
from its seed and build a catalog scene in the renderer in under 1 s each after the first; capture
512 x 512 RGB in under 50 ms; a renderer built after another closed takes its first picture without
the first one's warm-up. Prints a table and writes
``benchmarks/results/bench_render.json``.

Usage: ``python benchmarks/bench_render.py [--scenes N] [--captures N]``. Uses catalog scenes
when ``spatialscout_gym.scenes.catalog`` exists, else the test fixture room.
"""

from __future__ import annotations

import argparse
import dataclasses
import itertools
import json
import platform
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]


def _scenes(n: int) -> tuple[str, list]:
    try:
        from spatialscout_gym.scenes import catalog
        ids = list(catalog.catalog_scene_ids())[:n]
        return "catalog", [catalog.load_scene(i) for i in ids]
    except ImportError:
        sys.path.insert(0, str(ROOT / "tests"))
        from render_fixtures import make_room_spec
        return "fixture", [make_room_spec(seed=s) for s in range(n)]


def _median_ms(fn, n: int) -> float:
    times = []
    for _ in range(n):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return 1000.0 * float(np.median(times))


def _read_all(frame) -> None:
    frame.segmentation, frame.depth_m, frame.position_world   # each property reads a buffer


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--scenes", type=int, default=4)
    ap.add_argument("--captures", type=int, default=20)
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "bench_render.json")
    args = ap.parse_args(argv)
    from spatialscout_gym.render.device import check_vulkan
    from spatialscout_gym.render.sapien_renderer import SapienRenderer

    source, specs = _scenes(args.scenes)
    generate_ms = None
    if source == "catalog":
        from spatialscout_gym.scenes.catalog import catalog_entries, generate_catalog_scene
        largest = catalog_entries()[-1]
        generate_catalog_scene(largest)     # the first call also loads the size and placement tables
        generate_ms = _median_ms(lambda: generate_catalog_scene(largest), 3)
    pose = specs[0].public.initial_camera
    t = time.perf_counter()
    r = SapienRenderer(specs[0])
    build_first = time.perf_counter() - t
    t = time.perf_counter()
    r.capture_rgb(pose)
    first_capture = time.perf_counter() - t
    rebuilds = []
    for spec in specs[1:] + specs[:1]:
        t = time.perf_counter()
        r.set_scene(spec)
        rebuilds.append(time.perf_counter() - t)
    pose = specs[0].public.initial_camera
    # two poses taken in turn: a capture at the pose of the last picture renders nothing
    turn = itertools.cycle([pose, dataclasses.replace(pose, yaw_deg=pose.yaw_deg + 1.0)])
    rgb512 = _median_ms(lambda: r.capture_rgb(next(turn)), args.captures)
    # a privileged frame reads its buffers when first used: read them all
    priv512 = _median_ms(lambda: _read_all(r.capture_privileged(next(turn))), max(5, args.captures // 4))
    r.close()
    # a renderer built after the last one closed: SAPIEN's context is kept, so no second warm-up
    r128 = SapienRenderer(specs[0], 128, 128)
    t = time.perf_counter()
    r128.capture_rgb(pose)
    later_first_capture = time.perf_counter() - t
    rgb128 = _median_ms(lambda: r128.capture_rgb(next(turn)), args.captures)
    r128.close()
    dev = check_vulkan()
    result = {
        "scene_source": source, "n_scenes": len(specs),
        "objects_per_scene": float(np.mean([len(s.private.objects) for s in specs])),
        "build_first_s": round(build_first, 3), "first_capture_s": round(first_capture, 3),
        "first_capture_of_a_later_renderer_s": round(later_first_capture, 3),
        "build_subsequent_s_median": round(float(np.median(rebuilds)), 3),
        "capture_rgb_512_ms": round(rgb512, 2), "capture_rgb_128_ms": round(rgb128, 2),
        "capture_privileged_512_ms": round(priv512, 2),
        "generate_largest_catalog_scene_ms": None if generate_ms is None else round(generate_ms, 1),
        "device": dev.device, "mesa": dev.mesa_version, "sapien": dev.sapien_version,
        "machine": platform.machine(), "python": platform.python_version(),
    }
    for k, v in result.items():
        print(f"{k:28s} {v}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {args.out}")
    return result


if __name__ == "__main__":
    main()
