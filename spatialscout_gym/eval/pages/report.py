"""Reports of an evaluation directory (docs/protocol.md sections 6 and 9).

:func:`build_report` re-scores every finished run directory under ``DIR`` (``ground_truth.json``
+ ``predictions.json``, with :func:`~spatialscout_gym.core.scoring.score_scene`) and pools them
with :func:`~spatialscout_gym.core.scoring.aggregate`. The report dict (``DIR/report.json``)::

    {"object_micro": M, "scene_macro": M, "scenes": {key: M},   # the scorer's dict
     "categories": {category: {"num_targets", "num_submitted", "mean_iou", "gt_50"}},  # pooled
     "seeds": {"seeds": [k...], "per_seed": {k: all-target mean IoU}, "mean", "std"},
     "intervals": {"method", "n_resamples", "seed", "scenes", "figures": {figure: {"estimate", "low", "high"}}},
     "verified": {"status": "verified" | "diverged" | "not checked", "episodes": {key: status}},
     "counters": {"episodes", "tool_calls", "images", "model_calls", "cost_usd", ...},  # settings: value or "mixed"
     "failures": [{"run", "scene", "seed", "error", "error_type"}], "settings": {...},
     "episodes": {"completed", "failed", "total", "completed_rate", "failure_rate",   # rates in [0, 1]
                  "attempts", "failed_attempts", "attempt_failure_rate", "end_reasons": {reason: n}},
     "failed_attempts_spend": {"episodes", "calls", "cost_usd", ...},   # failed attempts, redone or not
     "catalog_version": str | None, "scene_hashes": {scene_id: sha256},
     "scene_sources": {scene_id: {"source": "catalog" | "procedural" | "spec file" | "imported", "content_hash"}},
     "scorer": {key: {"metric_version", "compat", "min_side_m", "lambda_m", "Q", "H", "M", "N"}},
     "claimed": {field path: [distinct values]},   # what the runs say of themselves, no trace proves
     "schema_version": 1}

:func:`build_report` returns it as its record type,
:class:`~spatialscout_gym.core.eval_records.ReportRecord` (a field built without a place there fails
the builder), and :func:`write_report` writes that record's JSON form;
:func:`~spatialscout_gym.core.eval_records.load_report` reads the file back strictly.

``key`` is the scene id when every scene ran once, else ``<scene_id>/seed_<k>``. Failed episodes
are listed in ``failures`` and left out of every aggregate (docs/protocol.md section 5); the
``episodes`` block counts completed and failed episodes with their rates (paper Appendix A,
"Attempt accounting": an episode is completed when its latest attempt ended by finish_mapping, a
response without a tool call or an exhausted budget; it is failed when that attempt hit a service
or runtime failure), and every attempt including the failed ones kept under
``seed_<k>/attempts/`` (layout: :mod:`spatialscout_gym.eval.running.evaluate`). The seed spread
is the standard deviation across seeds (``ddof=1``; 0 for one seed) of the object-micro
all-target mean IoU of each seed's scenes.

:func:`compare_reports` puts several evaluations side by side, every pair (or every run against a
baseline) paired, and refuses ones that are not comparable (catalog version, scene contents,
protocol settings: :mod:`~spatialscout_gym.eval.settings_check`) unless forced.
"""

from __future__ import annotations

import dataclasses
import html
import json
import os
import re
from collections import defaultdict
from pathlib import Path
from typing import Any, Sequence


from spatialscout_gym.core.errors import SpatialScoutError
from spatialscout_gym.core.files import load_ground_truth
from spatialscout_gym.core.eval_records import REPORT_FILE, FailureNote, ReportRecord, parse_report
from spatialscout_gym.core.records import ModelFigures, RunRecord, claimed_values
from spatialscout_gym.core.scoring import DEFAULT_LAMBDA_M, aggregate, score_scene
from spatialscout_gym.core.table import format_table
from spatialscout_gym.eval.pages.exploration import scene_exploration_lines, scene_exploration_summary
from spatialscout_gym.eval.verification.identity import counted_once_keys
from spatialscout_gym.eval.verification.verify import TOOL_SIDE_ONLY, verification_status
from spatialscout_gym.eval.settings_check import (NONE_MEANS, RECORDED, comparability_problems, identity_of,
                                                  protocol_settings)
from spatialscout_gym.eval.analysis.stats import (FIGURES, PAIRED_METHOD, SEED, bootstrap_intervals, iqm_method_note,
                                          iqm_summary, method_note, min_p_value, min_scenes_to_separate, paired_iqm, per_scene_differences,
                                          paired_comparison, seed_spread, separated)
from spatialscout_gym.eval.layout import (EvalDir, accepted_positions, check_run_scene, publish_json, publish_text,
                                          scene_sources, seed_dir_name, spec_file_note)

__all__ = ["ScoredRun", "find_runs", "find_failures", "failed_attempt_results", "episode_counts", "build_report", "write_report", "format_report_md",
           "compare_reports", "CompareError", "REPORT_JSON", "REPORT_MD"]

REPORT_JSON = REPORT_FILE
REPORT_MD = "report.md"
_NOT_SUMMED = {"images_left", "calls_left", "done", "end_reason"}
_COUNTER_ALIASES = ("images", "calls")
"""Keys of ``counters`` that repeat another one (``images`` = ``images_used``; ``calls`` =
``model_calls`` or ``tool_calls``): kept in ``report.json``, not shown twice in the tables."""


SETTINGS_KEYS = tuple(s.key for s in RECORDED if s.block == "model")
"""Keys of a ``result.json`` model block that are settings, not counts (the model fields of the
settings record, :class:`~spatialscout_gym.eval.settings_check.EpisodeSettings`): never summed."""


