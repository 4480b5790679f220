"""``spatialscout run``: one episode of a built-in agent on one scene, written to a run directory.

    spatialscout run --agent origin --scene procedural:7 --out runs/origin-p7 --resolution 128
    spatialscout run --agent openai:qwen2.5-vl --base-url http://127.0.0.1:8000/v1 --api-key local \
        --scene procedural:7 --out runs/qwen-p7 [--mode passive]
"""

from __future__ import annotations

import argparse
from pathlib import Path

from spatialscout_gym.cli.errors import CliError
from spatialscout_gym.cli.options import (CALL_BUDGET_HELP, add_catalog_option, add_nbv_options, agent_help, apply_catalog_option,
                                           call_budget_arg, check_episode_options, preflight,
                                          nbv_options, reasoning_effort_option)
from spatialscout_gym.conversation.prompt import DEFAULT_PROMPT_STYLE, PROMPT_STYLE_ALIASES, PROMPT_STYLES


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = subparsers.add_parser(
        "run", help="run one episode of an agent and write trace, predictions, result and frames",
        description="Run one episode of AGENT on SCENE and write trace.jsonl, predictions.json, "
                    "result.json, ground_truth.json and frames/*.png under --out.")
    p.add_argument("--agent", required=True, help=agent_help())
    p.add_argument("--scene", required=True,
                   help="catalog scene id, procedural:<seed>, or a scene spec JSON path")
    p.add_argument("--out", required=True, type=Path, help="run directory to create")
    add_catalog_option(p)
    p.add_argument("--seed", type=int, default=0, help="agent random seed (default 0)")
    p.add_argument("--image-budget", type=int, default=None,
                   help="images per episode, initial one included (default 100; 20 for NBV agents, or what a "
                        "policy agent (ppo:PATH, rllib:PATH) was trained with)")
    p.add_argument("--call-budget", type=call_budget_arg, default=None, metavar="B", help=CALL_BUDGET_HELP)
    p.add_argument("--resolution", type=int, default=None,
                   help="square render size in pixels (default 512; 64 for NBV agents, or what a policy agent "
                        "was trained with)")
    p.add_argument("--overwrite", action="store_true",
                   help="replace an existing --out that is a run directory (holds result.json and trace.jsonl); "
                        "any other directory is refused")
    add_nbv_options(p)
    add_vlm_arguments(p)
    p.set_defaults(func=run)


