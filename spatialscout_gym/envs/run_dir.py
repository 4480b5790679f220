"""The run directory of one episode (docs/protocol.md section 7), written by :func:`write_run`
(used by :class:`~spatialscout_gym.envs.session.EpisodeSession` and the runner).

A run directory holds:

=====================  ========================================================================
``trace.jsonl``        every trace event of the episode (:mod:`spatialscout_gym.episode.trace`)
``predictions.json``   ``{"positions": {id: [x, y, z]}}``, the final accepted map (task frame, m)
``ground_truth.json``  the scene's target table, so ``spatialscout score DIR`` re-scores the run
``entity_library.json`` the public half of the scene (what the agent could know)
``result.json``        ``"status": "ok"``, the scorer's metrics dict plus ``"scorer"`` (metric
                       version, minimum side, Q, H_tau, M, N: :meth:`SceneScore.record`), scene
                       id, agent, seed, catalog version, scene content hash, end reason and
                       counters (and the agent's ``extra_result()``, e.g. model calls, HTTP
                       attempts, tokens, cost, API mode); ``"attempt"`` when ``evaluate`` ran it
``frames/``            ``frame_000.png``, ... every captured RGB frame
``harness.json``       model agents: the full prompt and first message, the tool schema as sent,
                       budgets, model, API mode, reasoning and request settings, image settings
                       (the agent's ``run_records()``)
``prompt.txt``         model agents: the same prompt as plain text
``attempts/NN/``       ``evaluate`` only: earlier failed attempts of this episode, each a complete
                       run directory of its own (see :mod:`spatialscout_gym.eval.running.evaluate`)
=====================  ========================================================================

A failed episode (the agent raised: a model service or runtime error) is written with
``"status": "failed"`` and the error in ``result.json``, its trace and frames, and no
``predictions.json``/``ground_truth.json``, so scorers and aggregates leave it out.

The directory is written atomically: everything goes into a temporary sibling directory that is
renamed into place at the end, so a crashed run never leaves a half-written result.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from spatialscout_gym.core.files import write_json_atomic
from spatialscout_gym.core.redact import redact
from spatialscout_gym.core.run_files import (ATTEMPTS_DIR, ENTITY_LIBRARY_FILE, FRAME_HASHES_FILE, FRAMES_DIR, frame_file_name,
                                             GROUND_TRUTH_FILE, HARNESS_FILE, PREDICTIONS_FILE, RESULT_FILE, RUN_FILES, TRACE_FILE)
from spatialscout_gym.core.records import FAILURE_EVENT, HTTP_FIELD, RecordInputs, derive_run_record
from spatialscout_gym.core.scoring import GroundTruth
from spatialscout_gym.core.spec import SceneSpec
from spatialscout_gym.episode.episode import Episode
from spatialscout_gym.episode.trace import event, write_jsonl
from spatialscout_gym.scenes.catalog import scene_catalog_version, scene_content_hash

__all__ = ["write_run", "bind_seed"]


def renderer_identity(renderer: Any) -> dict:
    """The renderer as ``verify --images`` compares it: class, SAPIEN device, driver and version."""
    out: dict[str, Any] = {"renderer": type(renderer).__name__}
    if type(renderer).__module__.startswith("spatialscout_gym.render"):
        import sapien
        summary = sapien.render.get_device_summary()
        out.update({"device": getattr(renderer, "device", None) or "default Vulkan device",
                    "driver": next((line.strip() for line in summary.splitlines() if line.startswith("GPU")), ""),
                    "sapien": sapien.__version__})
    return out


def frame_hashes(episode: Any) -> dict:
    """``{"renderer": renderer_identity, "rgb_sha256": {frame id: hex}}`` of an episode's frames."""
    return {"renderer": renderer_identity(episode.renderer),
            "rgb_sha256": {str(fid): hashlib.sha256(np.ascontiguousarray(f.image).tobytes()).hexdigest()
                           for fid, f in sorted(episode.frames.items())}}


def bind_seed(trace: list[dict], seed: int) -> list[dict]:
    """``trace`` with the agent seed in its start event (docs/protocol.md section 7): the recorded
    episode names its seed, so a run filed under another seed is caught by ``verify``."""
    out = list(trace)
    i = next((k for k, e in enumerate(out) if e.get("event") == "start"), None)
    if i is not None:
        out[i] = {**out[i], "seed": int(seed)}
    return out


def failure_event(failure: BaseException, http: dict | None = None) -> dict:
    """The trace event a failed episode ends with (:data:`~spatialscout_gym.core.records.FAILURE_EVENT`):
    the error's type and redacted message and, for a model call that failed, its HTTP record."""
    return event(FAILURE_EVENT, error_type=type(failure).__name__, error=redact(f"{type(failure).__name__}: {failure}"),
                 **({HTTP_FIELD: http} if http is not None else {}))


