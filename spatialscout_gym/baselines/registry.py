"""Agents by name: ``make_agent("origin")``, ``make_agent("openai:gpt-x", ...)``.

Each agent declares its name and kind where it is defined, as the model services do with
``model_api`` (:mod:`spatialscout_gym.conversation.providers`)::

    @register_agent("origin", kind="reference")
    class OriginAgent: ...

    @register_agent("ppo:PATH", kind="nbv")          # a name with an argument: ppo:<path>
    class PPONBVAgent(NBVAgent): ...

The kind (:data:`AGENT_KINDS`) is required; the CLI reads it for its defaults (:func:`agent_kind`)
and the runner's ``agent.privileged`` follows from it (:data:`PRIVILEGED_KINDS`). A policy agent
says what it was trained with through a ``trained_settings(arg)`` class method
(:func:`agent_settings`). The package's own agents are registered when their modules
(:data:`AGENT_MODULES`) are imported, on the first lookup; the model services' agents
(``name:MODEL``, kind ``model``) come from the provider registry.
"""

from __future__ import annotations

import dataclasses
import importlib
from typing import TYPE_CHECKING, Any, Callable, TypeVar, overload

from spatialscout_gym.baselines.base import Agent
from spatialscout_gym.core.errors import SpatialScoutError

if TYPE_CHECKING:
    from spatialscout_gym.conversation.providers import ProviderEntry

__all__ = ["make_agent", "build_agent", "register_agent", "known_agents", "UnknownAgentError", "AgentEntry",
           "agent_entry", "is_nbv_agent", "agent_kind", "agent_settings", "agent_acting_settings", "AGENT_KINDS", "PRIVILEGED_KINDS",
           "AGENT_MODULES"]

AGENT_KINDS = ("reference", "privileged", "nbv", "model")
"""What an agent is: ``reference`` (inventory only, no image), ``privileged`` (reads the private half of
the scene: the oracles), ``nbv`` (next-best-view control: heuristics and PPO policies, run under the NBV
tables' protocol) or ``model`` (a vision-language model behind a provider)."""

PRIVILEGED_KINDS = ("privileged", "nbv")
"""The kinds that read the private half of a scene (the NBV agents map with privileged segmentation):
their agents have ``privileged = True`` and the runner hands them
:class:`~spatialscout_gym.baselines.base.PrivilegedAccess`."""

AGENT_MODULES = ("spatialscout_gym.baselines.inventory", "spatialscout_gym.baselines.oracle",
                 "spatialscout_gym.baselines.oracle_silhouette", "spatialscout_gym.baselines.nbv_agents",
                 "spatialscout_gym.baselines.rllib_agent", "spatialscout_gym.baselines.nbv_occupancy",
                 "spatialscout_gym.baselines.cleanrl_agent")
"""The modules that define the package's agents (each registers its own); imported on the first lookup."""

Factory = Callable[..., Agent]
F = TypeVar("F", bound=Callable[..., Any])


@dataclasses.dataclass(frozen=True)
class AgentEntry:
    """One registered agent: ``name`` (``origin``), or a prefix (``ppo``) whose agents are
    ``ppo:<argument>`` with ``argument`` saying what the argument is (``PATH``); its factory (a
    class or function, or ``"module:attr"``) and kind."""

    name: str
    factory: Factory | str
    kind: str
    argument: str | None = None

    @property
    def privileged(self) -> bool:
        """Whether agents of this entry read the private half of a scene (:data:`PRIVILEGED_KINDS`)."""
        return self.kind in PRIVILEGED_KINDS


_AGENTS: dict[str, AgentEntry] = {}
"""Exact names -> entry."""
_PREFIXES: dict[str, AgentEntry] = {}
"""Prefixes (``ppo`` of ``ppo:PATH``) -> entry."""


class UnknownAgentError(SpatialScoutError, ValueError):
    """The name matches no registered agent; the message lists the known ones."""


def _check_kind(kind: str) -> str:
    if kind not in AGENT_KINDS:
        raise ValueError(f"agent kind must be one of {AGENT_KINDS}, got {kind!r}")
    return kind


def _factory_path(f: Factory | str) -> str:
    return f if isinstance(f, str) else f"{f.__module__}:{f.__qualname__}"


def _same_factory(a: Factory | str, b: Factory | str) -> bool:
    """One factory seen twice (its module imported again), not two agents claiming one name."""
    return _factory_path(a) == _factory_path(b)


def _declare(factory: Factory | str, entry: AgentEntry) -> None:
    """Give a registered class the name and ``privileged`` its registration says; refuse a class
    whose own (or inherited) ``privileged`` contradicts its kind."""
    if not isinstance(factory, type):
        return   # a function or "module:attr": checked on the agent it builds (make_agent)
    own = getattr(factory, "privileged", None)
    if own is not None and bool(own) != entry.privileged:
        raise ValueError(f"{factory.__name__}.privileged is {own} but kind {entry.kind!r} "
                         f"{'reads' if entry.privileged else 'does not read'} the private half of a scene")
    setattr(factory, "privileged", entry.privileged)
    if entry.argument is None:
        setattr(factory, "name", entry.name)