def add_vlm_arguments(p: argparse.ArgumentParser) -> None:
    """Options of the model agents (``SERVICE:MODEL``, e.g. ``openai:MODEL``) (with them ``--call-budget``
    is B, the model-call budget of docs/protocol.md section 5)."""
    g = p.add_argument_group("model agents (--agent SERVICE:MODEL: openai:, openai-responses:, anthropic: or "
                             "any registered model service)")
    g.add_argument("--base-url", help="an OpenAI- or Anthropic-compatible endpoint, e.g. a local vLLM "
                                      "or Ollama server (http://127.0.0.1:8000/v1)")
    g.add_argument("--api-key", help="API key (default: OPENAI_API_KEY / ANTHROPIC_API_KEY; any "
                                     "placeholder for a local server)")
    g.add_argument("--reasoning-effort", metavar="EFFORT",
                   help="reasoning effort sent with every request (default xhigh, the paper's; its one other "
                        "row is GPT-6 Astra at medium): OpenAI reasoning_effort, Responses reasoning.effort, "
                        "Anthropic extended thinking with a budget per effort plus output_config.effort "
                        "(docs/protocol.md section 10). 'none' is sent as the value none; a service that "
                        "refuses the parameter gets it once and the run goes on without it, recorded in "
                        "harness.json")
    g.add_argument("--require-effort", action="store_true",
                   help="fail the run (one line, exit 2) when the service refuses the reasoning effort, "
                        "instead of going on without it")
    g.add_argument("--no-reasoning-effort", action="store_true",
                   help="send no reasoning-effort parameter at all (the service's own default)")
    g.add_argument("--max-tokens", type=int,
                   help="output token limit per model response (default: none, as in the paper; the "
                        "Anthropic API requires one, so the model's own maximum is sent there). A reply "
                        "cut off at the limit fails the attempt")
    g.add_argument("--prompt", dest="prompt_style", choices=PROMPT_STYLES + tuple(PROMPT_STYLE_ALIASES),
                   default=DEFAULT_PROMPT_STYLE, metavar="STYLE",
                   help="prompt wording: appendix-a (default: every sentence sourced from the paper's "
                        "Appendix A and section 3.1 or the release's prompt, listed in docs/protocol.md section "
                        "10; first user message; inventory and calibration come from the tools), "
                        "content-list (the earlier default, a shorter paraphrase; also accepted as 'paper'), "
                        "detailed (this package's fuller system prompt with inventory, calibration and tips) "
                        "or legacy (its earliest wording); the style and role are recorded in harness.json")
    g.add_argument("--image-max-side", type=int, default=384, metavar="PX",
                   help="longest side of the JPEG a model receives, pixels (default 384, the protocol's "
                        "size: docs/protocol.md section 3); recorded in the run")
    g.add_argument("--price-table", type=Path, help="JSON {model: {input_per_mtok, output_per_mtok[, "
                                                    "cached_input_per_mtok]}} (USD) for the episode cost in "
                                                    "result.json")
    g.add_argument("--mode", choices=("active", "passive", "blind"), default="active",
                   help="passive: fixed scripted views (stereo pairs), a prompt of its own and only the six "
                        "non-camera tools; blind: the blind control, every tool result but no image (a "
                        "frame's caption says it is withheld), listed apart from seeing runs (default active)")
    g.add_argument("--image-history", type=int, metavar="K",
                   help="send only the last K images with each request, older ones replaced by their "
                        "captions (for small-context models; default: every image, as the paper); "
                        "recorded in result.json")
    g.add_argument("--request-cache", type=Path, default=None, metavar="DIR",
                   help="store each model response under the SHA-256 of its exact request and the episode's "
                        "seed; a rerun of a failed attempt replays the calls already paid for and continues "
                        "live (off by default, as the paper)")
    g.add_argument("--offline", action="store_true",
                   help="with --request-cache: answer every request from the cache and send none (no endpoint "
                        "check; a request the cache cannot answer fails its episode, RequestCacheError); "
                        "without it the endpoint is checked before the first scene, whatever the cache holds")
    g.add_argument("--timeout", type=float, default=None, metavar="S", dest="timeout_s",
                   help="seconds per HTTP request (default 180, docs/protocol.md section 5)")
    g.add_argument("--attempts", type=int, default=None, metavar="N",
                   help="HTTP attempts per model call on network failures and 5xx (default 3)")
    g.add_argument("--backoff", type=float, nargs="+", default=None, metavar="S", dest="backoff_s",
                   help="seconds before the 2nd, 3rd, ... attempt (default 1 2; doubled on when "
                        "--attempts asks for more); a longer Retry-After is waited instead")
    g.add_argument("--rate-limit-wait", type=float, default=None, metavar="S", dest="rate_limit_wait_s",
                   help="seconds one model call may wait out HTTP 429 answers (their Retry-After) before "
                        "they count as failed attempts (default 900; 0: a 429 is a failed attempt)")
    g.add_argument("--rpm", type=int, default=None, metavar="N", dest="requests_per_minute",
                   help="requests per minute to the model, shared by every worker of an evaluation")
    g.add_argument("--tpm", type=int, default=None, metavar="N", dest="tokens_per_minute",
                   help="tokens per minute to the model (as the service counts them in usage), shared by "
                        "every worker of an evaluation")
    g.add_argument("--max-cost-usd", type=float, default=None, metavar="USD",
                   help="stop when the spend (from --price-table; an evaluation's whole spend, every worker "
                        "and earlier run) reaches USD: no episode starts after that; running ones finish, or "
                        "end at their next request as failed attempts (CostCapReached), and are kept; a "
                        "rerun with a higher cap resumes (the cap is not a protocol setting)")
    g.add_argument("--passive-views", type=int, default=24,
                   help="views in passive mode, the initial one included (default 24)")


def _file_sha256(path: Path) -> str | None:
    """SHA-256 of a file's bytes (None when it cannot be read: loading it reports why, in one line)."""
    import hashlib
    try:
        return hashlib.sha256(Path(path).read_bytes()).hexdigest()
    except OSError:
        return None


