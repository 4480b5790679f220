"""An evaluation directory's own records as types, read strictly (docs/protocol.md sections 5 and 9).

``planned.json`` (every episode an evaluation set out to run) and ``scenes.json`` (the scene
argument of each scene directory) are read here and nowhere else; the run record
(``result.json``) is :class:`~spatialscout_gym.core.records.RunRecord`, read by
:func:`load_result`. Loading is strict: a file that is not the record (a directory, text
that is not JSON, a field of the wrong type) is one :class:`~spatialscout_gym.core.records.RecordError`
line naming the file and the field.
"""

from __future__ import annotations

import os
import typing
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any, Mapping

from spatialscout_gym.core.files import SceneFileError, read_json
from spatialscout_gym.core.record_build import RecordError, build_record, convert
from spatialscout_gym.core.records import RayNode, RunRecord, load_run_record
from spatialscout_gym.core.run_files import RESULT_FILE, seed_of_dir

__all__ = ["PLANNED_FILE", "SCENES_FILE", "EVALUATE_FILE", "Plan", "load_planned", "load_scene_args", "load_result",
           "is_episode_key", "PLAN_SCHEMA_VERSION", "AgentOptions", "agent_option_keys", "EvaluationRecord",
           "parse_evaluation", "load_evaluation", "EVALUATION_SCHEMA_VERSION", "FailureNote", "parse_failure_note",
           "load_failure_note", "FAILURE_NOTE_SCHEMA_VERSION", "REPORT_FILE", "REPORT_SCHEMA_VERSION", "ReportRecord",
           "EpisodeCounts", "SeedSpread", "parse_report", "load_report"]

PLANNED_FILE = "planned.json"
SCENES_FILE = "scenes.json"
EVALUATE_FILE = "evaluate.json"
PLAN_SCHEMA_VERSION = 1
"""``planned.json``'s and ``scenes.json``'s form: one version so far (files carry no version field;
a later form adds one and a migration here)."""


def is_episode_key(key: object) -> bool:
    """True for ``<scene dir>/seed_<k>``: one scene directory, then a seed written in decimal
    without leading zeros."""
    if not isinstance(key, str):
        return False
    scene, _, last = key.rpartition("/")
    k = seed_of_dir(last)
    return k is not None and bool(scene) and "/" not in scene and "\\" not in scene


@dataclass(frozen=True)
class Plan:
    """``planned.json``: the episode keys (``<scene dir>/seed_<k>``) of an evaluation, sorted."""

    episodes: tuple[str, ...]


def _read_object(path: Path) -> dict:
    """``path`` as a JSON object; a non-file (a directory, a FIFO), bad JSON or another JSON value
    is one :class:`RecordError` naming the file. A link to a file is followed: ``verify`` keys its
    cached verdicts on the linked file's contents."""
    try:
        d = read_json(path)
    except SceneFileError as exc:
        raise RecordError(str(exc)) from None
    if not isinstance(d, dict):
        raise RecordError(f"{path}: expected a JSON object, found {type(d).__name__}")
    return d


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def load_planned(root: str | os.PathLike) -> Plan | None:
    """``root/planned.json`` (None when absent). A file that is not ``{"episodes": [key, ...]}``
    (truncated, another field, a string, a list of other things) is a :class:`RecordError`: a
    corrupted plan is never an empty one."""
    path = Path(root) / PLANNED_FILE
    if not path.exists() and not path.is_symlink():
        return None
    d = _read_object(path)
    unknown = sorted(set(d) - {"episodes"})
    if unknown:
        raise RecordError(f"{path}: field {unknown[0]!r} is not a field of this record")
    if "episodes" not in d:
        raise RecordError(f"{path}: field 'episodes' is missing")
    keys = d["episodes"]
    if not isinstance(keys, list):
        raise RecordError(f"{path}: field 'episodes' must be a list of \"<scene dir>/seed_<k>\", got {_short(keys)}")
    bad = next((i for i, k in enumerate(keys) if not is_episode_key(k)), None)
    if bad is not None:
        raise RecordError(f"{path}: field 'episodes[{bad}]' must be \"<scene dir>/seed_<k>\", got {_short(keys[bad])}")
    return Plan(tuple(sorted(set(keys))))


def load_scene_args(root: str | os.PathLike) -> dict[str, str]:
    """``root/scenes.json``: ``{scene dir: scene argument}`` ({} when absent); a value that is not
    a string is a :class:`RecordError` naming it."""
    path = Path(root) / SCENES_FILE
    if not path.exists() and not path.is_symlink():
        return {}
    d = _read_object(path)
    bad = next((k for k, v in d.items() if not isinstance(v, str)), None)
    if bad is not None:
        raise RecordError(f"{path}: field {bad!r} must be a scene argument (a string), got {_short(d[bad])}")
    return d


