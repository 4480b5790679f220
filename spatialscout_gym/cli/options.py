"""Options the commands share: episode checks, the ``--agent`` help, loading a SCENE argument."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Iterable

from spatialscout_gym.cli.errors import CliError

if TYPE_CHECKING:
    from spatialscout_gym.core.spec import SceneSpec


EPISODE_DEFAULTS = {"image_budget": 100, "resolution": 512}
"""The protocol's V and render grid (docs/protocol.md sections 3 and 5)."""

NBV_EPISODE_DEFAULTS = {"image_budget": 20, "resolution": 64}
"""V and render grid of the README's next-best-view tables (``benchmarks/nbv_results.py``): the
defaults of the NBV agents (``random-nbv``, ``frontier-nbv``; a ``ppo:PATH`` policy's own
training settings come first). Those tables also use no tool-call cap."""

CALL_BUDGET_DEFAULT = 100
"""B of docs/protocol.md section 5 for every agent but the NBV ones (which get no cap)."""

NO_CAP = "none"
"""``--call-budget none``: no tool-call cap."""

CALL_BUDGET_HELP = ("B, calls per episode: model calls for model agents (openai:, anthropic:, ...), "
                    "tool calls for every other agent; 'none': no tool-call cap (not for model agents). "
                    "Default 100; none for the NBV agents (random-nbv, frontier-nbv, ppo:PATH, rllib:PATH), the "
                    "protocol of the README's NBV tables")


def call_budget_arg(text: str) -> int | str:
    """``--call-budget`` values: an integer, or ``none`` (no cap); range checks come later."""
    if text.strip().lower() in (NO_CAP, "unlimited"):
        return NO_CAP
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer or 'none' (no tool-call cap), got {text!r}") from None


def adopt_agent_settings(args: argparse.Namespace) -> None:
    """Fill ``--image-budget``/``--resolution`` left unset: a policy agent's training settings (its
    ``trained_settings``, :func:`~spatialscout_gym.baselines.registry.agent_settings`), else the NBV
    tables' V = 20 and 64 px for NBV agents, else the protocol's defaults. A value given that differs
    from the policy's training setting is kept, with a loud warning on stderr."""
    agent = getattr(args, "agent", None) or ""
    from spatialscout_gym.baselines.registry import agent_settings, is_nbv_agent
    defaults = NBV_EPISODE_DEFAULTS if is_nbv_agent(agent) else EPISODE_DEFAULTS
    trained = {k: v for k, v in agent_settings(agent).items() if k in EPISODE_DEFAULTS}   # a policy agent's
    for name, default in defaults.items():
        given = getattr(args, name, None)
        if given is None:
            setattr(args, name, int(trained.get(name, default)))
        elif name in trained and int(given) != int(trained[name]):
            import sys
            flag = "--" + name.replace("_", "-")
            print(f"WARNING: {flag} {given} differs from the {trained[name]} the policy {agent.partition(':')[2]} was "
                  f"trained with; its observations and episode length will not match its training",
                  file=sys.stderr)


def check_episode_options(args: argparse.Namespace) -> None:
    """Fill unset episode options (:func:`adopt_agent_settings`), then refuse an image budget,
    call budget or render grid outside the bounds of :mod:`spatialscout_gym.core.limits`
    (docs/protocol.md sections 3 and 5)."""
    adopt_agent_settings(args)
    check_episode_bounds(args)
    resolve_call_budget(args)


def check_episode_bounds(args: argparse.Namespace) -> None:
    """Refuse ``--image-budget`` or ``--resolution`` outside the bounds of
    :mod:`spatialscout_gym.core.limits`, in one line."""
    from spatialscout_gym.core.limits import image_budget_problem, resolution_problem
    problem = (image_budget_problem(args.image_budget, "--image-budget")
               or resolution_problem(args.resolution, "--resolution"))
    if problem:
        raise CliError(problem)