def effort_label(models: Sequence[ModelFigures | None]) -> str | None:
    """What reached the service as reasoning effort over the ``model`` blocks of an evaluation's
    run records: the effort asked for (``xhigh``), followed by what the service refused
    (docs/protocol.md section 10.2): ``xhigh refused, none sent`` when no effort parameter was sent
    after the refusal, ``xhigh, output_config refused`` when part of it was, with ``in k of n
    episodes`` when not every episode was refused. None when no effort was asked for."""
    given = [m for m in models if m is not None]
    efforts = sorted({m.reasoning_effort for m in given if m.reasoning_effort})
    if not efforts:
        return None
    asked = ", ".join(efforts)
    refused = [m for m in given if m.reasoning_effort_refused]
    if not refused:
        return asked
    params = sorted({str(p) for m in refused for p in m.reasoning_effort_refused})
    # the parameters still sent after the refusals (records written before they were recorded: none)
    none_sent = not any(m.reasoning_effort_sent for m in refused)
    label = f"{asked} refused, none sent" if none_sent else f"{asked}, {', '.join(params)} refused"
    return label if len(refused) == len(given) else f"{label} in {len(refused)} of {len(given)} episodes"


_NONE_MEANS = NONE_MEANS
"""What a recorded None means for a setting of the model block: a known value, not an unknown one
(every image kept in the conversation, no output cap sent, no effort sent); from the settings record."""


def shown_counters(counters: dict) -> dict:
    """``counters`` without the aliases, for display (each figure once). A setting recorded as None
    is shown as what None means for it (:data:`_NONE_MEANS`); any other None, such as the cost of
    an unpriced model, as ``"unknown"``; the parameters sent (an object) as ``name: value`` pairs,
    ``none sent`` when empty."""
    return {k: (_NONE_MEANS.get(k, "unknown") if v is None else _object_text(v) if isinstance(v, dict) else v)
            for k, v in counters.items() if k not in _COUNTER_ALIASES}


def _object_text(value: dict) -> str:
    return ", ".join(f"{k}: {json.dumps(v, sort_keys=True)}" for k, v in sorted(value.items())) or "none sent"


class CompareError(SpatialScoutError, ValueError):
    """Evaluations that must not be compared (different catalog versions or scene contents)."""


@dataclasses.dataclass
class ScoredRun:
    """One finished run directory: its path, its run record and the re-scored scene."""

    run_dir: Path
    record: RunRecord
    score: Any  # SceneScore
    categories: list[str]

    @property
    def scene_id(self) -> str:
        return self.record.scene_id

    @property
    def seed(self) -> int:
        return self.record.seed


def find_runs(out_dir: str | os.PathLike, lam: float = DEFAULT_LAMBDA_M) -> list[ScoredRun]:
    """The completed attempt of every episode of ``DIR`` (or ``DIR`` itself when it is a run
    directory; :class:`~spatialscout_gym.eval.layout.EvalDir`), re-scored, sorted by (scene id, seed)."""
    records = []
    ev = EvalDir(out_dir)
    ev.check_identities()
    completed = ev.completed()
    once = counted_once_keys(ev, completed)
    for key, a in completed:
        if key in once:
            continue        # a repeated scene's further seeds: one conversation counts once
        check_run_scene(a.run_dir, a.record)
        gt = load_ground_truth(a.run_dir)
        score = score_scene(gt, accepted_positions(a.run_dir, gt), lam=lam)
        records.append(ScoredRun(a.run_dir, a.record, score, [t.category for t in gt.targets]))
    return sorted(records, key=lambda r: (r.scene_id, r.seed))


def find_failures(out_dir: str | os.PathLike) -> list[dict]:
    """Failed episodes as ``{"run", "scene", "seed", "error"}``: episodes with a failure record and
    no completed attempt (:meth:`EvalDir.failed`), each with its latest failure."""
    return [f for e in EvalDir(out_dir).failed() if (f := e.failure) is not None]   # failed(): all have one


def failed_attempt_results(out_dir: str | os.PathLike) -> list[RunRecord | FailureNote]:
    """Every failure record (``result.json`` of a failed attempt, or a failure note), redone or
    not. Their model calls, tokens and cost were spent even though their scores count nowhere."""
    return EvalDir(out_dir).failed_results()


def episode_counts(out_dir: str | os.PathLike, records: Sequence[ScoredRun] | None = None) -> dict:
    """Completed and failed episodes with rates, attempts, and how completed episodes ended.

    ``completed``: episodes with a completed attempt; ``failed``: episodes whose attempts all
    failed or that could not start (:func:`find_failures`); rates are over ``total = completed +
    failed``. ``attempts`` counts every attempt (completed episodes plus every failure record,
    redone or not); ``end_reasons`` counts how the completed episodes ended (finish_mapping,
    no_tool_call, model_call_budget, tool_call_budget, agent_stopped).
    """
    out = Path(out_dir)
    records = find_runs(out) if records is None else records
    failed = len(find_failures(out))
    completed = len(records)
    total = completed + failed
    failed_attempts = len(failed_attempt_results(out))
    attempts = completed + failed_attempts
    reasons: dict[str, int] = defaultdict(int)
    for r in records:
        reasons[str(r.record.end_reason)] += 1
    return {"completed": completed, "failed": failed, "total": total,
            "completed_rate": completed / total if total else 0.0,
            "failure_rate": failed / total if total else 0.0,
            "attempts": attempts, "failed_attempts": failed_attempts,
            "attempt_failure_rate": failed_attempts / attempts if attempts else 0.0,
            "end_reasons": dict(sorted(reasons.items()))}


