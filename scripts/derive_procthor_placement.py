"""Derive ``spatialscout_gym/scenes/data/procthor_placement.json`` (catalog v3.0's placement rules).

Maintainer script, run once; the package never reads ProcTHOR's databases at run time.

    python scripts/derive_procthor_placement.py placement-annotations.json receptacles.json COMMIT \
        > spatialscout_gym/scenes/data/procthor_placement.json

Both inputs are ``procthor/databases/*.json`` of github.com/allenai/procthor (Apache-2.0).

* ``placement-annotations.json`` is column-wise (``{column: {object type: value}}``). Per object
  type we keep the room columns (``inKitchens``, ``inLivingRooms``, ``inBedrooms``,
  ``inBathrooms``: 0 = ProcTHOR never places it there, 1 or 2 = it does) as ``rooms`` keyed by
  our room kinds, and ``onFloor``, ``onWall``, ``inCorner``, ``onEdge``, ``multiplePerRoom``,
  ``isPickupable``, ``isStructure``.
* ``receptacles.json`` maps a receptacle type to the object types ProcTHOR spawns on it, with
  their probability ``p``; we keep ``{receptacle: {object type: p}}`` (4 decimals).

Object sizes come from ``scenes/data/ai2thor_sizes.json`` (scripts/derive_ai2thor_sizes.py,
same commit), which already covers all 109 object types.
"""

from __future__ import annotations

import json
import sys

ROOM_COLUMNS = {"Kitchen": "inKitchens", "LivingRoom": "inLivingRooms", "Bedroom": "inBedrooms",
                "Bathroom": "inBathrooms"}
FLAGS = ("onFloor", "onWall", "inCorner", "onEdge", "multiplePerRoom", "isPickupable", "isStructure")


def main(placement_path: str, receptacles_path: str, commit: str) -> None:
    pa = json.load(open(placement_path))
    rec = json.load(open(receptacles_path))
    types = {}
    for name in sorted(pa["instances"]):
        row = {"rooms": {k: pa[col].get(name) for k, col in ROOM_COLUMNS.items()}}
        row.update({f: pa[f].get(name) for f in FLAGS})
        types[name] = row
    recs = {r: {o: round(float(v["p"]), 4) for o, v in sorted(objs.items())} for r, objs in sorted(rec.items())}
    out = {"source": "procthor/databases/placement-annotations.json and receptacles.json, "
                     f"github.com/allenai/procthor at commit {commit}",
           "license": "Apache-2.0 (Copyright Allen Institute for AI); derived per-type annotations, not the "
                      "databases",
           "rooms": "0 = ProcTHOR never places the type in that room kind, 1 or 2 = it does; null = not "
                    "annotated (structure)",
           "n_types": len(types)}
    head = json.dumps(out, indent=1)[:-2]
    t_rows = ",\n".join(f"  {json.dumps(k)}: {json.dumps(v)}" for k, v in types.items())
    r_rows = ",\n".join(f"  {json.dumps(k)}: {json.dumps(v)}" for k, v in recs.items())
    print(head + ',\n "types": {\n' + t_rows + '\n },\n "receptacles": {\n' + r_rows + "\n }\n}")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3])
