"""The trace analyses on crafted traces: trajectories, grounding (Table 5), every
success and failure factor (Table 4, each with a trace that shows it and a near miss that does
not), tool-use behaviour, the Pareto frontier and episode collection in both attempt layouts."""

from __future__ import annotations

import json

import pytest

from record_fixtures import run_record, write_record
from spatialscout_gym.core.eval_records import FailureNote
from spatialscout_gym.eval.analysis.behaviour import tool_behaviour
from spatialscout_gym.eval.analysis.cost import cost_summary, pareto_frontier
from spatialscout_gym.eval.analysis.failures import count_factors, trajectory_factors
from spatialscout_gym.eval.analysis.grounding import grounding_summary, object_support
from spatialscout_gym.eval.pages.leaderboard import collect_episodes
from spatialscout_gym.eval.analysis.trajectory import RecordedBudgets, parse_trajectory


# ---- a tiny trace builder -----------------------------------------------------------------------
POSE = {"position_world": [0.0, 0.0, 1.5], "yaw_deg": 0.0, "pitch_deg": 0.0}
INTRINSICS = {"width": 64, "height": 64, "fx": 32.0, "fy": 32.0, "cx": 32.0, "cy": 32.0}

class Trace:
    """Builds trace events as the episode and the VLM wrapper write them."""

    def __init__(self, model: bool = True, image_budget: int = 10, tool_budget: int | None = None) -> None:
        self.model = model
        self.events: list[dict] = [{"event": "start", "scene_id": "procedural_0", "image_budget": image_budget,
                                    "tool_call_budget": tool_budget, "initial_pose_world": POSE, "intrinsics": INTRINSICS,
                                    "radius_m": 4.0}]
        self.index = 0
        self.call = -1
        self.images = 1
        self.map: dict[str, list[float]] = {}

    def request(self) -> "Trace":
        self.call += 1
        self.events.append({"event": "model_request", "model_call_index": self.call, "calls_left": None,
                            "message_count": 1 + 2 * self.call, "new_messages": [], "history_sha256": "0" * 64})
        return self

    def tool(self, tool: str, ok: bool = True, args: dict | None = None, result: dict | None = None) -> "Trace":
        self.events.append({"event": "tool_call", "index": self.index, "tool": tool, "args": args or {},
                            "result": {"tool": tool, "ok": ok, "result": result or {}}})
        self.index += 1
        return self

    def capture(self) -> "Trace":
        self.images += 1
        self.tool("capture_image", result={"frame_id": self.images - 1})
        self.events.append({"event": "capture", "frame_id": self.images - 1, "tool_call_index": self.index - 1,
                            "pose_world": POSE, "pose_task": POSE, "intrinsics": INTRINSICS, "images_used": self.images})
        return self

    def tri(self, point, residual: float = 0.01, warnings=()) -> "Trace":
        return self.tool("triangulate_observations", result={"ok": True, "point": list(point), "residual_m": residual,
                                                             "max_angle_deg": 20.0, "warnings": list(warnings)})

    def tri_refused(self) -> "Trace":
        return self.tool("triangulate_observations", ok=False, result={"ok": False, "reason": "parallel rays"})

    def submit(self, positions: dict) -> "Trace":
        self.map.update({k: list(map(float, v)) for k, v in positions.items()})
        self.tool("submit_positions", args={"positions": positions},
                  result={"accepted": list(positions), "refused": {}, "accepted_map": dict(self.map)})
        ev = {"event": "map", "tool_call_index": self.index - 1, "images_used": self.images, "accepted_map": dict(self.map)}
        if self.model:
            ev["model_call_index"] = self.call
        self.events.append(ev)
        return self

    def refused_by_wrapper(self, name: str) -> "Trace":
        self.events.append({"event": "tool_call_refused", "model_call_index": self.call, "refusal": "unknown_tool",
                            "call": {"id": "x", "name": name, "arguments": "{}"}, "error": f"unknown tool {name}"})
        return self

    def parse(self, budget: int | None = 20, calls_used: int | None = None):
        if self.model:
            recorded = RecordedBudgets(model_call_budget=budget, model_calls=calls_used or self.call + 1)
        else:
            recorded = RecordedBudgets(tool_call_budget=budget)
        return parse_trajectory(self.events + [{"event": "end", "reason": "finish_mapping", "tool_calls": self.index,
                                                "images_used": self.images}], recorded)