def resolve_call_budget(args: argparse.Namespace) -> None:
    """Turn ``--call-budget`` into an int or None (no cap): unset is 100, or None for the NBV
    agents (the NBV tables' protocol); ``none`` is refused for model agents, whose B counts model
    calls and must be finite."""
    from spatialscout_gym.baselines.registry import agent_kind, is_nbv_agent
    agent = getattr(args, "agent", None) or ""
    given = args.call_budget
    if given is None:
        args.call_budget = None if is_nbv_agent(agent) else CALL_BUDGET_DEFAULT
    elif given == NO_CAP:
        if agent_kind(agent) == "model":
            raise CliError(f"--call-budget none is not allowed for model agents ({agent}): B counts model "
                           f"calls and must be a number")
        args.call_budget = None
    elif given < 1:
        raise CliError(f"--call-budget must be >= 1 or 'none' (no tool-call cap), got {given}")


def reasoning_effort_option(args: argparse.Namespace) -> dict:
    """``make_agent`` options for the effort: ``--reasoning-effort`` as given, none with
    ``--no-reasoning-effort``, else the paper's default (docs/protocol.md section 10); who chose it
    goes to the records."""
    from spatialscout_gym.conversation.providers import DEFAULT_REASONING_EFFORT
    given = getattr(args, "reasoning_effort", None)
    if getattr(args, "no_reasoning_effort", False):
        if given is not None:
            raise CliError(f"--reasoning-effort {given} and --no-reasoning-effort contradict each other; "
                           f"pass one of them")
        return {"reasoning_effort": None, "reasoning_effort_source": "none sent (--no-reasoning-effort)"}
    if given is not None:
        if not given.strip():
            raise CliError("--reasoning-effort needs a value such as low, medium, high or xhigh "
                           "(--no-reasoning-effort sends none)")
        return {"reasoning_effort": given, "reasoning_effort_source": "--reasoning-effort"}
    return {"reasoning_effort": DEFAULT_REASONING_EFFORT, "reasoning_effort_source": "default: the paper's (Table 3)"}


def agent_help() -> str:
    """``--agent`` help listing the registered agents (the registry imports nothing heavy)."""
    from spatialscout_gym.baselines.registry import agent_entry, known_agents
    names = [n.replace(":ARG", f":{entry.argument}") if (entry := agent_entry(n)) is not None else n
             for n in known_agents()]
    return "one of: " + ", ".join(names)


def add_catalog_option(parser: argparse.ArgumentParser) -> None:
    """``--catalog 1.0|2.0|3.0|3.1``: the catalog version bare scene ids and the word ``catalog`` mean."""
    from spatialscout_gym.scenes.catalog import CATALOG_VERSIONS, DEFAULT_CATALOG_VERSION
    parser.add_argument("--catalog", choices=CATALOG_VERSIONS, default=None, metavar="VERSION",
                        help=f"scene catalog version: {' or '.join(CATALOG_VERSIONS)} (default "
                             f"{DEFAULT_CATALOG_VERSION}, or $SPATIALSCOUT_CATALOG); results name it")


def apply_catalog_option(args: argparse.Namespace) -> None:
    """Make ``--catalog`` the default version of this process and of the workers it starts
    (through ``$SPATIALSCOUT_CATALOG``, which they inherit)."""
    version = getattr(args, "catalog", None)
    if version:
        import os

        from spatialscout_gym.scenes.catalog import CATALOG_ENV
        os.environ[CATALOG_ENV] = version


def scene_from_arg(name: str) -> SceneSpec:
    """The :class:`~spatialscout_gym.core.spec.SceneSpec` a SCENE argument names (catalog id,
    ``procedural:<seed>``, spec file or directory, imported id), or a one-line :class:`CliError`."""
    from spatialscout_gym.core.errors import SpatialScoutError, message_of
    from spatialscout_gym.scenes.catalog import UnknownSceneError, scene_by_name
    try:
        return scene_by_name(name)
    except UnknownSceneError as exc:
        raise CliError(str(exc)) from None
    except SpatialScoutError as exc:  # bad seed, broken spec file, drifted catalog
        raise CliError(f"cannot load scene {name!r}: {message_of(exc)}") from None


def check_evaluation_dirs(dirs: Iterable[Path]) -> None:
    """Refuse a DIR argument that is not a directory (compare, leaderboard)."""
    for d in dirs:
        if not d.is_dir():
            raise CliError(f"{d} is not a directory (expected an evaluation directory from `spatialscout evaluate`)")


