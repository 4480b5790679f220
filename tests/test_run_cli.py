"""``run_episode`` and ``spatialscout run``: run directories, agents, and agreement with
``spatialscout score`` on the run directory."""

from __future__ import annotations

import json

import numpy as np
import pytest

from fakes import FakeRenderer, small_scene
from spatialscout_gym.baselines.registry import UnknownAgentError, known_agents, make_agent
from spatialscout_gym.cli.main import main
from spatialscout_gym.eval.running.runner import run_episode

RUN_FILES = {"trace.jsonl", "predictions.json", "result.json", "ground_truth.json", "entity_library.json"}


def score_json(capsys, path) -> dict:
    capsys.readouterr()
    assert main(["score", str(path), "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_registry_lists_known_agents():
    from spatialscout_gym.baselines.base import Agent
    assert isinstance(make_agent("origin"), Agent) and not make_agent("uniform-ball").privileged
    assert {"origin", "uniform-ball"} <= set(known_agents())
    with pytest.raises(UnknownAgentError, match="known agents: .*origin"):
        make_agent("telepath")


def test_run_episode_origin_files_and_score(tmp_path, capsys):
    spec = small_scene(32, 32)
    out = tmp_path / "run"
    result = run_episode(make_agent("origin"), spec, out, renderer=FakeRenderer(spec), resolution=32)
    assert RUN_FILES <= {p.name for p in out.iterdir()}
    assert sorted(p.name for p in (out / "frames").iterdir()) == ["frame_000.png", "sha256.json"]
    hashes = json.loads((out / "frames" / "sha256.json").read_text())  # what verify --images compares
    assert list(hashes["rgb_sha256"]) == ["0"] and hashes["renderer"]["renderer"] == "FakeRenderer"
    preds = json.loads((out / "predictions.json").read_text())["positions"]
    assert preds == {e.id: [0.0, 0.0, 0.0] for e in spec.public.inventory}
    assert result["end_reason"] == "finish_mapping" and result["coverage"] == 1.0
    assert json.loads((out / "result.json").read_text()) == result
    scored = score_json(capsys, out)["scenes"][spec.scene_id]
    assert scored["all"]["mean_iou"] == pytest.approx(result["all"]["mean_iou"])
    assert scored["full_scene_loss_m"] == pytest.approx(result["full_scene_loss_m"])
    events = [json.loads(line)["event"] for line in (out / "trace.jsonl").read_text().splitlines()]
    assert events[0] == "start" and events[-1] == "end" and "map" in events
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]  # no temp dir left


def test_uniform_ball_seeded_and_within_radius(tmp_path):
    spec = small_scene(32, 32)
    r = [run_episode(make_agent("uniform-ball"), spec, tmp_path / f"s{i}", seed=s,
                     renderer=FakeRenderer(spec), resolution=32) for i, s in enumerate([4, 4, 5])]
    p = [json.loads((tmp_path / f"s{i}" / "predictions.json").read_text())["positions"] for i in range(3)]
    assert p[0] == p[1] and p[0] != p[2]
    norms = np.linalg.norm(np.array(list(p[2].values())), axis=1)
    assert np.all(norms <= spec.public.radius_m + 1e-9) and r[2]["coverage"] == 1.0


def test_existing_run_dir_is_refused(tmp_path):
    spec = small_scene(32, 32)
    out = tmp_path / "run"
    out.mkdir()
    (out / "keep.txt").write_text("x")
    with pytest.raises(FileExistsError, match="not empty"):
        run_episode(make_agent("origin"), spec, out, renderer=FakeRenderer(spec), resolution=32)
    assert (out / "keep.txt").exists()


@pytest.mark.render
def test_cli_run_origin_end_to_end(tmp_path, capsys):
    out = tmp_path / "cli-run"
    code = main(["run", "--agent", "origin", "--scene", "procedural:11", "--out", str(out),
                 "--resolution", "64", "--image-budget", "5"])
    printed = capsys.readouterr().out
    assert code == 0 and "all-target mean IoU" in printed and str(out) in printed
    assert RUN_FILES <= {p.name for p in out.iterdir()} and (out / "frames" / "frame_000.png").exists()
    result = json.loads((out / "result.json").read_text())
    assert result["agent"] == "origin" and result["scene_content_hash"]
    scored = score_json(capsys, out)["scenes"][result["scene_id"]]
    assert scored["all"]["mean_iou"] == pytest.approx(result["all"]["mean_iou"])
    assert scored["coverage"] == pytest.approx(result["coverage"]) == 1.0


def test_cli_run_unknown_agent_is_one_line_error(tmp_path, capsys):
    code = main(["run", "--agent", "nobody", "--scene", "procedural:1", "--out", str(tmp_path / "x")])
    err = capsys.readouterr().err
    assert code == 2 and "unknown agent 'nobody'" in err and err.count("\n") == 1


@pytest.mark.render
def test_result_carries_the_catalog_version_and_the_manifest_hash(tmp_path):
    from spatialscout_gym.scenes.catalog import CATALOG_VERSION, manifest
    out = tmp_path / "k1"
    assert main(["run", "--agent", "origin", "--scene", "Kitchen_01", "--out", str(out),
                 "--resolution", "32", "--image-budget", "2"]) == 0
    result = json.loads((out / "result.json").read_text())
    frozen = {s["scene_id"]: s["content_hash"] for s in manifest()["scenes"]}
    assert result["catalog_version"] == CATALOG_VERSION
    assert result["scene_content_hash"] == frozen["Kitchen_01"]


@pytest.mark.render
def test_catalog_option_runs_the_v1_scene_and_the_result_names_it(tmp_path, monkeypatch):
    from spatialscout_gym.scenes.catalog import CATALOG_ENV, manifest
    monkeypatch.setenv(CATALOG_ENV, "2.0")
    monkeypatch.delenv(CATALOG_ENV)   # recorded: teardown undoes what --catalog sets
    out = tmp_path / "k1v1"
    assert main(["run", "--agent", "origin", "--scene", "Kitchen_01", "--catalog", "1.0", "--out", str(out),
                 "--resolution", "32", "--image-budget", "2"]) == 0
    result = json.loads((out / "result.json").read_text())
    assert result["catalog_version"] == "1.0"
    v1 = {s["scene_id"]: s["content_hash"] for s in manifest("1.0")["scenes"]}
    v2 = {s["scene_id"]: s["content_hash"] for s in manifest("2.0")["scenes"]}
    assert result["scene_content_hash"] == v1["Kitchen_01"] != v2["Kitchen_01"]
