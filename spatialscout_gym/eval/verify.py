"""Verify recorded runs by re-executing them (docs/protocol.md sections 4 and 7).

For each planned episode of a run or evaluation directory, :func:`verify_episode` first checks
its identity (the scene and seed its path names are the ones its records name), rebuilds the
scene (its content hash must equal the recorded ``scene_content_hash``; a scene from another
catalog version or with other contents is **refused** with the reason) and replays it with no
model and no pixels:

* a model run (its trace holds ``model_request``/``model_response`` events and ``harness.json``
  the settings) is replayed whole: the recorded replies are fed, in order, as a scripted model to
  the same wrapper and codec (:mod:`spatialscout_gym.eval.verify_conversation`), so every request
  the harness built, every tool call parsed from a reply, every reminder and the end rule are
  re-derived and compared event by event, and the usage, call and cost totals of ``result.json``
  and the prompt and tools of ``harness.json`` are checked against the replay. A run written
  without those records verifies on the tool side and says "conversation not checkable";
* any other run replays every recorded ``tool_call`` in order on a fresh episode.

Then every event of ``trace.jsonl`` must equal the recomputed one (fields the recomputed event
lacks, such as wall-clock timings, are not checked), ``predictions.json`` the replayed accepted
map, ``ground_truth.json`` the scene's, ``result.json``'s metrics, counters and end reason the
recomputed ones. Numbers agree within a relative 1e-9, texts after their numbers are compared
the same way (:mod:`spatialscout_gym.eval.verify_compare`: the rule that lets a run verify on
any machine); the largest deviation seen is reported per episode.

An episode planned in the evaluation (``scenes.json`` and the planned seeds) without a completed
run directory is reported ``missing`` (a failed one ``failed``), so nothing disappears silently.

No tool result depends on pixels (marks are pixel coordinates, poses are deterministic), so the
replay renders nothing. With ``images`` (``verify --images``) the captures are re-rendered with
SAPIEN and the SHA-256 of each raw RGB frame is compared with ``frames/sha256.json``; a run drawn
by another renderer (class, device, driver or SAPIEN version, named on both sides) is reported as
"images not comparable", not as a failure. The first difference is reported as
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
import os
import re
from pathlib import Path
from typing import Any

import numpy as np

from spatialscout_gym.core.camera import Intrinsics
from spatialscout_gym.core.files import load_predictions
from spatialscout_gym.core.scoring import GroundTruth, score_scene
from spatialscout_gym.episode.episode import Episode
from spatialscout_gym.core.run_files import (DELIVERED_FILE, GROUND_TRUTH_FILE, HARNESS_FILE, PREDICTIONS_FILE,
                                             PROMPT_FILE, RESULT_FILE, TRACE_FILE)
from spatialscout_gym.eval.layout import (SETTINGS_FILE, VERIFY_FILE, EvalDir, EvalDirError,
                                          publish_json, read_json_object, read_scene_args, read_trace, seed_of_dir)
from spatialscout_gym.eval.verify_compare import ABS_TOLERANCE, REL_TOLERANCE, Comparison

__all__ = ["EpisodeCheck", "verify_episode", "verify_dir", "write_verification", "verification_status",
           "REL_TOLERANCE", "ABS_TOLERANCE"]

_EPISODE_EVENTS = ("start", "capture", "tool_call", "map", "end")
_CHECKED_FILES = (RESULT_FILE, TRACE_FILE, PREDICTIONS_FILE, GROUND_TRUTH_FILE, HARNESS_FILE, PROMPT_FILE)


@dataclasses.dataclass
class EpisodeCheck:
    """The verdict on one episode: ``status`` is ``verified``, ``diverged``, ``refused``,
    ``missing`` (planned, no run directory with a result) or ``failed`` (every attempt failed:
    listed, nothing to re-execute). ``conversation`` says whether a model run's conversation was
    re-derived; ``numbers`` holds the largest relative deviation of a recorded number from its
    recomputation and the rounding-boundary cases seen."""

    key: str
    status: str
    detail: str = ""
    files_sha256: str | None = None
    images: str = "not checked"
    conversation: str = "not a model run"
    numbers: dict = dataclasses.field(default_factory=dict)

    def line(self) -> str:
        images = "" if self.images == "not checked" else f" (images: {self.images})"
        conv = f" (conversation {self.conversation})" if self.conversation.startswith("not checkable") else ""
        n = len(self.numbers.get("rounding_boundaries") or [])
        edge = f" ({n} rounding boundary case(s), not edits: see --json)" if n else ""
        return f"{self.key}: {self.status}" + (f" {self.detail}" if self.detail else "") + images + conv + edge

    def to_json(self) -> dict:
        return {"episode": self.key, "status": self.status, "detail": self.detail, "images": self.images,
                "conversation": self.conversation, "max_relative_deviation": self.numbers.get("max_relative_deviation"),
                "deviation_at": self.numbers.get("where"),
                "rounding_boundaries": self.numbers.get("rounding_boundaries", [])}


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
        from spatialscout_gym.core.run_files import FRAME_HASHES_FILE
        from spatialscout_gym.envs.run_dir import renderer_identity
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
        from spatialscout_gym.conversation.images import encode_for_model
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


def _identity(d: Path, result: dict, scene_args: dict[str, str]) -> None:
    """The scene and seed a run's path names must be the ones its records name (a run directory
    of the evaluation layout, ``<scene dir>/seed_<k>``); raise :class:`_Diverged` when not."""
    seed = seed_of_dir(d.name)
    if seed is None:
        return
    if result.get("seed") != seed:
        raise _Diverged(f"in its path: the path says seed {seed}, result.json says seed "
                        f"{_short(result.get('seed'))} (files moved or copied from another episode)")
    sid, scene_dir = str(result.get("scene_id")), d.parent.name
    arg = scene_args.get(scene_dir)
    if arg is None:
        if scene_args and scene_dir != sid:
            raise _Diverged(f"in its path: {scene_dir!r} is not planned in scenes.json, and result.json names "
                            f"scene {sid!r}")
        if not scene_args and scene_dir != sid and not re.fullmatch(r"procedural_\d+", scene_dir):
            return      # a run directory outside an evaluation: its own name is free
        if scene_dir != sid:
            raise _Diverged(f"in its path: the path says scene {scene_dir!r}, result.json says {sid!r}")
        return
    from spatialscout_gym.eval.runner import resolve_scene
    try:
        want = resolve_scene(arg).scene_id
    except Exception as exc:   # a spec file gone: the scene check below refuses it with the reason
        del exc
        return
    if want != sid:
        raise _Diverged(f"in its path: the path says scene {scene_dir!r} (scenes.json: {arg!r}, scene "
                        f"{want!r}), result.json says {sid!r} (files copied from another episode)")


def _event_name(e: Any) -> str:
    return str(e.get("tool", e.get("event"))) if isinstance(e, dict) else "?"


def _compare_traces(cmp: Comparison, rec: list[tuple[int, dict]], mine: list[dict], n_events: int) -> None:
    """Recorded events ``(line, event)`` against the recomputed ones, in order."""
    for (line, e), m in zip(rec, mine):
        diff = cmp.first_diff(e, m, at=f"event {line}: {_event_name(m)}")
        if diff:
            what = "event" if diff[0] == "event" else diff[0]
            raise _Diverged(f"at event {line}: {_event_name(m)}, {what}, recorded {_short(diff[1])} vs recomputed "
                            f"{_short(diff[2])}")
    if len(rec) > len(mine):
        line, e = rec[len(mine)]
        raise _Diverged(f"at event {line}: {_event_name(e)}, event, recorded {_short(e)} vs recomputed "
                        "(nothing: the replayed episode has no such event)")
    if len(mine) > len(rec):
        m = mine[len(rec)]
        line = rec[-1][0] + 1 if rec else 0
        raise _Diverged(f"at event {min(line, n_events)}: {_event_name(m)}, event, recorded (nothing: missing "
                        f"from the trace) vs recomputed {_short(m)}")


def _replay_tools(spec: Any, start: dict, rec: list[tuple[int, dict]]) -> Episode:
    """The tool side alone: every recorded ``tool_call`` on a fresh episode, no model."""
    K = Intrinsics.from_dict(start["intrinsics"])
    ep = Episode(spec.public, _NoPixels(K), image_budget=int(start["image_budget"]),
                 tool_call_budget=start["tool_call_budget"])
    for _, e in rec:
        if e.get("event") == "tool_call":
            args = e.get("args")
            ep.call(str(e.get("tool")), args if isinstance(args, dict) else {})
    ends = [e for _, e in rec if e.get("event") == "end"]
    if ends and not ep.done:
        ep.end(str(ends[-1].get("reason")))      # a wrapper's reason (no tool call, model budget)
    return ep


def _check_model_records(cmp: Comparison, d: Path, result: dict, harness: dict, w: Any) -> None:
    """``result.json``'s model figures and ``harness.json``'s prompt and tools against the replay."""
    from spatialscout_gym.eval.verify_conversation import harness_expected
    model = result.get("model") if isinstance(result.get("model"), dict) else {}
    want = {"model_calls": w.model_calls, "http_attempts": w.attempts, "usage": dict(w.usage),
            "prompt_style": harness.get("prompt_style"), "mode": harness.get("mode"),
            "model_call_budget": w.model_call_budget}
    diff = cmp.first_diff(model, want, "model")
    if diff:
        raise _Diverged(f"in {RESULT_FILE}: {diff[0]}, recorded {_short(diff[1])} vs the sum over the recorded "
                        f"replies {_short(diff[2])}" if ".usage" in diff[0] or "calls" in diff[0] or "attempts" in diff[0]
                        else f"in {RESULT_FILE}: {diff[0]}, recorded {_short(diff[1])} vs harness.json's "
                             f"{_short(diff[2])}")
    cost = model.get("cost_usd")
    prices = _price_table(d)
    name = model.get("name")
    if prices is not None and name in prices:
        from spatialscout_gym.baselines.vlm import episode_cost
        diff = cmp.first_diff(cost, episode_cost(w.usage, str(name), prices), "model.cost_usd")
        if diff:
            raise _Diverged(f"in {RESULT_FILE}: model.cost_usd, recorded {_short(diff[1])} vs the usage at the "
                            f"recorded prices {_short(diff[2])}")
    diff = cmp.first_diff(harness, _norm(harness_expected(w, harness)))
    if diff:
        raise _Diverged(f"in harness.json: {diff[0]}, recorded {_short(diff[1])} vs the harness's "
                        f"{_short(diff[2])}")
    p = d / PROMPT_FILE
    if p.is_file() and str(harness.get("task_prompt")) not in p.read_text(encoding="utf-8"):
        raise _Diverged("in prompt.txt: the task prompt is not the one harness.json and every request carry")


def _price_table(d: Path) -> dict | None:
    """The price table an evaluation was run with, when ``evaluate.json`` names a readable one."""
    for root in (d.parent.parent, d):
        p = root / SETTINGS_FILE
        if not p.is_file():
            continue
        try:
            opts = read_json_object(p).get("agent_options") or {}
        except EvalDirError:
            return None
        table = opts.get("price_table") if isinstance(opts, dict) else None
        if isinstance(table, dict):
            return table
        if isinstance(table, str) and Path(table).is_file():
            from spatialscout_gym.baselines.vlm import load_price_table
            try:
                return load_price_table(table)
            except Exception:
                return None
    return None


def verify_episode(key: str, run_dir: str | os.PathLike, scene_args: dict[str, str] | None = None,
                   images: ImageChecker | None = None) -> EpisodeCheck:
    """Re-execute one run directory (tool calls; for a model run the whole conversation) and
    compare (see the module docstring); with ``images``, also re-render the captures and compare
    their hashes."""
    from spatialscout_gym.eval.verify_conversation import (MODEL_EVENTS, is_model_run, not_checkable,
                                                           replay_model_run)
    d = Path(run_dir)
    digest = files_digest(d)
    cmp = Comparison()
    conversation = "not a model run"

    def verdict(status: str, detail: str = "", image_verdict: str = "not checked") -> EpisodeCheck:
        return EpisodeCheck(key, status, detail, digest, image_verdict, conversation, cmp.summary())

    try:
        result = read_json_object(d / RESULT_FILE)
        if not (d / TRACE_FILE).is_file():
            raise _Diverged("refused: no trace.jsonl to replay")
        events = read_trace(d / TRACE_FILE)
        _identity(d, result, scene_args or {})
        try:
            spec = _resolve(d, result, scene_args or {})
        except _Diverged as exc:
            return verdict("refused", str(exc))
        rec = [(i, e) for i, e in enumerate(events) if e.get("event") in _EPISODE_EVENTS]
        if not rec or rec[0][1].get("event") != "start":
            raise _Diverged(f"at event {rec[0][0] if rec else 0}: the trace does not open with a start event")
        start = rec[0][1]
        K = Intrinsics.from_dict(start["intrinsics"])
        want_K = spec.public.intrinsics.scaled(K.width, K.height)
        diff = cmp.first_diff(start["intrinsics"], _norm(want_K.to_dict()))
        if diff:
            raise _Diverged(f"at event {rec[0][0]}: start, intrinsics, recorded {_short(start['intrinsics'])} vs "
                            f"the scene's {_short(want_K.to_dict())}")
        harness = None
        wrapper = None
        if is_model_run(events):
            hp = d / HARNESS_FILE
            harness = read_json_object(hp) if hp.is_file() else None
            why = not_checkable(harness)
            conversation = f"not checkable: {why}" if why else "re-derived"
        if conversation == "re-derived":
            replies = [e for e in events if e.get("event") == "model_response"]
            wrapper, mine = replay_model_run(spec, start, harness, replies, int(result.get("seed") or 0))
            ep = wrapper.episode
            full = [(i, e) for i, e in enumerate(events)
                    if e.get("event") in _EPISODE_EVENTS + MODEL_EVENTS]
            _compare_traces(cmp, full, [_norm(x) for x in mine], len(events))
            n_req = sum(e.get("event") == "model_request" for e in mine)
            conversation = f"re-derived: {n_req} requests, {len(replies)} replies"
        else:
            ep = _replay_tools(spec, start, rec)
            _compare_traces(cmp, rec, [_norm(x) for x in ep.trace], len(events))
        positions = {k: [float(x) for x in v] for k, v in ep.accepted_map.items()}
        gt = GroundTruth.from_spec(spec)
        try:
            recorded_pred = load_predictions(d, gt)
        except Exception as exc:
            raise _Diverged(f"in {PREDICTIONS_FILE}: cannot be read ({exc})") from None
        diff = cmp.first_diff(_norm(recorded_pred), _norm(positions)) or (
            cmp.first_diff(_norm(positions), _norm(recorded_pred)))
        if diff:
            raise _Diverged(f"in {PREDICTIONS_FILE}: positions, {diff[0]}, recorded {_short(diff[1])} vs "
                            f"recomputed {_short(diff[2])}")
        gt_file = read_json_object(d / GROUND_TRUTH_FILE) if (d / GROUND_TRUTH_FILE).is_file() else {}
        diff = cmp.first_diff(gt_file, _norm(spec.ground_truth_dict()))
        if diff:
            raise _Diverged(f"in {GROUND_TRUTH_FILE}: {diff[0]}, recorded {_short(diff[1])} vs the scene's "
                            f"{_short(diff[2])}")
        score = score_scene(gt, positions)
        want = _norm({**score.metrics(), "scorer": score.record(), "end_reason": ep.end_reason,
                      "counters": ep.counters(), "scene_id": spec.scene_id})
        diff = cmp.first_diff(result, want)
        if diff:
            raise _Diverged(f"in {RESULT_FILE}: {diff[0]}, recorded {_short(diff[1])} vs recomputed {_short(diff[2])}")
        if wrapper is not None:
            _check_model_records(cmp, d, result, harness, wrapper)
        image_verdict = images.check(d, spec, events) if images is not None else "not checked"
    except _Diverged as exc:
        return verdict("diverged", str(exc))
    except EvalDirError as exc:
        return verdict("diverged", f"unreadable: {exc}")
    except (KeyError, TypeError, ValueError) as exc:   # a record with a field of the wrong kind
        return verdict("diverged", f"unreadable: a record has a missing or malformed field ({type(exc).__name__}: "
                                   f"{_short(str(exc))})")
    return verdict("verified", "", image_verdict)


def _scene_args(root: Path) -> dict[str, str]:
    """``scenes.json`` (an unreadable one names no scene: each run then resolves by its own id)."""
    try:
        return read_scene_args(root)
    except EvalDirError:
        return {}


def verify_dir(path: str | os.PathLike, progress: bool = False, images: bool = False) -> list[EpisodeCheck]:
    """:func:`verify_episode` for every completed episode of a run or evaluation directory
    (``images``: re-render the captures with SAPIEN and compare their hashes too), then one
    ``missing`` check per planned episode without a result and one ``failed`` check per episode
    whose attempts all failed, in key order."""
    ev = EvalDir(path)
    args = _scene_args(ev.root)
    done = ev.completed()
    planned = ev.planned()
    if not done and not planned and not ev.failed():
        raise FileNotFoundError(f"{ev.root} holds no completed episode to verify (a run directory or an "
                                "evaluation directory from `spatialscout evaluate`)")
    it: Any = done
    if progress:
        from tqdm import tqdm
        it = tqdm(done, desc=f"verify {ev.root.name}", unit="episode", leave=False)
    checker = ImageChecker() if images else None
    try:
        checks = [verify_episode(k, a.run_dir, args, checker) for k, a in it]
    finally:
        if checker is not None:
            checker.close()
    seen = {c.key for c in checks}
    for e in ev.failed():
        if e.key not in seen:
            seen.add(e.key)
            checks.append(EpisodeCheck(e.key, "failed", "(every attempt failed: counted as failed by report; "
                                                        "nothing to re-execute)", conversation="not checked"))
    for key in planned:
        if key not in seen:
            checks.append(EpisodeCheck(key, "missing", "(planned in scenes.json; no run directory with a "
                                                        "result.json: deleted, moved or never run)",
                                       conversation="not checked"))
    return sorted(checks, key=lambda c: c.key)


def write_verification(path: str | os.PathLike, checks: list[EpisodeCheck]) -> Path:
    """Write ``DIR/verify.json``: ``{"episodes": {key: {"status", "detail", "files_sha256", ...}}}``."""
    from spatialscout_gym import __version__
    return publish_json(Path(path) / VERIFY_FILE, {
        "spatialscout_gym": __version__, "rel_tolerance": REL_TOLERANCE, "abs_tolerance": ABS_TOLERANCE,
        "episodes": {c.key: {"status": c.status, "detail": c.detail, "files_sha256": c.files_sha256,
                             "images": c.images, "conversation": c.conversation, "numbers": c.numbers}
                     for c in checks}})


def verification_status(path: str | os.PathLike) -> dict:
    """What ``DIR/verify.json`` says of the directory's completed episodes now.

    Returns ``{"status": "verified" | "diverged" | "not checked", "episodes": {key: status}}`` and
    the keys of :func:`planned_count`:
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
    return {"status": status, "episodes": out, **planned_count(ev)}


def planned_count(ev: EvalDir) -> dict:
    """``{"planned": M, "completed": N, "missing": [keys]}``: the episodes the evaluation planned,
    those with a completed run, and the planned ones with no run directory or failure record at all
    (deleted or never run). ``report`` and ``leaderboard`` print "N of M planned"."""
    planned = ev.planned()
    done = {k for k, _ in ev.completed()}
    accounted = done | {e.key for e in ev.failed()}
    return {"planned": len(planned) or len(done), "completed": len(done),
            "missing": [k for k in planned if k not in accounted]}
