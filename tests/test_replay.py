"""``spatialscout replay``: snapshots scored from traces; the last point is the final score."""

from __future__ import annotations

import json

import numpy as np
import pytest

from fakes import FakeRenderer, small_scene
from spatialscout_gym.cli.main import main
from spatialscout_gym.eval.running.replay import LAMBDAS_M, replay_episode, write_replay
from spatialscout_gym.eval.pages.report import write_report
from spatialscout_gym.eval.running.runner import run_episode


class StepwiseAgent:
    """Submits one target per call (noisy true centres from the privileged spec), capturing an
    image between submissions; leaves the last target out."""

    name = "stepwise"
    privileged = True

    def run(self, episode, *, rng, privileged):
        boxes = {t.id: t.center_task for t in privileged.spec.targets}
        for tid in episode.inventory_ids[:-1]:
            episode.capture_image()
            episode.submit_positions({tid: (np.asarray(boxes[tid]) + rng.normal(0, 0.05, 3)).tolist()})
        episode.finish_mapping()


@pytest.fixture()
def run_dirs(tmp_path):
    out = tmp_path / "ev"
    for k, yaw in enumerate((10.0, 50.0)):
        spec = small_scene(32, 32, yaw_deg=yaw, scene_id=f"fake-{k}")
        run_episode(StepwiseAgent(), spec, out / f"fake-{k}" / "seed_0", seed=k,
                    renderer=FakeRenderer(spec, 32, 32), resolution=32)
    return out


def test_episode_curve_ends_at_the_final_score(run_dirs):
    d = run_dirs / "fake-0" / "seed_0"
    curve = replay_episode(d).to_dict()
    result = json.loads((d / "result.json").read_text())
    pts = curve["points"]
    assert len(pts) == 1 + 3                     # the empty start map, then three submissions
    assert pts[0]["coverage"] == 0.0 and pts[0]["loss_m"]["10"] == 10.0   # empty map scores lambda
    assert [p["coverage"] for p in pts] == [0.0, 0.25, 0.5, 0.75]
    assert [p["images"] for p in pts] == [1, 2, 3, 4]
    assert pts[-1]["all_mean_iou"] == pytest.approx(result["all"]["mean_iou"])
    assert pts[-1]["coverage"] == pytest.approx(result["coverage"])
    assert pts[-1]["loss_m"]["5"] == pytest.approx(result["full_scene_loss_m"])
    assert curve["x_calls"] == "tool_calls"
    assert all(a["calls"] < b["calls"] for a, b in zip(pts, pts[1:]))


def test_pooled_curves_end_at_the_report_and_plots_are_written(run_dirs, capsys):
    report = write_report(run_dirs)
    assert main(["replay", str(run_dirs)]) == 0
    assert "replayed 2 episode(s), 6 map snapshot(s)" in capsys.readouterr().out
    data = json.loads((run_dirs / "replay" / "replay.json").read_text())
    om = report.object_micro
    for axis in ("calls", "images"):
        p = data["pooled"][axis]
        assert p["all_mean_iou"][-1] == pytest.approx(om["all"]["mean_iou"])
        assert p["coverage"][-1] == pytest.approx(om["coverage"])
        assert p["loss_m"]["5"][-1] == pytest.approx(om["full_scene_loss_m"])
        assert np.all(np.diff(p["coverage"]) >= 0)   # maps only grow here
        assert set(p["loss_m"]) == {f"{lam:g}" for lam in LAMBDAS_M}
    # loss grows with lambda while coverage < 1
    final = data["final"]["loss_m"]
    assert final["1"] < final["2"] < final["5"] < final["10"]
    for name in ("curves_calls.png", "curves_images.png", "loss_lambda.png"):
        assert (run_dirs / "replay" / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_replay_refuses_a_directory_without_traces(tmp_path, capsys):
    assert main(["replay", str(tmp_path)]) == 2
    assert "no run directory with a trace.jsonl" in capsys.readouterr().err


def test_index_html_links_report_and_curves(run_dirs):
    from spatialscout_gym.eval.pages.figures import write_index_html
    report = write_report(run_dirs)
    replay = write_replay(run_dirs)
    page = write_index_html(run_dirs, report, replay, {}).read_text()
    assert "replay/curves_calls.png" in page and "object-micro" in page and "Chair" in page


class FailingAgent:
    """Captures one image, then its model service goes down (the runner records a failed episode)."""

    name = "failing"
    privileged = False

    def run(self, episode, *, rng, privileged):
        episode.capture_image()
        raise RuntimeError("model service down")


@pytest.fixture()
def run_dirs_with_failure(run_dirs):
    spec = small_scene(32, 32, yaw_deg=80.0, scene_id="fake-2")
    result = run_episode(FailingAgent(), spec, run_dirs / "fake-2" / "seed_0", renderer=FakeRenderer(spec, 32, 32),
                         resolution=32)
    assert result["status"] == "failed" and not (run_dirs / "fake-2" / "seed_0" / "ground_truth.json").exists()
    return run_dirs


def test_replay_leaves_failed_episodes_out(run_dirs_with_failure, capsys):
    """A failed episode has a trace but no ground truth: replay skips it (as the report does)
    instead of refusing the whole evaluation."""
    report = write_report(run_dirs_with_failure)
    assert [f["run"] for f in report.failures] == ["fake-2/seed_0"]
    assert main(["replay", str(run_dirs_with_failure), "--no-plots"]) == 0
    assert "replayed 2 episode(s)" in capsys.readouterr().out
    data = json.loads((run_dirs_with_failure / "replay" / "replay.json").read_text())
    assert [e["key"] for e in data["episodes"]] == ["fake-0/seed_0", "fake-1/seed_0"]
    assert data["final"]["all_mean_iou"] == pytest.approx(report.object_micro["all"]["mean_iou"])
    # a failed run directory on its own: one clean error
    assert main(["replay", str(run_dirs_with_failure / "fake-2" / "seed_0")]) == 2
    assert "only failed episodes" in capsys.readouterr().err


@pytest.mark.render
def test_figures_skip_failed_episodes(run_dirs_with_failure):
    from spatialscout_gym.eval.pages.figures import write_run_figures
    figs = write_run_figures(run_dirs_with_failure, tile_px=48)
    assert sorted(figs) == ["fake-0/seed_0", "fake-1/seed_0"]
    for path in figs.values():
        assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
