"""A lab's journeys (docs/models.md).

With two models: one presets file -> ``evaluate --estimate``
(no model called) -> ``evaluate --models`` with a spending cap on one model (it stops there, the
other completes) -> ``leaderboard --watch`` (progress, spend, state) -> ``leaderboard`` (the page).
Two scripted servers on 127.0.0.1 with the real ``openai`` client; 32 px scenes, the fake renderer
in the evaluations, a few calls each.

With three providers (chat completions, Responses, Anthropic; the ``test_lab_*`` steps, in order):

    spatialscout evaluate --models models.toml --scenes ... --out runs/lab --estimate --max-cost-usd 0.03
    spatialscout evaluate --models models.toml ... --max-cost-usd 0.03     # capped, then kill -9
    spatialscout evaluate --models models.toml ... --max-cost-usd 1        # resumes every model
    spatialscout leaderboard runs/lab/* --watch                            # while it runs
    spatialscout verify runs/lab/MODEL
    inspect eval spatialscout_gym/spatialscout ... ; spatialscout mcp ...  # two more harnesses
    spatialscout leaderboard runs/lab/chat runs/lab/claude runs/inspect runs/mcp --out site
    spatialscout compare runs/lab/chat runs/lab/claude runs/inspect
    spatialscout evaluate --agent openai-responses:... --request-cache cache --offline --workers 2 ...

The chat server is flaky (a 429 with Retry-After), the Responses server refuses the reasoning
effort; every ``evaluate`` is the real CLI in a subprocess, SAPIEN renders at 32 px."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

import lab_helpers as lab_h
from fakes import FakeRenderer, small_scene
from vlm_scripted import ScriptedServer, capture_submit_finish
from spatialscout_gym.cli.main import main


def test_presets_estimate_capped_evaluation_watch_and_leaderboard(tmp_path, monkeypatch, capsys):
    import spatialscout_gym.eval.running.evaluate as ev
    real = ev.evaluate
    monkeypatch.setattr(ev, "evaluate", lambda *a, **k: real(*a, **{**k, "renderer_factory": FakeRenderer}))
    monkeypatch.setenv("ALPHA_KEY", "alpha-secret")
    monkeypatch.setenv("BETA_KEY", "beta-secret")
    scenes = []
    for i in range(2):
        path = tmp_path / f"room_{i}.json"
        path.write_text(small_scene(32, 32, scene_id=f"room-{i}").to_json())
        scenes.append(str(path))
    out = tmp_path / "lab"
    common = ["--scenes", *scenes, "--out", str(out), "--resolution", "32", "--image-budget", "4",
              "--call-budget", "5", "--no-progress"]
    with ScriptedServer(capture_submit_finish) as alpha, ScriptedServer(capture_submit_finish) as beta:
        presets = tmp_path / "models.toml"
        presets.write_text(f"""
[models.alpha]
agent = "openai:alpha-1"
base_url = "{alpha.openai_url}"
api_key_env = "ALPHA_KEY"
price = {{ input_per_mtok = 10.0, output_per_mtok = 40.0 }}
max_cost_usd = 5.0
tokens_per_minute = 1000000

