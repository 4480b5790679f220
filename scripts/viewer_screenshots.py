"""Screenshots of the two browser pages for the README, made with the test browser (headless
Chromium through Selenium).

    python scripts/viewer_screenshots.py RUN_DIR

Writes ``docs/viewer.png`` (``spatialscout view RUN_DIR`` at a triangulation call with the ground
truth shown) and ``docs/play.png`` (``spatialscout play`` on Kitchen_01 at 256 px after a few
moves, captures and two marked pixels).
"""

from __future__ import annotations

import shutil
import sys
import tempfile
import time
from pathlib import Path

DOCS = Path(__file__).resolve().parent.parent / "docs"


def _driver():
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    opts = webdriver.ChromeOptions()
    opts.binary_location = shutil.which("chromium")
    for a in ("--headless=new", "--no-sandbox", "--window-size=1440,960", "--hide-scrollbars"):
        opts.add_argument(a)
    return webdriver.Chrome(service=Service(shutil.which("chromedriver")), options=opts)


def viewer(run: Path, d) -> None:
    from spatialscout_gym.servers.viewer.server import serve_directory
    from spatialscout_gym.servers.viewer.site import write_site
    site = write_site(run, Path(tempfile.mkdtemp()) / "site")
    server = serve_directory(site)
    d.get(f"http://127.0.0.1:{server.server_address[1]}/index.html")
    i = d.execute_script("const c=[...document.querySelectorAll('#calls .call')];"
                         "return c.findIndex(e=>e.textContent.includes('triangulate'))")
    d.execute_script(f"SS_VIEW.go({max(i, 0)})")
    d.find_element("tag name", "body").send_keys("g")
    time.sleep(1)
    d.save_screenshot(str(DOCS / "viewer.png"))
    server.shutdown()


def play(d) -> None:
    from selenium.webdriver.common.action_chains import ActionChains

    from spatialscout_gym.envs.session import EpisodeSession
    from spatialscout_gym.scenes.catalog import scene_by_name
    from spatialscout_gym.servers.viewer.play import PlayGame, serve_play
    with EpisodeSession(resolution=256, image_budget=100, tool_call_budget=100) as s:
        s.load(scene_by_name("Kitchen_01"))
        game = PlayGame(s, Path(tempfile.mkdtemp()) / "me", "screenshot")
        server = serve_play(game)
        d.get(f"http://127.0.0.1:{server.server_address[1]}/")
        body = d.find_element("tag name", "body")
        d.find_element("id", "list").click()
        time.sleep(1)
        for k in "ecdqcw":
            body.send_keys(k)
            time.sleep(1.5)
        frame = d.find_element("id", "frame")
        for f in (1, 2):
            d.find_element("id", f"thumb{f}").click()
            ActionChains(d).move_to_element_with_offset(frame, 20, 40).click().perform()
        body.send_keys("t")
        time.sleep(1.5)
        d.save_screenshot(str(DOCS / "play.png"))
        server.shutdown()


if __name__ == "__main__":
    drv = _driver()
    try:
        viewer(Path(sys.argv[1]), drv)
        play(drv)
    finally:
        drv.quit()
