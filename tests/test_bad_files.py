"""Every command that reads a run or evaluation directory, over a matrix of bad files: no traceback
(without ``--debug``), and a refusal is one line naming the file.

The evaluation is one ``uniform-ball`` episode on a small hand-built scene (Vulkan-free renderer);
each case copies it, spoils one file (empty, ``[]``, a number, undecodable bytes, truncated JSON,
nesting 100,000 deep, a directory in its place, a FIFO in its place (no reader may block on it),
missing, a trace line that is not an object, a ``result.json`` field of the wrong type) and runs ``report``, ``compare``, ``replay``,
``leaderboard``, ``verify``, ``view --out`` and ``score`` through the CLI's ``main``."""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from fakes import FakeRenderer, small_scene
from spatialscout_gym.cli.main import main
from spatialscout_gym.eval.running.evaluate import EvalSettings, evaluate

RUN = "fake-0/seed_0"
DEEP = "[" * 100_000 + "]" * 100_000
COMMANDS = ("report", "compare", "replay", "leaderboard", "verify", "view", "score")
FIFO = ("a FIFO",)
"""What a spoiled file becomes: a named pipe with no writer (a reader that opens it blocks forever)."""
HANG_S = 30
"""A command still running after this many seconds is blocked (a case takes well under a second)."""


class Blocked(BaseException):
    """Raised in a command blocked past :data:`HANG_S` (not an ``OSError``, which a reader would
    turn into a one-line error and so hide the hang)."""


