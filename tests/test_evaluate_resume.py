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
    # the resumed evaluation verifies as it is, from a trimmed environment, no cached verdict
    repo = Path(__file__).resolve().parents[1]
    env = {"PATH": "/usr/bin:/bin", "HOME": os.environ.get("HOME", "/tmp"), "PYTHONPATH": str(repo)}
    check = subprocess.run([sys.executable, "-m", "spatialscout_gym.cli.main", "verify", str(out), "--no-cache",
                            "--no-progress"], cwd=repo, env=env, capture_output=True, text=True, timeout=300)
    assert check.returncode == 0, check.stdout[-2000:] + check.stderr[-2000:]
    assert check.stdout.count(": verified") == len(DIRS), check.stdout[-2000:]


def test_resume_redoes_a_finished_run_that_is_incomplete_or_of_other_settings(tmp_path):
    """A finished episode whose ``trace.jsonl`` is missing, and one whose ``result.json`` records
    512 px and V = 100 inside a 32 px, V = 3 evaluation, fail the resume checks: each is archived
    as an attempt and run again, so the rerun does not report them completed as they were."""
    import json

    from fakes import FakeRenderer, small_scene
    from spatialscout_gym.eval.running.evaluate import EvalSettings, evaluate
    spec = tmp_path / "fake-0.json"
    spec.write_text(small_scene(32, 32, scene_id="fake-0").to_json())
    settings = EvalSettings("origin", 3, 20, 32)
    out = tmp_path / "E"

    def run():
        return evaluate(out, settings, [str(spec)], seeds=3, workers=1, progress=False, renderer_factory=FakeRenderer,
                        write_report=False)

    assert run().ran == 3
    (out / "fake-0" / "seed_0" / "trace.jsonl").unlink()
    result = out / "fake-0" / "seed_1" / "result.json"
    result.write_text(json.dumps({**json.loads(result.read_text()), "resolution": 512, "image_budget": 100}))
    summary = run()
    assert summary.skipped == 1 and summary.ran == 2
    assert summary.redone == {"fake-0/seed_0": "trace.jsonl missing",
                              "fake-0/seed_1": "result.json records image_budget 100, this evaluation 3"}
    for k in (0, 1):
        run_dir = out / "fake-0" / f"seed_{k}"
        assert (run_dir / "trace.jsonl").is_file() and (run_dir / "attempts" / "01" / "result.json").is_file()
        assert json.loads((run_dir / "result.json").read_text())["resolution"] == 32
    assert run().skipped == 3   # now every run passes
