"""Exploration as the run record derives it from the trace (docs/nbv.md, "Exploration metrics"):
every figure of the report's "Exploration of the scene" section is recomputed here from
``trace.jsonl`` and the scene's geometry with this file's own arithmetic (no call into the env's or
the record's metric code); the blocked moves in ``compare``; the curves and their AUC. Real SAPIEN
render at 32 px, V = 6, a random NBV policy and ``frontier-nbv`` on an apartment and a kitchen."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from spatialscout_gym.cli.main import main
from spatialscout_gym.core.spec import part_world_aabb
from spatialscout_gym.eval.running.evaluate import evaluate
from spatialscout_gym.eval.running.tasks import EvalSettings
from spatialscout_gym.scenes.catalog import load_scene

SCENES = ["Apartment_13", "Kitchen_01"]
V = 6
CELL = 0.25     # the stated voxel and floor-cell side, metres


@pytest.fixture(scope="module")
def evals(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("nbvexplore")
    out = {}
    for agent in ("random-nbv", "frontier-nbv"):
        d = root / agent
        summary = evaluate(d, EvalSettings(agent, V, None, 32), SCENES, seeds=1, workers=1, progress=False)
        assert summary.total == len(SCENES) and not summary.failed
        out[agent] = d
    return out


def _boxes(scene: str, category: str) -> list[tuple[np.ndarray, np.ndarray]]:
    spec = load_scene(scene)
    out = []
    for o in spec.private.objects:
        if o.category == category:
            for p in o.parts:
                if p.shape == "box" and p.half_size is not None:
                    lo, hi = part_world_aabb(p)
                    out.append((np.asarray(lo, float), np.asarray(hi, float)))
    return out


def _over(box: tuple[np.ndarray, np.ndarray], x: float, y: float) -> bool:
    return bool(box[0][0] <= x <= box[1][0] and box[0][1] <= y <= box[1][1])


def _geometry(scene: str) -> dict:
    """Interior voxel count, floor cells and floor footprints, computed point by point."""
    floors, walls, ceils = _boxes(scene, "Floor"), _boxes(scene, "Wall"), _boxes(scene, "Ceiling")
    x0 = min(f[0][0] for f in floors)
    y0 = min(f[0][1] for f in floors)
    z0 = min(f[1][2] for f in floors)
    x1 = max(f[1][0] for f in floors)
    y1 = max(f[1][1] for f in floors)
    z1 = max(c[0][2] for c in ceils)
    nx, ny, nz = (max(1, math.ceil((b - a) / CELL)) for a, b in ((x0, x1), (y0, y1), (z0, z1)))
    interior = 0
    for i in range(nx):
        x = x0 + (i + 0.5) * CELL
        for j in range(ny):
            y = y0 + (j + 0.5) * CELL
            col = [f for f in floors if _over(f, x, y)]
            if not col:
                continue
            for k in range(nz):
                z = z0 + (k + 0.5) * CELL
                inside = False
                for f in col:
                    top = min([c[0][2] for c in ceils if c[0][2] > f[1][2] and _over(c, x, y)] or [z1])
                    inside |= f[1][2] < z < top
                if inside and not any(np.all((w[0] <= (x, y, z)) & ((x, y, z) <= w[1])) for w in walls):
                    interior += 1
    cells = {(i, j) for i in range(math.floor(x0 / CELL) - 1, math.ceil(x1 / CELL) + 1)
             for j in range(math.floor(y0 / CELL) - 1, math.ceil(y1 / CELL) + 1)
             if any(_over(f, (i + 0.5) * CELL, (j + 0.5) * CELL) for f in floors)}
    return {"interior": interior, "cells": cells, "floors": floors}


def _room(floors: list, p: list[float]) -> int | None:
    return next((n for n, f in enumerate(floors) if _over(f, p[0], p[1])), None)


def _recompute(run: Path, geo: dict) -> dict:
    """Every exploration figure of one episode, from its trace and the scene's geometry."""
    events = [json.loads(x) for x in (run / "trace.jsonl").read_text().splitlines()]
    targets = {t["id"]: t for t in json.loads((run / "ground_truth.json").read_text())["targets"]}
    steps = [e for e in events if e["event"] == "nbv_step"]
    scene = steps[0]["scene"]
    start = next(e for e in events if e["event"] == "start")
    explored = [scene["start"]] + [e["explored"] for e in steps]
    positions = [start["initial_pose_world"]["position_world"]] + [e["position_world"] for e in steps]
    rooms = [_room(geo["floors"], p) for p in positions]
    assert rooms == [x["room"] for x in explored]            # each recorded room is where the camera was
    cells = {tuple(c) for x in explored for c in x["floor_cells"]}
    assert cells <= geo["cells"]                              # only floor cells are counted
    # the map accepted by the time of each image: the accepted submissions before the next capture
    caps = [i for i, e in enumerate(events) if e["event"] == "capture"]
    curve, iou = [], []
    for n, c in enumerate(caps):
        stop = caps[n + 1] if n + 1 < len(caps) else len(events)
        accepted: dict[str, list[float]] = {}
        for e in events[:stop]:
            if e["event"] == "tool_call" and e["tool"] == "submit_positions" and e["result"]["ok"]:
                for k in e["result"]["result"]["accepted"]:
                    accepted[k] = e["args"]["positions"][k]
        # the centre mapper submits each seen target at its reference centre: IoU 1 each
        assert all(np.allclose(p, targets[k]["center"], atol=1e-9) for k, p in accepted.items())
        curve.append(len(accepted) / len(targets))
        iou.append(len(accepted) / len(targets))
    padded = curve + [curve[-1]] * (V - len(curve))
    return {"known_occupancy_fraction": explored[-1]["known_voxels"] / geo["interior"],
            "interior_voxels": geo["interior"], "explored_floor_fraction": len(cells) / len(geo["cells"]),
            "floor_cells": len(geo["cells"]), "rooms_visited": len({r for r in rooms if r is not None}),
            "rooms": len(geo["floors"]), "blocked_moves": sum(e["blocked"] for e in steps), "steps": len(steps),
            "coverage_curve": curve, "iou_curve": iou, "coverage_auc": sum(padded) / V,
            "iou_auc": sum(padded) / V}


