"""Options the commands share: episode checks, the ``--agent`` help, loading a SCENE argument."""

from __future__ import annotations

import argparse

from spatialscout_gym.cli.errors import CliError


def check_episode_options(args: argparse.Namespace) -> None:
    """Refuse an image budget or call budget below 1 or a render grid below 8 pixels."""
    if args.image_budget < 1:
        raise CliError(f"--image-budget must be >= 1 (the initial image counts), got {args.image_budget}")
    if args.call_budget < 1:
        raise CliError(f"--call-budget must be >= 1, got {args.call_budget}")
    if args.resolution < 8:
        raise CliError(f"--resolution must be >= 8 pixels, got {args.resolution}")


def agent_help() -> str:
    """``--agent`` help listing the registered agents (the registry imports nothing heavy)."""
    from spatialscout_gym.baselines.registry import known_agents
    names = [n.replace(":ARG", ":MODEL" if n.split(":")[0] in ("openai", "openai-responses", "anthropic") else ":PATH")
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