# ---- trajectories -------------------------------------------------------------------------------
def test_tool_uses_belong_to_the_model_call_that_asked_for_them():
    t = Trace().request().tool("list_entities").capture().request().refused_by_wrapper("fly") \
        .tool("move_camera", ok=False).request().submit({"a": [1, 0, 0]}).request().submit({"a": [1, 0.5, 0], "b": [0, 1, 0]})
    traj = t.parse(budget=20)
    assert [(u.call, u.tool, u.ok) for u in traj.tool_uses] == [
        (0, "list_entities", True), (0, "capture_image", True), (1, "other", False), (1, "move_camera", False),
        (2, "submit_positions", True), (3, "submit_positions", True)]
    assert traj.calls_kind == "model_calls" and traj.calls_used == 4 and traj.calls_left == 16
    assert traj.captures == 1 and traj.images_used == 2
    s1, s2 = traj.submissions
    assert s1.new_ids == ("a",) and s1.revised_ids == ()
    assert s2.new_ids == ("b",) and s2.revised_ids == ("a",)
    assert set(traj.final_map) == {"a", "b"}


def test_reference_agents_count_tool_calls():
    traj = Trace(model=False).tool("list_entities").capture().submit({"a": [0, 0, 0]}).parse(budget=None)
    assert traj.calls_kind == "tool_calls" and [u.call for u in traj.tool_uses] == [0, 1, 2]
    assert traj.calls_used == 3 and traj.calls_left is None


# ---- grounding ----------------------------------------------------------------------------------
def test_support_needs_a_prior_triangulation_within_half_a_metre():
    t = Trace().request().capture().tri([1.0, 0.0, 0.0]).tri([3.0, 0.0, 0.0], residual=0.3, warnings=["residual"]) \
        .tri_refused().request()
    # a: 0.4 m from the first point (supported, same model call is fine: earlier tool index)
    # b: 0.6 m from every point (unsupported); c: submitted before its triangulation (unsupported)
    # d: near the second point, within 0.5 m of it only
    t.submit({"a": [1.4, 0.0, 0.0], "b": [2.0, 0.6, 0.0], "c": [5.0, 0.0, 0.0], "d": [3.0, 0.3, 0.0]})
    t.request().tri([5.0, 0.1, 0.0])
    traj = t.parse()
    sup = object_support(traj)
    assert {k: s.supported for k, s in sup.items()} == {"a": True, "b": False, "c": False, "d": True}
    assert sup["a"].distance_m == pytest.approx(0.4)
    assert sup["d"].linked.warnings == ("residual",)
    # revising c after the late triangulation makes it supported (the last submission counts)
    t.submit({"c": [5.0, 0.0, 0.0]})
    assert object_support(t.parse())["c"].supported


def test_linked_triangulation_is_the_nearest():
    t = Trace().request().tri([1.0, 0.0, 0.0]).tri([1.3, 0.0, 0.0], residual=0.2).request().submit({"a": [1.2, 0, 0]})
    link = object_support(t.parse())["a"].linked
    assert link.residual_m == 0.2


