"""The run record is typed and derived (docs/verify.md): ``result.json`` is what
``derive_run_record`` returns for the trace and the named inputs, every field is declared derived
or claimed, and ``verify`` recomputes the whole derived part, so each derived field, edited alone,
is refused by name without any list of fields in ``verify``.

One honest scripted-model evaluation (chat completions with the service's prompt cache, a price
table with cached-input prices, one HTTP 429 waited out, the request cache on) and one reference run;
fake pixels (no tool result depends on them)."""

from __future__ import annotations

import copy
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from fakes import FakeRenderer
from spatialscout_gym.core.records import (CLAIMED, DERIVED, RecordError, RunRecord, field_kinds, load_run_record,
                                           parse_run_record)
from spatialscout_gym.eval.running.evaluate import evaluate
from spatialscout_gym.eval.running.tasks import EvalSettings
from spatialscout_gym.core.eval_records import load_evaluation
from spatialscout_gym.eval.verification.verify import verify_episode

PRICES = {"scripted": {"input_per_mtok": 2.0, "output_per_mtok": 8.0, "cached_input_per_mtok": 0.5}}
EP = "procedural_3/seed_0"


def _policy(step: int, body: dict, fmt: str) -> list:
    if step == 0:
        return [("capture_image", {})]
    if step == 1:
        return [("list_entities", {})]
    if step == 2:
        msgs = body["messages"]
        results = [json.JSONDecoder().raw_decode(c if isinstance(c, str) else c[0]["text"])[0] for c in
                   (m["content"] for m in msgs if m["role"] == "tool")]
        ids = [e["id"] for e in next(r["result"]["entities"] for r in results if "entities" in (r.get("result") or {}))]
        return [("submit_positions", {"positions": {ids[0]: [1.0, 0.2, 0.0], ids[1]: [2.3, -0.4, 0.1]}})]
    return []


@pytest.fixture(scope="module")
def runs(tmp_path_factory, monkeypatch_module) -> dict[str, Path]:
    import spatialscout_gym.conversation.providers as providers
    from vlm_scripted import ScriptedServer
    monkeypatch_module.setattr(providers.time, "sleep", lambda s: None)    # the 429's wait, not slept
    root = tmp_path_factory.mktemp("records")
    with ScriptedServer(_policy, fail={1: "429:1"}) as server:
        settings = EvalSettings("openai:scripted", 4, None, 32,
                                agent_options={"model_call_budget": 6, "price_table": PRICES,
                                               "request_cache": str(root / "cache")},
                                runtime_options={"base_url": server.openai_url, "api_key": "local"})
        summary = evaluate(root / "model", settings, ["procedural:3"], seeds=1, workers=1, progress=False,
                           renderer_factory=FakeRenderer)
        posts = len(server.arrivals)
    assert summary.total == 1 and not summary.failed
    assert posts == 5          # four answered calls and one 429
    ref = evaluate(root / "ref", EvalSettings("oracle-explorer", 6, 12, 32), ["procedural:3"], seeds=1, workers=1,
                   progress=False, renderer_factory=FakeRenderer)
    assert ref.total == 1 and not ref.failed
    return {"model": root / "model" / EP, "ref": root / "ref" / EP}


@pytest.fixture(scope="module")
def monkeypatch_module():
    mp = pytest.MonkeyPatch()
    yield mp
    mp.undo()


def _verdict(run: Path) -> Any:
    return verify_episode(EP, run, settings=load_evaluation(run.parent.parent))


def _copy(run: Path, tmp_path: Path) -> Path:
    dest = tmp_path / "ev"
    shutil.copytree(run.parent.parent, dest)
    return dest / EP


def _leaves(d: Any, prefix: str = "") -> list[tuple[str, Any]]:
    if isinstance(d, dict) and d:
        return [leaf for k, v in d.items() for leaf in _leaves(v, f"{prefix}{k}.")]
    if isinstance(d, list) and d:
        return [leaf for i, v in enumerate(d) for leaf in _leaves(v, f"{prefix[:-1]}[{i}].")]
    return [(prefix[:-1], d)]


