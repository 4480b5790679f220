"""Every NBV agent's episode records the dynamics it stepped under (``result.json``'s ``nbv`` block:
env id, walls, wall margin, motion, observation keys); ``--nbv-env`` states them for baselines and
policies alike; ``compare`` and ``leaderboard`` refuse evaluations whose NBV dynamics differ, and
the CLI refuses ``--nbv-env`` for a non-NBV agent. Vulkan-free renderer, fake scenes, 32 px."""

from __future__ import annotations

import json

import pytest

from fakes import FakeRenderer, small_scene
from spatialscout_gym.cli.main import main
from spatialscout_gym.eval.pages.report import CompareError, compare_reports
from spatialscout_gym.eval.running.evaluate import EvalSettings, evaluate

KEYS = ["coverage", "image", "map", "pose", "scan", "sectors"]


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """random-nbv under NBV-v2 (its default) and NBV-v1 (walls off), frontier-nbv under NBV-v2, on
    two fake scenes, V = 4."""
    tmp = tmp_path_factory.mktemp("dynamics")
    scenes = []
    for k in range(2):
        p = tmp / f"fake-{k}.json"
        p.write_text(small_scene(32, 32, yaw_deg=20.0 + 25 * k, scene_id=f"fake-{k}").to_json())
        scenes.append(str(p))
    for name, agent, options in (("v2", "random-nbv", {}), ("v1", "random-nbv", {"walls": False}),
                                 ("frontier", "frontier-nbv", {})):
        evaluate(tmp / name, EvalSettings(agent, 4, None, 32, agent_options=options), scenes, progress=False,
                 renderer_factory=FakeRenderer)
    return tmp


def _result(d):
    return json.loads(next(d.glob("*/seed_*/result.json")).read_text())


def test_each_episode_records_its_dynamics_and_observation_keys(runs):
    v2, v1, frontier = (_result(runs / n)["nbv"] for n in ("v2", "v1", "frontier"))
    assert (v2["env_id"], v2["walls"], v2["motion"]) == ("SpatialScout/NBV-v2", True, "heading")
    assert (v1["env_id"], v1["walls"]) == ("SpatialScout/NBV-v1", False)
    assert (frontier["env_id"], frontier["walls"], frontier["motion"]) == ("SpatialScout/NBV-v2", True, "continuous")
    assert v2["observation_keys"] == KEYS and v2["wall_margin_m"] == 0.1


def test_compare_refuses_a_mix_of_dynamics(runs, capsys):
    with pytest.raises(CompareError, match=r"NBV dynamics differs: v2: SpatialScout/NBV-v2, "
                                           r"v1: SpatialScout/NBV-v1"):
        compare_reports([runs / "v2", runs / "v1"])
    assert main(["compare", str(runs / "v2"), str(runs / "v1")]) == 2
    err = capsys.readouterr().err
    assert "NBV walls differs" in err and "Traceback" not in err
    compare_reports([runs / "v2", runs / "frontier"])     # the same dynamics: comparable


def test_leaderboard_refuses_a_mix_of_dynamics(runs, tmp_path, capsys):
    assert main(["leaderboard", str(runs / "v1"), str(runs / "frontier"), "--out", str(tmp_path / "site"),
                 "--no-progress"]) == 2
    assert "NBV dynamics differs" in capsys.readouterr().err


def test_nbv_v3_runs_compare_with_nbv_v2_runs(runs, tmp_path):
    """NBV-v3 steps under NBV-v2's dynamics and adds an observation: its runs pair with NBV-v2
    baselines without --force, and the env id is shown, not compared."""
    import shutil
    v3 = tmp_path / "v3"
    shutil.copytree(runs / "v2", v3)
    for p in v3.glob("*/seed_*/result.json"):
        r = json.loads(p.read_text())
        r["nbv"]["env_id"] = "SpatialScout/NBV-v3"
        p.write_text(json.dumps(r))
    md = compare_reports([v3, runs / "frontier"])[0]
    assert "Forced comparison" not in md
    with pytest.raises(CompareError, match=r"NBV dynamics differs: v3: SpatialScout/NBV-v2, v1: SpatialScout/NBV-v1"):
        compare_reports([v3, runs / "v1"])


def test_nbv_env_is_for_nbv_agents_only(tmp_path, capsys):
    scene = tmp_path / "fake.json"
    scene.write_text(small_scene(32, 32).to_json())
    assert main(["run", "--agent", "origin", "--scene", str(scene), "--out", str(tmp_path / "o"),
                 "--nbv-env", "SpatialScout/NBV-v1"]) == 2
    assert "--nbv-env applies only to the NBV agents" in capsys.readouterr().err
    assert main(["run", "--agent", "random-nbv", "--scene", str(scene), "--out", str(tmp_path / "r"),
                 "--nbv-env", "SpatialScout/NBV-v7"]) == 2
    assert "--nbv-env must be one of" in capsys.readouterr().err


def test_nbv_mapper_is_stated_recorded_and_compared(tmp_path, capsys):
    """``--nbv-mapper`` (the agent option ``mapper``) sets the mapper of baselines and policies alike;
    evaluate.json and each episode's nbv block record it, and compare refuses runs whose mappers
    differ. The CLI refuses an unknown mapper and a non-NBV agent."""
    scene = tmp_path / "fake.json"
    scene.write_text(small_scene(32, 32, scene_id="fake-mapper").to_json())
    dirs = {}
    for name, agent, options in (("surface", "frontier-nbv", {"mapper": "oracle-surface"}),
                                 ("centre", "frontier-nbv", {}),
                                 ("policy", "ppo:models/nbv_ppo_v3", {"mapper": "oracle-surface"})):
        dirs[name] = tmp_path / name
        summary = evaluate(dirs[name], EvalSettings(agent, 4, None, 32, options), [str(scene)], seeds=1,
                           workers=1, progress=False, renderer_factory=FakeRenderer, write_report=False)
        assert summary.ran == 1 and not summary.failed, summary.failed
    for name, want in (("surface", "oracle-surface"), ("centre", "oracle"), ("policy", "oracle-surface")):
        result = json.loads(next(dirs[name].glob("*/seed_0/result.json")).read_text())
        assert result["nbv"]["mapper"] == want, name
    assert json.loads((dirs["surface"] / "evaluate.json").read_text())["agent_options"]["mapper"] == "oracle-surface"
    with pytest.raises(CompareError, match="NBV mapper differs: surface: oracle-surface, centre: oracle"):
        compare_reports([dirs["surface"], dirs["centre"]])
    assert main(["run", "--agent", "origin", "--scene", str(scene), "--out", str(tmp_path / "o"),
                 "--nbv-mapper", "oracle"]) == 2
    assert "--nbv-mapper applies only to the NBV agents" in capsys.readouterr().err
    assert main(["run", "--agent", "random-nbv", "--scene", str(scene), "--out", str(tmp_path / "r"),
                 "--nbv-mapper", "surface"]) == 2
    assert "--nbv-mapper must be one of oracle, oracle-surface" in capsys.readouterr().err
