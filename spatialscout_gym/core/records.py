"""The run record (``result.json``) as a type, and the one function that derives it from the trace
(docs/protocol.md section 7).

A run record is not assembled from live state: :func:`derive_run_record` computes it from the
episode's ``trace.jsonl`` and named inputs (:class:`RecordInputs`: the scene's ground truth and
identity, the harness settings, the price table). The live run writes what that function returns
and nothing else writes the file; ``verify`` calls the same function on the recorded trace (after
the trace itself re-executed) and compares the whole canonical form, so a field added to the record
is verified by construction.

Every field is one of two kinds, declared on the type:

* **derived**: a pure function of the trace and the named inputs;
* **claimed**: what no record can prove (the attempt number, whether a custom endpoint was set,
  blocks an agent writes that the trace does not carry yet). Pages show these as claimed.

:func:`load_run_record` reads a file strictly: an unknown or missing field, a value of the wrong
type, or a link where a file belongs is one line naming the file and the field. A record written
before records carried ``schema_version`` (version 1) loads through :func:`migrate_v1`; the fields
its trace cannot derive (per-call cache tokens and HTTP attempts were not traced then) become
claimed for that record, and :func:`underivable_fields` names them.
"""

from __future__ import annotations

import dataclasses
import math
import os
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Literal, Mapping, Sequence

from spatialscout_gym.core.record_build import RecordError, build_record, convert, is_union
from spatialscout_gym.core.exploration import ExplorationFigures, derive_exploration
from spatialscout_gym.core.pricing import USAGE_KEYS, episode_cost
from spatialscout_gym.core.record_fields import CLAIMED, DERIVED
from spatialscout_gym.core.record_fields import claimed as _claimed
from spatialscout_gym.core.record_fields import derived as _derived
from spatialscout_gym.core.run_files import RESULT_FILE
from spatialscout_gym.core.scoring import GroundTruth, score_scene
from spatialscout_gym.core.trace_events import FailureEvent, ModelResponseEvent, Trace, parse_trace

__all__ = ["SCHEMA_VERSION", "DERIVED", "CLAIMED", "RunRecord", "ModelFigures", "NBVBlock", "NBVExplorationClaim", "RayNode", "RecordInputs", "RecordError",
           "derive_run_record", "load_run_record", "parse_run_record", "build_record", "read_run_file", "migrate_v1", "field_kinds",
           "derived_json", "claimed_values", "underivable_fields", "HARNESS_DERIVED", "run_kind", "FAILURE_EVENT", "HTTP_FIELD"]

SCHEMA_VERSION = 2
"""The run record's schema version (1: the records written before the version was recorded)."""
FAILURE_EVENT = "failure"
"""The trace event a failed episode ends with: ``error_type``, ``error`` (redacted) and, for a model
call that failed, ``http`` (that call's attempts, failures and waits)."""
HTTP_FIELD = "http"
"""The per-call HTTP record of a ``model_response`` (or the failure event): ``attempts`` (every HTTP
attempt, 429s and refused parameters included), ``failures`` (one redacted line each) and
``waits`` (rate-limit waits, seconds)."""


# ---- the types ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class IoUView:
    mean_iou: float = _derived()
    gt_0: float = _derived()
    gt_50: float = _derived()
    gt_90: float = _derived()


@dataclass(frozen=True)
class CenterError:
    mean: float | None = _derived()
    median: float | None = _derived()
    rmse: float | None = _derived()


@dataclass(frozen=True)
class ScorerRecord:
    metric_version: str = _derived()
    compat: str = _derived()
    min_side_m: float = _derived()
    lambda_m: float = _derived()
    Q: float = _derived()
    H: dict[str, int] = _derived()
    M: int = _derived()
    N: int = _derived()


@dataclass(frozen=True)
class Counters:
    tool_calls: int = _derived()
    images_used: int = _derived()
    images_left: int = _derived()
    calls_left: int | None = _derived()
    done: bool = _derived()
    end_reason: str | None = _derived()


@dataclass(frozen=True)
class RequestCacheFigures:
    cached_calls: int = _derived()
    live_calls: int = _derived()


