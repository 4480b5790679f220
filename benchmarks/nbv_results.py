"""Evaluate the reference and NBV agents on catalog scenes at one capture budget, through
``spatialscout evaluate``'s API, and print docs/nbv.md's tables.

Each agent is one evaluation (:func:`spatialscout_gym.eval.running.evaluate.evaluate`, what
``spatialscout evaluate --agent NAME --scenes ... --seeds ... --image-budget V --resolution R``
runs: no tool-call cap, the agent's rng ``numpy.random.default_rng(seed)`` per episode, the one
seeding rule), in its own directory under ``--evals`` (one per agent and mapper); ``evaluate``
resumes it, so a rerun runs only the episodes it lacks. The tables are read back from the
episodes as ``spatialscout compare`` reads them (each ``result.json`` re-scored), so
``spatialscout evaluate --seeds K`` on a scene reproduces the table's cell for that scene and seed.

Prints a Table-3-style markdown table (object-micro, docs/protocol.md section 9 columns, in %) with
one row per agent: with several ``--seeds`` the row is the mean over seeds and its label carries
the spread (max - min across seeds) of the all-target mean IoU, e.g. ``random-nbv (spread 1.27)``;
a ``ppo:DIR/model.zip`` agent is labelled ``DIR``. A second table gives the all-target mean IoU
object-micro and scene-macro (each with its seed spread) and per scene type (single rooms,
apartments). ``--out`` writes every seed's metrics (object-micro, scene-macro, per scene type), every
column's spread (in ``COLUMNS`` order) and every episode's cell (``cells``: scene, seed, agent,
mapper, env id, coverage, all-target and submitted mean IoU, images used, blocked moves, path, the
per-target IoU and hits) as JSON. A third table reports each agent's per-episode all-target mean
IoU the way RL papers do (rliable's conventions): the interquartile mean and the performance
profile, with 95% stratified bootstrap intervals (JSON key ``rliable``).

    python benchmarks/nbv_results.py --scenes 80 --image-budget 20 --resolution 64 --workers 2 \\
        --agents frontier-nbv ppo:models/nbv_ppo ppo:models/nbv_ppo_v3 --seeds 0 1 2 \\
        --out docs/nbv_tables_oracle.json

Every ``ppo:PATH`` agent is then compared with ``--baseline`` (default ``frontier-nbv``), paired on
the (scene, seed) cells both ran: policy minus baseline of the all-target and the submitted mean
IoU, with the 95% scene-bootstrap interval and the paired permutation p-value of
:func:`spatialscout_gym.eval.analysis.stats.paired_comparison` (``compare``'s), overall, in single
rooms, in apartments and, with seed 0 evaluated, on each fifth of the scenes (every fifth id from
offset 0-4, seed 0). It is printed (with a verdict per row: better, ahead (not separated), behind
(not separated), worse, equal, by the rule of ``spatialscout compare``:
:func:`spatialscout_gym.eval.analysis.stats.separated`) and written to the JSON under ``paired``.

``--procedural N`` evaluates on N held-out procedural scenes (``procedural:<seed>``, the ``val``
split's first N) instead of the catalog: a validation set for training runs that leaves the
catalog untouched.

``--mapper oracle-surface`` scores every NBV agent with the surface mapper (each seen target
submitted at the mean of its seen surface points instead of its reference centre): a policy runs
as a copy of its files whose ``nbv_config.json`` says that mapper (``--evals``/policies/), a
baseline with its ``mapper`` option. ``--nbv-env`` is ``evaluate``'s (default: each agent's own
dynamics). ``--seeds-of AGENT=S,S`` gives one agent other seeds (a slow baseline on fewer).
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

import numpy as np

from spatialscout_gym.core.records import RunRecord
from spatialscout_gym.scenes.splits import VAL_SEEDS

COLUMNS = ("all: mean IoU", ">0", ">0.5", ">0.9", "submitted: mean IoU", ">0.5", ">0.9", "coverage")
SUMMARY_COLUMNS = ("object-micro", "spread", "scene-macro", "spread", "single rooms (micro)",
                   "apartments (micro)")
SCENE_TYPES = ("single_room", "apartment")
"""Scene types of the per-type columns (``description["layout"]`` of a catalog scene)."""
MAPPERS = ("oracle", "oracle-surface")
PAIRED_FIGURES = ("object_micro.all.mean_iou", "object_micro.submitted.mean_iou")
"""Figures of the paired comparison (policy minus baseline): all-target and submitted mean IoU."""
VALIDATION_SEED = VAL_SEEDS.start
"""First seed of the ``--procedural`` validation scenes: the named ``val`` split's first scenes."""


