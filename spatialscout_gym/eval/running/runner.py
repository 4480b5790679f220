"""Run one agent on one scene and write its run directory (docs/protocol.md section 7): the
directory's layout and its atomic writer, :func:`write_run`, live in
:mod:`spatialscout_gym.envs.run_dir` and are re-exported here."""

from __future__ import annotations

import contextlib
import dataclasses
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator, Protocol, cast

import numpy as np

from spatialscout_gym.baselines.base import Agent, EnvAgent, PrivilegedAccess
from spatialscout_gym.core.errors import SpatialScoutError
from spatialscout_gym.core.spec import SceneSpec
from spatialscout_gym.envs.run_dir import write_run
from spatialscout_gym.envs.session import EpisodeSession
from spatialscout_gym.scenes.catalog import scene_by_name

if TYPE_CHECKING:
    import gymnasium as gym

    from spatialscout_gym.envs.spatialscout_env import SpatialScoutEnv

__all__ = ["run_episode", "write_run", "resolve_scene", "make_scene_env", "env_episode", "EnvEpisode", "episode_rng"]


def episode_rng(seed: int) -> np.random.Generator:
    """The one seeding rule of every entry point that runs an agent episode (``spatialscout run``,
    ``spatialscout evaluate`` on any backend, ``benchmarks/nbv_results.py``, so the validation of
    ``train-nbv``'s checkpoints too): the episode of agent seed ``seed`` hands its agent
    ``numpy.random.default_rng(seed)``. It depends on the seed alone, not on the scene or its place in
    a list of scenes, so a subset of scenes gives the same cells (docs/nbv.md "One seeding rule")."""
    return np.random.default_rng(int(seed))



def resolve_scene(scene: str | SceneSpec) -> SceneSpec:
    """A :class:`SceneSpec` from itself, a catalog id, ``procedural:<seed>`` or a spec JSON path."""
    if isinstance(scene, SceneSpec):
        return scene
    return scene_by_name(str(scene))


class SceneNotRecoverable(SpatialScoutError):
    """The scene a run was recorded on cannot be rebuilt here (unknown, or different content)."""


_NAME_FAILURES = (SpatialScoutError, ValueError, KeyError, TypeError, OSError)
"""What resolving a name that is not this scene raises (unknown id, bad seed, unreadable or edited
spec file); any other exception is a bug and propagates."""


class RecordedScene(Protocol):
    """What a run records of its scene (a :class:`~spatialscout_gym.core.records.RunRecord` is one)."""

    @property
    def scene_id(self) -> str: ...
    @property
    def scene_content_hash(self) -> str | None: ...
    @property
    def catalog_version(self) -> str: ...


def resolve_recorded_scene(run_dir: str | os.PathLike, result: RecordedScene, scene_args: dict[str, str]) -> SceneSpec:
    """The scene a run directory was recorded on, rebuilt from its records: the scene argument
    ``evaluate`` recorded for its scene directory (``scene_args``, from ``scenes.json``), else the
    recorded ``scene_id`` (a catalog id), else ``procedural:<seed>`` for ``procedural_<seed>``.

    The rebuilt scene must have the recorded ``scene_id`` and content hash (a run without a
    recorded hash is not recoverable: nothing proves it is the same scene).

    Raises
    ------
    SceneNotRecoverable
        No name resolves to that scene here, or the scene found has other content (the message
        gives both catalog versions and hashes).
    """
    import re

    from spatialscout_gym.scenes.catalog import scene_catalog_version, scene_content_hash
    sid = str(result.scene_id)
    recorded = result.scene_content_hash
    names = [scene_args.get(Path(run_dir).parent.name), sid]
    m = re.fullmatch(r"procedural_(\d+)", sid)
    if m:
        names.append(f"procedural:{m.group(1)}")
    other = None
    for name in names:
        if not name:
            continue
        try:
            spec = resolve_scene(name)
        except _NAME_FAILURES:  # try the next way of naming the scene
            continue
        if spec.scene_id != sid:
            continue
        if recorded is not None and scene_content_hash(spec) == recorded:
            return spec
        other = spec
    if other is None:
        raise SceneNotRecoverable(f"scene {sid!r} cannot be found here (catalog id, procedural seed or the spec "
                                  "file named in scenes.json)")
    if recorded is None:
        raise SceneNotRecoverable(f"scene {sid!r}: the run records no content hash, so the scene found here "
                                  "cannot be shown to be the same")
    here = scene_content_hash(other)
    at = next((k for k, (x, y) in enumerate(zip(str(recorded), here)) if x != y), min(len(str(recorded)), len(here)))
    raise SceneNotRecoverable(
        f"scene {sid!r}: recorded catalog version {result.catalog_version}, content hash "
        f"{recorded}; here catalog version {scene_catalog_version(other)}, content hash {here}: they differ "
        f"from character {at} ({str(recorded)[at:at + 8]!r} vs {here[at:at + 8]!r}): not the same scene")


