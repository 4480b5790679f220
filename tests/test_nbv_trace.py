"""An NBV run's steps are in its trace (docs/protocol.md section 7): each step's action, whether
walls blocked its move (and by what) and where the camera ended, so the exploration figures it
records are recomputed from the record; verify holds the steps to the re-executed tool calls.
Real SAPIEN render at 32 px, a random NBV policy on two apartments."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from spatialscout_gym.cli.main import main
from spatialscout_gym.eval.running.evaluate import evaluate
from spatialscout_gym.eval.running.tasks import EvalSettings

SCENES = ["Apartment_13", "Apartment_17"]


@pytest.fixture(scope="module")
def nbv_eval(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("nbvtrace") / "random"
    summary = evaluate(d, EvalSettings("random-nbv", 12, None, 32), SCENES, seeds=1, workers=1, progress=False,
                       write_report=False)
    assert summary.total == 2 and not summary.failed
    return d


def _events(run: Path) -> list[dict]:
    return [json.loads(x) for x in (run / "trace.jsonl").read_text().splitlines()]


def test_the_exploration_figures_are_recomputed_from_the_trace(nbv_eval):
    blocked_total = 0
    for scene in SCENES:
        run = nbv_eval / scene / "seed_0"
        events, result = _events(run), json.loads((run / "result.json").read_text())
        steps = [e for e in events if e["event"] == "nbv_step"]
        assert [e["step"] for e in steps] == list(range(len(steps))) and steps
        start = next(e for e in events if e["event"] == "start")
        here = np.asarray(start["initial_pose_world"]["position_world"])
        path = 0.0
        for e in steps:           # the camera's travel, step by step, from the recorded positions
            path += float(np.linalg.norm(np.asarray(e["position_world"]) - here))
            here = np.asarray(e["position_world"])
        tally = result["nbv"]["exploration"]
        assert tally["blocked_moves"] == sum(e["blocked"] for e in steps)
        assert tally["path_length_m"] == pytest.approx(path, rel=1e-12, abs=1e-12)
        assert all(e["block_cause"] in ("wall", "floor", "ceiling", "off_floor") for e in steps if e["blocked"])
        assert all(isinstance(e["action"], int) for e in steps)          # Discrete(18) indices
        blocked_total += tally["blocked_moves"]
    assert blocked_total > 0           # the walls stopped some of the random moves


def test_the_nbv_run_verifies_and_edited_steps_are_refused(nbv_eval, tmp_path, capsys):
    capsys.readouterr()
    assert main(["verify", str(nbv_eval), "--no-cache", "--no-progress"]) == 0
    run_of = {s: Path("x") / s / "seed_0" for s in SCENES}

    def edited(name: str, fn) -> dict:
        d = tmp_path / name
        shutil.copytree(nbv_eval, d)
        fn(d)
        capsys.readouterr()
        main(["verify", str(d), "--json", "--no-cache"])
        return {e["episode"]: e for e in json.loads(capsys.readouterr().out)["dirs"][str(d)]}

    def flip_unblocked(d: Path) -> None:         # a step that moved, said to be blocked
        run = d / run_of[SCENES[0]].relative_to("x")
        events = _events(run)
        calls = {e["index"]: e["tool"] for e in events if e["event"] == "tool_call"}
        step = next(e for e in events if e["event"] == "nbv_step" and not e["blocked"]
                    and "move_camera" in [calls.get(k) for k in range(*e["tool_calls"])])
        step["blocked"] = True
        (run / "trace.jsonl").write_text("".join(json.dumps(e) + "\n" for e in events))

    def fewer_blocked(d: Path) -> None:          # the claimed tally edited in result.json
        for scene in SCENES:
            p = d / scene / "seed_0" / "result.json"
            r = json.loads(p.read_text())
            if r["nbv"]["exploration"]["blocked_moves"]:
                r["nbv"]["exploration"]["blocked_moves"] -= 1
                p.write_text(json.dumps(r))
                return

    got = edited("flip", flip_unblocked)[f"{SCENES[0]}/seed_0"]
    assert got["status"] == "diverged" and "nbv_step, blocked" in got["detail"], got
    got = edited("tally", fewer_blocked)
    assert any(e["status"] == "diverged" and "nbv.exploration.blocked_moves" in e["detail"] for e in got.values()), got


def _edit_json(p: Path, fn) -> None:
    d = json.loads(p.read_text())
    fn(d)
    p.write_text(json.dumps(d))


def _edit_trace(run: Path, fn) -> None:
    events = _events(run)
    fn(events)
    (run / "trace.jsonl").write_text("".join(json.dumps(e) + "\n" for e in events))


def test_the_trace_records_the_dynamics_the_run_ran_under(nbv_eval):
    for scene in SCENES:
        run = nbv_eval / scene / "seed_0"
        steps = [e for e in _events(run) if e["event"] == "nbv_step"]
        block = json.loads((run / "result.json").read_text())["nbv"]
        assert steps[0]["dynamics"] == {k: block[k] for k in steps[0]["dynamics"]}
        assert steps[0]["dynamics"]["env_id"] == "SpatialScout/NBV-v2" and steps[0]["dynamics"]["walls"] is True
        assert all("dynamics" not in e for e in steps[1:])


def test_an_nbv_run_relabelled_to_other_dynamics_is_refused(nbv_eval, tmp_path, capsys):
    """NBV-v2 with walls, relabelled NBV-v1 without: in result.json alone (the trace's record
    disagrees), with the trace's record too, and in a trace that records no dynamics (the steps
    replayed under the claimed ones: a blocked step contradicts walls off)."""
    scene = next(s for s in SCENES if any(e["event"] == "nbv_step" and e["blocked"]
                                          for e in _events(nbv_eval / s / "seed_0")))
    key = f"{scene}/seed_0"

    def to_v1(block: dict) -> None:
        block.update(env_id="SpatialScout/NBV-v1", walls=False)

    def relabel_result(run: Path) -> None:
        _edit_json(run / "result.json", lambda r: to_v1(r["nbv"]))

    def relabel_trace(run: Path) -> None:
        _edit_trace(run, lambda ev: to_v1(next(e for e in ev if e["event"] == "nbv_step")["dynamics"]))

    def drop_trace_record(run: Path) -> None:
        _edit_trace(run, lambda ev: next(e for e in ev if e["event"] == "nbv_step").pop("dynamics"))

    def verdict(name: str, *edits) -> dict:
        d = tmp_path / name
        shutil.copytree(nbv_eval, d)
        for edit in edits:
            edit(d / key)
        capsys.readouterr()
        main(["verify", str(d), "--json", "--no-cache"])
        return {e["episode"]: e for e in json.loads(capsys.readouterr().out)["dirs"][str(d)]}[key]

    got = verdict("result", relabel_result)
    assert got["status"] == "diverged" and "nbv.env_id, recorded 'SpatialScout/NBV-v1'" in got["detail"], got
    assert "dynamics the trace recorded 'SpatialScout/NBV-v2'" in got["detail"], got
    got = verdict("both", relabel_result, relabel_trace)
    assert got["status"] == "diverged" and "nbv_step, blocked, recorded true" in got["detail"], got
    assert "walls off" in got["detail"], got
    got = verdict("legacy", relabel_result, drop_trace_record)
    assert got["status"] == "diverged" and "nbv_step, blocked, recorded true" in got["detail"], got
    got = verdict("env-id-only", drop_trace_record, lambda run: _edit_json(
        run / "result.json", lambda r: r["nbv"].update(env_id="SpatialScout/NBV-v1")))
    assert got["status"] == "diverged" and "nbv.env_id, recorded 'SpatialScout/NBV-v1'" in got["detail"], got
    assert verdict("honest-legacy", drop_trace_record)["status"] == "verified"


def test_a_step_recorded_unblocked_through_a_wall_contradicts_walls_on(nbv_eval):
    """The replay under walls: a step recorded as moving freely to where the walls forbid (here: off
    the floor) is refused; the honest steps pass."""
    from spatialscout_gym.eval.verification.nbv_dynamics import nbv_dynamics_error
    from spatialscout_gym.scenes.catalog import load_scene
    run = nbv_eval / SCENES[0] / "seed_0"
    events, block = _events(run), json.loads((run / "result.json").read_text())["nbv"]
    spec = load_scene(SCENES[0])
    assert nbv_dynamics_error(events, block, spec) is None
    i, step = next((i, e) for i, e in enumerate(events) if e["event"] == "nbv_step" and not e["blocked"])
    step["position_world"] = [x + 100.0 for x in step["position_world"]]
    said = nbv_dynamics_error(events, block, spec)
    assert said is not None and said.startswith(f"at event {i}: nbv_step, blocked, recorded false") and "walls on" in said
    free = dict(block, env_id="SpatialScout/NBV-v1", walls=False)
    for e in events:
        if e["event"] == "nbv_step":
            e.pop("dynamics", None)
            e["blocked"], e["block_cause"] = False, None
    assert nbv_dynamics_error(events, free, spec) is None   # without walls any move is free
