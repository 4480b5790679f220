"""Run one agent on one scene and write a run directory (docs/protocol.md section 7).

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
                       run directory of its own (see :mod:`spatialscout_gym.eval.evaluate`)
=====================  ========================================================================

A failed episode (the agent raised: a model service or runtime error) is written with
``"status": "failed"`` and the error in ``result.json``, its trace and frames, and no
``predictions.json``/``ground_truth.json``, so scorers and aggregates leave it out.

The directory is written atomically: everything goes into a temporary sibling directory that is
renamed into place at the end, so a crashed run never leaves a half-written result.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from spatialscout_gym.baselines.base import Agent, EnvAgent, PrivilegedAccess
from spatialscout_gym.core.files import write_json_atomic
from spatialscout_gym.core.redact import redact
from spatialscout_gym.core.scoring import GroundTruth, score_scene
from spatialscout_gym.core.spec import SceneSpec
from spatialscout_gym.envs.session import EpisodeSession
from spatialscout_gym.episode.episode import Episode
from spatialscout_gym.episode.trace import write_jsonl
from spatialscout_gym.scenes.catalog import scene_by_name, scene_catalog_version, scene_content_hash

__all__ = ["run_episode", "write_run", "resolve_scene", "make_scene_env", "RESULT_FILE", "TRACE_FILE",
           "ATTEMPTS_DIR"]

RESULT_FILE = "result.json"
TRACE_FILE = "trace.jsonl"
ATTEMPTS_DIR = "attempts"


def resolve_scene(scene: str | SceneSpec) -> SceneSpec:
    """A :class:`SceneSpec` from itself, a catalog id, ``procedural:<seed>`` or a spec JSON path."""
    if isinstance(scene, SceneSpec):
        return scene
    return scene_by_name(str(scene))


def make_scene_env(spec: SceneSpec, **env_options: Any) -> Any:
    """The registered Gymnasium env of ``spec`` (``SpatialScout/<scene_id>-v0``; an unregistered
    scene, e.g. ``procedural:<seed>`` or a spec file, through ``SpatialScout/Procedural-v0`` with
    that scene), made with ``gym.make`` and ``env_options`` (resolution, budgets, renderer)."""
    import gymnasium as gym

    from spatialscout_gym.envs.registration import NAMESPACE, env_id_for_scene
    env_id = env_id_for_scene(spec.scene_id)
    if env_id not in gym.registry:
        env_id = f"{NAMESPACE}/Procedural-v0"
    return gym.make(env_id, scene=spec, **env_options)


def run_episode(agent: Agent, scene: str | SceneSpec, out_dir: str | os.PathLike, *, seed: int = 0,
                image_budget: int = 100, tool_call_budget: int | None = 100, resolution: int = 512,
                renderer: Any = None, overwrite: bool = False, attempt: int | None = None,
                keep_attempts: bool = False) -> dict:
    """Run ``agent`` for one episode on ``scene`` and write the run directory ``out_dir``.

    Parameters
    ----------
    agent : Agent
    scene : str or SceneSpec
        Catalog id, ``procedural:<seed>``, spec JSON path, or a spec.
    out_dir : path
        The run directory to create (its parent is created if needed).
    seed : int
        Seeds the agent's ``numpy.random.Generator``.
    image_budget, tool_call_budget : int
        V and the tool-call budget (None: unlimited).
    resolution : int
        Square render grid, pixels.
    renderer : Renderer, optional
        Reuse a renderer (it is switched to ``scene`` with ``set_scene`` and not closed);
        by default a :class:`~spatialscout_gym.render.sapien_renderer.SapienRenderer` is built
        and closed (the :class:`~spatialscout_gym.envs.session.EpisodeSession` rule).
    overwrite : bool
        Replace an existing non-empty ``out_dir``; otherwise that raises ``FileExistsError``.
    attempt : int, optional
        The attempt number written to ``result.json`` (``evaluate``: 1 for the first attempt).
    keep_attempts : bool
        Keep ``out_dir/attempts/`` (earlier failed attempts) when replacing ``out_dir``.

    Returns
    -------
    dict
        The contents of ``result.json``.
    """
    out = Path(out_dir)
    if out.exists() and (not out.is_dir() or any(out.iterdir())) and not overwrite:
        raise FileExistsError(f"run directory {out} already exists and is not empty")
    spec = resolve_scene(scene)
    # An agent that counts model calls itself (VLM agents, docs/protocol.md section 5) gets an episode
    # without a tool-call budget; its own budget B ends the episode.
    tool_call_budget = None if isinstance(agent, EnvAgent) and agent.counts_model_calls else tool_call_budget
    failure: Exception | None = None
    if isinstance(agent, EnvAgent):
        return _run_env_agent(agent, spec, out, renderer=renderer, seed=seed, resolution=resolution,
                              image_budget=image_budget, tool_call_budget=tool_call_budget, attempt=attempt,
                              keep_attempts=keep_attempts)
    with EpisodeSession(resolution=resolution, image_budget=image_budget, tool_call_budget=tool_call_budget,
                        renderer=renderer) as session:
        session.load(spec)
        episode = session.new_episode()
        privileged = PrivilegedAccess(spec, session.renderer) if agent.privileged else None
        try:
            agent.run(episode, rng=np.random.default_rng(seed), privileged=privileged)
        except Exception as exc:  # service or runtime failure: recorded, left out of aggregates
            failure = exc
            episode.end("failed")
        if not episode.done:
            episode.end("agent_stopped")
        return session.write_run(out, agent, seed=seed, failure=failure, attempt=attempt,
                                 keep_attempts=keep_attempts)


def _run_env_agent(agent: EnvAgent, spec: SceneSpec, out: Path, *, renderer: Any, seed: int, resolution: int,
                   image_budget: int, tool_call_budget: int | None, attempt: int | None = None,
                   keep_attempts: bool = False) -> dict:
    """Run an env-driving agent on the scene's registered env and write its run directory with
    the agent's trace (model events in place)."""
    env = make_scene_env(spec, renderer=renderer, resolution=resolution, image_budget=image_budget,
                         tool_call_budget=tool_call_budget)
    failure: Exception | None = None
    try:
        try:
            agent.run_env(env, seed=seed)
        except Exception as exc:  # service or runtime failure: recorded, left out of aggregates
            failure = exc
        episode = env.unwrapped.episode
        if episode is None:  # the env never reset: nothing to record
            raise failure if failure is not None else RuntimeError("the agent did not reset the env")
        if not episode.done:
            episode.end("failed" if failure is not None else agent.end_reason or "agent_stopped")
        return write_run(out, env.unwrapped.scene_spec, episode, agent, seed=seed, resolution=resolution,
                         image_budget=image_budget, tool_call_budget=tool_call_budget, failure=failure,
                         attempt=attempt, keep_attempts=keep_attempts, trace=agent.trace())
    finally:
        env.close()   # the env's session closes a renderer only if it built it