def _row(m: dict) -> list[float]:
    a, s = m["all"], m["submitted"]
    return [100 * x for x in (a["mean_iou"], a["gt_0"], a["gt_50"], a["gt_90"], s["mean_iou"],
                              s["gt_50"], s["gt_90"], m["coverage"])]


def table_rows(per_seed: dict[str, list[list[float]]]) -> dict[str, list[float]]:
    """One row per agent: its only seed's row, or the mean over seeds labelled with the spread
    (max - min) of the all-target mean IoU (column 0), as in docs/nbv.md."""
    rows: dict[str, list[float]] = {}
    for label, seeds in per_seed.items():
        arr = np.asarray(seeds, dtype=float)
        if len(arr) == 1:
            rows[label] = list(arr[0])
        else:
            spread = float(arr[:, 0].max() - arr[:, 0].min())
            rows[f"{label} (spread {spread:.2f})"] = list(arr.mean(axis=0))
    return rows


def summary_rows(per_seed: dict[str, list[dict]]) -> dict[str, list[float]]:
    """The second table: per agent, the all-target mean IoU (%) object-micro and scene-macro, each
    the mean over seeds with its spread (max - min), then object-micro per scene type (mean over
    seeds; NaN where the evaluated scenes have none of that type). ``per_seed[label]`` holds one
    :func:`evaluate` result per seed."""
    rows: dict[str, list[float]] = {}
    for label, results in per_seed.items():
        micro = np.array([100 * r["object_micro"]["all"]["mean_iou"] for r in results])
        macro = np.array([100 * r["scene_macro"]["all"]["mean_iou"] for r in results])
        types = [np.mean([100 * r["by_type"][t]["all"]["mean_iou"] for r in results])
                 if all(t in r["by_type"] for r in results) else float("nan") for t in SCENE_TYPES]
        rows[label] = [micro.mean(), np.ptp(micro), macro.mean(), np.ptp(macro), *types]
    return rows


def agent_label(name: str) -> str:
    """``ppo:DIR/model.zip`` -> ``DIR`` (the run directory's name); other names unchanged."""
    if not (name.startswith("ppo:") and "/" in name):
        return name
    parts = name.rstrip("/").split("/")
    return parts[-2] if parts[-1].endswith(".zip") else parts[-1]


def markdown(rows: dict[str, list[float]], columns: tuple[str, ...] = COLUMNS) -> str:
    lines = ["| agent | " + " | ".join(columns) + " |", "|---" * (len(columns) + 1) + "|"]
    for name, vals in rows.items():
        lines.append(f"| {name} | " + " | ".join("-" if np.isnan(v) else f"{v:.2f}" for v in vals) + " |")
    return "\n".join(lines)


def scene_type(spec) -> str:
    """``"single_room"``, ``"apartment"`` or another ``description["layout"]`` (``"other"`` if none)."""
    return str((spec.public.description or {}).get("layout", "other"))


def policy_for_mapper(name: str, mapper: str, copies: Path) -> str:
    """The ``ppo:PATH`` agent that maps with ``mapper``: ``name`` itself when its ``nbv_config.json``
    says that mapper, else a copy of its ``model.zip`` and ``nbv_config.json`` under ``copies`` with
    only ``"mapper"`` changed (as docs/nbv.md's greedy copy changes only ``"deterministic"``), so
    ``spatialscout evaluate --agent ppo:COPY`` runs it."""
    import shutil
    from spatialscout_gym.nbv.policy_files import load_policy_config, policy_path
    model = policy_path(name[4:])
    if load_policy_config(model)["mapper"] == mapper:
        return name
    config = model.with_name("nbv_config.json")
    if not config.is_file():
        raise SystemExit(f"{name}: no nbv_config.json beside {model} to copy with mapper {mapper!r}")
    settings = json.loads(config.read_text())
    settings["mapper"] = mapper
    folder = copies / f"{agent_label(name)}@{mapper}"
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(model, folder / "model.zip")
    (folder / "nbv_config.json").write_text(json.dumps(settings, indent=2) + "\n")
    return f"ppo:{folder}"


def agent_and_options(name: str, mapper: str, copies: Path) -> tuple[str, dict]:
    """What ``spatialscout evaluate`` runs for ``name`` scored with ``mapper``: a policy maps with
    its ``nbv_config.json``'s mapper (:func:`policy_for_mapper`), a baseline with its ``mapper``
    option (none for the centre mapper, its default)."""
    if name.startswith("ppo:"):
        return policy_for_mapper(name, mapper, copies), {}
    return name, ({} if mapper == "oracle" else {"mapper": mapper})


