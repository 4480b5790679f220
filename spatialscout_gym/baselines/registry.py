"""Agents by name: ``make_agent("origin")``, ``make_agent("openai:gpt-x", ...)``.

Other modules extend the registry with :func:`register_agent` (exact names) and
:func:`register_agent_prefix` (``"prefix:ARG"`` names, e.g. ``openai:MODEL``); factories are
imported lazily by dotted path so that listing agents imports nothing heavy. Each agent declares its
kind (:data:`AGENT_KINDS`), which the CLI reads for its defaults (:func:`agent_kind`).
"""

from __future__ import annotations

import importlib
from typing import Any, Callable

from spatialscout_gym.baselines.base import Agent
from spatialscout_gym.core.errors import SpatialScoutError

__all__ = ["make_agent", "build_agent", "register_agent", "register_agent_prefix", "known_agents", "UnknownAgentError",
           "is_nbv_agent", "agent_kind", "AGENT_KINDS"]

AGENT_KINDS = ("reference", "privileged", "nbv", "model")
"""What an agent is: ``reference`` (inventory only, no image), ``privileged`` (reads the private half of
the scene: the oracles), ``nbv`` (next-best-view control: heuristics and PPO policies, run under the NBV
tables' protocol) or ``model`` (a vision-language model behind a provider)."""

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
    "rllib": "spatialscout_gym.baselines.rllib_agent:rllib_agent",
}
_KINDS: dict[str, str] = {"origin": "reference", "uniform-ball": "reference", "oracle-explorer": "privileged",
                          "oracle-click": "privileged", "oracle-silhouette": "privileged", "random-nbv": "nbv",
                          "frontier-nbv": "nbv", "ppo:": "nbv", "rllib:": "nbv"}
"""Name (``"prefix:"`` for a prefix) -> its kind in :data:`AGENT_KINDS`."""


class UnknownAgentError(SpatialScoutError, ValueError):
    """The name matches no registered agent; the message lists the known ones."""


def _check_kind(kind: str) -> str:
    if kind not in AGENT_KINDS:
        raise ValueError(f"agent kind must be one of {AGENT_KINDS}, got {kind!r}")
    return kind


def register_agent(name: str, factory: Factory | str, *, kind: str = "reference", replace: bool = False) -> None:
    """Register ``factory(**options) -> Agent`` (or a ``"module:attr"`` path) under ``name``, of
    ``kind`` (:data:`AGENT_KINDS`)."""
    if name in _AGENTS and not replace:
        raise ValueError(f"agent {name!r} is already registered; pass replace=True to override it")
    _KINDS[name] = _check_kind(kind)
    _AGENTS[name] = factory


def register_agent_prefix(prefix: str, factory: Factory | str, *, kind: str = "model", replace: bool = False) -> None:
    """Register ``factory(arg, **options) -> Agent`` for names ``"<prefix>:<arg>"``, of ``kind``
    (:data:`AGENT_KINDS`)."""
    if prefix in _PREFIXES and not replace:
        raise ValueError(f"agent prefix {prefix!r} is already registered; pass replace=True to override it")
    _KINDS[prefix + ":"] = _check_kind(kind)
    _PREFIXES[prefix] = factory


def _model_services() -> dict:
    """The registered model services (their agents are ``name:MODEL``, of kind ``model``): read at
    each call, so a service registered later with ``model_api`` is an agent prefix at once."""
    from spatialscout_gym.conversation.providers import PROVIDERS
    return PROVIDERS


def known_agents() -> list[str]:
    """Registered names, then prefixes as ``"prefix:ARG"`` (the model services' among them)."""
    return sorted(_AGENTS) + sorted(f"{p}:ARG" for p in {*_PREFIXES, *_model_services()})


def agent_kind(name: str) -> str | None:
    """The declared kind (:data:`AGENT_KINDS`) of the agent ``name`` (``"prefix:ARG"`` names: their
    prefix's); None for a name the registry does not know. No agent module is imported."""
    prefix, sep, _ = name.partition(":")
    if not sep:
        return _KINDS.get(name)
    return _KINDS.get(prefix + ":") or ("model" if prefix in _model_services() else None)


def is_nbv_agent(name: str) -> bool:
    """Whether ``name`` is a next-best-view agent, which the CLI runs under the NBV tables' protocol."""
    return agent_kind(name) == "nbv"


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
    if sep and (prefix in _PREFIXES or prefix in _model_services()):
        if not arg:
            raise UnknownAgentError(f"agent {name!r} needs an argument after {prefix + ':'!r}, e.g. {prefix}:MODEL")
        if prefix in _PREFIXES:
            return _resolve(_PREFIXES[prefix])(arg, **options)
        return _resolve("spatialscout_gym.baselines.vlm:model_agent")(prefix, arg, **options)
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
