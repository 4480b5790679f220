"""Evaluation at scale (docs/protocol.md sections 5-7): many episodes, resumable, in parallel.

An evaluation directory ``DIR`` holds one run directory per episode, written by
:func:`spatialscout_gym.eval.running.runner.run_episode`::

    DIR/evaluate.json                 the settings (agent, budgets, resolution, agent options such
                                      as the prompt style); a rerun must match
    DIR/scenes.json                   {scene dir: scene argument}
    DIR/planned.json                  {"episodes": ["<scene dir>/seed_<k>", ...]}: every episode
                                      planned (merged over reruns), so a missing one is reported
    DIR/<scene>/seed_<k>/             the episode's LATEST attempt, a complete run directory:
                                      result.json ("status": "ok" = completed, "failed" = a
                                      service or runtime failure; "attempt": its number, 1-based),
                                      trace.jsonl (map snapshots included), frames/,
                                      entity_library.json, and for model agents harness.json and
                                      prompt.txt; predictions.json and ground_truth.json only when
                                      completed
    DIR/<scene>/seed_<k>/attempts/NN/ every EARLIER attempt of that episode (NN = 01, 02, ... its
                                      attempt number, two digits), each a complete run directory
                                      as above with "status": "failed"; kept, never rewritten;
                                      or only failed.json: the note of an attempt that wrote no
                                      run directory (it could not start, its worker died)
    DIR/<scene>/seed_<k>.failed.json  an episode that failed before the runner could write its run
                                      directory (e.g. the scene cannot be built): error, traceback
    DIR/report.json, DIR/report.md    the pooled report (:mod:`spatialscout_gym.eval.pages.report`)

Attempts (paper Appendix A, "Attempt accounting"): a rerun redoes every episode whose latest
attempt failed. Before it runs, the failed attempt's files move from ``seed_<k>/`` into
``seed_<k>/attempts/NN/``, and a failure note ``seed_<k>.failed.json`` into
``seed_<k>/attempts/NN/failed.json`` (:func:`archive_failed_attempt`), and the new attempt is written to
``seed_<k>/`` with ``"attempt": NN + 1``; so ``seed_<k>/attempts/`` holds attempts ``1 .. A-1`` and
``seed_<k>/result.json`` attempt ``A``. A reader that wants one result per episode reads
``seed_<k>/result.json``; one that wants every attempt reads ``seed_<k>/attempts/*/result.json``
too. (Evaluations made before this layout kept only the failed attempt's ``result.json``, as
``seed_<k>.attempts/failed_NN.json``; the report still reads those.)

``<scene>`` is the scene argument with ``:`` and ``/`` made safe (a catalog id is kept as is;
``procedural:7`` becomes ``procedural_7``; a spec JSON path becomes its file stem).

Resume: every run directory appears by one atomic rename (temp dir + :func:`os.replace`), so a
directory ``seed_<k>/`` with ``result.json`` is a finished episode and is never redone; leftover
temp dirs from a killed run are removed (earlier attempts found in one are moved back first);
failed and missing episodes are (re)run. Counters
(tool calls, images, model calls, tokens, cost) live in each ``result.json`` and are re-read from
there, so they survive a resume.

Workers: :mod:`spatialscout_gym.eval.running.backends` runs the pending episodes in a process pool (each
worker keeps one renderer warm and switches it with ``set_scene``) or on a Ray cluster.
"""

from __future__ import annotations

import contextlib
import dataclasses
import fcntl
import hashlib
import json
import os
import re
import shutil
import stat
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Sequence

from spatialscout_gym.core.errors import ConfigError, SpatialScoutError
from spatialscout_gym.core.eval_records import load_evaluation, parse_evaluation
from spatialscout_gym.core.files import write_json_atomic, write_text_atomic
from spatialscout_gym.core.eval_records import FailureNote, ReportRecord
from spatialscout_gym.core.records import RunRecord, parse_run_record
from spatialscout_gym.core.run_files import (ATTEMPTS_DIR, ENTITY_LIBRARY_FILE, FRAME_HASHES_FILE, FRAMES_DIR,
                                             GROUND_TRUTH_FILE, PREDICTIONS_FILE, RESULT_FILE, TRACE_FILE,
                                             frame_file_name)
from spatialscout_gym.core.types import natural_number
from spatialscout_gym.eval.running.tasks import EpisodeTask, EvalSettings, Outcome, WorkerState
from spatialscout_gym.eval.layout import (PRICE_TABLE_FILE, SETTINGS_FILE, archive_failed_attempt, evaluation_file,
                                          read_json_object, read_run_record, record_planned, record_scene_args,
                                          seed_dir_name)

