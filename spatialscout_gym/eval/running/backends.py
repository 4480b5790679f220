"""Where the episodes of an evaluation run (docs/architecture.md "Scale").

* :class:`LocalBackend`: a process pool on this machine (``spawn`` start method). Each worker
  process builds one renderer on its first episode and reuses it (``set_scene``) for the next,
  so SAPIEN's pipeline compilation (~5 s on lavapipe) is paid once per worker. A worker, and the
  ``multiprocessing`` manager that holds the ``max_concurrency`` semaphore, exit when the evaluation
  that started them dies, even by ``kill -9`` (:func:`~spatialscout_gym.core.lifetime.exit_with_parent`);
  the resource tracker then sees its last client go and exits too.
* :class:`RayBackend`: one Ray actor per worker on a Ray cluster (``ray.init(address=...)``) or a
  local Ray instance; each actor keeps its renderer warm the same way. Ray is imported inside this
  backend only. Every node needs this package installed (``pip install spatialscout-gym[ray,render]``);
  no node needs to see ``DIR``: an actor runs its episode in a scratch directory and sends the
  files back, and the driver writes them (:mod:`spatialscout_gym.eval.running.shipping`).

What a worker does comes from the driver as a :class:`Work` (:mod:`spatialscout_gym.eval.running.evaluate`
gives its ``WorkerState`` and ``execute_task``), so this module imports nothing of the evaluation
at run time (its types only, for the checker) and the two modules form no import circle.

Both call ``on_outcome(outcome)`` in the driver process as each episode ends, in completion
order; an ``on_outcome`` that raises :class:`StopStarting` stops new episodes only (the running
ones end and are reported), any other exception stops the run at once. ``max_concurrency`` caps simultaneous model requests across all workers with one shared
semaphore (a ``multiprocessing`` manager semaphore locally, a semaphore actor on Ray).
"""

from __future__ import annotations

import contextlib
import multiprocessing as mp
import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, ContextManager, Iterator, Protocol, Sequence

from spatialscout_gym.core.errors import ConfigError, MissingExtraError, SpatialScoutError, install_command
from spatialscout_gym.core.files import write_json_atomic
from spatialscout_gym.core.lifetime import exit_with_parent, started_from_main_thread
from spatialscout_gym.core.renderer_api import Renderer

if TYPE_CHECKING:
    from spatialscout_gym.eval.running.tasks import EpisodeTask, EvalSettings, Outcome, WorkerState

__all__ = ["Backend", "LocalBackend", "RayBackend", "make_backend", "BACKENDS", "Work", "RAY_TIMEOUT_S",
           "HEAD_LOST_S", "HOST_ERRORS", "HOST_ERROR_LIMIT", "host_error", "RayHeadLostError", "StopStarting"]

BACKENDS = ("local", "ray")
OnOutcome = Callable[["Outcome"], None]
RendererFactory = Callable[..., Renderer]
"""Builds a worker's renderer (the evaluation's ``renderer_factory``; None: SAPIEN's)."""


@dataclass(frozen=True)
class Work:
    """What a worker does, given by the driver: ``state(settings, limiter, renderer_factory)`` builds
    a worker's warm state once, ``execute(task, state)`` runs one episode to its outcome (both are
    pickled to the workers, so module-level), and ``crashed(task, error)`` is the outcome of an
    episode whose worker died (called in the driver).

    A backend whose workers share no disk with the driver (Ray) runs ``prepare(task)`` in the
    driver before it sends the task (earlier attempts archived there), ``ship(task, state, execute)``
    on the worker around ``execute`` (the outcome carries the run's files) and ``land(outcome)`` in the driver
    (the files written into ``DIR``, where the driver's own task says) before ``on_outcome``."""

    state: Callable[[EvalSettings, Any, RendererFactory | None], WorkerState]   # Any: the limiter, a semaphore
    execute: Callable[[EpisodeTask, WorkerState], Outcome]
    crashed: Callable[[EpisodeTask, str], Outcome]
    prepare: Callable[[EpisodeTask], EpisodeTask] | None = None
    ship: Callable[[EpisodeTask, WorkerState, Callable[[EpisodeTask, WorkerState], Outcome]], Outcome] | None = None
    land: Callable[[Outcome, EpisodeTask], Outcome] | None = None   # (outcome, the task the driver sent)


