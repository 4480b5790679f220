"""The leaderboard over many evaluation directories (paper sections 4-5).

:func:`build_leaderboard` reads every evaluation directory (one per model or setting, written by
``spatialscout evaluate``) and gives one **row** per directory:

* Table 3: the object-micro and scene-macro metric dicts of the completed episodes (re-scored from
  ``ground_truth.json`` + ``predictions.json``), the seed spread (std across seeds, ``ddof=1``, of
  the object-micro all-target mean IoU of each seed), coverage, centre error, full-scene loss;
* spend per completed task: cost (USD, None when any episode has no price), tokens (input +
  output), model calls, tool calls, images (initial image included);
* completed and failed episode counts and the failure rate (:func:`collect_episodes`);
* the harness that ran the episodes (``spatialscout`` for ``evaluate``; ``inspect_ai <version>``
  for the Inspect AI task, docs/inspect.md), from ``result.json``'s ``"harness"``;
* the analyses of :mod:`~spatialscout_gym.eval.analysis.behaviour` (Figures 5-6),
  :mod:`~spatialscout_gym.eval.analysis.grounding` (after the paper's Table 5) and
  :mod:`~spatialscout_gym.eval.analysis.failures` (after the paper's Table 4), both by this project's rules
  and thresholds, which the page lists, and the cost picture of :mod:`~spatialscout_gym.eval.analysis.cost`
  (Figure 7).

A row is a **reference** row when its episodes made no model calls (``origin``, ``oracle-*``,
NBV agents: their ``result.json`` has no ``model`` block), marked ``(ref)``; an MCP client's row
and a person's (``spatialscout play``) are rows of their own kind, marked ``(mcp)`` and ``(human)``
(:func:`~spatialscout_gym.eval.settings_check.run_kind_of`): their B counts tool calls, so they are
checked by it and not ranked with model rows whose B counts model calls. Beside other rows they
are listed apart (``tool_rows``, their own table), ranked among themselves and checked against
each other on the tool-call budget; alone, they are the board.

A row is a **blind control** when its model ran in blind mode (``model.mode`` ``blind``: every tool
result, no image; docs/models.md): what a model scores from the inventory, the calibration and its
language priors alone. Blind rows are listed apart (``blind_rows``, their own table labelled "blind
control"), ranked among themselves only, never with the seeing rows; they are checked against every
row on every setting but the mode (:func:`~spatialscout_gym.eval.settings_check.comparability_problems`'s
``controls``), and are left out of the cost frontier and the tool-use plots.

Every pair of rows is checked as ``spatialscout compare`` checks it, from the run directories
(never a cached report): the catalog version, each scene's content hash and the protocol
settings of :data:`~spatialscout_gym.eval.settings_check.SETTINGS` (V, resolution; the tool-call
budget for agents without a model; NBV dynamics, NBV walls, NBV wall margin and NBV mapper for the NBV
agents; B, prompt style, reasoning effort (asked), reasoning effort honoured (sent, refused, not
supported: compared across providers), reasoning effort sent (the provider's parameters for it:
compared between rows of one provider and API), mode, image history and image max side for model
agents: the compared fields of the settings record, ``EpisodeSettings``). A setting that does not apply to a row's kind is not compared;
one recorded on one side only, or an ``evaluate.json`` key this code does not know, refuses.
Rows that differ are refused unless ``force``; the page then says which settings differ.

:func:`write_leaderboard` writes ``SITE/leaderboard.json``, ``SITE/leaderboard.md``,
``SITE/index.html`` (a sortable table and the plots, relative links only) and the PNG plots.
"""

from __future__ import annotations

import dataclasses
import html
import os
import re
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from spatialscout_gym.core.files import load_ground_truth
from spatialscout_gym.core.eval_records import FailureNote
from spatialscout_gym.core.records import RunRecord
from spatialscout_gym.core.scoring import DEFAULT_LAMBDA_M, SceneScore, aggregate, score_scene
from spatialscout_gym.eval.analysis.behaviour import tool_behaviour
from spatialscout_gym.eval.analysis.failures import (FACTOR_LABELS, FAILURE_FACTORS, SUCCESS_FACTORS, count_factors,
                                            submitted_errors, table4_thresholds, trajectory_factors)
from spatialscout_gym.eval.analysis.grounding import grounding_summary
from spatialscout_gym.eval.layout import (EvalDir, accepted_positions, check_run_scene, publish_json, publish_text, scene_sources,
                                          spec_file_note)
from spatialscout_gym.eval.pages.page import render_page
from spatialscout_gym.eval.verification.identity import counted_once_keys
from spatialscout_gym.eval.pages.report import effort_label, md
from spatialscout_gym.eval.settings_check import comparability_problems, identity_of, protocol_settings, run_kind_of
from spatialscout_gym.eval.verification.verify import verification_status
from spatialscout_gym.eval.analysis.stats import (PAIRED_METHOD, RANK_METHOD, bootstrap_intervals, method_note,
                                                  pairwise_separation, rank_intervals, seed_spread)
from spatialscout_gym.eval.analysis.trajectory import load_trajectory