__all__ = ["is_finished", "EvalSettings", "EpisodeTask", "Outcome", "EvalSummary", "plan_tasks", "scene_dir_name",
           "expand_scenes", "evaluate", "execute_task", "WorkerState", "SETTINGS_FILE", "check_settings",
           "SettingsMismatchError", "settings_differences", "RUNTIME_LIMITS", "provider_of",
           "attach_request_limiter", "attach_effort_record",
           "attach_rate_limiter", "attach_spend_ledger",
           "evaluation_lock", "resume_problem"]

# the layout's names live in eval/layout.py (EvalDir reads what this module writes)
_LOCK_FILE = ".evaluate.lock"


@contextlib.contextmanager
def evaluation_lock(out: Path) -> Iterator[None]:
    """Hold ``DIR/.evaluate.lock`` (an exclusive ``flock`` on a file holding the holder's pid) while
    the block runs; the file is removed when it ends. The kernel lets go of a killed run's lock,
    so the next run takes a stale one over (whatever pid it names). A lock removed between this
    run's open and its lock (the holder finished) is opened again, so two runs never hold two
    files. :class:`SpatialScoutError` (one line) when another live run holds it or the path is
    not a file."""
    path = out / _LOCK_FILE
    while True:
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK, 0o644)
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                os.close(fd)
                raise IsADirectoryError(21, "not a regular file")
        except OSError as exc:   # a directory, a link, a FIFO in its place
            raise SpatialScoutError(f"{path}: is not a lock file ({exc.strerror}); it is not a running "
                                    "evaluation's: remove it and rerun") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
            os.close(fd)
            raise SpatialScoutError(f"another `spatialscout evaluate` (pid {holder or '?'}) is writing to {out}; "
                                    "wait for it or choose another --out") from None
        try:
            same = os.stat(path, follow_symlinks=False).st_ino == os.fstat(fd).st_ino
        except FileNotFoundError:
            same = False
        if same:
            break
        os.close(fd)
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"{os.getpid()}\n".encode("ascii"), 0)
    try:
        yield
    finally:
        try:
            os.unlink(path)   # still locked: a run that opens it now sees another inode and retries
        finally:
            os.close(fd)


STOP_AFTER_IDENTICAL_FAILURES = 3
"""A batch stops after this many consecutive episodes failed with the same model-service error (a
wrong key, a server gone): the rest would fail the same way after building their scenes."""


class BatchStoppedError(SpatialScoutError, RuntimeError):
    """:func:`evaluate` stopped early: consecutive identical model-service failures, or a failure
    that ends the run at once (:data:`_STOPS_THE_RUN`)."""


_COST_CAP = "CostCapReached"
"""The error type of an episode that ended because the evaluation's spend reached ``--max-cost-usd``."""


_STOPS_THE_RUN = frozenset({"EffortRefusedError", "SpendLedgerError", "RateLimitFileError"})
"""Episode errors that stop the whole evaluation at the first: the service refused a reasoning
effort the run requires (``--require-effort``), or the evaluation's spend ledger or rate-limit
window file cannot be read (no request is sent while the spend is unknown); every other episode
would fail the same way."""


def failure_signature(error: str | None) -> str | None:
    """The model-service failure ``error`` with its numbers (call, attempt, port) blanked, so that the
    same failure in two episodes compares equal; None for any other failure."""
    if not error or "ModelServiceError" not in error:
        return None
    return re.sub(r"[0-9]+", "#", error)


class SettingsMismatchError(SpatialScoutError, ValueError):
    """``DIR`` holds an evaluation with other settings (agent, budgets or resolution)."""