RAY_TIMEOUT_S = 120.0
"""Default of ``evaluate --ray-timeout``: seconds an actor may take to start (be placed on a node,
import, answer), and may stay silent while it runs an episode before it counts as lost. (A scene
build or a renderer's first pipeline can hold an actor's interpreter for a minute on a loaded
software-rendering machine, so it answers nothing meanwhile.) A node the cluster reports dead
ends its episode sooner, at the next look at the node table (every :data:`NODE_POLL_S`)."""

NODE_POLL_S = 2.0
"""How often the Ray backend reads the cluster's node table for nodes lost under busy actors."""

HEAD_LOST_S = 15.0
"""Seconds the cluster's head (its GCS) may answer nothing before the Ray backend ends the run in one
line, its running episodes recorded as failed attempts. Ray's own driver gives up after 60 s, by
exiting with only its ``rpc_client`` message, so this must be well under that."""

HOST_ERRORS = ("ENOSPC", "EIO", "EROFS")
"""Errors that say the node's disk is at fault, not the episode (full, failing, read-only)."""

HOST_ERROR_LIMIT = 2
"""A node whose episodes failed this many times with :data:`HOST_ERRORS` draws no more episodes."""


class StopStarting(Exception):
    """Raised by ``on_outcome`` to end the run gently (the evaluation's spend reached its cap): the
    backend starts no further episode, lets every running one end (each is paid for: it finishes,
    or fails at its next request) and hands its outcome to ``on_outcome`` as usual, then returns."""


class RayHeadLostError(SpatialScoutError):
    """The Ray cluster's head stopped answering mid-run."""


def host_error(error: str | None) -> str | None:
    """The :data:`HOST_ERRORS` name an episode's error shows (``OSError: [Errno 28] ...``), or None."""
    import errno
    import re
    for number in re.findall(r"\[Errno (\d+)\]", error or ""):
        name = errno.errorcode.get(int(number))
        if name in HOST_ERRORS:
            return name
    return None


def _reason(exc: BaseException) -> str:
    """``Type: first line`` of a Ray error, or of the exception a Ray task raised (its ``cause``)."""
    cause = getattr(exc, "cause", None)
    shown = cause if isinstance(cause, BaseException) else exc
    lines = str(shown).splitlines()
    return f"{type(shown).__name__}: {lines[0] if lines else ''}"


def _where(node: dict) -> str:
    """A node as a failure names it: its id's first 12 characters and its address."""
    return f"node {str(node.get('id'))[:12]} at {node.get('address')}"


class Backend(Protocol):
    def session(self) -> ContextManager[None]:
        """Reach the machines the episodes run on (before anything is written: a cluster that
        cannot be joined is a one-line error and leaves nothing behind)."""
        ...

    def run(self, tasks: Sequence[EpisodeTask], settings: EvalSettings, on_outcome: OnOutcome, *, work: Work,
            max_concurrency: int | None = None, renderer_factory: RendererFactory | None = None) -> None:
        """Run ``tasks``; call ``on_outcome`` once per task in the driver process."""
        ...


def make_backend(name: str, *, workers: int = 1, ray_address: str | None = None,
                 ray_timeout_s: float = RAY_TIMEOUT_S) -> Backend:
    """``"local"`` -> :class:`LocalBackend`, ``"ray"`` -> :class:`RayBackend`."""
    if name == "local":
        if ray_address is not None:
            raise ConfigError("--ray-address is only used with --backend ray")
        return LocalBackend(workers)
    if name == "ray":
        return RayBackend(workers, ray_address, ray_timeout_s)
    raise ConfigError(f"unknown backend {name!r}; expected one of {BACKENDS}")