[models.beta]
agent = "openai:beta-1"
base_url = "{beta.openai_url}"
api_key_env = "BETA_KEY"
price = {{ input_per_mtok = 10.0, output_per_mtok = 40.0 }}
max_cost_usd = 0.04
""")
        # 1. the estimate: a range per model, nothing sent
        assert main(["evaluate", "--models", str(presets), "--estimate", *common]) == 0
        lines = [x for x in capsys.readouterr().out.splitlines() if re.match(r"openai:(alpha|beta)-1: 2 episodes", x)]
        assert len(lines) == 2 and alpha.http_requests == beta.http_requests == 0
        high = float(re.search(r"2 episodes, \$[0-9.]+ - \$([0-9.]+)", lines[0]).group(1))
        # 2. both models; beta's cap (a call is about $0.012) stops it inside its second episode
        assert main(["evaluate", "--models", str(presets), *common]) == 1
        printed = capsys.readouterr().out
        assert "stopped: the spend reached --max-cost-usd 0.04" in printed
        assert alpha.http_requests == 6 and beta.http_requests == 4
    alpha_spend = json.loads((out / "alpha" / "spend.json").read_text())["usd"]
    assert 0 < alpha_spend <= high
    beta = [json.loads((out / "beta" / f"room_{k}" / "seed_0" / "result.json").read_text()) for k in range(2)]
    assert beta[0]["status"] == "ok" and beta[1]["error_type"] == "CostCapReached"
    for name in ("alpha", "beta"):
        recorded = (out / name / "evaluate.json").read_text()
        assert "secret" not in recorded and json.loads(recorded)["agent_options"]["max_cost_usd"] > 0
    # 3. progress: none is running any more, so one table
    assert main(["leaderboard", str(out / "alpha"), str(out / "beta"), "--watch", "--interval", "0.01"]) == 0
    rows = {line.split()[0]: line.split() for line in capsys.readouterr().out.splitlines()
            if line.startswith(("alpha", "beta"))}
    assert rows["alpha"][1] == "2/2" and rows["alpha"][-1] == "complete"
    assert rows["beta"][1] == "1/2" and rows["beta"][2] == "1" and rows["beta"][-1] == "stopped"
    # 4. the page over both
    site = tmp_path / "site"
    assert main(["leaderboard", str(out / "alpha"), str(out / "beta"), "--out", str(site), "--no-progress",
                 "--force"]) == 0
    board = json.loads((site / "leaderboard.json").read_text())
    assert any("alpha-1" in name for name in board["rows"])


# --- The lab's journey with three providers (docs/models.md): presets -> estimate -> a capped run
# killed with -9 -> a resume with a higher cap -> verify -> leaderboard and compare without --force
# beside an Inspect run and an MCP run -> a cached rerun offline with 2 workers. Every evaluate is
# the real CLI in a subprocess against scripted servers on 127.0.0.1 (real openai and anthropic
# clients), SAPIEN at 32 px; steps share the module's servers and directories, in order.


CAP, HIGHER_CAP = 0.03, 1.0
MODELS = ("chat", "responses", "claude")


class Lab:
    """The servers and the directories the steps share."""

    def __init__(self, root: Path) -> None:
        self.root, self.out, self.cache = root, root / "lab", root / "cache"
        self.gate, self.arrived, self.armed = threading.Event(), threading.Event(), [False]
        self.chat = ScriptedServer(lab_h.capture_list_submit_finish, fail={1: "429:1"})            # flaky
        self.responses = ScriptedServer(lab_h.capture_list_submit_finish, refuse_params={"reasoning"})
        self.claude = ScriptedServer(self._held)
        self.presets = root / "models.toml"

    def _held(self, step: int, body: dict, fmt: str) -> list:
        """Claude's second episode waits at its first request while armed (evaluate is killed there)."""
        if self.armed[0] and step >= 4 and lab_h.own_turn(body, fmt) == 0:
            self.arrived.set()
            self.gate.wait(120)
        return lab_h.capture_list_submit_finish(step, body, fmt)

    def argv(self, *extra: str) -> list[str]:
        return ["evaluate", "--models", str(self.presets), "--scenes", *lab_h.SCENES, "--out", str(self.out),
                "--resolution", str(lab_h.RES), "--image-budget", str(lab_h.V), "--call-budget", str(lab_h.B),
                "--no-progress", *extra]


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    the = Lab(tmp_path_factory.mktemp("lab"))
    with the.chat, the.responses, the.claude:
        the.presets.write_text(lab_h.presets_text(the.chat.openai_url, the.responses.openai_url,
                                                  the.claude.anthropic_url, the.cache))
        yield the
        the.gate.set()


def _results(run_dir: Path) -> list[dict]:
    """Every result.json of an evaluation, failed attempts included."""
    return [json.loads(p.read_text()) for p in sorted(run_dir.glob("*/seed_*/result.json"))
            + sorted(run_dir.glob("*/seed_*/attempts/*/result.json"))]


