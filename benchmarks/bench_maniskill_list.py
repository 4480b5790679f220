"""Listing and per-scene import time of ``spatialscout scenes import-maniskill`` on a generated
ProcTHOR-shaped tree (12,000 scene configs in numbered sub-folders, as ManiSkill's download has).

    python benchmarks/bench_maniskill_list.py [--scenes 12000] [--imports 5]

Rows: ``list_scenes`` (one directory walk, one index), the same listing done the quadratic way
(a set of the listed configs rebuilt for every entry: what the adapter did before, restated here
as the reference), and ``load_source_scene`` of a small real-layout scene with the index passed in
(as the CLI does) and without it (listing again for every scene). Ratios come from one run.
Prints and writes ``benchmarks/results/bench_maniskill_list.json``.
"""

from __future__ import annotations

import argparse
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))  # the tests' tiny real-layout dataset writer

from maniskill_dataset import make_ai2thor_dataset  # noqa: E402

from spatialscout_gym.core.files import write_json_atomic  # noqa: E402
from spatialscout_gym.scenes import maniskill as ms  # noqa: E402


def _tree(asset_dir: Path, n: int) -> None:
    root = asset_dir / ms.DATASETS["ProcTHOR"].scene_config_dir
    for k in range(n):
        d = root / str(k // 1000)
        if k % 1000 == 0:
            d.mkdir(parents=True, exist_ok=True)
        (d / f"ProcTHOR-Train-{k}.scene_instance.json").write_text("{}")


def _list_quadratic(asset_dir: Path) -> dict[str, str]:
    """The former listing: with ManiSkill's metadata already in ``ordered``, ``set(ordered)`` was
    rebuilt inside the loop over every config on disk."""
    config_dir = asset_dir / ms.DATASETS["ProcTHOR"].scene_config_dir
    on_disk = sorted(p.relative_to(config_dir).as_posix() for p in config_dir.rglob("*.scene_instance.json"))
    ordered = list(on_disk)  # ManiSkill's metadata lists every downloaded config
    ordered += [r for r in on_disk if r not in set(ordered)]  # one set per entry, as before
    return {ms._scene_stem(r): r for r in ordered}


def _time(fn, repeats: int) -> list[float]:
    out = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t0)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--scenes", type=int, default=12000, help="configs in the generated tree")
    ap.add_argument("--imports", type=int, default=5, help="repeats of the per-scene import")
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks/results/bench_maniskill_list.json")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        asset_dir = Path(tmp)
        t0 = time.perf_counter()
        _tree(asset_dir, args.scenes)
        make_ai2thor_dataset(asset_dir, dataset="ProcTHOR", scene="ProcTHOR-Train-real",
                             n_candidates=40, n_uncategorised=2)
        print(f"generated {args.scenes + 1} ProcTHOR configs in {time.perf_counter() - t0:.1f} s")
        listing = _time(lambda: ms.list_scenes("ProcTHOR", asset_dir), 3)
        quadratic = _time(lambda: _list_quadratic(asset_dir), 1)
        index = ms.list_scenes("ProcTHOR", asset_dir)
        cache: dict = {}
        ms.load_source_scene("ProcTHOR", "ProcTHOR-Train-real", asset_dir, cache, scenes=index)  # warm meshes
        with_index = _time(lambda: ms.load_source_scene("ProcTHOR", "ProcTHOR-Train-real", asset_dir, cache,
                                                        scenes=index), args.imports)
        without_index = _time(lambda: ms.load_source_scene("ProcTHOR", "ProcTHOR-Train-real", asset_dir,
                                                           cache), max(1, args.imports // 2))
    rows = {
        "list_scenes_s": min(listing),
        "list_quadratic_s": min(quadratic),
        "import_with_index_s": statistics.median(with_index),
        "import_listing_again_s": statistics.median(without_index),
    }
    for k, v in rows.items():
        print(f"{k:26s} {v:8.3f}")
    print(f"listing speed-up {rows['list_quadratic_s'] / rows['list_scenes_s']:.0f}x; a full import of "
          f"{args.scenes} scenes spends {rows['list_scenes_s']:.1f} s listing once instead of "
          f"{rows['import_listing_again_s'] * args.scenes / 3600:.1f} h listing per scene")
    write_json_atomic(args.out, {"benchmark": "maniskill_list", "scenes": args.scenes,
                                 "machine": platform.platform(), "python": sys.version.split()[0],
                                 **rows})
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
