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
        # no table scrolls in its box: every column, spend included, is in sight at 1280 px
        boxes = driver.execute_script("return Array.from(document.querySelectorAll('div.wide')).map("
                                      "function (w) { return [w.scrollWidth, w.clientWidth]; })")
        cost = driver.execute_script("var th = Array.from(document.querySelectorAll('th')).find(function (h) {"
                                     " return h.textContent === 'cost/task $'; }); var r = th.getBoundingClientRect();"
                                     " return [r.left, r.right];")
        note = driver.execute_script("return document.body.textContent")
    finally:
        gen.close()
    assert page <= view <= 1280
    assert first == "oracle-explorer (ref)"
    assert boxes and all(scroll <= client for scroll, client in boxes), boxes
    assert 0 <= cost[0] < cost[1] <= view, cost
    assert "Too few scenes to separate: the rows share 2 scene(s)" in note


def test_the_page_says_why_every_rank_interval_spans_every_rank(site):
    """With fewer shared scenes than the paired test needs, no two rows can be separated: the page
    and the Markdown say so, as ``compare`` does for a pair."""
    import json
    from spatialscout_gym.eval.analysis.stats import min_p_value, min_scenes_to_separate
    tmp, out = site
    if not (out / "leaderboard.json").exists():
        assert main(["leaderboard", str(tmp / "model"), str(tmp / "oracle"), "--out", str(out), "--no-progress"]) == 0
    board = json.loads((out / "leaderboard.json").read_text())
    assert all(r["rank"]["low"] == 1 and r["rank"]["high"] == 2 for r in board["rows"].values())
    note = board["rank_note"]
    assert note.startswith("Too few scenes to separate: the rows share 2 scene(s)")
    assert f"cannot give p below {min_p_value(2):.3g}" in note and f"rank on {min_scenes_to_separate()} or more" in note
    import html
    from spatialscout_gym.eval.pages.report import md
    assert md(note) in (out / "leaderboard.md").read_text() and html.escape(note) in (out / "index.html").read_text()


def test_figure_7_keeps_its_labels_inside(tmp_path, monkeypatch):
    """Long row names beside their points spilled over the axes and out of the figure: every text
    of the cost picture lies inside the figure, and the points' labels inside the axes."""
    import matplotlib.pyplot as plt
    from spatialscout_gym.eval.analysis.cost import cost_summary, plot_cost
    names = ["openai:gpt-4.1-mini-2025-04-14 (high)", "anthropic:claude-sonnet-4-5-20250929 (high)",
             "openai-responses:gemini-2.5-flash-preview-05-20 (high)"]
    rows = {n: {"cost_per_task_usd": c, "object_micro": {"all": {"mean_iou": q}}}
            for n, c, q in zip(names, (0.03, 0.4, 1.2), (0.6, 0.2, 0.05))}
    rows["oracle-explorer"] = {"cost_per_task_usd": None, "object_micro": {"all": {"mean_iou": 0.9}}}
    drawn = []
    close = plt.close
    monkeypatch.setattr(plt, "close", lambda fig=None: (drawn.append(fig), close(fig)))
    assert plot_cost(cost_summary(rows), tmp_path / "cost.png").is_file()
    (fig,) = drawn
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    canvas = FigureCanvasAgg(fig)      # closed by plot_cost: drawn again on a canvas of its own
    canvas.draw()
    r = canvas.get_renderer()
    (ax,) = fig.axes
    inside = lambda box, outer: (box.x0 >= outer.x0 - 0.5 and box.x1 <= outer.x1 + 0.5  # noqa: E731
                                 and box.y0 >= outer.y0 - 0.5 and box.y1 <= outer.y1 + 0.5)
    texts = [t for t in [*fig.texts, *ax.texts, *ax.get_legend().get_texts()] if t.get_text()]
    assert len(ax.texts) == 3
    for t in texts:
        assert inside(t.get_window_extent(r), fig.bbox), t.get_text()
    for t in ax.texts:
        assert inside(t.get_window_extent(r), ax.bbox), t.get_text()
    shown = " ".join(t.get_text() for t in fig.texts)
    assert all(n in shown for n in names) and "oracle-explorer" in shown
