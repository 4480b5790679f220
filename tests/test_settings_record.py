"""Each setting recorded once: the per-episode settings record (``EpisodeSettings``) is the one
list of settings. Changing any compared field of it in every ``result.json`` of a run makes
``compare`` refuse the pair naming that setting; a field recorded but not compared says why and
does not refuse; ``--force`` names every difference and keeps the other checks. Vulkan-free
renderer, fake scenes, 32 px, real ``openai`` client against a scripted server on 127.0.0.1."""

from __future__ import annotations

import dataclasses
import json
import shutil

import pytest

from fakes import FakeRenderer, small_scene
from vlm_scripted import ScriptedServer
from spatialscout_gym.core.records import load_run_record
from spatialscout_gym.eval.pages.report import CompareError, compare_reports
from spatialscout_gym.eval.running.evaluate import EvalSettings, evaluate
from spatialscout_gym.eval.settings_check import RECORDED, SETTINGS, EpisodeSettings, episode_settings

EXPECTED = {"image_budget", "resolution", "tool_call_budget", "model_call_budget", "prompt_style", "reasoning_effort",
            "reasoning_effort_sent", "mode", "image_history", "image_max_side_px", "reasoning_effort_source",
            "max_output_tokens", "nbv_dynamics", "nbv_env_id", "nbv_walls", "nbv_wall_margin_m", "nbv_mapper", "budget_counts", "tool_call_budget_b"}
"""The settings an episode records (the record may grow; none may leave it unnoticed)."""
NOT_COMPARED = {"reasoning_effort_source", "max_output_tokens", "nbv_env_id"}
"""Recorded and shown, not compared (each field says why)."""


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("record")
    scenes = []
    for k in range(2):
        p = tmp / f"fake-{k}.json"
        p.write_text(small_scene(32, 32, yaw_deg=20.0 + 25 * k, scene_id=f"fake-{k}").to_json())
        scenes.append(str(p))
    evaluate(tmp / "reference", EvalSettings("origin", 5, 20, 32), scenes, progress=False,
             renderer_factory=FakeRenderer)
    with ScriptedServer(lambda step, body, fmt: [("finish_mapping", {})]) as server:
        evaluate(tmp / "model", EvalSettings("openai:scripted", 5, 20, 32, agent_options={"model_call_budget": 20},
                                             runtime_options={"base_url": server.openai_url, "api_key": "local"}),
                 scenes, progress=False, renderer_factory=FakeRenderer)
    return tmp


NBV_BLOCK = {"env_id": "SpatialScout/NBV-v2", "walls": True, "wall_margin_m": 0.1, "motion": "heading",
             "observation_keys": ["coverage", "image", "map", "pose", "scan", "sectors"], "mapper": "oracle"}
"""The dynamics an NBV agent's ``result.json`` records (its ``nbv`` block makes its kind ``nbv``)."""


def _copy(src, dst, edit=None):
    shutil.copytree(src, dst)
    for p in dst.glob("*/seed_*/result.json"):
        r = json.loads(p.read_text())
        if edit is not None:
            edit(r)
        p.write_text(json.dumps(r))
    return dst


def _changed(runs, tmp_path, s, value):
    """A copy of the run the setting applies to, with the setting set to ``value`` in every result.json
    (for a setting of NBV agents only, two copies of the reference run given an ``nbv`` block)."""
    def nbv(r):
        r["nbv"] = dict(NBV_BLOCK)

    def change(r):
        if s.field == "nbv_dynamics":  # derived from the walls: NBV-v1's dynamics
            r["nbv"].update(walls=False)
            return
        if s.field == "nbv_mapper":    # the base records the centre mapper, the other the surface one
            r["nbv"].update(mapper="oracle-surface")
            return
        if s.derive is not None:      # a derived setting: its source changed (the effort refused)
            r["model"].update(reasoning_effort_refused=["reasoning_effort"], reasoning_effort_sent={})
            return
        holder = r[s.block] if s.block else r
        holder[s.key] = value
    def mcp(r):     # an MCP client's run: its harness record names the MCP server
        r["harness"] = {"name": "mcp", "budget_counts": "tool calls"}
    if s.field == "budget_counts":   # derived from the kind: an MCP run (tool calls) beside the model run
        return runs / "model", _copy(runs / "reference", tmp_path / "mcp-budget_counts", mcp)
    if set(s.kinds) == {"mcp", "human"}:    # MCP and human runs only: two MCP runs, B changed in one
        base = _copy(runs / "reference", tmp_path / f"mcp-base-{s.field}", mcp)
        return base, _copy(runs / "reference", tmp_path / f"mcp-{s.field}", lambda r: (mcp(r), r.update({s.key: 7})))
    if "model" not in s.kinds and "reference" not in s.kinds:
        base = _copy(runs / "reference", tmp_path / f"nbv-base-{s.field}", nbv)
        return base, _copy(runs / "reference", tmp_path / f"nbv-{s.field}", lambda r: (nbv(r), change(r)))
    name = "model" if "model" in s.kinds else "reference"
    return runs / name, _copy(runs / name, tmp_path / f"{name}-{s.field}", change)