@pytest.mark.render
@pytest.mark.slow
def test_lab_estimate_capped_run_killed_and_resumed(lab):
    # 1. the estimate: each model's range, the cap it would hit, the total; nothing sent
    est = lab_h.spatialscout(*lab.argv("--estimate", "--max-cost-usd", str(CAP)))
    assert est.returncode == 0, est.stdout + est.stderr
    lines = est.stdout.splitlines()
    ranges = {}
    for agent, cap in (("openai:chat-x", CAP), ("openai-responses:resp-x", HIGHER_CAP), ("anthropic:claude-x", HIGHER_CAP)):
        (i,) = [k for k, x in enumerate(lines) if x.startswith(f"{agent}: 2 episodes, $")]
        low, high = map(float, re.match(rf"{re.escape(agent)}: 2 episodes, \$([0-9.]+) - \$([0-9.]+)", lines[i]).groups())
        ranges[agent] = (low, high, cap)
        said = lines[i + 1]
        assert said.startswith(f"  cap ${cap:.2f}: "), said
        assert ("not reached" in said) == (high <= cap) and ("even at the low end" in said) == (low >= cap), said
    lo, hi = sum(r[0] for r in ranges.values()), sum(r[1] for r in ranges.values())
    capped = (sum(min(a, c) for a, _, c in ranges.values()), sum(min(b, c) for _, b, c in ranges.values()))
    total = re.search(r"total of 3 priced model\(s\): \$([0-9.]+) - \$([0-9.]+); with their caps "
                      r"\$([0-9.]+) - \$([0-9.]+)", est.stdout)
    assert total, est.stdout
    assert [float(x) for x in total.groups()] == pytest.approx([lo, hi, *capped], abs=0.011)
    assert lab.chat.http_requests == lab.responses.http_requests == lab.claude.http_requests == 0

    # 2. the capped run (chat capped from the command line), killed with -9 inside claude's 2nd episode
    lab.armed[0] = True
    proc = subprocess.Popen([sys.executable, "-m", "spatialscout_gym.cli.main", *lab.argv("--max-cost-usd", str(CAP))],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=lab_h.lab_env())
    try:
        while not lab.arrived.wait(1):
            assert proc.poll() is None, proc.communicate()
        proc.send_signal(signal.SIGKILL)
        out, err = proc.communicate(timeout=60)
    finally:
        lab.armed[0] = False
        lab.gate.set()
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == -signal.SIGKILL
    assert f"stopped: the spend reached --max-cost-usd {CAP:g}" in out, out + err
    # the cap kept what was paid for: every answered chat call is in a kept run, the ledger their sum
    chat = _results(lab.out / "chat")
    assert sum(_calls(r) for r in chat) == len(lab.chat.answered) >= 3
    assert any(r["status"] == "failed" and r["error_type"] == "CostCapReached" for r in chat)
    ledger = json.loads((lab.out / "chat" / "spend.json").read_text())["usd"]
    assert ledger == pytest.approx(sum(_live_cost(r) for r in chat), rel=1e-9) and ledger >= CAP
    assert all(r["status"] == "ok" for r in _results(lab.out / "responses"))

    # 3. the same command with a higher cap resumes every model to completion
    resume = subprocess.Popen([sys.executable, "-m", "spatialscout_gym.cli.main",
                               *lab.argv("--max-cost-usd", str(HIGHER_CAP))],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=lab_h.lab_env())
    # ... while the lab watches it (once the run holds its directory): the models not started yet are
    # waiting, and the watch exits only once every model is done
    from spatialscout_gym.eval.pages.progress import is_running
    while not is_running(lab.out):
        assert resume.poll() is None, resume.communicate()
        time.sleep(0.05)
    watch = lab_h.spatialscout("leaderboard", *(str(lab.out / m) for m in MODELS), "--watch", "--interval", "0.5")
    resumed_out, resumed_err = resume.communicate(timeout=600)
    assert resume.returncode == 0, resumed_out + resumed_err
    assert watch.returncode == 0, watch.stderr
    tables = [t for t in watch.stdout.split("\n\n") if "evaluation" in t]
    last = {ln.split()[0]: ln.split() for ln in tables[-1].splitlines() if ln.split() and ln.split()[0] in MODELS}
    assert {m: (r[1], r[-1]) for m, r in last.items()} == {m: ("2/2", "complete") for m in MODELS}, watch.stdout
    first = {ln.split()[0]: ln.split()[-1] for ln in tables[0].splitlines() if ln.split() and ln.split()[0] in MODELS}
    assert first["claude"] == "waiting" and first["chat"] in ("running", "waiting"), tables[0]
    # chat's capped episodes redone, claude's killed one redone, responses kept
    assert "== responses" in resumed_out and "2 episodes: 2 already done, 0 run now, 0 failed" in resumed_out
    for m in MODELS:
        kept = [r for r in _results(lab.out / m) if r["status"] == "ok"]
        assert len(kept) == 2 and all(r["model"]["reasoning_effort"] == "high" for r in kept)
        # the ledger is the sum of the live costs of every kept run, attempts included
        ledger = json.loads((lab.out / m / "spend.json").read_text())["usd"]
        assert ledger == pytest.approx(sum(_live_cost(r) for r in _results(lab.out / m)), rel=1e-9), m
        assert json.loads((lab.out / m / "evaluate.json").read_text())["agent_options"]["max_cost_usd"] == HIGHER_CAP
    assert sum(_calls(r) for r in _results(lab.out / "chat")) == len(lab.chat.answered)
    # the flaky server's 429 was waited out as its Retry-After said
    assert "429 Retry-After" in [w["reason"] for r in _results(lab.out / "chat")
                                 for w in (r.get("model") or {}).get("waits", [])]

    # 4. verify: every episode re-executed, resumed after the kill -9 and the 429 wait included, with
    # no verdict cache and nothing in the environment but PATH, HOME and the repository's path
    for m in MODELS:
        code, statuses = lab_h.verify_trimmed(lab.out / m)
        assert code == 0 and statuses == ["verified"] * len(lab_h.SCENES), (m, statuses)