def _numbers(block: Any) -> dict[str, float]:
    """The numeric fields of a typed block (a bool is no number; None, text and nested blocks are
    left out)."""
    if block is None:
        return {}
    return {f.name: v for f in dataclasses.fields(block)
            if isinstance(v := getattr(block, f.name), (int, float)) and not isinstance(v, bool)}


def _counters(results: Sequence[RunRecord | FailureNote]) -> dict:
    """Totals of every numeric field of the episodes' run records: ``counters`` (tool calls,
    images) and the VLM agent's ``model`` block (model calls, HTTP attempts, tokens, cost, and its
    ``usage``). A failure note (no run directory) counts as an episode with nothing spent.

    Settings of the model block (``SETTINGS_KEYS``: image side, image history, output-token cap,
    call budget) are not summed: each is shown as its value, or ``"mixed"`` when episodes differ.
    ``cost_usd`` is None (unknown) when any model episode has no price.
    """
    totals: dict[str, float] = defaultdict(float)
    settings: dict[str, set] = defaultdict(set)
    unknown_cost = False
    records = [r for r in results if isinstance(r, RunRecord)]
    models = [r.model for r in records]
    for result in records:
        model = result.model
        if model is not None:
            unknown_cost |= model.cost_usd is None
            for k in SETTINGS_KEYS:
                if hasattr(model, k):   # a derived setting (the effort's outcome) is no field of the block
                    settings[k].add(json.dumps(getattr(model, k)))
            if model.reasoning_effort_refused:   # the service refused the effort: it ran without
                totals["reasoning_effort_refused_episodes"] += 1
        for source in (_numbers(result.counters), _numbers(model), model.usage if model is not None else {}):
            for k, v in source.items():
                if k not in _NOT_SUMMED and k not in SETTINGS_KEYS:
                    totals[k] += v
    out: dict[str, Any] = {"episodes": len(results)}
    out.update({k: (int(v) if float(v).is_integer() else float(v)) for k, v in sorted(totals.items())})
    out["images"] = out.get("images_used", 0)
    out.setdefault("model_calls", 0)
    out["calls"] = out["model_calls"] or out.get("tool_calls", 0)
    out.setdefault("cost_usd", 0.0)
    if unknown_cost:
        out["cost_usd"] = None
    for k, vals in sorted(settings.items()):
        out[k] = json.loads(next(iter(vals))) if len(vals) == 1 else "mixed"
    if out.get("reasoning_effort_refused_episodes"):   # beside the setting: what reached the service
        out["reasoning_effort_sent"] = effort_label(models)
    return out


EXPLORATION_LABELS = {"known_occupancy_fraction": "known occupancy (%)", "explored_floor_m2": "explored floor (m^2)",
                      "path_length_m": "path (m)", "blocked_moves": "blocked moves", "black_frames": "black frames"}
"""The NBV exploration metrics (``result.json``: ``nbv.exploration``) and their column labels."""


def exploration_summary(results: Sequence[RunRecord]) -> dict | None:
    """Mean per episode of each NBV exploration metric the agents claim (their ``nbv`` block's
    ``exploration``) over the episodes that record them (``{"episodes": n, metric: mean}``); None
    when none does (not an NBV run)."""
    blocks = [r.nbv.exploration for r in results if r.nbv is not None and r.nbv.exploration is not None]
    if not blocks:
        return None
    return {"episodes": len(blocks), **{k: sum(float(getattr(b, k)) for b in blocks) / len(blocks)
                                        for k in EXPLORATION_LABELS}}


def exploration_lines(summaries: dict[str, dict | None]) -> list[str]:
    """Markdown table: one row per run with exploration metrics (means per episode); [] when none."""
    rows = {n: e for n, e in summaries.items() if e}
    if not rows:
        return []
    lines = ["## Exploration (NBV agents, mean per episode)", "",
             "Claimed: the figures the agent measured with the env's own metric code and wrote in "
             "`result.json`'s `nbv` block (known occupancy of a fixed 16 x 16 x 4 m grid, explored floor "
             "from a 32 x 32 pixel sample); `verify` holds path and blocked moves to the trace. The figures "
             "derived from the trace are under \"Exploration of the scene\".", "",
             "| run | episodes | " + " | ".join(EXPLORATION_LABELS.values()) + " |",
             "|---|---|" + "---|" * len(EXPLORATION_LABELS)]
    for n, e in rows.items():
        cells = [f"{100 * e[k]:.1f}" if k == "known_occupancy_fraction" else f"{e[k]:.2f}" for k in EXPLORATION_LABELS]
        lines.append(f"| {md(n)} | {e['episodes']} | " + " | ".join(cells) + " |")
    return lines + [""]


def _categories(records: Sequence[ScoredRun]) -> dict:
    acc: dict[str, list[float]] = defaultdict(lambda: [0, 0, 0.0, 0])
    for r in records:
        hit50 = r.score.hits[1]
        for i, cat in enumerate(r.categories):
            a = acc[cat]
            a[0] += 1
            a[1] += int(r.score.matched_id[i] is not None)
            a[2] += float(r.score.iou[i])
            a[3] += int(hit50[i])
    return {cat: {"num_targets": n, "num_submitted": m, "mean_iou": q / n, "gt_50": h / n}
            for cat, (n, m, q, h) in sorted(acc.items(), key=lambda kv: (-kv[1][0], kv[0]))}


def cells(records: Sequence[ScoredRun]) -> dict:
    """``{(scene id, seed): SceneScore}`` of run records (the unit of :mod:`~spatialscout_gym.eval.analysis.stats`)."""
    return {(r.scene_id, r.seed): r.score for r in records}


