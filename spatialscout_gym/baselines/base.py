"""The agent interface every baseline implements (docs/architecture.md "baselines")."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

import numpy as np

from spatialscout_gym.core.frames import CameraPose
from spatialscout_gym.core.renderer_api import FrameSource, PrivilegedFrame
from spatialscout_gym.core.spec import SceneObject, SceneSpec
from spatialscout_gym.episode.episode import Episode

__all__ = ["Agent", "EnvAgent", "RequestingAgent", "PrivilegedAccess"]


@dataclass
class PrivilegedAccess:
    """Evaluator-side data for oracle baselines only; ordinary agents get ``None``.

    Attributes
    ----------
    spec : SceneSpec
        The full scene (its private half holds every object's geometry and role).
    renderer : FrameSource
        The episode's renderer, for :meth:`capture_privileged`.
    """

    spec: SceneSpec
    renderer: FrameSource

    @property
    def objects(self) -> list[SceneObject]:
        """The spec's object table; ``PrivilegedFrame.segmentation`` indexes into it."""
        return self.spec.private.objects

    def capture_privileged(self, pose: CameraPose) -> PrivilegedFrame:
        """Depth, segmentation and surface positions at a world ``pose`` (costs no image budget)."""
        return self.renderer.capture_privileged(pose)


@runtime_checkable
class Agent(Protocol):
    """Drives one :class:`Episode` through its tools until it ends or the agent stops.

    Attributes
    ----------
    name : str
        The registry name (``make_agent(name)`` rebuilds it).
    privileged : bool
        True when the agent needs :class:`PrivilegedAccess` (oracles); the runner then passes it.
    """

    name: str
    privileged: bool

    def run(self, episode: Episode, *, rng: np.random.Generator,
            privileged: PrivilegedAccess | None) -> None:
        """Call tools on ``episode``; all randomness from ``rng``. The runner ends the episode
        (``"agent_stopped"``) if the agent returns without calling ``finish_mapping``."""
        ...


@runtime_checkable
class EnvAgent(Protocol):
    """Drives a SpatialScout Gymnasium env (not a bare :class:`Episode`): model agents, through
    :class:`~spatialscout_gym.wrappers.tool_call.ToolCallWrapper`, so a user's Gymnasium wrappers
    see their tool calls. The runner builds the registered env, then writes the run from
    ``env.unwrapped.episode`` with :meth:`trace`.

    Attributes
    ----------
    name : str
    counts_model_calls : bool
        True when the agent counts model calls itself (B, docs/protocol.md section 5): the runner
        then gives the env no tool-call budget.
    end_reason : str or None
        Why the agent's episode ended (``"no_tool_call"``, ``"model_call_budget"``, the env's reason),
        None while it runs.
    """

    name: str
    counts_model_calls: bool

    @property
    def end_reason(self) -> str | None: ...

    def run_env(self, env: Any, *, seed: int) -> None:
        """Reset ``env`` (a SpatialScout env, possibly wrapped) and drive it until the episode ends."""
        ...

    def trace(self) -> list[dict]:
        """The episode's trace events with the agent's own events (model requests, responses) in place."""
        ...

    def extra_result(self) -> dict:
        """Agent figures for ``result.json`` (model calls, tokens, cost)."""
        ...


@runtime_checkable
class RequestingAgent(Protocol):
    """An agent that sends model requests; ``request_limiter`` (a context manager, e.g. the
    evaluation's ``--max-concurrency`` semaphore) is entered around each one."""

    request_limiter: Any