def test_every_exploration_figure_is_recomputed_from_the_trace(evals):
    geo = {s: _geometry(s) for s in SCENES}
    for agent, d in evals.items():
        mine = []
        for scene in SCENES:
            run = d / scene / "seed_0"
            want = _recompute(run, geo[scene])
            got = json.loads((run / "result.json").read_text())["exploration"]
            assert set(got) == set(want)
            for k, v in want.items():
                assert got[k] == pytest.approx(v, rel=1e-12, abs=1e-12), (agent, scene, k)
            assert 0 < got["known_occupancy_fraction"] <= 1 and 0 < got["explored_floor_fraction"] <= 1
            mine.append(want)
        report = json.loads((d / "report.json").read_text())["exploration_scene"]
        for k in ("known_occupancy_fraction", "explored_floor_fraction", "rooms_visited", "blocked_moves",
                  "coverage_auc", "iou_auc"):
            assert report[k] == pytest.approx(np.mean([m[k] for m in mine]), rel=1e-12), k
        text = (d / "report.md").read_text()
        row = next(x for x in text.splitlines() if x.startswith(f"| {agent} | {len(SCENES)} | ")
                   and "of" in x and x.count("|") == 10)
        cells = [c.strip() for c in row.strip("|").split("|")]
        assert cells[2] == f"{100 * np.mean([m['known_occupancy_fraction'] for m in mine]):.1f}"
        assert cells[3] == f"{100 * np.mean([m['explored_floor_fraction'] for m in mine]):.1f}"
    assert geo["Apartment_13"]["floors"] and len(geo["Apartment_13"]["floors"]) > 1   # several rooms


def test_the_curves_and_their_area(evals):
    for d in evals.values():
        for scene in SCENES:
            e = json.loads((d / scene / "seed_0" / "result.json").read_text())
            c = e["exploration"]["coverage_curve"]
            assert len(c) == e["counters"]["images_used"] and all(a <= b for a, b in zip(c, c[1:]))
            assert c[-1] == pytest.approx(e["coverage"])      # the last point is the episode's score
            assert e["exploration"]["iou_curve"][-1] == pytest.approx(e["all"]["mean_iou"])
            assert e["exploration"]["coverage_auc"] <= c[-1]  # a curve that rises has its area below its end


def test_compare_shows_the_blocked_moves(evals, capsys, tmp_path):
    out = tmp_path / "cmp.md"
    capsys.readouterr()
    assert main(["compare", str(evals["random-nbv"]), str(evals["frontier-nbv"]), "--out", str(out)]) == 0
    text = out.read_text() if out.exists() else capsys.readouterr().out
    lines = text.splitlines()
    head = next(i for i, x in enumerate(lines) if x.startswith("## Exploration of the scene"))
    header = next(x for x in lines[head:] if x.startswith("| run |"))
    col = [c.strip() for c in header.strip("|").split("|")].index("blocked moves")
    for agent, d in evals.items():
        blocked = [sum(e["blocked"] for e in map(json.loads, (d / s / "seed_0" / "trace.jsonl").read_text().splitlines())
                       if e["event"] == "nbv_step") for s in SCENES]
        assert agent != "random-nbv" or sum(blocked) > 0        # walls stopped some random moves
        row = next(x for x in lines[head:] if x.startswith(f"| {agent} |"))
        assert [c.strip() for c in row.strip("|").split("|")][col] == f"{np.mean(blocked):.2f}"