def _live_cost(result: dict) -> float:
    """What an episode's live calls cost (with a request cache, the calls the cache answered are free;
    an episode the cap stopped before its first request has no model block and cost nothing)."""
    model = result.get("model") or {}
    return model["cost_incurred_usd"] if model.get("cost_incurred_usd") is not None else model.get("cost_usd", 0.0)


def _calls(result: dict) -> int:
    return (result.get("model") or {}).get("model_calls", 0)


@pytest.mark.render
@pytest.mark.slow
def test_lab_leaderboard_and_compare_across_providers_beside_inspect_and_mcp(lab, capsys):
    assert all((lab.out / m / "report.json").is_file() for m in MODELS), "the capped run was not resumed"
    # 5. an Inspect run through the chat server, and an MCP client's episode, at the lab's V and resolution
    inspect_out, mcp_out = lab.root / "inspect", lab.root / "mcp"
    inspected = lab_h.inspect_run(lab.chat.openai_url, inspect_out, lab.root)
    assert inspected.returncode == 0, inspected.stdout[-3000:] + inspected.stderr[-3000:]
    lab_h.mcp_episode(mcp_out)
    assert json.loads((mcp_out / "result.json").read_text())["status"] == "ok"
    for d, n in ((inspect_out, len(lab_h.SCENES)), (mcp_out, 1)):      # verified as they are, in a trimmed environment
        code, statuses = lab_h.verify_trimmed(d)
        assert code == 0 and statuses == ["verified"] * n, (d.name, statuses)
    capsys.readouterr()

    # 6. one leaderboard, no --force: the two providers that honoured the effort and the Inspect run
    # ranked together, the MCP run listed apart as a row of its own kind; every row verified
    chat, responses, claude = (str(lab.out / m) for m in MODELS)
    site = lab.root / "site"
    assert main(["leaderboard", chat, claude, str(inspect_out), str(mcp_out), "--out", str(site),
                 "--no-progress"]) == 0, capsys.readouterr().err
    printed = capsys.readouterr().out
    board = json.loads((site / "leaderboard.json").read_text())
    assert board["problems"] == []
    kinds = {r["harness"].split()[0] + ":" + str(r["agent"]): r for r in board["rows"].values()}
    assert set(kinds) == {"spatialscout:openai:chat-x", "spatialscout:anthropic:claude-x",
                          "inspect_ai:inspect:openai-api/scripted/inspect-x"}, list(kinds)
    (tool,) = board["tool_rows"].values()
    assert tool["kind"] == "mcp" and tool["rank"]["rank"] == 1
    for row in [*board["rows"].values(), tool]:
        assert row["verified"] == "verified" and row["failed"] == 0, row["dir"]
    # on two scenes no pair is separated: every model row's rank interval spans the three ranks
    assert all((r["rank"]["low"], r["rank"]["high"]) == (1, 3) for r in board["rows"].values()), board["rows"]
    assert "Too few scenes to separate" in board["rank_note"]
    # the cost per task is the mean of the episodes' costs, and what each row says it sent is shown
    for m, name in (("chat", "openai:chat-x"), ("claude", "anthropic:claude-x")):
        row = next(r for r in board["rows"].values() if r["agent"] == name)
        costs = [r["model"]["cost_usd"] for r in _results(lab.out / m) if r["status"] == "ok"]
        assert row["cost_per_task_usd"] == pytest.approx(sum(costs) / 2) and row["reasoning_effort"]
    assert sum(ln.rstrip().endswith("verified") for ln in printed.splitlines()) == 4, printed

    # 7. compare the providers at one effort level: no --force
    assert main(["compare", chat, claude, str(inspect_out)]) == 0, capsys.readouterr().err
    assert "Forced" not in capsys.readouterr().out
    # the refused effort still separates, named by what was honoured and by nothing else
    for argv in (["compare", chat, responses], ["leaderboard", chat, responses, claude, "--out", str(lab.root / "s2"),
                                                "--no-progress"]):
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert "reasoning effort honoured differs" in err and "refused" in err, err
        assert "reasoning effort sent differs" not in err and len(err.strip().splitlines()) == 1, err