@dataclass(frozen=True)
class ModelFigures:
    """``result.json``'s ``model`` block: settings from the harness record, figures summed over the
    trace's per-call records."""

    provider: str | None = _derived()
    name: str | None = _derived()
    custom_endpoint: bool = _claimed()
    api_mode: str | None = _derived()
    reasoning_effort: str | None = _derived()
    reasoning_effort_source: str | None = _derived()
    reasoning_effort_refused: list[str] = _derived()
    reasoning_effort_sent: dict[str, Any] = _derived()
    max_output_tokens: int | None = _derived()
    max_output_tokens_source: str | None = _derived()
    prompt_style: str | None = _derived()
    image_max_side_px: int | None = _derived()
    warnings: list[str] = _derived()
    mode: str | None = _derived()
    model_call_budget: int | None = _derived()
    image_history: int | None = _derived()
    model_calls: int = _derived()
    http_attempts: int = _derived()
    attempt_failures: list[str] = _derived()
    rate_limit_waits: int = _derived()
    rate_limit_wait_s: float = _derived()
    waits: list[dict[str, Any]] = _derived()
    usage: dict[str, int] = _derived()
    cached_input_tokens: int = _derived()
    cache_write_input_tokens: int = _derived()
    cost_usd: float | None = _derived()
    request_cache: RequestCacheFigures | None = _derived(default=None)
    usage_incurred: dict[str, int] | None = _derived(default=None)
    cost_incurred_usd: float | None = _derived(default=None)

    def written_as_null(self) -> set[str]:
        """With the request cache, what the run incurred is written even when unpriced (null)."""
        return {"cost_incurred_usd"} if self.request_cache is not None else set()


@dataclass(frozen=True)
class NBVExplorationClaim:
    """What an NBV agent measured of its episode with the env's own metric code (claimed: the
    derived figures are the record's ``exploration``): known occupancy of a fixed 16 x 16 x 4 m
    grid (a fraction), explored floor from a 32 x 32 pixel sample (m^2), path (m), blocked moves and
    black frames."""

    known_occupancy_fraction: float = _claimed()
    explored_floor_m2: float = _claimed()
    path_length_m: float = _claimed()
    blocked_moves: int = _claimed()
    black_frames: int = _claimed()


@dataclass(frozen=True)
class NBVBlock:
    """An NBV episode's ``nbv`` block, as its agent writes it (claimed; ``verify`` holds the
    dynamics to the ones the trace's first step records, and the path and blocked moves to the
    steps): the dynamics (``env_id``, ``walls``, ``wall_margin_m`` in metres), the motion kind, the
    observation keys the policy was given, the agent's own exploration figures, the margin of the
    scan guard it acted through (metres; absent: none), the blocked moves an episode saw before that
    guard also judged by the scan (absent: from the first step), the mapper that turned its captures into
    submissions (absent in blocks written before it was recorded) and, for a trained policy, the
    SHA-256 of the file it acted with (``policy_sha256``; absent before it was recorded)."""

    env_id: str = _claimed()
    walls: bool = _claimed()
    wall_margin_m: float = _claimed()
    motion: str = _claimed()
    observation_keys: list[str] = _claimed()
    exploration: NBVExplorationClaim | None = _claimed(default=None)
    scan_guard_m: float | None = _claimed(default=None)
    scan_guard_after_blocked: int | None = _claimed(default=None)
    mapper: str | None = _claimed(default=None)
    policy_sha256: str | None = _claimed(default=None)

    def dynamics(self) -> dict[str, Any]:
        """The fields that state the dynamics, as the trace's first ``nbv_step`` event records
        them (``env_id``, ``walls``, ``wall_margin_m``, ``motion``, ``observation_keys``)."""
        return {"env_id": self.env_id, "walls": self.walls, "wall_margin_m": self.wall_margin_m,
                "motion": self.motion, "observation_keys": list(self.observation_keys)}


@dataclass(frozen=True)
class RayNode:
    """The Ray node an episode ran on (``evaluate --backend ray``), as the driver lands it: the node
    id and its IP address (claimed: the trace does not carry it)."""

    id: str = _claimed()
    address: str = _claimed()


