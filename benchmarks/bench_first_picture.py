"""The first picture of a fresh process, with SAPIEN's own "minimal" shader pack and with the
package's pack without the BRDF lookup table (``render/shaders.py``).

    python benchmarks/bench_first_picture.py [--repeats 5] [--scene Kitchen_01] [--resolution 64]

Each repeat runs one fresh process per pack, the two back to back (pairs, so a busy minute hits
both): the process builds a renderer for ``--scene``, takes one picture and reports the seconds of
that picture; the child's CPU seconds (user + system, ``os.wait4``) cover the whole process.
``same_pictures`` records whether every picture's hash agrees. Prints and writes
``benchmarks/results/bench_first_picture.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

from bench_scoring import machine, publish

CHILD = """
import hashlib, json, os, sys, time
from spatialscout_gym.render import sapien_renderer
from spatialscout_gym.scenes.catalog import scene_by_name
import sapien
if sys.argv[1] == "sapien":
    stock = os.path.join(os.path.dirname(sapien.__file__), "vulkan_shader", "minimal")
    sapien_renderer.camera_shader_dir = lambda shader, root: stock
spec = scene_by_name(sys.argv[2])
r = sapien_renderer.SapienRenderer(spec, int(sys.argv[3]), int(sys.argv[3]))
t0 = time.perf_counter()
rgb = r.capture_rgb(spec.public.initial_camera)
first = time.perf_counter() - t0
print(json.dumps({"first_picture_s": first, "shader_dir": r.shader_dir,
                  "sha256": hashlib.sha256(rgb.tobytes()).hexdigest()}))
"""


def run_once(pack: str, scene: str, resolution: int) -> dict:
    """One fresh process: its first picture's seconds, its CPU seconds, the picture's hash."""
    proc = subprocess.Popen([sys.executable, "-c", CHILD, pack, scene, str(resolution)], stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True)
    out = proc.stdout.read() if proc.stdout else ""
    _, status, usage = os.wait4(proc.pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"bench_first_picture: the {pack} child failed (exit {os.waitstatus_to_exitcode(status)})")
    return json.loads(out.strip().splitlines()[-1]) | {"process_cpu_s": usage.ru_utime + usage.ru_stime}


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--scene", default="Kitchen_01")
    ap.add_argument("--resolution", type=int, default=64)
    ap.add_argument("--out", type=Path, default=Path(__file__).parent / "results" / "bench_first_picture.json")
    args = ap.parse_args(argv)
    runs: dict[str, list[dict]] = {"sapien": [], "package": []}
    for _ in range(args.repeats):
        for pack in runs:
            runs[pack].append(run_once(pack, args.scene, args.resolution))
    hashes = {r["sha256"] for rs in runs.values() for r in rs}
    rows = {pack: {"first_picture_s_median": round(statistics.median(r["first_picture_s"] for r in rs), 3),
                   "process_cpu_s_median": round(statistics.median(r["process_cpu_s"] for r in rs), 2),
                   "shader_pack": "/".join(Path(rs[0]["shader_dir"]).parts[-3:])}   # no machine's paths
            for pack, rs in runs.items()}
    result = {"benchmark": "bench_first_picture", "machine": machine(), "scene": args.scene,
              "resolution": args.resolution, "repeats": args.repeats, "packs": rows,
              "same_pictures": len(hashes) == 1,
              "first_picture_ratio": round(rows["package"]["first_picture_s_median"]
                                           / rows["sapien"]["first_picture_s_median"], 4),
              "process_cpu_ratio": round(rows["package"]["process_cpu_s_median"]
                                         / rows["sapien"]["process_cpu_s_median"], 3)}
    return publish(result, args.out)


if __name__ == "__main__":
    main()
