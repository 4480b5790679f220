"""What the evaluation driver hands its workers and gets back: the settings every episode of an
evaluation shares, one episode's task, its outcome, and a worker's warm state. Plain data and one
small class, so that the driver (:mod:`spatialscout_gym.eval.running.evaluate`) and the backends that run
the episodes (:mod:`spatialscout_gym.eval.running.backends`) share them without importing each other."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any, Callable

from spatialscout_gym.core.eval_records import AgentOptions, agent_option_keys
from spatialscout_gym.core.renderer_api import Renderer
from spatialscout_gym.core.spec import SceneSpec
from spatialscout_gym.eval.layout import FAILED_SUFFIX

__all__ = ["AgentOptions", "EvalSettings", "EpisodeTask", "Outcome", "Shipment", "WorkerState", "agent_option_keys",
           "evaluate_keys"]


@dataclass(frozen=True)
class EvalSettings:
    """What every episode of one evaluation shares (recorded in ``DIR/evaluate.json``).

    Attributes
    ----------
    agent : str
        Registry name (:func:`spatialscout_gym.baselines.registry.make_agent`).
    image_budget : int
        V, images per episode, the initial one included (docs/protocol.md section 5).
    tool_call_budget : int or None
        Tool-call budget per episode (None: unlimited).
    resolution : int
        Square render grid, pixels.
    agent_options : dict
        Keyword options of ``make_agent`` (e.g. a model agent's base URL, reasoning effort).
    runtime_options : dict
        Options passed to ``make_agent`` but neither written to disk nor compared on resume (the
        API key, the endpoint URL).
    """

    agent: str
    image_budget: int = 100
    tool_call_budget: int | None = 100
    resolution: int = 512
    agent_options: dict = field(default_factory=dict)
    runtime_options: dict = field(default_factory=dict, repr=False, compare=False)

    def to_dict(self) -> dict:
        unknown = sorted(set(self.agent_options) - agent_option_keys())
        if unknown:   # a new option is a field of AgentOptions first, or no reader could compare it
            raise ValueError(f"agent option(s) {unknown} are not fields of AgentOptions (eval/running/tasks.py)")
        d = asdict(self)
        del d["runtime_options"]
        if not d["agent_options"]:   # keeps evaluate.json of option-free agents as it was
            del d["agent_options"]
        return d


def evaluate_keys() -> frozenset[str]:
    """The keys of ``evaluate.json``: the fields :meth:`EvalSettings.to_dict` writes."""
    return frozenset(f.name for f in fields(EvalSettings)) - {"runtime_options"}


@dataclass(frozen=True)
class EpisodeTask:
    """One episode: scene argument, agent seed and its run directory (absolute path); ``attempt``
    is the attempt number when the driver archived the earlier attempts itself (a worker that
    ships its files back, :mod:`spatialscout_gym.eval.running.shipping`), None when the worker does."""

    scene: str
    seed: int
    run_dir: str
    attempt: int | None = None

    @property
    def key(self) -> str:
        """``<scene dir>/seed_<k>``, the run directory relative to ``DIR``."""
        p = Path(self.run_dir)
        return f"{p.parent.name}/{p.name}"

    @property
    def failed_file(self) -> Path:
        return Path(self.run_dir + FAILED_SUFFIX)


@dataclass
class Outcome:
    """What a worker reports for one task: ``result`` (the ``result.json`` dict) or ``error``;
    ``files``: the run's files when the worker ships them back (:class:`Shipment`)."""

    task: EpisodeTask
    ok: bool
    result: dict | None = None
    error: str | None = None
    wall_s: float = 0.0
    files: Shipment | None = None
    error_type: str | None = None
    """The failure's exception type (the run record's ``error_type``): what the driver dispatches on."""


@dataclass(frozen=True)
class Shipment:
    """The files one episode wrote on a worker, sent back to the driver to write and check.

    Attributes
    ----------
    run : dict
        ``{path inside the run directory (POSIX): bytes}``; empty when the runner wrote none.
    note : bytes or None
        The ``.failed.json`` note (the episode could not start), else None.
    digests : dict
        ``{path: SHA-256 hex}`` of ``run`` as read on the worker, checked after the driver wrote them.
    """

    run: dict[str, bytes]
    note: bytes | None
    digests: dict[str, str]


class WorkerState:
    """Per-worker state: one renderer kept warm across episodes (switched with ``set_scene``).

    Parameters
    ----------
    settings : EvalSettings
    limiter : context manager, optional
        Shared request limiter (``--max-concurrency``), attached to every agent built here.
    renderer_factory : callable, optional
        ``factory(spec, width, height) -> Renderer``; default
        :class:`~spatialscout_gym.render.sapien_renderer.SapienRenderer`.
    """

    def __init__(self, settings: EvalSettings, limiter: Any = None,
                 renderer_factory: Callable[..., Renderer] | None = None) -> None:
        self.settings = settings
        self.limiter = limiter
        self.renderer_factory = renderer_factory
        self.renderer: Renderer | None = None
        self.node: dict | None = None
        """The Ray node this worker runs on (``{"id", "address"}``), None outside Ray."""

    def renderer_for(self, spec: SceneSpec) -> Renderer:
        """The worker's renderer (built on first use, on ``spec``)."""
        if self.renderer is None:
            if self.renderer_factory is None:
                from spatialscout_gym.render.sapien_renderer import SapienRenderer
                factory: Callable[..., Renderer] = SapienRenderer
            else:
                factory = self.renderer_factory
            r = self.settings.resolution
            self.renderer = factory(spec, r, r)
        return self.renderer

    def close(self) -> None:
        if self.renderer is not None:
            self.renderer.close()
        self.renderer = None