def _crash_outcome(work: Work, task: EpisodeTask, why: str) -> Outcome:
    from spatialscout_gym.core.redact import redact
    from spatialscout_gym.core.eval_records import FailureNote
    error = redact(f"WorkerCrash: {why}")
    write_json_atomic(task.failed_file, FailureNote(task.scene, task.seed, error, "WorkerCrash").to_json())
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

    def session(self) -> ContextManager[None]:
        return contextlib.nullcontext()

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
        stopping = False   # on_outcome raised StopStarting: no episode starts, the running ones end
        try:
            while queue and not stopping:
                n = min(self.workers, len(queue))
                pool = ProcessPoolExecutor(n, mp_context=ctx, initializer=_init_worker,
                                           initargs=(settings, limiter, renderer_factory, work.state, work.execute,
                                                     os.getpid(), main_thread))
                # at most one episode per worker is handed to the pool: one that has not started can
                # then never start after a stop (a queued future would, the pool's call queue holds it)
                futures: dict[Any, EpisodeTask] = {}
                broken = False

                def submit_next() -> None:
                    while queue and not stopping and not broken and len(futures) < n:
                        t = queue.pop(0)
                        futures[pool.submit(_run_in_worker, t)] = t

                try:
                    submit_next()
                    while futures:
                        finished, _ = wait(set(futures), return_when=FIRST_COMPLETED)
                        for f in finished:
                            task = futures.pop(f)
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
                                    queue.insert(0, task)
                                    continue
                            try:
                                on_outcome(outcome)
                            except StopStarting:
                                stopping = True
                        submit_next()
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
    """Body of the Ray actor: one warm renderer, episodes one at a time; :meth:`place` answers at
    once (its own concurrency group) while an episode runs, which is how the driver sees it alive."""

    def __init__(self, settings: EvalSettings, limiter: RaySemaphore | None, renderer_factory: RendererFactory | None,
                 state: Callable[[EvalSettings, Any, RendererFactory | None], WorkerState],
                 execute: Callable[[EpisodeTask, WorkerState], Outcome],
                 ship: Callable[[EpisodeTask, WorkerState, Callable[[EpisodeTask, WorkerState], Outcome]], Outcome]
                 | None = None) -> None:
        from spatialscout_gym.cluster.join import node_place
        self.state, self.execute, self.ship = state(settings, limiter, renderer_factory), execute, ship
        self.state.node = node_place()

    def place(self) -> dict:
        """The node this actor runs on (``{"id", "address"}``)."""
        assert self.state.node is not None
        return self.state.node

    def run(self, task: EpisodeTask) -> Outcome:
        if self.ship is not None:
            return self.ship(task, self.state, self.execute)
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


class _NodeTable:
    """The Ray cluster's node table, read in a thread: the read blocks while the head is gone (Ray's
    client retries it for a minute), and the driver must notice that and end the run itself."""

    def __init__(self, ray: Any) -> None:
        self.ray = ray
        self.box: list[set[str]] = []
        self.thread: Any = None
        self.silent_since: float | None = None   # when the head first failed to answer

    def _read(self, box: list[set[str]]) -> None:
        try:
            box.append({n["NodeID"] for n in self.ray.nodes() if n.get("Alive")})
        except Exception:   # a head that refuses: counted as silent
            pass

    def alive(self, now: float, wait_s: float) -> set[str] | None:
        """Ids of the nodes alive, or None when the head did not answer within ``wait_s``."""
        import threading
        if self.thread is None or not self.thread.is_alive():
            box: list[set[str]] = []
            self.box = box
            self.thread = threading.Thread(target=self._read, args=(box,), daemon=True, name="ray-node-table")
            self.thread.start()
        self.thread.join(wait_s)
        if self.box:
            self.thread, self.silent_since = None, None
            return self.box[0]
        if self.silent_since is None:
            self.silent_since = now
        return None


