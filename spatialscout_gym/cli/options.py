"""Options the commands share: episode checks, the ``--agent`` help, loading a SCENE argument."""

from __future__ import annotations

import argparse

from spatialscout_gym.cli.errors import CliError


def check_episode_options(args: argparse.Namespace) -> None:
    """Refuse an image budget, call budget or render grid outside the bounds of
    :mod:`spatialscout_gym.core.limits` (docs/protocol.md sections 3 and 5)."""
    from spatialscout_gym.core.limits import image_budget_problem, resolution_problem
    problem = (image_budget_problem(args.image_budget, "--image-budget")
               or resolution_problem(args.resolution, "--resolution"))
    if problem:
        raise CliError(problem)
    if args.call_budget < 1:
        raise CliError(f"--call-budget must be >= 1, got {args.call_budget}")


def agent_help() -> str:
    """``--agent`` help listing the registered agents (the registry imports nothing heavy)."""
    from spatialscout_gym.baselines.registry import known_agents
    names = [n.replace(":ARG", ":MODEL" if n.split(":")[0] in ("openai", "anthropic") else ":PATH")
             for n in known_agents()]
    return "one of: " + ", ".join(names)


def scene_from_arg(name: str):
    """The :class:`~spatialscout_gym.core.spec.SceneSpec` a SCENE argument names (catalog id,
    ``procedural:<seed>``, spec file or directory, imported id), or a one-line :class:`CliError`."""
    from spatialscout_gym.scenes.catalog import CatalogMismatchError, UnknownSceneError, scene_by_name
    try:
        return scene_by_name(name)
    except UnknownSceneError as exc:
        raise CliError(str(exc)) from None
    except (KeyError, ValueError, FileNotFoundError, CatalogMismatchError) as exc:  # bad seed, broken spec, drifted catalog
        raise CliError(f"cannot load scene {name!r}: {exc}") from None