@dataclass
class EvalSummary:
    """What :func:`evaluate` did.

    Attributes
    ----------
    total : int
        Episodes planned (scenes x seeds).
    skipped : int
        Already finished before this call (resumed).
    ran : int
        Finished in this call.
    failed : list of Outcome
        Failed in this call (also written as ``<run dir>.failed.json``).
    redone : dict of str to str
        Episodes whose finished run directory failed the resume checks (:func:`resume_problem`):
        key -> why; archived as an attempt and run again.
    report : ReportRecord or None
        The report (``DIR/report.json``), None when no episode has finished.
    episode_wall_s : list of float
        Worker-side seconds of each episode run in this call (scene build, renderer warm-up on a
        worker's first episode, the episode, writing the run directory), in completion order.
    wall_s : float
        Seconds of this call, end to end.
    cost_capped : bool
        The spend reached ``--max-cost-usd``: no further episode was started; the running ones
        ran on until they finished or failed (``CostCapReached``) at their next request, and each is
        kept (a finished run, or a failed attempt with its trace), so every answered call is recorded.
    """

    total: int
    skipped: int
    ran: int
    failed: list[Outcome] = field(default_factory=list)
    redone: dict[str, str] = field(default_factory=dict)
    report: ReportRecord | None = None
    episode_wall_s: list[float] = field(default_factory=list)
    wall_s: float = 0.0
    cost_capped: bool = False


# ---------------------------------------------------------------------------------------------
# Planning
# ---------------------------------------------------------------------------------------------
def scene_dir_name(scene: str) -> str:
    """The directory name of a scene argument: catalog ids unchanged, ``procedural:7`` ->
    ``procedural_7``, ``path/to/spec.json`` -> ``spec``.

    >>> scene_dir_name("procedural:7"), scene_dir_name("a/b/kitchen_3.json")
    ('procedural_7', 'kitchen_3')
    """
    s = str(scene)
    if s.endswith(".json"):
        s = Path(s).stem
    s = re.sub(r"[^A-Za-z0-9_.-]+", "_", s).strip("._")
    if not s:
        raise ConfigError(f"scene argument {scene!r} gives an empty directory name")
    return s


def expand_scenes(scenes: Sequence[str]) -> list[str]:
    """Replace the word ``catalog`` by every catalog scene id (in catalog order) and a named split
    ``split:<name>[:<n>]`` by its scenes (:mod:`spatialscout_gym.scenes.splits`); keep the rest.

    Raises
    ------
    ValueError
        No scenes, or the same scene directory twice.
    """
    out: list[str] = []
    from spatialscout_gym.scenes.splits import expand_split
    for s in scenes:
        if s == "catalog":
            from spatialscout_gym.scenes.catalog import catalog_scene_ids
            out.extend(catalog_scene_ids())
        elif (named := expand_split(str(s))) is not None:
            out.extend(named)
        else:
            out.append(str(s))
    if not out:
        raise ConfigError("no scenes given: pass 'catalog' or scene ids (e.g. procedural:7)")
    names = [scene_dir_name(s) for s in out]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise ConfigError(f"scenes {dup} are given more than once (or map to the same directory)")
    return out


def plan_tasks(out_dir: str | os.PathLike, scenes: Sequence[str], seeds: int | Sequence[int] = 1) -> list[EpisodeTask]:
    """Every (scene, seed) episode of an evaluation, scene-major.

    Parameters
    ----------
    out_dir : path
        ``DIR``.
    scenes : sequence of str
        Scene arguments (``catalog`` expanded by :func:`expand_scenes` first).
    seeds : int or sequence of int
        ``K`` (seeds ``0 .. K-1``) or the explicit agent seeds.
    """
    seed_list = list(range(int(seeds))) if isinstance(seeds, int) else [int(s) for s in seeds]
    if not seed_list:
        raise ConfigError(f"need at least one seed, got {seeds!r}")
    root = Path(out_dir).resolve()
    return [EpisodeTask(s, k, str(root / scene_dir_name(s) / seed_dir_name(k))) for s in expand_scenes(scenes)
            for k in seed_list]


def is_finished(task: EpisodeTask) -> bool:
    """True when the task's run directory holds a ``result.json`` (it appeared by one rename)
    whose ``status`` is not ``"failed"`` (the runner writes failed episodes too; they are redone)."""
    result = read_run_record(Path(task.run_dir))
    return result is not None and result.status != "failed"


_FINISHED_FILES = (RESULT_FILE, TRACE_FILE, PREDICTIONS_FILE, GROUND_TRUTH_FILE, ENTITY_LIBRARY_FILE,
                   FRAME_HASHES_FILE)
"""The files every completed run directory holds (the runner writes them together)."""


