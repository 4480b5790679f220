"""``spatialscout evaluate``: many episodes of one agent, in parallel, resumable (issue 7).

    spatialscout evaluate --agent origin --scenes catalog --out runs/origin --workers 2
    spatialscout evaluate --agent origin --scenes procedural:1 procedural:2 --out runs/o --seeds 3
    spatialscout evaluate --agent openai:gpt-x --scenes catalog --out runs/g --backend ray \
        --ray-address auto --workers 16 --max-concurrency 8

Rerunning the same command skips finished episodes and redoes failed or unfinished ones.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from spatialscout_gym.cli.errors import CliError
from spatialscout_gym.cli.options import agent_help, check_episode_options
from spatialscout_gym.cli.run import add_vlm_arguments, vlm_options


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "evaluate", help="run an agent on many scenes in parallel (resumable) and write a report",
        description="Run AGENT on every scene (x seeds) in parallel worker processes or on Ray. Each "
                    "episode writes DIR/<scene>/seed_<k>/ atomically; rerunning the same command "
                    "resumes. Writes DIR/report.json and DIR/report.md at the end.")
    p.add_argument("--agent", required=True, help=agent_help())
    p.add_argument("--scenes", required=True, nargs="+", metavar="SCENE",
                   help="'catalog' (all catalog scenes) and/or scene ids, procedural:<seed>, spec JSON paths")
    p.add_argument("--out", required=True, type=Path, help="evaluation directory DIR")
    p.add_argument("--workers", type=int, default=1, help="parallel workers (default 1)")
    p.add_argument("--backend", choices=("local", "ray"), default="local",
                   help="local process pool (default) or a Ray cluster")
    p.add_argument("--ray-address", default=None,
                   help="Ray cluster address for --backend ray (default: start a local Ray instance)")
    p.add_argument("--seeds", type=int, default=1, help="repeats per scene, agent seeds 0..K-1 (default 1)")
    p.add_argument("--image-budget", type=int, default=None,
                   help="images per episode, initial one included (default 100, or what a ppo: policy was trained with)")
    p.add_argument("--call-budget", type=int, default=100, help="B, calls per episode (default 100): model calls for openai:/openai-responses:/anthropic: agents, tool calls for every other agent")
    p.add_argument("--resolution", type=int, default=None,
                   help="square render size in pixels (default 512, or what a ppo: policy was trained with)")
    p.add_argument("--max-concurrency", type=int, default=None,
                   help="cap on simultaneous model requests of the agent's provider across workers")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("--html", action="store_true",
                   help="also write replay curves, figures and DIR/index.html (as `spatialscout report`)")
    add_vlm_arguments(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from spatialscout_gym.baselines.registry import UnknownAgentError, make_agent
    from spatialscout_gym.eval.evaluate import EvalSettings, SettingsMismatchError, evaluate
    check_episode_options(args)
    for flag, value, low in (("--workers", args.workers, 1), ("--seeds", args.seeds, 1)):
        if value < low:
            raise CliError(f"{flag} must be >= {low}, got {value}")
    if args.max_concurrency is not None and args.max_concurrency < 1:
        raise CliError(f"--max-concurrency must be >= 1, got {args.max_concurrency}")
    if args.ray_address is not None and args.backend != "ray":
        raise CliError("--ray-address needs --backend ray")
    from spatialscout_gym.eval.evaluate import expand_scenes
    from spatialscout_gym.scenes.catalog import scene_name_problem
    try:
        problems = [p for p in map(scene_name_problem, expand_scenes(args.scenes)) if p]
    except ValueError as exc:
        raise CliError(str(exc)) from None
    if problems:
        raise CliError(problems[0] + (f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""))
    options = vlm_options(args)
    # The key and the endpoint reach the workers but are neither written to DIR nor part of what a
    # resume must match (a key is secret; a model served at a new address is the same model).
    runtime = {k: options.pop(k) for k in ("api_key", "base_url") if options.get(k) is not None}
    options = {k: v for k, v in options.items() if v is not None and k not in ("api_key", "base_url")}
    try:
        make_agent(args.agent, **options, **runtime)
    except UnknownAgentError as exc:
        raise CliError(str(exc)) from None
    settings = EvalSettings(args.agent, args.image_budget, args.call_budget, args.resolution,
                            agent_options=options, runtime_options=runtime)
    try:
        summary = evaluate(args.out, settings, args.scenes, seeds=args.seeds, workers=args.workers,
                           backend=args.backend, max_concurrency=args.max_concurrency,
                           ray_address=args.ray_address, progress=not args.no_progress)
    except (SettingsMismatchError, ValueError, KeyError, RuntimeError) as exc:
        raise CliError(str(exc).strip("'\"")) from None
    except KeyboardInterrupt:
        print("interrupted; finished episodes are kept. Rerun the same command to resume.")
        return 130
    print(f"{summary.total} episodes: {summary.skipped} already done, {summary.ran} run now, "
          f"{len(summary.failed)} failed")
    for o in summary.failed:
        print(f"  failed {o.task.key}: {o.error}")
    if summary.report is not None:
        r = summary.report
        om = r["object_micro"]
        print(f"object-micro all-target mean IoU {100 * om['all']['mean_iou']:.3f}%  coverage "
              f"{100 * om['coverage']:.1f}%  full-scene loss {om['full_scene_loss_m']:.3f} m  "
              f"(scene-macro loss {r['scene_macro']['full_scene_loss_m']:.3f} m)")
        if len(r["seeds"]["seeds"]) > 1:
            print(f"across {len(r['seeds']['seeds'])} seeds: {100 * r['seeds']['mean']:.3f}% "
                  f"+- {100 * r['seeds']['std']:.3f}%")
        print(f"wrote {args.out}/report.json and report.md")
        if args.html:
            from spatialscout_gym.cli.report import make_site
            print(f"wrote {make_site(args.out)}")
    return 1 if summary.failed else 0
