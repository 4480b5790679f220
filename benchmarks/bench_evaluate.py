"""Episodes per minute of ``spatialscout evaluate`` for ``origin`` and ``oracle-explorer``.

    python benchmarks/bench_evaluate.py --scenes 6 --workers 2 --resolution 256 --out bench_evaluate.json

For each agent, evaluates the first ``--scenes`` catalog scenes into a fresh temporary directory
and prints: episodes per minute end to end (process start-up, scene builds and the renderer warm-up
of each worker included) and per worker once warm (median worker-side seconds per episode after
each worker's first). Writes the figures as JSON.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import tempfile
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    from spatialscout_gym.baselines.registry import known_agents
    from spatialscout_gym.eval.running.evaluate import EvalSettings, evaluate
    from spatialscout_gym.scenes.catalog import catalog_scene_ids

    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--scenes", type=int, default=6, help="first N catalog scenes (default 6)")
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--resolution", type=int, default=256)
    p.add_argument("--image-budget", type=int, default=100)
    p.add_argument("--agents", nargs="+", default=None,
                   help="default: origin and oracle-explorer (uniform-ball if no oracle-explorer)")
    p.add_argument("--procedural", action="store_true",
                   help="use procedural:1000.. training scenes instead of catalog scenes")
    p.add_argument("--out", type=Path, default=Path(__file__).parent / "results" / "bench_evaluate.json")
    args = p.parse_args(argv)
    agents = args.agents or ["origin", "oracle-explorer" if "oracle-explorer" in known_agents() else "uniform-ball"]
    scenes = ([f"procedural:{1000 + k}" for k in range(args.scenes)] if args.procedural
              else catalog_scene_ids()[: args.scenes])
    rows = []
    for agent in agents:
        with tempfile.TemporaryDirectory(prefix="bench_evaluate_") as tmp:
            s = evaluate(Path(tmp) / agent, EvalSettings(agent, args.image_budget, 100, args.resolution),
                         scenes, workers=args.workers, progress=False)
        warm = sorted(s.episode_wall_s)[: max(1, len(s.episode_wall_s) - args.workers)]
        row = {"agent": agent, "episodes": s.ran, "failed": len(s.failed), "wall_s": round(s.wall_s, 2),
               "episodes_per_min": round(60.0 * s.ran / s.wall_s, 2),
               "warm_s_per_episode_median": round(statistics.median(warm), 3),
               "warm_episodes_per_min_per_worker": round(60.0 / statistics.median(warm), 1),
               "all_target_mean_iou": s.report["object_micro"]["all"]["mean_iou"] if s.report else None}
        rows.append(row)
        print(f"{agent:16s} {row['episodes']} episodes in {row['wall_s']:.1f} s: "
              f"{row['episodes_per_min']:.1f} episodes/min end to end ({args.workers} workers); warm "
              f"{row['warm_s_per_episode_median']:.2f} s/episode per worker; failed {row['failed']}")
        if s.failed:
            print(f"  first failure: {s.failed[0].error}")
    out = {"benchmark": "evaluate", "scenes": scenes, "workers": args.workers, "resolution": args.resolution,
           "image_budget": args.image_budget, "machine": platform.platform(), "results": rows}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(out, indent=2) + "\n")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
