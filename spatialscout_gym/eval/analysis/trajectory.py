"""One episode's trace read as a trajectory: tool uses, triangulations and submissions, each with
the call it belongs to (docs/protocol.md section 7). The trace analyses
(:mod:`~spatialscout_gym.eval.analysis.behaviour`, :mod:`~spatialscout_gym.eval.analysis.grounding`,
:mod:`~spatialscout_gym.eval.analysis.failures`) read traces only through :func:`parse_trajectory`.

**Calls.** A trace written through the VLM wrapper has ``model_request`` events; every tool use
that follows request ``k`` (up to the next request) belongs to model call ``k`` (0-based), and the
budget is the model-call budget B. A trace without model requests (reference agents) counts tool
calls: tool use ``j`` is call ``j`` and the budget is the tool-call budget (None: unlimited).

**Order.** ``tool_call`` events carry the episode's 0-based tool-call index; tools in one model
response run in order, so "earlier" for two tool uses always means "smaller tool-call index".
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

from spatialscout_gym.core.records import RunRecord
from spatialscout_gym.core.trace_events import (CaptureEvent, EndEvent, MapEvent, ModelRequestEvent, ToolCallEvent,
                                                ToolCallRefusedEvent, Trace, parse_trace)
from spatialscout_gym.episode.tools import TOOL_NAMES

__all__ = ["ToolUse", "Triangulation", "Submission", "Trajectory", "parse_trajectory", "RecordedBudgets", "load_trajectory",
           "OTHER_TOOL"]

OTHER_TOOL = "other"
"""Tool name under which requests for an unknown tool are counted."""


@dataclasses.dataclass(frozen=True)
class ToolUse:
    """One tool the agent asked for.

    Attributes
    ----------
    call : int
        The call it belongs to (model call, or tool call for agents without model calls), 0-based.
    tool : str
        Tool name, or :data:`OTHER_TOOL` for an unknown name.
    ok : bool
        The tool ran and succeeded (refusals by the episode or the wrapper are False).
    index : int or None
        Episode tool-call index; None when the wrapper refused the call before the episode saw it.
    """

    call: int
    tool: str
    ok: bool
    index: int | None


@dataclasses.dataclass(frozen=True)
class Triangulation:
    """A ``triangulate_observations`` call.

    ``point_task`` (metres, task frame), ``residual_m`` and ``warnings`` are set when ``ok``.
    """

    index: int
    call: int
    ok: bool
    point_task: np.ndarray | None = None
    residual_m: float | None = None
    warnings: tuple[str, ...] = ()


@dataclasses.dataclass(frozen=True)
class Submission:
    """A successful ``submit_positions`` call.

    Attributes
    ----------
    index, call : int
    accepted : dict of str to ndarray, shape (3,)
        The entries this call accepted (task frame, metres).
    new_ids : tuple of str
        Accepted ids that were not in the map before this call.
    revised_ids : tuple of str
        Accepted ids already in the map whose position changed (by more than 1 mm).
    map_size : int
        Ids in the accepted map after the call.
    """

    index: int
    call: int
    accepted: dict[str, np.ndarray]
    new_ids: tuple[str, ...]
    revised_ids: tuple[str, ...]
    map_size: int


@dataclasses.dataclass
class Trajectory:
    """What the analyses read from one trace.

    Attributes
    ----------
    calls_kind : {"model_calls", "tool_calls"}
    calls_used : int
        Model calls made (model agents) or tool calls made.
    call_budget : int or None
        B (model agents) or the tool-call budget; None when unlimited.
    image_budget : int or None
        V, from the ``start`` event.
    images_used : int
        Images at the end, the initial image included.
    end_reason : str or None
    tool_uses : list of ToolUse
    triangulations : list of Triangulation
    submissions : list of Submission
    final_map : dict of str to ndarray
        The last accepted map (task frame, metres).
    """

    calls_kind: str
    calls_used: int
    call_budget: int | None
    image_budget: int | None
    images_used: int
    end_reason: str | None
    tool_uses: list[ToolUse]
    triangulations: list[Triangulation]
    submissions: list[Submission]
    final_map: dict[str, np.ndarray]

    @property
    def calls_left(self) -> int | None:
        """Calls left at the end (None when the budget is unlimited)."""
        return None if self.call_budget is None else max(0, self.call_budget - self.calls_used)

    @property
    def captures(self) -> int:
        """Successful ``capture_image`` calls (the initial image is not one)."""
        return sum(1 for u in self.tool_uses if u.tool == "capture_image" and u.ok)

    def last_submission_of(self, target_id: str) -> Submission | None:
        """The last submission that accepted ``target_id`` (it set the position that is scored)."""
        for s in reversed(self.submissions):
            if target_id in s.accepted:
                return s
        return None


def _tool_name(name: Any) -> str:
    return name if isinstance(name, str) and name in TOOL_NAMES else OTHER_TOOL


@dataclasses.dataclass(frozen=True)
class RecordedBudgets:
    """What a trajectory takes from the run record besides the trace: B and the calls used (a model
    run's ``model.model_call_budget`` and ``model.model_calls``, else ``tool_call_budget``), the
    image budget V and the end reason; None where the record holds none."""

    tool_call_budget: int | None = None
    model_call_budget: int | None = None
    model_calls: int | None = None
    image_budget: int | None = None
    end_reason: str | None = None

    @classmethod
    def of(cls, record: RunRecord) -> RecordedBudgets:
        """The budgets a run record holds."""
        model = record.model
        return cls(record.tool_call_budget, None if model is None else model.model_call_budget,
                   None if model is None else model.model_calls, record.image_budget, record.end_reason)


def _submission(e: ToolCallEvent, call: int, current_map: dict[str, np.ndarray]) -> Submission:
    """An accepted ``submit_positions`` call as a :class:`Submission` (task frame, metres)."""
    inner = e.result.get("result") or {}
    positions = e.arguments.get("positions")
    after = {k: np.asarray(v, float) for k, v in (inner.get("accepted_map") or {}).items()}
    accepted_ids = inner.get("accepted")
    if accepted_ids is None:   # older traces: the accepted entries are the non-refused args
        refused = inner.get("refused") or {}
        accepted_ids = [k for k in (positions or {}) if k not in refused and k in after]
    accepted = {k: after[k] for k in accepted_ids if k in after}
    new = tuple(k for k in accepted if k not in current_map)
    revised = tuple(k for k in accepted if k in current_map
                    and float(np.linalg.norm(current_map[k] - accepted[k])) > 1e-3)
    return Submission(e.index, call, accepted, new, revised, len(after))


def parse_trajectory(events: Sequence[Mapping[str, Any]] | Trace, recorded: RecordedBudgets | None = None) -> Trajectory:
    """Read a trace (its events in order, read strictly as
    :class:`~spatialscout_gym.core.trace_events.Trace`) as a :class:`Trajectory`.

    Parameters
    ----------
    events : sequence of dict, or Trace
        The trace events in order.
    recorded : RecordedBudgets, optional
        From the run's ``result.json`` (:meth:`RecordedBudgets.of`): B for model agents when the
        trace does not give it, the tool-call budget, V and the end reason when the trace has none.
    """
    rec = recorded if recorded is not None else RecordedBudgets()
    trace = parse_trace(events)
    is_model = bool(trace.model_requests)
    start = trace.start
    current_call = -1
    tool_uses: list[ToolUse] = []
    tris: list[Triangulation] = []
    subs: list[Submission] = []
    current_map: dict[str, np.ndarray] = {}
    images_used = 1
    end_reason = rec.end_reason
    model_calls = 0
    for e in trace.events:
        if isinstance(e, (CaptureEvent, MapEvent, EndEvent)):
            images_used = e.images_used
        if isinstance(e, ModelRequestEvent):
            current_call = e.model_call_index
            model_calls = max(model_calls, current_call + 1)
        elif isinstance(e, ToolCallEvent):
            call = current_call if is_model else e.index
            tool = _tool_name(e.tool)
            tool_uses.append(ToolUse(call, tool, e.ok, e.index))
            inner = e.result.get("result") or {}
            if tool == "triangulate_observations":
                tris.append(Triangulation(e.index, call, True, np.asarray(inner["point"], float),
                                          float(inner.get("residual_m", 0.0)), tuple(inner.get("warnings") or ()))
                            if e.ok else Triangulation(e.index, call, False))
            elif tool == "submit_positions" and e.ok:
                subs.append(_submission(e, call, current_map))
                current_map = {k: np.asarray(v, float) for k, v in (inner.get("accepted_map") or {}).items()}
        elif isinstance(e, ToolCallRefusedEvent):
            c = e.call if isinstance(e.call, dict) else {}
            tool_uses.append(ToolUse(current_call, _tool_name(c.get("name")), False, None))
        elif isinstance(e, MapEvent):
            current_map = {k: np.asarray(v, float) for k, v in e.accepted_map.items()}
        elif isinstance(e, EndEvent):
            end_reason = e.reason
            if e.model_calls is not None:
                model_calls = max(model_calls, e.model_calls)
    if is_model:
        budget = rec.model_call_budget
        calls_used = int(rec.model_calls or model_calls)
    else:
        budget = rec.tool_call_budget if recorded is not None or start is None else start.tool_call_budget
        calls_used = len([u for u in tool_uses if u.index is not None])
    image_budget = start.image_budget if start is not None else rec.image_budget
    return Trajectory("model_calls" if is_model else "tool_calls", calls_used,
                      None if budget is None else int(budget),
                      None if image_budget is None else int(image_budget), images_used, end_reason,
                      tool_uses, tris, subs, current_map)


def load_trajectory(run_dir: str | Path) -> Trajectory:
    """:func:`parse_trajectory` of ``run_dir/trace.jsonl`` (read strictly) with ``run_dir/result.json``."""
    from spatialscout_gym.core.run_files import TRACE_FILE
    from spatialscout_gym.eval.layout import EvalDirError, load_trace, read_run_record
    d = Path(run_dir)
    record = read_run_record(d)
    recorded = None if record is None else RecordedBudgets.of(record)
    trace = load_trace(d / TRACE_FILE)
    try:
        return parse_trajectory(trace, recorded)
    except (KeyError, TypeError, ValueError, AttributeError, IndexError) as exc:
        raise EvalDirError(f"{d / TRACE_FILE}: an event's result lacks a field or has one of the wrong type "
                           f"({type(exc).__name__}: {exc}); the trace is corrupted or was edited") from None