def _changed(value: Any) -> Any:
    """Another value of the same JSON type."""
    if isinstance(value, bool):
        return not value
    if isinstance(value, int):
        return value + 1
    if isinstance(value, float):
        return value + 0.25 if value == 0 else value * 1.5
    if isinstance(value, str):
        return value + "x"
    if value is None:
        return 7
    if isinstance(value, list):
        return ["x"]
    return {"x": 1}


def _set(d: dict, path: str, value: Any) -> None:
    keys = [k for part in path.split(".") for k in _split_index(part)]
    for k in keys[:-1]:
        d = d[k]
    d[keys[-1]] = value


def _split_index(part: str) -> list[Any]:
    name, _, rest = part.partition("[")
    out: list[Any] = [name] if name else []
    while rest:
        idx, _, rest = rest.partition("]")
        out.append(int(idx))
        rest = rest.lstrip("[")
    return out


def _kind(path: str, kinds: dict[str, str]) -> str:
    """The declared kind of a leaf (a dict field's entries take the field's kind)."""
    parts = path.replace("[", ".[").split(".")
    for n in range(len(parts), 0, -1):
        key = ".".join(p for p in parts[:n] if not p.startswith("["))
        if key in kinds:
            return kinds[key]
    raise AssertionError(f"{path} is written but has no kind")


# ---- the type --------------------------------------------------------------------------------------------
def test_every_field_of_the_record_is_derived_or_claimed():
    kinds = field_kinds(RunRecord)
    assert kinds and {k: v for k, v in kinds.items() if v not in (DERIVED, CLAIMED)} == {}
    # what cannot be derived is few and named
    assert sorted(k for k, v in kinds.items() if v == CLAIMED and not k.startswith(("nbv.", "node."))) == [
        "agent", "attempt", "human", "model.custom_endpoint", "nbv", "node"]
    # a claimed block's fields are claimed with it
    assert {v for k, v in kinds.items() if k.startswith(("nbv.", "node."))} == {CLAIMED}


def test_what_the_live_run_writes_is_the_record_type_and_nothing_else(runs):
    for run in runs.values():
        written = json.loads((run / "result.json").read_text())
        assert parse_run_record(written).to_json() == written      # no field outside the type
        kinds = field_kinds(RunRecord)
        for path, _ in _leaves(written):
            _kind(path, kinds)                                      # each written field has a kind


def test_the_live_figures_sum_the_traced_calls(runs):
    rec = load_run_record(runs["model"])
    assert rec.model is not None and rec.model.http_attempts == 5 and rec.model.model_calls == 4
    assert rec.model.rate_limit_waits == 1 and rec.model.cached_input_tokens == 3 * 800
    # the cost with cached input at its own price; on an all-live episode what it incurred is the same
    assert rec.model.cost_usd == pytest.approx(rec.model.cost_incurred_usd, rel=1e-12)
    assert rec.model.cost_usd < (rec.model.usage["input_tokens"] * 2.0 + rec.model.usage["output_tokens"] * 8.0) / 1e6


def test_honest_runs_verify(runs):
    for run in runs.values():
        assert _verdict(run).status == "verified", _verdict(run).detail


def test_each_derived_field_edited_alone_is_refused_by_name(runs, tmp_path):
    kinds = field_kinds(RunRecord)
    run = _copy(runs["model"], tmp_path)
    original = json.loads((run / "result.json").read_text())
    checked = 0
    for path, value in _leaves(original):
        if _kind(path, kinds) != DERIVED or path == "schema_version":
            continue
        edited = copy.deepcopy(original)
        _set(edited, path, _changed(value))
        (run / "result.json").write_text(json.dumps(edited))
        v = _verdict(run)
        assert v.status in ("diverged", "refused"), (path, v.detail)    # refused: no such scene to rebuild
        top = path.split(".")[0].split("[")[0]
        identity = (top in ("scene_id", "seed") and "the path says" in v.detail     # caught by the path first
                    or top in ("scene_content_hash", "catalog_version") and "not the same scene" in v.detail)
        assert top in v.detail or identity, (path, v.detail)
        checked += 1
    (run / "result.json").write_text(json.dumps(original))
    assert _verdict(run).status == "verified"
    assert checked > 50