def build_report(out_dir: str | os.PathLike, lam: float = DEFAULT_LAMBDA_M) -> ReportRecord:
    """The report of an evaluation directory (see the module docstring) as its record type: a
    field built here without a place in :class:`~spatialscout_gym.core.eval_records.ReportRecord`
    fails here, not in a reader.

    Raises
    ------
    FileNotFoundError
        ``DIR`` holds no finished run directory and no failed one.

    An evaluation whose every episode failed gets a report of its failures alone: ``object_micro``
    and ``scene_macro`` None (nothing to score), the failures, the episode counts and the spend.
    """
    out = Path(out_dir)
    fields = _report_fields(out, lam)
    return parse_report(json.loads(json.dumps(fields, allow_nan=False)), str(out / REPORT_JSON))   # its JSON form


def _report_fields(out: Path, lam: float) -> dict:
    """The report's fields, before they are held to the record type."""
    records = find_runs(out, lam)
    if not records and find_failures(out):
        return _failures_only_report(out, lam)
    if not records:
        raise FileNotFoundError(f"{out} holds no finished run directory (<scene>/seed_<k>/result.json); "
                                f"run `spatialscout evaluate --out {out} ...` first")
    once = len({r.scene_id for r in records}) == len(records)
    scores = [dataclasses.replace(r.score, scene_id=r.scene_id if once else f"{r.scene_id}/{seed_dir_name(r.seed)}")
              for r in records]
    report = aggregate(scores, lam)
    versions = sorted({r.record.catalog_version for r in records})
    report.update({
        "lambda_m": float(lam),
        "agent": sorted({r.record.agent for r in records}),
        "settings": _settings_json(out),
        "categories": _categories(records),
        "seeds": seed_spread(((r.seed, r.score) for r in records), lam),
        "intervals": bootstrap_intervals(cells(records)),
        "verified": verification_status(out),
        "counters": _counters([r.record for r in records]),
        "failed_attempts_spend": _counters(failed_attempt_results(out)),
        "failures": find_failures(out),
        "episodes": episode_counts(out, records),
        "scorer": {sc.scene_id: sc.record(lam) for sc in scores},
        "catalog_version": versions[0] if len(versions) == 1 else versions,
        "scene_hashes": {r.scene_id: r.record.scene_content_hash for r in records},
        "scene_sources": scene_sources(EvalDir(out)),
        "protocol_settings": protocol_settings([r.record for r in records]),
        "exploration": exploration_summary([r.record for r in records]),
        "exploration_scene": scene_exploration_summary([r.record for r in records]),
        "cost_cap": cost_cap_state(out),
        "claimed": claimed_summary([r.record for r in records]),
    })
    if report["catalog_version"] == "None":
        report["catalog_version"] = None
    return report


def claimed_summary(records: Sequence[RunRecord]) -> dict[str, list[Any]]:
    """``{dotted field path: its distinct values}`` of the claimed fields of the episodes' run
    records (:func:`~spatialscout_gym.core.records.claimed_values`): what the run says of itself
    and no trace proves (the agent's name, the attempt number, an NBV run's block, the Ray node)."""
    found: dict[str, dict[str, Any]] = defaultdict(dict)

    def add(path: str, value: Any) -> None:
        if isinstance(value, dict) and value:      # a claimed block: each of its fields
            for k, v in value.items():
                add(f"{path}.{k}", v)
        else:
            found[path][json.dumps(value, sort_keys=True)] = value

    for r in records:
        for path, value in claimed_values(r).items():
            add(path, value)
    return {path: [v for _, v in sorted(values.items())] for path, values in sorted(found.items())}


def _claimed_lines(claimed: dict[str, list[Any]]) -> list[str]:
    """The report's line of claimed fields (each value shortened)."""
    if not claimed:
        return []
    def shown(v: Any) -> str:
        text = v if isinstance(v, str) else json.dumps(v, sort_keys=True)
        return text if len(text) <= 60 else text[:57] + "..."
    parts = [f"{md(path)} {md(', '.join(shown(v) for v in values))}" if len(values) <= 3
             else f"{md(path)} ({len(values)} values)" for path, values in claimed.items()]
    return ["Claimed by the runs, not derived from their traces (`verify` cannot prove these): "
            + "; ".join(parts) + ".", ""]


def _settings_json(out: Path) -> dict | None:
    """``evaluate.json`` as the report shows it (None when absent)."""
    settings = EvalDir(out).settings()
    return settings.to_dict() if settings else None


def _failures_only_report(out: Path, lam: float) -> dict:
    """The report of an evaluation with failed episodes and no completed one (see :func:`build_report`)."""
    failed = failed_attempt_results(out)
    return {"object_micro": None, "scene_macro": None, "scenes": {}, "lambda_m": float(lam),
            "agent": sorted({r.agent for r in failed if isinstance(r, RunRecord)}),
            "settings": _settings_json(out), "categories": {},
            "seeds": {"seeds": [], "per_seed": {}, "mean": None, "std": None}, "intervals": None,
            "verified": verification_status(out), "counters": _counters([]),
            "failed_attempts_spend": _counters(failed), "failures": find_failures(out),
            "episodes": episode_counts(out, []), "scorer": {}, "catalog_version": None, "scene_hashes": {},
            "protocol_settings": {}, "cost_cap": cost_cap_state(out)}


