"""Viewer benchmark: how long ``spatialscout view`` takes to open a large run (100 tool calls,
100 frames) in headless Chromium.

    python benchmarks/bench_viewer.py [--resolution 256] [--repeats 5]

Builds the run through the episode API (real SAPIEN render: 50 captures and 50 turns), then times
(a) writing the page (what ``view`` does before serving) and (b) the browser from navigation until
the first call, its frame and the top-down map are drawn. Writes ``benchmarks/results/bench_viewer.json``.
Needs ``chromium`` and ``chromedriver`` (Debian packages) and ``selenium``.
"""

from __future__ import annotations

import argparse
import json
import platform
import shutil
import statistics
import tempfile
import time
from pathlib import Path


def _make_run(out: Path, resolution: int) -> None:
    from spatialscout_gym.envs.session import EpisodeSession
    from spatialscout_gym.scenes.catalog import scene_by_name

    class Scripted:
        name = "scripted"

    with EpisodeSession(resolution=resolution, image_budget=100, tool_call_budget=100) as s:
        s.load(scene_by_name("Kitchen_01"))
        ep = s.new_episode()
        while not ep.done:
            ep.call("capture_image" if ep.tool_calls % 2 else "rotate_camera", {} if ep.tool_calls % 2 else {"yaw": 7.0})
        s.write_run(out, Scripted())


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--resolution", type=int, default=256)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--out", type=Path, default=Path(__file__).parent / "results" / "bench_viewer.json")
    args = ap.parse_args(argv)
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    from spatialscout_gym.servers.viewer.server import serve_directory
    from spatialscout_gym.servers.viewer.site import write_site
    tmp = Path(tempfile.mkdtemp(prefix="bench-viewer-"))
    _make_run(tmp / "run", args.resolution)
    opts = webdriver.ChromeOptions()
    opts.binary_location = shutil.which("chromium")
    for a in ("--headless=new", "--no-sandbox", "--window-size=1400,900"):
        opts.add_argument(a)
    driver = webdriver.Chrome(service=Service(shutil.which("chromedriver")), options=opts)
    write_s, open_s = [], []
    try:
        for i in range(args.repeats):
            t0 = time.perf_counter()
            site = write_site(tmp / "run", tmp / f"site{i}")
            write_s.append(time.perf_counter() - t0)
            server = serve_directory(site)
            t0 = time.perf_counter()
            driver.get(f"http://127.0.0.1:{server.server_address[1]}/index.html")
            # ready: the viewer has drawn call 1, its frame image has loaded and been drawn
            while not driver.execute_script("return !!window.SS_VIEW && document.getElementById('frame').width > 0"):
                time.sleep(0.005)
            open_s.append(time.perf_counter() - t0)
            server.shutdown()
    finally:
        driver.quit()
        shutil.rmtree(tmp, ignore_errors=True)
    total = [a + b for a, b in zip(write_s, open_s)]
    res = {"benchmark": "viewer_open", "tool_calls": 100, "frames": 100, "resolution": args.resolution,
           "repeats": args.repeats, "write_site_s_median": statistics.median(write_s),
           "browser_open_s_median": statistics.median(open_s), "total_s_median": statistics.median(total),
           "total_s_max": max(total), "machine": platform.platform(), "cpus": __import__("os").cpu_count()}
    for k, v in res.items():
        print(f"{k:>22}: {v:.3f}" if isinstance(v, float) else f"{k:>22}: {v}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(res, indent=2) + "\n")
    return res


if __name__ == "__main__":
    main()
