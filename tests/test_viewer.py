"""``spatialscout view``: the page drawn by headless Chromium (Debian's chromium and chromedriver,
driven by Selenium; nothing downloads a browser) on a real oracle-click run of Kitchen_01."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from spatialscout_gym.cli.main import main

CHROMEDRIVER = "/usr/bin/chromedriver"
CHROMIUM = "/usr/bin/chromium"


def _browser():
    webdriver = pytest.importorskip("selenium.webdriver", reason="selenium is not installed (test extra)")
    if not (shutil.which(CHROMEDRIVER) and shutil.which(CHROMIUM)):
        pytest.skip("no browser: apt-get install -y chromium chromium-driver (scripts/test.sh does)")
    from selenium.webdriver.chrome.service import Service
    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for a in ("--headless=new", "--no-sandbox", "--disable-gpu", "--window-size=1500,900"):
        opts.add_argument(a)
    return webdriver.Chrome(service=Service(CHROMEDRIVER), options=opts)


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("view") / "run"
    assert main(["run", "--agent", "oracle-click", "--scene", "Kitchen_01", "--out", str(out)]) == 0
    return out


@pytest.fixture(scope="module")
def driver():
    d = _browser()
    yield d
    d.quit()


def test_view_draws_every_call_frame_mark_and_map(run_dir, tmp_path, driver):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    site = tmp_path / "site"
    assert main(["view", str(run_dir), "--out", str(site)]) == 0
    events = [json.loads(x) for x in (run_dir / "trace.jsonl").read_text().splitlines()]
    calls = [e for e in events if e["event"] == "tool_call"]
    tris = [e for e in calls if e["tool"] == "triangulate_observations" and e["result"]["ok"]]
    accepted = json.loads((run_dir / "predictions.json").read_text())["positions"]
    assert len(calls) >= 90 and tris and accepted

    driver.get((site / "index.html").as_uri())
    assert driver.find_element(By.TAG_NAME, "body").get_attribute("data-ready") == "1"
    assert len(driver.find_elements(By.CSS_SELECTOR, "#calls li")) == len(calls)
    assert "Kitchen_01" in driver.find_element(By.ID, "title").text
    # keyboard: End goes to the last call; the map then shows every triangulation and accepted id
    body = driver.find_element(By.TAG_NAME, "body")
    body.send_keys(Keys.END)
    assert driver.execute_script("return VIEWER.current()") == len(calls) - 1
    assert len(driver.find_elements(By.CSS_SELECTOR, "#map .tri")) == len(tris)
    assert len(driver.find_elements(By.CSS_SELECTOR, "#map .acc")) == len(accepted)
    assert not driver.find_elements(By.CSS_SELECTOR, "#map .gt-box")   # truth hidden until toggled
    # the first triangulation: its frame is shown with its pixels marked, and its rays drawn
    first = calls.index(tris[0])
    driver.execute_script(f"VIEWER.show({first})")
    obs = tris[0]["args"]["observations"]
    assert driver.find_element(By.ID, "frame-title").text == f"Frame {obs[0]['frame_id']}"
    assert driver.find_element(By.ID, "frame").get_attribute("src").endswith(f"frame_{obs[0]['frame_id']:03d}.png")
    marks = driver.find_elements(By.CSS_SELECTOR, "#marks .mark")
    assert any(abs(float(m.get_attribute("cx")) - obs[0]["u"]) < 1e-3 for m in marks)
    assert len(driver.find_elements(By.CSS_SELECTOR, "#map .ray")) == len(obs)
    body.send_keys(Keys.ARROW_RIGHT)
    assert driver.execute_script("return VIEWER.current()") == first + 1
    # the truth toggle: one box and one IoU row per target
    body.send_keys("t")
    gt = json.loads((run_dir / "ground_truth.json").read_text())["targets"]
    assert len(driver.find_elements(By.CSS_SELECTOR, "#map .gt-box")) == len(gt)
    assert len(driver.find_elements(By.CSS_SELECTOR, "#iou-table tr")) == len(gt) + 1
    docs = Path(__file__).resolve().parents[1] / "docs"
    body.send_keys(Keys.HOME)
    driver.execute_script(f"VIEWER.show({first + 2})")
    driver.save_screenshot(str(docs / "viewer.png"))


def test_view_serves_on_loopback(run_dir):
    import urllib.request

    from spatialscout_gym.eval.viewer.server import serve, write_site
    site = write_site(run_dir, run_dir.parent / "served")
    httpd, _, url = serve(site)
    try:
        assert url.startswith("http://127.0.0.1:")
        html = urllib.request.urlopen(url, timeout=10).read().decode()
        assert "viewer.js" in html
        doc = json.loads(urllib.request.urlopen(url.replace("index.html", "episode.json"), timeout=10).read())
        assert doc["result"]["scene_id"] == "Kitchen_01" and doc["truth"]["targets"]
    finally:
        httpd.shutdown()


def test_view_refuses_a_directory_without_a_run(tmp_path, capsys):
    assert main(["view", str(tmp_path)]) == 2
    assert "is not a run directory" in capsys.readouterr().err