@dataclass(frozen=True)
class RunRecord:
    """One episode's ``result.json`` (see the module docstring for the two kinds of field)."""

    status: Literal["ok", "failed"] = _derived()
    scene_id: str = _derived()
    agent: str = _claimed()
    seed: int = _derived()
    catalog_version: str = _derived()
    scene_content_hash: str = _derived()
    resolution: int = _derived()
    end_reason: str | None = _derived()
    counters: Counters = _derived()
    image_budget: int = _derived()
    tool_call_budget: int | None = _derived()
    schema_version: int = _derived(default=SCHEMA_VERSION)
    # an episode that ended (status ok): the scorer's metrics
    num_targets: int | None = _derived(default=None)
    num_submitted: int | None = _derived(default=None)
    coverage: float | None = _derived(default=None)
    all: IoUView | None = _derived(default=None)
    submitted: IoUView | None = _derived(default=None)
    center_error_m: CenterError | None = _derived(default=None)
    full_scene_loss_m: float | None = _derived(default=None)
    scorer: ScorerRecord | None = _derived(default=None)
    # a failed episode: its trace ends in the failure
    error: str | None = _derived(default=None)
    error_type: str | None = _derived(default=None)
    model: ModelFigures | None = _derived(default=None)
    harness: dict[str, Any] | None = _derived(default=None)
    attempt: int | None = _claimed(default=None)
    nbv: NBVBlock | None = _claimed(default=None)
    exploration: ExplorationFigures | None = _derived(default=None)
    """An NBV episode's exploration, from its steps and captures (:mod:`spatialscout_gym.core.exploration`)."""
    human: bool | None = _claimed(default=None)
    node: RayNode | None = _claimed(default=None)
    """The Ray node that ran the episode (``evaluate --backend ray``), as the driver lands it."""

    def to_json(self) -> dict:
        """The file's JSON form: optional fields that are None are left out (``tool_call_budget``
        and the model block's nullable settings are written as null)."""
        return _to_json(self)

    def written_as_null(self) -> set[str]:
        """The optional fields written as null when None."""
        return {"tool_call_budget", "end_reason"}

    @property
    def is_model_run(self) -> bool:
        return self.model is not None


def field_kinds(cls: type = RunRecord, prefix: str = "") -> dict[str, str]:
    """``{dotted field path: "derived" | "claimed"}`` for every field of ``cls`` and of the record
    types nested in it (a test holds every field to one of the two kinds)."""
    out: dict[str, str] = {}
    hints = typing.get_type_hints(cls)
    for f in dataclasses.fields(cls):
        path = prefix + f.name
        out[path] = f.metadata.get("kind", "")
        inner = _record_type(hints[f.name])
        if inner is not None:
            out.update(field_kinds(inner, path + "."))
    return out


def claimed_values(record: RunRecord) -> dict[str, Any]:
    """``{dotted field path: value}`` of every claimed field the record holds (None left out), in
    JSON form: what a page shows as claimed, since no trace proves it."""
    out: dict[str, Any] = {}
    for path, kind in field_kinds(type(record)).items():
        if kind != CLAIMED:
            continue
        value: Any = record
        for part in path.split("."):
            value = getattr(value, part, None)
        if value is not None:
            out[path] = _to_json(value)
    return out


def _record_type(tp: Any) -> type | None:
    args = typing.get_args(tp) if is_union(tp) else (tp,)
    return next((a for a in args if isinstance(a, type) and dataclasses.is_dataclass(a)), None)