def cost_cap_state(out: Path) -> dict | None:
    """``{"usd", "spent", "reached", "capped_episodes"}`` of an evaluation run with ``--max-cost-usd``
    (the cap its latest run recorded in ``evaluate.json``, the ledger's total, whether the total
    reached the cap, the failed episodes that ended at it); None without a cap. A ledger that
    cannot be read is ``spent`` None, not reached."""
    from spatialscout_gym.conversation.spend import SPEND_FILE, CostCapReached, SpendLedgerError, read_spend
    settings = EvalDir(out).settings()
    cap = settings.option("max_cost_usd") if settings else None
    if cap is None:
        return None
    try:
        spent = read_spend(out / SPEND_FILE)
    except SpendLedgerError:
        spent = None
    capped = [f["run"] for f in find_failures(out) if f.get("error_type") == CostCapReached.__name__]
    return {"usd": float(cap), "spent": spent, "reached": spent is not None and spent >= cap,
            "capped_episodes": capped}


def _pct(x: float) -> str:
    return f"{100 * x:.2f}"


def fmt_interval(fig: dict) -> str:
    """``45.20 [40.10, 50.30]`` (percent) of an interval dict; the estimate alone without bounds."""
    if fig.get("low") is None:
        return f"{_pct(fig['estimate'])} [-]"
    return f"{_pct(fig['estimate'])} [{_pct(fig['low'])}, {_pct(fig['high'])}]"


def interval_lines(iv: dict) -> list[str]:
    """Markdown table of every Table-3 figure with its 95% interval (object-micro, scene-macro)."""
    names = [f[len("object_micro."):] for f in FIGURES if f.startswith("object_micro.")]
    lines = [f"## Table 3 with 95% intervals over {iv['scenes']} scenes (%)", "",
             method_note(iv["n_resamples"]), "", "| figure | object-micro | scene-macro |", "|---|---|---|"]
    for n in names:
        lines.append(f"| {n} | {fmt_interval(iv['figures']['object_micro.' + n])} | "
                     f"{fmt_interval(iv['figures']['scene_macro.' + n])} |")
    return lines + [""]


def format_report_md(report: ReportRecord, title: str = "SpatialScout evaluation") -> str:
    """Markdown: the Table-3 headline (object-micro and scene-macro), seeds, counters, failures,
    the per-category table and the per-scene table."""
    c = report.counters
    s = report.seeds
    e = report.episodes
    catalog = "- (no episode completed)" if report.catalog_version is None else md(report.catalog_version)
    lines = [f"# {md(title)}", "",
             f"agent: {md(', '.join(report.agent))}; catalog version: {catalog}; "
             f"episodes: {e.completed} completed, {e.failed} failed "
             f"(failures are left out of every aggregate)", ""]
    note = spec_file_note(report.scene_sources or {})
    if note:
        lines += [md(note) + ".", ""]
    v = report.verified
    if v.get("missing"):
        miss = v["missing"]
        lines += [f"**{e.completed} of {v['planned']} planned episodes completed**: {len(miss)} planned "
                  f"episode(s) have no result ({md(', '.join(miss[:10]))}{', ...' if len(miss) > 10 else ''}); "
                  "every aggregate below is over the completed ones only.", ""]
    lines += cost_cap_lines(report)
    if v:
        lines += _verified_lines(v)
    lines += _claimed_lines(report.claimed or {})
    lines += [f"Completed {e.completed} of {e.total} episodes ({_pct(e.completed_rate)}%), failed "
              f"{e.failed} ({_pct(e.failure_rate)}%); attempts {e.attempts}, of which "
              f"{e.failed_attempts} failed ({_pct(e.attempt_failure_rate)}%). Completed episodes "
              "ended by: " + (", ".join(f"{md(k)} {n}" for k, n in e.end_reasons.items()) or "-") + ".", ""]
    if report.object_micro is None and (report.cost_cap or {}).get("reached"):
        lines += ["**No episode completed** before the cap: nothing to score; the failed attempts and what "
                  "they spent are below.", ""]
        lines += _spend_and_failure_lines(report)
        return "\n".join(lines)
    if report.object_micro is None:   # every episode failed: the failures are the report
        lines += ["**No episode completed**: nothing to score. Every episode failed; the failures and what "
                  "they spent are below. Fix the cause and rerun the same command to resume.", ""]
        lines += _spend_and_failure_lines(report)
        return "\n".join(lines)
    lines += [
             "## Table 3 (%, object-micro is the headline)", "", "```",
             format_table({"object-micro": report.object_micro, "scene-macro": report.scene_macro or {}}),
             "```", ""]
    if report.intervals:
        lines += interval_lines(report.intervals)
    if len(s.seeds) > 1 and s.mean is not None and s.std is not None:
        lines += [f"Seeds {s.seeds}: object-micro all-target mean IoU {_pct(s.mean)}% "
                  f"+- {_pct(s.std)}% (std across seeds); per seed "
                  + ", ".join(f"{k}: {_pct(x)}%" for k, x in s.per_seed.items()), ""]
    lines += exploration_lines({", ".join(report.agent): report.exploration})
    lines += scene_exploration_lines({md(", ".join(report.agent)): report.exploration_scene})
    lines += ["## Counters", "", "| counter | total |", "|---|---|"]
    lines += [f"| {md(k)} | {x:.4g} |" if isinstance(x, float) else f"| {md(k)} | {md(x)} |"
              for k, x in shown_counters(c).items()]
    lines.append("")
    if c.get("reasoning_effort_refused_episodes"):
        n = c["reasoning_effort_refused_episodes"]
        lines += [f"Reasoning effort: the service refused the effort parameter in {n} episode"
                  f"{'' if n == 1 else 's'}, which ran without it after the first request (each run's `harness.json`, `reasoning`; docs/protocol.md section 10.2).", ""]
    if c.get("rate_limit_waits"):
        lines += [f"Rate limits: the completed episodes waited {c['rate_limit_waits']} times, "
                  f"{c.get('rate_limit_wait_s', 0):.4g} s in all (HTTP 429 and its Retry-After, the "
                  f"requests- and tokens-per-minute limits; each wait in the episode's `result.json`, "
                  f"`model.waits`).", ""]
    lines += _spend_and_failure_lines(report)
    lines += ["## Per category (pooled over scenes)", "",
              "| category | targets | submitted | mean IoU (%) | IoU > 0.5 (%) |", "|---|---|---|---|---|"]
    lines += [f"| {md(k)} | {x['num_targets']} | {x['num_submitted']} | {_pct(x['mean_iou'])} | {_pct(x['gt_50'])} |"
              for k, x in report.categories.items()]
    lines += ["", "## Per scene", "", *code_block(format_table({one_line(k): x for k, x in report.scenes.items()})), ""]
    return "\n".join(lines)


