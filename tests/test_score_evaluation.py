"""``spatialscout score DIR`` on an evaluation directory scores it: every episode a row (seeds of
one scene included, each named by its folder), pooled over all of them as ``leaderboard`` pools;
two folders holding different scenes under one id are still refused. Fake scenes and pixels."""

from __future__ import annotations

import json
import shutil

import pytest

from fakes import FakeRenderer, small_scene
from spatialscout_gym.cli.main import main
from spatialscout_gym.eval.running.evaluate import EvalSettings, evaluate


@pytest.fixture(scope="module")
def evaluation(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("score_eval")
    scenes = []
    for k in range(2):
        p = tmp / f"fake-{k}.json"
        p.write_text(small_scene(32, 32, yaw_deg=20.0 + 25 * k, scene_id=f"fake-{k}").to_json())
        scenes.append(str(p))
        summary = evaluate(tmp / "ev", EvalSettings("uniform-ball", 5, 20, 32), scenes, seeds=2, progress=False,
                       renderer_factory=FakeRenderer, write_report=False)
    assert summary.total == 4 and not summary.failed
    # one seed's map at the true centres (score reads predictions.json): the seeds score apart
    run = tmp / "ev" / "fake-0" / "seed_1"
    truth = json.loads((run / "ground_truth.json").read_text())
    (run / "predictions.json").write_text(json.dumps({"positions": {t["id"]: t["center"] for t in truth["targets"]}}))
    return tmp / "ev"


def _score(capsys, *argv) -> tuple[int, dict | str]:
    capsys.readouterr()
    code = main(["score", *argv, "--json"])
    out, err = capsys.readouterr()
    return code, (json.loads(out) if code == 0 else err)


def test_an_evaluation_directory_is_scored_per_episode_and_pooled(evaluation, capsys):
    code, board = _score(capsys, str(evaluation))
    assert code == 0, board
    episodes = sorted(p.parent.relative_to(evaluation).as_posix() for p in evaluation.rglob("result.json"))
    assert sorted(board["scenes"]) == episodes and len(episodes) == 4      # fake-0/seed_0, ... one row each
    # pooled over every target of every episode: each seed folder scored alone, summed by hand
    alone = {e: _score(capsys, str(evaluation / e))[1]["object_micro"] for e in episodes}
    targets = sum(m["num_targets"] for m in alone.values())
    pooled = sum(m["all"]["mean_iou"] * m["num_targets"] for m in alone.values()) / targets
    assert board["object_micro"]["num_targets"] == targets
    assert board["object_micro"]["all"]["mean_iou"] == pytest.approx(pooled, abs=1e-12)
    assert len({round(m["all"]["mean_iou"], 9) for m in alone.values()}) > 1     # the seeds differ
    assert main(["score", str(evaluation)]) == 0
    assert "4 scene(s)" in capsys.readouterr().out


def test_two_folders_with_different_scenes_under_one_id_are_refused(evaluation, tmp_path, capsys):
    other = tmp_path / "ev"
    shutil.copytree(evaluation, other)
    gt = other / "fake-1" / "seed_1" / "ground_truth.json"
    truth = json.loads(gt.read_text())
    truth["radius_m"] += 1.0          # another scene's extent under the same id
    gt.write_text(json.dumps(truth))
    code, err = _score(capsys, str(other))
    assert code == 2 and "scene id 'fake-1' names another scene" in err, err