def test_a_reference_run_under_a_model_name_with_a_model_block_is_refused(runs, tmp_path):
    run = _copy(runs["ref"], tmp_path)
    forged = json.loads((run / "result.json").read_text())
    model = json.loads((runs["model"] / "result.json").read_text())["model"]
    forged.update(agent="openai-responses:gpt-5", model=model)
    (run / "result.json").write_text(json.dumps(forged))
    v = _verdict(run)
    assert v.status == "diverged" and "model" in v.detail, v.detail
    del forged["model"]                       # the name alone: a model agent's run holds its conversation
    (run / "result.json").write_text(json.dumps(forged))
    v = _verdict(run)
    assert v.status == "diverged" and "is a model agent, but the trace holds no model request" in v.detail


@pytest.mark.parametrize("edit", [
    {"cached_input_tokens": 3600, "cost_usd": None},
    {"cache_write_input_tokens": 0, "cached_input_tokens": 0, "cost_usd": None},
    {"max_output_tokens": 4096},
    {"reasoning_effort_source": "--reasoning-effort"},
    {"http_attempts": 4},
], ids=["cached-raised", "cache-counts-zeroed", "max-output-tokens", "effort-source", "429-hidden"])
def test_figures_a_forger_would_change_are_refused(runs, tmp_path, edit):
    from spatialscout_gym.core.pricing import episode_cost
    run = _copy(runs["model"], tmp_path)
    res = json.loads((run / "result.json").read_text())
    res["model"].update(edit)
    if "cost_usd" in edit:                     # the cost recomputed from the forged counts, as a forger would
        res["model"]["cost_usd"] = episode_cost({**res["model"]["usage"], **res["model"]}, "scripted", PRICES)
    (run / "result.json").write_text(json.dumps(res))
    v = _verdict(run)
    assert v.status == "diverged" and "derived from the trace" in v.detail, v.detail


@pytest.mark.parametrize("edit,words", [
    (lambda d: d.update(extra=1), "field 'extra' is not a field"),
    (lambda d: d.pop("seed"), "field 'seed' is missing"),
    (lambda d: d.update(seed="0"), "field 'seed' must be an integer"),
    (lambda d: d["counters"].update(done="yes"), "field 'counters.done' must be true/false"),
    (lambda d: d.update(schema_version=9), "field 'schema_version' is 9"),
], ids=["unknown", "missing", "wrong-type", "nested-wrong-type", "future-version"])
def test_loading_is_strict_and_names_the_file_and_field(runs, tmp_path, edit, words):
    d = json.loads((runs["ref"] / "result.json").read_text())
    edit(d)
    p = tmp_path / "result.json"
    p.write_text(json.dumps(d))
    with pytest.raises(RecordError) as exc:
        load_run_record(p)
    assert str(p) in str(exc.value) and words in str(exc.value) and "\n" not in str(exc.value)


def test_a_link_where_the_record_belongs_is_refused(runs, tmp_path):
    link = tmp_path / "result.json"
    link.symlink_to(runs["ref"] / "result.json")
    with pytest.raises(RecordError, match="symbolic link"):
        load_run_record(link)


