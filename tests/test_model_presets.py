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


def _refusal(tmp_path, capsys, text: str | bytes, *extra: str) -> str:
    """The one stderr line of ``evaluate --models`` refusing a presets file (exit 2)."""
    presets = tmp_path / "models.toml"
    if isinstance(text, bytes):
        presets.write_bytes(text)
    else:
        presets.write_text(text)
    code = main(["evaluate", "--models", str(presets), "--out", str(tmp_path / "o"), "--scenes", "procedural:1",
                 "--estimate", *extra])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1, err
    return err[0]


@pytest.mark.parametrize("line, flag_argv", [
    ('image_max_side = "big"', ["--image-max-side", "big"]),
    ('prompt_style = "bogus"', ["--prompt", "bogus"]),
    ('call_budget = "many"', ["--call-budget", "many"]),
    ("workers = 2.5", ["--workers", "2.5"]),
    ('max_cost_usd = "lots"', ["--max-cost-usd", "lots"]),
    ('mode = "sideways"', ["--mode", "sideways"]),
    ('backoff_s = [1, "soon"]', ["--backoff", "1", "soon"]),
])
def test_a_bad_value_is_refused_by_its_flags_own_parser_naming_preset_key_and_line(tmp_path, capsys, line, flag_argv):
    key = line.split()[0]
    err = _refusal(tmp_path, capsys, f'[models.a]\nagent = "openai:m"\n\n[models.lab-b]\nagent = "openai:m"\n{line}\n')
    assert f"[models.lab-b] {key} (line 6)" in err and "models.toml" in err
    with pytest.raises(SystemExit) as flag_exit:   # the same value as a flag: argparse's own message
        main(["evaluate", "--agent", "openai:m", "--out", str(tmp_path / "f"), "--scenes", "procedural:1", *flag_argv])
    flag_message = capsys.readouterr().err.strip().splitlines()[-1].partition("error: ")[2]
    assert flag_exit.value.code == 2 and flag_message and err.endswith(flag_message)


@pytest.mark.parametrize("line, wanted", [
    ("agent = 5", "expected a string as --agent takes, got an integer 5"),
    ('reasoning_effort = ["high"]', "expected one value as --reasoning-effort takes, got an array"),
    ("no_reasoning_effort = 1", "expected true or false (the switch --no-reasoning-effort)"),
    ("price_table = 3", "expected a string as --price-table takes"),
    ("api_key_env = 7", "expected the name of an environment variable"),
    ("price = { input_per_mtok = 1, output_per_mtok = true }", "not a number >= 0: output_per_mtok"),
])
def test_a_value_of_the_wrong_toml_type_is_one_line(tmp_path, capsys, line, wanted):
    agent = "" if line.startswith("agent") else 'agent = "openai:m"\n'
    err = _refusal(tmp_path, capsys, f"[models.m1]\n{agent}{line}\n")
    key = line.split()[0]
    assert wanted in err and f"[models.m1] {key} (line {3 if agent else 2})" in err


def test_a_file_that_is_not_utf8_or_nested_too_deeply_is_one_line(tmp_path, capsys):
    err = _refusal(tmp_path, capsys, b'[models.a]\nagent = "openai:m\xff"\n')
    assert "not UTF-8" in err and "line 2" in err
    deep = '[models.a]\nagent = "openai:m"\nx = ' + "{a = " * 3000 + "1" + "}" * 3000 + "\n"
    assert "nested too deeply" in _refusal(tmp_path, capsys, deep)


