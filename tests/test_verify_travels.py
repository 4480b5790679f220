"""``spatialscout verify`` on evidence that travels: an honest scripted-model evaluation verifies in
fresh processes with other BLAS kernels and thread counts; every kind of edit (a dropped reply,
edited usage, an edited prompt in ``harness.json`` or in a recorded request, another episode's
files copied in, a deleted result) is caught at its event with a non-zero exit code; a run made
through ``spatialscout mcp`` by the ``mcp`` SDK's stdio client (its trimmed environment) verifies."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from fakes import FakeRenderer
from spatialscout_gym.cli.main import main
from spatialscout_gym.eval.running.evaluate import EvalSettings, evaluate
from spatialscout_gym.eval.verification.verify_compare import Comparison

REPO = Path(__file__).resolve().parents[1]
SCENES = ["procedural:1", "procedural:2"]       # generated scenes: their floats depend on the BLAS kernel


def _policy(step, body, fmt):
    """Five replies, chosen by how many the conversation already holds (so any episode order works):
    move and capture; two triangulations (one of parallel rays: a condition-number refusal); list the
    entities; submit one of them; finish."""
    msgs = body["messages"]
    k = sum(m["role"] == "assistant" for m in msgs)
    if k == 0:
        return [("move_camera", {"right": 0.5}), ("capture_image", {})]
    if k == 1:
        return [("triangulate_observations", {"observations": [{"frame_id": 0, "u": 15.5, "v": 15.5},
                                                               {"frame_id": 1, "u": 11.5, "v": 15.5}]}),
                ("triangulate_observations", {"observations": [{"frame_id": 0, "u": 15.5, "v": 15.5},
                                                               {"frame_id": 1, "u": 15.5, "v": 15.5}]})]
    if k == 2:
        return [("list_entities", {})]
    if k == 3:
        listing = next(m["content"] for m in reversed(msgs) if m["role"] == "tool")
        first = json.loads(listing if isinstance(listing, str) else listing[0]["text"])["result"]["entities"][0]["id"]
        return [("submit_positions", {"positions": {first: [1.0, 0.2, 0.0]}})]
    return [("finish_mapping", {})]


@pytest.fixture(scope="module")
def model_eval(tmp_path_factory):
    from vlm_scripted import ScriptedServer
    d = tmp_path_factory.mktemp("travels") / "scripted"
    with ScriptedServer(_policy) as server:
        settings = EvalSettings("openai:scripted", 3, None, 32, agent_options={"model_call_budget": 6},
                                runtime_options={"base_url": server.openai_url, "api_key": "local"})
        summary = evaluate(d, settings, SCENES, seeds=1, workers=1, progress=False, renderer_factory=FakeRenderer)
    assert summary.total == 2 and not summary.failed
    return d


def _copy(src: Path, tmp_path: Path) -> Path:
    d = tmp_path / "copy"
    shutil.copytree(src, d)
    (d / "verify.json").unlink(missing_ok=True)
    return d


def _verify_json(d: Path, capsys) -> tuple[int, dict]:
    capsys.readouterr()
    code = main(["verify", str(d), "--json"])
    return code, {e["episode"]: e for e in json.loads(capsys.readouterr().out)["dirs"][str(d)]}


def _trace(run: Path) -> list[str]:
    return (run / "trace.jsonl").read_text().splitlines(keepends=True)


def test_honest_run_verifies_with_conversation_re_derived(model_eval, capsys):
    code, eps = _verify_json(model_eval, capsys)
    assert code == 0 and sorted(eps) == ["procedural_1/seed_0", "procedural_2/seed_0"]
    for e in eps.values():
        assert e["status"] == "verified" and e["conversation"] == "re-derived: 5 requests, 5 replies"
        assert 0.0 <= e["max_relative_deviation"] <= 1e-9
    trace = [json.loads(x) for x in _trace(model_eval / "procedural_1" / "seed_0")]
    refusals = [e["result"]["error"] for e in trace if e["event"] == "tool_call" and not e["result"]["ok"]]
    assert any("condition number" in r for r in refusals)      # the noisy number is in the record
    reminders = [m for e in trace if e["event"] == "model_request" for m in e["new_messages"]
                 if m["role"] == "user" and e["model_call_index"] > 0]
    assert len(reminders) == 1 and "3" in json.dumps(reminders[0])   # B = 6: a reminder at 3 calls left


@pytest.mark.parametrize("extra", [
    {},
    {"OPENBLAS_CORETYPE": "Prescott"},
    {"OPENBLAS_CORETYPE": "Haswell", "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"},
    {"OMP_NUM_THREADS": "2", "OPENBLAS_NUM_THREADS": "2"},
], ids=["env-i", "prescott", "haswell-1-thread", "2-threads"])
def test_honest_run_verifies_in_any_environment(model_eval, tmp_path, extra):
    """A fresh process with a trimmed environment (as ``env -i``, the MCP launchers) and another BLAS
    kernel or thread count re-executes the same evaluation to the same verdict."""
    d = _copy(model_eval, tmp_path)
    env = {"PATH": "/usr/bin:/bin", "HOME": os.environ.get("HOME", "/tmp"), "PYTHONPATH": str(REPO), **extra}
    p = subprocess.run([sys.executable, "-m", "spatialscout_gym.cli.main", "verify", str(d), "--json"],
                       cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-2000:]
    out = json.loads(p.stdout)
    assert out["verified"] and [e["status"] for e in out["dirs"][str(d)]] == ["verified", "verified"]
    assert all(e["max_relative_deviation"] <= 1e-9 for e in out["dirs"][str(d)])


def test_dropped_reply_is_caught_at_its_event(model_eval, tmp_path, capsys):
    d = _copy(model_eval, tmp_path)
    run = d / "procedural_1" / "seed_0"
    lines = _trace(run)
    i = [n for n, x in enumerate(lines) if json.loads(x)["event"] == "model_response"][2]
    (run / "trace.jsonl").write_text("".join(lines[:i] + lines[i + 1:]))
    code, eps = _verify_json(d, capsys)
    assert code == 1 and eps["procedural_2/seed_0"]["status"] == "verified"
    assert eps["procedural_1/seed_0"]["status"] == "diverged"
    assert eps["procedural_1/seed_0"]["detail"].startswith(f"at event {i}: ")


def test_edited_usage_is_caught(model_eval, tmp_path, capsys):
    d = _copy(model_eval, tmp_path)
    run = d / "procedural_1" / "seed_0"
    res = json.loads((run / "result.json").read_text())
    res["model"]["usage"]["input_tokens"] -= 1000
    (run / "result.json").write_text(json.dumps(res))
    code, eps = _verify_json(d, capsys)
    assert code == 1 and eps["procedural_1/seed_0"]["detail"].startswith(
        "in result.json: model.usage.input_tokens, recorded")
    assert "vs derived from the trace" in eps["procedural_1/seed_0"]["detail"]
    # usage edited in a reply instead: the totals no longer add up
    shutil.copy(model_eval / "procedural_1" / "seed_0" / "result.json", run / "result.json")
    lines = _trace(run)
    i = next(n for n, x in enumerate(lines) if json.loads(x)["event"] == "model_response")
    e = json.loads(lines[i])
    e["usage"]["output_tokens"] = 5
    lines[i] = json.dumps(e) + "\n"
    (run / "trace.jsonl").write_text("".join(lines))
    code, eps = _verify_json(d, capsys)
    assert code == 1 and eps["procedural_1/seed_0"]["detail"].startswith("in result.json: model.usage.output_tokens")


def test_edited_prompt_is_caught_in_harness_and_in_a_request(model_eval, tmp_path, capsys):
    d = _copy(model_eval, tmp_path)
    run = d / "procedural_1" / "seed_0"
    h = json.loads((run / "harness.json").read_text())
    h["task_prompt"] = h["task_prompt"].replace("Estimate", "Guess")
    (run / "harness.json").write_text(json.dumps(h))
    code, eps = _verify_json(d, capsys)
    assert code == 1 and eps["procedural_1/seed_0"]["detail"].startswith("in harness.json: task_prompt, recorded")
    shutil.copy(model_eval / "procedural_1" / "seed_0" / "harness.json", run / "harness.json")
    lines = _trace(run)
    i = [n for n, x in enumerate(lines) if json.loads(x)["event"] == "model_request"][1]
    e = json.loads(lines[i])
    e["new_messages"][0]["content"][0] = e["new_messages"][0]["content"][0].replace("true", "false", 1)
    lines[i] = json.dumps(e) + "\n"
    (run / "trace.jsonl").write_text("".join(lines))
    code, eps = _verify_json(d, capsys)
    assert code == 1 and eps["procedural_1/seed_0"]["detail"].startswith(
        f"at event {i}: model_request, new_messages[0].content[0], recorded")


def test_run_without_harness_record_is_tool_side_only_not_verified(model_eval, tmp_path, capsys):
    d = _copy(model_eval, tmp_path)
    (d / "procedural_2" / "seed_0" / "harness.json").unlink()
    code, eps = _verify_json(d, capsys)
    assert code == 1 and eps["procedural_2/seed_0"]["status"] == "tool-side only"
    assert eps["procedural_2/seed_0"]["conversation"].startswith("not checkable: no harness.json")
    assert main(["verify", str(d), "--no-progress", "--allow-tool-side-only"]) == 0
    assert "procedural_2/seed_0: tool-side only (the conversation is not checkable: no harness.json" in (
        capsys.readouterr().out)


def test_another_episodes_files_copied_in_are_caught_and_report_does_not_crash(model_eval, tmp_path, capsys):
    d = _copy(model_eval, tmp_path)
    target = d / "procedural_1" / "seed_0"
    shutil.rmtree(target)
    shutil.copytree(d / "procedural_2" / "seed_0", target)
    code, eps = _verify_json(d, capsys)
    assert code == 1 and eps["procedural_2/seed_0"]["status"] == "verified"
    assert eps["procedural_1/seed_0"]["status"] == "diverged"
    assert eps["procedural_1/seed_0"]["detail"].startswith(
        "in its path: the path says scene 'procedural_1' (scenes.json: 'procedural:1', scene 'procedural_1'), "
        "result.json says 'procedural_2'")
    assert main(["report", str(d), "--no-figures"]) == 2
    err = capsys.readouterr().err
    assert "both hold scene 'procedural_2' seed 0" in err and "Traceback" not in err


def test_deleted_result_is_missing_and_counted_against_the_plan(model_eval, tmp_path, capsys):
    d = _copy(model_eval, tmp_path)
    (d / "procedural_2" / "seed_0" / "result.json").unlink()
    code, eps = _verify_json(d, capsys)
    assert code == 1 and eps["procedural_2/seed_0"]["status"] == "missing"
    assert main(["verify", str(d), "--no-progress"]) == 1
    assert "1 of 2 episode(s) verified; 1 missing" in capsys.readouterr().out
    assert main(["report", str(d), "--no-figures"]) == 0
    assert "**1 of 2 planned episodes completed**: 1 planned episode(s) have no result (procedural_2/seed_0)" in (
        d / "report.md").read_text()
    site = tmp_path / "site"
    assert main(["leaderboard", str(d), "--out", str(site), "--no-progress"]) == 0
    row = next(iter(json.loads((site / "leaderboard.json").read_text())["rows"].values()))
    assert (row["completed"], row["planned"], row["missing"]) == (1, 2, ["procedural_2/seed_0"])


def test_comparison_rule():
    """Numbers within relative 1e-9 agree (the largest deviation is kept); a 3-decimal text one unit
    apart is a rounding boundary, noted; more is a divergence; a quoted condition number is noise."""
    c = Comparison()
    assert c.first_diff({"r": 4.522948838505315}, {"r": 4.522948838505316}) is None
    assert 0 < c.max_deviation < 1e-15 and c.where == "r"
    assert c.first_diff({"r": 0.0}, {"r": 1.2e-12}) is None           # absolute 1e-9 below magnitude 1
    assert c.first_diff({"r": 1.0}, {"r": 1.0 + 1e-6}) == ("r", 1.0, 1.0 + 1e-6)
    assert c.first_diff("camera at [0.124, 1.000]", "camera at [0.123, 1.000]", at="event 3") is None
    assert c.boundaries == ["event 3: recorded 0.124 vs recomputed 0.123 (a rounding boundary)"]
    assert c.first_diff("camera at [0.125, 1.000]", "camera at [0.123, 1.000]") is not None
    assert c.first_diff("camera at [0.124, 1.000]", "camera to [0.124, 1.000]") is not None
    noisy = "the rays are (nearly) parallel: condition number {} of sum(I - d d^T) exceeds 1e+06"
    assert c.first_diff(noisy.format("1.3e+16"), noisy.format("1.67e+16")) is None


@pytest.mark.render
def test_run_made_through_mcp_stdio_client_verifies(tmp_path):
    """The ``mcp`` SDK's stdio client starts ``spatialscout mcp`` with its trimmed default environment
    (no ``OPENBLAS_CORETYPE``, no thread settings); the run it makes verifies here."""
    import anyio
    from mcp import Client, StdioServerParameters
    out = tmp_path / "mcp-run"
    params = StdioServerParameters(command=sys.executable, cwd=str(REPO), args=[
        "-m", "spatialscout_gym.cli.main", "mcp", "--scene", "procedural:1", "--out", str(out),
        "--resolution", "32", "--image-budget", "3"])

    async def session():
        async with Client(params, mode="legacy") as client:
            await client.call_tool("move_camera", {"right": 0.5})
            await client.call_tool("capture_image", {})
            await client.call_tool("triangulate_observations", {"observations": [
                {"frame_id": 0, "u": 15.5, "v": 15.5}, {"frame_id": 1, "u": 11.5, "v": 15.5}]})
            await client.call_tool("submit_positions", {"positions": {}})
            fin = await client.call_tool("finish_mapping", {})
            assert not fin.is_error
    anyio.run(session)
    assert json.loads((out / "result.json").read_text())["end_reason"] == "finish_mapping"
    from spatialscout_gym.eval.verification.verify import verify_dir
    assert [(c.key, c.status, c.conversation) for c in verify_dir(out)] == [("mcp-run", "verified", "not a model run")]
    assert main(["verify", str(out), "--no-progress"]) == 0
    env = {"PATH": "/usr/bin:/bin", "HOME": os.environ.get("HOME", "/tmp"), "PYTHONPATH": str(REPO),
           "OPENBLAS_CORETYPE": "Prescott"}
    p = subprocess.run([sys.executable, "-m", "spatialscout_gym.cli.main", "verify", str(out), "--no-progress"],
                       cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0 and "mcp-run: verified" in p.stdout, p.stdout + p.stderr[-2000:]


@pytest.mark.parametrize("agent,mode", [("openai:scripted", "passive"), ("anthropic:scripted", "active"),
                                        ("openai-responses:scripted", "active")])
def test_other_modes_and_wire_formats_are_re_derived(tmp_path, agent, mode, capsys):
    """Passive mode (the evaluator's views, camera tools refused), refusals made by the wrapper (an
    unknown tool, arguments that are not JSON) and the Anthropic and Responses codecs replay to the
    same records."""
    from vlm_scripted import ScriptedServer
    from spatialscout_gym.baselines.registry import make_agent
    from spatialscout_gym.eval.running.runner import run_episode
    from spatialscout_gym.scenes.catalog import scene_by_name
    spec = scene_by_name("procedural:1")
    bad_args = "{bad json" if agent == "openai:scripted" else {"x": 1}
    steps = [[("move_camera", {"right": 0.5}), ("list_entities", {})], [("bogus_tool", {}), ("get_camera_pose", bad_args)],
             [("triangulate_observations", {"observations": [{"frame_id": 0, "u": 15.5, "v": 15.5},
                                                             {"frame_id": 1, "u": 12, "v": 15.5}]})], []]
    with ScriptedServer(lambda step, body, fmt: steps[step] if step < len(steps) else []) as server:
        url = server.anthropic_url if agent.startswith("anthropic") else server.openai_url
        a = make_agent(agent, base_url=url, api_key="local", model_call_budget=12, mode=mode)
        r = run_episode(a, spec, tmp_path / "ev" / "procedural_1" / "seed_0", image_budget=30, resolution=32,
                        renderer=FakeRenderer(spec, 32, 32))
    assert r["status"] == "ok" and r["end_reason"] == "no_tool_call"
    trace = (tmp_path / "ev" / "procedural_1" / "seed_0" / "trace.jsonl").read_text()
    assert '"event": "tool_call_refused"' in trace
    code, eps = _verify_json(tmp_path / "ev", capsys)
    assert code == 0 and eps["procedural_1/seed_0"]["conversation"] == "re-derived: 4 requests, 4 replies"


def test_small_geometry_without_blas_agrees_with_lapack():
    """The closed-form 3 x 3 solve and condition number (used by triangulation) agree with LAPACK, and
    the products agree with ``@``. The matrices of the products and the solve are not symmetric (a
    symmetric one hides a helper that transposes its matrix)."""
    import numpy as np
    from spatialscout_gym.core.exact import cond3_symmetric, matmul, matvec, rows_times, solve3
    rng = np.random.default_rng(7)
    for _ in range(200):
        d = rng.normal(size=(3, 3))
        d /= np.linalg.norm(d, axis=1, keepdims=True)
        A = 3 * np.eye(3) - np.einsum("ki,kj->ij", d, d)          # sum of I - d d^T over three rays
        M = rng.normal(size=(3, 3)) + 2 * np.eye(3)               # not symmetric, well conditioned
        W = rng.normal(size=(3, 4))                               # not even square
        b = rng.normal(size=3)
        assert not np.allclose(M, M.T)
        assert np.allclose(solve3(M, b), np.linalg.solve(M, b), rtol=1e-9, atol=1e-12)
        assert np.allclose(solve3(A, b), np.linalg.solve(A, b), rtol=1e-9, atol=1e-12)
        assert cond3_symmetric(A) == pytest.approx(np.linalg.cond(A), rel=1e-6)
        assert np.allclose(matmul(M, W), M @ W, rtol=1e-12) and np.allclose(rows_times(d, M), d @ M, rtol=1e-12)
        assert np.allclose(rows_times(d[:, None, :], W), d[:, None, :] @ W, rtol=1e-12)
        assert np.allclose(matvec(M, b), M @ b, rtol=1e-12)
    assert cond3_symmetric(2 * (np.eye(3) - np.outer([1.0, 0, 0], [1.0, 0, 0]))) == float("inf")   # parallel rays


def test_a_verdict_lapses_when_the_harness_record_changes(model_eval, tmp_path, capsys):
    """``verification_status`` verifies the files as they are now: a verify.json written before an
    edit earns nothing."""
    from spatialscout_gym.eval.verification.verify import verification_status
    d = _copy(model_eval, tmp_path)
    assert main(["verify", str(d), "--no-progress"]) == 0
    assert verification_status(d)["status"] == "verified"
    p = d / "procedural_1" / "seed_0" / "harness.json"
    p.write_text(p.read_text().replace("Estimate", "Guess"))
    v = verification_status(d)
    assert v["episodes"]["procedural_1/seed_0"] == "diverged" and v["status"] == "diverged"
    assert v["self_reported"]["procedural_1/seed_0"] == "verified"
    assert (v["planned"], v["completed"], v["missing"]) == (2, 2, [])