def resume_problem(task: EpisodeTask, settings: EvalSettings, acting: dict[str, object] | None = None) -> str | None:
    """Why a finished episode cannot be kept when an evaluation resumes, or None.

    The checks ``verify`` makes of a run's records without re-running it: every file a completed
    run writes is there (each frame ``frames/sha256.json`` names included), and ``result.json``
    records this evaluation's agent, V, resolution, budget and the task's seed, and an NBV episode's
    ``nbv`` block its mapper (an episode recorded before the mapper was is redone) and how the
    policy acts now (``acting``: :func:`~spatialscout_gym.baselines.registry.agent_acting_settings`
    of the agent, read here when not given). A run directory copied in from another evaluation, or
    one a file of which was lost, is redone."""
    d = Path(task.run_dir)
    missing = [name for name in _FINISHED_FILES if not (d / name).is_file()]
    if missing:
        return f"{', '.join(missing)} missing"
    try:
        result = read_run_record(d)
        frames = read_json_object(d / FRAME_HASHES_FILE).get("rgb_sha256")
    except SpatialScoutError as exc:
        return str(exc)
    if not isinstance(frames, dict):
        return f"{FRAME_HASHES_FILE} names no frames"
    lost = [k for k in frames if natural_number(k) is None or not (d / FRAMES_DIR / frame_file_name(int(k))).is_file()]
    if lost:
        return f"{FRAMES_DIR}/{frame_file_name(int(lost[0])) if natural_number(lost[0]) is not None else lost[0]} missing"
    if result is None:
        return f"{RESULT_FILE} missing"
    model = result.model
    want: list[tuple[str, object, object]] = [
        ("agent", result.agent, settings.agent), ("image_budget", result.image_budget, settings.image_budget),
        ("resolution", result.resolution, settings.resolution), ("seed", result.seed, task.seed)]
    if model is None:
        want.append(("tool_call_budget", result.tool_call_budget, settings.tool_call_budget))
    elif settings.tool_call_budget is not None:   # B of a model agent: its model-call budget
        want.append(("model.model_call_budget", model.model_call_budget, settings.tool_call_budget))
    for name, got, expected in want:
        if got != expected:
            return f"{RESULT_FILE} records {name} {got!r}, this evaluation {expected!r}"
    if result.nbv is not None:   # a policy that acts otherwise now (a scan guard turned on) is another agent
        if result.nbv.mapper is None:   # one evaluation never mixes episodes with and without the mapper recorded
            return f"{RESULT_FILE} records no nbv.mapper (written before the mapper was recorded)"
        if acting is None:
            from spatialscout_gym.baselines.registry import agent_acting_settings
            acting = agent_acting_settings(settings.agent)
        for name, expected in acting.items():
            got = getattr(result.nbv, name, None)
            if got != expected:
                return f"{RESULT_FILE} records nbv.{name} {got!r}, this evaluation's agent {expected!r}"
    return None


def _remove_stale_temp_dirs(tasks: Iterable[EpisodeTask]) -> int:
    """Delete ``.seed_<k>.*.tmp`` directories a killed run left next to the run directories; an
    ``attempts/`` folder inside one (the run was killed while replacing ``seed_<k>/``) moves back
    to ``seed_<k>/attempts`` first, so no earlier attempt is lost."""
    removed = 0
    for parent in {Path(t.run_dir).parent for t in tasks}:
        if not parent.is_dir():
            continue
        for p in parent.glob(".seed_*.tmp"):
            kept = p / ATTEMPTS_DIR
            run_dir = parent / p.name[1:].split(".", 1)[0]
            if kept.is_dir() and not (run_dir / ATTEMPTS_DIR).exists():
                run_dir.mkdir(exist_ok=True)
                os.replace(kept, run_dir / ATTEMPTS_DIR)
            shutil.rmtree(p, ignore_errors=True)
            removed += 1
    return removed


def keep_price_table(out: Path, settings: EvalSettings) -> EvalSettings:
    """``settings`` with its price table copied into the evaluation (``DIR/price_table.json``, the
    bytes whose SHA-256 was recorded) and named by that relative name, so that ``verify`` reads
    the copy wherever it runs. An evaluation that already records the same table keeps its name; a
    table given inline (a dict, through the API) is written there as JSON and hashed the same way."""
    opts = settings.agent_options
    table, digest = opts.get("price_table"), opts.get("price_table_sha256")
    if isinstance(table, dict):       # a table given inline (the API): copied like a file's
        text = json.dumps(table, indent=2, sort_keys=True) + "\n"
        write_text_atomic(out / PRICE_TABLE_FILE, text)
        settings = dataclasses.replace(settings, agent_options={
            **opts, "price_table": PRICE_TABLE_FILE,
            "price_table_sha256": hashlib.sha256(text.encode("utf-8")).hexdigest()})
        return _priced(settings, PRICE_TABLE_FILE, out / PRICE_TABLE_FILE)
    if not isinstance(table, str) or not digest:
        return settings
    old = load_evaluation(out)
    if old is not None and old.option("price_table_sha256") == digest and old.option("price_table") is not None:
        table = old.option("price_table")
        return _priced(settings, table, evaluation_file(out, table))
    dest = out / PRICE_TABLE_FILE
    src = Path(table)
    if not (dest.exists() and src.exists() and src.resolve() == dest.resolve()):
        data = src.read_bytes()
        if hashlib.sha256(data).hexdigest() != digest:
            raise ConfigError(f"price table {table}: changed since it was read (its SHA-256 differs); rerun")
        write_text_atomic(dest, data.decode("utf-8"))     # a price table is UTF-8 JSON (checked when read)
    return _priced(settings, PRICE_TABLE_FILE, dest)