__all__ = ["EpisodeRecord", "EvalEpisodes", "collect_episodes", "build_row", "build_leaderboard",
           "write_leaderboard", "format_leaderboard_md", "LeaderboardError", "LEADERBOARD_JSON",
           "LEADERBOARD_MD"]

LEADERBOARD_JSON = "leaderboard.json"
LEADERBOARD_MD = "leaderboard.md"


RANK_FIGURE = "object_micro.all.mean_iou"
"""The figure rows are ranked by (object-micro all-target mean IoU)."""

BLIND_MODE = "blind"
"""The model mode of a blind control row (listed apart, never ranked with seeing rows)."""
BLIND_LABEL = "blind control"


class LeaderboardError(ValueError):
    """Evaluations that cannot be put on one leaderboard (mixed catalogs, nothing completed)."""


@dataclasses.dataclass
class EpisodeRecord:
    """One completed episode: its run directory (where ``result.json`` has status ok) and its record."""

    key: str
    run_dir: Path
    record: RunRecord


@dataclasses.dataclass
class EvalEpisodes:
    """What an evaluation directory holds.

    Attributes
    ----------
    completed : list of EpisodeRecord
    failed : list of str
        Keys (``<scene dir>/seed_<k>``) of episodes with a failure record and no completed run.
    failed_attempts : list of RunRecord or FailureNote
        The run record (or failure note) of every failed attempt, redone or not.
    """

    completed: list[EpisodeRecord]
    failed: list[str]
    failed_attempts: list[RunRecord | FailureNote]


def collect_episodes(eval_dir: str | os.PathLike) -> EvalEpisodes:
    """Completed and failed episodes of an evaluation directory, in either attempt layout
    (the rule is :class:`~spatialscout_gym.eval.layout.EvalDir`'s)."""
    ev = EvalDir(eval_dir)
    ev.check_identities()
    completed = ev.completed()
    once = counted_once_keys(ev, completed)    # a repeated scene's further seeds count once
    return EvalEpisodes([EpisodeRecord(k, a.run_dir, a.record) for k, a in completed if k not in once],
                        [e.key for e in ev.failed()], ev.failed_results())


def _mean(values: Sequence[float | None]) -> float | None:
    vals = [float(v) for v in values if v is not None]
    return float(np.mean(vals)) if vals else None


def _verification(d: Path, workers: int) -> dict:
    """The row's ``verified`` mark, verified by this command now (or taken from the verdict cache
    outside ``d``, keyed by the files' digest), never from a ``verify.json`` inside ``d``; with
    ``verification`` (seconds, seconds per episode, cached verdicts, what ``d`` claims of itself)."""
    v = verification_status(d, workers=workers)
    return {"planned": v["planned"], "missing": v["missing"], "verified": v["status"],
            "verification": {k: v[k] for k in ("episodes", "seconds", "seconds_per_episode", "cached",
                                                "self_reported")}}


def build_row(eval_dir: str | os.PathLike, lam: float = DEFAULT_LAMBDA_M, verify_workers: int = 1) -> dict:
    """The leaderboard row of one evaluation directory (see the module docstring).

    Raises
    ------
    LeaderboardError
        No completed episode in ``eval_dir``.
    """
    d = Path(eval_dir)
    eps = collect_episodes(d)
    if not eps.completed:
        raise LeaderboardError(f"{d} holds no completed episode (<scene>/seed_<k>/result.json with status ok; "
                               f"{len(eps.failed)} failed); run `spatialscout evaluate --out {d} ...` first")
    scores: list[tuple[int, SceneScore]] = []
    trajectories, outcomes, errors = [], {}, []
    for ep in eps.completed:
        check_run_scene(ep.run_dir, ep.record)
        gt = load_ground_truth(ep.run_dir)
        score = score_scene(gt, accepted_positions(ep.run_dir, gt), lam=lam)
        scores.append((ep.record.seed, score))
        traj = load_trajectory(ep.run_dir)
        trajectories.append(traj)
        errs = submitted_errors(score)
        errors += list(errs.values())
        outcomes[ep.key] = trajectory_factors(traj, errs, gt.num_targets)
    cells = {(ep.record.scene_id, seed): s for (seed, s), ep in zip(scores, eps.completed)}
    once = len({s.scene_id for _, s in scores}) == len(scores)
    agg = aggregate([s if once else dataclasses.replace(s, scene_id=ep.key)
                     for (_, s), ep in zip(scores, eps.completed)], lam)
    records = [ep.record for ep in eps.completed]
    models = [r.model for r in records]
    is_model = any(m is not None for m in models)
    settings = EvalDir(d).settings()
    # what reached the service, refusals included ("xhigh refused, none sent")
    effort = effort_label(models) or (settings.option("reasoning_effort") if settings else None)
    agents = sorted({r.agent for r in records})
    # the harness that ran the episodes: "spatialscout" (evaluate, run) unless result.json names
    # another (an Inspect AI run: "inspect_ai 0.3.x")
    harnesses = sorted({" ".join(str(h[k]) for k in ("name", "version") if h.get(k)) or "spatialscout"
                        for h in (r.harness or {} for r in records)})
    costs = [m.cost_usd if m is not None else None for m in models]
    tokens = [m.usage.get("input_tokens", 0) + m.usage.get("output_tokens", 0) if m is not None else 0
              for m in models]
    n_done, n_failed = len(eps.completed), len(eps.failed)
    versions = sorted({r.catalog_version for r in records})
    om = agg["object_micro"]
    return {
        "dir": str(d), "agent": agents[0] if len(agents) == 1 else agents,
        "kind": run_kind_of(records), "reference": run_kind_of(records) in ("reference", "nbv"),
        "blind_control": any(m is not None and m.mode == BLIND_MODE for m in models),
        "harness": ", ".join(harnesses),
        "reasoning_effort": effort,
        "completed": n_done, "failed": n_failed,
        "failure_rate": n_failed / (n_done + n_failed), "failed_attempts": len(eps.failed_attempts),
        "object_micro": om, "scene_macro": agg["scene_macro"],
        "seeds": seed_spread(scores, lam),
        "coverage": om["coverage"], "center_error_m": om["center_error_m"],
        "full_scene_loss_m": {"object_micro": om["full_scene_loss_m"],
                              "scene_macro": agg["scene_macro"]["full_scene_loss_m"], "lambda_m": float(lam)},
        "cost_per_task_usd": _mean(costs) if is_model and all(c is not None for c in costs) else None,
        "tokens_per_task": float(np.mean(tokens)) if is_model else None,
        "model_calls_per_task": _mean([m.model_calls if m is not None else None for m in models]) if is_model else None,
        "tool_calls_per_task": _mean([r.counters.tool_calls for r in records]),
        "images_per_task": _mean([r.counters.images_used for r in records]),
        "behaviour": tool_behaviour(trajectories),
        "grounding": grounding_summary(trajectories, errors),
        "failure_analysis": {**count_factors(list(outcomes.values())),
                             "per_trajectory": {k: o.to_dict() for k, o in outcomes.items()}},
        "intervals": bootstrap_intervals(cells),
        **_verification(d, verify_workers),
        "_cells": cells,
        "_identity": identity_of(d, records),
        "catalog_version": versions[0] if len(versions) == 1 else versions,
        "scene_hashes": {r.scene_id: r.scene_content_hash for r in records},
        "protocol_settings": protocol_settings(records),
        "scenes": sorted({r.scene_id for r in records}),
        "scene_sources": scene_sources(EvalDir(d)),
        "runs": {ep.key: str(ep.run_dir) for ep in eps.completed},
    }