def test_grounding_summary_by_hand():
    t1 = Trace().request().capture().capture().tri([1, 0, 0]).tri([2, 0, 0], warnings=["angle"]).request() \
        .submit({"a": [1, 0, 0], "b": [9, 0, 0]})
    t2 = Trace().request().capture().tri_refused().tri([0, 1, 0]).request().submit({"c": [0, 1, 0.2]})
    g = grounding_summary([t1.parse(), t2.parse()], [0.1, 0.5, 0.3])
    # submitted 3 (a, b, c), supported 2 (a, c); successful triangulations 3, one with warnings
    assert (g["submitted"], g["supported"], g["triangulations"], g["with_warnings"]) == (3, 2, 3, 1)
    assert g["supported_share"] == pytest.approx(2 / 3)
    assert g["warning_share"] == pytest.approx(1 / 3)
    assert g["triangulations_failed"] == 1
    assert g["captures_per_task"] == pytest.approx(1.5)
    assert g["median_center_error_m"] == pytest.approx(0.3)


# ---- success and failure factors ----------------------------------------------------------------
N = 10
IDS = [f"t{i}" for i in range(N)]


def _grounded_full(t: Trace, ids=IDS) -> Trace:
    """Triangulate then submit each id at its triangulated point, in two growing batches."""
    t.request().capture()
    for k, tid in enumerate(ids):
        t.tri([k, 0, 0])
    t.request().submit({tid: [k, 0, 0] for k, tid in enumerate(ids[:5])})
    t.request().submit({tid: [k + 5, 0, 0] for k, tid in enumerate(ids[5:])})
    return t


def test_success_and_its_factors():
    t = _grounded_full(Trace())
    t.request().submit({"t0": [0.05, 0, 0]})    # refinement
    f = trajectory_factors(t.parse(), {k: 0.1 for k in IDS}, N)
    assert f.success and set(f.factors) == {"multi_view_grounding", "incremental_submission", "continued_refinement"}
    # near misses: mean error 0.21 m is not success; one batch, no revision, no triangulation: no factors
    assert not trajectory_factors(t.parse(), {k: 0.21 for k in IDS}, N).success
    t2 = Trace().request().submit({k: [i, 0, 0] for i, k in enumerate(IDS)})
    f2 = trajectory_factors(t2.parse(), {k: 0.1 for k in IDS}, N)
    assert f2.success and f2.factors == ()


def test_incomplete_coverage_and_early_termination():
    t = _grounded_full(Trace(), IDS[:8])                  # 8 of 10: coverage 0.8
    errs = {k: 0.05 for k in IDS}
    f = trajectory_factors(t.parse(budget=20), errs, N)   # 3 calls used, 17 left
    assert not f.success and "incomplete_coverage" in f.factors and "early_termination" in f.factors
    f = trajectory_factors(t.parse(budget=12), errs, N)   # 9 left: not early
    assert "incomplete_coverage" in f.factors and "early_termination" not in f.factors
    full = _grounded_full(Trace(), IDS[:9])               # coverage 0.9: complete enough
    assert "incomplete_coverage" not in trajectory_factors(full.parse(), errs, N).factors
    assert "early_termination" not in trajectory_factors(t.parse(budget=None), errs, N).factors


def test_inaccurate_despite_low_residual_and_with_warnings():
    t = Trace().request().capture().tri([0, 0, 0], residual=0.05).tri([3, 0, 0], residual=0.3, warnings=["residual"])
    t.request().submit({"t0": [0, 0, 0], "t1": [3, 0, 0]})
    errs = {"t0": 0.6, "t1": 0.1}
    f = trajectory_factors(t.parse(), errs, N)
    assert "inaccurate_despite_low_residual" in f.factors and "inaccurate_with_warnings" not in f.factors
    f = trajectory_factors(t.parse(), {"t0": 0.1, "t1": 0.6}, N)
    assert "inaccurate_with_warnings" in f.factors and "inaccurate_despite_low_residual" not in f.factors
    f = trajectory_factors(t.parse(), {"t0": 0.5, "t1": 0.5}, N)   # 0.5 m is not > 0.5 m
    assert not {"inaccurate_with_warnings", "inaccurate_despite_low_residual"} & set(f.factors)