def _priced(settings: EvalSettings, recorded: str, path: Path) -> EvalSettings:
    """``settings`` recording the price table as ``recorded`` and handing its content to the workers."""
    from spatialscout_gym.baselines.vlm import load_price_table
    return dataclasses.replace(settings, agent_options={**settings.agent_options, "price_table": recorded},
                               runtime_options={**settings.runtime_options, "price_table": load_price_table(path)})


RUNTIME_LIMITS = frozenset({"max_cost_usd", "requests_per_minute", "tokens_per_minute", "rate_limit_window_s"})
"""Agent options that limit when and how much is sent, not what an episode is: the spending cap and
the per-minute limits. A resume may change them (a higher ``--max-cost-usd`` goes on where the cap
stopped); ``evaluate.json`` records the ones the latest run used."""

SETTING_FLAGS = {
    "agent": "--agent", "image_budget": "--image-budget", "tool_call_budget": "--call-budget",
    "resolution": "--resolution", "agent_options.model_call_budget": "--call-budget",
    "agent_options.prompt_style": "--prompt", "agent_options.reasoning_effort": "--reasoning-effort",
    "agent_options.reasoning_effort_source": "--reasoning-effort", "agent_options.mode": "--mode",
    "agent_options.image_history": "--image-history", "agent_options.image_max_side": "--image-max-side",
    "agent_options.max_tokens": "--max-tokens", "agent_options.passive_views": "--passive-views",
    "agent_options.price_table": "--price-table", "agent_options.price_table_sha256": "--price-table",
    "agent_options.request_cache": "--request-cache", "agent_options.walls": "--nbv-env",
    "agent_options.require_effort": "--require-effort", "agent_options.timeout_s": "--timeout",
    "agent_options.attempts": "--attempts", "agent_options.backoff_s": "--backoff",
    "agent_options.rate_limit_wait_s": "--rate-limit-wait"}
"""The ``evaluate`` flag that sets each recorded setting (named by a refused resume)."""


def settings_differences(old: dict, new: dict) -> list[tuple[str, Any, Any]]:
    """``(setting, there, now)`` for each protocol setting of two ``evaluate.json`` dicts that
    differs, an agent option named ``agent_options.<key>``; the :data:`RUNTIME_LIMITS` are left out."""
    out: list[tuple[str, Any, Any]] = []
    for k in sorted((set(old) | set(new)) - {"agent_options"}):
        if old.get(k) != new.get(k):
            out.append((k, old.get(k), new.get(k)))
    a, b = old.get("agent_options"), new.get("agent_options")
    a, b = (a if isinstance(a, dict) else {}), (b if isinstance(b, dict) else {})
    for k in sorted((set(a) | set(b)) - RUNTIME_LIMITS):
        if a.get(k) != b.get(k):
            out.append((f"agent_options.{k}", a.get(k), b.get(k)))
    return out


def check_settings(out: Path, settings: EvalSettings) -> None:
    """Record ``settings`` in ``DIR/evaluate.json``, or refuse (one line naming each setting that
    differs, and only those, with the flag that sets it) when the directory holds an evaluation made
    with other settings. The :data:`RUNTIME_LIMITS` are not compared: a resume records its own."""
    path = out / SETTINGS_FILE
    new = parse_evaluation(settings.to_dict(), str(path)).to_dict()   # what is written reads back as its record
    recorded = load_evaluation(out)
    if recorded is not None:
        old = recorded.to_dict()
        diff = settings_differences(old, new)
        if diff:
            shown = "; ".join(f"{k}: {a!r} there, {b!r} now" for k, a, b in diff)
            flags = sorted({SETTING_FLAGS.get(k, k.rsplit(".", 1)[-1]) for k, _, _ in diff})
            raise SettingsMismatchError(f"{out} holds an evaluation with other settings ({shown}); rerun with "
                                        f"the same {'/'.join(flags)} to resume it, or choose another --out")
        if old == new:
            return
    write_json_atomic(path, new)


