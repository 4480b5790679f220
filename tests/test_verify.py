"""``spatialscout verify``: runs of the reference agents re-execute to the same records, and every
kind of tampering is caught at the right place; verified rows in ``report`` and ``leaderboard``."""

from __future__ import annotations

import json
import shutil

import pytest

from fakes import FakeRenderer, small_scene
from spatialscout_gym.cli.main import main
from spatialscout_gym.eval.running.evaluate import EvalSettings, evaluate
from spatialscout_gym.eval.verification.verify import verification_status, verify_dir

AGENTS = ("origin", "uniform-ball", "oracle-explorer", "oracle-click")


@pytest.fixture(scope="module")
def evals(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("verify")
    scenes = []
    for k in range(2):
        p = tmp / f"fake-{k}.json"
        p.write_text(small_scene(32, 32, yaw_deg=20.0 + 25 * k, scene_id=f"fake-{k}").to_json())
        scenes.append(str(p))
    for agent in AGENTS:
        evaluate(tmp / agent, EvalSettings(agent, 5, 20, 32), scenes, seeds=2, workers=1, progress=False,
                 renderer_factory=FakeRenderer)
    return tmp


def _run(evals, tmp_path, agent="oracle-explorer"):
    d = tmp_path / agent
    shutil.copytree(evals / agent, d)
    return d, d / "fake-1" / "seed_0"


def _lines(path):
    return path.read_text().splitlines(keepends=True)


def test_every_reference_agent_verifies(evals, capsys):
    assert main(["verify", *(str(evals / a) for a in AGENTS), "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert out.count(": verified") == 16 and "16 of 16 episode(s) verified" in out
    assert verification_status(evals / "oracle-explorer")["status"] == "verified"


def _verdict(d):
    return {c.key: c for c in verify_dir(d)}["fake-1/seed_0"]


def test_edited_predictions_are_caught(evals, tmp_path):
    d, run = _run(evals, tmp_path)
    pred = json.loads((run / "predictions.json").read_text())
    key = sorted(pred["positions"])[0]
    pred["positions"][key][2] += 1e-6      # above the 1e-9 tolerance
    (run / "predictions.json").write_text(json.dumps(pred))
    c = _verdict(d)
    assert c.status == "diverged" and c.detail.startswith(f"in predictions.json: positions, {key}[2], recorded")


def test_edited_result_is_caught(evals, tmp_path):
    d, run = _run(evals, tmp_path)
    res = json.loads((run / "result.json").read_text())
    res["submitted"]["gt_50"] = res["submitted"]["gt_50"] + 1e-6
    (run / "result.json").write_text(json.dumps(res))
    c = _verdict(d)
    assert c.status == "diverged" and c.detail.startswith("in result.json: submitted.gt_50, recorded")


def _tool_lines(run):
    return [i for i, line in enumerate(_lines(run / "trace.jsonl")) if json.loads(line)["event"] == "tool_call"]


def test_edited_trace_event_is_caught(evals, tmp_path):
    d, run = _run(evals, tmp_path)
    lines = _lines(run / "trace.jsonl")
    i = next(i for i in _tool_lines(run) if json.loads(lines[i])["tool"] == "submit_positions")
    e = json.loads(lines[i])
    key = sorted(e["args"]["positions"])[0]
    e["args"]["positions"][key][0] += 0.25
    lines[i] = json.dumps(e) + "\n"
    (run / "trace.jsonl").write_text("".join(lines))
    c = _verdict(d)
    assert c.detail.startswith(f"at event {i}: submit_positions, result.result.accepted_map.{key}[0], recorded")


def test_dropped_and_reordered_events_are_caught(evals, tmp_path):
    d, run = _run(evals, tmp_path)
    lines = _lines(run / "trace.jsonl")
    first, second = _tool_lines(run)[:2]
    (run / "trace.jsonl").write_text("".join(lines[:first] + lines[first + 1:]))
    c = _verdict(d)
    assert c.status == "diverged" and c.detail.startswith(f"at event {first}: ")
    lines[first], lines[second] = lines[second], lines[first]
    (run / "trace.jsonl").write_text("".join(lines))
    c = _verdict(d)
    n = int(c.detail.split(":")[0].split()[-1])
    assert c.status == "diverged" and c.detail.startswith("at event ") and first <= n <= second


def test_run_from_another_catalog_version_is_refused(evals, tmp_path, capsys):
    d, run = _run(evals, tmp_path)
    res = json.loads((run / "result.json").read_text())
    res["catalog_version"], res["scene_content_hash"] = "1.0", "0" * 64
    (run / "result.json").write_text(json.dumps(res))
    assert main(["verify", str(d), "--no-progress", "--json"]) == 1
    out = json.loads(capsys.readouterr().out)
    bad = [e for e in out["dirs"][str(d)] if e["status"] != "verified"]
    assert [e["episode"] for e in bad] == ["fake-1/seed_0"] and bad[0]["status"] == "refused"
    assert "recorded catalog version 1.0" in bad[0]["detail"] and "not the same scene" in bad[0]["detail"]


def test_verified_rows_in_report_and_leaderboard(evals, tmp_path, capsys):
    """``report`` and ``leaderboard`` verify for themselves: a run never checked by ``verify`` is
    verified on the page, one edited after ``verify`` wrote its verify.json is not."""
    good, _ = _run(evals, tmp_path, "oracle-explorer")
    bad, run = _run(evals, tmp_path, "origin")
    fresh = tmp_path / "uniform-ball"
    shutil.copytree(evals / "uniform-ball", fresh)
    (fresh / "verify.json").unlink(missing_ok=True)      # never checked by `verify`
    assert main(["verify", str(good), str(bad), "--no-progress"]) == 0
    res = json.loads((run / "result.json").read_text())
    res["all"]["mean_iou"] = 0.5                       # edited after verification: no longer verified
    (run / "result.json").write_text(json.dumps(res))
    assert main(["report", str(good), "--no-figures"]) == 0
    assert "Verified: **verified** (4 of 4" in (good / "report.md").read_text()
    site = tmp_path / "site"
    assert main(["leaderboard", str(good), str(bad), str(fresh), "--out", str(site), "--no-progress"]) == 0
    rows = json.loads((site / "leaderboard.json").read_text())["rows"]
    assert {r["agent"]: r["verified"] for r in rows.values()} == {
        "oracle-explorer": "verified", "origin": "diverged", "uniform-ball": "verified"}
    assert main(["verify", str(bad), "--no-progress"]) == 1
    capsys.readouterr()
    assert main(["leaderboard", str(good), str(bad), str(fresh), "--out", str(site), "--no-progress",
                 "--verified-only", "--overwrite"]) == 0
    board = json.loads((site / "leaderboard.json").read_text())
    assert [r["agent"] for r in board["rows"].values()] == ["oracle-explorer", "uniform-ball"]
    assert board["dropped_unverified"] == [str(bad)]
    assert verification_status(bad)["status"] == "diverged"


def test_a_scripted_model_run_verifies_and_its_model_events_are_skipped(tmp_path, capsys):
    """A model agent behind the real ``openai`` client on 127.0.0.1: its trace interleaves model
    events with the episode's; verify replays the tool calls alone."""
    from vlm_scripted import ScriptedServer
    from spatialscout_gym.baselines.registry import make_agent
    from spatialscout_gym.eval.running.runner import run_episode
    spec = small_scene(32, 32, scene_id="fake-room")
    (tmp_path / "fake-room.json").write_text(spec.to_json())
    ev = tmp_path / "model"
    ev.mkdir()
    (ev / "scenes.json").write_text(json.dumps({"fake-room": str(tmp_path / "fake-room.json")}))
    K = spec.public.intrinsics.scaled(32, 32)
    steps = [[("move_camera", {"right": 0.5}), ("capture_image", {})],
             [("triangulate_observations", {"observations": [{"frame_id": 0, "u": K.cx, "v": K.cy},
                                                             {"frame_id": 1, "u": K.cx - K.fx * 0.25, "v": K.cy}]})],
             [("submit_positions", {"positions": {"chair_1": [2.0, 0.0, 0.0], "lamp_1": [0.0, 9.0, 0.0]}})],
             [("finish_mapping", {})]]
    with ScriptedServer(lambda step, body, fmt: steps[step] if step < len(steps) else []) as server:
        agent = make_agent("openai:scripted", base_url=server.openai_url, api_key="local", model_call_budget=10)
        result = run_episode(agent, spec, ev / "fake-room" / "seed_0", image_budget=3, resolution=32,
                             renderer=FakeRenderer(spec))
    assert result["model"]["model_calls"] == 4
    kinds = {json.loads(line)["event"] for line in _lines(ev / "fake-room" / "seed_0" / "trace.jsonl")}
    assert kinds - {"start", "capture", "tool_call", "map", "end"}          # model events are there
    assert main(["verify", str(ev), "--no-progress"]) == 0
    assert "fake-room/seed_0: verified" in capsys.readouterr().out


def test_images_are_re_rendered_and_compared_or_declared_not_comparable(evals, tmp_path, capsys):
    """``--images`` re-renders with SAPIEN (lavapipe here): a SAPIEN run matches frame by frame, an
    edited frame hash is caught, a run drawn by another renderer is 'not comparable' (not a
    failure), and a run without frame hashes says so."""
    d = tmp_path / "sapien"
    assert main(["evaluate", "--agent", "oracle-explorer", "--scenes", "procedural:1", "--image-budget", "3",
                 "--resolution", "32", "--out", str(d)]) == 0
    capsys.readouterr()
    assert main(["verify", str(d), "--images", "--no-progress"]) == 0
    assert "procedural_1/seed_0: verified (images: match)" in capsys.readouterr().out
    hashes = d / "procedural_1" / "seed_0" / "frames" / "sha256.json"
    h = json.loads(hashes.read_text())
    assert h["renderer"]["renderer"] == "SapienRenderer" and h["renderer"]["sapien"] and len(h["rgb_sha256"]) == 3
    import hashlib
    import numpy as np
    from PIL import Image
    png = d / "procedural_1" / "seed_0" / "frames" / "frame_002.png"
    pixels = np.asarray(Image.open(png).convert("RGB")).copy()
    pixels[0, 0] ^= 1                      # a forged frame with its hash forged to match
    Image.fromarray(pixels).save(png)
    h["rgb_sha256"]["2"] = forged = hashlib.sha256(pixels.tobytes()).hexdigest()
    hashes.write_text(json.dumps(h))
    assert main(["verify", str(d), "--no-progress"]) == 0        # the files agree with each other
    assert main(["verify", str(d), "--images", "--no-progress"]) == 1
    assert f"diverged in frames/sha256.json: frame 2, recorded {forged[:12]} vs re-rendered" in capsys.readouterr().out
    fake, _ = _run(evals, tmp_path, "origin")                        # drawn by the test's FakeRenderer
    assert main(["verify", str(fake), "--images", "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert "verified (images: not comparable: recorded with {\"renderer\": \"FakeRenderer\"}" in out
    for p in fake.glob("*/seed_*/frames/sha256.json"):
        p.unlink()
    assert main(["verify", str(fake), "--images", "--no-progress"]) == 1      # frames no longer checkable
    assert "diverged in frames/sha256.json: missing" in capsys.readouterr().out


def test_images_a_model_received_are_re_encoded_and_compared(tmp_path, capsys):
    """A scripted model run rendered with SAPIEN: ``delivered_sha256.json`` holds the SHA-256 of
    each JPEG the model received; ``--images`` re-renders, re-encodes and compares them."""
    from vlm_scripted import ScriptedServer
    from spatialscout_gym.baselines.registry import make_agent
    from spatialscout_gym.eval.running.runner import run_episode
    from spatialscout_gym.scenes.catalog import scene_by_name
    spec = scene_by_name("procedural:1")
    steps = [[("move_camera", {"right": 0.5}), ("capture_image", {})], [("finish_mapping", {})]]
    run = tmp_path / "ev" / "procedural_1" / "seed_0"
    with ScriptedServer(lambda step, body, fmt: steps[step] if step < len(steps) else []) as server:
        agent = make_agent("openai:scripted", base_url=server.openai_url, api_key="local", model_call_budget=5)
        assert run_episode(agent, spec, run, image_budget=3, resolution=32)["status"] == "ok"
    rec = json.loads((run / "delivered_sha256.json").read_text())
    assert sorted(rec["jpeg_sha256"]) == ["0", "1"] and rec["max_side_px"] == 384
    assert main(["verify", str(tmp_path / "ev"), "--images", "--no-progress"]) == 0
    assert "verified (images: match, 2 delivered images too)" in capsys.readouterr().out
    rec["jpeg_sha256"]["1"] = "f" * 64
    (run / "delivered_sha256.json").write_text(json.dumps(rec))
    assert main(["verify", str(tmp_path / "ev"), "--images", "--no-progress"]) == 1
    assert "diverged in delivered_sha256.json: frame 1, recorded ffffffffffff vs re-encoded" in capsys.readouterr().out


def _targets_on_the_start_camera(spec):
    """``spec`` with every target moved so that its box is centred on the initial camera."""
    import dataclasses
    from spatialscout_gym.core.spec import SceneSpec
    cam = spec.public.initial_camera.position_world
    objects = []
    for o in spec.private.objects:
        if o.role == "target":
            lo, hi = o.aabb_world
            shift = cam - (lo + hi) / 2
            o = dataclasses.replace(o, parts=[dataclasses.replace(p, position_world=p.position_world + shift)
                                              for p in o.parts])
        objects.append(o)
    return SceneSpec.from_objects(spec.scene_id, objects, spec.public.initial_camera, spec.public.intrinsics,
                                  spec.private.lights, ambient_light=spec.private.ambient_light,
                                  source=spec.private.source, description=spec.public.description)


def test_a_spec_file_claiming_a_catalog_id_is_refused(tmp_path, capsys):
    """A copy of Kitchen_01's spec with every target on the start camera, evaluated with ``origin``
    (which then scores 100%) and filed as ``Kitchen_01/``: its scene is not catalog v3.1's
    Kitchen_01, so verify refuses it at that episode, and no page shows it verified."""
    from spatialscout_gym.scenes.catalog import load_scene, manifest, scene_content_hash
    forged = _targets_on_the_start_camera(load_scene("Kitchen_01"))
    spec_file = tmp_path / "kitchen_copy.json"
    spec_file.write_text(forged.to_json())
    ev = tmp_path / "origin"
    evaluate(ev, EvalSettings("origin", 1, 20, 32), [str(spec_file)], seeds=1, workers=1, progress=False,
             renderer_factory=FakeRenderer)
    (ev / "kitchen_copy").rename(ev / "Kitchen_01")
    (ev / "scenes.json").write_text(json.dumps({"Kitchen_01": str(spec_file)}))
    (ev / "planned.json").write_text(json.dumps({"episodes": ["Kitchen_01/seed_0"]}))
    result = json.loads((ev / "Kitchen_01" / "seed_0" / "result.json").read_text())
    assert result["scene_id"] == "Kitchen_01" and result["all"]["mean_iou"] > 0.99   # the forged score
    capsys.readouterr()
    assert main(["verify", str(ev), "--no-progress", "--json"]) == 1
    ep = json.loads(capsys.readouterr().out)["dirs"][str(ev)][0]
    catalog = {r["scene_id"]: r["content_hash"] for r in manifest("3.1")["scenes"]}["Kitchen_01"]
    assert ep["episode"] == "Kitchen_01/seed_0" and ep["status"] == "refused", ep
    assert "is a catalog id, but this run's scene is not catalog v3.1's Kitchen_01" in ep["detail"]
    assert catalog in ep["detail"] and scene_content_hash(forged) in ep["detail"] and "\n" not in ep["detail"]
    assert verification_status(ev)["status"] == "diverged"
    assert main(["report", str(ev), "--no-figures"]) == 0
    report = json.loads((ev / "report.json").read_text())
    assert report["scene_sources"]["Kitchen_01"] == {"source": "spec file", "content_hash": result["scene_content_hash"]}
    assert ("1 scene(s) from spec files, not catalog scenes: Kitchen_01 (content hash "
            f"{result['scene_content_hash'][:16]})") in (ev / "report.md").read_text()
    assert "Verified: **diverged**" in (ev / "report.md").read_text()
    site = tmp_path / "site"
    assert main(["leaderboard", str(ev), "--out", str(site), "--no-progress"]) == 0
    row = next(iter(json.loads((site / "leaderboard.json").read_text())["rows"].values()))
    assert row["verified"] == "diverged" and row["scene_sources"]["Kitchen_01"]["source"] == "spec file"
    assert "scene(s) from spec files, not catalog scenes: Kitchen_01" in (site / "leaderboard.md").read_text()