def cost_cap_lines(report: ReportRecord) -> list[str]:
    """The line of a run stopped at its ``--max-cost-usd`` (nothing when the cap was not reached)."""
    cap = report.cost_cap or {}
    if not cap.get("reached"):
        return []
    missing, capped = len(report.verified.get("missing") or []), len(cap.get("capped_episodes") or [])
    return [f"**Stopped at the cap**: the spend reached --max-cost-usd {cap['usd']:g} (${cap['spent']:.4f} "
            f"spent); {capped} episode(s) ended at the cap (failed, kept with their trace) and {missing} planned "
            "episode(s) were not started (missing). Rerun with a higher --max-cost-usd to resume.", ""]


def _verified_lines(v: dict) -> list[str]:
    """The verification line: the completed episodes' verdict; planned episodes with no result are
    counted as missing, not as diverged (``spatialscout verify DIR`` calls them missing too)."""
    checked = {k: x for k, x in v["episodes"].items() if x != "missing"}
    missing = len(v.get("missing") or [k for k, x in v["episodes"].items() if x == "missing"])
    tail = f"; {missing} planned episode(s) missing (no result: not run)" if missing else ""
    if not checked:
        return [f"Verified: nothing to re-execute (no completed episode){tail}.", ""]
    vals = set(checked.values())
    # verify's rule over the completed episodes, the missing ones aside
    status = ("verified" if vals <= {"verified"} else "repeated" if vals <= {"verified", "repeated"}
              else TOOL_SIDE_ONLY if vals <= {"verified", "repeated", TOOL_SIDE_ONLY} else "diverged")
    n_ok = sum(x in ("verified", "repeated") for x in checked.values())
    return [f"Verified: **{md(status)}** ({n_ok} of {len(checked)} completed episodes re-executed "
            f"by this report and matching their records, {v.get('seconds_per_episode', 0.0):.2f} s per "
            f"episode, {v.get('cached', 0)} verdict(s) from the cache; a verify.json in the directory is "
            f"not trusted; `spatialscout verify DIR` names every difference){tail}.", ""]


def _spend_and_failure_lines(report: ReportRecord) -> list[str]:
    """What failed attempts spent, and the failed episodes with their errors."""
    lines: list[str] = []
    spent = report.failed_attempts_spend
    if spent.get("episodes"):
        lines += [f"Failed attempts (scored nowhere, but spent): {spent['episodes']} episodes, "
                  f"{spent['calls']} calls, {spent.get('images', 0)} images, "
                  + ("cost unknown (no price)." if spent["cost_usd"] is None else f"${spent['cost_usd']:.4g}."), ""]
    if report.failures:
        lines += ["## Failed episodes (left out of aggregates)", "", "| run | error |", "|---|---|"]
        lines += [f"| {md(f['run'])} | {md(str(f['error'])[:200])} |" for f in report.failures]
        lines.append("")
    return lines


def write_report(out_dir: str | os.PathLike, lam: float = DEFAULT_LAMBDA_M) -> ReportRecord:
    """Build the report and write ``DIR/report.json`` (through its record type,
    :class:`~spatialscout_gym.core.eval_records.ReportRecord`: a field without a place there fails
    here, not in a reader) and ``DIR/report.md``; return the record."""
    out = Path(out_dir)
    report = build_report(out, lam)
    publish_json(out / REPORT_JSON, report.to_json())
    publish_text(out / REPORT_MD, format_report_md(report, f"SpatialScout evaluation: {out.name}"))
    return report


_MD_LINK = re.compile(r"(\]|!)([(\[])")


def md(text: Any) -> str:
    """``text`` safe inside a Markdown table cell or line: markup escaped (``&``, ``<``, ``>``:
    model names and replies may carry some; quotes stay plain text, as a terminal shows them),
    backslashes and backquotes escaped, and the bracket that would open a link's target or an image
    (``](``, ``][``, ``![``) escaped, so a category such as ``[x](javascript:...)`` stays text, never
    a link; pipes and newlines neutralised."""
    s = html.escape(str(text), quote=False).replace("\\", "\\\\").replace("`", "\\`")
    return _MD_LINK.sub(r"\1\\\2", s).replace("|", "&#124;").replace("\n", " ")


def one_line(text: Any) -> str:
    """``text`` on one line for a code block: every character that is not printable (newlines,
    tabs, line and paragraph separators, controls) written as its escape (``\\n``), so a scene id
    cannot start a line of its own, and so cannot close the block."""
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in str(text))


def code_block(text: str) -> list[str]:
    """``text`` fenced as a Markdown code block whose fence is longer than any run of backquotes in
    it (CommonMark closes a block only with a fence at least as long): nothing inside renders."""
    runs = [len(m) for m in re.findall(r"`+", text)]
    fence = "`" * max(3, max(runs, default=0) + 1)
    return [fence, text, fence]