# ---------------------------------------------------------------------------------------------
# Worker side
# ---------------------------------------------------------------------------------------------
def provider_of(agent_name: str) -> str:
    """The provider whose requests ``--max-concurrency`` caps: the agent-name prefix before ``:``
    (``openai:gpt-x`` -> ``openai``), else the whole name."""
    return agent_name.split(":", 1)[0]


def attach_request_limiter(agent: Any, limiter: Any) -> None:
    """Give ``agent`` a cross-process request limiter if it makes model requests
    (:class:`~spatialscout_gym.baselines.base.RequestingAgent`: it enters ``request_limiter``
    around each request). Other agents make no requests and are left alone."""
    from spatialscout_gym.baselines.base import RequestingAgent
    if limiter is not None and isinstance(agent, RequestingAgent):
        agent.request_limiter = limiter


def attach_effort_record(agent: Any, eval_dir: Path) -> None:
    """Give a model agent's provider the evaluation's shared reasoning-effort record
    (``DIR/reasoning_effort.json``, :mod:`spatialscout_gym.conversation.effort_record`), so that a
    parameter the service refuses is sent once in the whole evaluation, whatever the workers.
    Agents without a provider that takes one are left alone."""
    from spatialscout_gym.conversation.effort_record import EFFORT_RECORD_FILE, EffortRecord
    provider = getattr(agent, "provider", None)
    if provider is not None and hasattr(provider, "effort_record"):
        provider.effort_record = EffortRecord(eval_dir / EFFORT_RECORD_FILE)


def attach_rate_limiter(agent: Any, eval_dir: Path) -> None:
    """Make a model agent's requests- and tokens-per-minute limiter (if it has one) share its
    window with every worker of the evaluation, through ``DIR/rate_limit.json``
    (:mod:`spatialscout_gym.conversation.rate_limits`: a file under ``flock``)."""
    from spatialscout_gym.conversation.rate_limits import RATE_LIMIT_FILE
    limiter = getattr(getattr(agent, "provider", None), "rate_limiter", None)
    if limiter is not None:
        limiter.path = eval_dir / RATE_LIMIT_FILE


def attach_spend_ledger(agent: Any, eval_dir: Path) -> None:
    """Make a model agent's spend ledger (``--max-cost-usd``) count the whole evaluation, every
    worker and earlier run, through ``DIR/spend.json`` (:mod:`spatialscout_gym.conversation.spend`)."""
    from spatialscout_gym.conversation.spend import SPEND_FILE
    ledger = getattr(agent, "spend_ledger", None)
    if ledger is not None:
        ledger.path = eval_dir / SPEND_FILE


def execute_task(task: EpisodeTask, state: WorkerState) -> Outcome:
    """Run one episode into ``task.run_dir`` (atomically); never raises for an episode failure.

    A failure writes ``<run dir>.failed.json`` (error and traceback) and returns ``ok=False``; a
    success removes a failure file left by an earlier attempt. ``KeyboardInterrupt`` propagates.
    """
    import time

    from spatialscout_gym.baselines.registry import make_agent
    from spatialscout_gym.eval.running.runner import resolve_scene, run_episode

    t0 = time.perf_counter()
    s = state.settings
    try:
        # earlier attempts (a failed run directory, a failure note) are archived before anything can
        # fail again, so that every attempt is kept; a driver that archived them gives the number
        attempt = archive_failed_attempt(Path(task.run_dir)) if task.attempt is None else task.attempt
        spec = resolve_scene(task.scene)
        # runtime options win: the price table travels as its content (a Ray node's scratch
        # directory holds no copy of it)
        agent = make_agent(s.agent, **{**s.agent_options, **s.runtime_options})
        attach_request_limiter(agent, state.limiter)
        attach_effort_record(agent, Path(task.run_dir).parent.parent)
        attach_rate_limiter(agent, Path(task.run_dir).parent.parent)
        attach_spend_ledger(agent, Path(task.run_dir).parent.parent)
        renderer = state.renderer_for(spec)
        result = run_episode(agent, spec, task.run_dir, seed=task.seed, image_budget=s.image_budget,
                             tool_call_budget=s.tool_call_budget, resolution=s.resolution, renderer=renderer,
                             overwrite=True, attempt=attempt, keep_attempts=True, node=state.node)
        record = parse_run_record(result)
        if record.status == "failed":   # the agent raised; the run dir records it
            task.failed_file.unlink(missing_ok=True)
            from spatialscout_gym.core.redact import redact
            return Outcome(task, False, result=result, error=redact(record.error),
                           wall_s=time.perf_counter() - t0, error_type=record.error_type)
    except Exception as exc:  # an episode failure is data, listed apart
        from spatialscout_gym.core.redact import redact
        error = redact(f"{type(exc).__name__}: {exc}")
        write_json_atomic(task.failed_file, FailureNote(task.scene, task.seed, error, type(exc).__name__,
                                                        redact(traceback.format_exc())).to_json())
        if isinstance(exc, RuntimeError) and state.renderer is not None:
            state.close()   # a renderer in an unknown state is rebuilt for the next episode
        return Outcome(task, False, error=error, wall_s=time.perf_counter() - t0, error_type=type(exc).__name__)
    task.failed_file.unlink(missing_ok=True)
    return Outcome(task, True, result=result, wall_s=time.perf_counter() - t0)


