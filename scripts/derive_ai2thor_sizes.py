"""Derive ``spatialscout_gym/scenes/data/ai2thor_sizes.json`` (catalog v2.0's size reference).

Maintainer script, run once; the package never reads the asset database at run time.

    python scripts/derive_ai2thor_sizes.py asset-database.json COMMIT > spatialscout_gym/scenes/data/ai2thor_sizes.json

``asset-database.json`` is ``procthor/databases/asset-database.json`` of github.com/allenai/procthor
(Apache-2.0). Per object type it holds the AI2-THOR assets' ``boundingBox`` {x, y, z} in metres
(y is the height). For every type we keep only summary numbers:

* ``n_assets``;
* ``cbrt_volume_m``: quantiles 0, 5, 25, 50, 75, 95, 100 % of the cube-root box volume;
* ``median_box_m``: the median of each side, ``[x, y (height), z]``;
* ``proportions``: median of the asset boxes' sides sorted large to small, divided by their
  cube-root volume (so their product is about 1): the category's typical shape.
"""

from __future__ import annotations

import json
import sys

import numpy as np

QUANTILES = (0.0, 0.05, 0.25, 0.5, 0.75, 0.95, 1.0)


def main(path: str, commit: str) -> None:
    db = json.load(open(path))
    cats = {}
    for name in sorted(db):
        b = np.array([[a["boundingBox"][k] for k in "xyz"] for a in db[name]], float)
        b = b[np.all(b > 0, axis=1)]
        if not len(b):
            continue
        cv = np.cbrt(np.prod(b, axis=1))
        srt = -np.sort(-b, axis=1) / cv[:, None]
        cats[name] = {"n_assets": int(len(b)),
                      "cbrt_volume_m": [round(float(np.quantile(cv, q)), 4) for q in QUANTILES],
                      "median_box_m": [round(float(v), 4) for v in np.median(b, axis=0)],
                      "proportions": [round(float(v), 4) for v in np.median(srt, axis=0)]}
    out = {"source": "AI2-THOR asset bounding boxes from procthor/databases/asset-database.json, "
                     f"github.com/allenai/procthor at commit {commit}",
           "license": "Apache-2.0 (Copyright Allen Institute for AI); these are derived summary numbers, "
                      "not the database",
           "quantiles": list(QUANTILES),
           "units": "metres; boundingBox y is the height",
           "categories": cats}
    head = json.dumps({k: v for k, v in out.items() if k != "categories"}, indent=1)[:-2]
    rows = ",\n".join(f"  {json.dumps(k)}: {json.dumps(v)}" for k, v in cats.items())
    print(head + ',\n "categories": {\n' + rows + "\n }\n}")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