def test_unsupported_positions():
    t = Trace().request().tri([0, 0, 0]).tri([1, 0, 0]).tri([2, 0, 0]).request()
    t.submit({"t0": [0, 0, 0], "t1": [1, 0, 0], "t2": [2, 0, 0], "t3": [7, 0, 0]})   # 1 of 4 unsupported
    assert "unsupported_positions" not in trajectory_factors(t.parse(), {}, N).factors
    t.submit({"t4": [8, 0, 0]})                                                      # 2 of 5
    assert "unsupported_positions" in trajectory_factors(t.parse(), {}, N).factors


def test_observation_without_progress():
    t = Trace(image_budget=11).request()
    for _ in range(5):
        t.capture()                                        # 5 captures of the 10 capturable (V = 11)
    t.request().submit({"t0": [0, 0, 0], "t1": [1, 0, 0]})
    errs = {"t0": 0.1, "t1": 0.1}                          # 2 of 10 localized (< 25 %)
    assert "observation_without_progress" in trajectory_factors(t.parse(), errs, N).factors
    t2 = Trace(image_budget=11).request()
    for _ in range(4):
        t2.capture()                                       # 4 captures: not half
    t2.request().submit({"t0": [0, 0, 0]})
    assert "observation_without_progress" not in trajectory_factors(t2.parse(), errs, N).factors
    v1 = Trace(image_budget=1).request().submit({"t0": [0, 0, 0]})   # V = 1: nothing captured, not this
    assert "observation_without_progress" not in trajectory_factors(v1.parse(), errs, N).factors
    t.submit({"t2": [2, 0, 0]})                            # 3 of 10 localized: progress
    assert "observation_without_progress" not in trajectory_factors(t.parse(), {**errs, "t2": 0.2}, N).factors


def test_late_refinement_without_new_objects():
    t = Trace().request().submit({"t0": [0, 0, 0], "t1": [1, 0, 0]})
    for _ in range(5):
        t.request().tool("list_entities")
    t.request().submit({"t0": [0.2, 0, 0]})              # call 6 of 8 used (>= 0.75 * 8 = 6): late
    t.request().tool("list_entities")
    assert "late_refinement_without_new_objects" in trajectory_factors(t.parse(), {}, N).factors
    t.request().submit({"t2": [2, 0, 0]})                # a late new object: not this factor
    assert "late_refinement_without_new_objects" not in trajectory_factors(t.parse(), {}, N).factors
    early = Trace().request().submit({"t0": [0, 0, 0]}).request().submit({"t0": [0.2, 0, 0]})
    for _ in range(6):
        early.request().tool("list_entities")            # the revision at call 1 of 8 is not late
    assert "late_refinement_without_new_objects" not in trajectory_factors(early.parse(), {}, N).factors


def test_count_factors():
    a = trajectory_factors(_grounded_full(Trace()).parse(), {k: 0.1 for k in IDS}, N)
    b = trajectory_factors(Trace().request().submit({"t0": [0, 0, 0]}).parse(), {"t0": 1.0}, N)
    c = count_factors([a, b])
    assert (c["trajectories"], c["success"], c["failure"]) == (2, 1, 1)
    assert c["factors"]["incremental_submission"] == 1 and c["factors"]["incomplete_coverage"] == 1
    assert c["factors"]["unsupported_positions"] == 1 and c["factors"]["observation_without_progress"] == 0


# ---- behaviour and cost ---------------------------------------------------------------------------
def test_tool_behaviour_bins_by_hand():
    t1 = Trace()
    for _ in range(12):                                    # 12 model calls: capture in each
        t1.request().capture()
    t1.submit({"t0": [0, 0, 0]})                           # in call 11 (second bin)
    t2 = Trace().request().tool("move_camera").tool("move_camera").request().tool("finish_mapping")
    b = tool_behaviour([t1.parse(), t2.parse()], bin_calls=10)
    assert b["bins"] == [[0, 10], [10, 20]] and b["episodes_in_bin"] == [2, 1]
    assert b["per_bin"]["capture_image"] == [pytest.approx(10 / 2), pytest.approx(2 / 1)]
    assert b["per_bin"]["move_camera"] == [pytest.approx(1.0), 0.0]
    assert b["per_bin"]["submit_positions"] == [0.0, 1.0]
    assert b["total_per_task"]["capture_image"] == pytest.approx(6.0)
    assert b["share"]["capture_image"] == pytest.approx(12 / 16)
    assert b["calls_per_task"] == pytest.approx((12 + 2) / 2)


