"""``spatialscout view``: the page of a 100-call run (real SAPIEN render) opened in headless
Chromium (Debian's chromium + chromium-driver through Selenium), and what it draws."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from browser import headless_chrome, needs_browser

from spatialscout_gym.envs.session import EpisodeSession
from spatialscout_gym.episode.trace import read_jsonl
from spatialscout_gym.scenes.catalog import scene_by_name
from spatialscout_gym.servers.viewer.server import serve_directory
from spatialscout_gym.servers.viewer.site import write_site

pytest.importorskip("selenium.webdriver", reason="selenium is not installed (test extra)")
pytestmark = [pytest.mark.render, pytest.mark.slow, needs_browser]


class _Scripted:
    name = "scripted"


@pytest.fixture(scope="module")
def run_100(tmp_path_factory) -> Path:
    """A 100-call episode: turns, captures, one triangulation and submissions, budget-ended."""
    out = tmp_path_factory.mktemp("runs") / "scripted"
    with EpisodeSession(resolution=64, image_budget=100, tool_call_budget=100) as s:
        s.load(scene_by_name("Kitchen_01"))
        ep = s.new_episode()
        ids = ep.inventory_ids
        for i in range(96):
            if i % 2:
                ep.call("capture_image")
            else:
                ep.call("rotate_camera", {"yaw": 15.0})
        ep.call("triangulate_observations", {"observations": [{"frame_id": 0, "u": 32, "v": 32},
                                                              {"frame_id": 2, "u": 30, "v": 33}]})
        ep.call("move_camera", {"forward": 99.0})   # refused: outside the search region
        ep.call("submit_positions", {"positions": {ids[0]: [1.0, 0.2, -0.5]}})
        ep.call("submit_positions", {"positions": {ids[1]: [0.5, -0.5, -0.6]}})
        assert ep.done and ep.tool_calls == 100
        s.write_run(out, _Scripted())
    return out


@pytest.fixture(scope="module")
def browser():
    yield from headless_chrome()


def _nonblank(browser, canvas_id: str) -> int:
    """Pixels of a canvas that differ from its top-left pixel."""
    return browser.execute_script(
        "const c=document.getElementById(arguments[0]),d=c.getContext('2d').getImageData(0,0,c.width,c.height).data;"
        "let n=0;for(let i=0;i<d.length;i+=4)if(d[i]!==d[0]||d[i+1]!==d[1]||d[i+2]!==d[2]||d[i+3]!==d[3])n++;return n;",
        canvas_id)


def test_view_draws_a_100_call_run(run_100, browser, tmp_path):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    site = write_site(run_100, tmp_path / "site")
    server = serve_directory(site)              # what `spatialscout view` serves (file:// taints canvases)
    browser.get(f"http://127.0.0.1:{server.server_address[1]}/index.html")
    assert len(browser.find_elements(By.CSS_SELECTOR, "#calls .call:not(.end)")) == 100
    assert "scripted" in browser.find_element(By.ID, "summary").text
    body = browser.find_element(By.TAG_NAME, "body")
    body.send_keys(Keys.END)
    assert browser.execute_script("return SS_VIEW.cur") == 100     # the end event, last
    body.send_keys(Keys.ARROW_LEFT)
    assert browser.execute_script("return SS_VIEW.cur") == 99
    # the refused move is marked as refused in the list and shows the episode's refusal text
    bad = browser.find_elements(By.CSS_SELECTOR, "#calls .call.bad")
    refusals = [e for e in read_jsonl(run_100 / "trace.jsonl")
                if e["event"] == "tool_call" and not e["result"]["ok"]]
    refused = [e["tool"] for e in refusals]
    assert "move_camera" in refused
    assert [b.text.split()[-1] for b in bad] == refused
    bad[refused.index("move_camera")].click()
    error = refusals[refused.index("move_camera")]["result"]["error"]
    assert "1 m per call" in error
    assert browser.find_element(By.ID, "refusal").text.startswith(error)
    # the triangulation call: its two frames as thumbnails, the frame drawn at 64 px
    browser.execute_script("SS_VIEW.go(96)")
    assert len(browser.find_elements(By.CSS_SELECTOR, "#obs canvas")) == 2
    browser.execute_script("return new Promise(r=>setTimeout(r,300))")
    assert browser.execute_script("return document.getElementById('frame').width") == 64
    assert _nonblank(browser, "frame") > 100
    # the map: path and points drawn; ground truth off, then on with one IoU row per target
    body.send_keys(Keys.END)
    before = _nonblank(browser, "map")
    assert before > 500
    assert not browser.find_elements(By.CSS_SELECTOR, "#ioutable tr")
    body.send_keys("g")
    rows = browser.find_elements(By.CSS_SELECTOR, "#ioutable tr")
    n_targets = len(scene_by_name("Kitchen_01").ground_truth_dict()["targets"])
    assert len(rows) == n_targets + 1
    assert _nonblank(browser, "map") > before      # boxes drawn on top
    # the episode-level Table-4 factors are shown
    flags = [f.text for f in browser.find_elements(By.CSS_SELECTOR, ".flag")]
    assert "incomplete coverage" in flags
    # call-level: the two submissions set positions no triangulation supports
    flagged = [c.text.split()[0] for c in browser.find_elements(By.CSS_SELECTOR, "#calls .call.flagged")]
    assert flagged[-2:] == ["98", "99"]
    browser.execute_script("SS_VIEW.go(98)")
    assert "unsupported position" in browser.find_element(By.ID, "refusal").text
    server.shutdown()


def test_view_lists_an_evaluation_directory_sortable(run_100, browser, tmp_path):
    from selenium.webdriver.common.by import By
    root = tmp_path / "eval"
    shutil.copytree(run_100, root / "a")
    shutil.copytree(run_100, root / "b")
    res = (root / "b" / "result.json")
    import json
    r = json.loads(res.read_text())
    r["all"]["mean_iou"] = 0.9
    res.write_text(json.dumps(r))
    site = write_site(root, tmp_path / "site")
    browser.get((site / "index.html").as_uri())
    def first():
        return browser.find_elements(By.CSS_SELECTOR, "#episodes tr")[1].text.split()[0]
    assert first() == "b"                      # best score first
    browser.find_element(By.CSS_SELECTOR, "th[data-k=mean_iou]").click()
    assert first() == "a"
    browser.find_elements(By.CSS_SELECTOR, "#episodes a")[0].click()
    assert len(browser.find_elements(By.CSS_SELECTOR, "#calls .call:not(.end)")) == 100


def test_view_cli_refuses_a_directory_without_runs(tmp_path):
    p = subprocess.run([sys.executable, "-m", "spatialscout_gym.cli.main", "view", str(tmp_path),
                        "--out", str(tmp_path / "site")], capture_output=True, text=True)
    assert p.returncode == 2
    assert "neither a run directory" in p.stderr and "Traceback" not in p.stderr


def test_view_cli_serves_the_page_on_localhost(run_100):
    import urllib.request
    proc = subprocess.Popen([sys.executable, "-m", "spatialscout_gym.cli.main", "view", str(run_100)],
                            stdout=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline()
        url = line.split(" at ", 1)[1].split()[0]
        assert url.startswith("http://127.0.0.1:")
        html = urllib.request.urlopen(url, timeout=10).read().decode()
        assert "view.js" in html
        data = urllib.request.urlopen(url + "data.js", timeout=10).read().decode()
        assert data.startswith("window.SS_DATA = ") and '"agent": "scripted"' in data
        assert urllib.request.urlopen(url + "frames/frame_000.png", timeout=10).read()[:4] == b"\x89PNG"
    finally:
        proc.terminate()
        proc.wait(10)


def test_view_numbers_model_calls_and_tool_calls_apart(run_100, browser, tmp_path):
    """A model run's list: model calls as M1, M2, ... and tool calls by their own index; the header
    counts each kind."""
    import json
    from selenium.webdriver.common.by import By
    run = tmp_path / "model_run"
    shutil.copytree(run_100, run)
    events, out, k = read_jsonl(run / "trace.jsonl"), [], 0
    for e in events:                       # one model call per 10 tool calls, one refused call in it
        if e["event"] == "tool_call" and e["index"] % 10 == 0:
            out += [{"event": "model_request", "model_call_index": k, "calls_left": 10 - k, "message_count": 1 + 2 * k,
                     "new_messages": [], "history_sha256": "0" * 64},
                    {"event": "model_response", "model_call_index": k, "text": "", "tool_calls": [{}] * 10,
                     "usage": {}, "attempts": 1}]
            if k == 2:
                out.append({"event": "tool_call_refused", "model_call_index": k, "refusal": "unknown_tool",
                            "call": {"name": "fly"}, "error": "unknown tool 'fly'"})
            k += 1
        out.append(e)
    (run / "trace.jsonl").write_text("".join(json.dumps(e) + "\n" for e in out))
    site = write_site(run, tmp_path / "site")
    server = serve_directory(site)
    try:
        browser.get(f"http://127.0.0.1:{server.server_address[1]}/index.html")
        summary = browser.find_element(By.ID, "summary").text
        assert "model calls 10" in summary and "tool calls 100" in summary
        labels = [c.text for c in browser.find_elements(By.CSS_SELECTOR, "#calls .call")]
        assert labels[:3] == ["M1 model request", "M1 model reply (10 tool call(s))", "0 rotate_camera"]
        assert "M3 refused fly" in labels
        tool_labels = [t for t in labels if not t.startswith(("M", "end"))]
        assert [int(t.split()[0]) for t in tool_labels] == list(range(100))   # one numbering, unmixed
        assert len(browser.find_elements(By.CSS_SELECTOR, "#calls .call.model")) == 21
        browser.save_screenshot(str(tmp_path / "model_run.png"))
    finally:
        server.shutdown()


def test_view_refuses_copied_episodes_by_the_rule_report_uses(tmp_path):
    """Two listed episodes naming one scene and seed are refused in one line (the rule of
    ``EvalDir.check_identities``); a plain folder of runs of one scene is no evaluation, and is listed."""
    import json
    from spatialscout_gym.eval.layout import EvalDirError
    from spatialscout_gym.servers.viewer.data import eval_payload
    from record_fixtures import run_record
    result = run_record("Kitchen_01", seed=0, agent="origin", mean_iou=0.1).to_json()
    runs = []
    for name in ("scene_a/seed_0", "scene_b/seed_0", "plain_a", "plain_b"):
        run = tmp_path / "ev" / name
        run.mkdir(parents=True)
        (run / "result.json").write_text(json.dumps(result))
        (run / "trace.jsonl").write_text("")
        runs.append(run)
    with pytest.raises(EvalDirError, match="scene_a/seed_0 and scene_b/seed_0 both hold scene 'Kitchen_01' seed 0"):
        eval_payload(tmp_path / "ev", runs[:2])
    assert [r["path"] for r in eval_payload(tmp_path / "ev", runs[2:])["episodes"]] == ["plain_a", "plain_b"]
