"""Verify recorded runs by re-executing them (docs/protocol.md sections 4 and 7).

For each planned episode of a run or evaluation directory, :func:`verify_episode` first checks
its identity (the scene and seed its path names are the ones its records name), rebuilds the
scene (its content hash must equal the recorded ``scene_content_hash``; a scene from another
catalog version or with other contents is **refused** with the reason, and so is a scene under a
catalog id whose hash is not the one that catalog version froze for the id) and replays it with no
model and no pixels:

* a model run (its trace holds ``model_request``/``model_response`` events and ``harness.json``
  the settings) is replayed whole: the recorded replies are fed, in order, as a scripted model to
  the same wrapper and codec (:mod:`spatialscout_gym.eval.verification.verify_conversation`), so every request
  the harness built, every tool call parsed from a reply, every reminder and the end rule are
  re-derived and compared event by event, and the usage, call and cost totals of ``result.json``
  and the prompt and tools of ``harness.json`` are checked against the replay. A run written
  without those records is ``tool-side only``: its tool calls alone are replayed;
* any other run replays every recorded ``tool_call`` in order on a fresh episode.

Then every event of ``trace.jsonl`` must equal the recomputed one (a recorded field or event kind
the replay does not produce is a divergence; wall-clock timings are not compared),
``predictions.json`` the replayed accepted map **exactly** (what the agent submitted is copied,
never computed), ``ground_truth.json`` the scene's, ``result.json``'s metrics, counters and end
reason the recomputed ones, and every recorded setting (budgets, resolution, catalog version,
scene hash) must agree across ``result.json``, ``evaluate.json``, ``harness.json``, the trace and
the scene; each frame must decode to the hash written with it. Other numbers agree within a
relative 1e-9, texts after their numbers are compared the same way
(:mod:`spatialscout_gym.eval.verification.verify_compare`: the rule that lets a run verify on any machine); the
largest deviation seen is reported per episode.

A model run without a complete ``harness.json`` is ``tool-side only``, never ``verified``. An
episode planned in the evaluation (``planned.json``, else ``scenes.json`` and the seeds seen)
without a completed run directory is reported ``missing``, one the plan does not name
``unplanned``, so nothing disappears or is added silently; a failed one is ``failed`` only with its
failed attempt archived with its trace (a note alone is ``refused``), and two model runs of one
scene with the same model replies are one conversation filed under two seeds (both ``diverged``);
the seed itself is bound into the trace's start event. A broken file gives its
episode a verdict naming it; the others get theirs.

No tool result depends on pixels (marks are pixel coordinates, poses are deterministic), so the
replay renders nothing. With ``images`` (``verify --images``) the captures are re-rendered with
SAPIEN and the SHA-256 of each raw RGB frame is compared with ``frames/sha256.json``; a run drawn
by another renderer (class, device, driver or SAPIEN version, named on both sides) is reported as
"images not comparable", not as a failure. The first difference is reported as
``diverged at event N: tool, field, recorded vs recomputed`` (N: 0-based line of
``trace.jsonl``; files other than the trace are named instead).

:func:`write_verification` writes ``DIR/verify.json`` (a record for the submitter).
:func:`verification_status`, which ``report`` and ``leaderboard`` call, never trusts it: it
verifies the files itself, reusing only verdicts kept outside the directory for files with the
same key (:func:`verify_dir` with ``use_cache``;
:mod:`~spatialscout_gym.eval.verification.verify_cache`). The threat model is in docs/verify.md.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import re
from pathlib import Path
from typing import Any, Literal

import numpy as np

from spatialscout_gym.core.camera import Intrinsics
from spatialscout_gym.core.frames import CameraPose
from spatialscout_gym.core.renderer_api import BlankRenderer
from spatialscout_gym.core.spec import SceneSpec
from spatialscout_gym.core.eval_records import EvaluationRecord, load_evaluation
from spatialscout_gym.core.files import load_predictions
from spatialscout_gym.core.harness_record import HarnessRecord, load_harness
from spatialscout_gym.core.records import (SCHEMA_VERSION, RecordError, RecordInputs, RunRecord, derive_run_record, derived_json, run_kind, underivable_fields)
from spatialscout_gym.core.scoring import GroundTruth
from spatialscout_gym.core.trace_events import EndEvent, NBVStepEvent, StartEvent, Trace, parse_trace
from spatialscout_gym.episode.episode import Episode
from spatialscout_gym.envs.run_dir import bind_seed
from spatialscout_gym.core.run_files import (FRAMES_DIR, frame_file_name, DELIVERED_FILE, GROUND_TRUTH_FILE, HARNESS_FILE,
                                             PREDICTIONS_FILE, PROMPT_FILE, RESULT_FILE, TRACE_FILE)
from spatialscout_gym.eval.layout import (ATTEMPTS_SUFFIX, FAILED_SUFFIX, EpisodeDir, PLANNED_FILE, SCENES_FILE, SETTINGS_FILE, VERIFY_FILE, EvalDir,
                                          EvalDirError, evaluation_file, publish_json, read_json_object, read_record, read_scene_args,
                                          read_trace, seed_of_dir)
from spatialscout_gym.eval.verification.verify_cache import cache_dir, cache_key, files_digest, run_files
from spatialscout_gym.eval.verification.verify_compare import ABS_TOLERANCE, REL_TOLERANCE, Comparison

__all__ = ["EpisodeCheck", "verify_episode", "verify_dir", "write_verification", "verification_status",
           "REL_TOLERANCE", "ABS_TOLERANCE", "TOOL_SIDE_ONLY", "STATUSES"]

_EPISODE_EVENTS = ("start", "capture", "tool_call", "map", "end")


TOOL_SIDE_ONLY = "tool-side only"
"""The status of a model run whose conversation cannot be re-derived (no complete ``harness.json``):
its tool calls re-executed, its replies unchecked. Not ``verified``: it passes ``verify`` only with
``--allow-tool-side-only``, and every page that shows the run shows this status."""
STATUSES = ("verified", "repeated", TOOL_SIDE_ONLY, "diverged", "refused", "unplanned", "missing", "failed")


@dataclasses.dataclass
class EpisodeCheck:
    """The verdict on one episode: ``status`` is ``verified``, ``tool-side only`` (a model run
    whose conversation cannot be re-derived), ``diverged``, ``refused``, ``unplanned`` (a run the
    plan does not name), ``missing`` (planned, no run directory with a result) or ``failed``
    (every attempt failed: listed, nothing to re-execute). ``conversation`` says whether a model run's conversation was
    re-derived; ``numbers`` holds the largest relative deviation of a recorded number from its
    recomputation and the rounding-boundary cases seen."""

    key: str
    status: str
    detail: str = ""
    files_sha256: str | None = None
    images: str = "not checked"
    conversation: str = "not a model run"
    numbers: dict = dataclasses.field(default_factory=dict)
    seconds: float = 0.0
    cached: bool = False

    def line(self) -> str:
        images = "" if self.images == "not checked" else f" (images: {self.images})"
        conv = ""
        n = len(self.numbers.get("rounding_boundaries") or [])
        edge = f" ({n} rounding boundary case(s), not edits: see --json)" if n else ""
        return f"{self.key}: {self.status}" + (f" {self.detail}" if self.detail else "") + images + conv + edge

    def to_json(self) -> dict:
        return {"episode": self.key, "status": self.status, "detail": self.detail, "images": self.images,
                "conversation": self.conversation, "max_relative_deviation": self.numbers.get("max_relative_deviation"),
                "deviation_at": self.numbers.get("where"),
                "rounding_boundaries": self.numbers.get("rounding_boundaries", []),
                "cached": self.cached, "seconds": self.seconds}


class _Diverged(Exception):
    pass


def _regular_files(run_dir: Path) -> None:
    """Raise :class:`_Diverged` when an entry is neither a regular file nor a folder (a FIFO, a
    socket, a symbolic link: reading one could block or read outside the run)."""
    for p in run_files(run_dir):
        if p.is_symlink() or not (p.is_file() or p.is_dir()):
            raise _Diverged(f"unreadable: {p.relative_to(run_dir)} is not a regular file (a link, FIFO or "
                            "device); a run directory holds files only")


def _short(x: Any) -> str:
    s = json.dumps(x, sort_keys=True)
    return s if len(s) <= 120 else s[:117] + "..."


def _norm(x: Any) -> Any:
    return json.loads(json.dumps(x))


def _resolve(run_dir: Path, result: RunRecord, scene_args: dict[str, str]) -> Any:
    """The scene of a run, or raise :class:`_Diverged` with why it cannot be had."""
    from spatialscout_gym.eval.running.runner import SceneNotRecoverable, resolve_recorded_scene
    try:
        return resolve_recorded_scene(run_dir, result, scene_args)
    except SceneNotRecoverable as exc:
        raise _Diverged(str(exc)) from None


class ImageChecker:
    """Re-renders recorded captures with SAPIEN and compares the SHA-256 of the raw RGB frames
    (``verify --images``). One renderer serves every episode (switched with ``set_scene``)."""

    def __init__(self) -> None:
        self._renderer: Any = None

    def check(self, run_dir: Path, spec: Any, trace: Trace) -> str:
        """``match``, ``not recorded ...``, ``not comparable: ...`` or raise :class:`_Diverged`."""
        from spatialscout_gym.core.run_files import FRAME_HASHES_FILE
        from spatialscout_gym.envs.run_dir import renderer_identity
        p = run_dir / FRAME_HASHES_FILE
        if not p.is_file():
            return "not recorded (a run made before frame hashes were written)"
        rec = read_json_object(p)
        caps = trace.captures
        K = Intrinsics.from_dict(caps[0].intrinsics)
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
            fid = str(e.frame_id)
            images[fid] = img = np.asarray(self._renderer.capture_rgb(CameraPose.from_dict(e.pose_world)))
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


def _identity(d: Path, record: RunRecord, scene_args: dict[str, str]) -> None:
    """The scene and seed a run's path names must be the ones its records name (a run directory
    of the evaluation layout, ``<scene dir>/seed_<k>``); raise :class:`_Diverged` when not."""
    seed = seed_of_dir(d.name)
    if seed is None:
        return
    if record.seed != seed:
        raise _Diverged(f"in its path: the path says seed {seed}, result.json says seed "
                        f"{_short(record.seed)} (files moved or copied from another episode)")
    sid, scene_dir = record.scene_id, d.parent.name
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
    from spatialscout_gym.eval.running.runner import resolve_scene
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


def _compare_traces(cmp: Comparison, rec: list[tuple[int, dict]], mine: list[dict], n_events: int,
                    extra_ok: Literal[True] | tuple[str, ...] = True) -> None:
    """Recorded events ``(line, event)`` against the recomputed ones, in order (``extra_ok``: the
    fields a recorded event may hold beyond the recomputed one's, see :meth:`Comparison.first_diff`)."""
    for (line, e), m in zip(rec, mine):
        diff = cmp.first_diff(e, m, at=f"event {line}: {_event_name(m)}", extra_ok=extra_ok)
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


def _replay_tools(spec: SceneSpec, trace: Trace) -> Episode:
    """The tool side alone: every recorded ``tool_call`` on a fresh episode, no model."""
    start = trace.start
    assert start is not None    # the caller checked the trace opens with one
    K = Intrinsics.from_dict(start.intrinsics)
    ep = Episode(spec.public, BlankRenderer(spec, K), image_budget=start.image_budget,
                 tool_call_budget=start.tool_call_budget)
    for e in trace.tool_calls:
        ep.call(e.tool, e.arguments)
    ends = trace.of(EndEvent)
    if ends and not ep.done:
        ep.end(ends[-1].reason)      # a wrapper's reason (no tool call, model budget)
    return ep


def _check_model_records(cmp: Comparison, d: Path, run: RunRecord, record: HarnessRecord, w: Any) -> None:
    """``harness.json``'s prompt and tools against the replay (the whole file), ``prompt.txt``
    against the prompt and the run's settings against ``evaluate.json`` (the model block's figures
    are part of the derived record, compared whole in :func:`_check_derived`)."""
    from spatialscout_gym.eval.verification.verify_conversation import harness_expected
    harness = record.as_dict()
    expected = _norm(harness_expected(w, harness))
    diff = cmp.first_diff(harness, expected)
    if diff:
        raise _Diverged(f"in harness.json: {diff[0]}, recorded {_short(diff[1])} vs the harness's "
                        f"{_short(diff[2])}")
    _check_prompt_file(d, record, expected)
    _check_model_settings(d, run, record)


def _check_prompt_file(d: Path, harness: HarnessRecord, expected: dict) -> None:
    """``prompt.txt`` equals, byte for byte, the prompt the harness builds for the recorded style
    (re-derived by the replay), not merely contains it."""
    from spatialscout_gym.baselines.vlm import prompt_file_text
    p = d / PROMPT_FILE
    if not p.is_file():
        raise _Diverged("in prompt.txt: missing (every model run records the prompt it sent)")
    want = prompt_file_text(str(harness.prompt_style), expected.get("prompt_role"), expected.get("task_prompt"),
                            expected.get("first_message"))
    got = p.read_text(encoding="utf-8")
    if got != want:
        line = next((i for i, (a, b) in enumerate(zip(got.splitlines(), want.splitlines())) if a != b),
                    min(len(got.splitlines()), len(want.splitlines())))
        raise _Diverged(f"in prompt.txt: line {line + 1} differs from the prompt the harness sends for the "
                        f"recorded style {harness.prompt_style!r} (compared exactly)")


def _check_model_settings(d: Path, run: RunRecord, harness: HarnessRecord) -> None:
    """Every setting, name and harness ``result.json`` records of a model run agrees with
    ``harness.json`` (checked against the replay), with ``evaluate.json`` and with the attempts
    on disk; a cost needs its price table. Raise :class:`_Diverged` naming the first that does not."""
    from spatialscout_gym.conversation.prompt import PROMPT_STYLE_ALIASES
    image_history = run.model.image_history if run.model is not None else None
    checks: list[tuple[str, str, Any, str, Any]] = []
    settings = _evaluation_of(d)
    opts = settings.agent_options if settings is not None else {}
    style = opts.get("prompt_style")
    against = {"prompt_style": ("prompt_style", PROMPT_STYLE_ALIASES.get(str(style), style), harness.prompt_style),
               "mode": ("mode", opts.get("mode"), harness.mode),
               "reasoning_effort": ("reasoning.effort", opts.get("reasoning_effort"), (harness.reasoning or {}).get("effort")),
               "image_history": ("model.image_history", opts.get("image_history"), image_history),
               "image_max_side": ("images.max_side_px", opts.get("image_max_side"), harness.image_setting("max_side_px"))}
    for key, (whose, got, want) in against.items():
        if key in opts:
            checks.append((SETTINGS_FILE, f"agent_options.{key}", got, f"the run's {whose}", want))
    for where, field, got, whose, want in checks:
        if _norm(got) != _norm(want):
            raise _Diverged(f"in {where}: {field}, recorded {_short(got)} vs {whose} {_short(want)}")


def _evaluation_of(d: Path) -> EvaluationRecord | None:
    """The ``evaluate.json`` a run directory answers to: its evaluation's, else its own (a lone run
    directory may carry one); None when neither exists."""
    for root in (d.parent.parent, d):
        if (root / SETTINGS_FILE).is_file():
            return load_evaluation(root)
    return None


def _price_table(d: Path) -> dict | None:
    """The price table an evaluation was run with, when ``evaluate.json`` names a readable one."""
    for root in (d.parent.parent, d):
        if not (root / SETTINGS_FILE).is_file():
            continue
        try:
            settings = load_evaluation(root)
        except RecordError:
            return None
        if settings is None:
            return None
        table = settings.option("price_table")
        if isinstance(table, dict):     # inline, as evaluations recorded it before tables were copied
            return table
        path = evaluation_file(root, table) if table is not None else None
        if path is not None and path.is_file() and not path.is_symlink():
            from spatialscout_gym.baselines.vlm import load_price_table
            # the table's bytes as the evaluation read them: another table under the same name is not it
            if hashlib.sha256(path.read_bytes()).hexdigest() != settings.option("price_table_sha256"):
                return None
            try:
                return load_price_table(path)
            except Exception:
                return None
        return None
    return None


def _hash_pair(recorded: str, here: str) -> str:
    """Two hashes shown where they differ (their first differing character and the text around it)."""
    recorded, here = str(recorded), str(here)
    i = next((k for k, (x, y) in enumerate(zip(recorded, here)) if x != y), min(len(recorded), len(here)))
    lo = max(0, i - 4)
    return (f"differ from character {i}: recorded ...{recorded[lo:i + 12]}... vs here ...{here[lo:i + 12]}... "
            f"(recorded {recorded}, here {here})")


def _check_records(d: Path, run: RunRecord, start: StartEvent, spec: Any, settings: EvaluationRecord | None,
                   harness: HarnessRecord | None) -> None:
    """Every recorded setting the result depends on agrees across ``result.json``, the trace's start
    event, ``evaluate.json``, ``harness.json`` and the scene rebuilt here; raise :class:`_Diverged`
    naming the first that does not."""
    from spatialscout_gym.scenes.catalog import scene_catalog_version, scene_content_hash
    K = Intrinsics.from_dict(start.intrinsics)
    checks: list[tuple[str, str, Any, str, Any]] = []
    if run.attempt is not None:     # claimed, and held to the attempts kept beside it (any agent)
        from spatialscout_gym.eval.layout import attempt_dirs
        checks.append((RESULT_FILE, "attempt", run.attempt, "the attempts kept beside it + 1",
                       len(attempt_dirs(d)) + 1))
    if settings is not None:
        for k, v, recorded in (("agent", settings.agent, run.agent), ("image_budget", settings.image_budget,
                                                                       run.image_budget),
                               ("resolution", settings.resolution, run.resolution)):
            checks.append((SETTINGS_FILE, k, v, f"{RESULT_FILE}'s", recorded))
        if run.model is None:
            checks.append((SETTINGS_FILE, "tool_call_budget", settings.tool_call_budget,
                           f"{RESULT_FILE}'s", run.tool_call_budget))
        elif settings.tool_call_budget is not None:    # B of a model agent: its model-call budget
            checks.append((SETTINGS_FILE, "tool_call_budget (B, model calls)", settings.tool_call_budget,
                           f"{RESULT_FILE}'s model.model_call_budget", run.model.model_call_budget))
        if harness is not None and "model_call_budget" in settings.agent_options:
            checks.append((SETTINGS_FILE, "agent_options.model_call_budget", settings.option("model_call_budget"),
                           f"{HARNESS_FILE}'s", harness.budget("model_call_budget")))
    if harness is not None:
        budgets = harness.budgets or {}
        imgs = harness.images or {}
        checks += [(HARNESS_FILE, "budgets.image_budget", budgets.get("image_budget", "(missing)"),
                    "the trace's start event", start.image_budget),
                   (HARNESS_FILE, "budgets.tool_call_budget", budgets.get("tool_call_budget", "(missing)"),
                    "the trace's start event", start.tool_call_budget),
                   (HARNESS_FILE, "images.render_size", imgs.get("render_size", "(missing)"),
                    "the trace's image size", [K.width, K.height]),
                   (HARNESS_FILE, "agent", harness.agent, f"{RESULT_FILE}'s", run.agent)]
        if run.model is not None:
            checks.append((HARNESS_FILE, "images.max_side_px", imgs.get("max_side_px", "(missing)"),
                           f"{RESULT_FILE}'s model.image_max_side_px", run.model.image_max_side_px))
        if (d / DELIVERED_FILE).is_file():
            delivered = read_json_object(d / DELIVERED_FILE)
            for k in ("max_side_px", "jpeg_quality"):
                checks.append((HARNESS_FILE, f"images.{k}", imgs.get(k, "(missing)"), f"{DELIVERED_FILE}'s",
                               delivered.get(k)))
    for where, field, got, whose, want in checks:
        if _norm(got) != _norm(want) or type(got) is bool:
            raise _Diverged(f"in {where}: {field}, recorded {_short(got)} vs {whose} {_short(want)}")
    if run.scene_content_hash != scene_content_hash(spec):
        raise _Diverged(f"in {RESULT_FILE}: scene_content_hash "
                        f"{_hash_pair(run.scene_content_hash, scene_content_hash(spec))}")
    if run.catalog_version != scene_catalog_version(spec):
        raise _Diverged(f"in {RESULT_FILE}: catalog_version, recorded {_short(run.catalog_version)} vs the "
                        f"scene's here {_short(scene_catalog_version(spec))}")


def _check_derived(cmp: Comparison, d: Path, recorded: RunRecord, trace: Trace, spec: SceneSpec,
                   harness: dict | None) -> None:
    """``result.json`` against the run record derived here from the trace (which re-executed) and
    the named inputs (the scene rebuilt here, the harness record, the evaluation's price table):
    every derived field, compared whole, so a field the record gains is compared without being
    listed; a run named as an agent of another kind than its trace is refused. Raise
    :class:`_Diverged` naming the first field that differs."""
    from spatialscout_gym.scenes.catalog import scene_catalog_version, scene_content_hash
    mine = derive_run_record(trace, RecordInputs(
        ground_truth=GroundTruth.from_spec(spec), catalog_version=scene_catalog_version(spec),
        scene_content_hash=scene_content_hash(spec), harness=harness, price_table=_price_table(d)))
    _check_kind(recorded.agent, run_kind(trace))
    if recorded.schema_version < SCHEMA_VERSION and any(getattr(e, "http", None) is not None for e in trace.events):
        raise _Diverged(f"in {RESULT_FILE}: schema_version, recorded {recorded.schema_version} vs "
                        f"{SCHEMA_VERSION} (the trace holds per-call HTTP records, which version "
                        f"{SCHEMA_VERSION} writes)")
    skip = underivable_fields(recorded, harness_known=harness is not None)
    got, want = _without(derived_json(recorded), skip), _without(derived_json(mine), skip)
    diff = cmp.first_diff(got, want, extra_ok=())
    if diff and diff[0] == "model.cost_usd" and diff[2] is None:
        raise _Diverged(f"in {RESULT_FILE}: model.cost_usd, recorded {_short(diff[1])} without a price table the "
                        "verifier can read (evaluate.json names none, or its file is missing or changed); a cost "
                        "is verified only with its prices")
    if diff:
        raise _Diverged(f"in {RESULT_FILE}: {diff[0]}, recorded {_short(diff[1])} vs derived from the trace "
                        f"{_short(diff[2])}")


def _without(d: dict, paths: tuple[str, ...]) -> dict:
    """``d`` without the dotted ``paths`` (a version-1 record's claimed fields)."""
    out = dict(d)
    for p in paths:
        head, _, rest = p.partition(".")
        if rest and isinstance(out.get(head), dict):
            out[head] = _without(out[head], (rest,))
        elif not rest:
            out.pop(head, None)
    return out


def _check_kind(agent: str, kind: str) -> None:
    """A run's agent name must be of the kind its trace shows: a model agent's run holds its
    conversation, any other agent's none (an oracle's run filed under a model's name is refused)."""
    from spatialscout_gym.baselines.registry import agent_kind
    try:
        named = agent_kind(agent)
    except Exception:        # an unknown prefix or name: judged by its form below
        named = None
    if kind == "model" and named not in (None, "model"):
        raise _Diverged(f"in {RESULT_FILE}: agent {agent!r} is a {named} agent, but the trace holds a model's "
                        "conversation")
    if kind != "model" and named == "model":
        raise _Diverged(f"in {RESULT_FILE}: agent {agent!r} is a model agent, but the trace holds no model "
                        "request or reply (a run of another agent filed under a model's name)")




def _check_nbv_steps(cmp: Comparison, trace: Trace, run: RunRecord, spec: SceneSpec) -> None:
    """An NBV run's step events against its re-executed tool calls: numbered in order, each naming
    the tool calls it made (contiguous, in order); a blocked step moved nothing (no ``move_camera``);
    a step that captured ended where its capture was taken. The blocked moves and the path length
    the run records (``nbv.exploration``, claimed) must be the ones its steps give, and the
    dynamics ``nbv`` names the ones the trace records, its steps replayed under them
    (:mod:`~spatialscout_gym.eval.verification.nbv_dynamics`)."""
    from spatialscout_gym.eval.verification.nbv_dynamics import nbv_dynamics_error
    steps = [(i, e) for i, e in enumerate(trace.events) if isinstance(e, NBVStepEvent)]
    if not steps:
        return
    calls = {e.index: e for e in trace.tool_calls}
    captures = {e.tool_call_index: e for e in trace.captures if e.tool_call_index is not None}
    assert trace.start is not None    # the caller checked the trace opens with one
    position = np.asarray(trace.start.initial_pose_world["position_world"], float)
    path, blocked, end = 0.0, 0, None
    for n, (i, e) in enumerate(steps):
        first, stop = e.tool_calls if len(e.tool_calls) == 2 else (None, None)
        if e.step != n or first is None or stop is None or first > stop or (end is not None and first != end):
            raise _Diverged(f"at event {i}: nbv_step, step or tool_calls, recorded {_short(e.step)} "
                            f"{_short(e.tool_calls)} vs step {n} from tool call {end}")
        end = stop
        made = [calls[k].tool for k in range(first, stop) if k in calls]
        if e.blocked and "move_camera" in made:
            raise _Diverged(f"at event {i}: nbv_step, blocked, recorded true but the step moved (move_camera)")
        shot = next((captures[k] for k in range(first, stop) if k in captures), None)
        here = np.asarray(e.position_world, float)
        if shot is not None:
            diff = cmp.first_diff(list(here), shot.pose_world["position_world"], "position_world")
            if diff:
                raise _Diverged(f"at event {i}: nbv_step, position_world, recorded {_short(diff[1])} vs its "
                                f"capture's {_short(diff[2])}")
        path += float(np.linalg.norm(here - position))
        position = here
        blocked += int(e.blocked)
    tally = run.nbv.exploration if run.nbv is not None else None
    for key, want in (("blocked_moves", blocked), ("path_length_m", path)):
        if tally is not None:
            diff = cmp.first_diff(getattr(tally, key), want, f"nbv.exploration.{key}")
            if diff:
                raise _Diverged(f"in {RESULT_FILE}: nbv.exploration.{key}, recorded {_short(diff[1])} vs its "
                                f"trace's steps {_short(diff[2])}")
    why = nbv_dynamics_error(trace, run.nbv.dynamics() if run.nbv is not None else {}, spec, RESULT_FILE)
    if why is not None:
        raise _Diverged(why)


def _catalog_identity(spec: SceneSpec) -> None:
    """A scene under a catalog id must be that catalog scene: its content hash the one catalog
    version ``v`` (the scene's own) froze for that id; raise :class:`_Diverged` when not (a spec
    file that claims a catalog id with other contents)."""
    from spatialscout_gym.scenes.catalog import manifest, scene_catalog_version, scene_content_hash
    version = scene_catalog_version(spec)
    try:
        rows = {str(r.get("scene_id")): r for r in manifest(version)["scenes"]}
    except (OSError, KeyError, TypeError, ValueError) as exc:
        raise _Diverged(f"scene {spec.scene_id!r}: catalog v{version}'s manifest cannot be read here "
                        f"({type(exc).__name__}), so a scene under a catalog id cannot be checked") from None
    row = rows.get(spec.scene_id)
    if row is None:
        return
    here = scene_content_hash(spec)
    if row.get("content_hash") != here:
        raise _Diverged(f"scene {spec.scene_id!r} is a catalog id, but this run's scene is not catalog "
                        f"v{version}'s {spec.scene_id}: content hash "
                        f"{_hash_pair(str(row.get('content_hash')), here).replace('recorded', 'the catalog')} "
                        "(a spec file under a catalog id)")


def _check_frames(d: Path, trace: Trace) -> None:
    """The frames a run wrote against the hashes recorded when they were written
    (``frames/sha256.json``): one PNG per capture, each decoding to the recorded raw RGB bytes, no
    other frame; raise :class:`_Diverged` naming the first that does not."""
    from spatialscout_gym.envs.run_dir import FRAME_HASHES_FILE
    p = d / FRAME_HASHES_FILE
    if not p.is_file():
        raise _Diverged(f"in {FRAME_HASHES_FILE}: missing (every run records the hash of each frame it writes)")
    rec = read_json_object(p).get("rgb_sha256")
    if not isinstance(rec, dict):
        raise _Diverged(f"in {FRAME_HASHES_FILE}: rgb_sha256, recorded {_short(rec)} vs an object of hashes")
    want = sorted(str(e.frame_id) for e in trace.captures)
    if sorted(rec) != want:
        raise _Diverged(f"in {FRAME_HASHES_FILE}: frames {_short(sorted(rec))} vs the trace's captures {_short(want)}")
    files = sorted(x.name for x in (d / FRAMES_DIR).iterdir() if x.name.endswith(".png"))
    expect = sorted(frame_file_name(int(f)) for f in want)
    if files != expect:
        gone, extra = sorted(set(expect) - set(files)), sorted(set(files) - set(expect))
        raise _Diverged(f"in {FRAMES_DIR}/: " + (f"{gone[0]} is missing" if gone else f"{extra[0]} is not a captured frame"))
    from PIL import Image
    for fid in want:
        name = f"{FRAMES_DIR}/{frame_file_name(int(fid))}"
        try:
            with Image.open(d / name) as im:
                raw = np.ascontiguousarray(np.asarray(im.convert("RGB"), dtype=np.uint8)).tobytes()
        except Exception as exc:    # any decoder error: the file is not the PNG that was written
            raise _Diverged(f"in {name}: not a readable PNG ({type(exc).__name__})") from None
        got = hashlib.sha256(raw).hexdigest()
        if got != rec[fid]:
            raise _Diverged(f"in {name}: its pixels' SHA-256 {_hash_pair(rec[fid], got).replace('here', 'the file')}")


def verify_episode(key: str, run_dir: str | os.PathLike, scene_args: dict[str, str] | None = None,
                   images: ImageChecker | None = None, settings: EvaluationRecord | None = None) -> EpisodeCheck:
    """Re-execute one run directory (tool calls; for a model run the whole conversation) and
    compare (see the module docstring); with ``images``, also re-render the captures and compare
    their hashes. ``settings``: the evaluation's ``evaluate.json`` (each recorded setting must
    agree with it). A broken file gives this episode a verdict naming it; it never raises."""
    from spatialscout_gym.eval.verification.verify_conversation import (MODEL_EVENTS, TIMING_FIELDS, not_checkable,
                                                                       replay_model_run)
    d = Path(run_dir)
    cmp = Comparison()
    conversation = "not a model run"
    digest = None

    def verdict(status: str, detail: str = "", image_verdict: str = "not checked") -> EpisodeCheck:
        return EpisodeCheck(key, status, detail, digest, image_verdict, conversation, cmp.summary())

    try:
        _regular_files(d)
        digest = files_digest(d)
        run = read_record(d / RESULT_FILE)       # strict: a missing, unknown or mistyped field
        if not (d / TRACE_FILE).is_file():
            raise _Diverged("refused: no trace.jsonl to replay")
        events = read_trace(d / TRACE_FILE)
        trace = parse_trace(events)         # strict: an unknown event kind, a field of the wrong type
        _identity(d, run, scene_args or {})
        if run.status == "failed":     # a lone failed run: its record is what its trace derives
            _failed_record_derives(d, run, trace)
            return verdict("failed", "(the episode failed; its record is the one its trace, which ends in the "
                                     "failure, derives: left out of scores)")
        try:
            spec = _resolve(d, run, scene_args or {})
            _catalog_identity(spec)
        except _Diverged as exc:
            return verdict("refused", str(exc))
        rec = [(i, e) for i, e in enumerate(events) if e.get("event") in _EPISODE_EVENTS]
        start = trace.start
        if start is None or not isinstance(trace.events[rec[0][0]], StartEvent):
            raise _Diverged(f"at event {rec[0][0] if rec else 0}: the trace does not open with a start event")
        K = Intrinsics.from_dict(start.intrinsics)
        want_K = spec.public.intrinsics.scaled(K.width, K.height)
        diff = cmp.first_diff(start.intrinsics, _norm(want_K.to_dict()))
        if diff:
            raise _Diverged(f"at event {rec[0][0]}: start, intrinsics, recorded {_short(start.intrinsics)} vs "
                            f"the scene's {_short(want_K.to_dict())}")
        wrapper = None
        tool_side_only = None
        harness_record = load_harness(d)
        harness = harness_record.as_dict() if harness_record is not None else None   # compared whole
        if trace.is_model_run:
            why = not_checkable(harness)
            conversation = f"not checkable: {why}" if why else "re-derived"
            tool_side_only = why
        # wall-clock fields, and whether a reply came from the request cache: neither is re-derived
        strict = ("time_unix_s", *TIMING_FIELDS, "cached")
        seed = run.seed      # bound into the start event (the path and result.json agree)
        if conversation == "re-derived":
            assert harness is not None   # not_checkable(None) is a reason: a re-derived run has its harness
            replies = trace.model_responses
            wrapper, mine = replay_model_run(spec, start, harness, replies, run.seed)
            ep = wrapper.episode
            full = [(i, e) for i, e in enumerate(events)
                    if e.get("event") in _EPISODE_EVENTS + MODEL_EVENTS]
            _compare_traces(cmp, full, [_norm(x) for x in bind_seed(mine, seed)], len(events), strict)
            n_req = sum(e.get("event") == "model_request" for e in mine)
            conversation = f"re-derived: {n_req} requests, {len(replies)} replies"
        else:
            ep = _replay_tools(spec, trace)
            _compare_traces(cmp, rec, [_norm(x) for x in bind_seed(ep.trace, seed)], len(events),
                            strict if tool_side_only is None else True)
        _check_nbv_steps(cmp, trace, run, spec)
        positions = {k: [float(x) for x in v] for k, v in ep.accepted_map.items()}
        gt = GroundTruth.from_spec(spec)
        try:
            load_predictions(d, gt)
            recorded_pred = read_json_object(d / PREDICTIONS_FILE)
        except Exception as exc:
            raise _Diverged(f"in {PREDICTIONS_FILE}: cannot be read ({exc})") from None
        diff = cmp.first_diff(recorded_pred, {"positions": positions}, extra_ok=(), exact=True)
        if diff:
            where = diff[0].replace("positions.", "positions, ", 1)
            raise _Diverged(f"in {PREDICTIONS_FILE}: {where}, recorded {_short(diff[1])} vs the accepted map "
                            f"{_short(diff[2])} (compared exactly: what the agent submitted is copied, never "
                            "computed)")
        gt_file = read_json_object(d / GROUND_TRUTH_FILE) if (d / GROUND_TRUTH_FILE).is_file() else {}
        diff = cmp.first_diff(gt_file, _norm(spec.ground_truth_dict()))
        if diff:
            raise _Diverged(f"in {GROUND_TRUTH_FILE}: {diff[0]}, recorded {_short(diff[1])} vs the scene's "
                            f"{_short(diff[2])}")
        _check_derived(cmp, d, run, trace, spec, harness if tool_side_only is None else None)
        _check_records(d, run, start, spec, settings, harness_record if tool_side_only is None else None)
        if wrapper is not None and harness is not None and harness_record is not None:   # a re-derived run has both
            _check_model_records(cmp, d, run, harness_record, wrapper)
        _check_frames(d, trace)
        image_verdict = images.check(d, spec, trace) if images is not None else "not checked"
    except _Diverged as exc:
        return verdict("diverged", str(exc))
    except (EvalDirError, RecordError) as exc:
        return verdict("diverged", f"unreadable: {exc}")
    except (KeyError, TypeError, ValueError, AttributeError, IndexError) as exc:   # a field of the wrong kind
        return verdict("diverged", f"unreadable: a record has a missing or malformed field ({type(exc).__name__}: "
                                   f"{_short(str(exc))})")
    if tool_side_only is not None:
        return verdict(TOOL_SIDE_ONLY, f"(the conversation is not checkable: {tool_side_only}; only the tool "
                                       "calls were re-executed)", image_verdict)
    return verdict("verified", "", image_verdict)


def _scene_args(root: Path) -> dict[str, str]:
    """``scenes.json`` (an unreadable one names no scene: each run then resolves by its own id)."""
    try:
        return read_scene_args(root)
    except EvalDirError:
        return {}


def _episode_dirs(ev: EvalDir, scene_args: dict[str, str]) -> tuple[list[tuple[str, Path]], list[EpisodeCheck],
                                                                    list[tuple[str, str | None]]]:
    """``(completed (key, run dir), verdicts of episodes whose records cannot be read, failed (key,
    why its failure is not evidenced or None))``: a broken file in one episode gives that episode
    its verdict, never stops the others."""
    if ev.is_run_dir:
        return [(EvalDir.key_of(ev.root), ev.root)], [], []
    done: list[tuple[str, Path]] = []
    broken: list[EpisodeCheck] = []
    failed: list[tuple[str, str | None]] = []
    for path in ev._episode_paths():
        key = EvalDir.key_of(path)
        try:
            _regular_files(path)
        except _Diverged as exc:
            broken.append(EpisodeCheck(key, "diverged", str(exc), conversation="not checked"))
            continue
        try:
            e = EvalDir._episode(path)
        except EvalDirError as exc:
            broken.append(EpisodeCheck(key, "diverged", f"unreadable: {exc}", conversation="not checked"))
            continue
        if e.completed is not None:
            done.append((key, e.completed.run_dir))
        elif e.attempts or e.notes or Path(str(e.path) + ATTEMPTS_SUFFIX).is_dir():
            failed.append((key, _failure_evidence(e, scene_args)))
    return done, broken, failed


def _failure_evidence(e: EpisodeDir, scene_args: dict[str, str]) -> str | None:
    """Why a failed episode's failure is not shown by its records (None when it is): an episode
    counts as failed only with a failed attempt archived whole, its ``result.json`` (status
    ``failed``) naming the scene and seed its path names and its trace up to the failure, opening
    with that scene's and seed's start event. A note alone (``seed_<k>.failed.json``) is no
    evidence: it would let any episode leave the mean."""
    tried = [a for a in e.attempts if not a.ok]
    if not tried:
        return (f"no failed attempt is archived, only a note ({e.path.name}{FAILED_SUFFIX} or "
                f"{e.path.name}{ATTEMPTS_SUFFIX}/): a failure counts only with its trace up to the failure "
                "(rerun the episode)")
    why = ""
    for a in tried:
        where = a.run_dir.relative_to(e.path.parent.parent).as_posix()
        try:
            _regular_files(a.run_dir)
            if not (a.run_dir / TRACE_FILE).is_file():
                raise _Diverged(f"it has no {TRACE_FILE}")
            _identity(e.path, a.record, scene_args)
            trace = parse_trace(read_trace(a.run_dir / TRACE_FILE))
            start = trace.start
            if start is None:
                raise _Diverged("the trace has no start event")
            for field, traced, recorded in (("scene_id", start.scene_id, a.record.scene_id),
                                            ("seed", start.seed, a.record.seed)):
                if traced != recorded:
                    raise _Diverged(f"the trace's start event names {field} {_short(traced)}, "
                                    f"{RESULT_FILE} {_short(recorded)}")
            _failed_record_derives(a.run_dir, a.record, trace)
            return None
        except (_Diverged, EvalDirError, RecordError) as exc:
            why = f"the failed attempt {where} is not evidence: {str(exc).removeprefix('in its path: ')}"
    return why


def _failed_record_derives(run_dir: Path, recorded: RunRecord, trace: Trace) -> None:
    """A failed attempt's record (read strictly by the caller) is the one its trace derives: the
    trace ends in the failure it names (a completed episode's trace under a ``failed`` record is not
    evidence). Records written before the failure was traced (version 1) are held to their start
    event only."""
    if recorded.schema_version < SCHEMA_VERSION:
        return
    try:
        harness_record = load_harness(run_dir)
    except RecordError as exc:
        raise _Diverged(str(exc)) from None
    harness = harness_record.as_dict() if harness_record is not None else None
    try:
        mine = derive_run_record(trace, RecordInputs(
            ground_truth=None, catalog_version=recorded.catalog_version,
            scene_content_hash=recorded.scene_content_hash, harness=harness, price_table=_price_table(run_dir)))
    except RecordError:
        raise _Diverged("its trace ends in no failure: the episode it records was completed") from None
    diff = Comparison().first_diff(derived_json(recorded), derived_json(mine), extra_ok=())
    if diff:
        raise _Diverged(f"in {RESULT_FILE}: {diff[0]}, recorded {_short(diff[1])} vs derived from the trace "
                        f"{_short(diff[2])}")


def _verify_one(job: tuple) -> EpisodeCheck:
    key, run_dir, args, settings = job
    return verify_episode(key, run_dir, args, None, settings)


def verify_dir(path: str | os.PathLike, progress: bool = False, images: bool = False, workers: int = 1,
               use_cache: bool = False) -> list[EpisodeCheck]:
    """:func:`verify_episode` for every completed episode of a run or evaluation directory
    (``images``: re-render the captures with SAPIEN and compare their hashes too; ``workers``
    processes; ``use_cache``: reuse a verdict kept outside the directory for files with the same
    key, see :mod:`~spatialscout_gym.eval.verification.verify_cache`), then the plan: an episode the plan does not name is
    ``unplanned``, a planned one without a result ``missing``, one whose attempts all failed
    ``failed``, and two episodes with byte-identical traces (one filed under two seeds) both
    ``diverged``; in key order.

    Raises
    ------
    EvalDirError
        ``planned.json``, ``scenes.json`` or ``evaluate.json`` cannot be read as what they are (a
        corrupted plan is an error, never an empty plan).
    """
    ev = EvalDir(path)
    args = read_scene_args(ev.root)
    planned = ev.planned()
    settings = None if ev.is_run_dir else ev.settings()
    if settings is None and (ev.root / PLANNED_FILE).exists():
        raise EvalDirError(f"{ev.root}: planned.json without evaluate.json (the settings every episode shares); "
                           "the directory was edited")
    done, checks, failed = _episode_dirs(ev, args)
    if not done and not planned and not failed and not checks:
        raise FileNotFoundError(f"{ev.root} holds no completed episode to verify (a run directory or an "
                                "evaluation directory from `spatialscout evaluate`)")
    cache = cache_dir(ev.root) if use_cache else None
    keys = {k: cache_key(ev.root, d, k, args, images) if cache is not None else None for k, d in done}
    todo: list[tuple[str, Path]] = []
    for k, d in done:
        kept = _cached_verdict(cache, keys[k])
        if kept is not None:
            checks.append(kept)
        else:
            todo.append((k, d))
    fresh = _verify_todo(ev, todo, args, settings, images=images, workers=workers, progress=progress)
    _keep_verdicts(cache, keys, fresh)
    checks += fresh
    by_key = {c.key: c for c in checks}
    if planned and not ev.is_run_dir:
        for c in checks:
            if c.key not in set(planned):
                c.status, c.detail = "unplanned", (f"(not in {PLANNED_FILE if (ev.root / PLANNED_FILE).exists() else SCENES_FILE}:"
                                                   " an episode the evaluation did not plan is not pooled)")
    _byte_identical_traces(done, by_key)
    _one_episode_checks(done, planned, by_key)
    for key, why in failed:
        if key not in by_key:
            by_key[key] = (EpisodeCheck(key, "refused", f"failed without evidence: {why}", conversation="not checked")
                           if why else
                           EpisodeCheck(key, "failed", "(every attempt failed, each archived with its trace: "
                                                       "counted as failed by report)", conversation="not checked"))
            checks.append(by_key[key])
    for key in planned:
        if key not in by_key:
            checks.append(EpisodeCheck(key, "missing", "(planned; no run directory with a result.json: deleted, "
                                                        "moved or never run)", conversation="not checked"))
    return sorted(checks, key=lambda c: c.key)


def _cached_verdict(cache: Path | None, key: str | None) -> EpisodeCheck | None:
    """The verdict kept outside the directory under ``key``, or None (none kept, or unreadable)."""
    hit = cache / f"{key}.json" if cache is not None and key else None
    if hit is None or not hit.is_file():
        return None
    try:
        return EpisodeCheck(**{**json.loads(hit.read_text()), "cached": True})
    except (ValueError, TypeError, OSError):
        return None


def _verify_todo(ev: EvalDir, todo: list[tuple[str, Path]], args: dict[str, str], settings: EvaluationRecord | None, *,
                 images: bool, workers: int, progress: bool) -> list[EpisodeCheck]:
    """:func:`verify_episode` for each of ``todo``, in this process or ``workers`` processes;
    ``seconds`` set to the mean time per episode."""
    import time
    t0 = time.perf_counter()
    if images or workers <= 1 or len(todo) < 2:
        it: Any = todo
        if progress:
            from tqdm import tqdm
            it = tqdm(todo, desc=f"verify {ev.root.name}", unit="episode", leave=False)
        checker = ImageChecker() if images else None
        try:
            fresh = [verify_episode(k, d, args, checker, settings) for k, d in it]
        finally:
            if checker is not None:
                checker.close()
    else:
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor
        with ProcessPoolExecutor(min(workers, len(todo)), mp_context=multiprocessing.get_context("spawn")) as pool:
            fresh = list(pool.map(_verify_one, [(k, d, args, settings) for k, d in todo]))
    for c in fresh:
        c.seconds = (time.perf_counter() - t0) / max(1, len(todo))
    return fresh


def _keep_verdicts(cache: Path | None, keys: dict[str, str | None], fresh: list[EpisodeCheck]) -> None:
    """Keep each fresh verdict outside the directory under its key (one not kept is only
    recomputed next time)."""
    for c in fresh:
        if cache is not None and keys.get(c.key):
            try:
                cache.mkdir(parents=True, exist_ok=True)
                publish_json(cache / f"{keys[c.key]}.json", {**dataclasses.asdict(c), "cached": False})
            except (OSError, ValueError):
                pass


def _byte_identical_traces(done: list[tuple[str, Path]], by_key: dict[str, EpisodeCheck]) -> None:
    """Two episodes whose traces are byte-identical, wall-clock times included, are one episode
    filed twice: both diverged (unless one is already caught in the wrong place: the other is the
    original). A trace with no wall-clock field can repeat honestly and is left to the identity
    checks."""
    traces: dict[bytes, str] = {}
    for k, d in done:
        t = d / TRACE_FILE
        blob = t.read_bytes() if t.is_file() and not t.is_symlink() else b""
        if b"_unix_s" not in blob:
            continue
        first = traces.setdefault(hashlib.sha256(blob).digest(), k)
        if first == k or any(by_key[x].status not in ("verified", TOOL_SIDE_ONLY) for x in (first, k)):
            continue
        for x in (first, k):
            other = k if x == first else first
            by_key[x].status = "diverged"
            by_key[x].detail = (f"in {TRACE_FILE}: byte-identical to {other}'s, wall-clock times included "
                                "(one episode filed under two seeds or scenes)")


def _one_episode_checks(done: list[tuple[str, Path]], planned: list[str], by_key: dict[str, EpisodeCheck]) -> None:
    """Episodes that are one episode (:mod:`~spatialscout_gym.eval.verification.identity`): a scene
    whose every planned seed holds one conversation is ``repeated`` (verified, counted once); seeds
    that share a conversation short of that are all ``diverged``; two scene folders holding one
    scene are all ``refused``."""
    from spatialscout_gym.eval.verification.identity import REPEATED, repeated_and_shared, same_scene_folders
    repeated, shared = repeated_and_shared(done, planned)
    for key, others in shared.items():
        c = by_key[key]
        if c.status in ("verified", TOOL_SIDE_ONLY):
            c.status, c.detail = "diverged", (
                f"in {TRACE_FILE}: the same conversation as {', '.join(others)} (the same replies, text and tool "
                "calls, in the same order) while other planned seeds of the scene differ: one episode filed "
                "under several seeds")
    for key in repeated:
        c = by_key[key]
        if c.status == "verified":
            c.status, c.detail = REPEATED, ("(every planned seed of this scene holds one conversation: a "
                                            "deterministic model; counted as one episode)")
    sound = [(k, d) for k, d in done if by_key[k].status in ("verified", REPEATED, TOOL_SIDE_ONLY)]
    for key, other in same_scene_folders(sound).items():     # each a sound run: one scene under two names
        c = by_key[key]
        if c.status not in ("missing", "unplanned"):
            c.status, c.detail = "refused", (f"its scene folder and {other!r} hold one scene (the same content hash): "
                                             "one scene filed under two names")


def write_verification(path: str | os.PathLike, checks: list[EpisodeCheck]) -> Path:
    """Write ``DIR/verify.json``: ``{"episodes": {key: {"status", "detail", "files_sha256", ...}}}``."""
    from spatialscout_gym import __version__
    return publish_json(Path(path) / VERIFY_FILE, {
        "spatialscout_gym": __version__, "rel_tolerance": REL_TOLERANCE, "abs_tolerance": ABS_TOLERANCE,
        "episodes": {c.key: {"status": c.status, "detail": c.detail, "files_sha256": c.files_sha256,
                             "images": c.images, "conversation": c.conversation, "numbers": c.numbers}
                     for c in checks}})


def verification_status(path: str | os.PathLike, *, workers: int = 1, use_cache: bool = True) -> dict:
    """Verify the directory's files now (the verdict is this call's own, or one kept outside the
    directory for files with the same digest: :func:`verify_dir` with ``use_cache``); a
    ``verify.json`` inside the directory is never trusted for it (it is shown as
    ``self_reported``).

    Returns ``{"status", "episodes": {key: status}, "seconds", "seconds_per_episode", "cached",
    "self_reported"}`` and the keys of :func:`planned_count`. ``status`` is ``verified`` when every
    episode re-executed to its records, ``repeated`` when they did and some scene is repeated (a
    deterministic model: each such scene counts once), ``tool-side only`` when the rest did but some model run's
    conversation cannot be re-derived, else ``diverged`` (any episode diverged, was refused, is
    unplanned, or is planned and missing).
    """
    import time
    t0 = time.perf_counter()
    ev = EvalDir(path)
    checks = verify_dir(path, workers=workers, use_cache=use_cache)
    out = {c.key: c.status for c in checks if c.status != "failed"}
    vals = set(out.values())
    status = ("verified" if vals <= {"verified"} else "repeated" if vals <= {"verified", "repeated"}
              else TOOL_SIDE_ONLY if vals <= {"verified", "repeated", TOOL_SIDE_ONLY} else "diverged")
    seconds = time.perf_counter() - t0
    fresh = [c for c in checks if c.seconds and not c.cached]
    p = ev.root / VERIFY_FILE
    try:
        claimed = read_json_object(p).get("episodes") if p.is_file() else None
    except EvalDirError:
        claimed = "unreadable"
    if isinstance(claimed, dict):
        claimed = {str(k): (v.get("status") if isinstance(v, dict) else None) for k, v in claimed.items()}
    return {"status": status, "episodes": out, "seconds": seconds,
            "seconds_per_episode": (sum(c.seconds for c in fresh) / len(fresh)) if fresh else 0.0,
            "cached": sum(c.cached for c in checks), "self_reported": claimed, **planned_count(ev)}


def planned_count(ev: EvalDir) -> dict:
    """``{"planned": M, "completed": N, "missing": [keys]}``: the episodes the evaluation planned,
    those with a completed run, and the planned ones with no run directory or failure record at all
    (deleted or never run). ``report`` and ``leaderboard`` print "N of M planned"."""
    planned = ev.planned()
    done = {k for k, _ in ev.completed()}
    accounted = done | {e.key for e in ev.failed()}
    return {"planned": len(planned) or len(done), "completed": len(done),
            "missing": [k for k in planned if k not in accounted]}
