"""The NBV benchmarks run on the current env ids (``SpatialScout/NBV-v2`` by default, NBV-v3 on
request) at tiny sizes, and write the JSON their docs quote (docs/speed.md); no figure is timed."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _bench(script: str, tmp_path: Path, *args: str) -> dict:
    out = tmp_path / f"{script}.json"
    done = subprocess.run([sys.executable, str(ROOT / "benchmarks" / f"{script}.py"), *args, "--out", str(out)],
                          capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(out.read_text())


def test_bench_nbv_obs_and_vector_measure_nbv_v2_by_default(tmp_path):
    obs = _bench("bench_nbv_obs", tmp_path, "--resolution", "32", "--rounds", "1", "--steps", "3",
                 "--warmup", "2", "--rows", "plain", "depth")
    assert obs["env_id"] == "SpatialScout/NBV-v2" and [r["row"] for r in obs["rows"]] == ["plain", "depth"]
    assert all(r["steps"] == 3 for r in obs["rows"])
    vec = _bench("bench_nbv_vector", tmp_path, "--resolution", "32", "--num-envs", "2", "--seconds", "0.3",
                 "--warmup", "2", "--rows", "single", "nbv-vector")
    assert vec["env_id"] == "SpatialScout/NBV-v2"
    assert [(r["row"], r["num_envs"]) for r in vec["rows"]] == [("single", 1), ("nbv-vector", 2)]
    assert all(r["steps"] > 0 for r in vec["rows"])


def test_bench_nbv_takes_nbv_v3_and_the_profile_times_a_step_against_its_capture(tmp_path):
    res = _bench("bench_nbv", tmp_path, "--resolutions", "32", "--num-envs", "2", "--async-envs", "0",
                 "--seconds", "0.3", "--env-id", "SpatialScout/NBV-v3")
    assert {r["env_id"] for r in res["rows"]} == {"SpatialScout/NBV-v3"}
    prof = _bench("profile_nbv_step", tmp_path, "--resolution", "32", "--steps", "12", "--warmup", "2")
    timed, profiled = prof["timed"], prof["profiled"]
    assert prof["env_id"] == "SpatialScout/NBV-v2" and timed["steps"] == 12
    assert timed["captures"] >= 12                          # one capture a step, plus frame 0 of each reset
    assert timed["step_to_capture"] > 1.0 and profiled["step_to_capture"] > 1.0   # a step holds its capture
    assert profiled["get_picture_per_step"] > 0 and profiled["top_cumtime"]
