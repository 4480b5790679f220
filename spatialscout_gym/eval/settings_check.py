"""Whether evaluations may be compared or ranked together (docs/protocol.md sections 5 and 9).

Two evaluations are comparable when they ran on the same catalog version and scene contents and
under the same **protocol settings**: the settings that change what an agent can do. Everything is
read from the run directories each time (every completed episode's ``result.json`` and the
directory's ``evaluate.json``), never from a ``report.json`` a directory carries: a cache can be
stale or edited.

The settings are the fields of one per-episode record, :class:`EpisodeSettings`: each field
names the setting, the one place ``result.json`` records it and the agent kinds it applies to (V
and resolution: every agent; the tool-call budget: agents without a model; the NBV dynamics (NBV-v1
or NBV-v2, from the walls: NBV-v3 is NBV-v2's), walls and wall margin: NBV agents; B, prompt style,
reasoning effort asked, whether it was honoured and the parameters sent for it, mode, image history and
image max side: model agents). :data:`SETTINGS` are its compared fields; a field recorded but not
compared says why.

Models of different providers are compared by the effort level asked and whether it was honoured
(:func:`effort_outcome`: sent, partly refused, refused, not supported, none asked); the parameters a
provider sends for one level (``reasoning_effort`` for chat completions, ``thinking`` and
``output_config`` for Anthropic) are compared only between runs of one provider and API
(``within="wire"``), where a changed thinking budget for one level separates.

An agent's **kind** is ``model`` when its episodes carry a ``model`` block (VLM agents: their
budget is B; the episode has no tool-call budget), ``nbv`` when they carry an ``nbv`` block (the
next-best-view agents and policies: no model calls, a tool-call budget, and the NBV dynamics they
stepped under; the block's ``observation_keys`` and ``motion`` are recorded, not compared: what
an agent observes and how it acts are the agent, not the task) and ``reference`` otherwise
(``origin``, ``oracle-*``; NBV runs written before the ``nbv`` block existed). Two more kinds
take the benchmark through a harness of their own: ``mcp`` (an MCP client's run: ``result.json``'s
``harness`` names the MCP server) and ``human`` (``spatialscout play``: ``human`` true). Their B
counts tool calls (the tool-call budget), a model agent's model calls: ``B counts`` is compared
between every two of these three kinds (B = 100 tool calls is not B = 100 model calls), the
tool-call budget between MCP and human runs. A setting that does not
apply to a kind is not a difference: a model run and a reference run at the same V and resolution
are comparable. A setting that applies to both sides but is recorded on one side only, or a key of
``evaluate.json`` this code does not know (:data:`KNOWN_EVALUATE_KEYS`,
:data:`KNOWN_AGENT_OPTIONS`), refuses: an unknown setting cannot be shown to agree.
"""

from __future__ import annotations

import dataclasses
import json
from collections import defaultdict
from pathlib import Path
from typing import Any, Callable, Collection, Mapping, Sequence

from spatialscout_gym.core.records import RunRecord
from spatialscout_gym.eval.layout import EvalDir
from spatialscout_gym.eval.running.tasks import agent_option_keys, evaluate_keys

__all__ = ["Setting", "SETTINGS", "RECORDED", "NONE_MEANS", "EpisodeSettings", "episode_settings", "shown_settings", "setting",
           "RUN_KINDS", "KNOWN_EVALUATE_KEYS", "KNOWN_AGENT_OPTIONS", "Identity",
           "identity_of", "protocol_settings", "comparability_problems", "checked_settings_text", "effort_outcome",
           "EFFORT_OUTCOMES", "wire_of", "BUDGET_UNIT", "budget_counts", "run_kind_of", "CONTROL_SETTING"]