def load_result(run_dir: str | os.PathLike) -> RunRecord | None:
    """``run_dir/result.json`` as a :class:`RunRecord` (None when absent), strictly
    (:func:`~spatialscout_gym.core.records.load_run_record`)."""
    path = Path(run_dir) / RESULT_FILE
    if not path.exists() and not path.is_symlink():
        return None
    if path.is_dir() and not path.is_symlink():
        raise RecordError(f"{path}: is a directory, expected a file; remove it or rerun the episode")
    return load_run_record(path)


# ---- evaluate.json -------------------------------------------------------------------------------
@dataclass(frozen=True)
class AgentOptions:
    """The options of a model agent that ``evaluate`` (and the Inspect task) record in
    ``DIR/evaluate.json``'s ``agent_options``: the one list of them. Writing any other key is
    refused here, and ``compare``/``leaderboard`` refuse a key that is not a field here
    (:mod:`spatialscout_gym.eval.settings_check`), so a new option is one line below. Which of
    them are protocol settings compared between runs is said by the per-episode record,
    :class:`~spatialscout_gym.eval.settings_check.EpisodeSettings`."""

    model_call_budget: int | None = None
    prompt_style: str | None = None
    reasoning_effort: str | None = None
    reasoning_effort_source: str | None = None   # who chose the effort (the flag, the default)
    mode: str | None = None
    image_history: int | None = None
    image_max_side: int | None = None
    max_tokens: int | None = None      # the output-token cap: providers' defaults differ
    passive_views: int | None = None   # only with mode "passive", which is compared
    # spend, not what the agent can do: the copy's name in the evaluation (an object: a table given
    # inline through the API by an evaluation written before tables were copied)
    price_table: str | dict[str, Any] | None = None
    price_table_sha256: str | None = None   # the table's bytes as read: verify checks a cost only with them
    request_cache: str | None = None   # replay of responses already paid for
    harness: str | None = None         # the harness's name (the Inspect task)
    walls: bool | None = None          # NBV agents (--nbv-env): compared through result.json's nbv block
    mapper: str | None = None          # NBV agents (--nbv-mapper): compared through result.json's nbv block
    # recorded, not compared: --require-effort only decides whether a refused effort stops the run
    require_effort: bool | None = None
    # recorded, not compared: the request policy and the per-minute limits decide when a request is
    # sent, not what the model sees
    timeout_s: float | None = None
    attempts: int | None = None
    backoff_s: Any = None
    rate_limit_wait_s: float | None = None
    requests_per_minute: float | None = None
    tokens_per_minute: float | None = None
    rate_limit_window_s: float | None = None
    max_cost_usd: float | None = None   # the spending cap ends the run; the episodes it ends fail


def agent_option_keys() -> frozenset[str]:
    """The keys ``agent_options`` may hold: the fields of :class:`AgentOptions`."""
    return frozenset(f.name for f in fields(AgentOptions))


EVALUATION_SCHEMA_VERSION = 1
"""``evaluate.json``'s form: one version so far (the file carries no version field)."""


@dataclass(frozen=True)
class EvaluationRecord:
    """``evaluate.json``: what every episode of one evaluation shares, as written by
    :class:`~spatialscout_gym.eval.running.tasks.EvalSettings`.

    ``agent_options`` holds only options that are fields of :class:`AgentOptions`, each checked
    against that field's type. A key this version does not know (one a later version writes) is
    kept, not dropped, in ``unknown_settings`` / ``unknown_options``: a resume compares it and
    ``compare`` and ``leaderboard`` refuse it by name (an unknown setting cannot be shown to agree).
    """

    agent: str
    image_budget: int = 100
    tool_call_budget: int | None = 100
    resolution: int = 512
    agent_options: Mapping[str, Any] = field(default_factory=dict)
    unknown_settings: Mapping[str, Any] = field(default_factory=dict)
    unknown_options: Mapping[str, Any] = field(default_factory=dict)

    def option(self, key: str) -> Any:
        """The agent option ``key`` (a field of :class:`AgentOptions`), None when not recorded."""
        if key not in agent_option_keys():
            raise KeyError(f"{key!r} is not an agent option (a field of AgentOptions)")
        return self.agent_options.get(key)

    def unknown(self) -> list[str]:
        """Each key this version does not know, as a page names it."""
        return ([f"{EVALUATE_FILE} key {k!r}" for k in sorted(self.unknown_settings)]
                + [f"{EVALUATE_FILE} agent option {k!r}" for k in sorted(self.unknown_options)])

    def to_dict(self) -> dict[str, Any]:
        """The file's object (unknown keys included, so a resume compares them too)."""
        d: dict[str, Any] = {"agent": self.agent, "image_budget": self.image_budget,
                             "tool_call_budget": self.tool_call_budget, "resolution": self.resolution}
        d.update(self.unknown_settings)
        options = {**self.agent_options, **self.unknown_options}
        if options:
            d["agent_options"] = options
        return d


