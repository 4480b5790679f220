"""The events of an episode's ``trace.jsonl`` as types (docs/protocol.md section 7).

The trace is what a run record derives from (:mod:`spatialscout_gym.core.records`), so it is read
the way the records are: :func:`parse_trace` turns the parsed JSON lines into one typed event each,
strictly. An unknown event kind, an unknown or missing field, or a value of the wrong type is one
:class:`~spatialscout_gym.core.record_build.RecordError` naming the line and the field, and the
readers (the derivation, ``verify``'s checks, the trajectory pages) use attributes, not dict keys.

Kinds and the writers that emit them:

==================== ===========================================================================
``start``            the episode (scene, budgets, initial pose in the world frame, intrinsics)
``tool_call``        one tool call, its arguments and result (times when the episode has a clock)
``capture``          one image (frame id, poses in the world and task frames)
``map``              the accepted map after a successful ``submit_positions`` (task frame, metres)
``end``              why the episode ended
``model_request``    the messages sent for one model call (a model run's wrapper)
``model_response``   one reply: text, tool calls, usage, its HTTP record
``tool_call_refused`` a tool call the wrapper refused before the env saw it
``nbv_step``         one step of an NBV agent: its action, whether the move was blocked
``failure``          the error a failed episode ends with
==================== ===========================================================================
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence, Union

from spatialscout_gym.core.record_build import RecordError, build_record
from spatialscout_gym.core.run_files import TRACE_FILE

__all__ = ["TRACE_SCHEMA", "StartEvent", "ToolCallEvent", "CaptureEvent", "MapEvent", "EndEvent",
           "ModelRequestEvent", "ModelResponseEvent", "ToolCallRefusedEvent", "NBVStepEvent", "FailureEvent",
           "TraceEvent", "Trace", "EVENT_TYPES", "parse_event", "parse_trace"]

TRACE_SCHEMA = 1
"""The version of the event types below (named in a refusal)."""


@dataclass(frozen=True)
class StartEvent:
    """The episode's first event: scene id, budgets (images V, tool calls; None: unbounded), the
    initial camera pose (world frame), the intrinsics (pixels), the scene's radius (metres) and
    the agent seed (bound when the run is written)."""

    scene_id: str
    image_budget: int
    tool_call_budget: int | None
    initial_pose_world: dict[str, Any]
    intrinsics: dict[str, Any]
    radius_m: float
    seed: int | None = None

    @property
    def resolution(self) -> int:
        """The rendered width, pixels (0 when the intrinsics do not say)."""
        w = self.intrinsics.get("width")
        return w if isinstance(w, int) and not isinstance(w, bool) else 0


@dataclass(frozen=True)
class ToolCallEvent:
    """One tool call: ``index`` (0-based), the tool's name, its arguments as logged (an object, or
    a note/repr string when they could not be kept) and its result (``ok``, ``result``,
    ``error``); ``started_unix_s`` and ``execution_s`` (seconds) when the episode has a clock."""

    index: int
    tool: str
    args: Any
    result: dict[str, Any]
    started_unix_s: float | None = None
    execution_s: float | None = None

    @property
    def ok(self) -> bool:
        return self.result.get("ok") is True

    @property
    def arguments(self) -> dict[str, Any]:
        """The arguments as an object (empty when they were not kept as one)."""
        return self.args if isinstance(self.args, dict) else {}


@dataclass(frozen=True)
class CaptureEvent:
    """One image: ``frame_id``, the camera pose in the world and task frames, the intrinsics,
    images used after it, and the tool call that took it (None: the initial image)."""

    frame_id: int
    tool_call_index: int | None
    pose_world: dict[str, Any]
    pose_task: Any
    intrinsics: dict[str, Any]
    images_used: int


@dataclass(frozen=True)
class MapEvent:
    """The accepted map (id -> task-frame [x, y, z], metres, rounded) after a successful
    ``submit_positions`` call; ``model_call_index``: the model call whose tool call it was (a
    model run's)."""

    tool_call_index: int
    images_used: int
    accepted_map: dict[str, Any]
    model_call_index: int | None = None


@dataclass(frozen=True)
class EndEvent:
    """The episode ended: its reason and the counts at the end (``model_calls``: a model run's)."""

    reason: str
    tool_calls: int
    images_used: int
    model_calls: int | None = None


@dataclass(frozen=True)
class ModelRequestEvent:
    """One model call's request: the messages new since the last request (images by reference)
    and the digest of the whole history; ``time_unix_s`` when it was handed to the provider."""

    model_call_index: int
    calls_left: int | None
    message_count: int
    new_messages: list[Any]
    history_sha256: str
    time_unix_s: float | None = None


@dataclass(frozen=True)
class ModelResponseEvent:
    """One reply: text, tool calls, usage (tokens, cached and cache-write inputs included), the
    provider's attempt count, the stop reason, the per-call HTTP record (``http``: attempts,
    failures, waits, request-cache answers), whether the request cache answered it
    (``cached``), and whether it was cut off (``truncated``)."""

    model_call_index: int
    text: str | None
    tool_calls: list[Any]
    usage: dict[str, Any]
    attempts: int
    stop_reason: str | None = None
    malformed: list[Any] | None = None
    http: dict[str, Any] | None = None
    cached: bool | None = None
    truncated: bool | None = None
    time_unix_s: float | None = None


@dataclass(frozen=True)
class ToolCallRefusedEvent:
    """A tool call the wrapper refused (the env never saw it): why, the call and the error."""

    model_call_index: int
    refusal: str
    call: Any
    error: str
    time_unix_s: float | None = None


@dataclass(frozen=True)
class NBVStepEvent:
    """One NBV agent step: the action it chose, whether the move was blocked (and by what), whether
    it captured, the camera position after it (world frame, metres), the tool calls it made
    (``[first, stop)``) and, when traced, what it had explored, the scene's figures (first step)
    and the dynamics it ran under."""

    step: int
    action: Any
    blocked: bool
    captured: bool
    position_world: list[float]
    tool_calls: list[int]
    block_cause: str | None = None
    explored: dict[str, Any] | None = None
    scene: dict[str, Any] | None = None
    dynamics: dict[str, Any] | None = None


@dataclass(frozen=True)
class FailureEvent:
    """The error a failed episode ends with: its type, its redacted message, and for a model call
    that failed, that call's HTTP record."""

    error_type: str
    error: str
    http: dict[str, Any] | None = None


TraceEvent = Union[StartEvent, ToolCallEvent, CaptureEvent, MapEvent, EndEvent, ModelRequestEvent,
                   ModelResponseEvent, ToolCallRefusedEvent, NBVStepEvent, FailureEvent]

EVENT_TYPES: dict[str, type] = {
    "start": StartEvent, "tool_call": ToolCallEvent, "capture": CaptureEvent, "map": MapEvent,
    "end": EndEvent, "model_request": ModelRequestEvent, "model_response": ModelResponseEvent,
    "tool_call_refused": ToolCallRefusedEvent, "nbv_step": NBVStepEvent, "failure": FailureEvent}
"""Each event kind and its type."""


def parse_event(d: Any, line: int, file: str = TRACE_FILE) -> TraceEvent:
    """Line ``line`` of a trace (a parsed JSON object) as its typed event, strictly."""
    where = f"{file}, event {line}"
    if not isinstance(d, dict):
        raise RecordError(f"{where}: expected a JSON object, got {type(d).__name__}")
    kind = d.get("event")
    cls = EVENT_TYPES.get(kind) if isinstance(kind, str) else None
    if cls is None:
        raise RecordError(f"{where}: field 'event' is {kind!r}, not an event kind of this package "
                          f"({', '.join(EVENT_TYPES)})")
    body = {k: v for k, v in d.items() if k != "event"}
    return build_record(cls, body, f"{where} ({kind})", TRACE_SCHEMA)


@dataclass(frozen=True)
class Trace:
    """An episode's events, typed and in order, with the views the readers take."""

    events: tuple[TraceEvent, ...] = field(default_factory=tuple)

    def of(self, cls: type) -> list[Any]:
        """The events of type ``cls``, in order."""
        return [e for e in self.events if isinstance(e, cls)]

    @property
    def start(self) -> StartEvent | None:
        return next((e for e in self.events if isinstance(e, StartEvent)), None)

    @property
    def end(self) -> EndEvent | None:
        return next((e for e in self.events if isinstance(e, EndEvent)), None)

    @property
    def failure(self) -> FailureEvent | None:
        return next((e for e in self.events if isinstance(e, FailureEvent)), None)

    @property
    def tool_calls(self) -> list[ToolCallEvent]:
        return self.of(ToolCallEvent)

    @property
    def captures(self) -> list[CaptureEvent]:
        return self.of(CaptureEvent)

    @property
    def model_requests(self) -> list[ModelRequestEvent]:
        return self.of(ModelRequestEvent)

    @property
    def model_responses(self) -> list[ModelResponseEvent]:
        return self.of(ModelResponseEvent)

    @property
    def nbv_steps(self) -> list[NBVStepEvent]:
        return self.of(NBVStepEvent)

    def accepted_map(self, stop: int | None = None) -> dict[str, list[float]]:
        """The map the episode accepted by event ``stop`` (None: the whole trace), rebuilt exactly:
        every position of every accepted ``submit_positions`` call, in order (task frame, metres;
        the ``map`` events are rounded, the call's arguments are what the agent submitted)."""
        out: dict[str, list[float]] = {}
        for e in self.events[:stop]:
            if not isinstance(e, ToolCallEvent) or e.tool != "submit_positions" or not e.ok:
                continue
            given = e.arguments.get("positions") or {}
            accepted = e.result.get("result")
            for k in (accepted.get("accepted") if isinstance(accepted, dict) else None) or []:
                out[str(k)] = [float(x) for x in given[k]]
        return out

    @property
    def is_model_run(self) -> bool:
        """Whether the trace holds a model request or reply (the run's kind is derived from this,
        never from a block a file carries)."""
        return any(isinstance(e, (ModelRequestEvent, ModelResponseEvent)) for e in self.events)


def parse_trace(events: Sequence[Mapping[str, Any]] | Trace, file: str = TRACE_FILE) -> Trace:
    """The typed :class:`Trace` of ``events`` (the parsed JSON lines, in order); a trace that is
    already typed is returned as it is."""
    if isinstance(events, Trace):
        return events
    return Trace(tuple(parse_event(e, i, file) for i, e in enumerate(events)))