def evaluation_dir(evals: Path, where: str, name: str, mapper: str, image_budget: int, resolution: int,
                   nbv_env: str | None) -> Path:
    """The evaluation directory of one (agent, mapper): ``spatialscout evaluate`` resumes it, so a
    rerun (or a longer agent list) runs only the episodes it lacks."""
    dynamics = "" if nbv_env is None else "_" + nbv_env.split("/")[-1]
    return evals / f"{where}_V{image_budget}_{resolution}px_{mapper}{dynamics}" / agent_label(name)


def run_evaluation(name: str, mapper: str, scene_ids: list[str], seeds: list[int], *, image_budget: int,
                   resolution: int, evals: Path, where: str, workers: int = 1, nbv_env: str | None = None,
                   progress: bool = True) -> Path:
    """Evaluate ``name`` on every scene x seed with :func:`spatialscout_gym.eval.running.evaluate.evaluate`,
    the API of ``spatialscout evaluate --agent NAME --scenes ... --seeds ... --image-budget V
    --resolution R`` (no tool-call cap, the agent's rng ``episode_rng(seed)``: the one seeding rule);
    ``nbv_env`` None runs each agent under its own dynamics (a policy: its ``nbv_config.json``;
    the baselines: NBV-v2), as ``evaluate`` without ``--nbv-env``. Returns the directory."""
    from spatialscout_gym.eval.layout import seed_dir_name
    from spatialscout_gym.eval.running.evaluate import (EpisodeTask, EvalSettings, check_settings, evaluate,
                                                        is_finished, scene_dir_name)
    agent, runtime = agent_and_options(name, mapper, evals / "policies")
    options = {} if nbv_env is None else {"walls": not nbv_env.endswith("-v1")}
    out = evaluation_dir(evals, where, name, mapper, image_budget, resolution, nbv_env)
    settings = EvalSettings(agent, image_budget, None, resolution, agent_options=options, runtime_options=runtime)
    if (out / "evaluate.json").is_file() and all(
            is_finished(EpisodeTask(s, k, str(out / scene_dir_name(s) / seed_dir_name(k))))
            for s in scene_ids for k in seeds):
        check_settings(out, settings)   # every episode is there: only refuse other settings, as a resume would
        return out
    summary = evaluate(out, settings, scene_ids, seeds=seeds, workers=workers, progress=progress)
    if summary.failed:
        raise SystemExit(f"{name} ({mapper}): {len(summary.failed)} episode(s) failed in {out}; rerun to resume")
    return out


CELL_KEYS = ("coverage", "all_mean_iou", "submitted_mean_iou", "num_targets", "num_submitted", "images_used",
             "blocked_moves", "path_length_m")
"""The figures of one per-episode cell (besides scene, seed, agent, mapper, env id and the per-target
IoU and hits), read from the episode's ``result.json``."""


def episode_cell(result: RunRecord, name: str, mapper: str, kind: str, score) -> dict:
    """One episode of an evaluation as a JSON cell: what ``spatialscout evaluate`` wrote in its
    ``result.json`` (coverage, all-target and submitted mean IoU, images used, the NBV block's
    blocked moves and path) plus the scene type and :func:`scene_record` (per-target IoU, hits),
    so a difference between tables can be traced to a scene and a seed."""
    nbv = result.nbv
    explored = nbv.exploration if nbv is not None else None
    return {"scene": result.scene_id, "seed": result.seed, "agent": name, "mapper": mapper,
            "env_id": None if nbv is None else nbv.env_id, "coverage": result.coverage,
            "all_mean_iou": None if result.all is None else result.all.mean_iou,
            "submitted_mean_iou": None if result.submitted is None else result.submitted.mean_iou,
            "num_targets": result.num_targets, "num_submitted": result.num_submitted,
            "images_used": result.counters.images_used,
            "blocked_moves": None if explored is None else explored.blocked_moves,
            "path_length_m": None if explored is None else explored.path_length_m,
            **scene_record(score, kind)}


