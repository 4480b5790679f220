"""The viewer's one reader of run and evaluation directories (docs/protocol.md section 7).

Everything the page draws comes from :func:`run_payload` (one run directory) or
:func:`eval_payload` (a directory of run directories): plain JSON, built from the run's own files
through the package's readers (``trace.jsonl``, ``result.json``, ``ground_truth.json``; a file that
is not what it should be, or a symbolic link leading out of the run directory, is a one-line
:class:`~spatialscout_gym.eval.layout.EvalDirError` naming it), the scorer
(:func:`~spatialscout_gym.core.scoring.score_scene`) for per-target IoU and the paper's Table-4
factors (:mod:`spatialscout_gym.eval.analysis.failures`). It reads through the checks of ``report``,
``compare`` and ``leaderboard``: the map scored is the one the trace accepted, and a
``predictions.json`` that differs from it, a ``result.json`` naming another scene than its trace
and ground truth, or two episodes holding one scene and seed are refused in one line
(:func:`~spatialscout_gym.eval.layout.accepted_positions`,
:func:`~spatialscout_gym.eval.layout.check_run_scene`). Which directories are runs, and the names of their
files, belong to :mod:`spatialscout_gym.eval.layout`; this module adds only the viewer's rule that
nothing a symbolic link leads to outside the run directory is read, and no file with more than
one link (:func:`own_file`: a hard link is another name of a file anywhere on the same disk, so
``ln /etc/passwd RUN/frames/frame_002.png`` would otherwise be copied and served).
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

from spatialscout_gym.core.records import RunRecord
from spatialscout_gym.core.run_files import (FRAME_HASHES_FILE, FRAMES_DIR, GROUND_TRUTH_FILE, PREDICTIONS_FILE, RESULT_FILE, TRACE_FILE,
                                            frame_file_name)
from spatialscout_gym.eval.layout import (EvalDirError, accepted_positions, check_episode_identities, check_run_scene,
                                          find_run_dirs, is_run_dir, read_json_object, load_trace, read_record, read_trace, typed_trace,
                                          seed_of_dir)

__all__ = ["is_run_dir", "run_dirs", "run_payload", "eval_payload", "inside", "frame_files", "own_file"]


def inside(root: Path, path: Path) -> bool:
    """``path`` exists and stays inside ``root`` once every symbolic link is resolved: the viewer
    reads, copies and serves nothing that a link leads to outside the run directory."""
    try:
        return path.exists() and path.resolve().is_relative_to(root.resolve())
    except (OSError, RuntimeError):   # a link loop
        return False


def own_file(path: Path) -> bool:
    """``path`` itself (not followed) is a regular file with exactly one link: no symbolic link,
    no hard link (which could be any file of the machine under a run's name), no FIFO or device."""
    try:
        st = os.lstat(path)
    except (OSError, ValueError):
        return False
    return stat.S_ISREG(st.st_mode) and st.st_nlink == 1


def run_dirs(root: Path) -> list[Path]:
    """The run directories at or under ``root`` (:func:`~spatialscout_gym.eval.layout.find_run_dirs`)
    less any that a symbolic link leads to outside ``root``."""
    return [p for p in find_run_dirs(root) if inside(root, p)]


def _file(run: Path, name: str) -> Path | None:
    """``run/name`` when it exists (None when absent); :class:`EvalDirError` when it is a link
    leading out of ``run`` or not a regular file."""
    p = run / name
    if not p.exists() and not p.is_symlink():
        return None
    if not inside(run, p):
        raise EvalDirError(f"{p}: a symbolic link leading out of the run directory; the viewer reads only "
                           "the run's own files (replace the link with the file)")
    if not p.is_file():
        raise EvalDirError(f"{p}: expected a file, found a directory or another kind of entry")
    if not p.is_symlink() and not own_file(p):
        raise EvalDirError(f"{p}: a file with more than one (hard) link; the viewer reads only the run's own "
                           "files (replace the link with a copy)")
    return p


def frame_files(run: Path) -> tuple[list[Path], list[Path]]:
    """The files of ``run/frames/`` that the viewer copies, and the entries it skips: symbolic links
    (wherever they lead), hard links (a file with more than one link), directories and anything
    that is not a regular file (:func:`own_file`). The run's own record of its frames' hashes
    (``frames/sha256.json``, which ``verify --images`` reads) is neither: it is no frame, and not
    copied or reported."""
    frames = run / FRAMES_DIR
    if frames.is_symlink() or not frames.is_dir():
        return [], ([frames] if frames.is_symlink() or frames.exists() else [])
    keep: list[Path] = []
    skip: list[Path] = []
    hashes = Path(FRAME_HASHES_FILE).name
    for p in sorted(frames.iterdir()):
        if p.name == hashes and own_file(p):
            continue
        (keep if own_file(p) else skip).append(p)
    return keep, skip


def _scoring(run: Path, result: RunRecord) -> tuple[list[dict], dict | None]:
    """Per-target rows (id, group, task-frame centre and size, IoU, matched id) and the Table-4
    factors; empty for failed runs (no ground truth)."""
    from spatialscout_gym.core.scoring import score_scene
    from spatialscout_gym.eval.analysis.failures import submitted_errors, trajectory_factors
    from spatialscout_gym.eval.analysis.trajectory import RecordedBudgets, parse_trajectory
    from spatialscout_gym.core.files import load_ground_truth, load_predictions
    gt_path, pred_path = _file(run, GROUND_TRUTH_FILE), _file(run, PREDICTIONS_FILE)
    if gt_path is None or pred_path is None:
        return [], None
    gt_dict = read_json_object(gt_path)
    gt = load_ground_truth(gt_path)
    load_predictions(pred_path, gt)     # a file that is not a predictions file: its own one-line error
    score = score_scene(gt, accepted_positions(run, gt))   # predictions.json must be the map the trace accepted
    rows = []
    for i, t in enumerate(gt_dict["targets"]):
        size = [float(b - a) for a, b in zip(t["box_min"], t["box_max"])]  # world-aligned box, m
        rows.append({"id": t["id"], "group": t.get("group"), "center": t["center"], "size": size,
                     "iou": float(score.iou[i]), "matched": score.matched_id[i]})
    trace = run / TRACE_FILE
    try:
        traj = parse_trajectory(load_trace(trace), RecordedBudgets.of(result))
        errors = submitted_errors(score)
        factors = trajectory_factors(traj, errors, gt.num_targets).to_dict()
        factors["calls"] = _call_flags(traj, errors)
    except (KeyError, TypeError, ValueError, AttributeError, IndexError) as exc:
        if isinstance(exc, EvalDirError):
            raise
        raise EvalDirError(f"{trace}: an event lacks a field or has one of the wrong type ({type(exc).__name__}: "
                           f"{exc}); the trace is corrupted or was edited") from None
    return rows, factors


def _call_flags(traj: Any, errors: dict[str, float]) -> dict[str, list[str]]:
    """Table-4 factors at the tool calls where they arise, ``{tool-call index: [text]}``: the
    submission that set an unsupported final position (``unsupported_positions``), and the linked
    triangulation of an object off by more than 0.5 m that had a low residual
    (``inaccurate_despite_low_residual``) or warnings (``inaccurate_with_warnings``)."""
    from spatialscout_gym.eval.analysis.failures import INACCURATE_M, LOW_RESIDUAL_M
    from spatialscout_gym.eval.analysis.grounding import object_support
    flags: dict[str, list[str]] = {}
    add = lambda index, text: flags.setdefault(str(index), []).append(text)  # noqa: E731
    for oid, sup in object_support(traj).items():
        sub = traj.last_submission_of(oid)
        if sub is not None and not sup.supported:
            add(sub.index, f"unsupported position: {oid}")
        err, t = errors.get(oid), sup.linked
        if err is not None and err > INACCURATE_M and t is not None:
            if t.residual_m is not None and t.residual_m <= LOW_RESIDUAL_M:
                add(t.index, f"inaccurate despite low residual: {oid} off by {err:.2f} m")
            if t.warnings:
                add(t.index, f"inaccurate with warnings: {oid} off by {err:.2f} m")
    return flags


def run_payload(run: Path, frame_url: str = "frames") -> dict:
    """Everything the page shows of one run: result, the trace events, frame URLs, targets and
    factors. Frame URLs are ``{frame_url}/frame_NNN.png``."""
    record = read_record(_file(run, RESULT_FILE) or run / RESULT_FILE)
    result = record.to_json()   # the page's JSON: the record's form
    trace = _file(run, TRACE_FILE) or run / TRACE_FILE
    events = read_trace(trace)     # the page shows the events as written
    check_run_scene(run, record)
    targets, factors = _scoring(run, record)
    frames = {}
    for e in typed_trace(events, trace).captures:
        fid = e.frame_id
        if not 0 <= fid < 10**6:
            raise EvalDirError(f"{trace}: a capture event's frame_id must be an integer from 0 to 999999, found "
                               f"{fid}; the trace is corrupted or was edited")
        frames[str(fid)] = f"{frame_url}/{frame_file_name(fid)}"
    from spatialscout_gym.eval.settings_check import shown_settings
    return {"kind": "run", "name": run.name, "result": result, "events": events, "frames": frames,
            "targets": targets, "factors": factors, "settings": shown_settings(record)}


def eval_payload(root: Path, runs: list[Path]) -> dict:
    """The episode list of an evaluation directory: path, scene, agent, status, mean IoU. Two
    episodes holding one scene and seed (one's files copied over the other's) are refused, as by
    ``report`` (:func:`~spatialscout_gym.eval.layout.check_episode_identities`)."""
    rows, episodes = [], []
    for run in runs:                  # the listed runs only: a linked directory outside is not one
        r = read_record(_file(run, RESULT_FILE) or run / RESULT_FILE)
        key = run.relative_to(root).as_posix()
        if seed_of_dir(run.name) is not None:   # an episode, not a plain run folder
            episodes.append((key, r))
        rows.append({"path": key, "scene": r.scene_id, "agent": r.agent, "status": r.status,
                     "mean_iou": None if r.all is None else r.all.mean_iou,
                     "coverage": r.coverage, "tool_calls": r.counters.tool_calls})
    check_episode_identities(root, episodes)
    return {"kind": "eval", "name": root.name, "episodes": rows}
