"""Journey: a model evaluated as the README says, through a server that refuses the reasoning
effort, with 2 workers and the request cache; killed mid-run, resumed, verified, reported, ranked
beside a reference row, compared against a second model and viewed (README "Evaluate a model",
"Check and compare results", "Look at runs").

    spatialscout evaluate --agent openai:MODEL --base-url URL --scenes ... --out runs/model \\
        --workers 2 --request-cache cache            # killed (SIGTERM), then the same command again
    spatialscout verify runs/model && spatialscout report runs/model
    spatialscout evaluate --agent origin --scenes ... --out runs/origin
    spatialscout leaderboard runs/model runs/origin --out site
    spatialscout evaluate --agent openai:OTHER ... --out runs/other
    spatialscout compare runs/model runs/other
    spatialscout view runs/model/<scene>/seed_0 --out view

Every command is the real CLI in a subprocess; the model is a scripted OpenAI-compatible server on
127.0.0.1 (real ``openai`` client), the scenes render with SAPIEN at 32 px."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading

import pytest

from journey_model_helpers import capture_then_finish, cli, cli_env, model_args
from vlm_scripted import ScriptedServer

pytestmark = [pytest.mark.render, pytest.mark.slow]

SCENES = ["Kitchen_01", "procedural:11"]


def test_evaluate_kill_resume_verify_report_rank_compare_view(tmp_path):
    model, other, ref, cache = tmp_path / "model", tmp_path / "other", tmp_path / "origin", tmp_path / "cache"
    gate, arrived, armed = threading.Event(), threading.Event(), [True]

    def policy(step, body, fmt):
        if armed[0]:            # the first run's episodes wait here until it has been killed
            arrived.set()
            gate.wait(120)
        return capture_then_finish(step, body, fmt)

    with ScriptedServer(policy, refuse_params={"reasoning_effort"}) as server:
        url = server.openai_url
        argv = model_args(url, model, SCENES, "--workers", "2", "--request-cache", str(cache))
        # 1. evaluate, killed mid-run: one line saying how to resume, no leaked-semaphore warning
        proc = subprocess.Popen([sys.executable, "-m", "spatialscout_gym.cli.main", *argv], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, env=cli_env())
        try:
            assert arrived.wait(400), "no model request arrived"
            proc.send_signal(signal.SIGTERM)
            out, err = proc.communicate(timeout=180)
        finally:
            armed[0] = False
            gate.set()
            if proc.poll() is None:
                proc.kill()
        assert proc.returncode == 130, (out, err)
        assert "Rerun the same command to resume" in out
        assert "leaked semaphore" not in err and "Traceback" not in err, err

        # 2. the same command resumes and completes
        again = cli(*argv)
        assert again.returncode == 0, again.stdout + again.stderr
        assert "2 episodes: 0 already done, 2 run now, 0 failed" in again.stdout
        # the refused effort reached the service at most once per run, never once per episode
        assert 1 <= len(server.refused_requests) <= 2
        assert "reasoning_effort" in json.loads((model / "reasoning_effort.json").read_text())["refused"]

        # 3. verify and report
        verified = cli("verify", str(model))
        assert verified.returncode == 0 and "verified" in verified.stdout, verified.stdout + verified.stderr
        reported = cli("report", str(model), "--no-figures")
        assert reported.returncode == 0, reported.stderr
        report = json.loads((model / "report.json").read_text())
        assert report["episodes"]["completed"] == 2 and report["verified"]["status"] == "verified"
        assert "| reasoning_effort_sent | xhigh refused, none sent |" in (model / "report.md").read_text()

        # 4. a second model through the same server, with the same command
        second = cli(*model_args(url, other, SCENES, model="other"))
        assert second.returncode == 0, second.stdout + second.stderr

    # 5. a reference row at the same V and resolution, then the leaderboard: no --force needed
    origin = cli("evaluate", "--agent", "origin", "--scenes", *SCENES, "--out", str(ref), "--resolution", "32",
                 "--image-budget", "3", "--no-progress")
    assert origin.returncode == 0, origin.stderr
    site = tmp_path / "site"
    board_run = cli("leaderboard", str(model), str(ref), "--out", str(site), "--no-progress")
    assert board_run.returncode == 0, board_run.stderr
    board = json.loads((site / "leaderboard.json").read_text())
    assert board["problems"] == []
    rows = board["rows"]
    assert set(rows) == {"openai:scripted (xhigh refused, none sent)", "origin"}
    assert all(r["verified"] == "verified" for r in rows.values())
    assert rows["origin"]["reference"] and not rows["openai:scripted (xhigh refused, none sent)"]["reference"]
    printed = [ln for ln in board_run.stdout.splitlines() if ln.rstrip().endswith("verified")]
    assert len(printed) == 2 and any(f"{100 * r['object_micro']['all']['mean_iou']:.2f}%" in printed[0]
                                     for r in rows.values())

    # 6. compare the two models: made with the same command, so no --force
    compared = cli("compare", str(model), str(other))
    assert compared.returncode == 0, compared.stderr
    assert "Forced" not in compared.stdout and "| model |" in compared.stdout and "| other |" in compared.stdout

    # 7. view one run: the page loads in headless Chromium, scores in percent, the prompt readable
    run = model / "Kitchen_01" / "seed_0"
    shown = cli("view", str(run), "--out", str(tmp_path / "view"))
    assert shown.returncode == 0, shown.stderr
    _look_at_the_page(tmp_path / "view", json.loads((run / "result.json").read_text()))


def _look_at_the_page(site, result):
    from browser import CHROMIUM, DRIVER, headless_chrome
    if not (CHROMIUM and DRIVER):
        pytest.skip("no chromium/chromedriver to load the page (the steps before it passed)")
    from selenium.webdriver.common.by import By
    from spatialscout_gym.servers.viewer.server import serve_directory
    server = serve_directory(site)
    chrome = headless_chrome()
    browser = next(chrome)
    try:
        browser.get(f"http://127.0.0.1:{server.server_address[1]}/index.html")
        summary = browser.find_element(By.ID, "summary").text
        assert f"mean IoU {100 * result['all']['mean_iou']:.2f}%" in summary
        assert "reasoning effort sent: none sent" in browser.find_element(By.ID, "settings").text
        calls = browser.execute_script("return SS_VIEW.calls")
        for i in range(calls):       # the first model request: its prompt as text
            browser.execute_script("SS_VIEW.go(arguments[0])", i)
            detail = browser.find_element(By.ID, "detail").text
            if "messages" in detail:
                break
        assert "messages" in detail and "\\n" not in detail and not detail.lstrip().startswith("{")
    finally:
        server.shutdown()
        chrome.close()
