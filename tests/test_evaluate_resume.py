"""``spatialscout evaluate`` survives being killed: the rerun finishes every episode exactly once,
with results identical to an uninterrupted run (real SAPIEN renderer, low resolution)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

SCENES = ["procedural:31", "procedural:32", "procedural:33", "procedural:34"]
DIRS = [s.replace(":", "_") for s in SCENES]
RUN_FILES = ("result.json", "predictions.json", "trace.jsonl", "ground_truth.json")


def command(out: Path) -> list[str]:
    return [sys.executable, "-m", "spatialscout_gym.cli.main", "evaluate", "--agent", "origin",
            "--scenes", *SCENES, "--out", str(out), "--resolution", "32", "--image-budget", "2",
            "--workers", "1", "--no-progress"]


def finished(out: Path) -> list[str]:
    return sorted(d for d in DIRS if (out / d / "seed_0" / "result.json").is_file())


@pytest.mark.render
@pytest.mark.slow
def test_killed_evaluation_resumes_to_the_uninterrupted_result(tmp_path):
    reference = tmp_path / "reference"
    subprocess.run(command(reference), check=True, capture_output=True, timeout=300)
    assert finished(reference) == DIRS

    out = tmp_path / "interrupted"
    proc = subprocess.Popen(command(out), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    try:
        deadline = time.monotonic() + 240
        while not finished(out) and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.02)
        os.killpg(proc.pid, signal.SIGKILL)   # the driver and its worker, mid-evaluation
    finally:
        proc.wait(timeout=30)
    done_at_kill = finished(out)
    assert 1 <= len(done_at_kill) < len(DIRS), f"kill came too late to interrupt: {done_at_kill}"
    # what a crash can leave behind: a temp dir of the rename protocol, a failure note
    (out / DIRS[-1]).mkdir(exist_ok=True)
    (out / DIRS[-1] / ".seed_0.abc123.tmp").mkdir()
    (out / DIRS[-1] / ".seed_0.abc123.tmp" / "result.json").write_text("{half")

    rerun = subprocess.run(command(out), capture_output=True, text=True, timeout=300)
    assert rerun.returncode == 0, rerun.stderr
    assert f"{len(done_at_kill)} already done, {len(DIRS) - len(done_at_kill)} run now, 0 failed" in rerun.stdout
    for d in DIRS:
        entries = sorted(p.name for p in (out / d).iterdir())
        assert entries == ["seed_0"], f"{d}: {entries}"     # exactly once, no leftovers
        for name in RUN_FILES:
            assert (out / d / "seed_0" / name).read_bytes() == (reference / d / "seed_0" / name).read_bytes()
    import json
    a = json.loads((out / "report.json").read_text())
    b = json.loads((reference / "report.json").read_text())
    assert a["object_micro"] == b["object_micro"] and a["scenes"] == b["scenes"]
    assert a["counters"] == b["counters"] and a["counters"]["episodes"] == len(DIRS)