def _row_name(row: dict) -> str:
    agent = row["agent"] if isinstance(row["agent"], str) else "+".join(row["agent"])
    return f"{agent} ({row['reasoning_effort']})" if row.get("reasoning_effort") else agent


def build_leaderboard(dirs: Sequence[str | os.PathLike], *, force: bool = False,
                      lam: float = DEFAULT_LAMBDA_M, progress: bool = False, verified_only: bool = False,
                      verify_workers: int = 1) -> dict:
    """The leaderboard dict: ``{"rows": {name: row}, "order": [...], "blind_rows": {name: row},
    "blind_order": [...], "cost": ..., "problems": [...], "scene_sets_differ": bool,
    "factor_labels": {...}}``; rows sorted by rank (object-micro all-target mean IoU on the cells
    every row shares; ties: model rows first, then reference rows). Blind controls are in
    ``blind_rows`` alone, ranked among themselves (the module docstring).

    Raises
    ------
    LeaderboardError
        No directories, a directory without completed episodes, or mixed catalogs/scene hashes
        without ``force``.
    """
    from spatialscout_gym.eval.analysis.cost import cost_summary
    if not dirs:
        raise LeaderboardError("leaderboard needs at least one evaluation directory")
    iterator: Any = dirs
    if progress:
        from tqdm import tqdm
        iterator = tqdm(dirs, desc="leaderboard", unit="dir")
    built = [build_row(d, lam, verify_workers) for d in iterator]
    dropped = [r["dir"] for r in built if verified_only and r["verified"] not in ("verified", "repeated")]
    built = [r for r in built if r["dir"] not in dropped]
    if not built:
        raise LeaderboardError("--verified-only: no row is verified (`spatialscout verify DIR` names why; "
                               "dropped: " + ", ".join(dropped) + ")")
    rows: dict[str, dict] = {}
    names = [_row_name(r) for r in built]
    for name, row in zip(names, built):
        if names.count(name) > 1:
            name = f"{name} [{Path(row['dir']).name}]"
        if name in rows:
            name = f"{name} [{row['dir']}]"
        rows[name] = row
    controls = {n for n, r in rows.items() if r["blind_control"]}
    # MCP clients' and people's rows count B in tool calls: beside other rows, listed apart
    tool = {n for n, r in rows.items() if r.get("kind") in TOOL_KINDS and n not in controls}
    tool = set() if len(tool) + len(controls) == len(rows) else tool
    problems = comparability_problems({n: r.pop("_identity") for n, r in rows.items()}, controls=controls,
                                      apart=tool)
    if problems and not force:
        raise LeaderboardError("refusing to rank runs made on different scenes or under different protocol "
                               "settings on one leaderboard (" + "; ".join(problems)
                               + "); rerun them alike or pass --force")
    cells = {n: rows[n].pop("_cells") for n in rows}
    runs = {n: c for n, c in cells.items() if n not in controls and n not in tool}   # ranked together
    order = _rank(rows, runs)
    tool_order = _rank(rows, {n: c for n, c in cells.items() if n in tool})   # among themselves
    blind_order = _rank(rows, {n: c for n, c in cells.items() if n in controls})   # never with seeing rows
    seeing = {n: rows[n] for n in order}
    return {"rows": seeing, "order": order, "blind_rows": {n: rows[n] for n in blind_order},
            "blind_order": blind_order, "tool_rows": {n: rows[n] for n in tool_order}, "tool_order": tool_order,
            "problems": problems,
            "rank_note": rank_note(runs),
            "scene_sets_differ": len({tuple(r["scenes"]) for r in rows.values()}) > 1,
            "cost": cost_summary(seeing), "factor_labels": FACTOR_LABELS, "lambda_m": float(lam),
            "intervals_method": method_note(), "rank_figure": RANK_FIGURE, "dropped_unverified": dropped}