@overload
def register_agent(name: str, factory: Factory | str, *, kind: str, replace: bool = False) -> None: ...
@overload
def register_agent(name: str, factory: None = None, *, kind: str, replace: bool = False) -> Callable[[F], F]: ...
def register_agent(name: str, factory: Factory | str | None = None, *, kind: str,
                   replace: bool = False) -> Callable[[F], F] | None:
    """Register an agent ``name`` of ``kind`` (:data:`AGENT_KINDS`; required).

    ``name`` is exact (``"origin"``: ``factory(**options)``) or takes an argument
    (``"ppo:PATH"``: agents ``ppo:<arg>`` are ``factory(arg, **options)``). Without ``factory`` it
    is a decorator of the agent's class (or factory function), which it returns unchanged but for
    ``privileged`` (from the kind) and, for an exact name, ``name``. ``factory`` may be a
    ``"module:attr"`` path, imported when an agent is built.

    Raises
    ------
    ValueError
        An unknown kind, a name already registered (``replace=True`` overrides), or a class whose
        ``privileged`` contradicts the kind.
    """
    prefix, sep, argument = name.partition(":")
    if sep and not (prefix and argument):
        raise ValueError(f"agent name {name!r}: expected 'name' or 'prefix:ARGUMENT' (e.g. 'ppo:PATH')")
    entry = AgentEntry(prefix, factory, _check_kind(kind), argument or None) if factory is not None else None

    def add(f: Factory | str) -> None:
        e = entry if entry is not None else AgentEntry(prefix, f, kind, argument or None)
        table = _PREFIXES if sep else _AGENTS
        old = table.get(prefix)
        if old is not None and not replace and not _same_factory(old.factory, f):
            raise ValueError(f"agent {name!r} is already registered; pass replace=True to override it")
        _declare(f, e)
        table[prefix] = e

    def register(f: F) -> F:
        add(f)
        return f

    if factory is not None:
        add(factory)
        return None
    _check_kind(kind)
    return register


_loaded = False


def _load_agents() -> None:
    """Import :data:`AGENT_MODULES` once, so that every built-in agent is registered."""
    global _loaded
    if not _loaded:
        _loaded = True
        for module in AGENT_MODULES:
            importlib.import_module(module)


def _model_services() -> dict[str, ProviderEntry]:
    """The registered model services (their agents are ``name:MODEL``, of kind ``model``): read at
    each call, so a service registered later with ``model_api`` is an agent prefix at once."""
    from spatialscout_gym.conversation.providers import PROVIDERS
    return PROVIDERS


def known_agents() -> list[str]:
    """Registered names, then prefixes as ``"prefix:ARG"`` (the model services' among them)."""
    _load_agents()
    return sorted(_AGENTS) + sorted(f"{p}:ARG" for p in {*_PREFIXES, *_model_services()})


def agent_entry(name: str) -> AgentEntry | None:
    """The registration of agent ``name`` (``"prefix:anything"``: its prefix's; a model service's
    as an entry of kind ``model`` and argument ``MODEL``); None for a name no one registered."""
    _load_agents()
    prefix, sep, _ = name.partition(":")
    if not sep:
        return _AGENTS.get(name)
    if prefix in _PREFIXES:
        return _PREFIXES[prefix]
    if prefix in _model_services():
        return AgentEntry(prefix, "spatialscout_gym.baselines.vlm:model_agent", "model", "MODEL")
    return None


def agent_kind(name: str) -> str | None:
    """The declared kind (:data:`AGENT_KINDS`) of the agent ``name`` (``"prefix:ARG"`` names: their
    prefix's); None for a name the registry does not know."""
    entry = agent_entry(name)
    return entry.kind if entry is not None else None


def is_nbv_agent(name: str) -> bool:
    """Whether ``name`` is a next-best-view agent, which the CLI runs under the NBV tables' protocol."""
    return agent_kind(name) == "nbv"


def agent_settings(name: str) -> dict[str, int]:
    """The episode settings (``image_budget``, ``resolution``) the agent ``name`` was trained with,
    from its factory's ``trained_settings(arg)`` (the policy agents: ``ppo:PATH``, ``rllib:PATH``);
    {} for any other agent, and for a policy that is not there (reported when it is built)."""
    entry = agent_entry(name)
    if entry is None or entry.argument is None:
        return {}
    settings = getattr(_resolve(entry.factory), "trained_settings", None)
    return dict(settings(name.partition(":")[2])) if settings is not None else {}


def agent_acting_settings(name: str) -> dict[str, object]:
    """How the policy agent ``name`` acts beyond its weights, as its episodes record it in their
    ``nbv`` block (``{"scan_guard_m": ...}``), from its factory's ``acting_settings(arg)``; {} for
    any other agent and for a policy that is not there. A resumed evaluation redoes an episode
    recorded otherwise (the policy's settings changed since)."""
    entry = agent_entry(name)
    if entry is None or entry.argument is None:
        return {}
    settings = getattr(_resolve(entry.factory), "acting_settings", None)
    return dict(settings(name.partition(":")[2])) if settings is not None else {}


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
    entry = agent_entry(name)
    if entry is None:
        raise UnknownAgentError(f"unknown agent {name!r}; known agents: {', '.join(known_agents())}")
    if entry.argument is None:
        agent = _resolve(entry.factory)(**options)
    else:
        arg = name.partition(":")[2]
        if not arg:
            raise UnknownAgentError(f"agent {name!r} needs an argument after {entry.name + ':'!r}, e.g. "
                                    f"{entry.name}:{entry.argument}")
        if entry.kind == "model" and entry.name not in _PREFIXES:
            agent = _resolve(entry.factory)(entry.name, arg, **options)
        else:
            agent = _resolve(entry.factory)(arg, **options)
    if bool(agent.privileged) != entry.privileged:   # a factory function's agent, or a "module:attr" class
        raise ValueError(f"agent {name!r} is registered as {entry.kind!r} but its privileged is {agent.privileged}")
    return agent


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