def _to_json(obj: Any) -> Any:
    """JSON form: an optional field (default None) that is None is left out, unless the record
    writes it as null (its ``written_as_null``)."""
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        keep = obj.written_as_null() if hasattr(obj, "written_as_null") else set()
        out = {}
        for f in dataclasses.fields(obj):
            v = getattr(obj, f.name)
            if v is None and f.default is None and f.name not in keep:
                continue
            out[f.name] = _to_json(v)
        return out
    if isinstance(obj, dict):
        return {k: _to_json(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_to_json(v) for v in obj]
    return obj


def derived_json(record: RunRecord) -> dict:
    """The record's derived fields only, in JSON form (what ``verify`` compares)."""
    return _only(record, DERIVED)


def _only(obj: Any, kind: str) -> Any:
    """The fields of ``kind`` of a record (nested records keep only theirs), in JSON form."""
    if not (dataclasses.is_dataclass(obj) and not isinstance(obj, type)):
        return _to_json(obj)
    return {f.name: _only(getattr(obj, f.name), kind) for f in dataclasses.fields(obj)
            if f.metadata.get("kind") == kind}


def parse_run_record(d: Any, file: str = RESULT_FILE) -> RunRecord:
    """``d`` (a parsed ``result.json``) as a :class:`RunRecord`, strictly; a record without
    ``schema_version`` goes through :func:`migrate_v1` first."""
    if not isinstance(d, dict):
        raise RecordError(f"{file}: expected a JSON object, got {type(d).__name__}")
    if "schema_version" not in d:
        d = migrate_v1(d)
    version = d.get("schema_version")
    if version not in (1, SCHEMA_VERSION) or isinstance(version, bool):
        raise RecordError(f"{file}: field 'schema_version' is {version!r}; this package reads 1 and "
                          f"{SCHEMA_VERSION}")
    record = typing.cast(RunRecord, build_record(RunRecord, d, file, SCHEMA_VERSION))
    for name in _NATURAL_FIELDS:   # an agent seed, an attempt number, a count: never negative
        value = getattr(record, name)
        if value is not None and value < 0:
            raise RecordError(f"{file}: field {name!r} must be an integer >= 0, got {value!r}")
    return record


_NATURAL_FIELDS = ("seed", "attempt", "num_targets", "num_submitted", "image_budget")
"""The integer fields of the run record that are never negative."""


def read_run_file(path: Path) -> Any:
    """The JSON of one of a run's own files (``result.json``, ``harness.json``); a link, a
    directory, a FIFO or bytes that are not JSON where the file belongs is one
    :class:`RecordError` naming the file."""
    from spatialscout_gym.core.files import SceneFileError, read_json
    if path.is_symlink():
        raise RecordError(f"{path}: a symbolic link where the run's own file belongs; it is not read")
    if path.is_dir():
        raise RecordError(f"{path}: is a directory, expected a file; remove it or rerun the episode")
    try:
        return read_json(path)
    except SceneFileError as exc:
        raise RecordError(str(exc)) from None


def load_run_record(path: str | os.PathLike) -> RunRecord:
    """Read ``path`` (a ``result.json``, or a run directory holding one) strictly; a link, a FIFO
    or a directory where the file belongs is refused, like every other error, in one
    :class:`RecordError` naming the file (:func:`read_run_file`)."""
    p = Path(path)
    if p.is_dir() and not p.is_symlink():
        p = p / RESULT_FILE
    return parse_run_record(read_run_file(p), str(p))


_V1_MODEL_DEFAULTS: dict[str, Any] = {
    "custom_endpoint": False, "api_mode": None, "reasoning_effort": None, "reasoning_effort_source": None,
    "reasoning_effort_refused": [], "reasoning_effort_sent": {}, "max_output_tokens": None,
    "max_output_tokens_source": None, "prompt_style": None, "image_max_side_px": None, "warnings": [],
    "mode": None, "model_call_budget": None, "image_history": None, "attempt_failures": [],
    "rate_limit_waits": 0, "rate_limit_wait_s": 0.0, "waits": [], "cached_input_tokens": 0,
    "cache_write_input_tokens": 0, "cost_usd": None}


def migrate_v1(d: Mapping[str, Any]) -> dict:
    """A record written before ``schema_version`` existed, in today's form: ``schema_version`` 1,
    model-block fields that older runs did not write filled with their neutral values."""
    out = {**d, "schema_version": 1}
    model = out.get("model")
    if isinstance(model, dict):
        out["model"] = {**_V1_MODEL_DEFAULTS, **model}
    return out


HARNESS_DERIVED = ("model.provider", "model.name", "model.api_mode", "model.reasoning_effort",
                   "model.reasoning_effort_source", "model.reasoning_effort_refused", "model.reasoning_effort_sent",
                   "model.max_output_tokens", "model.max_output_tokens_source", "model.prompt_style",
                   "model.image_max_side_px", "model.warnings", "model.mode", "model.model_call_budget",
                   "model.image_history", "model.cost_usd", "model.cost_incurred_usd", "model.request_cache",
                   "model.usage_incurred", "harness")
"""The fields a model run derives from its harness record: claimed where the run has none (a
``tool-side only`` run)."""


def underivable_fields(record: RunRecord, harness_known: bool = True) -> tuple[str, ...]:
    """The derived fields that cannot be derived for ``record``: a version-1 record's per-call cache
    tokens, HTTP attempts, failures and waits (not traced then), and, without a harness record
    (``harness_known`` False), the model settings it holds. Claimed for that record only."""
    old = () if record.schema_version >= SCHEMA_VERSION else ("schema_version",)
    if record.model is None:
        return old
    without_harness = () if harness_known else HARNESS_DERIVED
    if not old:
        return without_harness
    return old + without_harness + ("model.http_attempts", "model.attempt_failures", "model.rate_limit_waits", "model.rate_limit_wait_s",
            "model.waits", "model.cached_input_tokens", "model.cache_write_input_tokens", "model.cost_usd",
            "model.usage_incurred", "model.cost_incurred_usd", "model.request_cache", "error", "status")


# ---- the derivation ----------------------------------------------------------------------------
@dataclass(frozen=True)
class RecordInputs:
    """What a run record derives from besides its trace.

    ``ground_truth``, ``catalog_version`` and ``scene_content_hash``: the scene's (rebuilt from its
    spec; a failed episode's record needs no ground truth); ``harness``: ``harness.json`` of a model run (verified by replaying the conversation);
    ``price_table``: the evaluation's table (its copy in the evaluation directory). ``claimed``:
    the claimed fields, by dotted path (``agent``, ``attempt``, ``model.custom_endpoint``, ``nbv``,
    ``human``, ``node``)."""

    ground_truth: GroundTruth | None
    catalog_version: str
    scene_content_hash: str
    harness: Mapping[str, Any] | None = None
    price_table: Mapping[str, Mapping[str, float]] | None = None
    claimed: Mapping[str, Any] = field(default_factory=dict)


def run_kind(events: Sequence[Mapping[str, Any]] | Trace) -> str:
    """``"model"`` when the trace holds model requests or replies, else ``"tools"`` (a reference,
    NBV, MCP-client or human run: every tool call is in the trace, no conversation)."""
    return "model" if parse_trace(events).is_model_run else "tools"


def _obj(x: Any) -> Mapping[str, Any]:
    """``x`` when it is a JSON object, else an empty one (a malformed harness block derives as empty)."""
    return x if isinstance(x, dict) else {}


def _count(x: Any) -> int:
    return int(x) if isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) else 0