def rank_note(runs: dict[str, dict]) -> str | None:
    """Why the rank intervals are wide, when they must be: with fewer shared scenes than
    :func:`~spatialscout_gym.eval.analysis.stats.min_scenes_to_separate` the paired test cannot
    separate two rows whatever the difference, so every interval spans every rank (as ``compare``
    says for a pair). None with one row or enough scenes."""
    from spatialscout_gym.eval.analysis.stats import min_p_value, min_scenes_to_separate
    if len(runs) < 2:
        return None
    shared = set.intersection(*(set(c) for c in runs.values()))
    scenes, need = len({sc for sc, _ in shared}), min_scenes_to_separate()
    if scenes >= need:
        return None
    floor = f"cannot give p below {min_p_value(scenes):.3g}" if scenes >= 2 else "has nothing to pair"
    return (f"Too few scenes to separate: the rows share {scenes} scene(s), and on so few the exact paired "
            f"permutation test {floor}, so no two rows are separated at p < 0.05 whatever the difference and "
            f"every rank interval spans all {len(runs)} ranks; rank on {need} or more shared scenes.")


def _rank(rows: dict[str, dict], runs: dict[str, dict]) -> list[str]:
    """Rank the rows named in ``runs`` (name -> cells) among themselves: set each one's ``rank`` and
    ``separated_from_next``; returns their names in rank order."""
    if not runs:
        return []
    # one rule for the rank intervals and "separated from next": the paired comparison of every pair
    # on the cells every row shares
    pairs = pairwise_separation(runs, RANK_FIGURE) if len(runs) > 1 else {}
    ranks = rank_intervals(runs, RANK_FIGURE, pairs=pairs or None)
    # by rank (on the cells every row shares); ties: model rows first, then the higher figure
    order = sorted(runs, key=lambda n: (ranks[n]["rank"], rows[n]["reference"],
                                        -rows[n]["object_micro"]["all"]["mean_iou"], n))
    for n, nxt in zip(order, order[1:] + [None]):
        rows[n]["rank"] = ranks[n]
        if nxt is None:
            rows[n]["separated_from_next"] = None
            continue
        fig = pairs[(nxt, n)]            # this row minus the next
        rows[n]["separated_from_next"] = {"next": nxt, **fig}
    return order


# ---- text ----------------------------------------------------------------------------------------
def _pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.2f}"


def _num(x: float | None, fmt: str = ".3g") -> str:
    return "-" if x is None else format(x, fmt)


TABLE3_COLUMNS: tuple[tuple[str, str], ...] = (
    ("all mIoU %", "om.all.mean_iou"), (">0 %", "om.all.gt_0"), (">0.5 %", "om.all.gt_50"),
    (">0.9 %", "om.all.gt_90"), ("sub mIoU %", "om.submitted.mean_iou"), ("sub >0 %", "om.submitted.gt_0"),
    ("sub >0.5 %", "om.submitted.gt_50"),
    ("sub >0.9 %", "om.submitted.gt_90"), ("macro all mIoU %", "sm.all.mean_iou"),
    ("macro sub mIoU %", "sm.submitted.mean_iou"), ("seed std %", "seeds.std"), ("cov %", "coverage"),
)


def _value(row: dict, path: str) -> Any:
    cur: Any = {"om": row["object_micro"], "sm": row["scene_macro"], **row}
    for part in path.split("."):
        cur = None if cur is None else cur.get(part)
    return cur


def _figure_cell(row: dict, path: str) -> str:
    """A Table-3 figure with its 95% interval, ``45.20 [40.10, 50.30]`` (the estimate alone for
    figures without one, such as the seed spread)."""
    key = path.replace("om.", "object_micro.", 1).replace("sm.", "scene_macro.", 1)
    if key == "coverage":
        key = "object_micro.coverage"
    iv = (row.get("intervals") or {}).get("figures", {}).get(key)
    if iv is None or iv.get("low") is None:
        return _pct(_value(row, path))
    return f"{_pct(_value(row, path))} [{_pct(iv['low'])}, {_pct(iv['high'])}]"


def _rank_cells(row: dict) -> list[str]:
    r = row.get("rank") or {}
    rank = "-" if not r else (f"{r['rank']} [{r['low']:.0f}, {r['high']:.0f}]" if r.get("low") is not None
                              else str(r["rank"]))
    sep = row.get("separated_from_next")
    return [rank, "-" if not sep else ("yes" if sep["separated"] else "no")]