class RayBackend:
    """One actor per worker on a Ray cluster; same run directories as :class:`LocalBackend`, written
    by the driver from the files each actor sends back (no disk shared with the workers needed:
    :mod:`spatialscout_gym.eval.running.shipping`).

    An episode goes only to an actor that has started (answered :meth:`_RayWorker.place`). An actor
    that does not start within ``timeout_s`` is dropped (the rest go on). A busy actor that Ray
    reports dead, whose node the cluster's node table shows dead or gone, or that answers no ping
    for ``timeout_s`` is killed, its episode recorded as a failed attempt (``work.crashed``), and a
    replacement is started under the same rule. ``workers`` above the cluster's CPUs is capped to
    them (one line on stderr). Every failure names the node it happened on; a node with
    :data:`HOST_ERROR_LIMIT` disk failures (:data:`HOST_ERRORS`) draws no more episodes (one line on
    stderr; its actors are replaced on other nodes). A head that answers nothing for
    :data:`HEAD_LOST_S` ends the run (:class:`RayHeadLostError`, one line), the running episodes
    recorded as failed attempts.

    Parameters
    ----------
    workers : int
        Actors (each asks Ray for one CPU).
    address : str, optional
        ``ray.init(address=...)``, e.g. ``"auto"`` or ``"HOST:6379"``
        (:data:`~spatialscout_gym.cluster.join.ADDRESS_FORMS`); None starts a local Ray instance
        (no dashboard, every port on loopback, ended with this process even by ``kill -9``:
        :func:`~spatialscout_gym.cluster.local_ray.init_local_ray`) unless Ray is already
        initialised in this process.
    timeout_s : float
        See above (:data:`RAY_TIMEOUT_S`).
    """

    def __init__(self, workers: int = 1, address: str | None = None, timeout_s: float = RAY_TIMEOUT_S) -> None:
        if workers < 1:
            raise ConfigError(f"workers must be >= 1, got {workers}")
        if not timeout_s > 0:
            raise ConfigError(f"the Ray timeout must be > 0 seconds, got {timeout_s}")
        self.workers = int(workers)
        self.address = address
        self.timeout_s = float(timeout_s)
        self._joined = False
        self._head_lost = False

    @contextlib.contextmanager
    def session(self) -> Iterator[None]:
        """Join the cluster at ``address`` for the block (a one-line
        :class:`~spatialscout_gym.core.errors.ConfigError` when it cannot be joined: the caller
        has written nothing yet); a local Ray is started later, only when there is work."""
        if self.address is None:
            yield
            return
        try:
            import ray
        except ImportError:
            raise MissingExtraError(f"--backend ray needs Ray: {install_command('ray')}") from None
        owns = not ray.is_initialized()
        if owns:
            from spatialscout_gym.cluster.join import join_ray
            join_ray(self.address)
        self._joined = True
        try:
            yield
        finally:
            self._joined = False
            if owns and not self._head_lost:   # with the head gone, shutting down waits for it
                ray.shutdown()

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
            from spatialscout_gym.cluster.join import join_ray
            join_ray(str(self.address))
        try:
            self._run(ray, tasks, settings, on_outcome, work, max_concurrency, renderer_factory)
        finally:
            if owns and self.address is None:
                from spatialscout_gym.cluster.local_ray import stop_local_ray
                stop_local_ray()
            elif owns and not self._head_lost:
                ray.shutdown()

    def _run(self, ray: Any, tasks: Sequence[EpisodeTask], settings: EvalSettings, on_outcome: OnOutcome,
             work: Work, max_concurrency: int | None, renderer_factory: RendererFactory | None) -> None:
        import sys

        cpus = int(ray.cluster_resources().get("CPU", 0))
        workers = min(self.workers, len(tasks), max(cpus, 1))
        if self.workers > max(cpus, 1):
            print(f"--workers {self.workers} is more than the Ray cluster's {cpus} CPUs: running {max(cpus, 1)} "
                  "actors", file=sys.stderr)
        limiter = None
        if max_concurrency is not None:
            sem = ray.remote(num_cpus=0, max_concurrency=max_concurrency + 64)(
                _SemaphoreActor)
            limiter = RaySemaphore(sem.remote(max_concurrency))
        # pings run in their own group, so a busy actor answers them; episodes one at a time
        actor_cls = ray.remote(num_cpus=1, concurrency_groups={"ping": 1})(_RayWorker)
        scheduler = _RayScheduler(ray, tasks, self.timeout_s, on_outcome, work,
                                  lambda cls: cls.remote(settings, limiter, renderer_factory, work.state,
                                                         work.execute, work.ship), actor_cls)
        try:
            scheduler.run(workers)
        finally:
            self._head_lost = scheduler.head_lost
            if not scheduler.head_lost:   # with the head gone, each kill waits for it
                scheduler.kill_all()


