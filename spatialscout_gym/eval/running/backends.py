"""Where the episodes of an evaluation run (docs/architecture.md "Scale").

* :class:`LocalBackend`: a process pool on this machine (``spawn`` start method). Each worker
  process builds one renderer on its first episode and reuses it (``set_scene``) for the next,
  so SAPIEN's pipeline compilation (~5 s on lavapipe) is paid once per worker. A worker, and the
  ``multiprocessing`` manager that holds the ``max_concurrency`` semaphore, exit when the evaluation
  that started them dies, even by ``kill -9`` (:func:`~spatialscout_gym.core.lifetime.exit_with_parent`);
  the resource tracker then sees its last client go and exits too.
* :class:`RayBackend`: one Ray actor per worker on a Ray cluster (``ray.init(address=...)``) or a
  local Ray instance; each actor keeps its renderer warm the same way. Ray is imported inside this
  backend only. Every node needs this package installed (``pip install spatialscout-gym[ray,render]``)
  and must see ``DIR`` at the same path (a shared filesystem), since actors write the run
  directories themselves.

What a worker does comes from the driver as a :class:`Work` (:mod:`spatialscout_gym.eval.running.evaluate`
gives its ``WorkerState`` and ``execute_task``), so this module imports nothing of the evaluation
at run time (its types only, for the checker) and the two modules form no import circle.

Both call ``on_outcome(outcome)`` in the driver process as each episode ends, in completion
order. ``max_concurrency`` caps simultaneous model requests across all workers with one shared
semaphore (a ``multiprocessing`` manager semaphore locally, a semaphore actor on Ray).
"""

from __future__ import annotations

import multiprocessing as mp
import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Protocol, Sequence

from spatialscout_gym.core.errors import ConfigError, MissingExtraError, install_command
from spatialscout_gym.core.files import write_json_atomic
from spatialscout_gym.core.lifetime import exit_with_parent, started_from_main_thread
from spatialscout_gym.core.renderer_api import Renderer

if TYPE_CHECKING:
    from spatialscout_gym.eval.running.tasks import EpisodeTask, EvalSettings, Outcome, WorkerState

__all__ = ["Backend", "LocalBackend", "RayBackend", "make_backend", "BACKENDS", "Work"]

BACKENDS = ("local", "ray")
OnOutcome = Callable[["Outcome"], None]
RendererFactory = Callable[..., Renderer]
"""Builds a worker's renderer (the evaluation's ``renderer_factory``; None: SAPIEN's)."""


@dataclass(frozen=True)
class Work:
    """What a worker does, given by the driver: ``state(settings, limiter, renderer_factory)`` builds
    a worker's warm state once, ``execute(task, state)`` runs one episode to its outcome (both are
    pickled to the workers, so module-level), and ``crashed(task, error)`` is the outcome of an
    episode whose worker died (called in the driver)."""

    state: Callable[[EvalSettings, Any, RendererFactory | None], WorkerState]   # Any: the limiter, a semaphore
    execute: Callable[[EpisodeTask, WorkerState], Outcome]
    crashed: Callable[[EpisodeTask, str], Outcome]


class Backend(Protocol):
    def run(self, tasks: Sequence[EpisodeTask], settings: EvalSettings, on_outcome: OnOutcome, *, work: Work,
            max_concurrency: int | None = None, renderer_factory: RendererFactory | None = None) -> None:
        """Run ``tasks``; call ``on_outcome`` once per task in the driver process."""
        ...


def make_backend(name: str, *, workers: int = 1, ray_address: str | None = None) -> Backend:
    """``"local"`` -> :class:`LocalBackend`, ``"ray"`` -> :class:`RayBackend`."""
    if name == "local":
        if ray_address is not None:
            raise ConfigError("--ray-address is only used with --backend ray")
        return LocalBackend(workers)
    if name == "ray":
        return RayBackend(workers, ray_address)
    raise ConfigError(f"unknown backend {name!r}; expected one of {BACKENDS}")


