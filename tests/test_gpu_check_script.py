"""``scripts/gpu_check.sh --dry-run``: the GPU check's steps run on the CPU at small sizes and leave
their figures and logs where a GPU run leaves them."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
pytestmark = [pytest.mark.render, pytest.mark.slow]


def test_gpu_check_dry_run_writes_every_figure(tmp_path):
    out = tmp_path / "gpu"
    done = subprocess.run(["bash", "scripts/gpu_check.sh", "--dry-run", str(out)], cwd=ROOT,
                          capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["dry_run"] is True and summary["passed"] is True
    assert [s["step"] for s in summary["steps"]] == ["doctor", "tests", "pixels", "bench_one_process",
                                                    "bench_workers", "train"]
    assert all((out / s["log"]).is_file() and s["rc"] == 0 for s in summary["steps"])
    assert "1 passed" in (out / "tests.log").read_text()
    assert summary["pixels"]["bit_identical"] and summary["pixels"]["batched_render"]
    kinds = {r["kind"] for r in summary["bench_nbv"]["rows"]} | \
        {r["kind"] for r in summary["bench_nbv_workers"]["rows"]}
    assert {"vector", "workers"} <= kinds
    assert all(r["steps_per_s"] > 0 for r in summary["bench_nbv"]["rows"])
    assert list((out / "train").rglob("model.zip"))


def test_gpu_check_refuses_bad_arguments(tmp_path):
    done = subprocess.run(["bash", "scripts/gpu_check.sh", "--frobnicate", str(tmp_path)], cwd=ROOT,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "unknown option --frobnicate" in done.stderr
    done = subprocess.run(["bash", "scripts/gpu_check.sh"], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and done.stderr.startswith("usage:")
