"""A lab's journey with two models (docs/models.md): one presets file -> ``evaluate --estimate``
(no model called) -> ``evaluate --models`` with a spending cap on one model (it stops there, the
other completes) -> ``leaderboard --watch`` (progress, spend, state) -> ``leaderboard`` (the page).
Two scripted servers on 127.0.0.1 with the real ``openai`` client; 32 px scenes, the fake renderer
in the evaluations, a few calls each."""

from __future__ import annotations

import json
import re

from fakes import FakeRenderer, small_scene
from vlm_scripted import ScriptedServer, capture_submit_finish
from spatialscout_gym.cli.main import main


def test_presets_estimate_capped_evaluation_watch_and_leaderboard(tmp_path, monkeypatch, capsys):
    import spatialscout_gym.eval.running.evaluate as ev
    real = ev.evaluate
    monkeypatch.setattr(ev, "evaluate", lambda *a, **k: real(*a, **{**k, "renderer_factory": FakeRenderer}))
    monkeypatch.setenv("ALPHA_KEY", "alpha-secret")
    monkeypatch.setenv("BETA_KEY", "beta-secret")
    scenes = []
    for i in range(2):
        path = tmp_path / f"room_{i}.json"
        path.write_text(small_scene(32, 32, scene_id=f"room-{i}").to_json())
        scenes.append(str(path))
    out = tmp_path / "lab"
    common = ["--scenes", *scenes, "--out", str(out), "--resolution", "32", "--image-budget", "4",
              "--call-budget", "5", "--no-progress"]
    with ScriptedServer(capture_submit_finish) as alpha, ScriptedServer(capture_submit_finish) as beta:
        presets = tmp_path / "models.toml"
        presets.write_text(f"""
[models.alpha]
agent = "openai:alpha-1"
base_url = "{alpha.openai_url}"
api_key_env = "ALPHA_KEY"
price = {{ input_per_mtok = 10.0, output_per_mtok = 40.0 }}
max_cost_usd = 5.0
tokens_per_minute = 1000000

[models.beta]
agent = "openai:beta-1"
base_url = "{beta.openai_url}"
api_key_env = "BETA_KEY"
price = {{ input_per_mtok = 10.0, output_per_mtok = 40.0 }}
max_cost_usd = 0.04
""")
        # 1. the estimate: a range per model, nothing sent
        assert main(["evaluate", "--models", str(presets), "--estimate", *common]) == 0
        lines = [x for x in capsys.readouterr().out.splitlines() if re.match(r"openai:(alpha|beta)-1: 2 episodes", x)]
        assert len(lines) == 2 and alpha.http_requests == beta.http_requests == 0
        high = float(re.search(r"2 episodes, \$[0-9.]+ - \$([0-9.]+)", lines[0]).group(1))
        # 2. both models; beta's cap (a call is about $0.012) stops it inside its second episode
        assert main(["evaluate", "--models", str(presets), *common]) == 1
        printed = capsys.readouterr().out
        assert "stopped: the spend reached --max-cost-usd 0.04" in printed
        assert alpha.http_requests == 6 and beta.http_requests == 4
    alpha_spend = json.loads((out / "alpha" / "spend.json").read_text())["usd"]
    assert 0 < alpha_spend <= high
    beta = [json.loads((out / "beta" / f"room_{k}" / "seed_0" / "result.json").read_text()) for k in range(2)]
    assert beta[0]["status"] == "ok" and beta[1]["error_type"] == "CostCapReached"
    for name in ("alpha", "beta"):
        recorded = (out / name / "evaluate.json").read_text()
        assert "secret" not in recorded and json.loads(recorded)["agent_options"]["max_cost_usd"] > 0
    # 3. progress: none is running any more, so one table
    assert main(["leaderboard", str(out / "alpha"), str(out / "beta"), "--watch", "--interval", "0.01"]) == 0
    rows = {line.split()[0]: line.split() for line in capsys.readouterr().out.splitlines()
            if line.startswith(("alpha", "beta"))}
    assert rows["alpha"][1] == "2/2" and rows["alpha"][-1] == "complete"
    assert rows["beta"][1] == "1/2" and rows["beta"][2] == "1" and rows["beta"][-1] == "stopped"
    # 4. the page over both
    site = tmp_path / "site"
    assert main(["leaderboard", str(out / "alpha"), str(out / "beta"), "--out", str(site), "--no-progress",
                 "--force"]) == 0
    board = json.loads((site / "leaderboard.json").read_text())
    assert any("alpha-1" in name for name in board["rows"])