def test_the_record_holds_every_setting_and_every_run_records_it(runs):
    assert {f.name for f in dataclasses.fields(EpisodeSettings)} >= EXPECTED
    assert {s.field for s in RECORDED} == {f.name for f in dataclasses.fields(EpisodeSettings)}
    assert {s.field for s in RECORDED if s not in SETTINGS} == NOT_COMPARED
    model = load_run_record(next((runs / "model").glob("*/seed_*/result.json")))
    recorded = episode_settings(model)
    assert all(recorded[s.field][0] for s in RECORDED if "model" in s.kinds or s.block == "")
    assert recorded["reasoning_effort"] == (True, "xhigh")
    assert recorded["reasoning_effort_sent"] == (True, {"reasoning_effort": "xhigh"})


TYPED_CHANGES: dict[str, object] = {
    "image_budget": 77, "resolution": 48, "tool_call_budget": 77, "model_call_budget": 77, "image_history": 77,
    "image_max_side_px": 77, "max_output_tokens": 77, "prompt_style": "changed", "reasoning_effort": "changed",
    "mode": "changed", "reasoning_effort_source": "changed", "nbv_env_id": "SpatialScout/NBV-v3",
    "nbv_walls": False, "nbv_wall_margin_m": 0.25}
"""A value of each setting's type in the run record (read strictly, a value of another type is no
record), unlike the recorded one; a setting in an untyped block takes ``{"changed": field}``."""


@pytest.mark.parametrize("field", [f.name for f in dataclasses.fields(EpisodeSettings)])
def test_changing_any_field_of_the_record_makes_compare_refuse_naming_it(runs, tmp_path, field):
    s = next(x for x in RECORDED if x.field == field)
    value = TYPED_CHANGES.get(field, {"changed": field})
    base, other = _changed(runs, tmp_path, s, value)
    if s in SETTINGS:
        with pytest.raises(CompareError) as caught:
            compare_reports([base, other])
        shown = {"budget_counts": "tool calls", "tool_call_budget_b": ": 7",
                 "reasoning_effort_outcome": "refused", "nbv_dynamics": "NBV-v1",
                 "nbv_mapper": "oracle-surface"}.get(field, str(value))
        assert f"{s.name} differs" in str(caught.value) and shown in str(caught.value)
    else:
        meta = next(f for f in dataclasses.fields(EpisodeSettings) if f.name == field).metadata
        assert meta["why"]                                          # recorded, not compared, and says why
        compare_reports([base, other])


def test_force_names_every_difference_and_keeps_the_other_checks(runs, tmp_path):
    effort = next(s for s in SETTINGS if s.field == "reasoning_effort_sent")
    base, other = _changed(runs, tmp_path, effort, {})
    for p in other.glob("*/seed_*/result.json"):      # a second difference: the image history
        r = json.loads(p.read_text())
        r["model"]["image_history"] = 2
        r["catalog_version"] = "9.9"
        p.write_text(json.dumps(r))
    text, reports = compare_reports([base, other], force=True)
    forced = next(line for line in text.splitlines() if line.startswith("**Forced comparison"))
    assert "reasoning effort sent differs" in forced and "image history differs" in forced
    assert "catalog versions differ" in forced
    assert reports[other.name]["verified"]["status"] == "diverged"   # verification still runs under --force


def test_the_nbv_mapper_is_recorded_and_runs_recorded_before_it_compare_only_among_themselves(runs, tmp_path):
    """A run's ``nbv`` block names its mapper; two runs recorded before the mapper was compare as
    they did, and one of them beside a run that records its mapper is refused, naming the setting."""
    from fakes import FakeRenderer, small_scene
    from spatialscout_gym.baselines.registry import make_agent
    from spatialscout_gym.eval.running.runner import run_episode
    spec = small_scene(32, 32)
    res = run_episode(make_agent("frontier-nbv", mapper="oracle-surface"), spec, tmp_path / "run", image_budget=3,
                      tool_call_budget=None, resolution=32, renderer=FakeRenderer(spec, 32, 32))
    assert res["nbv"]["mapper"] == "oracle-surface"
    old_block = {k: v for k, v in NBV_BLOCK.items() if k != "mapper"}

    def before(r):
        r["nbv"] = dict(old_block)

    def now(r):
        r["nbv"] = dict(NBV_BLOCK)
    old_a = _copy(runs / "reference", tmp_path / "old-a", before)
    old_b = _copy(runs / "reference", tmp_path / "old-b", before)
    compare_reports([old_a, old_b])                               # as before the mapper was recorded
    new = _copy(runs / "reference", tmp_path / "new", now)
    with pytest.raises(CompareError, match="NBV mapper differs: .*not recorded.*oracle"):
        compare_reports([old_a, new])
