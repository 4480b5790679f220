"""Episodes whose worker shares no disk with the driver (``eval/running/shipping.py``): the files a
worker sends back are written as the same bytes a local worker writes, checked, and every attempt
is kept, a worker's crash included (its failure note archived under ``attempts/``, counted by the
report). No Ray here: the worker side runs in this process."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from fakes import FakeRenderer, small_scene
from spatialscout_gym.eval.layout import EvalDir, archive_failed_attempt
from spatialscout_gym.eval.running.evaluate import EvalSettings, WorkerState, crashed_outcome, execute_task, plan_tasks
from spatialscout_gym.eval.running.shipping import ShippedFilesError, land_outcome, prepare_task, ship_task

SETTINGS = EvalSettings("uniform-ball", 3, 10, 32)
NODE = {"id": "ab" * 28, "address": "10.0.0.7"}


@pytest.fixture
def scene(tmp_path) -> str:
    p = tmp_path / "fake-0.json"
    p.write_text(small_scene(32, 32, scene_id="fake-0").to_json())
    return str(p)


def files_of(run_dir: Path) -> dict[str, bytes]:
    return {p.relative_to(run_dir).as_posix(): p.read_bytes() for p in sorted(run_dir.rglob("*")) if p.is_file()}


def test_shipped_run_is_the_local_runs_bytes_plus_its_node(tmp_path, scene):
    [local] = plan_tasks(tmp_path / "local", [scene], 1)
    assert execute_task(local, WorkerState(SETTINGS, renderer_factory=FakeRenderer)).ok

    [task] = plan_tasks(tmp_path / "shipped", [scene], 1)
    state = WorkerState(SETTINGS, renderer_factory=FakeRenderer)
    state.node = NODE
    outcome = ship_task(prepare_task(task), state, execute_task)
    assert not Path(task.run_dir).exists()          # the worker wrote nothing into DIR itself
    assert outcome.ok and outcome.files is not None and "result.json" in outcome.files.run
    landed = land_outcome(outcome)
    assert landed.files is None and landed.result["node"] == NODE

    a, b = files_of(Path(local.run_dir)), files_of(Path(task.run_dir))
    assert sorted(a) == sorted(b) and len(a) > 4
    for name in a:
        if name == "result.json":
            shipped = json.loads(b[name])
            assert shipped.pop("node") == NODE and shipped == json.loads(a[name])
        else:
            assert a[name] == b[name], name


def test_files_that_differ_once_written_are_refused_and_nothing_lands(tmp_path, scene):
    [task] = plan_tasks(tmp_path / "ev", [scene], 1)
    outcome = ship_task(prepare_task(task), WorkerState(SETTINGS, renderer_factory=FakeRenderer), execute_task)
    assert outcome.files is not None
    run = dict(outcome.files.run, **{"trace.jsonl": outcome.files.run["trace.jsonl"] + b"\n"})   # changed in transit
    with pytest.raises(ShippedFilesError, match="trace.jsonl"):
        land_outcome(dataclasses.replace(outcome, files=dataclasses.replace(outcome.files, run=run)))
    assert not Path(task.run_dir).exists()
    assert not list(Path(task.run_dir).parent.glob(".seed_0.*.tmp"))


def test_a_crashed_attempt_is_archived_and_counted(tmp_path, scene):
    from spatialscout_gym.eval.pages.report import episode_counts
    from spatialscout_gym.eval.running.backends import Work, _crash_outcome
    out = tmp_path / "ev"
    [task] = plan_tasks(out, [scene], 1)
    work = Work(WorkerState, execute_task, crashed_outcome)
    crashed = _crash_outcome(work, prepare_task(task), "Ray actor on node 1234 at 10.0.0.9: its node is dead")
    assert not crashed.ok and task.failed_file.is_file()

    # the rerun (as the Ray driver does it): the note becomes attempt 1, the new run attempt 2
    again = prepare_task(task)
    assert again.attempt == 2 and not task.failed_file.exists()
    note = json.loads((Path(task.run_dir) / "attempts" / "01" / "failed.json").read_text())
    assert "its node is dead" in note["error"]
    assert land_outcome(ship_task(again, WorkerState(SETTINGS, renderer_factory=FakeRenderer), execute_task)).ok
    result = json.loads((Path(task.run_dir) / "result.json").read_text())
    assert result["status"] == "ok" and result["attempt"] == 2
    assert (Path(task.run_dir) / "attempts" / "01" / "failed.json").is_file()    # kept by the new run dir
    [episode] = EvalDir(out).episodes()
    assert episode.completed is not None and len(episode.failed_results) == 1
    counts = episode_counts(out)
    assert (counts["attempts"], counts["failed_attempts"], counts["completed"]) == (2, 1, 1)


def test_a_local_workers_failure_note_is_archived_before_the_rerun(tmp_path):
    run_dir = tmp_path / "s" / "seed_0"
    Path(str(run_dir) + ".failed.json").parent.mkdir(parents=True)
    Path(str(run_dir) + ".failed.json").write_text(json.dumps({"scene": "x", "seed": 0, "error": "WorkerCrash: died"}))
    assert archive_failed_attempt(run_dir) == 2
    assert archive_failed_attempt(run_dir) == 2     # nothing more to archive: same number
    assert json.loads((run_dir / "attempts" / "01" / "failed.json").read_text())["error"] == "WorkerCrash: died"


def hostile(outcome, *, run=None, task=None):
    """``outcome`` as a hostile worker might send it back: other file names, another task."""
    files = outcome.files
    if run is not None:
        import hashlib
        files = dataclasses.replace(files, run=run, digests={k: hashlib.sha256(v).hexdigest() for k, v in run.items()})
    return dataclasses.replace(outcome, files=files, task=task or outcome.task)


def tree(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("name", ["/ABS/escaped.txt", "../escaped.txt", "../../escaped.txt", "a/../../escaped.txt",
                                  "./result.json", "a//b", "attempts/01/result.json", "a\\..\\..\\x", "result.json/x"])
def test_a_worker_naming_a_file_outside_its_run_directory_writes_nothing(tmp_path, scene, name):
    [task] = plan_tasks(tmp_path / "ev", [scene], 1)
    outcome = ship_task(prepare_task(task), WorkerState(SETTINGS, renderer_factory=FakeRenderer), execute_task)
    name = name.replace("/ABS", str(tmp_path))
    run = dict(outcome.files.run, **{name: b"planted"})
    before = tree(tmp_path)
    with pytest.raises(ShippedFilesError, match="refuses"):
        land_outcome(hostile(outcome, run=run), task)
    assert tree(tmp_path) == before                     # nothing written anywhere, the run dir included
    assert not Path(task.run_dir).exists()


def test_a_worker_naming_another_run_directory_deletes_and_writes_nothing(tmp_path, scene):
    victim = tmp_path / "victim" / "seed_0"
    victim.mkdir(parents=True)
    (victim / "precious.txt").write_text("keep me")
    [task] = plan_tasks(tmp_path / "ev", [scene], 1)
    outcome = ship_task(prepare_task(task), WorkerState(SETTINGS, renderer_factory=FakeRenderer), execute_task)
    before = tree(tmp_path)
    for run_dir in (str(victim), str(tmp_path / "ev" / "other" / "seed_0")):
        with pytest.raises(ShippedFilesError, match="another run directory"):
            land_outcome(hostile(outcome, task=dataclasses.replace(task, run_dir=run_dir)), task)
    assert tree(tmp_path) == before and (victim / "precious.txt").read_text() == "keep me"
    assert land_outcome(outcome, task).ok and (Path(task.run_dir) / "result.json").is_file()   # the honest one lands


def test_the_node_is_a_claimed_input_of_the_record_the_run_writes(tmp_path, scene):
    """The worker's node goes into the record derivation (a claimed field), so the run itself writes
    ``result.json`` with it; nothing rewrites the file afterwards."""
    from spatialscout_gym.core.records import CLAIMED, RayNode, field_kinds, load_run_record
    [task] = plan_tasks(tmp_path / "ev", [scene], 1)
    state = WorkerState(SETTINGS, renderer_factory=FakeRenderer)
    state.node = NODE
    outcome = execute_task(task, state)                  # no shipping: the run directory as the run wrote it
    assert outcome.ok and outcome.result["node"] == NODE
    record = load_run_record(Path(task.run_dir) / "result.json")
    assert record.node == RayNode(**NODE) and field_kinds()["node"] == CLAIMED