def crashed_outcome(task: EpisodeTask, error: str) -> Outcome:
    """The outcome of ``task`` when its worker died (``error`` says how)."""
    return Outcome(task, False, error=error)


# ---------------------------------------------------------------------------------------------
# Driver
# ---------------------------------------------------------------------------------------------
def _made(out: Path) -> Path:
    out.mkdir(parents=True, exist_ok=True)
    return out


def _pooled_mean_iou(results: Iterable[RunRecord]) -> float | None:
    n = q = 0.0
    for r in results:
        if r.num_targets and r.all is not None:
            n += r.num_targets
            q += r.all.mean_iou * r.num_targets
    return q / n if n else None


def evaluate(out_dir: str | os.PathLike, settings: EvalSettings, scenes: Sequence[str], *,
             seeds: int | Sequence[int] = 1, workers: int = 1, backend: str = "local",
             max_concurrency: int | None = None, ray_address: str | None = None,
             ray_timeout_s: float | None = None, progress: bool = True, renderer_factory: Callable[..., Any] | None = None,
             write_report: bool = True,
             stop_after_failures: int | None = STOP_AFTER_IDENTICAL_FAILURES) -> EvalSummary:
    """Run every (scene, seed) episode not yet finished in ``out_dir``, then write the report.

    Parameters
    ----------
    out_dir : path
        ``DIR`` (created). A rerun with the same settings resumes; other settings raise
        :class:`SettingsMismatchError`.
    settings : EvalSettings
    scenes : sequence of str
        Catalog ids, ``procedural:<seed>``, spec JSON paths, or ``"catalog"`` (all 80).
    seeds : int or sequence of int
        ``K`` repeats per scene (agent seeds ``0..K-1``) or explicit seeds.
    workers : int
        Parallel worker processes (local) or Ray actors (ray).
    backend : {"local", "ray"}
    max_concurrency : int, optional
        Cap on simultaneous model requests of this agent's provider across all workers.
    ray_address : str, optional
        ``ray.init(address=...)``; None starts a local Ray instance. A cluster that cannot be
        joined raises a one-line ``ConfigError`` before anything is written.
    ray_timeout_s : float, optional
        Seconds a Ray actor may take to start, and may stay silent during an episode before its
        episode counts as a failed attempt (None: ``backends.RAY_TIMEOUT_S``).
    progress : bool
        Show a tqdm bar (episodes done, running object-micro all-target mean IoU, failures).
    renderer_factory : callable, optional
        ``factory(spec, width, height) -> Renderer`` for every worker (must be picklable).
    write_report : bool
        Write ``DIR/report.json`` and ``DIR/report.md`` at the end.
    stop_after_failures : int or None
        Stop after this many consecutive episodes failed with the same model-service error
        (:func:`failure_signature`); None never stops. Finished episodes are kept; a rerun resumes.

    Raises
    ------
    BatchStoppedError
        ``stop_after_failures`` identical failures in a row (no report is written).

    Returns
    -------
    EvalSummary
    """
    import time

    from spatialscout_gym.eval.running.backends import RAY_TIMEOUT_S, StopStarting, Work, make_backend
    from spatialscout_gym.eval.running.shipping import land_outcome, prepare_task, ship_task

    t_start = time.perf_counter()

    if workers < 1:
        raise ConfigError(f"workers must be >= 1, got {workers}")
    if max_concurrency is not None and max_concurrency < 1:
        raise ConfigError(f"max_concurrency must be >= 1, got {max_concurrency}")
    out = Path(out_dir).resolve()
    tasks = plan_tasks(out, scenes, seeds)
    runner = make_backend(backend, workers=workers, ray_address=ray_address,
                          ray_timeout_s=RAY_TIMEOUT_S if ray_timeout_s is None else ray_timeout_s)
    # the backend reaches its machines first: a cluster that cannot be joined leaves no DIR behind
    with runner.session(), evaluation_lock(_made(out)):
        settings = keep_price_table(out, settings)
        check_settings(out, settings)
        record_scene_args(out, {Path(t.run_dir).parent.name: t.scene for t in tasks})
        record_planned(out, [t.key for t in tasks])
        _remove_stale_temp_dirs(tasks)
        from spatialscout_gym.baselines.registry import agent_acting_settings
        acting = agent_acting_settings(settings.agent)      # the policy's files, read once for every task
        redone = {t.key: why for t in tasks if is_finished(t) and (why := resume_problem(t, settings, acting))}
        for t in tasks:   # a finished run that fails the checks is kept as an attempt and redone
            if t.key in redone:
                archive_failed_attempt(Path(t.run_dir), redo=True)
        done = [t for t in tasks if is_finished(t)]
        pending = [t for t in tasks if not is_finished(t)]
        # a finished task has its result.json; an ok outcome carries its result
        finished_results = [r for t in done if (r := read_run_record(Path(t.run_dir))) is not None]
        summary = EvalSummary(total=len(tasks), skipped=len(done), ran=0, redone=redone)

        bar = None
        if progress:
            from tqdm import tqdm
            bar = tqdm(total=len(tasks), initial=len(done), unit="ep", desc=f"evaluate {settings.agent}",
                       dynamic_ncols=True)

        streak: list[str] = []   # signatures of the consecutive identical service failures

        def on_outcome(o: Outcome) -> None:
            if not o.ok and o.error_type == _COST_CAP:   # recorded as failed; stop starting episodes
                summary.failed.append(o)
                summary.cost_capped = True
                raise StopStarting()   # the running episodes end (each paid for) and are kept
            if not o.ok and o.error_type in _STOPS_THE_RUN:
                from spatialscout_gym.core.redact import redact
                raise BatchStoppedError(f"{redact(o.error)[:1000]} ({o.task.key}; finished episodes are kept)")
            sig = None if o.ok else failure_signature(o.error)
            if sig is None or (streak and streak[-1] != sig):
                streak.clear()
            if sig is not None:
                streak.append(sig)
            summary.episode_wall_s.append(o.wall_s)
            if o.ok:
                summary.ran += 1
                if o.result is not None:
                    finished_results.append(parse_run_record(o.result))
            else:
                summary.failed.append(o)
                if bar is not None:
                    from spatialscout_gym.core.redact import redact
                    bar.write(f"failed {o.task.key}: {redact(o.error)}")
            if bar is not None:
                m = _pooled_mean_iou(finished_results)
                bar.set_postfix_str(f"mIoU(all) {'-' if m is None else f'{100 * m:.2f}%'} "
                                    f"failed {len(summary.failed)}", refresh=False)
                bar.update(1)
            if stop_after_failures is not None and len(streak) >= stop_after_failures:
                from spatialscout_gym.core.redact import redact
                raise BatchStoppedError(
                    f"stopped after {len(streak)} consecutive episodes failed the same way "
                    f"({redact(o.error)[:300]}); finished episodes are kept: fix the cause (--base-url, "
                    f"the key, the model) and rerun the same command to resume")

        try:
            if pending:
                work = Work(WorkerState, execute_task, crashed_outcome, prepare_task, ship_task, land_outcome)
                runner.run(pending, settings, on_outcome, work=work,
                           max_concurrency=max_concurrency, renderer_factory=renderer_factory)
        finally:
            if bar is not None:
                bar.close()

        if write_report and (done or summary.ran or summary.failed):   # all failed: a report of the failures
            from spatialscout_gym.eval.pages.report import write_report as _write
            summary.report = _write(out)
    summary.wall_s = time.perf_counter() - t_start
    return summary
