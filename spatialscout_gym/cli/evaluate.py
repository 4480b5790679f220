"""``spatialscout evaluate``: many episodes of one agent, in parallel, resumable.

    spatialscout evaluate --agent origin --scenes catalog --out runs/origin --workers 2
    spatialscout evaluate --agent origin --scenes procedural:1 procedural:2 --out runs/o --repeats 3  # seeds 0-2
    spatialscout evaluate --agent origin --scenes catalog --out runs/o --seeds 0 1 2   # explicit seeds
    spatialscout evaluate --agent origin --scenes catalog --out runs/o --seeds 7:8     # seed 7 only
    spatialscout evaluate --agent openai:gpt-x --scenes catalog --out runs/g --backend ray \
        --ray-address auto --workers 16 --max-concurrency 8

Rerunning the same command skips finished episodes and redoes failed or unfinished ones.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Iterable

from spatialscout_gym.cli.errors import CliError
from spatialscout_gym.cli.options import (CALL_BUDGET_HELP, add_catalog_option, add_nbv_options, agent_help, apply_catalog_option,
                                           call_budget_arg, check_episode_options, check_output_dir,
                                           nbv_options, preflight)
from spatialscout_gym.cli.run import add_vlm_arguments, vlm_options
from spatialscout_gym.cluster.join import ADDRESS_FORMS
from spatialscout_gym.eval.running.backends import RAY_TIMEOUT_S
from spatialscout_gym.core.types import natural_number


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = subparsers.add_parser(
        "evaluate", help="run an agent on many scenes in parallel (resumable) and write a report",
        description="Run AGENT on every scene (x seeds) in parallel worker processes or on Ray. Each "
                    "episode writes DIR/<scene>/seed_<k>/ atomically; rerunning the same command "
                    "resumes. Writes DIR/report.json and DIR/report.md at the end.")
    p.add_argument("--agent", default=None, help=agent_help() + " (required unless --models)")
    p.add_argument("--models", type=Path, default=None, metavar="FILE",
                   help="a TOML file of model presets ([models.NAME]: agent, base_url, api_key_env, "
                        "reasoning_effort, limits, prices, workers, ...; docs/models.md): evaluate each in "
                        "--out/NAME, as its options given as flags would")
    p.add_argument("--scenes", required=True, nargs="+", metavar="SCENE",
                   help="'catalog' (all catalog scenes) and/or scene ids, procedural:<seed>, spec JSON paths")
    p.add_argument("--out", required=True, type=Path, help="evaluation directory DIR")
    add_catalog_option(p)
    p.add_argument("--workers", type=int, default=1, help="parallel workers (default 1)")
    p.add_argument("--backend", choices=("local", "ray"), default="local",
                   help="local process pool (default) or a Ray cluster")
    p.add_argument("--ray-address", default=None,
                   help=f"Ray cluster address for --backend ray (default: start a local Ray instance): {ADDRESS_FORMS}")
    p.add_argument("--ray-timeout", type=float, default=RAY_TIMEOUT_S, metavar="S",
                   help=f"--backend ray: seconds an actor may take to start, and may stay silent during an episode "
                        f"before that episode counts as a failed attempt (its node lost; the rest go on; default "
                        f"{RAY_TIMEOUT_S:g})")
    seeds = p.add_mutually_exclusive_group()
    seeds.add_argument("--seeds", nargs="+", default=None, metavar="SEED",
                       help="the agent seeds to run on every scene: seed ids (--seeds 0 1 2) or ranges A:B "
                            "meaning seeds A..B-1 (--seeds 7:8 runs seed 7 only); one number alone other "
                            "than 0 is refused, as it once counted repeats: for seeds 0..N-1 write --repeats N, "
                            "for seed K alone --seeds K:K+1; default: seed 0")
    seeds.add_argument("--repeats", type=int, default=None, metavar="N",
                       help="N repeats per scene, with seeds 0..N-1 (the same as --seeds 0:N)")
    p.add_argument("--image-budget", type=int, default=None,
                   help="images per episode, initial one included (default 100; 20 for NBV agents, or what a "
                        "policy agent (ppo:PATH, rllib:PATH) was trained with)")
    p.add_argument("--call-budget", type=call_budget_arg, default=None, metavar="B", help=CALL_BUDGET_HELP)
    p.add_argument("--resolution", type=int, default=None,
                   help="square render size in pixels (default 512; 64 for NBV agents, or what a policy agent "
                        "was trained with)")
    p.add_argument("--max-concurrency", type=int, default=None,
                   help="cap on simultaneous model requests of the agent's provider across workers")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("--stop-after-failures", type=int, default=3, metavar="N",
                   help="stop the batch after N consecutive episodes failed with the same model-service "
                        "error (a wrong key, a server gone; default 3; 0: never stop); finished episodes "
                        "are kept and a rerun resumes")
    p.add_argument("--html", action="store_true",
                   help="also write replay curves, figures and DIR/index.html (as `spatialscout report`)")
    p.add_argument("--estimate", action="store_true",
                   help="print the cost range of the evaluation (from --price-table and the budgets; "
                        "docs/models.md) without calling the model, and exit")
    add_nbv_options(p)
    add_vlm_arguments(p)
    p.set_defaults(func=run)


MAX_SEEDS = 100_000
"""Most seeds one evaluation takes (``--seeds``, ``--repeats``): far above any protocol's repeats
(the paper ran 3), and a plan of that many episodes per scene still fits in memory."""


def repeated(items: Iterable[int]) -> list[int]:
    """The items that occur more than once, sorted; linear in the items (a set, not ``list.count``
    per item: 20,000 seeds took 35 s that way)."""
    seen: set[int] = set()
    twice: set[int] = set()
    for k in items:
        (twice if k in seen else seen).add(k)
    return sorted(twice)


def parse_seeds(tokens: list[str]) -> list[int]:
    """``--seeds`` values: seed ids and ranges ``A:B`` (seeds A..B-1). A one-line
    :class:`CliError` for anything else, and for one bare number above 0: it once meant a count
    of repeats, so it is refused with the flag that says that now (``--repeats``)."""
    def bad(tok: str) -> CliError:
        return CliError(f"--seeds takes seed ids (0 1 2) or ranges A:B of non-negative integers; got {tok!r}")
    if len(tokens) == 1 and (natural_number(tokens[0]) or 0) > 0:
        k = int(tokens[0])
        raise CliError(f"--seeds {k}: one number no longer counts repeats; write --repeats {k} for seeds "
                       f"0..{k - 1}, or --seeds {k}:{k + 1} for seed {k} alone")
    parts: list[range] = []
    for tok in tokens:
        lo, sep, hi = tok.partition(":")
        if sep:
            a, b = natural_number(lo), natural_number(hi)
            if a is None or b is None or b <= a:
                raise bad(tok)
            parts.append(range(a, b))
        elif natural_number(tok) is not None:
            parts.append(range(int(tok), int(tok) + 1))
        else:
            raise bad(tok)
    count = sum(len(r) for r in parts)   # counted before a list is made: 0:1000000000000 is refused here
    if count > MAX_SEEDS:
        raise CliError(f"--seeds names {count} seeds; at most {MAX_SEEDS} per evaluation")
    seeds = [k for r in parts for k in r]
    dup = repeated(seeds)
    if dup:
        shown = ", ".join(map(str, dup[:10])) + (f" and {len(dup) - 10} more" if len(dup) > 10 else "")
        raise CliError(f"--seeds lists seed(s) {shown} more than once")
    return seeds


def seeds_of(args: argparse.Namespace) -> int | list[int]:
    """The seeds to run: ``--repeats N`` (seeds 0..N-1, as a count), ``--seeds`` ids, or seed 0."""
    if args.repeats is not None:
        if not 1 <= args.repeats <= MAX_SEEDS:
            raise CliError(f"--repeats must be >= 1 and at most {MAX_SEEDS} (seeds 0..N-1 per scene), got {args.repeats}")
        return args.repeats
    return parse_seeds(args.seeds) if args.seeds is not None else 1


def check_shared_files(agent: object, out: Path) -> None:
    """The evaluation's spend ledger (with ``--max-cost-usd``) and rate-limit window (with
    ``--rpm``/``--tpm``) read once before anything is sent: one that cannot be read stops the run
    here, in one line naming it (docs/models.md, "Cost before and during")."""
    from spatialscout_gym.conversation.rate_limits import RATE_LIMIT_FILE, RateLimiter
    from spatialscout_gym.conversation.spend import SPEND_FILE, SpendLedger
    if getattr(agent, "spend_ledger", None) is not None and os.path.lexists(out / SPEND_FILE):
        SpendLedger(path=out / SPEND_FILE).total()
    if getattr(getattr(agent, "provider", None), "rate_limiter", None) is not None \
            and os.path.lexists(out / RATE_LIMIT_FILE):
        RateLimiter(path=out / RATE_LIMIT_FILE).check()


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def run(args: argparse.Namespace) -> int:
    if getattr(args, "models", None) is not None:
        return _run_presets(args)
    if not args.agent:
        raise CliError("--agent is required (or --models FILE)")
    return _run_one(args)


def _run_presets(args: argparse.Namespace) -> int:
    """Every model of the presets file, one after the other, each in ``--out/NAME``."""
    from spatialscout_gym.cli.presets import hold_presets_run, load_presets, preset_args
    if args.agent:
        raise CliError("--agent and --models exclude each other: the presets file names each model's agent")
    own = argparse.ArgumentParser(prog="spatialscout").add_subparsers()
    register(own)   # evaluate's own parser: each preset value goes through its flag's type and choices
    presets = load_presets(args.models, own.choices["evaluate"])
    worst = 0
    estimates: list[tuple[dict[str, float] | None, float | None]] | None = [] if args.estimate else None
    lock = None if args.estimate else hold_presets_run(Path(args.out), list(presets))
    try:
        for name, table in presets.items():
            print(f"== {name} ({table['agent']}) -> {Path(args.out) / name}")
            worst = max(worst, _run_one(preset_args(args, name, table, args.models), estimates))
    finally:
        if lock is not None:
            os.close(lock)
    if estimates is not None:
        print(_total_line(estimates))
    return worst


def _cap_line(usd: dict[str, float], cap: float) -> str:
    """What ``--max-cost-usd`` (or a preset's ``max_cost_usd``) does to an estimated range."""
    if usd["high"] <= cap:
        return f"  cap ${cap:.2f}: not reached, even at the high end"
    inflight = "plus at most the calls in flight, one per worker"
    if usd["low"] >= cap:
        return f"  cap ${cap:.2f}: reached even at the low end; the evaluation stops at ${cap:.2f} ({inflight})"
    return (f"  cap ${cap:.2f}: inside the range; the evaluation stops there if it costs more, so "
            f"${usd['low']:.2f} - ${cap:.2f} ({inflight})")


def _total_line(estimates: list[tuple[dict[str, float] | None, float | None]]) -> str:
    """The presets file's total range, and the same with each model's cap applied."""
    priced = [(usd, cap) for usd, cap in estimates if usd is not None]
    low, high = sum(u["low"] for u, _ in priced), sum(u["high"] for u, _ in priced)
    capped = [(min(u["low"], c) if c is not None else u["low"], min(u["high"], c) if c is not None else u["high"])
              for u, c in priced]
    line = f"total of {len(priced)} priced model(s): ${low:.2f} - ${high:.2f}"
    if any(c is not None for _, c in priced):
        line += f"; with their caps ${sum(lo for lo, _ in capped):.2f} - ${sum(hi for _, hi in capped):.2f}"
    if len(priced) < len(estimates):
        line += f" ({len(estimates) - len(priced)} model(s) without a price not counted)"
    return line


def _run_one(args: argparse.Namespace,
             estimates: list[tuple[dict[str, float] | None, float | None]] | None = None) -> int:
    """One evaluation; with ``--estimate`` only its cost range (and the cap it would hit), added to
    ``estimates`` for a presets file's total."""
    from spatialscout_gym.baselines.registry import build_agent
    from spatialscout_gym.core.redact import redact
    from spatialscout_gym.eval.running.evaluate import EvalSettings, evaluate
    apply_catalog_option(args)
    check_episode_options(args)
    check_output_dir(args.out)
    seeds = seeds_of(args)
    if args.workers < 1:
        raise CliError(f"--workers must be >= 1, got {args.workers}")
    if args.stop_after_failures < 0:
        raise CliError(f"--stop-after-failures must be >= 0 (0: never stop), got {args.stop_after_failures}")
    if args.max_concurrency is not None and args.max_concurrency < 1:
        raise CliError(f"--max-concurrency must be >= 1, got {args.max_concurrency}")
    if args.ray_address is not None and args.backend != "ray":
        raise CliError("--ray-address needs --backend ray")
    if not args.ray_timeout > 0:
        raise CliError(f"--ray-timeout must be > 0 seconds, got {args.ray_timeout}")
    from spatialscout_gym.eval.running.evaluate import expand_scenes
    from spatialscout_gym.scenes.catalog import scene_name_problem
    problems = [p for p in map(scene_name_problem, expand_scenes(args.scenes)) if p]
    if problems:
        raise CliError(problems[0] + (f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""))
    options = {**vlm_options(args), **nbv_options(args)}
    # The key and the endpoint reach the workers but are neither written to DIR nor part of what a
    # resume must match (a key is secret; a model served at a new address is the same model).
    # --offline is how this run reaches the model, not what it asks: neither written nor compared
    runtime = {k: options.pop(k) for k in ("api_key", "base_url", "offline") if options.get(k) is not None}
    # an effort of None is kept: it means "send none" (--no-reasoning-effort), not "the default"
    options = {k: v for k, v in options.items()
               if (v is not None or k == "reasoning_effort") and k not in ("api_key", "base_url", "offline")}
    agent = build_agent(args.agent, **options, **runtime)   # fail here, in one line, not in every worker
    if args.estimate:   # no endpoint check, no model call
        from spatialscout_gym.eval.analysis.cost_estimate import estimate_lines, estimate_usd
        n = len(expand_scenes(args.scenes)) * (seeds if isinstance(seeds, int) else len(seeds))
        budgets = {"episodes": n, "model_call_budget": args.call_budget, "image_budget": args.image_budget,
                   "resolution": args.resolution}
        for line in estimate_lines(agent, **budgets):
            print(line)
        usd = estimate_usd(agent, **budgets)
        if usd is not None and args.max_cost_usd is not None:
            print(_cap_line(usd, args.max_cost_usd))
        if estimates is not None:
            estimates.append((usd, args.max_cost_usd))
        return 0
    check_shared_files(agent, args.out)   # a ledger that cannot be read: no request at all
    # endpoint, key and model once, before any scene is built (each model of a presets file)
    preflight(agent, options.get("request_cache"), offline=bool(runtime.get("offline")))
    settings = EvalSettings(args.agent, args.image_budget, args.call_budget, args.resolution,
                            agent_options=options, runtime_options=runtime)
    import signal
    import threading
    main_thread = threading.current_thread() is threading.main_thread()
    old_term = signal.signal(signal.SIGTERM, _interrupt) if main_thread else None   # SIGTERM stops as Ctrl-C does
    try:
        summary = evaluate(args.out, settings, args.scenes, seeds=seeds, workers=args.workers,
                           backend=args.backend, max_concurrency=args.max_concurrency,
                           ray_address=args.ray_address, ray_timeout_s=args.ray_timeout,
                           progress=not args.no_progress,
                           stop_after_failures=args.stop_after_failures or None)
    except KeyboardInterrupt:
        print("interrupted; finished episodes are kept. Rerun the same command to resume.", flush=True)
        return 130
    finally:
        if main_thread:
            signal.signal(signal.SIGTERM, old_term)
    print(f"{summary.total} episodes: {summary.skipped} already done, {summary.ran} run now, "
          f"{len(summary.failed)} failed")
    for key, why in summary.redone.items():
        print(f"  redone {key}: its finished run did not pass the resume checks ({why}); kept as an attempt")
    if summary.cost_capped:
        print(f"stopped: the spend reached --max-cost-usd {args.max_cost_usd:g}; no further episode was started. "
              f"Rerun with a higher cap to resume")
    for o in summary.failed:
        print(f"  failed {o.task.key}: {redact(o.error)}")
    if summary.report is not None and summary.report.object_micro is None:
        print(f"no episode completed: nothing to score; wrote {args.out}/report.json and report.md (the failures). "
              "Fix the cause and rerun the same command to resume.")
    elif summary.report is not None:
        r = summary.report
        om, sm = r.object_micro or {}, r.scene_macro or {}
        print(f"object-micro all-target mean IoU {100 * om['all']['mean_iou']:.3f}%  coverage "
              f"{100 * om['coverage']:.1f}%  full-scene loss {om['full_scene_loss_m']:.3f} m  "
              f"(scene-macro loss {sm['full_scene_loss_m']:.3f} m)")
        e = r.episodes
        print(f"completed {e.completed} of {e.total} episodes ({100 * e.completed_rate:.1f}%), "
              f"failed {e.failed} ({100 * e.failure_rate:.1f}%); {e.attempts} attempts, "
              f"{e.failed_attempts} failed (kept under <scene>/seed_<k>/attempts/)")
        if len(r.seeds.seeds) > 1 and r.seeds.mean is not None and r.seeds.std is not None:
            print(f"across {len(r.seeds.seeds)} seeds: {100 * r.seeds.mean:.3f}% +- {100 * r.seeds.std:.3f}%")
        print(f"wrote {args.out}/report.json and report.md")
        if args.html:
            from spatialscout_gym.cli.report import make_site
            print(f"wrote {make_site(args.out)}")
    return 1 if summary.failed else 0
