"""The NBV exploration metrics (``result.json``'s ``nbv.exploration``, ``report`` and ``compare``):
a hand-computed case, and the occupancy-frontier baseline run under ``evaluate`` beside
``frontier-nbv`` with both tables showing them. Vulkan-free renderer, fake scenes, 32 px."""

from __future__ import annotations

import json

import numpy as np
import pytest

from fakes import FakeRenderer, small_scene
from spatialscout_gym.core.frames import TaskFrame
from spatialscout_gym.core.renderer_api import PrivilegedFrame
from spatialscout_gym.eval.pages.report import compare_reports, format_report_md, write_report
from spatialscout_gym.eval.running.evaluate import EvalSettings, evaluate
from spatialscout_gym.nbv.config import NBVConfig
from spatialscout_gym.nbv.exploration import EXPLORATION_KEYS, ExplorationTally
from spatialscout_gym.nbv.walls import WallMap


def test_the_metrics_match_a_hand_computed_case():
    """A 4 x 4 x 4 grid of 1 m voxels centred on the camera (task frame = world), a 2 x 2 ray grid,
    a 4 x 4 m floor with its top at z = 0. One capture sees (1.5, 0, 0) and (0, 1.5, 0.03) on the
    floor, (0, -1.2, 1) above it, and nothing at the fourth pixel: occupied voxels (3, 2, 2),
    (2, 3, 2), (2, 0, 3); free (2, 2, 2) (every ray's start) and (2, 1, 2) (the third ray at 0.5 and
    1.0 m): 5 of 64 known. Floor cells of 0.25 m: (6, 0) and (0, 6): 0.125 m^2. Moves of 1 m, a
    blocked one, then 5 m: 6 m, 1 blocked. The capture's brightest value is 8: black; a second
    capture whose brightest is 9 is not."""
    config = NBVConfig(occupancy_cells=(4, 4, 4), occupancy_voxel_m=1.0, occupancy_range_m=8.0, occupancy_rays=2)
    tally = ExplorationTally(config)
    tally.begin(WallMap(np.zeros((0, 2, 3)), np.array([[[-2.0, -2.0, -0.05], [2.0, 2.0, 0.0]]])))
    world = np.array([[[1.5, 0.0, 0.0], [0.0, 1.5, 0.03]], [[0.0, -1.2, 1.0], [np.nan] * 3]], np.float32)
    depth = np.array([[1.5, 1.5], [1.2, 0.0]], np.float32)
    frame = PrivilegedFrame(depth, np.full((2, 2), -1, np.int32), world)
    task = TaskFrame(np.eye(3), np.zeros(3))
    image = np.zeros((2, 2, 3), np.uint8)
    image[0, 1, 2] = 8
    tally.capture(image, frame, task, np.zeros(3))
    grid = tally.grid.grid
    assert {tuple(v) for v in np.argwhere(grid == 2)} == {(3, 2, 2), (2, 3, 2), (2, 0, 3)}
    assert {tuple(v) for v in np.argwhere(grid == 1)} == {(2, 2, 2), (2, 1, 2)}
    image[1, 1, 0] = 9
    tally.capture(image, None, task, np.zeros(3))
    tally.step(np.zeros(3), np.array([1.0, 0.0, 0.0]), False)
    tally.step(np.array([1.0, 0.0, 0.0]), np.array([1.0, 0.0, 0.0]), True)
    tally.step(np.array([1.0, 0.0, 0.0]), np.array([4.0, 4.0, 0.0]), False)
    assert tally.metrics() == {"known_occupancy_fraction": 5 / 64, "explored_floor_m2": 0.125,
                               "path_length_m": 6.0, "blocked_moves": 1, "black_frames": 1}


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("exploration")
    scenes = []
    for k in range(2):
        p = tmp / f"fake-{k}.json"
        p.write_text(small_scene(32, 32, yaw_deg=20.0 + 25 * k, scene_id=f"fake-{k}").to_json())
        scenes.append(str(p))
    for agent in ("nbv-occupancy-frontier", "frontier-nbv"):
        evaluate(tmp / agent, EvalSettings(agent, 6, None, 32), scenes, progress=False, renderer_factory=FakeRenderer)
    return tmp


def test_every_nbv_episode_records_the_metrics_and_the_tables_show_them(runs):
    for agent in ("nbv-occupancy-frontier", "frontier-nbv"):
        for path in (runs / agent).glob("*/seed_*/result.json"):
            block = json.loads(path.read_text())["nbv"]
            e = block["exploration"]
            assert set(e) == set(EXPLORATION_KEYS) and 0 < e["known_occupancy_fraction"] < 1
            assert e["path_length_m"] >= 0 and e["blocked_moves"] >= 0 and e["black_frames"] == 0
        report = write_report(runs / agent)
        assert report.exploration["episodes"] == 2
        assert "## Exploration (NBV agents, mean per episode)" in format_report_md(report)
    occupancy = json.loads(next((runs / "nbv-occupancy-frontier").glob("*/seed_*/result.json")).read_text())["nbv"]
    assert occupancy["motion"] == "heading" and "occupancy" in occupancy["observation_keys"]
    assert occupancy["walls"] is True
    text, _ = compare_reports([runs / "frontier-nbv", runs / "nbv-occupancy-frontier"])
    table = text.split("## Exploration (NBV agents, mean per episode)")[1]
    assert "| frontier-nbv | 2 |" in table and "| nbv-occupancy-frontier | 2 |" in table


def test_replay_of_an_nbv_evaluation_draws_each_episode_trajectory(runs, capsys):
    from PIL import Image

    from spatialscout_gym.cli.main import main
    from spatialscout_gym.eval.pages.nbv_trajectory import capture_poses
    d = runs / "nbv-occupancy-frontier"
    assert main(["replay", str(d)]) == 0
    assert "2 NBV trajectory plot(s)" in capsys.readouterr().out
    for scene in ("fake-0", "fake-1"):
        with Image.open(d / "replay" / f"trajectory_{scene}_seed_0.png") as png:
            assert png.size[0] >= 600 and png.size[1] >= 600
        assert len(capture_poses(d / scene / "seed_0")) == json.loads(
            (d / scene / "seed_0" / "result.json").read_text())["counters"]["images_used"]
