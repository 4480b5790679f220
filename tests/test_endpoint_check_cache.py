"""Each model's endpoint is checked before its first scene whatever the request cache holds, and a
cache replay needs no endpoint (docs/models.md, "Request cache and the endpoint check"): a presets
file whose second model has a wrong ``--base-url`` is refused in one line before that model's first
scene although the shared cache is full; ``--offline`` replays without an endpoint; after a refused
reasoning effort every worker of a replay sends the requests the cached run sent (the effort
answer is settled from the cache), so the replay is offline whatever the number of workers and
whichever scene asks first. Real ``openai`` client against the scripted server on 127.0.0.1; fake
renderer at 32 px."""

from __future__ import annotations

import json
import socket

import pytest

from fakes import FakeRenderer, small_scene
from vlm_scripted import ScriptedServer, capture_finish
from spatialscout_gym.cli.main import main


@pytest.fixture
def fake_render(monkeypatch):
    """``evaluate`` as the CLI calls it, with the fake renderer in its workers."""
    import spatialscout_gym.eval.running.evaluate as ev
    real = ev.evaluate
    monkeypatch.setattr(ev, "evaluate", lambda *a, **k: real(*a, **{**k, "renderer_factory": FakeRenderer}))


def _closed_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def _scenes(tmp_path, n):
    out = []
    for i in range(n):
        path = tmp_path / f"room_{i}.json"
        path.write_text(small_scene(32, 32, yaw_deg=20.0 * i, scene_id=f"room-{i}").to_json())
        out.append(str(path))
    return out


def test_a_wrong_base_url_is_refused_before_its_first_scene_with_a_full_shared_cache(tmp_path, fake_render,
                                                                                        capsys):
    scene = _scenes(tmp_path, 1)
    wrong = f"http://127.0.0.1:{_closed_port()}/v1"
    common = ["--scenes", *scene, "--resolution", "32", "--image-budget", "4", "--no-progress"]
    with ScriptedServer(capture_finish) as server:
        presets = tmp_path / "models.toml"
        presets.write_text(f"""
[models.good]
agent = "openai:scripted"
base_url = "{server.openai_url}"
request_cache = "cache"

[models.wrong]
agent = "openai:scripted"
base_url = "{wrong}"
request_cache = "cache"
""")
        code = main(["evaluate", "--models", str(presets), "--out", str(tmp_path / "p"), "--api-key", "x", *common])
    out, err = capsys.readouterr()
    assert any((tmp_path / "cache").glob("*.json"))                  # the cache held responses when checked
    assert (tmp_path / "p" / "good" / "room_0" / "seed_0" / "result.json").is_file()
    assert code == 2 and len(err.strip().splitlines()) == 1 and f"cannot reach {wrong} " in err, err
    assert not (tmp_path / "p" / "wrong" / "room_0").exists()      # refused before its first scene
    assert "endpoint check skipped" not in out

    # --offline replays the cache with the endpoint gone, and needs a cache
    again = ["evaluate", "--agent", "openai:scripted", "--base-url", wrong, "--api-key", "x", *common]
    assert main([*again, "--out", str(tmp_path / "off"), "--request-cache", str(tmp_path / "cache"),
                 "--offline"]) == 0
    result = json.loads((tmp_path / "off" / "room_0" / "seed_0" / "result.json").read_text())
    assert result["status"] == "ok" and result["model"]["request_cache"]["live_calls"] == 0
    assert main([*again, "--out", str(tmp_path / "none"), "--offline"]) == 2
    assert "--offline needs --request-cache" in capsys.readouterr().err


def _settings(url, cache, **runtime):
    from spatialscout_gym.eval.running.evaluate import EvalSettings
    return EvalSettings("openai:scripted", 4, None, 32, agent_options={"model_call_budget": 4, "request_cache": str(cache)},
                        runtime_options={"base_url": url, "api_key": "x", **runtime})


def test_a_replay_after_a_refused_effort_is_offline_whatever_the_workers(tmp_path):
    """The cached run's first asker (either scene, 2 workers) is not the replay's: each scene replayed
    alone asks first in its own run, and each is answered from the cache with nothing sent."""
    from spatialscout_gym.eval.running.evaluate import evaluate
    scenes, cache = _scenes(tmp_path, 2), tmp_path / "cache"
    with ScriptedServer(capture_finish, refuse_params={"reasoning_effort"}) as server:
        first = evaluate(tmp_path / "live", _settings(server.openai_url, cache), scenes, workers=2, progress=False,
                         renderer_factory=FakeRenderer)
        url = server.openai_url
        assert len(server.refused_requests) == 1
    assert first.ran == 2 and not first.failed
    # the server is gone; offline: a request the cache cannot answer would fail its episode
    runs = {"both": scenes, "room_0": scenes[:1], "room_1": scenes[1:]}
    for name, subset in runs.items():
        again = evaluate(tmp_path / name, _settings(url, cache, offline=True), subset, workers=2, progress=False,
                         renderer_factory=FakeRenderer)
        assert again.ran == len(subset) and not again.failed, (name, [o.error for o in again.failed])
        assert json.loads((tmp_path / name / "reasoning_effort.json").read_text())["refused"].keys() == {
            "reasoning_effort"}
    for k in range(2):
        live = json.loads((tmp_path / "live" / f"room_{k}" / "seed_0" / "result.json").read_text())
        for name in ("both", f"room_{k}"):
            off = json.loads((tmp_path / name / f"room_{k}" / "seed_0" / "result.json").read_text())
            assert off["model"]["request_cache"]["live_calls"] == 0 and off["all"] == live["all"]
