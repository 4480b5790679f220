"""``spatialscout play``: a whole episode played in headless Chromium (Debian's chromium +
chromium-driver through Selenium) by clicks and keys; its run directory must score exactly like
the same tool calls made through the episode API."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from browser import headless_chrome, needs_browser

from spatialscout_gym.envs.session import EpisodeSession
from spatialscout_gym.episode.trace import read_jsonl
from spatialscout_gym.scenes.catalog import scene_by_name
from spatialscout_gym.servers.viewer.play import PlayGame, serve_play

pytest.importorskip("selenium.webdriver", reason="selenium is not installed (test extra)")
pytestmark = [pytest.mark.render, pytest.mark.slow, needs_browser]


@pytest.fixture()
def browser():
    yield from headless_chrome()


def test_a_browser_played_episode_scores_like_the_same_calls_through_the_env(browser, tmp_path):
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait
    spec = scene_by_name("Kitchen_01")
    out = tmp_path / "me" / "Kitchen_01" / "seed_0"     # the evaluation layout leaderboard reads
    with EpisodeSession(resolution=64, image_budget=5, tool_call_budget=100) as s:
        s.load(spec)
        game = PlayGame(s, out, "tester")
        server = serve_play(game)
        browser.get(server.url)                # the printed URL: it carries the per-run token
        def calls():
            return browser.execute_script("return SS_PLAY.calls")
        def wait(n):
            return WebDriverWait(browser, 30).until(lambda d: calls() >= n)
        body = browser.find_element(By.TAG_NAME, "body")
        n = 0

        def click(button_id):
            nonlocal n
            browser.find_element(By.ID, button_id).click()
            n += 1
            wait(n)

        def key(k):
            nonlocal n
            body.send_keys(k)
            n += 1
            wait(n)

        WebDriverWait(browser, 30).until(lambda d: d.execute_script("return SS_PLAY.state"))
        assert browser.execute_script("return SS_PLAY.radius") is None   # unknown before list_entities: no placeholder
        click("list")
        assert abs(browser.execute_script("return SS_PLAY.radius") - spec.public.radius_m) < 1e-6
        assert len(browser.find_elements(By.CSS_SELECTOR, "#ids option")) == len(spec.public.inventory)
        key("e")                 # turn right 15 deg
        key("c")                 # capture frame 1
        key("d")                 # move right 0.25 m
        key("q")
        key("c")                 # capture frame 2
        key("w")
        # the move bound refuses 99 m with the episode's own text
        browser.find_element(By.ID, "step").clear()
        browser.find_element(By.ID, "step").send_keys("99")
        click("fwd")
        assert "1 m per call" in browser.find_element(By.ID, "refusal").text
        # mark one pixel in frame 1 and one in frame 2 (clicks on the displayed frame), triangulate
        frame = browser.find_element(By.ID, "frame")
        for f in (1, 2):
            browser.find_element(By.ID, f"thumb{f}").click()
            ActionChains(browser).move_to_element_with_offset(frame, 10, 15).click().perform()
        assert browser.find_element(By.ID, "marks").text.count("frame") == 2
        key("t")
        # submit the first inventory id at a typed point, inspect the map, finish
        browser.find_element(By.ID, "pt").clear()
        browser.find_element(By.ID, "pt").send_keys("0.8, 0.9, -0.7")
        click("submit")
        click("map")
        click("finish")
        WebDriverWait(browser, 30).until(lambda d: d.find_elements(By.ID, "rundir"))
        assert browser.find_element(By.ID, "rundir").text == str(out)
        shown_score = browser.find_element(By.ID, "score").text
        assert "all-target mean IoU" in shown_score                                # the score, at the end
        browser.save_screenshot(str(tmp_path / "play_end.png"))
        assert all(not b.is_enabled() for b in browser.find_elements(By.TAG_NAME, "button"))
        server.shutdown()
        played = json.loads((out / "result.json").read_text())

        # the same calls through the episode API, in a fresh episode of the same session
        trace = [e for e in read_jsonl(out / "trace.jsonl") if e["event"] == "tool_call"]
        assert [e["tool"] for e in trace][:3] == ["list_entities", "rotate_camera", "capture_image"]
        assert len(trace) == n
        ep = s.new_episode()
        for e in trace:
            ep.call(e["tool"], e["args"])
        again = s.write_run(tmp_path / "api", type("A", (), {"name": "human:tester"})())
    assert played["agent"] == "human:tester" and played["status"] == "ok"
    assert f"{100 * played['all']['mean_iou']:.1f}%" in shown_score
    assert played["end_reason"] == "finish_mapping"
    for k in ("all", "submitted", "coverage", "num_submitted", "counters", "full_scene_loss_m"):
        assert played[k] == again[k], k
    assert played["num_submitted"] == 1
    assert len(list((out / "frames").glob("*.png"))) == 3
    # the run directory is accepted by the scorer's CLI like any agent's
    p = subprocess.run([sys.executable, "-m", "spatialscout_gym.cli.main", "score", str(out)],
                       capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    # ... and the leaderboard puts it in a row of its own
    p = subprocess.run([sys.executable, "-m", "spatialscout_gym.cli.main", "leaderboard", str(tmp_path / "me"),
                        "--out", str(tmp_path / "site"), "--no-progress"], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    rows = json.loads((tmp_path / "site" / "leaderboard.json").read_text())
    assert "human:tester" in json.dumps(rows)


def test_play_cli_writes_the_run_when_the_episode_ends(tmp_path):
    import urllib.error
    import urllib.request
    out = tmp_path / "me"
    proc = subprocess.Popen([sys.executable, "-m", "spatialscout_gym.cli.main", "play", "--scene", "Kitchen_01",
                             "--out", str(out), "--name", "cli", "--resolution", "64"],
                            stdout=subprocess.PIPE, text=True)
    try:
        lines = [proc.stdout.readline(), proc.stdout.readline()]
        assert "port opens in about" in lines[0]          # said before the slow start
        page = lines[1].split(" at ", 1)[1].split()[0]
        url, token = page.split("?token=")
        assert url.startswith("http://127.0.0.1:") and len(token) >= 24
        state = json.loads(urllib.request.urlopen(url + "api/state", timeout=10).read())
        assert state["counters"]["images_left"] == 99 and state["counters"]["calls_left"] == 100  # run's budgets
        assert "ground_truth" not in json.dumps(state) and "targets" not in state
        req = urllib.request.Request(url + "api/call", data=json.dumps({"tool": "finish_mapping"}).encode(),
                                     headers={"Content-Type": "application/json"})
        with pytest.raises(urllib.error.HTTPError, match="401"):      # no token: refused
            urllib.request.urlopen(req, timeout=30)
        req.add_header("X-SpatialScout-Token", token)
        reply = json.loads(urllib.request.urlopen(req, timeout=30).read())
        assert reply["result"]["ok"] and reply["state"]["counters"]["done"]
        assert reply["state"]["score"]["all_mean_iou"] == 0.0 and reply["state"]["score"]["num_submitted"] == 0
        assert proc.wait(30) == 0
        assert "agent human:cli  score: all-target mean IoU" in proc.stdout.read()
    finally:
        if proc.poll() is None:
            proc.terminate()
    assert json.loads((out / "result.json").read_text())["agent"] == "human:cli"
    p = subprocess.run([sys.executable, "-m", "spatialscout_gym.cli.main", "play", "--scene", "Kitchen_01",
                        "--out", str(out)], capture_output=True, text=True)
    assert p.returncode == 2 and "--overwrite" in p.stderr
