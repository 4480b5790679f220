"""``spatialscout scenes import-maniskill``: turn ManiSkill3 scene datasets (iTHOR, RoboTHOR,
ArchitecTHOR, ProcTHOR, ReplicaCAD) into scene directories.

Each imported scene becomes ``OUT/<scene_id>/`` with ``scene_spec.json`` (full spec),
``entity_library.json`` (public half) and ``ground_truth.json`` (scorer format). Listing ``OUT`` in
``$SPATIALSCOUT_SCENE_DIRS`` registers ``SpatialScout/<scene_id>-v0`` and lets ``run``,
``evaluate``, ``score`` and ``scenes render`` take the scene id. ``cli/scenes.py`` calls
:func:`add_import_parser` with its sub-parsers.
"""

from __future__ import annotations

import argparse
import os
import sys
import warnings
from pathlib import Path

from spatialscout_gym.cli.errors import CliError

__all__ = ["add_import_parser", "run_import"]


def add_import_parser(scenes_subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> argparse.ArgumentParser:
    """Add the ``import-maniskill`` sub-command to ``spatialscout scenes``."""
    from spatialscout_gym.scenes.maniskill import DATASETS, SCENE_DIRS_ENV

    p = scenes_subparsers.add_parser(
        "import-maniskill", help="import ManiSkill3 scene datasets (AI2-THOR family, ReplicaCAD)",
        description="Read scenes of a ManiSkill3 scene dataset from the ManiSkill asset directory "
                    "($MS_ASSET_DIR/data or ~/.maniskill/data), choose the initial camera and the "
                    "targets (docs/protocol.md section 8) and write one scene directory per scene. Add OUT "
                    f"to ${SCENE_DIRS_ENV} to use the scenes by id.")
    p.add_argument("--dataset", required=True, choices=list(DATASETS), help="ManiSkill scene dataset")
    p.add_argument("--scenes", nargs="+", metavar="SCENE",
                   help="scene names as in the dataset (e.g. FloorPlan7_physics, apt_0); default all")
    p.add_argument("--staging", action="store_true",
                   help="ReplicaCAD: also import the 84 v3_sc*_staging_* scenes, which ManiSkill "
                        "loads only on request (default: ManiSkill's scene list)")
    p.add_argument("--targets", type=int, choices=(35, 40), default=40,
                   help="targets per scene (the paper's catalog uses 35 or 40; default 40)")
    p.add_argument("--out", required=True, type=Path, help="output directory (created if missing)")
    p.add_argument("--start-poses", type=Path, default=None, metavar="JSON",
                   help="fixed start poses, {scene name: {\"position\": [x, y, z], \"yaw_deg\": .., "
                        "\"pitch_deg\": ..}} in the imported scene's world frame (metres, degrees); the "
                        "target rule then runs from that pose. Scenes not named get a camera this package "
                        "chooses (docs/scenes.md)")
    p.add_argument("--asset-dir", type=Path, default=None,
                   help="ManiSkill data directory (default: $MS_ASSET_DIR/data or ~/.maniskill/data)")
    p.set_defaults(func=run_import)
    return p


def run_import(args: argparse.Namespace) -> int:
    from spatialscout_gym.scenes import maniskill as ms
    from spatialscout_gym.scenes.export import export_scene

    try:
        available = ms.list_scenes(args.dataset, args.asset_dir, include_staging=args.staging)
        if args.scenes:  # a scene named explicitly may be a staging scene
            available = ms.list_scenes(args.dataset, args.asset_dir, include_staging=True)
    except ms.ManiSkillAssetsMissing as exc:
        raise CliError(str(exc)) from exc
    names = list(args.scenes or available)
    try:
        start_poses = ms.read_start_poses(args.start_poses) if args.start_poses is not None else {}
    except ValueError as exc:
        raise CliError(str(exc)) from None
    lacking = [n for n in start_poses if n not in available]
    if lacking:
        raise CliError(f"--start-poses {args.start_poses} names scene(s) {args.dataset} lacks: {', '.join(lacking)}")
    unknown = [n for n in names if n not in available]
    if unknown:
        shown = ", ".join(list(available)[:10]) + (" ..." if len(available) > 10 else "")
        raise CliError(f"{args.dataset} has no scene(s) {', '.join(unknown)}; found {len(available)}: "
                       f"{shown}")
    from tqdm import tqdm

    cache: dict = {}
    written, skipped, warned = [], [], set()
    for name in tqdm(names, desc=f"import {args.dataset}", disable=len(names) < 3, file=sys.stderr):
        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always", ms.ManiSkillDataWarning)
                try:
                    spec = ms.import_scene(args.dataset, name, args.targets, asset_dir=args.asset_dir,
                                           mesh_cache=cache, scenes=available, start_pose=start_poses.get(name))
                finally:
                    for w in caught:  # one line per distinct warning, not one per scene
                        if str(w.message) not in warned:
                            warned.add(str(w.message))
                            print(f"warning: {w.message}", file=sys.stderr)
        except (ms.ManiSkillAssetsMissing, ImportError) as exc:
            raise CliError(str(exc)) from exc
        except ValueError as exc:  # too few candidates, no open floor
            skipped.append(f"{name}: {exc}")
            continue
        d = export_scene(spec, args.out)
        written.append(spec.scene_id)
        print(f"{spec.scene_id}\t{len(spec.public.inventory)} targets\tr={spec.public.radius_m:.2f} m\t{d}")
        if len(cache) > 2000:  # ProcTHOR has thousands of templates; bound memory
            cache.clear()
    for line in skipped:
        print(f"skipped {line}", file=sys.stderr)
    if not written:
        raise CliError(f"no scene of {args.dataset} could be imported ({len(skipped)} skipped; see above)")
    out = args.out.resolve()
    print(f"wrote {len(written)} scene(s) to {out}; use them by id with: "
          f"export {ms.SCENE_DIRS_ENV}={out}{os.pathsep}${ms.SCENE_DIRS_ENV}")
    return 0
