"""``spatialscout scenes``: browse, measure, export and (maintainers) freeze the scene catalog.

* ``scenes list``: id, layout, rooms, targets, radius and hash prefix of every catalog scene
  (read from the manifest; nothing is generated).
* ``scenes stats [--json]``: docs/protocol.md section 8's statistics over the catalog, beside the paper's.
* ``scenes export [SCENE...] --out DIR``: ``entity_library.json``, ``ground_truth.json`` and
  ``scene_spec.json`` per scene (default: the whole catalog).
* ``scenes freeze``: maintainer command; regenerates the manifest ``scenes/data/catalog_v1.json``
  after a deliberate catalog change (bump ``CATALOG_VERSION`` first).
* ``scenes render``: added by ``cli/scenes_render.py`` when present.
* ``scenes import-maniskill``: ManiSkill3 datasets to scene directories (``cli/scenes_import.py``).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from spatialscout_gym.cli.errors import CliError
from spatialscout_gym.cli.options import scene_from_arg


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("scenes", help="list, measure, export and render the offline scene catalog",
                              description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="scenes_command", metavar="SUBCOMMAND")
    p.set_defaults(func=lambda args: (p.print_help(), 2)[1])

    q = sub.add_parser("list", help="id, layout, rooms, targets, radius and hash of every catalog scene")
    q.add_argument("--json", action="store_true", help="print the manifest rows as JSON")
    q.set_defaults(func=run_list)

    q = sub.add_parser("stats", help="catalog statistics beside the paper's (docs/protocol.md section 8)")
    q.add_argument("--json", action="store_true", help="print {'ours': ..., 'paper': ...} as JSON")
    q.set_defaults(func=run_stats)

    q = sub.add_parser("export", help="write entity_library.json, ground_truth.json, scene_spec.json per scene")
    q.add_argument("scenes", nargs="*", metavar="SCENE",
                   help="catalog ids, procedural:<seed>, or spec .json paths (default: the whole catalog)")
    q.add_argument("--out", required=True, type=Path, help="output directory (one sub-directory per scene)")
    q.set_defaults(func=run_export)

    q = sub.add_parser("freeze", help="(maintainers) regenerate the catalog manifest after a versioned change")
    q.add_argument("--out", type=Path, default=None, help="write here instead of the package's manifest")
    q.set_defaults(func=run_freeze)

    try:
        from spatialscout_gym.cli.scenes_render import add_render_parser
    except ImportError:
        pass
    else:
        add_render_parser(sub)
    from spatialscout_gym.cli.scenes_import import add_import_parser  # issue 8: import-maniskill
    add_import_parser(sub)


def run_list(args: argparse.Namespace) -> int:
    from spatialscout_gym.scenes.catalog import manifest
    m = manifest()
    if args.json:
        print(json.dumps(m, indent=1))
        return 0
    print(f"catalog v{m['catalog_version']}: {len(m['scenes'])} scenes")
    print(f"{'scene':<15} {'layout':<11} {'rooms':<48} {'targets':>7} {'radius_m':>8}  hash")
    for s in m["scenes"]:
        print(f"{s['scene_id']:<15} {s['layout']:<11} {','.join(s['rooms']):<48} {s['n_targets']:>7} "
              f"{s['radius_m']:>8.2f}  {s['content_hash'][:12]}")
    return 0


def _fmt(v) -> str:
    if isinstance(v, float):
        return f"{v:.3f}"
    if isinstance(v, list):
        return ", ".join(f"{a} {b}" for a, b in v[:6])
    if isinstance(v, dict):
        return ", ".join(f"{a} {b}" for a, b in v.items())
    return str(v)


def run_stats(args: argparse.Namespace) -> int:
    from spatialscout_gym.scenes.catalog import catalog_entries, generate_catalog_scene
    from spatialscout_gym.scenes.stats import PAPER_STATS, catalog_stats
    from tqdm import tqdm
    entries = catalog_entries()
    specs = [generate_catalog_scene(e) for e in tqdm(entries, desc="generating the catalog", unit="scene",
                                                     leave=False, disable=None)]  # None: only on a terminal
    ours = catalog_stats(specs)
    if args.json:
        print(json.dumps({"ours": ours, "paper": PAPER_STATS}, indent=1))
        return 0
    print(f"{'statistic':<28} {'ours':<60} paper")
    for k, v in ours.items():
        print(f"{k:<28} {_fmt(v):<60} {_fmt(PAPER_STATS[k]) if k in PAPER_STATS else '-'}")
    return 0


def run_export(args: argparse.Namespace) -> int:
    from spatialscout_gym.scenes.catalog import catalog_scene_ids
    from spatialscout_gym.scenes.export import export_scene
    names = args.scenes or catalog_scene_ids()
    if not names:
        raise CliError("no scenes to export: the catalog manifest is missing; name scenes explicitly")
    it = names
    if len(names) > 3:
        from tqdm import tqdm
        it = tqdm(names, desc="exporting", unit="scene")
    for name in it:
        export_scene(scene_from_arg(name), args.out)
    print(f"wrote {len(names)} scene directories under {args.out}")
    return 0


def run_freeze(args: argparse.Namespace) -> int:
    from spatialscout_gym.scenes.catalog import CATALOG_VERSION, MANIFEST_PATH, freeze_manifest
    data = freeze_manifest(args.out, progress=True)
    print(f"froze catalog v{CATALOG_VERSION}: {len(data['scenes'])} scenes -> {args.out or MANIFEST_PATH}")
    return 0