def check_output_dir(path: Path, flag: str = "--out") -> None:
    """Refuse an output directory argument that names an existing non-directory (evaluate,
    leaderboard): one line instead of a traceback from ``mkdir``."""
    if path.exists() and not path.is_dir():
        raise CliError(f"{flag} {path} is a file, not a directory; name a new or existing directory")


def preflight(agent: object, request_cache: str | None, *, offline: bool = False) -> None:
    """Check a model agent's endpoint, key and model once before anything is built (docs/models.md),
    whatever its request cache holds: a wrong ``--base-url`` is one line before the first scene.
    ``offline`` (``--offline``, which needs ``request_cache``) skips the check and says so: every
    request is then answered from the cache or refused there, none is sent."""
    provider = getattr(agent, "provider", None)
    if offline and not request_cache:
        raise CliError("--offline needs --request-cache DIR (the responses it replays)")
    if provider is None or not hasattr(provider, "preflight"):
        return
    if offline:
        print(f"offline: no endpoint check; every request is answered from the request cache {request_cache} "
              "or fails its episode there (nothing is sent)")
        return
    provider.preflight()


NBV_ENV_HELP = ("the dynamics every NBV agent (random-nbv, frontier-nbv, nbv-occupancy-frontier, ppo:PATH, "
                "rllib:PATH) steps under: SpatialScout/NBV-v2 (walls, floor and ceiling stop the camera) or "
                "SpatialScout/NBV-v1 (they do not); default: a policy's own (its nbv_config.json), NBV-v2 for "
                "the baselines. Recorded per episode in result.json ('nbv': env_id, walls, observation keys); "
                "compare and leaderboard refuse runs whose dynamics differ")


NBV_MAPPER_HELP = ("the mapper every NBV agent turns its captures into submissions with: oracle (a seen target "
                   "at its reference centre: all-target IoU is coverage) or oracle-surface (at the mean of its "
                   "seen surface points: IoU needs the target localised); default: a policy's own (its "
                   "nbv_config.json), oracle for the baselines. Recorded per episode in result.json "
                   "('nbv': mapper); compare and leaderboard refuse runs whose mappers differ")


def add_nbv_options(p: argparse.ArgumentParser) -> None:
    """``--nbv-env ID`` (the NBV dynamics, :data:`NBV_ENV_HELP`) and ``--nbv-mapper NAME`` (the NBV
    agents' mapper, :data:`NBV_MAPPER_HELP`)."""
    p.add_argument("--nbv-env", default=None, metavar="ID", help=NBV_ENV_HELP)
    p.add_argument("--nbv-mapper", default=None, metavar="NAME", help=NBV_MAPPER_HELP)


def nbv_options(args: argparse.Namespace) -> dict:
    """``make_agent`` options for ``--nbv-env`` and ``--nbv-mapper`` (``{"walls": bool, "mapper":
    name}``, each only when given); a :class:`CliError` for an unknown env id or mapper, or either
    flag given to a non-NBV agent."""
    from spatialscout_gym.baselines.registry import is_nbv_agent
    from spatialscout_gym.nbv.config import DYNAMICS_ENV_IDS
    from spatialscout_gym.nbv.mappers import MAPPERS
    def for_nbv_agents(flag: str) -> None:
        if not is_nbv_agent(args.agent):
            raise CliError(f"{flag} applies only to the NBV agents, not to {args.agent!r}")

    options: dict = {}
    env = getattr(args, "nbv_env", None)
    if env is not None:
        by_id = {env_id: walls for walls, env_id in DYNAMICS_ENV_IDS.items()}
        name = env if "/" in env else f"SpatialScout/{env if env.startswith('NBV-') else 'NBV-' + env}"
        if name not in by_id:
            raise CliError(f"--nbv-env must be one of {', '.join(sorted(by_id))}, got {env!r}")
        for_nbv_agents("--nbv-env")
        options["walls"] = by_id[name]
    mapper = getattr(args, "nbv_mapper", None)
    if mapper is not None:
        if mapper not in MAPPERS:
            raise CliError(f"--nbv-mapper must be one of {', '.join(MAPPERS)}, got {mapper!r}")
        for_nbv_agents("--nbv-mapper")
        options["mapper"] = mapper
    return options