def claimed_fields(agent: Any, attempt: int | None, node: dict | None = None) -> dict[str, Any]:
    """The run record's claimed fields (:class:`~spatialscout_gym.core.records.RecordInputs`): the
    agent's name, the attempt, the Ray node that ran it, and what the agent says that its trace
    does not carry."""
    extra = getattr(agent, "extra_result", None)
    said = extra() if callable(extra) else {}
    model = said.get("model")
    model = model if isinstance(model, dict) else {}
    return {"agent": getattr(agent, "name", type(agent).__name__),
            "attempt": None if attempt is None else int(attempt),
            "model.custom_endpoint": bool(model.get("custom_endpoint", False)),
            "nbv": said.get("nbv"), "human": said.get("human"), "node": None if node is None else dict(node)}


def _run_owned(tmp: Path) -> set[str]:
    """The names in a run directory that a run writes: the run files, ``frames/``, ``attempts/``
    and whatever this run wrote (its agent's records) into ``tmp``."""
    return {name.split("/")[0] for name in RUN_FILES} | {FRAMES_DIR, ATTEMPTS_DIR} | {p.name for p in tmp.iterdir()}


def _replace_run_files(tmp: Path, out: Path, owned: set[str]) -> None:
    """Move the new run in ``tmp`` into ``out``, removing only the ``owned`` names there first;
    ``tmp`` is removed."""
    for name in owned:
        old = out / name
        if old.is_dir() and not old.is_symlink():
            shutil.rmtree(old)
        elif old.exists() or old.is_symlink():
            old.unlink()
    for p in tmp.iterdir():
        os.replace(p, out / p.name)
    tmp.rmdir()


def write_run(out_dir: str | os.PathLike, spec: SceneSpec, episode: Episode, agent: Any, *, seed: int,
              resolution: int, image_budget: int, tool_call_budget: int | None,
              failure: BaseException | None = None, attempt: int | None = None,
              keep_attempts: bool = False, trace: list[dict] | None = None, node: dict | None = None) -> dict:
    """Score ``episode`` and write its run directory (see the module docstring); returns
    ``result.json``'s contents. An existing ``out_dir`` is replaced (callers check first).

    ``agent`` supplies ``name`` and, optionally, ``extra_result() -> dict`` and
    ``run_records() -> {file name: dict (JSON) or str (text)}``; ``failure`` marks the run as
    failed (no metrics, no ``predictions.json``/``ground_truth.json``). With ``keep_attempts`` an
    existing ``out_dir/attempts/`` moves into the new directory. ``trace`` replaces
    ``episode.trace`` (an env agent's trace with its model events in place). ``node``: the Ray
    node running the episode, a claimed field of the record.
    """
    out = Path(out_dir)
    gt = GroundTruth.from_spec(spec)
    positions = {k: [float(x) for x in v] for k, v in episode.accepted_map.items()}
    records = getattr(agent, "run_records", None)
    records = records() if callable(records) else {}
    events = bind_seed(episode.trace if trace is None else trace, seed)
    if failure is not None:     # the trace ends in the failure (before the episode's end): the record derives from it
        at = len(events) - 1 if events and events[-1].get("event") == "end" else len(events)
        events.insert(at, failure_event(failure, getattr(agent, "failed_call_http", None)))
    harness = records.get(HARNESS_FILE)
    result = derive_run_record(events, RecordInputs(
        ground_truth=gt, catalog_version=scene_catalog_version(spec), scene_content_hash=scene_content_hash(spec),
        harness=harness if isinstance(harness, dict) else None, price_table=getattr(agent, "price_table", None),
        claimed=claimed_fields(agent, attempt, node))).to_json()

    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.", suffix=".tmp", dir=out.parent))
    try:
        write_jsonl(events, tmp / TRACE_FILE)
        if failure is None:
            write_json_atomic(tmp / PREDICTIONS_FILE, {"positions": positions})
            write_json_atomic(tmp / GROUND_TRUTH_FILE, spec.ground_truth_dict())
        write_json_atomic(tmp / ENTITY_LIBRARY_FILE, spec.entity_library_dict())
        for name, content in records.items():
            if isinstance(content, str):
                (tmp / name).write_text(content, encoding="utf-8")
            else:
                write_json_atomic(tmp / name, content)
        write_json_atomic(tmp / RESULT_FILE, result)
        (tmp / FRAMES_DIR).mkdir()
        from PIL import Image
        for fid, frame in sorted(episode.frames.items()):
            Image.fromarray(frame.image).save(tmp / FRAMES_DIR / frame_file_name(fid))
        write_json_atomic(tmp / FRAME_HASHES_FILE, frame_hashes(episode))
        if out.exists():
            # earlier attempts move into the new directory first; a crash between the two renames
            # leaves them in the temp dir, from where evaluate's clean-up moves them back
            if keep_attempts and (out / ATTEMPTS_DIR).is_dir():
                os.replace(out / ATTEMPTS_DIR, tmp / ATTEMPTS_DIR)
            owned = _run_owned(tmp)
            if all(p.name in owned for p in out.iterdir()):
                shutil.rmtree(out)
            else:   # files of the user's own (``run --overwrite``): only what a run writes is replaced
                _replace_run_files(tmp, out, owned)
                return result
        os.replace(tmp, out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return result
