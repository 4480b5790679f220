"""Model presets (docs/models.md, "Model presets"): ``evaluate --models FILE`` runs every model of a
TOML file in ``--out/NAME`` with the settings recorded exactly as the same options given as flags
record them; an unknown key is one line naming the key and its line. Real ``openai`` client against
the scripted server on 127.0.0.1; the evaluations run with the fake renderer."""

from __future__ import annotations

import json

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


def _presets(tmp_path, url: str) -> str:
    return f"""
[models.fast]
agent = "openai:scripted"
base_url = "{url}"
api_key_env = "LAB_TEST_KEY"
reasoning_effort = "medium"
price_table = "prices.json"
tokens_per_minute = 100000
attempts = 4
workers = 1

[models.slow]
agent = "openai:scripted"
base_url = "{url}"
api_key_env = "LAB_TEST_KEY"
no_reasoning_effort = true
max_tokens = 500
call_budget = 3
"""


def test_two_presets_record_what_two_flag_commands_record(tmp_path, monkeypatch, fake_render, capsys):
    monkeypatch.setenv("LAB_TEST_KEY", "secret-key-123")
    scene = tmp_path / "room.json"
    scene.write_text(small_scene(32, 32).to_json())
    (tmp_path / "prices.json").write_text(json.dumps({"scripted": {"input_per_mtok": 1, "output_per_mtok": 2}}))
    common = ["--scenes", str(scene), "--resolution", "32", "--image-budget", "4", "--no-progress"]
    with ScriptedServer(capture_finish) as server:
        presets = tmp_path / "models.toml"
        presets.write_text(_presets(tmp_path, server.openai_url))
        assert main(["evaluate", "--models", str(presets), "--out", str(tmp_path / "p"), *common]) == 0
        flags = {"fast": ["--agent", "openai:scripted", "--reasoning-effort", "medium", "--price-table",
                          str(tmp_path / "prices.json"), "--tpm", "100000", "--attempts", "4", "--workers", "1"],
                 "slow": ["--agent", "openai:scripted", "--no-reasoning-effort", "--max-tokens", "500",
                          "--call-budget", "3"]}
        for name, extra in flags.items():
            assert main(["evaluate", *extra, "--base-url", server.openai_url, "--api-key", "secret-key-123",
                         "--out", str(tmp_path / "f" / name), *common]) == 0
    for name in flags:
        by_file, by_flags = (tmp_path / d / name for d in ("p", "f"))
        assert json.loads((by_file / "evaluate.json").read_text()) == json.loads((by_flags / "evaluate.json").read_text())
        a, b = (json.loads((d / "room" / "seed_0" / "result.json").read_text()) for d in (by_file, by_flags))
        assert {k: v for k, v in a["model"].items() if k not in ("usage", "cost_usd", "cached_input_tokens")} == \
               {k: v for k, v in b["model"].items() if k not in ("usage", "cost_usd", "cached_input_tokens")}
        assert "secret-key-123" not in (by_file / "evaluate.json").read_text()
    assert json.loads((tmp_path / "p" / "fast" / "evaluate.json").read_text())["agent_options"]["reasoning_effort"] == "medium"


def test_an_unknown_key_is_one_line_with_its_line(tmp_path, capsys):
    presets = tmp_path / "models.toml"
    presets.write_text('[models.a]\nagent = "openai:m"\nreasoning_efort = "high"\n')
    code = main(["evaluate", "--models", str(presets), "--out", str(tmp_path / "o"), "--scenes", "procedural:1"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and "'reasoning_efort'" in err[0] and "line 3" in err[0]