@pytest.mark.render
@pytest.mark.slow
def test_lab_cached_rerun_of_the_refused_effort_is_offline_with_two_workers(lab, capsys):
    responses = lab.out / "responses"
    assert (responses / "report.json").is_file(), "the capped run was not resumed"
    # 8. the server that refused the effort goes away; the same model rerun from its cache alone
    lab.responses.__exit__(None, None, None)
    rerun = lab.root / "rerun"
    again = lab_h.spatialscout("evaluate", "--agent", "openai-responses:resp-x", "--base-url", lab.responses.openai_url,
                               "--api-key", "local", "--reasoning-effort", "high", "--request-cache", str(lab.cache),
                               "--offline", "--workers", "2", "--scenes", *lab_h.SCENES, "--out", str(rerun),
                               "--resolution", str(lab_h.RES), "--image-budget", str(lab_h.V),
                               "--call-budget", str(lab_h.B), "--no-progress")
    assert again.returncode == 0, again.stdout + again.stderr
    assert "2 run now, 0 failed" in again.stdout
    for key in ("Kitchen_01/seed_0", "Kitchen_02/seed_0"):
        live = json.loads((responses / key / "result.json").read_text())
        cached = json.loads((rerun / key / "result.json").read_text())
        assert cached["model"]["request_cache"]["live_calls"] == 0 and not cached["model"]["cost_incurred_usd"]
        assert cached["all"] == live["all"] and cached["model"]["reasoning_effort_refused"]
    assert main(["verify", str(rerun)]) == 0
    assert main(["compare", str(responses), str(rerun)]) == 0, capsys.readouterr().err