def make_scene_env(spec: SceneSpec, **env_options: Any) -> gym.Env:
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
                keep_attempts: bool = False, node: dict | None = None) -> dict:
    """Run ``agent`` for one episode on ``scene`` and write the run directory ``out_dir``.

    Parameters
    ----------
    agent : Agent
    scene : str or SceneSpec
        Catalog id, ``procedural:<seed>``, spec JSON path, or a spec.
    out_dir : path
        The run directory to create (its parent is created if needed).
    seed : int
        Seeds the agent's ``numpy.random.Generator`` (:func:`episode_rng`, the one seeding rule).
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
    node : dict, optional
        The Ray node running the episode (``{"id", "address"}``): a claimed field of ``result.json``.

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
                              keep_attempts=keep_attempts, node=node)
    with EpisodeSession(resolution=resolution, image_budget=image_budget, tool_call_budget=tool_call_budget,
                        renderer=renderer) as session:
        session.load(spec)
        episode = session.new_episode()
        privileged = PrivilegedAccess(spec, session.renderer) if agent.privileged else None
        try:
            agent.run(episode, rng=episode_rng(seed), privileged=privileged)
        except Exception as exc:  # service or runtime failure: recorded, left out of aggregates
            failure = exc
            episode.end("failed")
        if not episode.done:
            episode.end("agent_stopped")
        return session.write_run(out, agent, seed=seed, failure=failure, attempt=attempt,
                                 keep_attempts=keep_attempts, node=node)


def _run_env_agent(agent: EnvAgent, spec: SceneSpec, out: Path, *, renderer: Any, seed: int, resolution: int,
                   image_budget: int, tool_call_budget: int | None, attempt: int | None = None,
                   keep_attempts: bool = False, node: dict | None = None) -> dict:
    """Run an env-driving agent on the scene's registered env and write its run directory with
    the agent's trace (model events in place)."""
    with env_episode(agent, spec, out, seed=seed, resolution=resolution, image_budget=image_budget,
                     tool_call_budget=tool_call_budget, attempt=attempt, keep_attempts=keep_attempts, node=node,
                     renderer=renderer) as run:
        agent.run_env(run.env, seed=seed)
    return run.result


@dataclasses.dataclass
class EnvEpisode:
    """The env :func:`env_episode` gives the agent, and what came of the episode once it closed."""

    env: Any
    """The scene's Gymnasium env (``SpatialScoutEnv``, wrapped as ``gym.make`` wraps it)."""
    result: dict = dataclasses.field(default_factory=dict)
    """The ``result.json`` written (set when the ``with`` block ends)."""
    failure: Exception | None = None
    """What the agent raised (a model-service or runtime failure), recorded in the run; None when it
    ran to the end."""


@contextlib.contextmanager
def env_episode(agent: EnvAgent, spec: SceneSpec, out: str | os.PathLike, *, seed: int, resolution: int,
                image_budget: int, tool_call_budget: int | None, attempt: int | None = None,
                keep_attempts: bool = False, node: dict | None = None,
                **env_options: Any) -> Iterator[EnvEpisode]:
    """One episode of an env-driving agent: the one loop of the runner and the Inspect task.

    Makes the scene's env (:func:`make_scene_env` with ``env_options``: a renderer or
    ``shared_renderer``), yields it for the agent to drive (synchronously, or with ``await``s
    inside an Inspect solver), then ends the episode (``failed`` when the block raised, else the
    agent's end reason or ``agent_stopped``), writes the run directory ``out`` with the agent's
    trace and closes the env. An exception in the block is recorded as the run's failure
    (``EnvEpisode.failure``), not raised, unless the env never reset (nothing to record).
    """
    env = make_scene_env(spec, resolution=resolution, image_budget=image_budget, tool_call_budget=tool_call_budget,
                         **env_options)
    run = EnvEpisode(env)
    try:
        try:
            yield run
        except Exception as exc:  # service or runtime failure: recorded, left out of aggregates
            run.failure = exc
        scout = cast("SpatialScoutEnv", env.unwrapped)   # make_scene_env makes a SpatialScout env
        episode = scout.episode
        if episode is None:  # the env never reset: nothing to record
            raise run.failure if run.failure is not None else RuntimeError("the agent did not reset the env")
        if not episode.done:
            episode.end("failed" if run.failure is not None else agent.end_reason or "agent_stopped")
        scene_spec = scout.scene_spec
        assert scene_spec is not None   # an env with an episode has loaded its scene
        run.result = write_run(out, scene_spec, episode, agent, seed=seed, resolution=resolution,
                               image_budget=image_budget, tool_call_budget=tool_call_budget, failure=run.failure,
                               attempt=attempt, keep_attempts=keep_attempts, trace=agent.trace(), node=node)
    finally:
        env.close()   # the env's session closes a renderer only if it built it


