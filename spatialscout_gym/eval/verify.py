"""Verify recorded runs by re-executing their tool calls (docs/protocol.md sections 4 and 7).

For each completed episode of a run or evaluation directory, :func:`verify_episode` rebuilds the
scene (its content hash must equal the recorded ``scene_content_hash``; a scene from another
catalog version or with other contents is **refused** with the reason), opens a fresh
:class:`~spatialscout_gym.episode.episode.Episode` with the recorded budgets and intrinsics, and
replays every recorded ``tool_call`` in order with no model. Then it checks, in this order:

1. every episode event of ``trace.jsonl`` (``start``, ``capture``, ``tool_call``, ``map``,
   ``end``) equals the recomputed one, field by field, numbers exactly (fields the recomputed
   event lacks, such as model annotations and timings, are not checked);
2. ``predictions.json`` equals the replayed accepted map exactly;
3. ``ground_truth.json`` equals the scene's ground truth;
4. ``result.json``'s metrics and scorer record equal the recomputed score (to 1e-12), and its
   counters and end reason equal the replay's.

No tool result depends on pixels (marks are pixel coordinates, poses are deterministic), so the
replay renders nothing: captures get a blank image. With ``images`` (``verify --images``) the
captures are re-rendered with SAPIEN and the SHA-256 of each raw RGB frame is compared with
``frames/sha256.json``; a run drawn by another renderer (class, device, driver or SAPIEN version,
named on both sides) is reported as "images not comparable", not as a failure. The first difference is reported as
``diverged at event N: tool, field, recorded vs recomputed`` (N: 0-based line of
``trace.jsonl``; files other than the trace are named instead).

:func:`write_verification` writes ``DIR/verify.json``: per episode its status and the SHA-256 of
the files checked, so ``report`` and ``leaderboard`` show an episode as verified only while its
files are unchanged (:func:`verification_status`).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import os
from pathlib import Path
from typing import Any

import numpy as np

from spatialscout_gym.core.camera import Intrinsics
from spatialscout_gym.core.files import load_predictions
from spatialscout_gym.core.scoring import GroundTruth, score_scene
from spatialscout_gym.episode.episode import Episode
from spatialscout_gym.eval.layout import (DELIVERED_FILE, GROUND_TRUTH_FILE, PREDICTIONS_FILE, RESULT_FILE,
                                          TRACE_FILE, VERIFY_FILE, EvalDir, EvalDirError, publish_json, read_json_object,
                                          read_trace)

__all__ = ["EpisodeCheck", "verify_episode", "verify_dir", "write_verification", "verification_status",
           "SCORE_TOLERANCE"]

SCORE_TOLERANCE = 1e-12
"""Recorded and recomputed scores must agree this closely (absolute)."""
_EPISODE_EVENTS = ("start", "capture", "tool_call", "map", "end")
_CHECKED_FILES = (RESULT_FILE, TRACE_FILE, PREDICTIONS_FILE, GROUND_TRUTH_FILE)


@dataclasses.dataclass
class EpisodeCheck:
    """The verdict on one episode: ``status`` is ``verified``, ``diverged`` or ``refused``."""

    key: str
    status: str
    detail: str = ""
    files_sha256: str | None = None
    images: str = "not checked"

    def line(self) -> str:
        images = "" if self.images == "not checked" else f" (images: {self.images})"
        return f"{self.key}: {self.status}" + (f" {self.detail}" if self.detail else "") + images


class _Diverged(Exception):
    pass


class _NoPixels:
    """A renderer that draws nothing: tool results never depend on pixels."""

    def __init__(self, intrinsics: Intrinsics) -> None:
        self.intrinsics = intrinsics

    def capture_rgb(self, pose: Any) -> np.ndarray:
        return np.zeros((self.intrinsics.height, self.intrinsics.width, 3), np.uint8)


def files_digest(run_dir: Path) -> str:
    """SHA-256 over the checked files of a run directory (absent files count as empty)."""
    h = hashlib.sha256()
    for name in _CHECKED_FILES:
        p = run_dir / name
        h.update(name.encode() + b"\0" + (p.read_bytes() if p.is_file() else b"") + b"\0")
    return h.hexdigest()


def _short(x: Any) -> str:
    s = json.dumps(x, sort_keys=True)
    return s if len(s) <= 120 else s[:117] + "..."


def _first_diff(recorded: Any, recomputed: Any, path: str = "", tol: float = 0.0) -> tuple[str, Any, Any] | None:
    """The first field where ``recorded`` differs from ``recomputed`` (keys the recomputed dict
    lacks are not checked); numbers compare exactly unless ``tol``."""
    if isinstance(recomputed, dict):
        if not isinstance(recorded, dict):
            return path or "(value)", recorded, recomputed
        for k, v in recomputed.items():
            if k not in recorded:
                return f"{path}.{k}".lstrip("."), "(missing)", v
            d = _first_diff(recorded[k], v, f"{path}.{k}", tol)
            if d:
                return d
        return None
    if isinstance(recomputed, list):
        if not isinstance(recorded, list) or len(recorded) != len(recomputed):
            return path.lstrip("."), recorded, recomputed
        for i, (a, b) in enumerate(zip(recorded, recomputed)):
            d = _first_diff(a, b, f"{path}[{i}]", tol)
            if d:
                return d
        return None
    both_numbers = all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in (recorded, recomputed))
    if both_numbers:
        same = recorded == recomputed or (tol > 0 and math.isclose(recorded, recomputed, rel_tol=0, abs_tol=tol))
    else:
        same = recorded == recomputed and type(recorded) is type(recomputed)
    return None if same else (path.lstrip("."), recorded, recomputed)


def _norm(x: Any) -> Any:
    return json.loads(json.dumps(x))


def _resolve(run_dir: Path, result: dict, scene_args: dict[str, str]) -> Any:
    """The scene of a run, or raise :class:`_Diverged` with why it cannot be had."""
    from spatialscout_gym.eval.runner import SceneNotRecoverable, resolve_recorded_scene
    try:
        return resolve_recorded_scene(run_dir, result, scene_args)
    except SceneNotRecoverable as exc:
        raise _Diverged(str(exc)) from None


class ImageChecker:
    """Re-renders recorded captures with SAPIEN and compares the SHA-256 of the raw RGB frames
    (``verify --images``). One renderer serves every episode (switched with ``set_scene``)."""

    def __init__(self) -> None:
        self._renderer: Any = None

    def check(self, run_dir: Path, spec: Any, events: list[dict]) -> str:
        """``match``, ``not recorded ...``, ``not comparable: ...`` or raise :class:`_Diverged`."""
        from spatialscout_gym.core.frames import CameraPose
        from spatialscout_gym.envs.run_dir import FRAME_HASHES_FILE, renderer_identity
        p = run_dir / FRAME_HASHES_FILE
        if not p.is_file():
            return "not recorded (a run made before frame hashes were written)"
        rec = read_json_object(p)
        caps = [e for e in events if e.get("event") == "capture"]
        K = Intrinsics.from_dict(caps[0]["intrinsics"])
        if self._renderer is None:
            from spatialscout_gym.render.sapien_renderer import SapienRenderer
            self._renderer = SapienRenderer(spec, K.width, K.height)
        else:
            self._renderer.set_scene(spec)
        here = renderer_identity(self._renderer)
        there = rec.get("renderer") or {}
        if here != there or (self._renderer.intrinsics.width, self._renderer.intrinsics.height) != (K.width, K.height):
            return f"not comparable: recorded with {_short(there)}, here {_short(here)}"
        images = {}
        for e in caps:
            fid = str(e["frame_id"])
            images[fid] = img = np.asarray(self._renderer.capture_rgb(CameraPose.from_dict(e["pose_world"])))
            got = hashlib.sha256(np.ascontiguousarray(img).tobytes()).hexdigest()
            want = (rec.get("rgb_sha256") or {}).get(fid)
            if got != want:
                raise _Diverged(f"in {FRAME_HASHES_FILE}: frame {fid}, recorded {str(want)[:12]} vs re-rendered "
                                f"{got[:12]} (same renderer: {_short(here)})")
        delivered = run_dir / DELIVERED_FILE
        if not delivered.is_file():
            return "match"
        from spatialscout_gym.wrappers.images import encode_for_model
        rec = read_json_object(delivered)
        for fid, want in sorted((rec.get("jpeg_sha256") or {}).items(), key=lambda kv: int(kv[0])):
            jpeg = encode_for_model(images[fid], int(fid), max_side=int(rec["max_side_px"]),
                                    quality=int(rec["jpeg_quality"])).jpeg
            got = hashlib.sha256(jpeg).hexdigest()
            if got != want:
                raise _Diverged(f"in {DELIVERED_FILE}: frame {fid}, recorded {str(want)[:12]} vs re-encoded "
                                f"{got[:12]} (the bytes the model received)")
        return f"match, {len(rec.get('jpeg_sha256') or {})} delivered images too"

    def close(self) -> None:
        if self._renderer is not None:
            self._renderer.close()
            self._renderer = None


def verify_episode(key: str, run_dir: str | os.PathLike, scene_args: dict[str, str] | None = None,
                   images: ImageChecker | None = None) -> EpisodeCheck:
    """Re-execute one run directory's tool calls and compare (see the module docstring); with
    ``images``, also re-render the captures and compare their hashes."""
    d = Path(run_dir)
    digest = files_digest(d)
    try:
        result = read_json_object(d / RESULT_FILE)
        if not (d / TRACE_FILE).is_file():
            raise _Diverged("refused: no trace.jsonl to replay")
        events = read_trace(d / TRACE_FILE)
        try:
            spec = _resolve(d, result, scene_args or {})
        except _Diverged as exc:
            return EpisodeCheck(key, "refused", str(exc), digest)
        rec = [(i, e) for i, e in enumerate(events) if e.get("event") in _EPISODE_EVENTS]
        if not rec or rec[0][1].get("event") != "start":
            raise _Diverged(f"at event {rec[0][0] if rec else 0}: the trace does not open with a start event")
        start = rec[0][1]
        K = Intrinsics.from_dict(start["intrinsics"])
        want_K = spec.public.intrinsics.scaled(K.width, K.height)
        if _first_diff(start["intrinsics"], _norm(want_K.to_dict())):
            raise _Diverged(f"at event {rec[0][0]}: start, intrinsics, recorded {_short(start['intrinsics'])} vs "
                            f"the scene's {_short(want_K.to_dict())}")
        ep = Episode(spec.public, _NoPixels(K), image_budget=int(start["image_budget"]),
                     tool_call_budget=start["tool_call_budget"])
        for _, e in rec:
            if e.get("event") == "tool_call":
                args = e.get("args")
                ep.call(str(e.get("tool")), args if isinstance(args, dict) else {})
        ends = [e for _, e in rec if e.get("event") == "end"]
        if ends and not ep.done:
            ep.end(str(ends[-1].get("reason")))      # a wrapper's reason (no tool call, model budget)
        mine = [_norm(x) for x in ep.trace]
        for (line, e), m in zip(rec, mine):
            diff = _first_diff(e, m)
            if diff:
                name = m.get("tool", m.get("event"))
                raise _Diverged(f"at event {line}: {name}, {diff[0]}, recorded {_short(diff[1])} vs recomputed "
                                f"{_short(diff[2])}")
        if len(rec) > len(mine):
            line, e = rec[len(mine)]
            raise _Diverged(f"at event {line}: {e.get('tool', e.get('event'))}, event, recorded {_short(e)} vs "
                            "recomputed (nothing: the replayed episode has no such event)")
        if len(mine) > len(rec):
            m = mine[len(rec)]
            raise _Diverged(f"at event {len(events)}: {m.get('tool', m.get('event'))}, event, recorded "
                            f"(nothing: missing from the trace) vs recomputed {_short(m)}")
        positions = {k: [float(x) for x in v] for k, v in ep.accepted_map.items()}
        gt = GroundTruth.from_spec(spec)
        try:
            recorded_pred = load_predictions(d, gt)
        except Exception as exc:
            raise _Diverged(f"in {PREDICTIONS_FILE}: cannot be read ({exc})") from None
        diff = _first_diff(_norm(recorded_pred), _norm(positions)) or (
            _first_diff(_norm(positions), _norm(recorded_pred)))
        if diff:
            raise _Diverged(f"in {PREDICTIONS_FILE}: positions, {diff[0]}, recorded {_short(diff[1])} vs "
                            f"recomputed {_short(diff[2])}")
        gt_file = read_json_object(d / GROUND_TRUTH_FILE) if (d / GROUND_TRUTH_FILE).is_file() else {}
        diff = _first_diff(gt_file, _norm(spec.ground_truth_dict()))
        if diff:
            raise _Diverged(f"in {GROUND_TRUTH_FILE}: {diff[0]}, recorded {_short(diff[1])} vs the scene's "
                            f"{_short(diff[2])}")
        score = score_scene(gt, positions)
        want = _norm({**score.metrics(), "scorer": score.record(), "end_reason": ep.end_reason,
                      "counters": ep.counters(), "scene_id": spec.scene_id})
        diff = _first_diff(result, want, tol=SCORE_TOLERANCE)
        if diff:
            raise _Diverged(f"in {RESULT_FILE}: {diff[0]}, recorded {_short(diff[1])} vs recomputed {_short(diff[2])}")
        image_verdict = images.check(d, spec, events) if images is not None else "not checked"
    except _Diverged as exc:
        return EpisodeCheck(key, "diverged", str(exc), digest)
    except EvalDirError as exc:
        return EpisodeCheck(key, "diverged", f"unreadable: {exc}", digest)
    return EpisodeCheck(key, "verified", "", digest, image_verdict)


def _scene_args(root: Path) -> dict[str, str]:
    p = root / "scenes.json"
    try:
        d = read_json_object(p) if p.is_file() else {}
    except EvalDirError:
        return {}
    return {str(k): str(v) for k, v in d.items()}


def verify_dir(path: str | os.PathLike, progress: bool = False, images: bool = False) -> list[EpisodeCheck]:
    """:func:`verify_episode` for every completed episode of a run or evaluation directory
    (``images``: re-render the captures with SAPIEN and compare their hashes too)."""
    ev = EvalDir(path)
    args = _scene_args(ev.root)
    done = ev.completed()
    if not done:
        raise FileNotFoundError(f"{ev.root} holds no completed episode to verify (a run directory or an "
                                "evaluation directory from `spatialscout evaluate`)")
    it: Any = done
    if progress:
        from tqdm import tqdm
        it = tqdm(done, desc=f"verify {ev.root.name}", unit="episode", leave=False)
    checker = ImageChecker() if images else None
    try:
        return [verify_episode(k, a.run_dir, args, checker) for k, a in it]
    finally:
        if checker is not None:
            checker.close()


def write_verification(path: str | os.PathLike, checks: list[EpisodeCheck]) -> Path:
    """Write ``DIR/verify.json``: ``{"episodes": {key: {"status", "detail", "files_sha256"}}}``."""
    from spatialscout_gym import __version__
    return publish_json(Path(path) / VERIFY_FILE, {
        "spatialscout_gym": __version__, "score_tolerance": SCORE_TOLERANCE,
        "episodes": {c.key: {"status": c.status, "detail": c.detail, "files_sha256": c.files_sha256,
                             "images": c.images}
                     for c in checks}})


def verification_status(path: str | os.PathLike) -> dict:
    """What ``DIR/verify.json`` says of the directory's completed episodes now.

    Returns ``{"status": "verified" | "diverged" | "not checked", "episodes": {key: status}}``:
    an episode whose files changed since it was verified, or that is not in ``verify.json``,
    is ``not checked``; the directory is ``verified`` when every completed episode is, and
    ``diverged`` when any diverged or was refused.
    """
    ev = EvalDir(path)
    p = ev.root / VERIFY_FILE
    try:
        rec = read_json_object(p).get("episodes", {}) if p.is_file() else {}
    except EvalDirError:
        rec = {}
    out: dict[str, str] = {}
    for key, a in ev.completed():
        r = rec.get(key) if isinstance(rec, dict) else None
        if not isinstance(r, dict) or r.get("files_sha256") != files_digest(a.run_dir):
            out[key] = "not checked"
        else:
            out[key] = "verified" if r.get("status") == "verified" else "diverged"
    vals = set(out.values())
    status = ("diverged" if "diverged" in vals else "verified" if vals == {"verified"} else "not checked")
    return {"status": status, "episodes": out}