HEADLINE: tuple[tuple[str, str], ...] = (
    ("object-micro all-target mean IoU", "object_micro.all.mean_iou"),
    ("object-micro IoU > 0.5", "object_micro.all.gt_50"),
    ("object-micro submitted mean IoU", "object_micro.submitted.mean_iou"),
    ("object-micro coverage", "object_micro.coverage"),
    ("scene-macro all-target mean IoU", "scene_macro.all.mean_iou"),
)
"""The headline figures of a paired comparison."""


def _points(x: float) -> str:
    """A difference in percentage points with its sign (no ``-0.00``)."""
    return f"{round(100 * x, 2) + 0.0:+.2f}"


def paired_lines(name_a: str, name_b: str, paired: dict) -> list[str]:
    """Markdown of :func:`~spatialscout_gym.eval.analysis.stats.paired_comparison` (B - A, points)."""
    lines = [f"## Paired: {md(name_b)} - {md(name_a)} on {len(paired['cells'])} shared (scene, seed) cells, "
             f"{paired['scenes']} scenes", ""]
    if not paired["cells"]:
        return lines + ["No (scene, seed) cell is shared: nothing to pair.", ""]
    need = min_scenes_to_separate()
    if 2 <= paired["scenes"] < need:
        lines += [f"**Too few scenes to separate:** with {paired['scenes']} shared scenes the exact paired "
                  f"permutation test cannot give p below {min_p_value(paired['scenes']):.3g}, so it cannot "
                  f"separate two agents at p < 0.05 whatever the difference; compare on {need} or more "
                  "scenes.", ""]
    lines += [f"95% intervals: {PAIRED_METHOD}, {paired['n_resamples']} resamples, seed {SEED}. p: two-sided "
              "paired permutation test over scenes "
              "(scipy.stats.permutation_test, the two runs swapped within a scene). Separated: the interval "
              "excludes 0 and p < 0.05.", "",
              f"| figure | {md(name_a)} % | {md(name_b)} % | difference (points) [95% CI] | p | separated at 95% |",
              "|---|---|---|---|---|---|"]
    for label, key in HEADLINE:
        f = paired["figures"][key]
        ci = "[-]" if f["low"] is None else f"[{_points(f['low'])}, {_points(f['high'])}]"
        p = "-" if f["p_value"] is None else f"{f['p_value']:.3g}"
        sep = "-" if f["low"] is None else ("yes" if separated(f) else "no")
        lines.append(f"| {label} | {_pct(f['a'])} | {_pct(f['b'])} | {_points(f['difference'])} {ci} | {p} | {sep} |")
    lines += ["", "Cells used: " + ", ".join(f"{md(sc)}/{seed_dir_name(k)}" for sc, k in paired["cells"]), ""]
    return lines


def iqm_lines(iqms: dict[str, dict]) -> list[str]:
    """Markdown: each run's interquartile mean (%) with its two-stage interval (scenes, then seeds)."""
    lines = ["## Interquartile mean per run (%)", "", iqm_method_note(), "",
             "| run | episodes | scenes | IQM [95% CI] |", "|---|---|---|---|"]
    for n, q in iqms.items():
        cell = "-" if q["iqm"] is None else fmt_interval({"estimate": q["iqm"], "low": q["low"], "high": q["high"]})
        lines.append(f"| {md(n)} | {q['episodes']} | {q['scenes']} | {cell} |")
    return lines + [""]


def per_scene_lines(name_a: str, name_b: str, q: dict, rows: list[dict]) -> list[str]:
    """Markdown: the IQM difference of a pair and its per-scene differences (points)."""
    lines = []
    if q["difference"] is not None:
        ci = "[-]" if q["low"] is None else f"[{_points(q['low'])}, {_points(q['high'])}]"
        lines += [f"IQM (two-stage bootstrap: scenes, then seeds): {md(name_a)} {_pct(q['a'])}%, "
                  f"{md(name_b)} {_pct(q['b'])}%, difference {_points(q['difference'])} points {ci}.", ""]
    lines += [f"Per scene (mean over shared seeds of the episodes' all-target mean IoU, %; {md(name_b)} - "
              f"{md(name_a)} in points):", "", f"| scene | seeds | mean {md(name_a)} | mean {md(name_b)} | difference |",
              "|---|---|---|---|---|"]
    lines += [f"| {md(r['scene'])} | {r['seeds']} | {_pct(r['a'])} | {_pct(r['b'])} | {_points(r['difference'])} |"
              for r in rows]
    return lines + [""]


def compare_pairs(names: Sequence[str], baseline: str | None = None) -> list[tuple[str, str]]:
    """The (A, B) pairs ``compare`` shows: every run against ``baseline`` when one is named, else
    every pair in the order given (two runs: the one pair)."""
    if baseline is not None:
        return [(baseline, n) for n in names if n != baseline]
    return [(a, b) for i, a in enumerate(names) for b in names[i + 1:]]


