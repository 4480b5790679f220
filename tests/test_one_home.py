"""Each concept has one home and every other module uses it: what makes a run directory, the
``seed_<k>`` directory name, run-file names, the wire-format-to-codec map, SDK-to-extra, policy
agents' settings, and the env-agent episode loop (shared by the runner and the Inspect task).

Two kinds of test per concept: the consumers, asked the same question, answer as the home does
(so a second home that drifts fails), and a read of the package source that finds no second
spelling of the concept (so one that is added fails even before it drifts)."""

from __future__ import annotations

import dataclasses

import ast
import functools
import types
from pathlib import Path

import numpy as np
import pytest

from fakes import FakeRenderer, small_scene
from spatialscout_gym.cli.main import main
from spatialscout_gym.core import run_files
from spatialscout_gym.eval import layout
from spatialscout_gym.eval.layout import (EvalDir, find_run_dirs, is_run_dir, seed_dir_name, seed_of_dir,
                                          split_episode_key)

PACKAGE = Path(__file__).resolve().parents[1] / "spatialscout_gym"


def _modules() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


def _rel(path: Path) -> str:
    return path.relative_to(PACKAGE).as_posix()


@functools.lru_cache(maxsize=None)
def _tree(path: Path) -> ast.Module:
    return ast.parse(path.read_text(encoding="utf-8"))


@functools.lru_cache(maxsize=None)
def _strings(path: Path) -> list[tuple[int, str]]:
    """``(line, text)`` of every string constant of ``path`` that is not a docstring (f-string
    parts included, each on its own)."""
    tree = _tree(path)
    docs = {id(n.body[0].value) for n in ast.walk(tree)
            if isinstance(n, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and n.body
            and isinstance(n.body[0], ast.Expr) and isinstance(n.body[0].value, ast.Constant)}
    docs |= {id(n.value) for n in ast.walk(tree)        # attribute docstrings: a string statement
             if isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant)}
    return [(n.lineno, n.value) for n in ast.walk(tree)
            if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in docs]


def _out_of_home(names: set[str], home: set[str]) -> list[str]:
    """Places outside ``home`` (module paths) with a string that is one of ``names`` or a path
    ending in one."""
    return [f"{_rel(p)}:{line}: {text!r}" for p in _modules() if _rel(p) not in home
            for line, text in _strings(p)
            if text in names or any(text.endswith("/" + n) for n in names)]


# ---- what makes a run directory ------------------------------------------------------------------
STATES = {"both": (run_files.RESULT_FILE, run_files.TRACE_FILE), "result only": (run_files.RESULT_FILE,),
          "trace only": (run_files.TRACE_FILE,), "neither": ("notes.txt",)}


def _folder(root: Path, files: tuple[str, ...]) -> Path:
    root.mkdir(parents=True)
    for f in files:
        (root / f).write_text("{}\n")
    return root


def test_a_run_directory_holds_result_and_trace_and_every_command_agrees(tmp_path):
    """A run directory holds both files (write_run always writes both); a folder with one of them
    is another tool's or damaged: not listed by the readers and not replaced by --overwrite."""
    from spatialscout_gym.cli.errors import CliError
    from spatialscout_gym.cli.run import check_out_dir
    from spatialscout_gym.servers.viewer.data import run_dirs
    for state, files in STATES.items():
        d = _folder(tmp_path / state.replace(" ", "_"), files)
        want = state == "both"
        assert is_run_dir(d) is want, state
        assert (find_run_dirs(d) == [d]) is want, state
        assert (run_dirs(d) == [d]) is want, state
        assert EvalDir(d).is_run_dir is want, state
        try:
            check_out_dir(d, overwrite=True)
            replaced = True
        except CliError as exc:
            assert "not a run directory" in str(exc)
            replaced = False
        assert replaced is want, state