def read_evaluation(out: Path, name: str, mapper: str, seeds: list[int], types: dict[str, str],
                    scene_ids: list[str]) -> tuple[dict[int, dict], list[dict]]:
    """Per seed, the :func:`aggregate` dict of an evaluation directory (``object_micro``,
    ``scene_macro``, ``by_type``: scene type -> object-micro, ``per_scene``: :func:`scene_record`),
    from the episodes as ``compare`` reads them (:func:`spatialscout_gym.eval.pages.report.find_runs`:
    each completed episode re-scored); and the per-episode cells (:func:`episode_cell`)."""
    from spatialscout_gym.core.scoring import aggregate
    from spatialscout_gym.eval.pages.report import find_runs
    records = {(r.scene_id, r.seed): r for r in find_runs(out)}
    missing = [(s, k) for k in seeds for s in scene_ids if (s, k) not in records]
    if missing:
        raise SystemExit(f"{out}: {len(missing)} episode(s) not completed, e.g. {missing[0]}")
    per_seed, cells = {}, []
    for seed in seeds:
        scores = [records[(s, seed)].score for s in scene_ids]
        res = aggregate(scores)
        res["by_type"] = {t: aggregate([sc for s, sc in zip(scene_ids, scores) if types[s] == t])["object_micro"]
                          for t in dict.fromkeys(types[s] for s in scene_ids)}
        res["per_scene"] = {s: scene_record(sc, types[s]) for s, sc in zip(scene_ids, scores)}
        per_seed[seed] = res
        cells += [episode_cell(records[(s, seed)].record, name, mapper, types[s], records[(s, seed)].score)
                  for s in scene_ids]
    return per_seed, cells


def scene_record(score, kind: str) -> dict:
    """What the paired comparison needs of one scored episode (a ``SceneScore``), as JSON: the
    scene type, M (accepted predictions), the per-target IoU and the ``IoU > 0 / 0.5 / 0.9`` hits."""
    return {"type": kind, "M": int(score.num_submitted), "iou": [round(float(x), 6) for x in score.iou],
            "hits": [[int(h) for h in row] for row in score.hits]}


def episode_scores(per_scene: dict[str, dict], seed: int) -> dict:
    """``{(scene id, seed): SceneScore}`` rebuilt from :func:`scene_record` entries (the cells of
    :mod:`spatialscout_gym.eval.analysis.stats`; centre errors and matched ids are not kept)."""
    from spatialscout_gym.core.scoring import SceneScore
    cells = {}
    for scene_id, r in per_scene.items():
        iou = np.asarray(r["iou"], dtype=float)
        cells[(scene_id, int(seed))] = SceneScore(scene_id, int(r["M"]), iou, np.full(iou.shape, np.nan),
                                                  [None] * len(iou), np.asarray(r["hits"], dtype=bool))
    return cells


def paired_subsets(scene_ids: list[str], types: dict[str, str], seeds: list[int]) -> dict[str, list[tuple[str, int]]]:
    """The (scene, seed) cells of each subset the paired comparison reports: ``overall`` (every
    scene, every seed), ``single rooms`` and ``apartments`` (every seed), and with seed 0 evaluated
    the five ``fifth k (seed 0)`` subsets: every fifth scene of ``scene_ids`` (catalog order) from
    offset k = 0..4, seed 0."""
    subsets = {"overall": [(s, k) for s in scene_ids for k in seeds]}
    for kind, label in zip(SCENE_TYPES, ("single rooms", "apartments")):
        subsets[label] = [(s, k) for s in scene_ids if types.get(s) == kind for k in seeds]
    if 0 in seeds:
        for offset in range(5):
            subsets[f"fifth {offset} (seed 0)"] = [(s, 0) for s in scene_ids[offset::5]]
    return {name: cells for name, cells in subsets.items() if cells}


def paired_table(base: dict, other: dict, subsets: dict[str, list[tuple[str, int]]],
                 n_resamples: int | None = None) -> dict[str, dict]:
    """``other`` minus ``base`` (both ``{(scene, seed): SceneScore}``) on each subset's cells:
    :func:`spatialscout_gym.eval.analysis.stats.paired_comparison` of :data:`PAIRED_FIGURES` (difference,
    scene-bootstrap 95% interval, paired permutation p-value), without its cell list."""
    from spatialscout_gym.eval.analysis.stats import N_RESAMPLES, paired_comparison
    out = {}
    for name, cells in subsets.items():
        a = {c: base[c] for c in cells if c in base}
        b = {c: other[c] for c in cells if c in other}
        res = paired_comparison(a, b, n_resamples=n_resamples or N_RESAMPLES, figures=PAIRED_FIGURES)
        res["cells"] = len(res.pop("cells"))
        out[name] = res
    return out


