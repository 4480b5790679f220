"""Evaluate the reference and NBV agents on catalog scenes at one capture budget (issue 6, item 4).

Prints one Table-3-style markdown table (object-micro, docs/protocol.md section 9 columns, in %) with one
row per agent: with several ``--seeds`` the row is the mean over seeds and its label carries the
spread (max - min across seeds) of the all-target mean IoU, e.g. ``random-nbv (spread 1.27)``; a
``ppo:DIR/model.zip`` agent is labelled ``DIR``. ``--out`` writes every seed's object-micro metrics
and every column's spread (in ``COLUMNS`` order) as JSON. The README's "Next-best-view
baselines" table is this output.

    python benchmarks/nbv_results.py --scenes 80 --image-budget 20 --resolution 64 \\
        --agents origin uniform-ball oracle-explorer oracle-click random-nbv frontier-nbv \\
        ppo:runs/nbv/ppo20/model.zip --seeds 0 1 2 --out benchmarks/results/nbv.json

The tool-call budget is unlimited (``tool_call_budget=None``): every agent gets the same V images.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from spatialscout_gym.baselines.base import PrivilegedAccess
from spatialscout_gym.baselines.registry import make_agent
from spatialscout_gym.core.scoring import GroundTruth, aggregate, score_scene
from spatialscout_gym.episode.episode import Episode

COLUMNS = ("all: mean IoU", ">0", ">0.5", ">0.9", "submitted: mean IoU", ">0.5", ">0.9", "coverage")


def _row(m: dict) -> list[float]:
    a, s = m["all"], m["submitted"]
    return [100 * x for x in (a["mean_iou"], a["gt_0"], a["gt_50"], a["gt_90"], s["mean_iou"],
                              s["gt_50"], s["gt_90"], m["coverage"])]


def table_rows(per_seed: dict[str, list[list[float]]]) -> dict[str, list[float]]:
    """One row per agent: its only seed's row, or the mean over seeds labelled with the spread
    (max - min) of the all-target mean IoU (column 0), as in the README."""
    rows: dict[str, list[float]] = {}
    for label, seeds in per_seed.items():
        arr = np.asarray(seeds, dtype=float)
        if len(arr) == 1:
            rows[label] = list(arr[0])
        else:
            spread = float(arr[:, 0].max() - arr[:, 0].min())
            rows[f"{label} (spread {spread:.2f})"] = list(arr.mean(axis=0))
    return rows


def agent_label(name: str) -> str:
    """``ppo:DIR/model.zip`` -> ``DIR`` (the run directory's name); other names unchanged."""
    if not (name.startswith("ppo:") and "/" in name):
        return name
    parts = name.rstrip("/").split("/")
    return parts[-2] if parts[-1].endswith(".zip") else parts[-1]


def markdown(rows: dict[str, list[float]]) -> str:
    lines = ["| agent | " + " | ".join(COLUMNS) + " |", "|---" * (len(COLUMNS) + 1) + "|"]
    for name, vals in rows.items():
        lines.append(f"| {name} | " + " | ".join(f"{v:.2f}" for v in vals) + " |")
    return "\n".join(lines)


def evaluate(agent_name: str, scene_ids: list[str], *, seed: int, image_budget: int, resolution: int,
             renderer) -> dict:
    """Run ``agent_name`` once per scene; return the :func:`aggregate` dict."""
    from spatialscout_gym.scenes.catalog import scene_by_name
    scores = []
    for scene_id in scene_ids:
        spec = scene_by_name(scene_id)
        renderer.set_scene(spec)
        agent = make_agent(agent_name)
        ep = Episode(spec.public, renderer, image_budget=image_budget, tool_call_budget=None)
        priv = PrivilegedAccess(spec, renderer) if agent.privileged else None
        agent.run(ep, rng=np.random.default_rng([seed, len(scores)]), privileged=priv)
        if not ep.done:
            ep.end("agent_stopped")
        positions = {k: [float(x) for x in v] for k, v in ep.accepted_map.items()}
        scores.append(score_scene(GroundTruth.from_spec(spec), positions))
    return aggregate(scores)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--scenes", type=int, default=80, help="first N catalog scenes (default 80)")
    p.add_argument("--image-budget", type=int, default=20, help="V, images per episode (default 20)")
    p.add_argument("--resolution", type=int, default=64, help="render grid, pixels (default 64)")
    p.add_argument("--agents", nargs="+", default=["origin", "uniform-ball", "oracle-explorer",
                                                   "oracle-click", "random-nbv", "frontier-nbv"])
    p.add_argument("--seeds", type=int, nargs="+", default=[0], help="evaluation seeds")
    p.add_argument("--out", type=Path, default=None, help="write all metrics as JSON here")
    args = p.parse_args(argv)

    import torch
    torch.set_num_threads(1)
    from spatialscout_gym.render.sapien_renderer import SapienRenderer
    from spatialscout_gym.scenes.catalog import catalog_scene_ids, scene_by_name
    scene_ids = catalog_scene_ids()[: args.scenes]
    renderer = SapienRenderer(scene_by_name(scene_ids[0]), args.resolution, args.resolution)
    per_agent: dict[str, list[list[float]]] = {}
    everything: dict = {"scenes": scene_ids, "image_budget": args.image_budget,
                        "resolution": args.resolution, "agents": {}}
    try:
        for name in args.agents:
            per_seed = []
            for seed in args.seeds:
                t = time.time()
                agg = evaluate(name, scene_ids, seed=seed, image_budget=args.image_budget,
                               resolution=args.resolution, renderer=renderer)
                per_seed.append(_row(agg["object_micro"]))
                everything["agents"].setdefault(name, {})[str(seed)] = agg["object_micro"]
                print(f"# {name} seed {seed}: all mIoU {per_seed[-1][0]:.2f}% "
                      f"({time.time() - t:.1f} s)", flush=True)
            per_agent[agent_label(name)] = per_seed
            arr = np.array(per_seed)
            everything["agents"][name]["spread"] = [float(x) for x in arr.max(axis=0) - arr.min(axis=0)]
    finally:
        renderer.close()
    print(f"\n{len(scene_ids)} catalog scenes, V = {args.image_budget} images, {args.resolution} px, "
          f"object-micro %, mean of seeds {args.seeds} (spread = max - min of all: mean IoU):\n")
    print(markdown(table_rows(per_agent)))
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(everything, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