_OPTION_TYPES = typing.get_type_hints(AgentOptions)
_SETTING_FIELDS = ("agent", "image_budget", "tool_call_budget", "resolution", "agent_options")


def parse_evaluation(d: Any, file: str = EVALUATE_FILE) -> EvaluationRecord:
    """``d`` (a parsed ``evaluate.json``) as an :class:`EvaluationRecord`: a known field of the
    wrong type, or ``agent`` missing, is one :class:`RecordError` naming the file and the field."""
    if not isinstance(d, dict):
        raise RecordError(f"{file}: expected a JSON object, got {type(d).__name__}")
    known = {k: v for k, v in d.items() if k in _SETTING_FIELDS and k != "agent_options"}
    base = build_record(_Settings, known, file, EVALUATION_SCHEMA_VERSION)
    options = d.get("agent_options", {})
    if not isinstance(options, dict):
        raise RecordError(f"{file}: field 'agent_options' must be an object, got {_short(options)}")
    typed = {k: convert(_OPTION_TYPES[k], v, f"agent_options.{k}", file)
             for k, v in options.items() if k in _OPTION_TYPES}
    for name in ("image_budget", "resolution"):
        if getattr(base, name) < 1:
            raise RecordError(f"{file}: field {name!r} must be an integer >= 1, got {getattr(base, name)!r}")
    return EvaluationRecord(base.agent, base.image_budget, base.tool_call_budget, base.resolution, typed,
                            {k: v for k, v in d.items() if k not in _SETTING_FIELDS},
                            {k: v for k, v in options.items() if k not in _OPTION_TYPES})


@dataclass(frozen=True)
class _Settings:
    """The scalar fields of ``evaluate.json``, for the strict reader."""

    agent: str
    image_budget: int = 100
    tool_call_budget: int | None = 100
    resolution: int = 512


def load_evaluation(root: str | os.PathLike) -> EvaluationRecord | None:
    """``root/evaluate.json`` as an :class:`EvaluationRecord` (None when absent). A directory, a
    FIFO or text that is not JSON where the file belongs is a :class:`RecordError`."""
    path = Path(root) / EVALUATE_FILE
    if not path.exists() and not path.is_symlink():
        return None
    return parse_evaluation(_read_object(path), str(path))


# ---- failure notes -------------------------------------------------------------------------------
FAILURE_NOTE_SCHEMA_VERSION = 2
"""A failure note's form: 2 records ``error_type``; 1 (the notes written before it) did not, and
loads through :func:`_migrate_note_v1`."""


@dataclass(frozen=True)
class FailureNote:
    """A failure with no run directory of its own (``seed_<k>.failed.json``, archived as
    ``attempts/NN/failed.json``): the episode could not start, its worker died, or the driver lost
    it. Its scores count nowhere; it counts as a failed attempt.

    ``error`` is redacted, as in a run record; ``error_type`` is the exception's type (``WorkerCrash``
    for a worker that died), what the driver and the pages dispatch on; ``node`` the Ray node it
    failed on (``evaluate --backend ray``)."""

    scene: str
    seed: int
    error: str
    error_type: str
    traceback: str | None = None
    node: RayNode | None = None
    schema_version: int = FAILURE_NOTE_SCHEMA_VERSION

    def written_as_null(self) -> set[str]:
        """``traceback`` is written as null when there is none (a worker that died left none)."""
        return {"traceback"}

    def to_json(self) -> dict[str, Any]:
        """The file's object."""
        from spatialscout_gym.core.records import _to_json
        return _to_json(self)


def _migrate_note_v1(d: Mapping[str, Any]) -> dict[str, Any]:
    """A note written before notes recorded their error type: the type is the name before the
    first colon of the error, which every writer of those notes put there (``f"{type}: {message}"``)."""
    error = d.get("error")
    head = error.split(":", 1)[0] if isinstance(error, str) else ""
    return {"error_type": head if head.isidentifier() else "unknown", **d,
            "schema_version": FAILURE_NOTE_SCHEMA_VERSION}


def parse_failure_note(d: Any, file: str) -> FailureNote:
    """``d`` (a parsed failure note) as a :class:`FailureNote`, strictly (a note without
    ``schema_version`` through :func:`_migrate_note_v1`)."""
    if isinstance(d, dict) and "schema_version" not in d:
        d = _migrate_note_v1(d)
    note = build_record(FailureNote, d, file, FAILURE_NOTE_SCHEMA_VERSION)
    if note.schema_version != FAILURE_NOTE_SCHEMA_VERSION or note.seed < 0:
        raise RecordError(f"{file}: field {'seed' if note.seed < 0 else 'schema_version'!r} is "
                          f"{note.seed if note.seed < 0 else note.schema_version!r}; this package reads notes of "
                          f"schema version {FAILURE_NOTE_SCHEMA_VERSION} with a seed >= 0")
    return typing.cast(FailureNote, note)