def verdict(row: dict) -> str:
    """A few words on a paired row (B - A), by the rule ``spatialscout compare`` uses
    (:func:`spatialscout_gym.eval.analysis.stats.separated`: the 95% interval excludes 0 and the paired
    permutation p-value is below 0.05): ``better`` or ``worse`` when separated, by the sign of the
    difference; else ``ahead (not separated)`` or ``behind (not separated)`` by that sign;
    ``equal`` where every cell is the same (e.g. submitted mean IoU with the centre mapper, 100%
    for both)."""
    from spatialscout_gym.eval.analysis.stats import separated
    if separated(row):
        return "better" if row["difference"] > 0 else "worse"
    if row["difference"] == 0 and row["low"] == row["high"] == 0:
        return "equal"
    return "ahead (not separated)" if row["difference"] >= 0 else "behind (not separated)"


def paired_cells(res: dict, figure: str) -> str:
    """One subset of :func:`paired_table` as markdown cells, in percentage points: scenes x seeds,
    the two figures, the difference, its 95% interval, p and the verdict."""
    row = res["figures"][figure]
    ci = "-" if row["low"] is None else f"[{100 * row['low']:+.2f}, {100 * row['high']:+.2f}]"
    p = "-" if row["p_value"] is None else f"{row['p_value']:.3f}"
    return (f"{res['scenes']} x {res['cells'] // max(res['scenes'], 1)} | {100 * row['a']:.2f} | "
            f"{100 * row['b']:.2f} | {100 * row['difference']:+.2f} | {ci} | {p} | {verdict(row)}")


def paired_markdown(table: dict[str, dict], figure: str, base: str, other: str) -> str:
    """Markdown rows of one figure of :func:`paired_table`, in percentage points."""
    lines = [f"| subset | scenes x seeds | {base} | {other} | difference | 95% interval | p | verdict |",
             "|---|---|---|---|---|---|---|---|"]
    lines += [f"| {name} | {paired_cells(res, figure)} |" for name, res in table.items()]
    return "\n".join(lines)


PROFILE_TAUS = tuple(float(x) for x in np.linspace(0.0, 1.0, 21))
"""Thresholds of the performance profiles (fraction of episodes whose all-target mean IoU exceeds tau)."""
PROFILE_COLUMNS = (0.0, 0.25, 0.5, 0.75, 0.9)
"""The thresholds printed (the JSON holds every one of :data:`PROFILE_TAUS`)."""


def episode_matrix(results: list[dict]) -> np.ndarray:
    """Per-episode all-target mean IoU, shape (scenes, seeds): ``results`` holds one :func:`evaluate`
    result per seed over the same scenes (rliable's (tasks, runs) score matrix)."""
    scenes = list(results[0]["per_scene"])
    return np.array([[float(np.mean(r["per_scene"][s]["iou"])) if r["per_scene"][s]["iou"] else 0.0
                      for r in results] for s in scenes])


def rliable_summary(scores: np.ndarray, n_resamples: int | None = None) -> dict:
    """The rliable figures of one agent's (scenes, seeds) episode scores: the interquartile mean
    (:func:`spatialscout_gym.eval.analysis.stats.iqm`) and the performance profile (fraction of episodes
    above each of :data:`PROFILE_TAUS`), each with its 95% interval from
    :func:`spatialscout_gym.eval.analysis.stats.stratified_bootstrap` (each scene's seeds resampled within
    the scene; None with one seed: no run to resample within a scene)."""
    from spatialscout_gym.eval.analysis.stats import N_RESAMPLES, iqm, stratified_bootstrap
    n = n_resamples or N_RESAMPLES
    taus = np.asarray(PROFILE_TAUS)
    flat = scores.ravel()   # row-major: the scenes' seeds one scene after another, as the strata

    def profile(x, axis=-1):
        return np.stack([(x > t).mean(axis=axis) for t in taus], axis=0)

    strata = [scores.shape[1]] * scores.shape[0]
    ci_iqm = stratified_bootstrap(strata, lambda idx: iqm(flat[idx], axis=-1), n) if scores.shape[1] > 1 else None
    ci_prof = stratified_bootstrap(strata, lambda idx: profile(flat[idx]), n) if scores.shape[1] > 1 else None
    return {"episodes": int(flat.size), "scenes": int(scores.shape[0]), "seeds": int(scores.shape[1]),
            "iqm": float(iqm(flat)), "iqm_low": None if ci_iqm is None else float(ci_iqm[0]),
            "iqm_high": None if ci_iqm is None else float(ci_iqm[1]),
            "profile": {"tau": list(PROFILE_TAUS), "fraction": [float(v) for v in profile(flat)],
                        "low": None if ci_prof is None else [float(v) for v in ci_prof[0]],
                        "high": None if ci_prof is None else [float(v) for v in ci_prof[1]]},
            "method": "interquartile mean and performance profile (rliable conventions); 95% percentile "
                      "intervals from a stratified bootstrap over seeds within scenes (scipy.stats.bootstrap)",
            "n_resamples": n}


