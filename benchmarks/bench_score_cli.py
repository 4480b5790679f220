"""``spatialscout score`` against a minimal scorer script: CPU seconds of a whole process.

    python benchmarks/bench_score_cli.py [--repeats 5]

Writes the 80 synthetic scenes of ``bench_scoring.py`` (12 x 35 + 68 x 40 targets) as scene
directories, then runs, each in a fresh process, ``spatialscout score --json DIR`` and
:data:`REFERENCE_SCRIPT`: about 60 lines with numpy and scipy that read the same files and compute
the object-micro mean IoU over all targets the paper's way (docs/protocol.md section 6: distance
matching within groups, 1 cm floor, the matched target's box moved onto the prediction). CPU time is
user + system of the child process (``os.wait4``), so it counts imports and start-up as a user pays
them. Both must agree on the mean IoU. Goal: the CLI costs no more CPU than the script (ratio <= 1).
Prints and writes ``benchmarks/results/bench_score_cli.json``.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from bench_scoring import machine, publish, synthetic_scene

REFERENCE_SCRIPT = r'''
import json, sys
from pathlib import Path
import numpy as np
from scipy.optimize import linear_sum_assignment

def scene(d):
    gt = json.loads((d / "ground_truth.json").read_text())
    pred = json.loads((d / "predictions.json").read_text())["positions"]
    R0 = np.asarray(gt["world_from_task"]["rotation"], float)
    groups = {}
    for t in gt["targets"]:
        groups.setdefault(t["group"], []).append(t)
    total = 0.0
    for targets in groups.values():
        subs = [t["id"] for t in targets if t["id"] in pred]
        if not subs:
            continue
        p_hat = np.array([pred[i] for i in subs], float)
        p = np.array([t["center"] for t in targets], float)
        cost = np.linalg.norm(p_hat[:, None, :] - p[None, :, :], axis=2)
        rows, cols = linear_sum_assignment(cost)
        for r, c in zip(rows, cols):
            t = targets[c]
            side = np.maximum(np.subtract(t["box_max"], t["box_min"]), 0.01)
            d = np.abs(R0 @ (p_hat[r] - p[c]))
            inter = float(np.prod(np.maximum(0.0, side - d)))
            total += inter / (2 * float(np.prod(side)) - inter)
    return total, len(gt["targets"])

root = Path(sys.argv[1])
sums = [scene(d) for d in sorted(p.parent for p in root.glob("*/ground_truth.json"))]
print(json.dumps({"scenes": len(sums), "all_mean_iou": sum(s for s, _ in sums) / sum(n for _, n in sums)}))
'''


def cpu_seconds(cmd: list[str]) -> tuple[float, float, str]:
    """(CPU s = user + system, wall s, stdout) of ``cmd`` run to completion in a child process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode:
        raise SystemExit(f"{' '.join(cmd[:3])} failed: {proc.stderr.strip()[-500:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return cpu, wall, proc.stdout


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path, default=Path(__file__).parent / "results" / "bench_score_cli.json")
    args = ap.parse_args(argv)

    rng = np.random.default_rng(args.seed)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        for i in range(80):
            gt, pos = synthetic_scene(rng, f"synthetic_{i:02d}", 35 if i < 12 else 40)
            (root / gt["scene_id"]).mkdir()
            (root / gt["scene_id"] / "ground_truth.json").write_text(json.dumps(gt))
            (root / gt["scene_id"] / "predictions.json").write_text(json.dumps({"positions": pos}))
        script = root / "reference_scorer.py"
        script.write_text(REFERENCE_SCRIPT)
        runs: dict[str, list[tuple[float, float]]] = {"cli": [], "script": []}
        entry = Path(sys.executable).with_name("spatialscout")     # the console script a user runs
        cli = [str(entry)] if entry.exists() else [sys.executable, "-m", "spatialscout_gym.cli.main"]
        cli_cmd = [*cli, "score", "--json", str(root)]
        script_cmd = [sys.executable, str(script), str(root)]
        for _ in range(args.repeats):      # interleaved, so a busy neighbour slows both alike
            cpu, wall, cli_out = cpu_seconds(cli_cmd)
            runs["cli"].append((cpu, wall))
            cpu, wall, script_out = cpu_seconds(script_cmd)
            runs["script"].append((cpu, wall))
    cli_iou = json.loads(cli_out)["object_micro"]["all"]["mean_iou"]
    script_iou = json.loads(script_out)["all_mean_iou"]
    med = {k: {"cpu_s": round(float(np.median([c for c, _ in v])), 3),
               "wall_s": round(float(np.median([w for _, w in v])), 3)} for k, v in runs.items()}
    ratio = med["cli"]["cpu_s"] / med["script"]["cpu_s"]
    result = {
        "benchmark": "bench_score_cli", "scenes": 80, "repeats": args.repeats,
        "median": med, "cpu_ratio_cli_over_script": round(ratio, 3), "meets_goal": ratio <= 1.0,
        "object_micro_all_mean_iou": {"cli": round(cli_iou, 6), "script": round(script_iou, 6)},
        "same_mean_iou": abs(cli_iou - script_iou) < 1e-9,
        "machine": machine(),
    }
    return publish(result, args.out)


if __name__ == "__main__":
    main()