def _completed_cell(row: dict) -> str:
    """``N`` completed, or ``N of M planned`` when planned episodes have no result (never a
    silently shrunken row)."""
    planned, missing = row.get("planned"), row.get("missing") or []
    return f"{row['completed']} of {planned} planned" if missing and planned else str(row["completed"])


def _row_cells(row: dict) -> list[str]:
    cells = [row.get("verified", "not checked")] + _rank_cells(row) + [_figure_cell(row, p) for _, p in TABLE3_COLUMNS]
    err = row["center_error_m"]
    cells += [_num(err["mean"], ".3f"), _num(err["median"], ".3f"), _num(row["full_scene_loss_m"]["object_micro"], ".3f"),
              _num(row["cost_per_task_usd"], ".4g"), _num(row["tokens_per_task"], ".0f"),
              _num(row["model_calls_per_task"], ".1f"), _num(row["tool_calls_per_task"], ".1f"),
              _num(row["images_per_task"], ".1f"), _completed_cell(row), str(row["failed"]),
              row.get("harness") or "spatialscout"]
    return cells


ROW_HEADERS: tuple[str, ...] = ("verified", "rank [95%]", "separated from next") + tuple(h for h, _ in TABLE3_COLUMNS) + (
    "err mean m", "err median m", "loss m", "cost/task $", "tokens/task", "model calls/task",
    "tool calls/task", "images/task", "completed", "failed", "harness")


@dataclasses.dataclass
class Table:
    """One table of the leaderboard, rendered both as Markdown and as HTML (plain-text cells,
    escaped by each renderer). ``row_classes``: the HTML class of each row (None: no class)."""

    key: str
    title: str
    note: str
    headers: list[str]
    rows: list[list[str]]
    row_classes: list[str | None]
    sortable: bool = True


TOOL_KINDS = ("mcp", "human")
"""The kinds whose B counts tool calls (listed apart beside rows whose B counts model calls)."""
KIND_MARKS = {"reference": " (ref)", "nbv": " (ref)", "mcp": " (mcp)", "human": " (human)"}
"""How a row's name is marked by its kind (a model row is not marked)."""


def kind_mark(row: dict) -> str:
    """The mark after a row's name: ``(ref)``, ``(mcp)``, ``(human)`` or none (a model row)."""
    kind = row.get("kind") or ("reference" if row.get("reference") else "model")
    return KIND_MARKS.get(str(kind), "")


def tables(board: dict) -> dict[str, Table]:
    """Table 3 with spend (``table3``), geometric grounding (``table5``) and the success and
    failure factors (``table4``) of a leaderboard dict's seeing rows, and the blind controls'
    table (``blind``) when it has any."""
    rows, blind, tool = board["rows"], board.get("blind_rows") or {}, board.get("tool_rows") or {}
    t3 = Table("table3", "Table 3 and spend per task", "", ["model", *ROW_HEADERS],
               [[n + kind_mark(r), *_row_cells(r)] for n, r in rows.items()],
               ["ref" if r["reference"] else str(r.get("kind") or "model") for r in rows.values()])
    radius = next(iter({**rows, **blind, **tool}.values()))["grounding"]["support_radius_m"]
    t5_rows = []
    for n, r in rows.items():
        g = r["grounding"]
        med = g["median_center_error_m"]
        t5_rows.append([n, _pct(g["supported_share"]), _pct(g["warning_share"]), _num(g["captures_per_task"], ".2f"),
                        "-" if med is None else f"{100 * med:.2f}"])
    t5 = Table("table5", "Geometric grounding, after the paper's Table 5",
               "The paper's table came from its own analysis of two models; this one is computed from every "
               f"trace by this project's rule. Supported: the submitted position lies within {radius:g} m of a "
               "successful triangulation made before the submission that set it.",
               ["model", "submitted objects with prior successful triangulation %", "triangulations with warnings %",
                "captures per task", "median centre error cm"], t5_rows, [None] * len(t5_rows))
    t4_rows = [["", "trajectories", *(str(r["failure_analysis"]["trajectories"]) for r in rows.values())],
               ["Success", "success (coverage >= 90 %, mean error <= 0.2 m)",
                *(str(r["failure_analysis"]["success"]) for r in rows.values())]]
    for outcome, factors in (("Success", SUCCESS_FACTORS), ("Failure", FAILURE_FACTORS)):
        t4_rows += [[outcome, FACTOR_LABELS[f], *(str(r["failure_analysis"]["factors"][f]) for r in rows.values())]
                    for f in factors]
    t4 = Table("table4", "Success and failure factors, after the paper's Table 4",
               "The paper's factors came from a case study of 40 trajectories and a model-assisted analysis; "
               "these are counted on every trajectory by this project's rules and thresholds: "
               + table4_thresholds() + ". Trajectories per factor; a trajectory may show several (factors "
               "not exclusive); the rules are in spatialscout_gym/eval/analysis/failures.py.",
               ["outcome", "factor", *rows], t4_rows, [None] * len(t4_rows), sortable=False)
    out = {t.key: t for t in (t3, t5, t4)}
    if blind:
        out["blind"] = Table("blind", "Blind controls (no image sent)", BLIND_TABLE_NOTE,
                             ["model", *ROW_HEADERS], [[f"{n} ({BLIND_LABEL})", *_row_cells(r)] for n, r in blind.items()],
                             ["blind"] * len(blind))
    if tool:
        out["tool"] = Table("tool", "MCP clients and people (B counts tool calls)", TOOL_TABLE_NOTE,
                            ["model", *ROW_HEADERS], [[n + kind_mark(r), *_row_cells(r)] for n, r in tool.items()],
                            [str(r.get("kind")) for r in tool.values()])
    return out