@pytest.fixture(scope="module")
def base(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("bad")
    spec = tmp / "fake-0.json"
    spec.write_text(small_scene(32, 32, scene_id="fake-0").to_json())
    evaluate(tmp / "E", EvalSettings("uniform-ball", 5, 20, 32), [str(spec)], seeds=1, workers=1,
             progress=False, renderer_factory=FakeRenderer)
    assert (tmp / "E" / RUN / "result.json").is_file()
    return tmp / "E"


def _cases(base: Path) -> list[tuple[str, str, str | bytes | None | bool]]:
    """``(file under the evaluation, label, what it becomes)``: text, bytes, None (a directory),
    :data:`FIFO` or False (removed)."""
    common = {"empty": "", "list": "[]", "number": "5", "null": "null", "garbled": b"\xff\xfe\x00{",
              "truncated": '{"a": ', "deep": DEEP, "directory": None, "fifo": FIFO, "missing": False}
    out = []
    for name in ("result.json", "trace.jsonl", "ground_truth.json", "predictions.json"):
        out += [(f"{RUN}/{name}", label, v) for label, v in common.items()]
    out += [(f"{RUN}/trace.jsonl", label, v) for label, v in {
        "line_list": '{"event": "start"}\n[]\n', "line_number": '{"event": "start"}\n5\n',
        "event_number": '{"event": 5}\n', "capture_frame_text": '{"event": "capture", "frame_id": "x"}\n',
        "tool_call_index_text": '{"event": "tool_call", "index": "a", "tool": "x", "result": 5}\n'}.items()]
    good = json.loads((base / RUN / "result.json").read_text())
    out.append((f"{RUN}/result.json", "no scene_id", json.dumps({k: v for k, v in good.items() if k != "scene_id"})))
    for key, value in (("seed", "zero"), ("seed", None), ("all", 5), ("all", {"mean_iou": "x"}),
                       ("counters", []), ("counters", {"tool_calls": "x"}), ("scene_id", []), ("agent", {}),
                       ("coverage", "x"), ("status", 5)):
        out.append((f"{RUN}/result.json", f"{key}={json.dumps(value)}", json.dumps({**good, key: value})))
    for name in ("evaluate.json", "scenes.json"):
        out += [(name, label, common[label]) for label in ("list", "garbled", "deep", "directory", "fifo")]
    out += [(f"{RUN}/frames/frame_000.png", "directory", None), (f"{RUN}/frames", "file", "x")]
    return out


def _spoil(root: Path, rel: str, what) -> None:
    p = root / rel
    if p.is_dir() and not p.is_symlink():
        shutil.rmtree(p)
    elif p.exists() or p.is_symlink():
        p.unlink()
    if what is None:
        p.mkdir()
    elif what is FIFO:
        os.mkfifo(p)
    elif isinstance(what, bytes):
        p.write_bytes(what)
    elif isinstance(what, str):
        p.write_text(what)


def _argv(cmd: str, base: Path, d: Path, work: Path) -> list[str]:
    return {"report": ["report", str(d), "--no-figures"], "compare": ["compare", str(base), str(d)],
            "replay": ["replay", str(d), "--no-plots"],
            "leaderboard": ["leaderboard", str(d), "--out", str(work / "site"), "--no-progress"],
            "verify": ["verify", str(d), "--no-progress"], "view": ["view", str(d), "--out", str(work / "view")],
            "score": ["score", str(d)]}[cmd]


def _run(argv: list[str]) -> tuple[object, str]:
    """Exit code (``"traceback"`` when an exception escaped ``main``) and everything printed."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        try:
            with _no_hang():
                rc: object = main(argv)
        except SystemExit as exc:
            rc = exc.code
        except BaseException as exc:   # what the user would see as a traceback
            rc = "traceback"
            print(f"{type(exc).__name__}: {exc}"[:300])
    return rc, out.getvalue()


@contextlib.contextmanager
def _no_hang():
    """Raise :class:`Blocked` in the block when it runs past :data:`HANG_S` (a blocked read)."""
    def blocked(*_):
        raise Blocked(f"still running after {HANG_S} s (blocked on a file?)")

    previous = signal.signal(signal.SIGALRM, blocked)
    signal.alarm(HANG_S)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


# (file, case) pairs every command but score must refuse, naming the file
MUST_REFUSE = {("result.json", "deep"), ("result.json", "garbled"), ("result.json", "truncated"),
               ("result.json", "list"), ("result.json", 'seed="zero"'), ("result.json", "counters=[]"),
               ("trace.jsonl", "deep"), ("trace.jsonl", "garbled"), ("trace.jsonl", "line_list"),
               ("trace.jsonl", "line_number"), ("trace.jsonl", "directory"), ("trace.jsonl", "fifo")}
SCORE_MUST_REFUSE = {("ground_truth.json", "deep"), ("ground_truth.json", "garbled"), ("predictions.json", "deep"),
                     ("predictions.json", "list"), ("ground_truth.json", "fifo"), ("predictions.json", "fifo")}


@pytest.mark.parametrize("cmd", COMMANDS)
def test_bad_files_are_one_line_errors_naming_the_file(cmd, base, tmp_path):
    problems = []
    for rel, label, what in _cases(base):
        work = tmp_path / "w"
        shutil.rmtree(work, ignore_errors=True)
        d = work / "E"
        shutil.copytree(base, d, symlinks=True)
        _spoil(d, rel, what)
        rc, text = _run(_argv(cmd, base, d, work))
        name = Path(rel).name
        where = f"{cmd} with {rel} {label}"
        if rc == "traceback" or "Traceback" in text:
            problems.append(f"{where}: traceback: {text.strip().splitlines()[-1][:200]}")
            continue
        must = (name, label) in (SCORE_MUST_REFUSE if cmd == "score" else MUST_REFUSE) and not (
            cmd == "compare" and name == "trace.jsonl")      # compare reads results, not traces
        if must and rc in (0, None):
            problems.append(f"{where}: accepted (exit 0)")
        if rc == 2:
            lines = [ln for ln in text.splitlines() if ln.startswith("spatialscout: error:")]
            if len(lines) != 1:
                problems.append(f"{where}: expected one error line, got {text.strip()[-300:]!r}")
            elif must and name not in lines[0]:
                problems.append(f"{where}: the error does not name {name}: {lines[0][:200]}")
    assert not problems, "\n".join(problems)


def test_the_cli_prints_no_traceback_for_the_reported_cases(base, tmp_path):
    """The two commands of the report, as a user types them (``grep Traceback`` finds nothing)."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(Path(__file__).resolve().parents[1]),
                                                       os.environ.get("PYTHONPATH", "")]))
    d = tmp_path / "E"
    shutil.copytree(base, d)
    (d / RUN / "trace.jsonl").write_text("[]\n")
    p = subprocess.run([sys.executable, "-m", "spatialscout_gym.cli.main", "view", "--out", str(tmp_path / "S"), str(d)],
                       capture_output=True, text=True, env=env)
    assert p.returncode == 2 and "Traceback" not in p.stdout + p.stderr
    assert p.stderr.count("\n") == 1 and "trace.jsonl: line 1" in p.stderr
    shutil.rmtree(d)
    shutil.copytree(base, d)
    (d / RUN / "result.json").write_text(DEEP)
    p = subprocess.run([sys.executable, "-m", "spatialscout_gym.cli.main", "report", str(d)],
                       capture_output=True, text=True, env=env)
    assert p.returncode == 2 and "Traceback" not in p.stdout + p.stderr
    assert "result.json: invalid JSON: arrays or objects nested too deeply" in p.stderr


@pytest.mark.parametrize("rel, label", [(f"{RUN}/result.json", "deep"), (f"{RUN}/result.json", "garbled"),
                                        (f"{RUN}/result.json", "list"), (f"{RUN}/result.json", 'seed="zero"'),
                                        (f"{RUN}/result.json", "fifo"), ("evaluate.json", "deep"),
                                        ("evaluate.json", "list"), ("scenes.json", "garbled")])