RUN_KINDS = ("model", "reference", "nbv", "mcp", "human")
"""What a run record is compared as: with a model block (VLM agents), with an ``nbv`` block (NBV
agents and policies), an MCP client's run (``harness.name`` ``mcp``, derived from the MCP server's
harness record), a person's (``human`` true: ``spatialscout play``), or none of these (reference,
oracle). Not the registry's ``AGENT_KINDS``, which say how an agent is built and whether it reads
the private half of a scene: a registry ``privileged`` or ``reference`` agent's run is a
``reference`` run here, and MCP clients and people are not agents of the registry."""

BUDGET_UNIT = {"model": "model calls", "mcp": "tool calls", "human": "tool calls"}
"""What B counts for each kind that has a B: a model agent's model calls (``evaluate``), a tool
call of an MCP client or a person (the server cannot see a client's model calls)."""


def budget_counts(result: RunRecord) -> tuple[bool, object]:
    """``(True, what B counts)`` for a kind with a B (:data:`BUDGET_UNIT`): B = 100 tool calls
    and B = 100 model calls are different budgets (a model call may make several tool calls)."""
    unit = BUDGET_UNIT.get(_kind(result))
    return (unit is not None), unit


def nbv_dynamics(result: RunRecord) -> tuple[bool, object]:
    """``(recorded, env id)`` of the dynamics an NBV episode stepped under: NBV-v2 where walls,
    floor and ceiling stopped the camera (NBV-v2 and NBV-v3, which adds only an observation),
    NBV-v1 where they did not. Read from the recorded walls, so runs of NBV-v2 and NBV-v3 compare."""
    if result.nbv is None:
        return False, None
    from spatialscout_gym.nbv.config import DYNAMICS_ENV_IDS
    return True, DYNAMICS_ENV_IDS[result.nbv.walls]


NOT_RECORDED = "not recorded"
"""The NBV mapper of a run recorded before the mapper was: two such runs compare as they did, one
beside a run that records its mapper is refused (it cannot be shown to agree)."""


def nbv_mapper(result: RunRecord) -> tuple[bool, object]:
    """``(recorded, mapper)`` of an NBV episode: the mapper that turned its captures into
    submissions (``oracle``: a seen target at its reference centre; ``oracle-surface``: at the mean of
    its seen surface points), which decides what its IoU measures; :data:`NOT_RECORDED` for a block
    written before the mapper was recorded."""
    if result.nbv is None:
        return False, None
    return True, result.nbv.mapper or NOT_RECORDED


@dataclasses.dataclass(frozen=True)
class Setting:
    """One protocol setting: its name in messages, where ``result.json`` holds it (``block`` ""
    for the top level, ``"model"`` for the model block), the agent kinds it applies to and the
    field of :class:`EpisodeSettings` it is."""

    name: str
    block: str
    key: str
    kinds: tuple[str, ...]
    field: str = ""
    within: str = ""
    """``"wire"``: compared only between runs of one provider and API (a provider's own parameters)."""
    derive: Callable[[RunRecord], tuple[bool, object]] | None = None
    """How the setting is derived from a run record when no one field holds it."""


def setting(name: str, where: str, kinds: tuple[str, ...], *, compared: bool = True, why: str = "",
            none_means: str = "", within: str = "", derive: Callable[[RunRecord], tuple[bool, object]] | None = None) -> Any:
    """One field of :class:`EpisodeSettings`: its ``name`` in messages and pages, ``where``
    ``result.json`` records it (``"image_budget"``, ``"model.prompt_style"``), the agent kinds it
    applies to; ``compared=False`` (with ``why``) for a setting recorded and shown but not
    compared; ``none_means``: what a recorded None means (a known value, not an unknown one)."""
    if not compared and not why:
        raise ValueError(f"setting {name!r} is not compared: say why")
    return dataclasses.field(default=None, metadata={"name": name, "where": where, "kinds": kinds,
                                                     "compared": compared, "why": why, "none_means": none_means,
                                                     "within": within, "derive": derive})


