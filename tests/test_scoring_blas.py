"""The scorer gives the same bits on every BLAS kernel: one ground truth and many maps scored in two
fresh processes, one under OpenBLAS's Prescott kernel and one under Haswell (one thread each), give
byte-identical per-target IoU and centre errors. (With ``@`` in the scorer the two differ in the
last bits, and a target near a threshold can change its hit count.)"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np

from spatialscout_gym.scenes.catalog import scene_by_name

REPO = Path(__file__).resolve().parents[1]
_CHILD = """
import hashlib, json, sys
import numpy as np
from spatialscout_gym.core.scoring import GroundTruth, score_scene
gt = GroundTruth.from_dict(json.load(open(sys.argv[1])))
h = hashlib.sha256()
for positions in json.load(open(sys.argv[2])):
    s = score_scene(gt, positions)
    h.update(np.ascontiguousarray(s.iou).tobytes() + np.ascontiguousarray(s.center_error_m).tobytes())
    h.update(json.dumps(s.metrics(), sort_keys=True).encode())
print(h.hexdigest())
"""


def _score_in(kernel: str, gt_path: Path, maps_path: Path) -> str:
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": os.environ.get("HOME", "/tmp"),
           "PYTHONPATH": str(REPO), "OPENBLAS_CORETYPE": kernel, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}
    p = subprocess.run([sys.executable, "-c", _CHILD, str(gt_path), str(maps_path)], env=env, cwd=REPO,
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr[-2000:]
    return p.stdout.strip()


def test_scores_are_the_same_bits_under_prescott_and_haswell(tmp_path):
    spec = scene_by_name("procedural:3")            # a rotated task frame: every offset goes through R0
    gt = spec.ground_truth_dict()
    (tmp_path / "gt.json").write_text(json.dumps(gt))
    rng = np.random.default_rng(11)
    maps = []
    for _ in range(40):          # maps near the truth, so IoUs sit across the thresholds
        maps.append({t["id"]: (np.asarray(t["center"]) + rng.normal(scale=0.05, size=3)).tolist()
                     for t in gt["targets"] if rng.random() < 0.8})
    (tmp_path / "maps.json").write_text(json.dumps(maps))
    a = _score_in("Prescott", tmp_path / "gt.json", tmp_path / "maps.json")
    b = _score_in("Haswell", tmp_path / "gt.json", tmp_path / "maps.json")
    assert len(a) == 64 and a == b