def test_evaluate_resuming_over_a_bad_file_names_it(rel, label, base, tmp_path):
    """``evaluate`` reads its own directory when it resumes: a spoiled file is one line naming it."""
    from spatialscout_gym.core.errors import SpatialScoutError
    what = dict((lbl, v) for r, lbl, v in _cases(base) if Path(r).name == Path(rel).name)[label]
    d = tmp_path / "E"
    shutil.copytree(base, d)
    _spoil(d, rel, what)
    spec = tmp_path / "fake-0.json"
    spec.write_text(small_scene(32, 32, scene_id="fake-0").to_json())
    with pytest.raises(SpatialScoutError) as err, _no_hang():
        evaluate(d, EvalSettings("uniform-ball", 5, 20, 32), [str(spec)], seeds=1, workers=1,
                 progress=False, renderer_factory=FakeRenderer)
    assert str(d / rel) in str(err.value) and "\n" not in str(err.value)


def test_a_far_but_finite_prediction_scores_iou_0_alike_in_score_view_and_report(base, tmp_path):
    """``[1e155, 0, 0]`` (a multi-instance target: the assignment's costs overflowed) and
    ``[-1e308, 1e308, 0]`` (a single one): finite, so ``score`` scores them, IoU 0 and a finite error (no
    "cost matrix is infeasible"); ``view`` and ``report``, which check the map against the trace,
    refuse the edited file in one line."""
    from spatialscout_gym.core.scoring import FAR_M, GroundTruth, score_scene
    d = tmp_path / "E"
    shutil.copytree(base, d)
    path = d / RUN / "predictions.json"
    far = {"chair_1": [1e155, 0.0, 0.0], "lamp_1": [-1e308, 1e308, 0.0]}
    path.write_text(json.dumps({"positions": {**json.loads(path.read_text())["positions"], **far}}))
    gt = GroundTruth.from_dict(json.loads((d / RUN / "ground_truth.json").read_text()))
    score = score_scene(gt, json.loads(path.read_text())["positions"])
    matched = [i for i, k in enumerate(score.matched_id) if k in far]
    assert len(matched) == 2
    for i in matched:
        assert score.iou[i] == 0.0 and FAR_M / 2 < score.center_error_m[i] < 2 * FAR_M
    assert np.isfinite(score.metrics()["center_error_m"]["rmse"])
    rc, text = _run(_argv("score", base, d, tmp_path / "score"))
    assert rc in (0, None) and "Traceback" not in text and "spatialscout: error" not in text, text[-400:]
    for cmd in ("view", "report"):       # they check the map against the trace's: the edited file is refused
        rc, text = _run(_argv(cmd, base, d, tmp_path / cmd))
        assert rc == 2 and text.count("spatialscout: error:") == 1 and "the file was edited" in text, (cmd, text[-400:])


def test_a_negative_seed_is_refused_alike_by_report_compare_and_leaderboard(base, tmp_path):
    """``"seed": -3`` in ``result.json``: one line naming the file and the field from each command
    (report and compare gave a traceback, leaderboard accepted it)."""
    d = tmp_path / "E"
    shutil.copytree(base, d)
    path = d / RUN / "result.json"
    path.write_text(json.dumps({**json.loads(path.read_text()), "seed": -3}))
    for cmd in ("report", "compare", "leaderboard"):
        rc, text = _run(_argv(cmd, base, d, tmp_path / cmd))
        lines = [ln for ln in text.splitlines() if ln.startswith("spatialscout: error:")]
        assert rc == 2 and len(lines) == 1 and "Traceback" not in text, (cmd, text[-300:])
        assert "result.json: field 'seed' must be an integer >= 0" in lines[0], (cmd, lines[0])


def test_view_copies_only_png_frames_of_frame_size(base, tmp_path):
    """A 60000 x 60000 PNG header, a GIF and an empty file in ``frames/`` are skipped and listed,
    never copied into the site (a browser would decode them); the real frame is copied."""
    import struct
    import zlib
    d = tmp_path / "E"
    shutil.copytree(base, d)
    frames = d / RUN / "frames"
    ihdr = struct.pack(">IIBBBBB", 60000, 60000, 8, 2, 0, 0, 0)
    huge = (b"\x89PNG\r\n\x1a\n" + struct.pack(">I", 13) + b"IHDR" + ihdr
            + struct.pack(">I", zlib.crc32(b"IHDR" + ihdr)))
    bad = {"frame_901.png": huge, "frame_902.png": b"GIF89a\x01\x00\x01\x00\x00\x00\x00;", "frame_903.png": b""}
    for name, data in bad.items():
        (frames / name).write_bytes(data)
    rc, text = _run(["view", str(d), "--out", str(tmp_path / "site")])
    copied = {p.name for p in (tmp_path / "site").rglob("frame_*.png")}
    assert rc in (0, None) and "frame_000.png" in copied and not copied & set(bad), (copied, text[-300:])
    assert all(f"skipped {frames / name}" in text for name in bad)