EFFORT_OUTCOMES = ("sent", "partly refused", "refused", "not supported", "none asked")
"""Whether the reasoning effort asked was honoured, in the protocol's terms (any provider)."""


def effort_outcome(result: RunRecord) -> tuple[bool, object]:
    """``(recorded, outcome)``: the reasoning effort asked was ``sent`` (the provider's parameters
    for it went with every request), ``partly refused`` or ``refused`` (the service refused some or
    all of them and the run went on without), ``not supported`` (asked, but the provider has no
    parameter for it) or ``none asked``; derived from the model block, comparable across providers."""
    model = result.model
    if model is None:
        return False, None
    refused, sent = model.reasoning_effort_refused, model.reasoning_effort_sent
    if model.reasoning_effort is None:
        return True, "none asked"
    if refused:
        return True, "partly refused" if sent else "refused"
    return True, "sent" if sent else "not supported"





@dataclasses.dataclass(frozen=True)
class EpisodeSettings:
    """The one record of an episode's settings: what was asked and what was sent, each field read
    from the one place ``result.json`` records it. ``compare``, ``leaderboard``, ``report`` and the
    viewer read the settings through it (:func:`episode_settings`), and every compared field refuses
    a comparison when it differs. A new setting is one line here."""

    image_budget: Any = setting("V (image budget)", "image_budget", RUN_KINDS)
    resolution: Any = setting("resolution", "resolution", RUN_KINDS)
    tool_call_budget: Any = setting("tool-call budget", "tool_call_budget", ("reference", "nbv"))
    budget_counts: Any = setting("B counts", "budget_counts", ("model", "mcp", "human"), derive=budget_counts)
    tool_call_budget_b: Any = setting("B (tool-call budget)", "tool_call_budget", ("mcp", "human"),
                                      none_means="unlimited")
    nbv_dynamics: Any = setting("NBV dynamics", "nbv.dynamics", ("nbv",), derive=nbv_dynamics)
    nbv_env_id: Any = setting(
        "NBV env id", "nbv.env_id", ("nbv",), compared=False,
        why="NBV-v3 is NBV-v2's dynamics with the blocked observation: what an agent observes is the agent")
    nbv_walls: Any = setting("NBV walls", "nbv.walls", ("nbv",))
    nbv_wall_margin_m: Any = setting("NBV wall margin", "nbv.wall_margin_m", ("nbv",))
    nbv_mapper: Any = setting("NBV mapper", "nbv.mapper", ("nbv",), derive=nbv_mapper)
    model_call_budget: Any = setting("B (model-call budget)", "model.model_call_budget", ("model",))
    prompt_style: Any = setting("prompt style", "model.prompt_style", ("model",))
    reasoning_effort: Any = setting("reasoning effort", "model.reasoning_effort", ("model",), none_means="none sent")
    reasoning_effort_outcome: Any = setting("reasoning effort honoured", "model.reasoning_effort_outcome", ("model",),
                                            derive=effort_outcome)
    # the provider's wire parameters for the effort: one level is sent differently by each provider
    reasoning_effort_sent: Any = setting("reasoning effort sent", "model.reasoning_effort_sent", ("model",),
                                         within="wire")
    mode: Any = setting("mode", "model.mode", ("model",))
    image_history: Any = setting("image history", "model.image_history", ("model",), none_means="all images")
    image_max_side_px: Any = setting("image max side", "model.image_max_side_px", ("model",))
    reasoning_effort_source: Any = setting(
        "reasoning effort source", "model.reasoning_effort_source", ("model",), compared=False,
        why="who chose the effort (the flag or the default); the effort asked and sent are compared")
    max_output_tokens: Any = setting(
        "output-token cap", "model.max_output_tokens", ("model",), compared=False, none_means="none sent",
        why="providers' defaults differ, and a reply cut off at the cap fails the attempt")