def write_run(out_dir: str | os.PathLike, spec: SceneSpec, episode: Episode, agent: Any, *, seed: int,
              resolution: int, image_budget: int, tool_call_budget: int | None,
              failure: BaseException | None = None, attempt: int | None = None,
              keep_attempts: bool = False, trace: list[dict] | None = None) -> dict:
    """Score ``episode`` and write its run directory (see the module docstring); returns
    ``result.json``'s contents. An existing ``out_dir`` is replaced (callers check first).

    ``agent`` supplies ``name`` and, optionally, ``extra_result() -> dict`` and
    ``run_records() -> {file name: dict (JSON) or str (text)}``; ``failure`` marks the run as
    failed (no metrics, no ``predictions.json``/``ground_truth.json``). With ``keep_attempts`` an
    existing ``out_dir/attempts/`` moves into the new directory. ``trace`` replaces
    ``episode.trace`` (an env agent's trace with its model events in place).
    """
    out = Path(out_dir)
    gt = GroundTruth.from_spec(spec)
    positions = {k: [float(x) for x in v] for k, v in episode.accepted_map.items()}
    if failure is None:
        score = score_scene(gt, positions)
        result = {"status": "ok", **score.metrics(), "scorer": score.record()}
    else:  # no metrics and no ground_truth.json/predictions.json: scorers and reports skip it
        result = {"status": "failed", "error": redact(f"{type(failure).__name__}: {failure}"),
                  "error_type": type(failure).__name__}
    extra = getattr(agent, "extra_result", None)
    if callable(extra):
        result.update(extra())
    result.update({
        "scene_id": spec.scene_id, "agent": getattr(agent, "name", type(agent).__name__),
        "seed": int(seed), "catalog_version": scene_catalog_version(spec),
        "scene_content_hash": scene_content_hash(spec), "resolution": int(resolution),
        "end_reason": episode.end_reason, "counters": episode.counters(),
        "image_budget": int(image_budget), "tool_call_budget": tool_call_budget,
    })
    if attempt is not None:
        result["attempt"] = int(attempt)
    records = getattr(agent, "run_records", None)
    records = records() if callable(records) else {}

    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.", suffix=".tmp", dir=out.parent))
    try:
        write_jsonl(episode.trace if trace is None else trace, tmp / TRACE_FILE)
        if failure is None:
            write_json_atomic(tmp / "predictions.json", {"positions": positions})
            write_json_atomic(tmp / "ground_truth.json", spec.ground_truth_dict())
        write_json_atomic(tmp / "entity_library.json", spec.entity_library_dict())
        for name, content in records.items():
            if isinstance(content, str):
                (tmp / name).write_text(content, encoding="utf-8")
            else:
                write_json_atomic(tmp / name, content)
        write_json_atomic(tmp / RESULT_FILE, result)
        (tmp / "frames").mkdir()
        from PIL import Image
        for fid, frame in sorted(episode.frames.items()):
            Image.fromarray(frame.image).save(tmp / "frames" / f"frame_{fid:03d}.png")
        if out.exists():
            # earlier attempts move into the new directory first; a crash between the two renames
            # leaves them in the temp dir, from where evaluate's clean-up moves them back
            if keep_attempts and (out / ATTEMPTS_DIR).is_dir():
                os.replace(out / ATTEMPTS_DIR, tmp / ATTEMPTS_DIR)
            shutil.rmtree(out)
        os.replace(tmp, out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return result
