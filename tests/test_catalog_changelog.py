"""CHANGELOG.md's account of catalog v3.1 is held to the catalog itself: the v3.0 scenes whose
walls stand past the +-15 m world box (outer wall faces of each floor plan, the first draws of the
scene generator), how far v3.1 moves each, and how many scenes keep their plans."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from spatialscout_gym.core.limits import WORLD_BOX_M
from spatialscout_gym.scenes.catalog import catalog_entries
from spatialscout_gym.scenes.procedural import floor_plan
from spatialscout_gym.scenes.rooms import plan_extent
from spatialscout_gym.scenes.sizes import RULES

CHANGELOG = Path(__file__).resolve().parent.parent / "CHANGELOG.md"


def _extents(version: str) -> dict[str, tuple[float, float, float, float]]:
    out = {}
    for e in catalog_entries(version):
        rules = RULES[version]
        _, plan = floor_plan(np.random.default_rng(e.seed_sequence), e.layout,
                             e.n_rooms if e.layout == "Apartment" else None, rules, in_world_box=rules.in_world_box)
        out[e.scene_id] = plan_extent(plan)
    return out


def test_the_changelog_names_every_v3_0_scene_past_the_box_and_each_v3_1_shift():
    old, new = _extents("3.0"), _extents("3.1")
    far = {sid: max(abs(v) for v in ext) for sid, ext in old.items() if max(abs(v) for v in ext) > WORLD_BOX_M}
    moved = {sid: round(old[sid][0] - new[sid][0], 2) for sid in old if new[sid] != old[sid]}
    assert set(moved) == set(far) and all(max(abs(v) for v in new[s]) <= WORLD_BOX_M for s in new)

    entry = re.search(r"^- Catalog v3\.1.*?(?=^- |^#)", CHANGELOG.read_text(), re.M | re.S)
    assert entry, "no 'Catalog v3.1' entry in CHANGELOG.md"
    text = " ".join(entry.group(0).split())
    walls = text.split("v3.1 centres")[0]
    named_far = {f"Apartment_{k}": float(m) for k, m in re.findall(r"Apartment_(\d+) (\d+\.\d+) m", walls)}
    shifts = re.search(r"\((Apartment_\d+ moves .*?)\)", text)
    assert shifts, f"the v3.1 entry names no shift per moved scene; measured {moved}"
    named_moved = {f"Apartment_{k}": float(m) for k, m in re.findall(r"Apartment_(\d+)(?: moves)? (\d+\.\d+) m",
                                                                    shifts.group(1))}
    assert named_far == {sid: round(v, 2) for sid, v in far.items()}
    assert named_moved == moved
    assert f"the other {len(old) - len(moved)} scenes keep v3.0's plans" in text