def _setting_of(f: dataclasses.Field) -> Setting:
    block, _, key = str(f.metadata["where"]).rpartition(".")
    return Setting(str(f.metadata["name"]), block, key, tuple(f.metadata["kinds"]), f.name,
                   str(f.metadata["within"]), f.metadata["derive"])


RECORDED: tuple[Setting, ...] = tuple(_setting_of(f) for f in dataclasses.fields(EpisodeSettings))
"""Every field of :class:`EpisodeSettings`, compared or not."""

SETTINGS: tuple[Setting, ...] = tuple(_setting_of(f) for f in dataclasses.fields(EpisodeSettings)
                                      if f.metadata["compared"])
"""The protocol settings checked for every pair of evaluations: the compared fields of
:class:`EpisodeSettings` (see the module docstring)."""

NONE_MEANS: dict[str, str] = {f.metadata["where"].rpartition(".")[2]: f.metadata["none_means"]
                              for f in dataclasses.fields(EpisodeSettings) if f.metadata["none_means"]}
"""What a recorded None means, by ``result.json`` key (``image_history``: every image)."""


def episode_settings(result: RunRecord) -> dict[str, tuple[bool, object]]:
    """``{field: (recorded, value)}`` of every field of :class:`EpisodeSettings` in one run
    record (``recorded`` False where the record has no such block or key)."""
    return {s.field: _value(result, s) for s in RECORDED}


KNOWN_EVALUATE_KEYS = evaluate_keys()
"""Keys of ``evaluate.json`` this code knows: the fields of ``EvalSettings`` that write it; any
other refuses a comparison."""

KNOWN_AGENT_OPTIONS = agent_option_keys()
"""Keys of ``evaluate.json``'s ``agent_options`` this code knows: the fields of ``AgentOptions``
(``eval/running/tasks.py``); any other refuses a comparison."""


def shown_settings(result: RunRecord) -> dict[str, object]:
    """``{name: value}`` of every field of the settings record one run record holds for its
    agent kind, for pages: a None shown as what it means (``all images``), the parameters sent as
    ``none sent`` when there were none."""
    kind = _kind(result)
    shown: dict[str, object] = {}
    for s in RECORDED:
        recorded, value = _value(result, s)
        if recorded and kind in s.kinds:
            shown[s.name] = (NONE_MEANS.get(s.key, "none") if value is None
                             else "none sent" if value == {} and s.field == "reasoning_effort_sent" else value)
    return shown


def checked_settings_text() -> str:
    """One sentence listing what ``compare`` and ``leaderboard`` check (for their help)."""
    per_kind: dict[str, list[str]] = {"model": [], "reference": [], "nbv": [], "mcp": [], "all": [], "across": []}
    for s in SETTINGS:
        if set(s.kinds) == set(RUN_KINDS):
            per_kind["all"].append(s.name)
        elif s.kinds == ("reference", "nbv") or len(s.kinds) == 1 or s.kinds == ("mcp", "human"):
            per_kind[s.kinds[0]].append(s.name)
        else:
            per_kind["across"].append(s.name)
    return ("Checked for every pair, from each run's result.json and evaluate.json (never a cached "
            "report.json): the catalog version; each scene's content hash; "
            + ", ".join(per_kind["all"]) + " (every agent); "
            + ", ".join(per_kind["reference"]) + " (agents without a model); "
            + ", ".join(per_kind["nbv"]) + " (NBV agents); "
            + ", ".join(per_kind["model"]) + " (model agents); "
            + ", ".join(per_kind["mcp"]) + " (MCP clients and people); "
            + ", ".join(per_kind["across"]) + " (model agents, MCP clients and people: model calls or "
            "tool calls). A setting that does not apply to an "
            "agent's kind is not compared; one recorded on one side only, or an evaluate.json key "
            "this version does not know, refuses.")