def test_pareto_frontier_and_unpriced_models():
    pts = {"cheap": (0.1, 0.2), "dominated": (1.0, 0.15), "best": (5.0, 0.4), "tie": (5.0, 0.3)}
    assert pareto_frontier(pts) == ["cheap", "best"]
    rows = {n: {"cost_per_task_usd": c, "object_micro": {"all": {"mean_iou": q}}} for n, (c, q) in pts.items()}
    rows["origin"] = {"cost_per_task_usd": None, "object_micro": {"all": {"mean_iou": 0.0}}}
    s = cost_summary(rows)
    assert s["frontier"] == ["cheap", "best"] and s["unpriced"] == ["origin"] and "origin" not in s["points"]


# ---- episode collection in both attempt layouts --------------------------------------------------
def _result(path, status="ok", **extra):
    path.mkdir(parents=True, exist_ok=True)
    scene = path.parts[path.parts.index("seed_0") - 1]   # a scored result names its scene
    write_record(path, run_record(scene, seed=0, status=status, **extra))


def test_collect_episodes_tolerates_both_attempt_layouts(tmp_path):
    ev = tmp_path / "ev"
    _result(ev / "a" / "seed_0")                                          # completed at once
    _result(ev / "b" / "seed_0", status="failed")                         # failed, not redone
    (ev / "c").mkdir()
    (ev / "c" / "seed_0.failed.json").write_text(json.dumps({"scene": "c", "seed": 0,   # could not start
                                                             "error": "ValueError: no such scene"}))
    _result(ev / "d" / "seed_0")                                          # redone (old layout)
    (ev / "d" / "seed_0.attempts").mkdir()
    _result(tmp_path / "old" / "d" / "seed_0", status="failed")   # the old layout archived the failed result.json
    (tmp_path / "old" / "d" / "seed_0" / "result.json").rename(ev / "d" / "seed_0.attempts" / "failed_01.json")
    _result(ev / "e" / "seed_0" / "attempts" / "01", status="failed")     # per-attempt layout
    _result(ev / "e" / "seed_0" / "attempts" / "02")
    _result(ev / "f" / "seed_0" / "attempts" / "01", status="failed")
    _result(ev / "f" / "seed_0" / "attempts" / "02", status="failed")
    (ev / "g" / "seed_0" / "attempts" / "01").mkdir(parents=True)         # no result yet: not counted
    _result(ev / "h" / "seed_0")                                          # `evaluate`'s layout: the last
    _result(ev / "h" / "seed_0" / "attempts" / "01", status="failed")     # attempt on top, earlier ones
    _result(ev / "i" / "seed_0", status="failed")                         # under attempts/NN
    _result(ev / "i" / "seed_0" / "attempts" / "01", status="failed")
    eps = collect_episodes(ev)
    assert [e.key for e in eps.completed] == ["a/seed_0", "d/seed_0", "e/seed_0", "h/seed_0"]
    assert eps.completed[2].run_dir == ev / "e" / "seed_0" / "attempts" / "02"
    assert eps.completed[3].run_dir == ev / "h" / "seed_0"
    assert eps.failed == ["b/seed_0", "c/seed_0", "f/seed_0", "i/seed_0"]
    # failed attempts: b, c's note, d's archive, e's 01, f's 01 and 02, h's 01, i's two
    assert len(eps.failed_attempts) == 9
    note = next(r for r in eps.failed_attempts if isinstance(r, FailureNote))
    assert (note.scene, note.error_type) == ("c", "ValueError")   # a note without a type: its error's prefix