def rliable_markdown(summaries: dict[str, dict]) -> str:
    """Markdown rows: IQM (%) with its interval, then the performance profile at
    :data:`PROFILE_COLUMNS` (% of episodes above tau, with the interval where there is one)."""
    def cell(v, lo, hi):
        return f"{100 * v:.1f}" if lo is None else f"{100 * v:.1f} [{100 * lo:.1f}, {100 * hi:.1f}]"
    head = ["agent", "episodes", "IQM % [95%]"] + [f"> {t:g} %" for t in PROFILE_COLUMNS]
    lines = ["| " + " | ".join(head) + " |", "|---" * len(head) + "|"]
    for name, r in summaries.items():
        prof = r["profile"]
        idx = [int(np.argmin(np.abs(np.asarray(prof["tau"]) - t))) for t in PROFILE_COLUMNS]
        cells = [cell(prof["fraction"][i], None if prof["low"] is None else prof["low"][i],
                      None if prof["high"] is None else prof["high"][i]) for i in idx]
        lines.append(f"| {name} | {r['episodes']} | {cell(r['iqm'], r['iqm_low'], r['iqm_high'])} | "
                     + " | ".join(cells) + " |")
    return "\n".join(lines)


HEADLINE_COLUMNS = ("centre: coverage", "centre: all-target IoU", "surface: coverage", "surface: all-target IoU",
                    "surface: submitted IoU")
"""The headline table: coverage and all-target mean IoU (object-micro %) under the centre and the
surface mapper, and the surface mapper's submitted mean IoU (how well mapped targets are placed)."""


def headline_rows(centre: dict, surface: dict) -> dict[str, list[float]]:
    """One row per agent of both ``--out`` JSONs (centre mapper, surface mapper): the mean over the
    agent's seeds in each of :data:`HEADLINE_COLUMNS`, in %; the label names the seeds of each."""
    rows = {}
    for name in centre["agents"]:
        if name not in surface["agents"]:
            continue
        def mean(table: dict, view: str, key: str) -> tuple[float, list[str]]:
            seeds = [k for k in table["agents"][name] if k.isdigit()]
            vals = [table["agents"][name][k]["object_micro"] for k in seeds]
            return 100 * float(np.mean([v[key] if view == "" else v[view][key] for v in vals])), seeds
        (c_cov, c_seeds), (c_iou, _) = mean(centre, "", "coverage"), mean(centre, "all", "mean_iou")
        (s_cov, s_seeds), (s_iou, _) = mean(surface, "", "coverage"), mean(surface, "all", "mean_iou")
        s_sub, _ = mean(surface, "submitted", "mean_iou")
        label = f"{agent_label(name)} (seeds {' '.join(c_seeds)} / {' '.join(s_seeds)})"
        rows[label] = [c_cov, c_iou, s_cov, s_iou, s_sub]
    return rows


HEADLINE_SUBSETS = ("overall", "single rooms", "apartments")
"""The subsets of the headline's paired table (the JSONs hold the fifths too)."""