class _RayScheduler:
    """The driver's side of one Ray evaluation (see :class:`RayBackend` for the rules): actors
    starting, idle and busy; one method per concern: starting actors, dispatching episodes,
    collecting what comes back, busy actors lost with their node or silent, nodes barred after disk
    errors (refusal), and a head that stops answering."""

    def __init__(self, ray: Any, tasks: Sequence[EpisodeTask], timeout_s: float, on_outcome: OnOutcome,
                 work: Work, construct: Callable[[Any], Any], actor_cls: Any) -> None:
        import time
        self.ray, self.work, self.on_outcome = ray, work, on_outcome
        self.construct, self.actor_cls = construct, actor_cls   # construct(cls): a new actor of cls
        self.timeout, self.poll, self.ping_every = timeout_s, min(1.0, timeout_s / 4), min(5.0, timeout_s / 4)
        self.starting: dict[Any, tuple[Any, float]] = {}       # place() ref -> (actor, started at)
        self.node_of: dict[Any, dict] = {}                     # started actor -> its node {"id", "address"}
        self.nodes_read = time.monotonic()
        self.table = _NodeTable(ray)
        self.idle: list[Any] = []
        self.inflight: dict[Any, tuple[Any, EpisodeTask]] = {}   # run() ref -> (actor, task)
        self.heard: dict[Any, float] = {}                      # busy actor -> when it last answered
        self.pings: dict[Any, Any] = {}                        # place() ref -> busy actor
        self.queue = list(tasks)
        self.dropped: list[str] = []
        self.host_errors: dict[str, list[str]] = {}            # node id -> its episodes' disk errors
        self.barred: set[str] = set()                          # node ids that draw no more episodes
        self.stranded: list[EpisodeTask] = []                  # not run: every node is barred
        self.head_lost = False

    # -- the loop ------------------------------------------------------------------------------
    def run(self, workers: int) -> None:
        import time
        for _ in range(workers):
            self.start_actor()
        while self.queue or self.inflight:
            self.dispatch()
            if not (self.idle or self.inflight or self.starting):
                raise SpatialScoutError(
                    f"no Ray actor could start within {self.timeout:g} s "
                    f"({self.dropped[-1] if self.dropped else 'none placed'}); {len(self.queue)} episodes not run: "
                    "free CPUs on the cluster (or raise --ray-timeout) and rerun the same command to resume")
            ready, _ = self.ray.wait([*self.starting, *self.inflight, *self.pings], num_returns=1, timeout=self.poll)
            now = time.monotonic()
            for ref in ready:
                self.collect(ref, now)
            self.drop_unplaced(now)
            self.watch_busy(now, self.dead_nodes(now))
        if self.stranded:
            raise SpatialScoutError(
                f"every node of the Ray cluster failed episodes with disk errors and draws no more: "
                f"{len(self.stranded)} episodes not run; free the nodes' disks (or add nodes) and rerun the same "
                "command to resume")

    def kill_all(self) -> None:
        for actor in [*self.idle, *(a for a, _ in self.starting.values()), *(a for a, _ in self.inflight.values())]:
            with contextlib.suppress(Exception):
                self.ray.kill(actor)

    # -- actors --------------------------------------------------------------------------------
    def start_actor(self) -> None:
        import time
        cls = self.actor_cls
        if self.barred:   # Ray's node-id label keeps the replacement off the nodes that draw no episodes
            cls = cls.options(label_selector={"ray.io/node-id": f"!in({', '.join(sorted(self.barred))})"})
        actor = self.construct(cls)
        self.starting[actor.place.options(concurrency_group="ping").remote()] = (actor, time.monotonic())

    def retire(self, actor: Any) -> None:
        """Kill an actor on a barred node and start one elsewhere."""
        with contextlib.suppress(self.ray.exceptions.RayError):
            self.ray.kill(actor)
        self.start_actor()

    def replace(self, actor: Any) -> None:
        """Kill a failed or lost actor and start another under the same rule."""
        self.ray.kill(actor)
        self.start_actor()

    def release(self, actor: Any) -> None:
        """An actor free for the next episode: idle, or retired when its node is barred."""
        if self.node_of[actor]["id"] in self.barred:
            self.retire(actor)
        else:
            self.idle.append(actor)

    # -- dispatch and collect ------------------------------------------------------------------
    def dispatch(self) -> None:
        """Give each idle actor the next episode."""
        import time
        while self.idle and self.queue:
            actor, task = self.idle.pop(), self.queue.pop(0)
            if self.work.prepare is not None:
                task = self.work.prepare(task)
            self.inflight[actor.run.remote(task)] = (actor, task)
            self.heard[actor] = time.monotonic()

    def collect(self, ref: Any, now: float) -> None:
        """One reference Ray reports ready: an actor placed, a ping answered, or an episode ended."""
        if ref in self.starting:
            self.placed(ref)
        elif ref in self.pings:
            actor = self.pings.pop(ref)
            if actor in self.heard:
                with contextlib.suppress(self.ray.exceptions.RayError):
                    self.ray.get(ref)
                    self.heard[actor] = now
        else:
            self.returned(ref)

    def placed(self, ref: Any) -> None:
        actor, _t = self.starting.pop(ref)
        try:
            self.node_of[actor] = self.ray.get(ref)
        except self.ray.exceptions.RayError as exc:   # its constructor failed, or its node went
            self.dropped.append(f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}")
            self.ray.kill(actor)
            return
        self.release(actor)   # placed before its node was barred: retired

    def returned(self, ref: Any) -> None:
        actor, task = self.inflight.pop(ref)
        try:
            outcome = self.ray.get(ref)
        except self.ray.exceptions.RayError as exc:
            self.finish(actor, _crash_outcome(self.work, task, f"Ray actor on {_where(self.node_of[actor])} failed: "
                                                               f"{_reason(exc)}"), task)
            self.replace(actor)
            return
        self.finish(actor, outcome, task)
        self.release(actor)

    def finish(self, actor: Any, outcome: Any, task: EpisodeTask) -> None:
        """An episode's outcome: landed in ``DIR``, its disk error counted against its node, reported."""
        self.heard.pop(actor, None)
        node = self.node_of[actor]
        if self.work.land is not None:
            try:
                outcome = self.work.land(outcome, task)
            except (SpatialScoutError, TypeError, AttributeError) as exc:   # what the worker sent is refused
                outcome = _crash_outcome(self.work, task, f"Ray actor on {_where(node)} sent files the driver "
                                                          f"refused: {exc}")
        code = None if outcome.ok else host_error(outcome.error)
        if code is not None:
            self.count_disk_error(node, code)
        try:
            self.on_outcome(outcome)
        except StopStarting:   # no episode starts after this one; the running ones end
            self.queue.clear()

    # -- node loss and refusal -----------------------------------------------------------------
    def count_disk_error(self, node: dict, code: str) -> None:
        """A node with :data:`HOST_ERROR_LIMIT` disk errors draws no more episodes; with every node
        barred, the episodes not started are stranded."""
        import sys
        import time
        errors = self.host_errors.setdefault(node["id"], [])
        errors.append(code)
        if len(errors) < HOST_ERROR_LIMIT or node["id"] in self.barred:
            return
        self.barred.add(node["id"])
        print(f"Ray {_where(node)}: {len(errors)} episodes failed with a disk error there "
              f"({', '.join(errors)}); it draws no more episodes", file=sys.stderr, flush=True)
        for a in [a for a in self.idle if self.node_of[a]["id"] in self.barred]:
            self.idle.remove(a)
            self.retire(a)
        alive = self.table.alive(time.monotonic(), NODE_POLL_S)
        if alive is not None and alive <= self.barred:   # nowhere left to run
            self.stranded.extend(self.queue)
            self.queue.clear()

    def drop_unplaced(self, now: float) -> None:
        """Drop the actors not placed, or not answering, within the timeout."""
        for ref, (actor, t0) in list(self.starting.items()):
            if now - t0 > self.timeout:
                del self.starting[ref]
                self.dropped.append(f"an actor was not placed or did not answer within {self.timeout:g} s")
                self.ray.kill(actor)

    def dead_nodes(self, now: float) -> set[str]:
        """Ids of the busy actors' nodes the node table no longer shows alive (read every
        :data:`NODE_POLL_S`); a head silent for :data:`HEAD_LOST_S` ends the run."""
        if not (now - self.nodes_read > NODE_POLL_S and (self.inflight or self.starting)):
            return set()
        self.nodes_read = now
        alive = self.table.alive(now, min(1.0, NODE_POLL_S / 2))
        if alive is None:
            if self.table.silent_since is not None and now - self.table.silent_since >= HEAD_LOST_S:
                raise self.lose_head(self.ray.get_runtime_context().gcs_address)
            return set()
        return {self.node_of[a]["id"] for a, _ in self.inflight.values()} - alive

    def watch_busy(self, now: float, dead: set[str]) -> None:
        """End the episodes of busy actors whose node is dead or that hang; ping the quiet ones."""
        for ref, (actor, task) in list(self.inflight.items()):
            node = self.node_of[actor]
            if node["id"] in dead or now - self.heard[actor] > self.timeout:   # its node is lost, or it hangs
                del self.inflight[ref]
                why = "its node is dead" if node["id"] in dead else f"silent for {self.timeout:g} s (its node lost?)"
                self.finish(actor, _crash_outcome(self.work, task, f"Ray actor on {_where(node)}: {why}; the episode "
                                                                   "did not finish"), task)
                self.replace(actor)
            elif actor not in self.pings.values() and now - self.heard[actor] > self.ping_every:
                self.pings[actor.place.options(concurrency_group="ping").remote()] = actor

    def lose_head(self, head: str) -> RayHeadLostError:
        """Record the running episodes as failed attempts; the one-line error that ends the run."""
        self.head_lost = True
        running = list(self.inflight.values())
        self.inflight.clear()
        for actor, task in running:
            self.finish(actor, _crash_outcome(self.work, task, f"Ray actor on {_where(self.node_of[actor])}: the "
                                                               f"cluster's head at {head} stopped answering; the "
                                                               "episode did not finish"), task)
        return RayHeadLostError(
            f"lost the Ray cluster's head at {head}: it answered nothing for {HEAD_LOST_S:g} s; the episodes "
            f"that were running are recorded as failed attempts, {len(self.queue)} not started. Restart the head "
            "(ray start --head) and rerun the same command to resume")
