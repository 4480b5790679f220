"""Start-up cost of the CLI and of ``import spatialscout_gym``: seconds of a whole fresh process.

    python benchmarks/bench_cli_startup.py [--repeats 7]

Runs each command line in a fresh process ``--repeats`` times and reports the median and minimum
of its wall time and of its CPU time (user + system of the child, ``os.wait4``), which is less
disturbed than wall time on a shared machine. Also lists which heavy modules each command loaded
(sapien, torch, the scene generator...), from one extra run that prints ``sys.modules``.
Prints and writes ``benchmarks/results/bench_cli_startup.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from bench_scoring import machine, publish

CASES: dict[str, list[str]] = {
    "import spatialscout_gym": ["-c", "import spatialscout_gym"],
    "spatialscout --help": ["-m", "spatialscout_gym.cli.main", "--help"],
    "spatialscout score --help": ["-m", "spatialscout_gym.cli.main", "score", "--help"],
    "spatialscout compare --help": ["-m", "spatialscout_gym.cli.main", "compare", "--help"],
    "spatialscout run --help": ["-m", "spatialscout_gym.cli.main", "run", "--help"],
}
HEAVY = ("gymnasium", "sapien", "torch", "stable_baselines3", "scipy", "matplotlib",
         "spatialscout_gym.scenes.catalog", "spatialscout_gym.render.sapien_renderer")
PROBE = ("import json, runpy, sys\nsys.argv = {argv!r}\ntry:\n    runpy.run_module({module!r}, run_name='__main__')\n"
         "except SystemExit:\n    pass\nprint('HEAVY', json.dumps([m for m in {heavy!r} if m in sys.modules]), file=sys.stderr)\n")


def run_once(args: list[str]) -> tuple[float, float]:
    """(wall s, CPU s) of ``python args`` in a fresh process, output discarded."""
    t0 = time.perf_counter()
    proc = subprocess.Popen([sys.executable, *args], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    return wall, usage.ru_utime + usage.ru_stime


def heavy_modules(args: list[str]) -> list[str]:
    """The :data:`HEAVY` modules loaded by ``python args``."""
    if args[0] == "-c":
        code = (f"{args[1]}\nimport json, sys\n"
                f"print('HEAVY', json.dumps([m for m in {HEAVY!r} if m in sys.modules]), file=sys.stderr)\n")
    else:
        code = PROBE.format(argv=[args[1], *args[2:]], module=args[1], heavy=HEAVY)
    err = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True).stderr
    line = next((x for x in err.splitlines() if x.startswith("HEAVY ")), "HEAVY ?")
    return json.loads(line[6:]) if line != "HEAVY ?" else ["?"]


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=7, help="fresh processes per command line")
    ap.add_argument("--out", type=Path, default=Path(__file__).parent / "results" / "bench_cli_startup.json")
    args = ap.parse_args(argv)
    rows = []
    for name, cmd in CASES.items():
        runs = [run_once(cmd) for _ in range(args.repeats)]
        walls, cpus = [w for w, _ in runs], [c for _, c in runs]
        rows.append({"command": name, "wall_s_median": round(statistics.median(walls), 3),
                     "wall_s_min": round(min(walls), 3), "cpu_s_median": round(statistics.median(cpus), 3),
                     "cpu_s_min": round(min(cpus), 3), "heavy_modules": heavy_modules(cmd)})
        print(f"{name:32s} wall {rows[-1]['wall_s_median']:.3f} s (min {rows[-1]['wall_s_min']:.3f})  "
              f"CPU {rows[-1]['cpu_s_median']:.3f} s (min {rows[-1]['cpu_s_min']:.3f})  {rows[-1]['heavy_modules']}",
              file=sys.stderr)
    return publish({"benchmark": "cli_startup", "repeats": args.repeats, "machine": machine(),
                    "load_average": list(os.getloadavg()), "rows": rows}, args.out)


if __name__ == "__main__":
    main()