def vlm_options(args: argparse.Namespace) -> dict:
    """``make_agent`` options for a model agent; a :class:`CliError` when they are given to
    another agent or are out of range."""
    from spatialscout_gym.baselines.registry import agent_kind
    is_vlm = agent_kind(args.agent) == "model"
    given = [f"--{n.replace('_', '-')}" for n in ("base_url", "api_key", "reasoning_effort",
                                                   "max_tokens", "price_table", "image_history",
                                                   "request_cache")
             if getattr(args, n, None) is not None]
    given += [flag for flag, n in REQUEST_FLAGS.items() if getattr(args, n, None) is not None]
    if args.mode != "active":
        given.append("--mode")
    if getattr(args, "no_reasoning_effort", False):
        given.append("--no-reasoning-effort")
    if getattr(args, "require_effort", False):
        given.append("--require-effort")
    if getattr(args, "offline", False):
        given.append("--offline")
    if getattr(args, "prompt_style", DEFAULT_PROMPT_STYLE) != DEFAULT_PROMPT_STYLE:
        given.append("--prompt")
    if getattr(args, "image_max_side", 384) != 384:
        given.append("--image-max-side")
    if not is_vlm:
        if given:
            from spatialscout_gym.conversation.providers import PROVIDERS
            raise CliError(f"{', '.join(given)} apply only to model agents "
                           f"({', '.join(f'{n}:MODEL' for n in PROVIDERS)}), not to {args.agent!r}")
        return {}
    if args.price_table:   # a FIFO or a device would block or never end the reads below
        from spatialscout_gym.cli.input_files import check_small_file
        check_small_file(args.price_table, "--price-table", utf8=True)
    if args.image_history is not None and args.image_history < 0:
        raise CliError(f"--image-history must be >= 0 images, got {args.image_history}")
    if args.max_tokens is not None and args.max_tokens < 1:
        raise CliError(f"--max-tokens must be >= 1, got {args.max_tokens}")
    if not 16 <= args.image_max_side <= 4096:
        raise CliError(f"--image-max-side must be between 16 and 4096 pixels, got {args.image_max_side}")
    if args.mode == "passive" and not 1 <= args.passive_views <= args.image_budget:
        raise CliError(f"--passive-views must be between 1 and --image-budget ({args.image_budget}), "
                       f"got {args.passive_views}")
    return {"base_url": args.base_url, "api_key": args.api_key, **reasoning_effort_option(args),
            **request_options(args),
            "max_tokens": args.max_tokens, "mode": args.mode, "model_call_budget": args.call_budget,
            "passive_views": args.passive_views, "image_history": args.image_history,
            "price_table": str(args.price_table) if args.price_table else None,
            **({"price_table_sha256": _file_sha256(args.price_table)} if args.price_table else {}),
            "prompt_style": args.prompt_style, "image_max_side": args.image_max_side,
            **({"request_cache": str(args.request_cache)} if getattr(args, "request_cache", None) else {}),
            **({"offline": True} if getattr(args, "offline", False) else {}),
            **({"require_effort": True} if getattr(args, "require_effort", False) else {})}


REQUEST_FLAGS = {"--timeout": "timeout_s", "--attempts": "attempts", "--backoff": "backoff_s",
                 "--rate-limit-wait": "rate_limit_wait_s", "--rpm": "requests_per_minute",
                 "--tpm": "tokens_per_minute", "--max-cost-usd": "max_cost_usd"}
"""The request-policy flags and their agent options (each recorded only when given, so that an
evaluation without them keeps the settings it always had)."""


def request_options(args: argparse.Namespace) -> dict:
    """Agent options of the request-policy flags given (:data:`REQUEST_FLAGS`), checked; the
    backoff is doubled on when ``--attempts`` asks for more retries than it lists."""
    out = {n: getattr(args, n) for n in REQUEST_FLAGS.values() if getattr(args, n, None) is not None}
    for flag, n in REQUEST_FLAGS.items():
        value = out.get(n)
        low = 1 if n in ("attempts", "requests_per_minute", "tokens_per_minute") else 0
        if value is None:
            continue
        if any(not low <= v < float("inf") for v in (value if isinstance(value, list) else [value])) or (
                n == "timeout_s" and value <= 0):
            raise CliError(f"{flag} must be a finite number {'> 0' if n == 'timeout_s' else f'>= {low}'}, got {value}")
    if out.get("max_cost_usd") is not None and (out["max_cost_usd"] <= 0 or not getattr(args, "price_table", None)):
        raise CliError("--max-cost-usd needs a positive amount and --price-table (the spend is priced from it)")
    if "attempts" in out or "backoff_s" in out:
        from spatialscout_gym.conversation.providers import ATTEMPTS, BACKOFF_S
        backoff = list(out.get("backoff_s") or BACKOFF_S)
        while len(backoff) < out.get("attempts", ATTEMPTS) - 1:
            backoff.append(2 * backoff[-1] if backoff else 1.0)
        out["backoff_s"] = backoff
    return out