TOOL_TABLE_NOTE = ("An MCP client's runs (spatialscout mcp) and a person's (spatialscout play): B counts tool "
                   "calls there, model calls in the rows above (a model call may make several tool calls), so "
                   "these rows are ranked among themselves only, checked against each other on the tool-call "
                   "budget.")


def _tool_tables(t: dict[str, Table]) -> list[Table]:
    """The MCP and human rows' table split as Table 3 is (none without such rows beside others)."""
    if "tool" not in t:
        return []
    figures, spend = _split_table3(t["tool"])
    return [dataclasses.replace(figures, title="MCP clients and people (B counts tool calls): rank among them "
                                               "and figures"),
            dataclasses.replace(spend, title="MCP clients and people: checks and spend per task", note="")]


BLIND_TABLE_NOTE = ("Blind control: the model received every tool result and frame caption but no image "
              "(--mode blind), so these rows show what it scores from the inventory, the calibration and "
              "language priors alone. They are ranked among blind controls only, never with the rows above.")


def _blind_tables(t: dict[str, Table]) -> list[Table]:
    """The blind controls' table split as Table 3 is (none without blind rows)."""
    if "blind" not in t:
        return []
    figures, spend = _split_table3(t["blind"])
    return [dataclasses.replace(figures, title="Blind controls (no image sent): rank among blind controls and figures"),
            dataclasses.replace(spend, title="Blind controls: checks and spend per task", note="")]


def _table_md(t: Table) -> list[str]:
    lines = [f"## {t.title}", ""] + ([t.note, ""] if t.note else [])
    lines += ["| " + " | ".join(md(h) for h in t.headers) + " |", "|" + "---|" * len(t.headers)]
    lines += ["| " + " | ".join(md(c) for c in row) + " |" for row in t.rows]
    return lines + [""]


def _cell_html(c: str) -> str:
    """A cell; an estimate's interval ``x [lo, hi]`` goes on a line of its own under it."""
    head, sep, interval = c.partition(" [")
    if not sep:
        return html.escape(c)
    return f"{html.escape(head)}<span class='iv'>[{html.escape(interval)}</span>"


def _table_html(t: Table, table_id: str | None = None) -> str:
    e = html.escape
    attrs = (" class='sortable'" if t.sortable else "") + (f" id='{table_id}'" if table_id else "")
    out = [f"<h2>{e(t.title)}</h2>"] + ([f"<p class='note'>{e(t.note)}</p>"] if t.note else [])
    out.append(f"<div class='wide'><table{attrs}><thead><tr>" + "".join(f"<th>{e(h)}</th>" for h in t.headers)
               + "</tr></thead><tbody>")
    for row, cls in zip(t.rows, t.row_classes):
        first, *rest = row
        cells = "".join(f"<td data-v='{'' if c == '-' else e(c.split(' ')[0])}'>{_cell_html(c)}</td>" for c in rest)
        out.append(("<tr>" if cls is None else f"<tr class='{cls}'>") + f"<td>{e(first)}</td>{cells}</tr>")
    out.append("</tbody></table></div>")
    return "\n".join(out)


def _split_table3(t: Table) -> tuple[Table, Table]:
    """Table 3 as two tables a laptop-wide Markdown view shows whole: rank and figures; checks and
    spend (the model column in both)."""
    figures = [0, *range(2, 4 + len(TABLE3_COLUMNS))]
    spend = [0, 1, *range(4 + len(TABLE3_COLUMNS), len(t.headers))]
    pick = lambda row, cols: [row[i] for i in cols]  # noqa: E731
    return (Table(t.key, "Table 3 (rank and figures)", t.note, pick(t.headers, figures),
                  [pick(r, figures) for r in t.rows], t.row_classes),
            Table(t.key + "_spend", "Checks and spend per task", "", pick(t.headers, spend),
                  [pick(r, spend) for r in t.rows], t.row_classes))


