"""``spatialscout scenes``: browse, measure, export and (maintainers) freeze the scene catalog.

* ``scenes list``: id, layout, rooms, targets, radius and hash prefix of every catalog scene
  (read from the manifest; nothing is generated).
* ``scenes stats [--json] [--plot PNG]``: docs/protocol.md section 8's statistics over the catalog,
  beside the paper's, the inventory-only references' losses, and per category our median object
  size against AI2-THOR's assets (the weighted ratio and spread, a bar plot with ``--plot``).
* ``scenes export [SCENE...] --out DIR``: ``entity_library.json``, ``ground_truth.json`` and
  ``scene_spec.json`` per scene (default: the whole catalog).
* ``scenes freeze``: maintainer command; regenerates a version's manifest
  (``scenes/data/catalog_v2.json`` for ``--catalog 2.0``) after a deliberate catalog change.

Every subcommand takes ``--catalog 1.0|2.0|3.0|3.1`` (default 3.1): the catalog version it lists,
measures, exports or renders.
* ``scenes render``: added by ``cli/scenes_render.py`` when present.
* ``scenes import-maniskill``: ManiSkill3 datasets to scene directories (``cli/scenes_import.py``).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from spatialscout_gym.cli.errors import CliError
from spatialscout_gym.cli.options import add_catalog_option, apply_catalog_option, scene_from_arg


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("scenes", help="list, measure, export and render the offline scene catalog",
                              description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="scenes_command", metavar="SUBCOMMAND")
    p.set_defaults(func=lambda args: (p.print_help(), 2)[1])

    q = sub.add_parser("list", help="id, layout, rooms, targets, radius and hash of every catalog scene")
    q.add_argument("--json", action="store_true", help="print the manifest rows as JSON")
    q.set_defaults(func=run_list)

    q = sub.add_parser("stats", help="catalog statistics beside the paper's (docs/protocol.md section 8) "
                                     "and object sizes against AI2-THOR's")
    q.add_argument("--json", action="store_true",
                   help="print {'catalog_version', 'ours', 'paper', 'sizes_vs_ai2thor', 'reference_losses_m'} as JSON")
    q.add_argument("--plot", type=Path, default=None, metavar="PNG",
                   help="also draw our median size per category against AI2-THOR's into this PNG")
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
    from spatialscout_gym.cli.scenes_import import add_import_parser  # import-maniskill
    add_import_parser(sub)
    for q in sub.choices.values():   # --catalog on every subcommand, applied before it runs
        add_catalog_option(q)
        q.set_defaults(func=_with_catalog(q.get_default("func")))


def _with_catalog(func):
    def run(args: argparse.Namespace) -> int:
        apply_catalog_option(args)
        return func(args)
    return run


def run_list(args: argparse.Namespace) -> int:
    from spatialscout_gym.scenes.catalog import manifest
    m = manifest()
    for note in new_provenance_notes(str(m["catalog_version"])):
        print(f"note: {note}", file=sys.stderr)
    if args.json:
        print(json.dumps(m, indent=1))
        return 0
    print(f"catalog v{m['catalog_version']}: {len(m['scenes'])} scenes")
    print(f"{'scene':<15} {'layout':<11} {'rooms':<48} {'targets':>7} {'radius_m':>8}  hash")
    for s in m["scenes"]:
        print(f"{s['scene_id']:<15} {s['layout']:<11} {','.join(s['rooms']):<48} {s['n_targets']:>7} "
              f"{s['radius_m']:>8.2f}  {s['content_hash'][:12]}")
    return 0


NOTES_SEEN_FILE = "provenance_notes_seen.json"
"""In :func:`~spatialscout_gym.core.files.cache_root`: the provenance notes already shown, by catalog version."""


def new_provenance_notes(version: str) -> list[str]:
    """The catalog's recorded-only provenance notes (``scenes.catalog.check_provenance``) when they
    differ from the ones this machine was last shown for ``version``, else none: they change nothing
    a run does, so ``scenes list`` says them once (on stderr, keeping ``--json`` parseable) and again
    only when they change. An unreadable or unwritable record shows them, as before."""
    from spatialscout_gym.core.files import cache_root, locked_json_object
    from spatialscout_gym.scenes.catalog import check_provenance
    notes = check_provenance(version)
    try:
        with locked_json_object(cache_root() / NOTES_SEEN_FILE) as seen:
            if seen.get(version) == notes:
                return []
            seen[version] = notes
    except (OSError, ValueError):
        pass
    return notes


def _fmt(v) -> str:
    if isinstance(v, float):
        return f"{v:.3f}"
    if isinstance(v, list):
        return ", ".join(f"{a} {b}" for a, b in v[:6])
    if isinstance(v, dict):
        return ", ".join(f"{a} {b}" for a, b in v.items())
    return str(v)


STATS_SOURCES = {
    "paper": ("paper: the paper's own text (section 2.2, Appendix B.2 losses; the 11.7 cm median shortest "
              "side and 6.7% under 1 cm are section 2.2's as the primer and the outside audit give them)"),
    "release": "release: the authors' released annotation files as an outside reader (the audit) measured them",
    "ours": "this catalog",
    "notes": ("the paper's targets are 12 x 35 + 68 x 40 = 3,140 (its text says 3,410); its 1,489 "
              "multi-instance targets (43.3%) fit neither count; its scene sources add up to 90 for 80 "
              "scenes; the paper's versions disagree on the reference losses (Appendix B.2: 2.984 m and "
              "4.487 m in one, 3.113 m and 4.701 m in another, as the audit and the primer give them) "
              "(docs/protocol.md section 8)"),
}
"""What each column of ``scenes stats`` is (docs/protocol.md section 8)."""


def run_stats(args: argparse.Namespace) -> int:
    from spatialscout_gym.scenes.catalog import catalog_entries, default_catalog_version, generate_catalog_scene
    from spatialscout_gym.scenes.stats import (PAPER_REFERENCE_LOSSES_M, PAPER_REFERENCE_LOSSES_OTHER_VERSION_M,
                                               PAPER_STATS, RELEASE_STATS, SCENE_SOURCES, catalog_stats,
                                               reference_losses, room_plausibility, size_comparison)
    from tqdm import tqdm
    version = default_catalog_version()
    entries = catalog_entries()
    specs = [generate_catalog_scene(e) for e in tqdm(entries, desc="generating the catalog", unit="scene",
                                                     leave=False, disable=None)]  # None: only on a terminal
    ours = catalog_stats(specs)
    sizes = size_comparison(specs)
    losses = reference_losses(specs)
    rooms = room_plausibility(specs)
    if args.plot is not None:
        from spatialscout_gym.scenes.stats import plot_size_comparison
        plot_size_comparison(sizes, args.plot, title=f"catalog v{version}")
    if args.json:
        print(json.dumps({"catalog_version": version, "sources": STATS_SOURCES, "ours": ours, "paper": PAPER_STATS,
                          "release": RELEASE_STATS, "scene_sources": SCENE_SOURCES,
                          "sizes_vs_ai2thor": sizes, "room_plausibility": rooms,
                          "reference_losses_m": {"ours": losses, "paper": PAPER_REFERENCE_LOSSES_M,
                                                 "paper_other_version": PAPER_REFERENCE_LOSSES_OTHER_VERSION_M}},
                         indent=1))
        return 0
    print(f"catalog v{version}; {STATS_SOURCES['paper']}; {STATS_SOURCES['release']}")
    print(f"{'statistic':<28} {'this catalog':<52} {'paper':<12} release")
    for k, v in ours.items():
        print(f"{k:<28} {_fmt(v):<52} {_fmt(PAPER_STATS[k]) if k in PAPER_STATS else '-':<12} "
              f"{_fmt(RELEASE_STATS[k]) if k in RELEASE_STATS else '-'}")
    for k, v in losses.items():   # the paper's two versions: this page's, then the other (primer, audit)
        print(f"{'loss_' + k + '_m':<28} {v:<52.3f} {PAPER_REFERENCE_LOSSES_M[k]:<12.3f} - "
              f"(other paper version: {PAPER_REFERENCE_LOSSES_OTHER_VERSION_M[k]:.3f})")
    for who, counts in SCENE_SOURCES.items():
        print(f"{who} scene sources: {_fmt(counts)} (sum {sum(counts.values())})")
    print(f"note: {STATS_SOURCES['notes']}")
    print(f"\nobject size vs AI2-THOR (median cube-root box volume, {sizes['measured_on']}):")
    print(f"{'category':<20} {'targets':>7} {'ours_m':>8} {'ai2thor_m':>9} {'ratio':>6}")
    for name, c in sizes["categories"].items():
        print(f"{name:<20} {c['n_targets']:>7} {c['ours_m']:>8.3f} {c['ai2thor_m']:>9.3f} {c['ratio']:>6.2f}")
    print(f"weighted ratio {sizes['weighted_ratio']:.3f}, spread factor {sizes['spread_factor']:.3f} over "
          f"{sizes['n_targets_compared']} of {sizes['n_targets']} targets; AI2-THOR lacks "
          f"{', '.join(f'{k} ({v})' for k, v in sizes['not_in_ai2thor'].items()) or 'none'}")
    print(f"reference: {sizes['source']}")
    print(f"\nroom plausibility (floor and surface targets in a room type where ProcTHOR never places "
          f"their type; offices count as bedrooms); categories {rooms['n_categories']}, "
          f"{rooms['procthor_types_as_targets']} of ProcTHOR's {rooms['procthor_types']} types:")
    for key in ("single_rooms", "apartments"):
        r = rooms[key]
        print(f"  {key}: {r['implausible']} of {r['judged']} ({100 * r['fraction']:.1f}%)")
        for kind, k in r["by_room"].items():
            worst = ", ".join(f"{c} {n}" for c, n in k["worst"]) or "-"
            print(f"    {kind:<11} {k['implausible']:>4} of {k['judged']:<4} ({100 * k['fraction']:.1f}%)  worst: {worst}")
    if args.plot is not None:
        print(f"wrote {args.plot}")
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
    from spatialscout_gym.scenes.catalog import default_catalog_version, freeze_manifest, manifest_path
    version = default_catalog_version()
    data = freeze_manifest(args.out, progress=True, version=version, provenance=_provenance())
    print(f"froze catalog v{version}: {len(data['scenes'])} scenes -> {args.out or manifest_path(version)}")
    return 0


def _provenance() -> dict:
    """What the freezing installation records beside the hashes (recorded only; see
    ``scenes.catalog.check_provenance``): the delivered-image encoding and the backends."""
    import platform

    from spatialscout_gym.conversation.images import JPEG_QUALITY, MAX_SIDE_PX
    return {"image_encoding": {"format": "jpeg", "quality": JPEG_QUALITY, "max_side_px": MAX_SIDE_PX},
            "backends": {"renderer": "sapien", "device": "cpu (lavapipe) or cuda, chosen at run time",
                         "platform": platform.platform(terse=True)}}