def _sum_usage(replies: Iterable[ModelResponseEvent]) -> dict[str, int]:
    out = dict.fromkeys(USAGE_KEYS, 0)
    for r in replies:
        for k in USAGE_KEYS:
            out[k] += _count(r.usage.get(k))
    return out


def _list(x: Any) -> list:
    return x if isinstance(x, list) else []


def _model_figures(trace: Trace, inputs: RecordInputs) -> ModelFigures:
    h = inputs.harness or {}
    hm, reasoning, images, budgets = (_obj(h.get(k)) for k in ("model", "reasoning", "images", "budgets"))
    replies = trace.model_responses
    calls: list[ModelResponseEvent | FailureEvent] = [*replies, *([trace.failure] if trace.failure else [])]
    https = [c.http or {} for c in calls]
    # a reply traced before per-call HTTP records: its own attempts count (429s were not traced)
    attempts = sum(_count(http.get("attempts")) if http else (c.attempts if isinstance(c, ModelResponseEvent) else 0)
                   for c, http in zip(calls, https))
    failures = [str(f) for http in https for f in _list(http.get("failures"))]
    waits = [dict(w) for http in https for w in _list(http.get("waits")) if isinstance(w, dict)]
    totals = _sum_usage(replies)
    name = hm.get("name")
    prices = inputs.price_table
    usage = {"input_tokens": totals["input_tokens"], "output_tokens": totals["output_tokens"]}
    cache_figures: dict[str, Any] = {}
    if h.get("request_cache"):
        live = [r for r in replies if not r.cached]
        served = [c for http in https for c in _list(http.get("cache")) if isinstance(c, dict)]
        cache_figures = {"request_cache": RequestCacheFigures(
                             cached_calls=sum(bool(c.get("cached")) for c in served),
                             live_calls=sum(not c.get("cached") for c in served)),
                         "usage_incurred": _sum_usage(live),
                         "cost_incurred_usd": episode_cost(_sum_usage(live), str(name), prices)}
    return ModelFigures(
        provider=hm.get("provider"), name=name,
        custom_endpoint=bool(inputs.claimed.get("model.custom_endpoint", False)),
        api_mode=hm.get("api_mode"), reasoning_effort=hm.get("reasoning_effort"),
        reasoning_effort_source=reasoning.get("source"),
        reasoning_effort_refused=sorted(reasoning.get("refused") or {}),
        reasoning_effort_sent=dict(reasoning.get("sent_as") or {}),
        max_output_tokens=hm.get("max_output_tokens"), max_output_tokens_source=hm.get("max_output_tokens_source"),
        prompt_style=h.get("prompt_style"), image_max_side_px=images.get("max_side_px"),
        warnings=[str(w) for w in h.get("warnings") or []], mode=h.get("mode"),
        model_call_budget=budgets.get("model_call_budget"), image_history=images.get("history"),
        model_calls=len(trace.model_requests),
        http_attempts=attempts, attempt_failures=failures, rate_limit_waits=len(waits),
        rate_limit_wait_s=round(sum(float(w.get("seconds") or 0.0) for w in waits), 3), waits=waits,
        usage=usage, cached_input_tokens=totals["cached_input_tokens"],
        cache_write_input_tokens=totals["cache_write_input_tokens"],
        cost_usd=episode_cost(totals, str(name), prices), **cache_figures)