def check_out_dir(out: Path, *, overwrite: bool) -> None:
    """A one-line error, before any work, for an ``--out`` that is a file, or that ``--overwrite``
    would delete although it is not a run directory
    (:func:`~spatialscout_gym.eval.layout.is_run_dir`, the rule every reader uses)."""
    from spatialscout_gym.core.run_files import RESULT_FILE, TRACE_FILE
    from spatialscout_gym.eval.layout import is_run_dir
    if out.exists() and not out.is_dir():
        raise CliError(f"--out {out} is a file; give a directory path for the run")
    if overwrite and out.is_dir() and any(out.iterdir()) and not is_run_dir(out):
        raise CliError(f"--out {out} is not a run directory (it lacks {RESULT_FILE} or {TRACE_FILE}); --overwrite "
                       f"replaces only run directories: choose another --out")


def _fmt(x) -> str:
    return "n/a" if x is None else f"{x:.3f}"


def run(args: argparse.Namespace) -> int:
    from spatialscout_gym.baselines.registry import build_agent
    from spatialscout_gym.core.errors import SpatialScoutError, message_of
    from spatialscout_gym.eval.running.runner import run_episode
    apply_catalog_option(args)
    check_episode_options(args)
    check_out_dir(Path(args.out), overwrite=args.overwrite)
    options = {**vlm_options(args), **nbv_options(args)}
    agent = build_agent(args.agent, **options)   # a one-line error names the agent
    preflight(agent, options.get("request_cache"), offline=bool(options.get("offline")))   # before any scene
    try:
        result = run_episode(agent, args.scene, args.out, seed=args.seed, image_budget=args.image_budget,
                             tool_call_budget=args.call_budget, resolution=args.resolution,
                             overwrite=args.overwrite)
    except FileExistsError as exc:
        raise CliError(f"{exc}; choose another --out or pass --overwrite") from None
    except SpatialScoutError as exc:  # unknown scene, broken spec file, drifted catalog, bad setting
        shown = args.scene if len(args.scene) <= 80 else f"{args.scene[:80]}... ({len(args.scene)} characters)"
        raise CliError(f"cannot run scene {shown!r}: {message_of(exc)}") from None
    c = result["counters"]
    print(f"scene {result['scene_id']}  agent {result['agent']}  seed {result['seed']}  "
          f"ended by {result['end_reason']}")
    m = result.get("model")
    if m:
        cost = "n/a" if m["cost_usd"] is None else f"${m['cost_usd']:.4f}"
        print(f"model calls {m['model_calls']}  HTTP attempts {m['http_attempts']}  tokens in "
              f"{m['usage']['input_tokens']} out {m['usage']['output_tokens']}  cost {cost}  mode {m['mode']}")
        print(f"API {m.get('api_mode')}  prompt {m.get('prompt_style')}  reasoning effort "
              f"{m.get('reasoning_effort') or 'none sent'}  output cap {m.get('max_output_tokens') or 'none'}  "
              f"(prompt, tool schema and settings in {args.out}/harness.json)")
        if m.get("reasoning_effort_refused"):
            print(f"NOTE: the service refused {', '.join(m['reasoning_effort_refused'])} on the first request; "
                  f"the run continued without it (harness.json, 'reasoning')")
    if result.get("status") == "failed":
        from spatialscout_gym.core.redact import redact
        if result.get("error_type") == "EffortRefusedError":
            raise CliError(f"{redact(result['error'])} (the failed run is in {args.out})")
        print(f"episode FAILED: {redact(result['error'])}")
        print(f"wrote {args.out}/ (trace.jsonl, result.json with status failed, frames/); it is left "
              f"out of scores and aggregates")
        return 1
    print(f"all-target mean IoU {result['all']['mean_iou']:.4f}  coverage {result['coverage']:.3f}  "
          f"submitted mean IoU {result['submitted']['mean_iou']:.4f}  "
          f"median centre error {_fmt(result['center_error_m']['median'])} m  "
          f"full-scene loss {result['full_scene_loss_m']:.3f} m")
    print(f"tool calls {c['tool_calls']}  images {c['images_used']}")
    records = ", harness.json, prompt.txt" if m else ""
    print(f"wrote {args.out}/ (trace.jsonl, predictions.json, result.json, ground_truth.json{records}, "
          f"frames/ with {c['images_used']} PNG)")
    return 0
