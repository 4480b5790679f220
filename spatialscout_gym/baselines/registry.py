"""Agents by name: ``make_agent("origin")``, ``make_agent("openai:gpt-x", ...)``.

Other modules extend the registry with :func:`register_agent` (exact names) and
:func:`register_agent_prefix` (``"prefix:ARG"`` names, e.g. ``openai:MODEL``); factories are
imported lazily by dotted path so that listing agents imports nothing heavy.
"""

from __future__ import annotations

import importlib
from typing import Any, Callable

from spatialscout_gym.baselines.base import Agent
from spatialscout_gym.core.errors import SpatialScoutError

__all__ = ["make_agent", "build_agent", "register_agent", "register_agent_prefix", "known_agents", "UnknownAgentError",
           "is_nbv_agent"]

Factory = Callable[..., Agent]
_AGENTS: dict[str, Factory | str] = {
    "origin": "spatialscout_gym.baselines.inventory:OriginAgent",
    "uniform-ball": "spatialscout_gym.baselines.inventory:UniformBallAgent",
    "oracle-explorer": "spatialscout_gym.baselines.oracle:OracleExplorerAgent",
    "oracle-click": "spatialscout_gym.baselines.oracle:OracleClickAgent",
    "oracle-silhouette": "spatialscout_gym.baselines.oracle_silhouette:OracleSilhouetteAgent",
    "random-nbv": "spatialscout_gym.baselines.nbv_agents:RandomNBVAgent",
    "frontier-nbv": "spatialscout_gym.baselines.nbv_agents:FrontierNBVAgent",
}
_PREFIXES: dict[str, Factory | str] = {
    "ppo": "spatialscout_gym.baselines.nbv_agents:PPONBVAgent",
    "rllib": "spatialscout_gym.baselines.nbv_agents:rllib_agent",
}


class UnknownAgentError(SpatialScoutError, ValueError):
    """The name matches no registered agent; the message lists the known ones."""


def register_agent(name: str, factory: Factory | str, *, replace: bool = False) -> None:
    """Register ``factory(**options) -> Agent`` (or a ``"module:attr"`` path) under ``name``."""
    if name in _AGENTS and not replace:
        raise ValueError(f"agent {name!r} is already registered; pass replace=True to override it")
    _AGENTS[name] = factory


def register_agent_prefix(prefix: str, factory: Factory | str, *, replace: bool = False) -> None:
    """Register ``factory(arg, **options) -> Agent`` for names ``"<prefix>:<arg>"``."""
    if prefix in _PREFIXES and not replace:
        raise ValueError(f"agent prefix {prefix!r} is already registered; pass replace=True to override it")
    _PREFIXES[prefix] = factory


def known_agents() -> list[str]:
    """Registered names, then prefixes as ``"prefix:ARG"``."""
    return sorted(_AGENTS) + sorted(f"{p}:ARG" for p in _PREFIXES)


NBV_MODULE = "spatialscout_gym.baselines.nbv_agents"
"""Module of the next-best-view agents (``random-nbv``, ``frontier-nbv``, ``ppo:PATH``, ``rllib:PATH``)."""


def is_nbv_agent(name: str) -> bool:
    """Whether ``name`` is a next-best-view agent of :data:`NBV_MODULE` (read from the registry's
    factory paths: nothing is imported), which the CLI runs under the NBV tables' protocol."""
    prefix, sep, _ = name.partition(":")
    factory = _AGENTS.get(name) if not sep else _PREFIXES.get(prefix)
    return isinstance(factory, str) and factory.partition(":")[0] == NBV_MODULE


def _resolve(factory: Factory | str) -> Factory:
    if isinstance(factory, str):
        module, _, attr = factory.partition(":")
        return getattr(importlib.import_module(module), attr)
    return factory


def make_agent(name: str, **options: Any) -> Agent:
    """Build the agent registered as ``name``.

    Raises
    ------
    UnknownAgentError
        ``name`` is neither a registered name nor ``prefix:ARG`` of a registered prefix.
    """
    if name in _AGENTS:
        return _resolve(_AGENTS[name])(**options)
    prefix, sep, arg = name.partition(":")
    if sep and prefix in _PREFIXES:
        if not arg:
            raise UnknownAgentError(f"agent {name!r} needs an argument after {prefix + ':'!r}, e.g. {prefix}:MODEL")
        return _resolve(_PREFIXES[prefix])(arg, **options)
    raise UnknownAgentError(f"unknown agent {name!r}; known agents: {', '.join(known_agents())}")


def build_agent(name: str, **options: Any) -> Agent:
    """:func:`make_agent` for a user-facing edge: any of the package's own errors (unknown name,
    missing key, missing policy file, missing extra, bad option) comes back as a
    :class:`~spatialscout_gym.core.errors.ConfigError` whose one-line message names the agent."""
    from spatialscout_gym.core.errors import ConfigError, SpatialScoutError, message_of
    try:
        return make_agent(name, **options)
    except UnknownAgentError:
        raise
    except SpatialScoutError as exc:
        raise ConfigError(f"cannot build agent {name!r}: {message_of(exc)}") from exc

# VLM agents: ``openai:MODEL`` and ``anthropic:MODEL``; options from ``spatialscout run``.
register_agent_prefix("openai", "spatialscout_gym.baselines.vlm:openai_agent")
register_agent_prefix("openai-responses", "spatialscout_gym.baselines.vlm:openai_responses_agent")
register_agent_prefix("anthropic", "spatialscout_gym.baselines.vlm:anthropic_agent")