def _claimed_block(cls: type, value: Any, name: str) -> Any:
    """A claimed block the live run hands over (an agent's ``nbv`` dict, the Ray node), as its
    type: the record holds nothing untyped, and a block of the wrong form fails the run that
    writes it, not a later reader."""
    if value is None or isinstance(value, cls):
        return value
    return convert(cls, value, name, "the run's claimed fields")


def derive_run_record(events: Sequence[Mapping[str, Any]] | Trace, inputs: RecordInputs) -> RunRecord:
    """The run record of the episode whose trace is ``events`` (its JSON lines, read strictly as
    :class:`~spatialscout_gym.core.trace_events.Trace`, or that trace; see the module docstring).

    Status: ``failed`` when the trace ends in a ``failure`` event, else ``ok`` with the scorer's
    metrics of the accepted map. Budgets, the scene id and the seed come from the start event, the
    resolution from its intrinsics, counters and the end reason from the tool calls, captures and
    end event. A model run (its trace holds model events) has a ``model`` block: its settings from
    the harness record, its calls, HTTP attempts, waits, tokens and cost summed over the per-call
    records; a run with no model event has none, whatever its agent is called."""
    trace = parse_trace(events)
    start = trace.start
    if start is None:
        raise RecordError("trace.jsonl: no start event; a run record derives from a trace that opens with one")
    failure, end = trace.failure, trace.end
    tool_calls, images_used = len(trace.tool_calls), len(trace.captures)
    image_budget, budget = start.image_budget, start.tool_call_budget
    end_reason = None if end is None else end.reason
    counters = Counters(tool_calls=tool_calls, images_used=images_used, images_left=image_budget - images_used,
                        calls_left=None if budget is None else budget - tool_calls,
                        done=end is not None, end_reason=end_reason)
    claimed = inputs.claimed
    fields: dict[str, Any] = dict(
        scene_id=start.scene_id, agent=claimed.get("agent"), seed=start.seed or 0,
        catalog_version=inputs.catalog_version, scene_content_hash=inputs.scene_content_hash,
        resolution=start.resolution, end_reason=end_reason, counters=counters,
        image_budget=image_budget, tool_call_budget=budget, attempt=claimed.get("attempt"),
        nbv=_claimed_block(NBVBlock, claimed.get("nbv"), "nbv"), human=claimed.get("human"),
        node=_claimed_block(RayNode, claimed.get("node"), "node"))
    if inputs.harness is not None and isinstance(inputs.harness.get("harness"), dict):
        fields["harness"] = dict(inputs.harness["harness"])
    if trace.is_model_run:
        fields["model"] = _model_figures(trace, inputs)
    if failure is not None:
        return RunRecord(status="failed", error=failure.error, error_type=failure.error_type, **fields)
    if inputs.ground_truth is None:
        raise RecordError("a completed episode's record needs the scene's ground truth to score it")
    score = score_scene(inputs.ground_truth, trace.accepted_map())
    m = score.metrics()
    return RunRecord(status="ok", num_targets=m["num_targets"], num_submitted=m["num_submitted"],
                     coverage=m["coverage"], all=IoUView(**m["all"]), submitted=IoUView(**m["submitted"]),
                     center_error_m=CenterError(**m["center_error_m"]), full_scene_loss_m=m["full_scene_loss_m"],
                     scorer=ScorerRecord(**score.record()),
                     exploration=derive_exploration(trace, inputs.ground_truth, image_budget), **fields)
