"""``benchmarks/bench_env.py`` runs on the env as it is today (its image budget within the bound an
env accepts) and writes the figures docs/speed.md quotes: a first reset, later resets, steps/s and
the tool mix it stepped."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.render


def test_bench_env_steps_its_whole_mix_and_writes_its_figures(tmp_path):
    out = tmp_path / "bench_env.json"
    done = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "bench_env.py"), "--scene", "procedural",
                           "--resolution", "32", "--steps", "40", "--resets", "2", "--out", str(out)],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads(out.read_text())
    assert result["steps"] == 40 and sum(result["tool_mix"].values()) == 40
    assert len(result["tool_mix"]) >= 3                       # a mix, not one tool
    assert result["steps_per_s"] > 0 and result["first_reset_s"] > 0
    assert result["reset_s_median_after_first"] is not None
    assert json.loads(done.stdout) == result                  # printed as written