def format_leaderboard_md(board: dict) -> str:
    """Markdown of the leaderboard: Table 3 with spend, the analyses after the paper's Tables 5 and 4
    (this project's rules, listed on the page), the cost frontier."""
    rows = board["rows"]
    lines = ["# SpatialScout leaderboard", "",
             "Object-micro (pooled over targets) unless marked macro (mean of per-scene ratios); "
             "completed episodes only, failed ones counted apart. Reference rows (no model) are "
             "marked (ref), an MCP client's rows (mcp), a person's (human). Figures show the estimate and its 95% interval. " + board["intervals_method"]
             + " Rank: by object-micro all-target mean IoU on the (scene, seed) cells every row shares; "
             "'separated from next': the paired difference to the next row (" + PAIRED_METHOD + ") excludes 0 and "
             "its paired permutation p < 0.05 ('no': these rows cannot be ordered); " + RANK_METHOD + ".", ""]
    if board.get("rank_note"):
        lines += ["**" + md(board["rank_note"]) + "**", ""]
    if board["problems"]:
        lines += ["**Forced:** " + md("; ".join(board["problems"])), ""]
    if board["scene_sets_differ"]:
        lines += ["Note: the rows cover different scene sets: "
                  + ", ".join(f"{md(n)}: {len(r['scenes'])} scenes" for n, r in rows.items()), ""]
    for n, r in rows.items():
        note = spec_file_note(r.get("scene_sources") or {})
        if note:
            lines += [f"{md(n)}: {md(note)}.", ""]
    t = tables(board)
    lines += sum((_table_md(x) for x in _split_table3(t["table3"])), []) + _table_md(t["table5"]) + _table_md(t["table4"])
    lines += sum((_table_md(x) for x in [*_blind_tables(t), *_tool_tables(t)]), [])
    cost = board["cost"]
    lines += ["## Accuracy vs. cost (Figure 7)", ""]
    if cost["points"]:
        lines += ["| model | cost per task USD | all-target mean IoU % | Pareto |", "|---|---|---|---|"]
        lines += [f"| {md(n)} | {p['cost_per_task_usd']:.4g} | {_pct(p['all_mean_iou'])} | "
                  f"{'yes' if n in cost['frontier'] else ''} |" for n, p in cost["points"].items()]
    if cost["unpriced"]:
        lines += ["", "No price (not plotted): " + ", ".join(md(n) for n in cost["unpriced"])]
    lines.append("")
    return "\n".join(lines)


# ---- the site ------------------------------------------------------------------------------------
_SORT_JS = r"""
document.querySelectorAll('table.sortable').forEach(function (table) {
  table.querySelectorAll('th').forEach(function (th, col) {
    th.addEventListener('click', function () {
      var body = table.tBodies[0], rows = Array.prototype.slice.call(body.rows);
      var asc = th.dataset.dir !== 'asc'; th.dataset.dir = asc ? 'asc' : 'desc';
      rows.sort(function (a, b) {
        var x = a.cells[col].dataset.v || a.cells[col].textContent, y = b.cells[col].dataset.v || b.cells[col].textContent;
        var fx = parseFloat(x), fy = parseFloat(y);
        var c = (isNaN(fx) || isNaN(fy)) ? x.localeCompare(y) : fx - fy;
        return asc ? c : -c;
      });
      rows.forEach(function (r) { body.appendChild(r); });
    });
  });
});
// A link to index.html#sort=K (or #sort=-K) opens the first table sorted by column K (0-based)
// ascending (descending).
(function () {
  var m = /sort=(-?)(\d+)/.exec(location.hash), th;
  if (!m) { return; }
  th = document.querySelectorAll('#leaderboard th')[+m[2]];
  if (th) { th.click(); if (m[1]) { th.click(); } }
})();
// For a headless-browser check: how many plots decoded (body data-plots / data-plots-loaded).
window.addEventListener('load', function () {
  var imgs = document.querySelectorAll('img.plot'), ok = 0;
  imgs.forEach(function (i) { if (i.complete && i.naturalWidth > 0) { ok++; } });
  document.body.dataset.plots = imgs.length; document.body.dataset.plotsLoaded = ok;
});
"""