def headline_paired_markdown(centre: dict, surface: dict) -> str:
    """The headline's paired table: each policy minus the JSONs' baseline in all-target mean IoU,
    under the centre then the surface mapper, on :data:`HEADLINE_SUBSETS` (percentage points)."""
    lines = ["| policy | mapper | subset | scenes x seeds | {base} | policy | difference | 95% interval | p | verdict |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    base = ""
    for mapper, table in (("centre", centre), ("surface", surface)):
        for name, paired in table["paired"].items():
            base = paired["baseline"]
            lines += [f"| {agent_label(name)} | {mapper} | {subset} | "
                      f"{paired_cells(paired['subsets'][subset], 'object_micro.all.mean_iou')} |"
                      for subset in HEADLINE_SUBSETS]
    lines[0] = lines[0].format(base=base)
    return "\n".join(lines)


def scene_set_key(procedural: bool) -> str:
    """What the scenes' content depends on, for ``--cache`` keys: the catalog version and a digest of
    its manifest (every scene's content hash), or for procedural scenes the generator's rules
    version, source and data files; so a re-frozen catalog or changed generator never reuses a
    result computed on other scenes."""
    import hashlib
    from spatialscout_gym.scenes.catalog import asset_fingerprint, generator_fingerprint, manifest_path
    from spatialscout_gym.scenes.procedural import DEFAULT_RULES_VERSION
    if not procedural:
        path = manifest_path()
        version = json.loads(path.read_text())["catalog_version"]
        return f"catalog-v{version}-{hashlib.sha256(path.read_bytes()).hexdigest()[:10]}"
    digest = hashlib.sha256((generator_fingerprint() + asset_fingerprint(DEFAULT_RULES_VERSION)).encode())
    return f"procedural-rules-v{DEFAULT_RULES_VERSION}-{digest.hexdigest()[:10]}"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--scenes", type=int, default=80, help="first N catalog scenes (default 80)")
    p.add_argument("--image-budget", type=int, default=20, help="V, images per episode (default 20)")
    p.add_argument("--resolution", type=int, default=64, help="render grid, pixels (default 64)")
    p.add_argument("--agents", nargs="+", default=["origin", "uniform-ball", "oracle-explorer",
                                                   "oracle-click", "random-nbv", "frontier-nbv"])
    p.add_argument("--seeds", type=int, nargs="+", default=[0], help="evaluation seeds")
    p.add_argument("--procedural", type=int, default=0,
                   help="evaluate on N held-out procedural scenes instead of the catalog (validation)")
    p.add_argument("--mapper", choices=MAPPERS, default="oracle",
                   help="mapper of every agent that has one (default oracle: reference centres)")
    p.add_argument("--seeds-of", nargs="+", default=[], metavar="AGENT=S,S",
                   help="other seeds for some agents (e.g. a slow baseline on seed 0 only: random-nbv=0)")
    p.add_argument("--workers", type=int, default=1,
                   help="evaluate's worker processes, one episode each at a time (default 1)")
    p.add_argument("--out", type=Path, default=None, help="write all metrics and the per-episode cells as JSON here")
    p.add_argument("--evals", type=Path, default=Path("runs/nbv_tables"),
                   help="where the evaluation directories go (one per agent and mapper; evaluate resumes them, "
                        "so a rerun runs only what is missing; default runs/nbv_tables)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("--baseline", default="frontier-nbv",
                   help="every ppo:PATH agent is compared with this agent (one of --agents), paired on "
                        "(scene, seed) cells (default frontier-nbv)")
    p.add_argument("--nbv-env", choices=("SpatialScout/NBV-v1", "SpatialScout/NBV-v2"), default=None,
                   help="the dynamics of every NBV agent (evaluate's --nbv-env); default: each agent's own, as "
                        "evaluate without the flag (a policy: its nbv_config.json; the baselines: NBV-v2)")
    p.add_argument("--resamples", type=int, default=None,
                   help="bootstrap and permutation resamples of the paired comparison (default 9999)")
    p.add_argument("--headline", nargs=2, type=Path, default=None, metavar=("CENTRE_JSON", "SURFACE_JSON"),
                   help="print the headline table of two --out files (centre mapper, surface mapper) and exit")
    args = p.parse_args(argv)
    if args.headline is not None:
        centre, surface = (json.loads(path.read_text()) for path in args.headline)
        if (centre["mapper"], surface["mapper"]) != ("oracle", "oracle-surface"):
            p.error(f"--headline takes a centre-mapper then a surface-mapper JSON, got {centre['mapper']} and "
                    f"{surface['mapper']}")
        print(markdown(headline_rows(centre, surface), HEADLINE_COLUMNS))
        print()
        print(headline_paired_markdown(centre, surface))
        return 0
    if args.workers < 1 or args.scenes < 1 or args.image_budget < 1:
        p.error(f"--workers, --scenes and --image-budget must be >= 1, got {args.workers}, {args.scenes} "
                f"and {args.image_budget}")

    from spatialscout_gym.scenes.catalog import catalog_scene_ids, manifest
    scene_ids = catalog_scene_ids()[: args.scenes] if args.procedural <= 0 else \
        [f"procedural:{VALIDATION_SEED + i}" for i in range(args.procedural)]
    seeds_of = {name: list(args.seeds) for name in args.agents}
    for item in args.seeds_of:
        name, _, listed = item.partition("=")
        if name not in seeds_of or not listed:
            p.error(f"--seeds-of takes AGENT=S[,S...] for an agent of --agents, got {item!r}")
        seeds_of[name] = [int(k) for k in listed.split(",")]
    from spatialscout_gym.scenes.catalog import scene_by_name
    types = {sid: scene_type(scene_by_name(sid)) for sid in scene_ids}
    everything: dict = {"scenes": scene_ids, "catalog_version": manifest()["catalog_version"],
                        "image_budget": args.image_budget, "resolution": args.resolution,
                        "mapper": args.mapper, "seeds": args.seeds, "nbv_env": args.nbv_env,
                        "seeding_rule": "numpy.random.default_rng(seed) per episode (episode_rng), as spatialscout evaluate",
                        "agents": {}, "cells": []}
    results: dict[tuple[str, int], dict] = {}
    t0 = time.time()
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    where = scene_set_key(args.procedural > 0)
    for name in args.agents:
        started = time.time()
        out = run_evaluation(name, args.mapper, scene_ids, seeds_of[name], image_budget=args.image_budget,
                             resolution=args.resolution, evals=args.evals, where=where, workers=args.workers,
                             nbv_env=args.nbv_env, progress=not args.no_progress)
        per_seed, cells = read_evaluation(out, name, args.mapper, seeds_of[name], types, scene_ids)
        results.update({(name, seed): res for seed, res in per_seed.items()})
        everything["cells"] += cells
        everything["agents"][name] = {"evaluation": str(out)}
        print(f"# {name}: " + ", ".join(f"seed {k} all mIoU {100 * r['object_micro']['all']['mean_iou']:.2f}%"
                                        for k, r in per_seed.items()) + f" ({time.time() - started:.0f} s)", flush=True)
    per_agent: dict[str, list[list[float]]] = {}
    per_agent_results: dict[str, list[dict]] = {}
    for name in args.agents:
        runs = [results[(name, seed)] for seed in seeds_of[name]]
        per_agent[agent_label(name)] = [_row(r["object_micro"]) for r in runs]
        per_agent_results[agent_label(name)] = runs
        arr = np.array(per_agent[agent_label(name)])
        everything["agents"][name].update({str(seed): {k: r[k] for k in ("object_micro", "scene_macro", "by_type")}
                                           for seed, r in zip(seeds_of[name], runs)})
        everything["agents"][name]["spread"] = [float(x) for x in arr.max(axis=0) - arr.min(axis=0)]
    counts = {t: 0 for t in SCENE_TYPES}
    for kind in types.values():
        counts[kind] = counts.get(kind, 0) + 1
    everything["scene_types"] = counts
    where = f"catalog scenes (v{everything['catalog_version']})" if args.procedural <= 0 else \
        f"held-out procedural scenes (seeds {VALIDATION_SEED}+)"
    print(f"\n{len(scene_ids)} {where}, V = {args.image_budget} "
          f"images, {args.resolution} px, mapper {args.mapper}, object-micro %, mean of seeds {args.seeds} "
          f"(spread = max - min of all: mean IoU); {time.time() - t0:.0f} s with {args.workers} worker(s):\n")
    print(markdown(table_rows(per_agent)))
    print("\nAll-target mean IoU %, mean of seeds (spread = max - min); "
          + ", ".join(f"{counts.get(t, 0)} {t.replace('_', ' ')}s" for t in SCENE_TYPES) + ":\n")
    print(markdown(summary_rows(per_agent_results), SUMMARY_COLUMNS))
    summaries = {label: rliable_summary(episode_matrix(runs), args.resamples)
                 for label, runs in per_agent_results.items()}
    everything["rliable"] = summaries
    print(f"\nAll-target mean IoU per episode, rliable conventions: interquartile mean and performance "
          f"profile (% of episodes above tau), 95% stratified bootstrap intervals (seeds resampled within "
          f"scenes; none with one seed), {args.resamples or 9999} resamples:\n")
    print(rliable_markdown(summaries))
    everything["paired"] = {}
    if args.baseline in args.agents:
        from spatialscout_gym.eval.analysis.stats import PAIRED_METHOD, SEED
        subsets = paired_subsets(scene_ids, types, args.seeds)
        base = {c: v for seed in seeds_of[args.baseline]
                for c, v in episode_scores(results[(args.baseline, seed)]["per_scene"], seed).items()}
        for name in [a for a in args.agents if a.startswith("ppo:") and a != args.baseline]:
            other = {c: v for seed in seeds_of[name]
                     for c, v in episode_scores(results[(name, seed)]["per_scene"], seed).items()}
            table = paired_table(base, other, subsets, args.resamples)
            everything["paired"][name] = {"baseline": args.baseline, "subsets": table}
            for figure, title in zip(PAIRED_FIGURES, ("all-target", "submitted")):
                print(f"\n{agent_label(name)} minus {args.baseline}, {title} mean IoU (percentage points), "
                      f"paired on (scene, seed) cells; 95% intervals: {PAIRED_METHOD}, "
                      f"{args.resamples or 9999} resamples, seed {SEED}. p: paired permutation test over scenes:\n")
                print(paired_markdown(table, figure, args.baseline, agent_label(name)))
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(everything, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