def test_run_overwrite_refuses_a_folder_with_only_a_trace(tmp_path, capsys):
    d = _folder(tmp_path / "theirs", (run_files.TRACE_FILE,))
    code = main(["run", "--agent", "origin", "--scene", "procedural:1", "--out", str(d), "--resolution", "32",
                 "--overwrite"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and "not a run directory" in err and len(err.splitlines()) == 1
    assert (d / run_files.TRACE_FILE).read_text() == "{}\n"


def test_only_the_layout_tests_for_a_run_directory():
    """No module but eval/layout.py asks for the result and the trace together (a second rule)."""
    found = []
    for p in _modules():
        if _rel(p) == "eval/layout.py":
            continue
        for node in ast.walk(_tree(p)):
            if isinstance(node, ast.BoolOp):
                names = {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}
                if {"RESULT_FILE", "TRACE_FILE"} <= names:
                    found.append(f"{_rel(p)}:{node.lineno}")
            if isinstance(node, (ast.Tuple, ast.List, ast.Set)):   # markers: (RESULT_FILE, TRACE_FILE)
                names = {n.id for n in node.elts if isinstance(n, ast.Name)}
                if names == {"RESULT_FILE", "TRACE_FILE"} and len(node.elts) == 2:
                    found.append(f"{_rel(p)}:{node.lineno}")
    assert not found, f"a second run-directory rule: {found}"


# ---- the seed_<k> directory name -----------------------------------------------------------------
@pytest.mark.parametrize("name", ["seed_01", "seed_00", "seed_-1", "seed_+1", "seed_²", "seed_٣", "seed_ 1",
                                  "seed_", "seed_1.failed.json", "seed_1.attempts", "xseed_1", "Seed_1",
                                  "seed_1_", "seed_1e3"])
def test_only_canonical_seed_names_are_seeds(name):
    assert seed_of_dir(name) is None


def test_seed_names_round_trip_and_bad_seeds_are_refused():
    assert [seed_of_dir(seed_dir_name(k)) for k in (0, 1, 9, 10, 123456)] == [0, 1, 9, 10, 123456]
    assert [split_episode_key(k) for k in ("a/b/seed_3", "Kitchen_01", "run/seed_03", "seed_4")] == [
        ("a/b", 3), ("Kitchen_01", None), ("run/seed_03", None), ("seed_4", None)]
    assert seed_dir_name(np.int64(7)) == "seed_7"
    for bad in (-1, True, 1.5, "3"):
        with pytest.raises(ValueError, match="non-negative integer"):
            seed_dir_name(bad)


def test_the_evaluation_reader_and_verify_read_seeds_with_the_one_parser(tmp_path):
    """``seed_01`` beside ``seed_1`` is not a second episode of seed 1; verify's path check reads
    the seed as the layout does."""
    from spatialscout_gym.eval.verification.verify import _Diverged, _identity
    from record_fixtures import run_record, write_record
    for name in ("seed_1", "seed_01", "seed_²"):
        d = _folder(tmp_path / "ev" / "procedural_3" / name, STATES["both"])
        write_record(d, run_record("procedural_3", seed=1))     # a record the readers load strictly
    ev = EvalDir(tmp_path / "ev")
    assert [e.key for e in ev.episodes()] == ["procedural_3/seed_1"]
    assert [p.name for p in ev.trace_dirs()] == ["seed_1"]
    record = run_record("procedural_3", seed=1)
    _identity(tmp_path / "ev" / "procedural_3" / "seed_1", record, {})
    _identity(tmp_path / "ev" / "procedural_3" / "seed_01", record, {})   # not a seed directory: not checked
    with pytest.raises(_Diverged, match="the path says seed 1"):
        _identity(tmp_path / "ev" / "procedural_3" / "seed_1", dataclasses.replace(record, seed=2), {})


def test_no_module_but_the_run_files_module_writes_or_parses_seed_names():
    """A string ending in ``seed_`` (``f"seed_{k}"``, ``startswith("seed_")``) or a pattern
    ``seed_(`` / ``seed_\\d`` is a second writer or parser of the name."""
    found = [f"{_rel(p)}:{line}: {text!r}" for p in _modules() if _rel(p) != "core/run_files.py"
             for line, text in _strings(p)
             if text.endswith("seed_") or "seed_(" in text or "seed_\\d" in text or "seed_[" in text]
    assert not found, f"a second home of the seed_<k> name: {found}"


# ---- run-file names ------------------------------------------------------------------------------
EVAL_FILES = {layout.SETTINGS_FILE, layout.SCENES_FILE, layout.VERIFY_FILE, layout.PLANNED_FILE}


def test_run_file_names_are_spelled_only_in_their_home():
    assert set(run_files.RUN_FILES) >= {"result.json", "trace.jsonl", "predictions.json", "ground_truth.json",
                                        "harness.json", "prompt.txt", "delivered_sha256.json",
                                        "entity_library.json", "scene_spec.json", "frames/sha256.json"}
    assert not _out_of_home(set(run_files.RUN_FILES), {"core/run_files.py"})
    # an evaluation directory's files: its layout, and the typed records of planned.json and scenes.json
    assert not _out_of_home(EVAL_FILES, {"eval/layout.py", "core/eval_records.py"})


def test_run_file_constants_are_defined_and_exported_once():
    """Only core/run_files.py assigns or exports a run-file constant; the rest import it."""
    names = set(run_files.__all__) - {"RUN_FILES"}
    defined, exported = [], []
    for p in _modules():
        if _rel(p) == "core/run_files.py":
            continue
        for node in _tree(p).body:
            if isinstance(node, ast.Assign):
                targets = {t.id for t in node.targets if isinstance(t, ast.Name)}
                defined += [f"{_rel(p)}: {n}" for n in targets & names]
                if "__all__" in targets:
                    exported += [f"{_rel(p)}: {n}" for n in names & set(ast.literal_eval(node.value))]
    assert not defined and not exported, (defined, exported)


def test_the_literal_check_sees_a_second_spelling(tmp_path, monkeypatch):
    fake = tmp_path / "m.py"
    fake.write_text('"""Writes result.json."""\nX = "result.json"\nY = f"{d}/trace.jsonl"\n')
    assert _strings(fake) == [(2, "result.json"), (3, "/trace.jsonl")]


# ---- the wire-format-to-codec map ----------------------------------------------------------------
def test_one_codec_map_serves_the_parser_and_verify(monkeypatch):
    from spatialscout_gym.conversation import codecs
    from spatialscout_gym.conversation.messages import WIRE_FORMATS, ModelReply
    from spatialscout_gym.eval.verification.verify_conversation import harness_expected
    assert set(codecs.CODECS) == set(WIRE_FORMATS)
    fake = types.SimpleNamespace(tools=lambda names: ["the one map's schema", *names],
                                 parse_response=lambda reply: ModelReply(text="the one map's parser"))
    monkeypatch.setitem(codecs.CODECS, "messages", fake)
    w = types.SimpleNamespace(prompt_role="user", tool_names=("capture",),
                              messages=[types.SimpleNamespace(role="user", text="go", content=["go"])])
    assert harness_expected(w, {"model": {"api_mode": "messages"}})["tool_schema"] == ["the one map's schema",
                                                                                       "capture"]
    assert codecs.parse_reply({"type": "message", "content": []}).text == "the one map's parser"
    with pytest.raises(ValueError, match="unknown wire format"):
        codecs.codec_of("smoke-signals")


def test_no_second_codec_map():
    """No dict outside the codecs package keyed by two or more wire formats."""
    from spatialscout_gym.conversation.messages import WIRE_FORMATS
    found = []
    for p in _modules():
        if _rel(p).startswith("conversation/codecs/"):
            continue
        for node in ast.walk(_tree(p)):
            if isinstance(node, ast.Dict):
                keys = {k.value for k in node.keys if isinstance(k, ast.Constant)}
                if len(keys & set(WIRE_FORMATS)) >= 2:
                    found.append(f"{_rel(p)}:{node.lineno}")
    assert not found, f"a second wire-format map: {found}"


# ---- SDK to extra --------------------------------------------------------------------------------
def test_a_model_service_names_its_sdk_and_extra_in_one_place(monkeypatch):
    from spatialscout_gym.cli.errors import EXTRA_OF_MODULE, missing_extra_message
    from spatialscout_gym.conversation import providers
    assert not {p.sdk for p in providers.PROVIDERS.values()} & set(EXTRA_OF_MODULE), \
        "a model service's SDK is also listed in cli/errors.py"
    monkeypatch.setattr(providers, "PROVIDERS", dict(providers.PROVIDERS))

    @providers.model_api("smoke-service", sdk="smoke_sdk", extra="smoke")
    class SmokeProvider(providers.OpenAIProvider):
        pass

    line = missing_extra_message(ModuleNotFoundError("No module named 'smoke_sdk'", name="smoke_sdk"))
    assert line is not None and "'smoke' extra" in line and "smoke_sdk" in line
    for sdk in ("openai", "anthropic"):
        assert "'vlm' extra" in missing_extra_message(ModuleNotFoundError("x", name=sdk))


# ---- the env-agent episode loop ------------------------------------------------------------------
class _EnvAgent:
    """An env agent that resets, captures once, then raises (a model service going away)."""

    name = "env-smoke"
    counts_model_calls = False
    end_reason = None
    privileged = False

    def __init__(self, fail_before_reset: bool = False) -> None:
        self.fail_before_reset = fail_before_reset
        self.env = None

    def run_env(self, env, *, seed: int) -> None:
        self.env = env
        if self.fail_before_reset:
            raise ConnectionError("no service")
        env.reset(seed=seed)
        raise ConnectionError("service went away")

    def trace(self) -> list[dict]:
        return list(self.env.unwrapped.episode.trace)

    def extra_result(self) -> dict:
        return {}


def test_the_runner_records_an_env_agents_failure_through_the_shared_episode(tmp_path):
    from spatialscout_gym.baselines.base import EnvAgent
    from spatialscout_gym.eval.running.runner import run_episode
    spec = small_scene()
    agent = _EnvAgent()
    assert isinstance(agent, EnvAgent)
    result = run_episode(agent, spec, tmp_path / "run", renderer=FakeRenderer(spec, 48, 48), resolution=48)
    assert result["status"] == "failed" and "service went away" in result["error"]
    assert result["end_reason"] == "failed" and is_run_dir(tmp_path / "run")
    with pytest.raises(ConnectionError, match="no service"):   # nothing to record: raised, nothing written
        run_episode(_EnvAgent(fail_before_reset=True), spec, tmp_path / "none", renderer=FakeRenderer(spec, 48, 48),
                    resolution=48)
    assert not (tmp_path / "none").exists()


def test_the_inspect_task_runs_its_episode_through_the_runners_loop():
    """The Inspect solver drives the model itself but makes, ends, records and closes the episode
    with :func:`~spatialscout_gym.eval.running.runner.env_episode` only."""
    tree = ast.parse((PACKAGE / "integrations" / "inspect_task.py").read_text(encoding="utf-8"))
    names = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)} | {
        a.name for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) for a in n.names}
    assert "env_episode" in names
    assert not names & {"write_run", "make_scene_env", "EpisodeSession"}, names & {"write_run", "make_scene_env"}
    calls = {ast.unparse(n.func) for n in ast.walk(tree) if isinstance(n, ast.Call)}
    assert not {c for c in calls if c.endswith(".end") or c.endswith(".close")}, calls


