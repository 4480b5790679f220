"""``spatialscout play``: a whole episode played in headless Chromium (Debian's chromium and
chromedriver through Selenium) with clicks and keys; its run directory must score exactly like the
same tool calls made on a fresh episode of the same scene."""

from __future__ import annotations

import json

import pytest

from spatialscout_gym.cli.main import main
from tests.test_viewer import _browser


@pytest.fixture(scope="module")
def driver():
    d = _browser()
    yield d
    d.quit()


def _wait(driver, cond, timeout=60):
    from selenium.webdriver.support.ui import WebDriverWait
    WebDriverWait(driver, timeout).until(lambda d: d.execute_script(cond))


def test_a_played_episode_scores_like_the_same_calls(tmp_path, driver):
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By

    from spatialscout_gym.envs.session import EpisodeSession
    from spatialscout_gym.eval.runner import resolve_scene
    from spatialscout_gym.eval.viewer.play import PlayGame, serve_play
    out = tmp_path / "me"
    game = PlayGame(resolve_scene("Kitchen_01"), out, "tester", resolution=128, image_budget=10,
                    tool_call_budget=30)
    httpd, _, url = serve_play(game)
    try:
        driver.get(url)
        _wait(driver, "return document.body.dataset.ready === '1'")
        body = driver.find_element(By.TAG_NAME, "body")
        n = 0

        def act(fn):
            nonlocal n
            fn()
            n += 1
            _wait(driver, f"return document.body.dataset.calls === '{n}'")

        frame = driver.find_element(By.ID, "frame")
        act(lambda: body.send_keys("c"))                              # frame 1 from the start pose
        ActionChains(driver).move_to_element_with_offset(frame, 0, 0).click().perform()  # no tool call
        act(lambda: body.send_keys("d"))                              # step right
        act(lambda: body.send_keys("r"))                              # step up
        act(lambda: body.send_keys("c"))                              # frame 2
        # the same point from 0.25 m right and up: it moved left and down in the image
        shift = round(0.1 * frame.size["width"])
        ActionChains(driver).move_to_element_with_offset(frame, -shift, shift).click().perform()
        assert len(driver.find_elements(By.CSS_SELECTOR, "#marks .mark")) == 1
        act(lambda: driver.find_element(By.ID, "b-tri").click())
        act(lambda: driver.find_element(By.ID, "b-list").click())
        ActionChains(driver).move_to_element_with_offset(frame, 0, 0).click().perform()
        from pathlib import Path
        driver.save_screenshot(str(Path(__file__).resolve().parents[1] / "docs" / "play.png"))
        driver.find_element(By.ID, "b-clear").click()
        act(lambda: body.send_keys("x"))                              # a tool the model also has
        act(lambda: driver.find_element(By.ID, "b-submit").click())
        act(lambda: driver.find_element(By.ID, "b-finish").click())
        _wait(driver, "return document.body.dataset.done === '1'")
        assert "run directory written" in driver.find_element(By.ID, "status").text
        # after the end a tool is refused with the episode's own text
        act(lambda: body.send_keys("c"))
        assert "the episode has ended" in driver.find_elements(By.CSS_SELECTOR, "#log li")[-1].text
    finally:
        httpd.shutdown()
        game.session.close()

    result = json.loads((out / "result.json").read_text())
    assert result["agent"] == "human:tester" and result["status"] == "ok"
    calls = [json.loads(x) for x in (out / "trace.jsonl").read_text().splitlines()]
    calls = [e for e in calls if e["event"] == "tool_call"]
    assert [c["tool"] for c in calls] == [
        "capture_image", "move_camera", "move_camera", "capture_image", "triangulate_observations",
        "list_entities", "rotate_camera", "submit_positions", "finish_mapping"]
    assert calls[4]["result"]["ok"] and calls[7]["result"]["ok"], json.dumps([calls[4], calls[7]])
    # the same calls on a fresh episode: identical result and score
    with EpisodeSession(resolution=128, image_budget=10, tool_call_budget=30) as s:
        s.load(resolve_scene("Kitchen_01"))
        ep = s.new_episode()
        for c in calls:
            ep.call(c["tool"], c["args"])
        again = s.write_run(tmp_path / "env", game.agent, seed=0)
    for key in ("all", "submitted", "coverage", "center_error_m", "full_scene_loss_m", "counters", "end_reason"):
        assert result[key] == again[key], key
    # the standard scorer and the report read it like any agent's run
    assert main(["score", str(out)]) == 0
    assert main(["view", str(out), "--out", str(tmp_path / "site")]) == 0


def test_play_refuses_bad_input(tmp_path, capsys):
    assert main(["play", "--scene", "Kitchen_01", "--out", str(tmp_path / "x"), "--name", "a b"]) == 2
    assert "--name must be" in capsys.readouterr().err
    assert main(["play", "--scene", "NoSuchScene_99", "--out", str(tmp_path / "y"), "--name", "a"]) == 2
    assert "cannot play scene" in capsys.readouterr().err