def test_a_record_without_a_schema_version_loads_and_verifies(runs, tmp_path):
    # a run written before the record was derived: no version, no per-call HTTP records or cache
    # tokens in its trace; what its trace cannot derive stays claimed, the rest is compared
    run = _copy(runs["model"], tmp_path)
    res = json.loads((run / "result.json").read_text())
    del res["schema_version"]
    (run / "result.json").write_text(json.dumps(res))
    events = [json.loads(x) for x in (run / "trace.jsonl").read_text().splitlines()]
    for e in events:
        e.pop("http", None)
        if e["event"] == "model_response":
            e["usage"] = {k: e["usage"][k] for k in ("input_tokens", "output_tokens")}
    (run / "trace.jsonl").write_text("".join(json.dumps(e) + "\n" for e in events))
    assert load_run_record(run).schema_version == 1
    v1_trace = (run / "trace.jsonl").read_text()
    assert _verdict(run).status == "verified", _verdict(run).detail
    res["model"]["usage"]["output_tokens"] += 1          # still derived: the replies' usage sums
    (run / "result.json").write_text(json.dumps(res))
    assert _verdict(run).status == "diverged"
    assert v1_trace


def test_a_current_record_relabelled_version_1_is_refused(runs, tmp_path):
    # version 1 leaves per-call figures claimed: a trace that holds them was written by version 2
    run = _copy(runs["model"], tmp_path)
    res = json.loads((run / "result.json").read_text())
    res["schema_version"] = 1
    res["model"]["http_attempts"] = 4
    (run / "result.json").write_text(json.dumps(res))
    v = _verdict(run)
    assert v.status == "diverged" and "schema_version, recorded 1" in v.detail, v.detail


def test_the_price_table_travels_with_the_evaluation(tmp_path, monkeypatch, capsys):
    # a relative --price-table is copied into the evaluation: verify reads the copy from any folder,
    # after the user's file is gone
    from spatialscout_gym.cli.main import main
    from vlm_scripted import ScriptedServer
    work, elsewhere = tmp_path / "work", tmp_path / "elsewhere"
    work.mkdir()
    elsewhere.mkdir()
    (work / "prices.json").write_text(json.dumps(PRICES))
    monkeypatch.chdir(work)
    with ScriptedServer(_policy) as server:
        rc = main(["evaluate", "--agent", "openai:scripted", "--base-url", server.openai_url, "--api-key", "k",
                   "--scenes", "procedural:3", "--out", "ev", "--resolution", "32", "--image-budget", "3",
                   "--call-budget", "5", "--price-table", "prices.json", "--no-progress"])
    assert rc == 0, capsys.readouterr()
    opts = json.loads((work / "ev" / "evaluate.json").read_text())["agent_options"]
    assert opts["price_table"] == "price_table.json"
    assert json.loads((work / "ev" / "price_table.json").read_text()) == PRICES
    (work / "prices.json").unlink()
    monkeypatch.chdir(elsewhere)
    capsys.readouterr()
    assert main(["verify", str(work / "ev"), "--no-cache", "--no-progress"]) == 0, capsys.readouterr()
    assert load_run_record(work / "ev" / EP).model.cost_usd > 0


def test_a_failed_run_is_failed_and_a_completed_one_relabelled_failed_is_not(runs, tmp_path):
    from spatialscout_gym.envs.run_dir import failure_event
    run = _copy(runs["ref"], tmp_path)
    res = json.loads((run / "result.json").read_text())
    relabelled = {k: v for k, v in res.items() if k not in ("num_targets", "num_submitted", "coverage", "all",
                                                            "submitted", "center_error_m", "full_scene_loss_m",
                                                            "scorer")}
    relabelled.update(status="failed", error="RuntimeError: x", error_type="RuntimeError")
    (run / "result.json").write_text(json.dumps(relabelled))
    v = _verdict(run)
    assert v.status == "diverged" and "ends in no failure" in v.detail, v.detail
    # the same record over a trace that does end in that failure (before the episode's end) is failed
    events = [json.loads(x) for x in (run / "trace.jsonl").read_text().splitlines()]
    events.insert(len(events) - 1, failure_event(RuntimeError("x")))
    (run / "trace.jsonl").write_text("".join(json.dumps(e) + "\n" for e in events))
    v = _verdict(run)
    assert v.status == "failed", v.detail