@dataclasses.dataclass
class Identity:
    """What decides whether an evaluation may be compared: catalog version, scene content hashes,
    agent kinds, the recorded protocol settings (a sorted list when episodes differ), the
    applicable settings no episode recorded, and unknown ``evaluate.json`` keys."""

    catalog_version: str | list[str] | None
    scene_hashes: dict[str, str | None]
    kinds: tuple[str, ...]
    settings: dict[str, object]
    unrecorded: list[str]
    unknown: list[str]
    wire: str | None = None
    """The provider and API of a model run (``openai/chat_completions``): settings ``within`` the
    wire are compared only between runs that share it."""


def wire_of(results: Sequence[RunRecord]) -> str | None:
    """``provider/api_mode`` of the runs' model blocks (one value; joined when they differ)."""
    found = sorted({f"{m.provider}/{m.api_mode}" for r in results if (m := r.model) is not None})
    return ", ".join(found) if found else None


def _kind(result: RunRecord) -> str:
    """The run's kind (:data:`RUN_KINDS`) from its record: the model and ``nbv`` blocks, the MCP
    server's harness record (or, for runs written before it had one, the name the server gave
    them) and the ``human`` field."""
    if result.model is not None:
        return "model"
    if result.nbv is not None:
        return "nbv"
    if result.human is True:
        return "human"
    if (result.harness or {}).get("name") == "mcp" or result.agent == "mcp":
        return "mcp"
    return "reference"


def run_kind_of(results: Sequence[RunRecord]) -> str:
    """One kind for the runs of an evaluation (a page's row): ``model`` if any run is a model's,
    else the kind they share, else ``reference``."""
    kinds = {_kind(r) for r in results}
    if "model" in kinds:
        return "model"
    return kinds.pop() if len(kinds) == 1 else "reference"


def _value(result: RunRecord, s: Setting) -> tuple[bool, object]:
    """(recorded, value) of setting ``s`` in one run record: a field of the record or of one of its
    typed blocks (recorded wherever the block is)."""
    if s.derive is not None:
        return s.derive(result)
    holder: Any = result
    for part in s.block.split(".") if s.block else ():
        holder = getattr(holder, part, None) if dataclasses.is_dataclass(holder) else None
    if dataclasses.is_dataclass(holder) and hasattr(holder, s.key):
        return True, getattr(holder, s.key)
    return False, None


def protocol_settings(results: Sequence[RunRecord]) -> dict[str, object]:
    """``{name: value}`` of every setting recorded by the episodes it applies to (``result.json``
    contents); the value a sorted list when episodes differ."""
    return _settings(results)[0]


def _settings(results: Sequence[RunRecord]) -> tuple[dict[str, object], list[str]]:
    found: dict[str, set[str]] = defaultdict(set)
    unrecorded = []
    for s in SETTINGS:
        for r in results:
            if _kind(r) not in s.kinds:
                continue
            recorded, value = _value(r, s)
            if not recorded:
                unrecorded.append(s.name)
                break
            found[s.name].add(json.dumps(value, sort_keys=True))
    settings: dict[str, object] = {}
    for s in SETTINGS:
        if s.name in found:
            values = sorted((json.loads(v) for v in found[s.name]), key=lambda v: json.dumps(v, sort_keys=True))
            settings[s.name] = values[0] if len(values) == 1 else values
    return settings, unrecorded


def identity_of(eval_dir: str | Path, results: Sequence[RunRecord]) -> Identity:
    """The :class:`Identity` of an evaluation directory from its completed episodes' run records
    and its ``evaluate.json`` (read here, not from any cache)."""
    versions = sorted({r.catalog_version for r in results})
    version: str | list[str] | None = versions[0] if len(versions) == 1 else versions
    settings, unrecorded = _settings(results)
    recorded = EvalDir(eval_dir).settings()
    unknown = recorded.unknown() if recorded else []
    return Identity(None if version == "None" else version,
                    {r.scene_id: r.scene_content_hash for r in results},
                    tuple(sorted({_kind(r) for r in results})), settings, unrecorded, unknown, wire_of(results))


