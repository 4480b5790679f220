"""A cached verdict lapses with everything verification reads (docs/verify.md): the earlier
attempts a run keeps (verify counts them) and a file behind a link (what reading it gives)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from fakes import FakeRenderer
from spatialscout_gym.cli.main import main
from spatialscout_gym.eval.running.evaluate import evaluate
from spatialscout_gym.eval.running.tasks import EvalSettings

EP = "procedural_6/seed_0"


@pytest.fixture(scope="module")
def reference(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("cachekey") / "ref"
    summary = evaluate(d, EvalSettings("origin", 3, 6, 32), ["procedural:6"], seeds=1, workers=1,
                       progress=False, renderer_factory=FakeRenderer, write_report=False)
    assert summary.total == 1 and not summary.failed
    return d


def _verify(d: Path, capsys) -> dict:
    capsys.readouterr()
    main(["verify", str(d), "--json"])
    return {e["episode"]: e for e in json.loads(capsys.readouterr().out)["dirs"][str(d)]}


def test_deleting_the_kept_attempts_lapses_a_cached_verdict(reference, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("SPATIALSCOUT_VERIFY_CACHE", str(tmp_path / "verdicts"))
    d = tmp_path / "ev"
    shutil.copytree(reference, d)
    run = d / EP
    shutil.copytree(run, tmp_path / "first")       # an earlier attempt, archived beside the run
    (run / "attempts").mkdir()
    shutil.move(tmp_path / "first", run / "attempts" / "01")
    res = json.loads((run / "result.json").read_text())
    (run / "result.json").write_text(json.dumps({**res, "attempt": 2}))
    first = _verify(d, capsys)[EP]
    assert first["status"] == "verified" and not first["cached"], first
    assert _verify(d, capsys)[EP]["cached"]         # the verdict is kept ...
    shutil.rmtree(run / "attempts")
    again = _verify(d, capsys)[EP]                  # ... and lapses with the attempts it counted
    assert not again["cached"] and again["status"] == "diverged" and "attempt" in again["detail"], again


def test_an_edit_behind_a_linked_scenes_file_lapses_a_cached_verdict(reference, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("SPATIALSCOUT_VERIFY_CACHE", str(tmp_path / "verdicts"))
    d = tmp_path / "ev"
    shutil.copytree(reference, d)
    target = tmp_path / "scenes-elsewhere.json"
    shutil.move(d / "scenes.json", target)
    (d / "scenes.json").symlink_to(target)
    first = _verify(d, capsys)[EP]
    assert first["status"] == "verified", first
    assert _verify(d, capsys)[EP]["cached"]
    target.write_text(json.dumps({"procedural_6": "procedural:7"}))      # the scene it names changed
    again = _verify(d, capsys)[EP]
    assert not again["cached"] and again["status"] != "verified", again