def _crash_outcome(work: Work, task: EpisodeTask, why: str) -> Outcome:
    from spatialscout_gym.core.redact import redact
    error = redact(f"WorkerCrash: {why}")
    write_json_atomic(task.failed_file, {"scene": task.scene, "seed": task.seed, "error": error,
                                         "traceback": None})
    return work.crashed(task, error)


# ---------------------------------------------------------------------------------------------
# Local process pool
# ---------------------------------------------------------------------------------------------
_STATE: WorkerState | None = None
_EXECUTE: Callable[[EpisodeTask, WorkerState], Outcome] | None = None


def _init_worker(settings: EvalSettings, limiter: Any, renderer_factory: RendererFactory | None,
                 state: Callable[[EvalSettings, Any, RendererFactory | None], WorkerState],
                 execute: Callable[[EpisodeTask, WorkerState], Outcome], parent_pid: int | None = None,
                 death_signal: bool = False) -> None:
    global _STATE, _EXECUTE
    import signal
    signal.signal(signal.SIGINT, signal.SIG_IGN)   # Ctrl-C reaches the whole group: the driver stops the workers
    if parent_pid is not None:
        exit_with_parent(parent_pid, death_signal)
    _STATE, _EXECUTE = state(settings, limiter, renderer_factory), execute


def _run_in_worker(task: EpisodeTask) -> Outcome:
    assert _STATE is not None and _EXECUTE is not None, "worker not initialised"
    return _EXECUTE(task, _STATE)


class LocalBackend:
    """A ``spawn`` process pool of ``workers`` processes, each with one warm renderer."""

    def __init__(self, workers: int = 1) -> None:
        if workers < 1:
            raise ConfigError(f"workers must be >= 1, got {workers}")
        self.workers = int(workers)

    def run(self, tasks: Sequence[EpisodeTask], settings: EvalSettings, on_outcome: OnOutcome, *, work: Work,
            max_concurrency: int | None = None, renderer_factory: RendererFactory | None = None) -> None:
        from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
        from concurrent.futures.process import BrokenProcessPool

        ctx = mp.get_context("spawn")
        main_thread = started_from_main_thread()
        manager = limiter = None
        if max_concurrency is not None:
            from multiprocessing.managers import SyncManager
            manager = SyncManager(ctx=ctx)
            manager.start(exit_with_parent, (os.getpid(), main_thread))
            limiter = manager.Semaphore(max_concurrency)
        queue = list(tasks)
        try:
            while queue:
                n = min(self.workers, len(queue))
                pool = ProcessPoolExecutor(n, mp_context=ctx, initializer=_init_worker,
                                           initargs=(settings, limiter, renderer_factory, work.state, work.execute,
                                                     os.getpid(), main_thread))
                futures = {pool.submit(_run_in_worker, t): t for t in queue}
                queue = []
                broken = False
                try:
                    pending = set(futures)
                    while pending:
                        finished, pending = wait(pending, return_when=FIRST_COMPLETED)
                        for f in finished:
                            task = futures[f]
                            try:
                                outcome = f.result()
                            except BrokenProcessPool:
                                # a worker died (segfault, out of memory): which task killed it is
                                # unknown; the first broken task is failed, the rest retried.
                                if not broken:
                                    broken = True
                                    outcome = _crash_outcome(work, task, "a worker process died during this "
                                                                   "episode or one running beside it")
                                else:
                                    queue.append(task)
                                    continue
                            on_outcome(outcome)
                except BaseException:
                    # interrupted (Ctrl-C, SIGTERM): stop the workers now and let the pool close its
                    # queues, so nothing is left for the resource tracker to report; a rerun resumes
                    for proc in list((getattr(pool, "_processes", None) or {}).values()):
                        proc.terminate()
                    broken = False
                    raise
                finally:
                    pool.shutdown(wait=not broken, cancel_futures=True)
        finally:
            if manager is not None:
                manager.shutdown()


# ---------------------------------------------------------------------------------------------
# Ray
# ---------------------------------------------------------------------------------------------
class _RayWorker:
    """Body of the Ray actor: one warm renderer, episodes one at a time."""

    def __init__(self, settings: EvalSettings, limiter: RaySemaphore | None, renderer_factory: RendererFactory | None,
                 state: Callable[[EvalSettings, Any, RendererFactory | None], WorkerState],
                 execute: Callable[[EpisodeTask, WorkerState], Outcome]) -> None:
        self.state, self.execute = state(settings, limiter, renderer_factory), execute

    def run(self, task: EpisodeTask) -> Outcome:
        return self.execute(task, self.state)