def compare_reports(dirs: Sequence[str | os.PathLike], *, force: bool = False,
                    baseline: str | os.PathLike | None = None) -> tuple[str, dict]:
    """Several evaluations side by side, every pair (or every run against a baseline) paired.

    Parameters
    ----------
    dirs : sequence of path
        Evaluation directories. Everything is computed from their run directories (a
        ``report.json`` they carry is not read: it could be stale or edited).
    force : bool
        Compare even across catalog versions, differing scene hashes or protocol settings
        (:func:`~spatialscout_gym.eval.settings_check.comparability_problems`); the text says so.
    baseline : path, optional
        Pair every other run with this one (added first when not among ``dirs``); without it,
        every pair of runs is compared.

    Returns
    -------
    text : str
        Markdown: the completed and failed episode counts per run (paper Appendix A: comparisons
        report the completed count for each model), object-micro and scene-macro Table-3 rows per
        run with 95% intervals, each run's interquartile mean with a 95% interval over scenes and
        the seeds within them, then for every pair the difference B - A of each headline figure on
        the (scene, seed) cells both scored (interval, permutation p-value, the cells named), the IQM
        difference and a per-scene table (scene, mean A, mean B, difference); a per-category
        mean-IoU table, and a note when the runs cover different scenes.
    reports : dict
        ``{name: report}``; a run that is B of a pair has ``"pairs": {A: {"paired", "iqm",
        "per_scene"}}`` and ``"paired"`` (against the first run or the baseline); each run has
        ``"iqm"``.

    Raises
    ------
    CompareError
        Fewer than two runs, or runs that are not comparable (without ``force``).
    """
    paths = [Path(d) for d in dirs]
    if baseline is not None and not any(Path(baseline).resolve() == p.resolve() for p in paths):
        paths = [Path(baseline)] + paths
    if len(paths) < 2:
        raise CompareError(f"compare needs at least two evaluation directories, got {len(paths)}")
    names = [p.name for p in paths]
    if len(set(names)) != len(names):
        names = [str(p) for p in paths]
    base_name = None if baseline is None else next(n for n, p in zip(names, paths)
                                                    if p.resolve() == Path(baseline).resolve())
    records = {n: find_runs(p) for n, p in zip(names, paths)}
    problems = comparability_problems({n: identity_of(p, [r.record for r in records[n]])
                                       for n, p in zip(names, paths)})
    if problems and not force:
        raise CompareError("refusing to compare runs made on different scenes or under different protocol "
                           "settings (" + "; ".join(problems) + "); rerun them alike or pass --force")
    typed = {n: build_report(p) for n, p in zip(names, paths)}
    runs = {n: cells(records[n]) for n in names}
    lines = ["# Comparison", ""]
    if problems:
        lines += ["**Forced comparison (--force):** " + md("; ".join(problems)), ""]
    cell_sets = {n: set(c) for n, c in runs.items()}
    if len({frozenset(s) for s in cell_sets.values()}) > 1:
        lines += ["Note: the runs cover different (scene, seed) cells: " + ", ".join(
            f"{md(n)}: {len({sc for sc, _ in s})} scenes, {len(s)} cells" for n, s in cell_sets.items()), ""]
    lines += ["## Episodes per run (completed episodes are the ones scored)", "",
              "Verified: re-executed by this command from each run's files (`spatialscout verify`).", "",
              "| run | verified | agent | completed | failed | failure rate (%) | attempts | scenes |",
              "|---|---|---|---|---|---|---|---|"]
    for n, r in typed.items():
        e = r.episodes
        rate = _pct(e.failed / e.total) if e.total else "-"
        mark = r.verified.get("status", "not checked")
        lines.append(f"| {md(n)} | **{md(mark)}** | {md(', '.join(r.agent) or '-')} | {e.completed} | {e.failed} | "
                     f"{rate} | {e.attempts} | {len({sc for sc, _ in runs[n]})} |")
    lines += [""]
    safe = {md(n): n for n in names}
    lines += ["## Object-micro (%)", "", "```", format_table({k: typed[n].object_micro or {} for k, n in safe.items()}),
              "```", "", "## Scene-macro (%)", "", "```",
              format_table({k: typed[n].scene_macro or {} for k, n in safe.items()}), "```", ""]
    intervals = {n: bootstrap_intervals(c) for n, c in runs.items()}
    lines += ["## Headline figures with 95% intervals (%)", "", method_note(), "",
              "| run | " + " | ".join(label for label, _ in HEADLINE) + " |", "|---|" + "---|" * len(HEADLINE)]
    for n, iv in intervals.items():
        lines.append(f"| {md(n)} | " + " | ".join(fmt_interval(iv["figures"][k]) for _, k in HEADLINE) + " |")
    lines.append("")
    # what compare returns: each report's record with its interquartile mean and pairings added
    reports: dict[str, dict] = {n: {**r.to_json(), "iqm": iqm_summary(runs[n])} for n, r in typed.items()}
    lines += iqm_lines({n: reports[n]["iqm"] for n in reports})
    lines += exploration_lines({n: r.exploration for n, r in typed.items()})
    lines += scene_exploration_lines({md(n): r.exploration_scene for n, r in typed.items()})
    first = base_name if base_name is not None else names[0]
    for a, b in compare_pairs(names, base_name):
        pair: dict[str, Any] = {"paired": paired_comparison(runs[a], runs[b]), "iqm": paired_iqm(runs[a], runs[b]),
                "per_scene": per_scene_differences(runs[a], runs[b])}
        reports[b].setdefault("pairs", {})[a] = pair
        if a == first:
            reports[b]["paired"] = pair["paired"]
        lines += paired_lines(a, b, pair["paired"])
        if pair["paired"]["cells"]:
            lines += per_scene_lines(a, b, pair["iqm"], pair["per_scene"])
    cats = sorted({c for r in typed.values() for c in r.categories},
                  key=lambda c: -max(r.categories[c]["num_targets"] if c in r.categories else 0
                                     for r in typed.values()))
    lines += ["## Mean IoU per category (%, pooled)", "", "| category | " + " | ".join(md(n) for n in names) + " |",
              "|---|" + "---|" * len(names)]
    for c in cats:
        row = [(_pct(r.categories[c]["mean_iou"]) if c in r.categories else "-") for r in typed.values()]
        lines.append(f"| {md(c)} | " + " | ".join(row) + " |")
    lines.append("")
    return "\n".join(lines), reports