@pytest.mark.parametrize("name", ["..", ".", "a/b", "m" * 10_000])
def test_a_preset_name_that_is_not_one_directory_inside_out_is_refused(tmp_path, capsys, name):
    out = tmp_path / "lab" / "out"
    out.mkdir(parents=True)
    presets = tmp_path / "models.toml"
    presets.write_text(f'[models."{name}"]\nagent = "openai:m"\nprice = {{ input_per_mtok = 1, output_per_mtok = 2 }}\n')
    code = main(["evaluate", "--models", str(presets), "--out", str(out), "--scenes", "procedural:1", "--estimate"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and "model name" in err[0]
    assert ("longer than 100 characters" in err[0]) == (len(name) > 100)
    assert sorted(p.name for p in (tmp_path / "lab").rglob("*")) == ["out"]   # nothing written, in or beside --out


def _cli(tmp_path, *argv: str):
    """The CLI in a child process: a refusal that blocked (a FIFO read) ends there at the timeout
    and fails the test rather than the suite."""
    import subprocess
    import sys
    return subprocess.run([sys.executable, "-m", "spatialscout_gym.cli.main", *argv], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("where", ["preset", "--models", "--price-table"])
@pytest.mark.parametrize("special", ["fifo", "/dev/zero"])
def test_a_fifo_or_device_is_refused_before_it_is_read(tmp_path, where, special):
    import os
    target = "/dev/zero" if special == "/dev/zero" else str(tmp_path / "prices.fifo")
    if special == "fifo":
        os.mkfifo(target)
    presets = tmp_path / "models.toml"
    presets.write_text('[models.a]\nagent = "openai:m"\napi_key_env = "HOME"\n'
                       + (f'price_table = "{target}"\n' if where == "preset" else ""))
    argv = {"preset": ["--models", str(presets)], "--models": ["--models", target],
            "--price-table": ["--agent", "openai:m", "--api-key", "x", "--price-table", target]}[where]
    done = _cli(tmp_path, "evaluate", *argv, "--out", "o", "--scenes", "procedural:1", "--estimate")
    err = done.stderr.strip().splitlines()
    kind = "a FIFO" if special == "fifo" else "a character device"
    assert done.returncode == 2 and len(err) == 1 and f"{target}: {kind}, not a regular file" in err[0], err
    if where == "preset":
        assert "[models.a] price_table (line 4)" in err[0]


def test_the_estimate_of_a_presets_file_shows_each_cap_and_the_total(tmp_path, capsys, monkeypatch):
    import re
    monkeypatch.setenv("LAB_TEST_KEY", "k")
    (tmp_path / "prices.json").write_text(json.dumps({"m": {"input_per_mtok": 10, "output_per_mtok": 40}}))
    presets = tmp_path / "models.toml"
    common = 'agent = "openai:m"\napi_key_env = "LAB_TEST_KEY"\nprice_table = "prices.json"\n'
    presets.write_text(f"[models.capped]\n{common}max_cost_usd = 0.5\n\n[models.free]\n{common}\n"
                       f'[models.unpriced]\nagent = "openai:m"\napi_key_env = "LAB_TEST_KEY"\n')
    assert main(["evaluate", "--models", str(presets), "--out", str(tmp_path / "o"), "--scenes", "procedural:1",
                 "procedural:2", "--call-budget", "5", "--estimate"]) == 0
    out = capsys.readouterr().out
    ranges = [tuple(map(float, m)) for m in re.findall(r"2 episodes, \$([0-9.]+) - \$([0-9.]+)", out)]
    assert len(ranges) == 2 and ranges[0] == ranges[1] and ranges[0][1] > 0.5
    assert "cap $0.50: inside the range" in out and out.count("cap $") == 1
    total = re.search(r"total of 2 priced model\(s\): \$([0-9.]+) - \$([0-9.]+); with their caps \$([0-9.]+) - "
                      r"\$([0-9.]+) \(1 model\(s\) without a price not counted\)", out)
    assert total, out
    low, high, capped_low, capped_high = map(float, total.groups())
    assert high == pytest.approx(2 * ranges[0][1], abs=0.011)
    assert capped_high == pytest.approx(0.5 + ranges[0][1], abs=0.011) and capped_low == pytest.approx(low, abs=0.011)
