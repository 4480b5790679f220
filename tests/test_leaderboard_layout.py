"""The leaderboard is sorted by rank (a reference row that ranks first comes first) and fits a
laptop: the console lines fit 80 columns, every Markdown table has at most 16 columns, and the page
is no wider than a 1280-pixel window in headless Chromium (wide tables scroll inside their box)."""

from __future__ import annotations

import re

import pytest

from browser import headless_chrome, needs_browser
from fakes import FakeRenderer, small_scene
from spatialscout_gym.cli.main import main
from vlm_scripted import ScriptedServer


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """A model row that submits nothing (rank 2) and a privileged reference row (rank 1),
    on two fake scenes; the leaderboard of both."""
    from spatialscout_gym.baselines.registry import make_agent
    from spatialscout_gym.eval.running.runner import run_episode
    tmp = tmp_path_factory.mktemp("lbl")
    long_name = "a-model-with-a-rather-long-name-that-no-column-holds"
    with ScriptedServer(lambda step, body, fmt: [("finish_mapping", {})]) as server:
        for k in range(2):
            spec = small_scene(32, 32, yaw_deg=20.0 + 30 * k, scene_id=f"fake-{k}")
            agent = make_agent(f"openai:{long_name}", base_url=server.openai_url, api_key="local",
                               model_call_budget=3)
            run_episode(agent, spec, tmp / "model" / f"fake-{k}" / "seed_0", image_budget=3, resolution=32,
                        renderer=FakeRenderer(spec))
            run_episode(make_agent("oracle-explorer"), spec, tmp / "oracle" / f"fake-{k}" / "seed_0", image_budget=3,
                        resolution=32, renderer=FakeRenderer(spec))
    out = tmp / "site"
    return tmp, out


def test_rows_are_sorted_by_rank_and_the_console_fits_80_columns(site, capsys):
    tmp, out = site
    assert main(["leaderboard", str(tmp / "model"), str(tmp / "oracle"), "--out", str(out), "--no-progress"]) == 0
    lines = capsys.readouterr().out.splitlines()
    import json
    board = json.loads((out / "leaderboard.json").read_text())
    ranks = [board["rows"][n]["rank"]["rank"] for n in board["order"]]
    assert ranks == sorted(ranks) and ranks[0] < ranks[-1]
    assert board["order"][0] == "oracle-explorer"         # the reference row ranks first, so it comes first
    table_lines = [line for line in lines if re.match(r"\s+\d+\s", line)]
    assert max(len(line) for line in [lines[0], *table_lines]) <= 80 and "rank" in lines[0]
    assert [int(line.split()[0]) for line in table_lines] == ranks
    md = (out / "leaderboard.md").read_text()
    widths = [line.count(" | ") + 1 for line in md.splitlines() if line.startswith("| ")]
    assert widths and max(widths) <= 16


@needs_browser
def test_the_page_fits_a_1280_pixel_window(site):
    tmp, out = site
    if not (out / "index.html").exists():
        assert main(["leaderboard", str(tmp / "model"), str(tmp / "oracle"), "--out", str(out), "--no-progress"]) == 0
    gen = headless_chrome()
    driver = next(gen)
    try:
        driver.set_window_size(1280, 800)
        driver.get((out / "index.html").as_uri())
        page = driver.execute_script("return document.documentElement.scrollWidth")
        view = driver.execute_script("return document.documentElement.clientWidth")
        first = driver.execute_script("return document.querySelector('#leaderboard tbody td').textContent")
    finally:
        gen.close()
    assert page <= view <= 1280
    assert first == "oracle-explorer (ref)"