def _html(board: dict, plots: dict[str, Path], figures: dict[str, Path], out: Path) -> str:
    e = html.escape
    rel = lambda p: Path(os.path.relpath(p, out)).as_posix()  # noqa: E731
    rows = board["rows"]
    parts = ["<h1>SpatialScout leaderboard</h1>",
             "<p class='note'>Object-micro (pooled over targets) unless marked macro; completed episodes only "
             "(failed ones counted apart); reference agents in grey. Click a column header to sort. "
             "Figures show the estimate and its 95% interval. " + e(board["intervals_method"]) + " Rank: by "
             "object-micro all-target mean IoU on the cells every row shares; 'separated from next': the paired "
             "difference to the next row excludes 0 and its permutation p &lt; 0.05; " + e(RANK_METHOD) + ".</p>"]
    if board.get("rank_note"):
        parts.append(f"<p class='note'><b>{e(board['rank_note'])}</b></p>")
    if board["problems"]:
        parts.append(f"<p><b>Forced comparison:</b> {e('; '.join(board['problems']))}</p>")
    if board["scene_sets_differ"]:
        parts.append("<p><b>Note:</b> the rows cover different scene sets: " + e(", ".join(
            f"{n}: {len(r['scenes'])} scenes" for n, r in rows.items())) + "</p>")
    for n, r in rows.items():
        note = spec_file_note(r.get("scene_sources") or {})
        if note:
            parts.append(f"<p>{e(n)}: {e(note)}.</p>")
    t = tables(board)
    # two tables, as in the Markdown: one holding every figure and spend column is wider than a
    # laptop, and its spend columns would sit out of sight behind a scroll bar
    figures_table, spend_table = _split_table3(t["table3"])
    parts += [_table_html(figures_table, "leaderboard"), _table_html(spend_table, "spend")]
    parts += [_table_html(x, x.key) for x in [*_blind_tables(t), *_tool_tables(t)]]
    parts.append("<h2>Tool use (Figures 5-6)</h2>")
    for key in ("behaviour_totals", "behaviour_over_calls"):
        if key in plots:
            parts.append(f"<p><img class='plot' src='{e(rel(plots[key]))}' alt='{key}'></p>")
    parts.append("<h2>Accuracy vs. cost (Figure 7)</h2>")
    if "cost" in plots:
        parts.append(f"<p><img class='plot' src='{e(rel(plots['cost']))}' alt='cost'></p>")
    else:
        parts.append("<p>No model has a price (run with --price-table to record costs).</p>")
    if board["cost"]["unpriced"]:
        parts.append("<p class='note'>No price, not plotted: " + e(", ".join(board["cost"]["unpriced"])) + "</p>")
    parts += [_table_html(t["table5"]), _table_html(t["table4"])]
    for n, r in rows.items():
        per = r["failure_analysis"]["per_trajectory"]
        parts.append(f"<details><summary>{e(n)}: factors per trajectory</summary><table><thead><tr><th>episode</th>"
                     "<th>success</th><th>coverage %</th><th>mean error m</th><th>factors</th></tr></thead><tbody>")
        parts += [f"<tr><td>{e(k)}</td><td>{'yes' if o['success'] else 'no'}</td><td>{_pct(o['coverage'])}</td>"
                  f"<td>{_num(o['mean_error_m'], '.3f')}</td><td style='text-align:left'>"
                  f"{e(', '.join(FACTOR_LABELS[f] for f in o['factors']))}</td></tr>" for k, o in per.items()]
        parts.append("</tbody></table></details>")
    if figures:
        parts.append("<h2>Submitted maps (Figure 4: the scene's own meshes at the submitted centres)</h2>")
        for key, p in figures.items():
            parts.append(f"<h3>{e(key)}</h3><p><img src='{e(rel(p))}' alt='{e(key)}' loading='lazy'></p>")
    return render_page("SpatialScout leaderboard", parts, script=_SORT_JS)


def write_leaderboard(dirs: Sequence[str | os.PathLike], out_dir: str | os.PathLike, *, force: bool = False,
                      lam: float = DEFAULT_LAMBDA_M, figure_scene: str | None = None, figure_px: int = 256,
                      progress: bool = False, verified_only: bool = False, verify_workers: int = 1) -> dict:
    """Build the leaderboard and write the site to ``out_dir``: ``leaderboard.json``,
    ``leaderboard.md``, ``index.html``, ``plots/*.png`` and, with ``figure_scene`` (a scene dir
    name such as ``procedural_7``), ``figures/<row>.png``: that scene's seed-0 map of every row,
    drawn with the scene's own meshes (:func:`spatialscout_gym.eval.pages.figures.write_run_figure`).
    Returns the leaderboard dict."""
    from spatialscout_gym.eval.analysis.behaviour import plot_behaviour
    from spatialscout_gym.eval.analysis.cost import plot_cost
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    board = build_leaderboard(dirs, force=force, lam=lam, progress=progress, verified_only=verified_only,
                              verify_workers=verify_workers)
    from spatialscout_gym.eval.pages.figures import plots_available
    plots: dict[str, Path] = {}
    if plots_available() and board["rows"]:     # without the plots extra (or seeing rows): the tables only
        plots = plot_behaviour({n: r["behaviour"] for n, r in board["rows"].items()}, out / "plots")
        cost_png = plot_cost(board["cost"], out / "plots" / "cost_pareto.png")
        if cost_png is not None:
            plots["cost"] = cost_png
    figures: dict[str, Path] = {}
    if figure_scene is not None:
        from spatialscout_gym.eval.pages.figures import write_run_figure
        key = f"{figure_scene}/seed_0"
        if not any(key in r["runs"] for r in board["rows"].values()):
            known = sorted({k.split("/")[0] for r in board["rows"].values() for k in r["runs"]})
            raise LeaderboardError(f"no row has a completed episode {key} for --figure-scene; scene directories "
                                   f"with completed episodes: {', '.join(known[:20])}")
        renderer = None   # one renderer for every figure: its shaders compile once
        try:
            for n, r in board["rows"].items():
                if key in r["runs"]:
                    safe = re.sub(r"[^A-Za-z0-9_.-]+", "_", n).strip("_")
                    figures[n], renderer = write_run_figure(r["runs"][key], out / "figures" / f"{safe}.png",
                                                            tile_px=figure_px, eval_dir=Path(r["dir"]),
                                                            renderer=renderer)
        finally:
            if renderer is not None:
                renderer.close()
    board["plots"] = {k: Path(os.path.relpath(p, out)).as_posix() for k, p in plots.items()}
    board["figures"] = {k: Path(os.path.relpath(p, out)).as_posix() for k, p in figures.items()}
    publish_json(out / LEADERBOARD_JSON, board)
    publish_text(out / LEADERBOARD_MD, format_leaderboard_md(board))
    publish_text(out / "index.html", _html(board, plots, figures, out))
    return board