CONTROL_SETTING = "mode"
"""The setting a control run (the blind control) differs in from the runs it controls for."""


def comparability_problems(runs: Mapping[str, Identity], controls: Collection[str] = (),
                           apart: Collection[str] = ()) -> list[str]:
    """Why the runs (name -> :class:`Identity`) must not be compared or ranked together, each
    problem naming the differing setting and every run's value; empty when they are comparable.

    A setting is compared between every two runs whose kinds it applies to; unknown settings
    (recorded on one side only, or an ``evaluate.json`` key this code does not know) refuse.
    ``controls`` names control runs (blind-mode rows, which a page lists apart and never ranks with
    the others): their :data:`CONTROL_SETTING` is compared among themselves only, every other
    setting with every run. ``apart`` names runs a page lists apart by what their B counts (MCP
    clients' and people's rows beside model rows): ``B counts`` is compared on each side only."""
    problems = []
    versions = {n: r.catalog_version for n, r in runs.items()}
    if len({json.dumps(v) for v in versions.values()}) > 1:
        problems.append("catalog versions differ: " + ", ".join(f"{n}: {v}" for n, v in versions.items()))
    for n, r in runs.items():
        problems += [f"{n}: unknown setting ({k}), so it cannot be shown to agree" for k in r.unknown]
    for s in SETTINGS:
        applies = {n: r for n, r in runs.items() if set(r.kinds) & set(s.kinds)}
        if s.field == "budget_counts" and apart:     # each side of the page among itself
            problems += [p for group in ({n: r for n, r in applies.items() if (n in apart) == c}
                                         for c in (False, True)) for p in _setting_problems(s, group)]
            continue
        if s.field == CONTROL_SETTING and controls:   # the controls among themselves, the others apart
            problems += [p for group in ({n: r for n, r in applies.items() if (n in controls) == c}
                                         for c in (False, True)) for p in _setting_problems(s, group)]
            continue
        if s.within == "wire":     # compared between runs of one provider and API only
            by_wire: dict[str | None, dict[str, Identity]] = defaultdict(dict)
            for n, r in applies.items():
                by_wire[r.wire][n] = r
            problems += [p for group in by_wire.values() if len(group) >= 2 for p in _setting_problems(s, group)]
            continue
        problems += _setting_problems(s, applies)
    hashes: dict[str, dict[str, str | None]] = defaultdict(dict)
    for n, r in runs.items():
        for sid, h in r.scene_hashes.items():
            hashes[sid][n] = h
    differing = sorted(sid for sid, hs in hashes.items() if len(set(hs.values())) > 1)
    if differing:
        problems.append(f"{len(differing)} scene(s) have different content hashes, e.g. {differing[0]}: "
                        + ", ".join(f"{n}: {str(h)[:12]}" for n, h in hashes[differing[0]].items()))
    return problems


def _setting_problems(s: Setting, applies: Mapping[str, Identity]) -> list[str]:
    """Why the runs ``applies`` (all of a kind ``s`` applies to) disagree on ``s``."""
    if len(applies) < 2:
        return []
    missing = [n for n, r in applies.items() if s.name in r.unrecorded]
    if missing:
        return [f"{s.name} is unknown for {', '.join(missing)} (not recorded in every result.json), "
                "so it cannot be shown to agree: " + ", ".join(
                    f"{n}: {'not recorded' if n in missing else str(r.settings.get(s.name))}" for n, r in applies.items())]
    values = {n: r.settings.get(s.name) for n, r in applies.items()}
    if len({json.dumps(v, sort_keys=True) for v in values.values()}) > 1:
        where = f" (between runs of {next(iter(applies.values())).wire})" if s.within == "wire" else ""
        return [f"{s.name} differs{where}: " + ", ".join(f"{n}: {str(v)}" for n, v in values.items())]
    return []
