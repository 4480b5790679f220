"""``spatialscout score``: score accepted maps against ground truth (docs/protocol.md section 6).

Each PATH is a scene directory (``ground_truth.json`` + ``predictions.json``) or a directory of
them, such as an evaluation directory (``spatialscout evaluate --out DIR``): every episode is
scored, seeds of one scene included. When a scene id occurs more than once (several seeds), each
episode is a row of its own, named by its folder (``Kitchen_01/seed_0``), and scene-macro averages
over those episodes, as ``leaderboard`` does; two folders that hold different scenes under one id
are refused. Prints a Table-3-style table in percent (one row per scene, then object-micro and
scene-macro), or with ``--json`` ``{"object_micro": M, "scene_macro": M, "scenes": {id: M}, "scorer": {id: record}}`` with
ratios as fractions and ``_m`` keys in metres. ``--reference origin|uniform-ball`` scores an
inventory-only reference map instead of ``predictions.json``.
"""

from __future__ import annotations

import argparse
import json
import zlib
from pathlib import Path

import numpy as np

import dataclasses

from spatialscout_gym.cli.errors import CliError
from spatialscout_gym.core.files import SceneFileError, find_scene_dirs, load_ground_truth, load_predictions, read_json
from spatialscout_gym.core.references import origin_predictions, uniform_ball_predictions
from spatialscout_gym.core.run_files import GROUND_TRUTH_FILE, PREDICTIONS_FILE
from spatialscout_gym.core.scoring import (COMPAT_MODES, DEFAULT_LAMBDA_M, Compat, GroundTruth, SceneScore, aggregate,
                                          score_scene)
from spatialscout_gym.core.table import format_table

REFERENCES = ("origin", "uniform-ball")


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "score", help="score maps (predictions.json) against ground_truth.json, Table-3 style",
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("paths", nargs="+", metavar="PATH",
                   help="a scene directory or a directory of scene directories")
    p.add_argument("--json", action="store_true", help="print the metrics as JSON (fractions, metres)")
    p.add_argument("--compat", choices=COMPAT_MODES, default="paper",
                   help="'paper' (default, docs/protocol.md section 6) or 'release' (the authors' released "
                        "scorer: no 1 cm floor, box of the submitted id)")
    p.add_argument("--lambda", dest="lam", type=float, default=DEFAULT_LAMBDA_M, metavar="METRES",
                   help="omission penalty of the full-scene loss (default %(default)s m)")
    p.add_argument("--reference", choices=REFERENCES,
                   help="score an inventory-only reference map instead of predictions.json")
    p.add_argument("--seed", type=int, default=0,
                   help="seed of --reference uniform-ball (each scene draws from (seed, scene id))")
    p.set_defaults(func=run)


def reference_positions(kind: str, gt: GroundTruth, seed: int) -> dict[str, list[float]]:
    """The ``kind`` reference map of one scene; uniform-ball draws from ``(seed, crc32(scene_id))``
    so a scene's map does not depend on which other scenes are scored."""
    if kind == "origin":
        return origin_predictions(gt)
    rng = np.random.default_rng([seed, zlib.crc32(gt.scene_id.encode("utf-8"))])
    return uniform_ball_predictions(gt.ids, gt.radius_m, rng)


def score_paths(paths: list[str], *, compat: Compat = "paper", lam: float = DEFAULT_LAMBDA_M,
                reference: str | None = None, seed: int = 0) -> list[SceneScore]:
    """Score every scene directory under ``paths``; :class:`CliError` for any bad input."""
    if not np.isfinite(lam) or lam < 0:
        raise CliError(f"--lambda must be a finite number of metres >= 0, got {lam}")
    if seed < 0:
        raise CliError(f"--seed must be >= 0, got {seed}")
    dirs: list[tuple[Path, str]] = []     # (scene directory, its name relative to the PATH given)
    resolved: set[Path] = set()           # a set, not a rescan per directory: 80 scenes cost 3,240 resolves
    try:
        for path in paths:
            for d in find_scene_dirs(path):
                if d.resolve() not in resolved:
                    resolved.add(d.resolve())
                    rel = d.relative_to(path).as_posix() if d != Path(path) else d.name
                    dirs.append((d, rel))
        scores: list[SceneScore] = []
        names: list[str] = []
        first: dict[str, tuple[Path, object]] = {}    # scene id -> (its first folder, its ground truth file)
        for d, rel in dirs:
            gt = load_ground_truth(d)
            truth = read_json(d / GROUND_TRUTH_FILE)
            if gt.scene_id in first and first[gt.scene_id][1] != truth:
                raise CliError(f"{d / GROUND_TRUTH_FILE}: scene id {gt.scene_id!r} names another scene in "
                               f"{first[gt.scene_id][0] / GROUND_TRUTH_FILE} (the ground truths differ); score "
                               "them separately")
            first.setdefault(gt.scene_id, (d, truth))
            positions = (reference_positions(reference, gt, seed) if reference
                         else load_predictions(d, gt))
            scores.append(score_scene(gt, positions, compat=compat, lam=lam))
            names.append(rel)
    except SceneFileError as exc:
        raise CliError(str(exc)) from None
    if len(first) == len(scores):
        return scores
    # seeds of one scene: each episode a row of its own, named by its folder (unique: one per directory)
    unique = len(set(names)) == len(names)
    return [dataclasses.replace(s, scene_id=n if unique else str(d)) for s, n, (d, _) in zip(scores, names, dirs)]



def run(args: argparse.Namespace) -> int:
    scores = score_paths(args.paths, compat=args.compat, lam=args.lam, reference=args.reference,
                         seed=args.seed)
    summary = aggregate(scores, lam=args.lam)
    if args.json:   # with the scorer's record per scene (metric version, minimum side, Q, H_tau, M, N)
        summary["scorer"] = {sc.scene_id: sc.record(args.lam) for sc in scores}
        print(json.dumps(summary, indent=2))
    else:
        rows = dict(summary["scenes"])
        rows["object-micro"] = summary["object_micro"]
        rows["scene-macro"] = summary["scene_macro"]
        what = f"reference '{args.reference}'" if args.reference else PREDICTIONS_FILE
        print(f"{len(scores)} scene(s), {what}, compat={args.compat}, lambda={args.lam:g} m")
        print(format_table(rows))
    return 0
