"""How long ``spatialscout view`` takes to open a 100-call run: writing the site (reading the run
directory, scoring, Table-4 factors) and the page's load in headless Chromium until it has drawn
(``body[data-ready]``). Prints the figures and writes ``bench_viewer.json``.

    python benchmarks/bench_viewer.py [--run DIR] [--repeats 5]

Without ``--run`` it first makes an oracle-explorer run of Kitchen_01 (100 tool calls, 50 frames).
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

from spatialscout_gym.cli.main import main
from spatialscout_gym.eval.viewer.server import serve, write_site


def run() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--run", type=Path, help="run directory (default: make an oracle-explorer run)")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--json", type=Path, default=Path("bench_viewer.json"))
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="bench-viewer-"))
    run_dir = args.run
    if run_dir is None:
        run_dir = tmp / "run"
        assert main(["run", "--agent", "oracle-explorer", "--scene", "Kitchen_01", "--out", str(run_dir)]) == 0
    calls = sum(1 for line in (run_dir / "trace.jsonl").read_text().splitlines() if '"tool_call"' in line)
    frames = len(list((run_dir / "frames").glob("*.png")))

    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    opts = webdriver.ChromeOptions()
    opts.binary_location = "/usr/bin/chromium"
    for a in ("--headless=new", "--no-sandbox", "--disable-gpu", "--window-size=1500,900"):
        opts.add_argument(a)
    driver = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=opts)
    write_s, load_s = [], []
    try:
        for k in range(args.repeats):
            t0 = time.perf_counter()
            site = write_site(run_dir, tmp / f"site{k}")
            write_s.append(time.perf_counter() - t0)
            httpd, _, url = serve(site)
            try:
                t0 = time.perf_counter()
                driver.get(url)   # returns after the load event: the scripts have run
                assert driver.execute_script("return document.body.dataset.ready") == "1"
                driver.execute_script("VIEWER.show(VIEWER.steps.length - 1)")
                load_s.append(time.perf_counter() - t0)
            finally:
                httpd.shutdown()
    finally:
        driver.quit()
    out = {"calls": calls, "frames": frames, "repeats": args.repeats,
           "write_site_s_median": statistics.median(write_s), "page_load_s_median": statistics.median(load_s),
           "open_s_median": statistics.median([a + b for a, b in zip(write_s, load_s)]),
           "open_s_max": max(a + b for a, b in zip(write_s, load_s))}
    for k, v in out.items():
        print(f"{k:22s} {v:.3f}" if isinstance(v, float) else f"{k:22s} {v}")
    args.json.write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    run()