def load_failure_note(path: str | os.PathLike) -> FailureNote:
    """A failure note file as a :class:`FailureNote`; a directory, a FIFO, bad JSON or a field
    of the wrong type is one :class:`RecordError` naming the file and the field."""
    return parse_failure_note(_read_object(Path(path)), str(path))


# ---- report.json ---------------------------------------------------------------------------------
REPORT_FILE = "report.json"
REPORT_SCHEMA_VERSION = 1
"""``report.json``'s form: 1, the first to record its version (reports written before it carry
none and load as version 1: their fields are these)."""


@dataclass(frozen=True)
class EpisodeCounts:
    """The report's ``episodes`` block: completed and failed episodes with their rates (in [0, 1],
    over ``total``), every attempt (failed ones included) and how the completed ones ended."""

    completed: int
    failed: int
    total: int
    completed_rate: float
    failure_rate: float
    attempts: int
    failed_attempts: int
    attempt_failure_rate: float
    end_reasons: dict[str, int]


@dataclass(frozen=True)
class SeedSpread:
    """The report's ``seeds`` block: the seeds, each seed's object-micro all-target mean IoU (a
    fraction; keys are the seeds as text), their mean and standard deviation (``ddof=1``; 0 for one
    seed; None when nothing was scored)."""

    seeds: list[int]
    per_seed: dict[str, float]
    mean: float | None
    std: float | None


@dataclass(frozen=True)
class ReportRecord:
    """``DIR/report.json``: an evaluation's pooled report as ``report`` writes it
    (:mod:`spatialscout_gym.eval.pages.report` says what each field holds). Everything in it is
    recomputed from the episodes' records whenever a page is made; the file is what a reader
    outside the package takes away, so it is written through this type (a field the writer adds
    without a place here fails the writer) and read back strictly by :func:`load_report`.

    The scorer's blocks (``object_micro``, ``scene_macro``, ``scenes``, ``scorer``), the pooled
    counters and the intervals keep the scorer's and the statistics' own forms (objects)."""

    object_micro: dict[str, Any] | None
    scene_macro: dict[str, Any] | None
    scenes: dict[str, Any]
    lambda_m: float
    agent: list[str]
    settings: dict[str, Any] | None
    categories: dict[str, Any]
    seeds: SeedSpread
    intervals: dict[str, Any] | None
    verified: dict[str, Any]
    counters: dict[str, Any]
    failed_attempts_spend: dict[str, Any]
    failures: list[dict[str, Any]]
    episodes: EpisodeCounts
    scorer: dict[str, Any]
    catalog_version: str | list[str] | None
    scene_hashes: dict[str, str]
    protocol_settings: dict[str, Any]
    cost_cap: dict[str, Any] | None
    scene_sources: dict[str, Any] | None = None
    exploration: dict[str, Any] | None = None
    exploration_scene: dict[str, Any] | None = None
    claimed: dict[str, list[Any]] | None = None
    schema_version: int = REPORT_SCHEMA_VERSION

    def to_json(self) -> dict[str, Any]:
        """The file's object: every field, None ones included (a report states what it lacks)."""
        return asdict(self)


def parse_report(d: Any, file: str = REPORT_FILE) -> ReportRecord:
    """``d`` (a parsed ``report.json``) as a :class:`ReportRecord`, strictly: an unknown or missing
    field, or one of the wrong type, is one :class:`RecordError` naming the file and the field."""
    if isinstance(d, dict) and "schema_version" not in d:
        d = {**d, "schema_version": REPORT_SCHEMA_VERSION}   # written before the version was
    report = typing.cast(ReportRecord, build_record(ReportRecord, d, file, REPORT_SCHEMA_VERSION))
    if report.schema_version != REPORT_SCHEMA_VERSION:
        raise RecordError(f"{file}: field 'schema_version' is {report.schema_version!r}; this package reads "
                          f"{REPORT_SCHEMA_VERSION}")
    return report


def load_report(root: str | os.PathLike) -> ReportRecord | None:
    """``root/report.json`` as a :class:`ReportRecord` (None when absent); a directory, a FIFO or
    text that is not JSON where the file belongs is a :class:`RecordError`."""
    path = Path(root) / REPORT_FILE
    if not path.exists() and not path.is_symlink():
        return None
    return parse_report(_read_object(path), str(path))
