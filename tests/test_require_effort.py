"""``--require-effort``: a service that refuses the reasoning effort fails the run in one line (exit
2) instead of the run going on without it (docs/models.md). Real ``openai`` client against the
scripted server on 127.0.0.1; the fake renderer keeps each episode well under a second."""

from __future__ import annotations

import json

from fakes import FakeRenderer, small_scene
from vlm_scripted import ScriptedServer, capture_finish
from spatialscout_gym.cli.main import main


def test_run_with_require_effort_fails_in_one_line_against_a_refusing_server(tmp_path, capsys):
    scene = tmp_path / "room.json"
    scene.write_text(small_scene(32, 32).to_json())
    with ScriptedServer(capture_finish, refuse_params={"reasoning_effort"}) as server:
        code = main(["run", "--agent", "openai:scripted", "--base-url", server.openai_url, "--api-key", "x",
                     "--scene", str(scene), "--out", str(tmp_path / "r"), "--resolution", "32",
                     "--image-budget", "4", "--call-budget", "4", "--require-effort"])
        refused, answered = list(server.refused_requests), list(server.requests)
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and "--require-effort" in err[0] and "reasoning_effort" in err[0]
    assert len(refused) == 1 and answered == []          # never resent without the effort
    result = json.loads((tmp_path / "r" / "result.json").read_text())
    assert result["status"] == "failed" and result["error_type"] == "EffortRefusedError"


def test_evaluate_with_require_effort_stops_at_the_first_refusal(tmp_path, capsys):
    scenes = []
    for i in range(3):
        path = tmp_path / f"room_{i}.json"
        path.write_text(small_scene(32, 32, scene_id=f"room-{i}").to_json())
        scenes.append(str(path))
    from spatialscout_gym.eval.running.evaluate import BatchStoppedError, EvalSettings, evaluate
    with ScriptedServer(capture_finish, refuse_params={"reasoning_effort"}) as server:
        settings = EvalSettings("openai:scripted", 4, None, 32,
                                agent_options={"model_call_budget": 4, "require_effort": True},
                                runtime_options={"base_url": server.openai_url, "api_key": "x"})
        try:
            evaluate(tmp_path / "ev", settings, scenes, progress=False, renderer_factory=FakeRenderer)
            raise AssertionError("the evaluation went on without the required effort")
        except BatchStoppedError as exc:
            message = str(exc)
        assert len(server.refused_requests) == 1 and server.requests == []
    assert "EffortRefusedError" in message and "\n" not in message
    for k in (1, 2):   # an episode the pool had started already read the evaluation's record: no request
        path = tmp_path / "ev" / f"room_{k}" / "seed_0" / "result.json"
        assert not path.exists() or json.loads(path.read_text())["error_type"] == "EffortRefusedError"


def test_without_require_effort_the_run_goes_on(tmp_path):
    scene = tmp_path / "room.json"
    scene.write_text(small_scene(32, 32).to_json())
    with ScriptedServer(capture_finish, refuse_params={"reasoning_effort"}) as server:
        code = main(["run", "--agent", "openai:scripted", "--base-url", server.openai_url, "--api-key", "x",
                     "--scene", str(scene), "--out", str(tmp_path / "r"), "--resolution", "32",
                     "--image-budget", "4", "--call-budget", "4"])
        assert len(server.requests) == 2
    assert code == 0