class _SemaphoreActor:
    """Body of a threaded Ray actor holding a counting semaphore."""

    def __init__(self, n: int) -> None:
        import threading
        self._sem = threading.Semaphore(n)

    def acquire(self) -> bool:
        self._sem.acquire()
        return True

    def release(self) -> bool:
        self._sem.release()
        return True


class RaySemaphore:
    """A context manager around a semaphore actor; picklable (holds the actor handle)."""

    def __init__(self, actor: Any) -> None:   # a _SemaphoreActor handle (Ray types its method calls as Never)
        self.actor = actor

    def __enter__(self) -> "RaySemaphore":
        import ray
        ray.get(self.actor.acquire.remote())
        return self

    def __exit__(self, *exc: object) -> None:
        import ray
        ray.get(self.actor.release.remote())


class RayBackend:
    """One actor per worker on a Ray cluster; same run directories as :class:`LocalBackend`.

    Parameters
    ----------
    workers : int
        Actors (each asks Ray for one CPU).
    address : str, optional
        ``ray.init(address=...)``, e.g. ``"auto"`` or ``"ray://head:10001"``; None starts a local
        Ray instance (no dashboard, every port on loopback, ended with this process even by
        ``kill -9``: :func:`~spatialscout_gym.cluster.local_ray.init_local_ray`) unless Ray is
        already initialised in this process.
    """

    def __init__(self, workers: int = 1, address: str | None = None) -> None:
        if workers < 1:
            raise ConfigError(f"workers must be >= 1, got {workers}")
        self.workers = int(workers)
        self.address = address

    def run(self, tasks: Sequence[EpisodeTask], settings: EvalSettings, on_outcome: OnOutcome, *, work: Work,
            max_concurrency: int | None = None, renderer_factory: RendererFactory | None = None) -> None:
        try:
            import ray
        except ImportError:
            raise MissingExtraError(f"--backend ray needs Ray: {install_command('ray')}") from None
        owns = not ray.is_initialized()
        if owns and self.address is None:   # a Ray of its own: loopback only, gone with this process
            from spatialscout_gym.cluster.local_ray import init_local_ray
            init_local_ray(log_to_driver=False)
        elif owns:
            ray.init(address=self.address, include_dashboard=False, log_to_driver=False)
        try:
            limiter = None
            if max_concurrency is not None:
                # Ray's typed ray.remote(**options) lists the task options only, not an actor's max_concurrency
                sem = ray.remote(num_cpus=0, max_concurrency=max_concurrency + 64)(  # type: ignore[call-overload]
                    _SemaphoreActor)
                limiter = RaySemaphore(sem.remote(max_concurrency))
            actor_cls = ray.remote(num_cpus=1)(_RayWorker)

            def new_actor() -> Any:
                return actor_cls.remote(settings, limiter, renderer_factory, work.state, work.execute)

            idle = [new_actor() for _ in range(min(self.workers, len(tasks)))]
            queue = list(tasks)
            inflight: dict[Any, tuple[Any, Any]] = {}
            while queue or inflight:
                while idle and queue:
                    actor, task = idle.pop(), queue.pop(0)
                    inflight[actor.run.remote(task)] = (actor, task)
                ready, _ = ray.wait(list(inflight), num_returns=1)
                actor, task = inflight.pop(ready[0])
                try:
                    outcome = ray.get(ready[0])
                except ray.exceptions.RayError as exc:
                    outcome = _crash_outcome(work, task, f"Ray actor failed: {type(exc).__name__}: {exc}")
                    ray.kill(actor)
                    actor = new_actor()
                idle.append(actor)
                on_outcome(outcome)
            for actor in idle:
                ray.kill(actor)
        finally:
            if owns:
                from spatialscout_gym.cluster.local_ray import stop_local_ray
                stop_local_ray()