# ---- integers from users: ASCII digits only ------------------------------------------------------
@pytest.mark.parametrize("argv", [
    ["evaluate", "--agent", "origin", "--scene", "procedural:1", "--seeds", "²"],
    ["evaluate", "--agent", "origin", "--scene", "procedural:1", "--seeds", "0:²"],
    ["evaluate", "--agent", "origin", "--scene", "procedural:1", "--seeds", "٣"],
    ["evaluate", "--agent", "origin", "--scene", "procedural:²"],
    ["run", "--agent", "origin", "--scene", "procedural:²"],
    ["run", "--agent", "origin", "--scene", "procedural:٣"],
])
def test_non_ascii_digits_get_the_one_line_error(argv, tmp_path, capsys):
    code = main([*argv, "--out", str(tmp_path / "out"), "--resolution", "32"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1 and "Traceback" not in err, err
    assert "non-negative integer" in err and not (tmp_path / "out").exists()


@pytest.mark.parametrize("options", [{"seeds": "²"}, {"seeds": "0,²"}, {"seeds": "1:²"}, {"repeats": "²"},
                                     {"scenes": "procedural:²"}])
def test_non_ascii_digits_in_inspect_task_options_are_one_line(options):
    pytest.importorskip("inspect_ai")
    from spatialscout_gym.core.errors import ConfigError
    from spatialscout_gym.integrations.inspect_task import spatialscout
    with pytest.raises(ConfigError) as info:
        spatialscout(**{"scenes": "procedural:1", **options})
    assert len(str(info.value).splitlines()) == 1 and "²" in str(info.value)


def test_natural_number_is_the_one_reader_of_typed_integers():
    """``natural_number`` reads ASCII digits only, and no other module tests digits with
    ``str.isdigit`` (which accepts '²') but the viewer's Content-Length check, which also requires
    ``isascii``."""
    from spatialscout_gym.core.spec import natural_key
    from spatialscout_gym.core.types import natural_number
    assert [natural_number(t) for t in ("0", "007", "42")] == [0, 7, 42]
    assert [natural_number(t) for t in ("²", "٣", " 7", "-1", "+1", "", "1.0", "1_000")] == [None] * 8
    assert sorted(["Mug_10", "Mug_2", "Mug_1²"], key=natural_key) == ["Mug_1²", "Mug_2", "Mug_10"]
    found = {_rel(p) for p in _modules() if _rel(p) != "core/types.py"
             for n in ast.walk(_tree(p))
             if isinstance(n, ast.Attribute) and n.attr in ("isdigit", "isnumeric", "isdecimal")}
    assert found <= {"servers/viewer/server.py"}, found
