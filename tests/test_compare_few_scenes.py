"""With fewer scenes than the paired permutation test needs to reach p < 0.05 at all, ``compare``
says so (the smallest p that test can give, computed from it) and ``plan`` recommends no fewer."""

from __future__ import annotations

import re

import pytest

from fakes import FakeRenderer, small_scene
from spatialscout_gym.cli.main import main
from spatialscout_gym.eval.running.evaluate import EvalSettings, evaluate
from spatialscout_gym.eval.analysis.stats import min_p_value, min_scenes_to_separate


def test_the_floor_comes_from_the_test_itself():
    # the exact test over 2^n swaps: two-sided p = 2 / 2^n at best
    assert [min_p_value(n) for n in (3, 4, 5, 6)] == pytest.approx([0.25, 0.125, 0.0625, 0.03125])
    assert min_scenes_to_separate() == 6 and min_scenes_to_separate(alpha=0.1) == 5


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("few")
    scenes = []
    for k in range(4):
        p = tmp / f"fake-{k}.json"
        p.write_text(small_scene(32, 32, yaw_deg=20.0 + 25 * k, scene_id=f"fake-{k}").to_json())
        scenes.append(str(p))
    for agent in ("origin", "uniform-ball"):
        evaluate(tmp / agent, EvalSettings(agent, 3, 10, 32), scenes, seeds=2, progress=False,
                 renderer_factory=FakeRenderer)
    return tmp


def test_compare_with_four_scenes_says_it_cannot_separate(two_runs, capsys):
    assert main(["compare", str(two_runs / "origin"), str(two_runs / "uniform-ball")]) == 0
    out = capsys.readouterr().out
    assert "with 4 shared scenes the exact paired permutation test cannot give p below 0.125" in out
    assert "compare on 6 or more scenes" in out


def test_plan_recommends_no_fewer_scenes_than_can_separate(two_runs, capsys):
    assert main(["plan", str(two_runs / "uniform-ball"), "--detect", "99"]) == 0
    out = capsys.readouterr().out
    counts = [int(n) for n in re.findall(r"seed\(s\) per scene: (\d+) scenes", out)]
    assert len(counts) == 4 and min(counts) >= 6
    assert "floor: 6 scenes" in out and "0.0625" in out
