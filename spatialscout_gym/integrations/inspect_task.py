"""SpatialScout as an Inspect AI task: ``inspect eval spatialscout_gym/spatialscout --model ...``
(docs/inspect.md).

One sample is one episode, a (scene, seed) cell of ``spatialscout evaluate``. The episode runs
in-process through the same code as ``evaluate``: the scene's registered env (renderers shared per
resolution), :class:`~spatialscout_gym.baselines.vlm.VLMAgent`'s
:class:`~spatialscout_gym.wrappers.tool_call.ToolCallWrapper` (the prompt as the first user
message, B model calls, reminders at 10 and 3 calls left, the three endings of docs/protocol.md
section 5) and :func:`~spatialscout_gym.envs.run_dir.write_run`. Only the model call differs: the
conversation is handed to Inspect's active model (``--model``) as Inspect chat messages, with the
ten tools as Inspect :class:`~inspect_ai.tool.ToolInfo` and frames as
:class:`~inspect_ai.model.ContentImage`; the reply comes back into the wrapper, which runs its tool
calls on the episode. So each sample also writes a standard run directory under ``out`` (with
``evaluate.json`` and ``scenes.json`` beside it), which ``report``, ``compare``, ``leaderboard``,
``view`` and ``verify`` read like an ``evaluate`` run; its records name the harness
(``result.json`` ``"harness"``).

The scorer re-scores each run directory's ``predictions.json`` against its ``ground_truth.json``
with :mod:`spatialscout_gym.core.scoring` (groupwise IoU, docs/protocol.md section 6); the metrics
pool the per-target results with :func:`~spatialscout_gym.core.scoring.aggregate`, object-micro and
scene-macro, the paper's Table-3 columns.

This module imports ``inspect_ai`` (the ``inspect`` extra); ``import spatialscout_gym`` never
imports it.
"""

from __future__ import annotations

import asyncio
import json
import math
import re
import time
from pathlib import Path
from typing import Any, Literal, Sequence, cast, get_args

import numpy as np

try:   # the inspect extra: without it, one line that names the extra instead of a bare ModuleNotFoundError
    import inspect_ai  # noqa: F401
except ModuleNotFoundError as exc:
    from spatialscout_gym.core.errors import MissingExtraError, install_command
    raise MissingExtraError(f"the SpatialScout Inspect task needs the 'inspect' extra ({exc.name} is not "
                            f"installed): {install_command('inspect')}") from None
from inspect_ai import Task, task
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.model import (ChatMessage, ChatMessageAssistant, ChatMessageSystem, ChatMessageTool,
                              ChatMessageUser, Content, ContentImage, ContentText, GenerateConfig, Model,
                              ModelOutput,
                              get_model)
from inspect_ai.scorer import Metric, Score, Scorer, Target, metric, scorer
from inspect_ai.solver import Generate, Solver, TaskState, solver
from inspect_ai.tool import ToolCall as InspectToolCall
from inspect_ai.tool import ToolInfo

from spatialscout_gym.baselines.vlm import VLMAgent
from spatialscout_gym.core.errors import ConfigError
from spatialscout_gym.core.files import load_ground_truth, load_predictions
from spatialscout_gym.core.records import parse_run_record
from spatialscout_gym.core.scoring import THRESHOLD_KEYS, SceneScore, aggregate, score_scene
from spatialscout_gym.core.types import natural_number
from spatialscout_gym.conversation.codecs.common import data_uri
from spatialscout_gym.conversation.messages import Message, ModelReply, Part, ToolCall
from spatialscout_gym.conversation.images import MAX_SIDE_PX, DeliveredImage
from spatialscout_gym.conversation.providers import DEFAULT_REASONING_EFFORT
from spatialscout_gym.conversation.prompt import DEFAULT_PROMPT_STYLE, check_prompt_style
from spatialscout_gym.conversation.schemas import tool_schemas
from spatialscout_gym.eval.layout import split_episode_key

__all__ = ["spatialscout", "spatialscout_agent", "groupwise_iou", "object_micro", "scene_macro",
           "tool_infos", "to_chat_messages", "to_model_reply", "HARNESS_NAME", "DEFAULT_OUT"]

HARNESS_NAME = "inspect_ai"
"""``result.json`` ``"harness"`` ``"name"`` of runs made here (``evaluate``'s runs carry none)."""
DEFAULT_OUT = "logs/spatialscout"
"""Where run directories go without ``-T out=DIR``: ``<this>/<model>`` (beside Inspect's ``logs/``)."""

_STOP_REASONS = {"max_tokens": "max_tokens", "model_length": "model_context_window_exceeded"}
"""Inspect's stop reasons that mean "cut off at an output limit", in the names
:data:`~spatialscout_gym.baselines.vlm.TRUNCATED_STOP_REASONS` knows (the attempt then fails)."""


def _inspect_version() -> str:
    from importlib.metadata import version
    return version("inspect_ai")


# ---- task options ----------------------------------------------------------------------------------
def _as_list(value: Any) -> list[str]:
    """A ``-T`` value as a list: ``a,b`` or ``a b`` (one string) or a list."""
    if isinstance(value, (list, tuple)):
        return [str(v).strip() for v in value if str(v).strip()]
    return [s for s in re.split(r"[,\s]+", str(value)) if s]


def _seeds(seeds: Any, repeats: Any) -> list[int]:
    """The seeds to run, as ``evaluate`` reads ``--seeds`` (seed ids ``0,1,2`` or a range ``A:B``)
    and ``--repeats N`` (seeds 0..N-1); seed 0 when neither is given."""
    from spatialscout_gym.cli.errors import CliError
    from spatialscout_gym.cli.evaluate import parse_seeds
    if repeats is not None:
        if seeds is not None:
            raise ConfigError("-T seeds and -T repeats choose the same thing; give one of them")
        if isinstance(repeats, bool) or not natural_number(str(repeats)) or int(repeats) < 1:
            raise ConfigError(f"-T repeats must be an integer >= 1 (seeds 0..N-1 per scene), got {repeats!r}")
        return list(range(int(repeats)))
    if seeds is None:
        return [0]
    tokens = [str(seeds)] if isinstance(seeds, int) and not isinstance(seeds, bool) else _as_list(seeds)
    try:
        return parse_seeds(tokens)
    except CliError as exc:
        raise ConfigError(re.sub(r"--(seeds|repeats) ", r"-T \1=", str(exc)).replace("--seeds", "-T seeds")) from None


NO_EFFORT = ("off", "", "false", "none")
"""``-T reasoning_effort`` values that send no effort (as ``--no-reasoning-effort``). ``-T`` values
are read as YAML, so ``off`` arrives as False; ``none`` and False mean the same."""
InspectEffort = Literal["minimal", "low", "medium", "high", "xhigh", "max"]
INSPECT_EFFORTS: tuple[InspectEffort, ...] = get_args(InspectEffort)
"""The efforts Inspect's ``GenerateConfig.reasoning_effort`` accepts (it maps them per provider)."""


def _effort_argument(value: Any) -> str | None:
    """``-T reasoning_effort`` as the effort to send, None for none: YAML gives ``off`` and ``no`` as
    False, ``null`` as None; the words ``off``, ``none`` and ``false`` mean none too."""
    if value is None or value is False or str(value).strip().lower() in NO_EFFORT:
        return None
    return str(value).strip()


@task
def spatialscout(scenes: str | list[str] = "catalog", seeds: int | str | list[int] | None = None,
                 repeats: int | None = None,
                 catalog: str | None = None, image_budget: int = 100, call_budget: int = 100,
                 resolution: int = 512, prompt: str = DEFAULT_PROMPT_STYLE,
                 reasoning_effort: str | None = DEFAULT_REASONING_EFFORT, image_max_side: int = MAX_SIDE_PX,
                 out: str | None = None) -> Task:
    """The SpatialScout benchmark: catalog scenes x seeds, one episode per sample.

    The options mean what ``spatialscout evaluate``'s flags mean (``-T NAME=VALUE``):

    scenes : catalog ids, ``procedural:<seed>``, spec JSON paths or ``catalog`` (all scenes),
        comma-separated (``--scenes``).
    seeds : seed ids ``0,1,2`` or a range ``A:B`` (``--seeds``); default seed 0.
    repeats : N, seeds 0..N-1 (``--repeats``).
    catalog : catalog version of the catalog ids, e.g. ``3.1`` (``--catalog``).
    image_budget : V (``--image-budget``). call_budget : B, model calls (``--call-budget``).
    resolution : render grid, pixels (``--resolution``).
    prompt : ``appendix-a`` (default), ``content-list``, ``detailed`` or ``legacy`` (``--prompt``).
    reasoning_effort : sent through Inspect's ``reasoning_effort`` (``--reasoning-effort``); the
        paper's ``xhigh`` by default; ``off`` (or ``none``, ``false``) sends none
        (``--no-reasoning-effort``). A model that refuses it gets it once per Inspect run: the
        request is sent again without it, and no later request of the run carries it.
    image_max_side : longest side of a delivered image (``--image-max-side``).
    out : the directory that receives the run directories (``--out``); default
        ``logs/spatialscout/<model>``.
    """
    import os

    from spatialscout_gym.core.limits import image_budget_problem, resolution_problem
    from spatialscout_gym.eval.running.evaluate import expand_scenes, scene_dir_name
    from spatialscout_gym.eval.layout import seed_dir_name
    from spatialscout_gym.scenes.catalog import CATALOG_ENV, default_catalog_version, scene_name_problem

    if catalog is not None:   # as evaluate --catalog: the default version of this process
        os.environ[CATALOG_ENV] = str(catalog)
        default_catalog_version()   # an unknown version fails here, in one line
    problem = (image_budget_problem(int(image_budget), "-T image_budget")
               or resolution_problem(int(resolution), "-T resolution"))
    if problem:
        raise ConfigError(problem)
    if int(call_budget) < 1:
        raise ConfigError(f"-T call_budget (B, model calls) must be >= 1, got {call_budget}")
    check_prompt_style(str(prompt))
    reasoning_effort = _effort_argument(reasoning_effort)
    if reasoning_effort is not None and str(reasoning_effort) not in INSPECT_EFFORTS:
        raise ConfigError(f"-T reasoning_effort must be one of {', '.join(INSPECT_EFFORTS)} or off, "
                          f"got {reasoning_effort!r}")
    if not 16 <= int(image_max_side) <= 4096:
        raise ConfigError(f"-T image_max_side must be between 16 and 4096 pixels, got {image_max_side}")
    names = expand_scenes(_as_list(scenes))
    problems = [p for p in map(scene_name_problem, names) if p]
    if problems:
        raise ConfigError(problems[0] + (f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""))
    seed_list = _seeds(seeds, repeats)
    samples = [Sample(id=f"{scene_dir_name(s)}/{seed_dir_name(k)}",
                      input=f"SpatialScout episode: scene {s}, seed {k}",
                      metadata={"scene": s, "seed": k}) for s in names for k in seed_list]
    return Task(dataset=MemoryDataset(samples, name="spatialscout"),
                solver=spatialscout_agent(image_budget=int(image_budget), call_budget=int(call_budget),
                                          resolution=int(resolution), prompt=str(prompt),
                                          reasoning_effort=reasoning_effort,
                                          image_max_side=int(image_max_side), out=out),
                scorer=groupwise_iou(),
                metadata={"benchmark": "SpatialScout", "catalog": catalog})


# ---- reasoning effort, once per run -----------------------------------------------------------------
class EffortFallback:
    """The Inspect run's answer about the reasoning effort (docs/protocol.md section 10.2), shared by
    every sample of one task: the first request with the effort is sent alone (an ``asyncio`` lock;
    the samples of one run share an event loop); if the service refuses it (HTTP 400 or 422 naming
    reasoning), that request is sent again without it and no later request of the run carries it.

    Attributes
    ----------
    effort : str or None
        The effort asked for (None: none sent).
    refused : str or None
        The service's words when it refused the effort (redacted); None otherwise.
    """

    def __init__(self, effort: str | None) -> None:
        self.effort = effort
        self.refused: str | None = None
        self._settled = effort is None
        self._lock: asyncio.Lock | None = None

    def config(self) -> GenerateConfig:
        """The generate options of the next request: the effort unless it was refused."""
        if not self.effort or self.refused:
            return GenerateConfig()
        # spatialscout() admits only INSPECT_EFFORTS
        return GenerateConfig(reasoning_effort=cast(InspectEffort, self.effort))

    async def generate(self, model: Model, messages: list[ChatMessage], tools: list[ToolInfo]) -> ModelOutput:
        """``model.generate`` with the run's effort; the first request of the run finds out whether
        the service takes it."""
        if self._settled:
            return await model.generate(messages, tools=tools, config=self.config())
        if self._lock is None:
            self._lock = asyncio.Lock()
        async with self._lock:
            if self._settled:
                return await model.generate(messages, tools=tools, config=self.config())
            try:
                output = await model.generate(messages, tools=tools, config=self.config())
            except Exception as exc:   # Inspect wraps the SDK's error; only a refusal of the effort is ours
                words = _effort_refusal(exc)
                if words is None:
                    raise
                self.refused, self._settled = words, True
                return await model.generate(messages, tools=tools, config=self.config())
            self._settled = True
            return output


def _effort_refusal(exc: BaseException) -> str | None:
    """The service's words when ``exc`` (or an exception it was raised from) is an HTTP 400/422
    naming the reasoning effort; None otherwise. Inspect's own message quotes the whole request,
    effort included, so only the service's error is read."""
    from spatialscout_gym.core.redact import redact
    seen: BaseException | None = exc
    while seen is not None:
        if getattr(seen, "status_code", None) in (400, 422) and not str(seen).lstrip().startswith("Request:"):
            text = f"{seen} {getattr(seen, 'body', '')}"
            if "reasoning" in text.lower():
                return redact(f"{type(seen).__name__}: {seen}")[:600]
        seen = seen.__cause__ or seen.__context__
    return None


# ---- the conversation in Inspect's form ------------------------------------------------------------
def tool_infos(names: Sequence[str] | None = None) -> list[ToolInfo]:
    """The ten tools (or ``names``) as Inspect tool definitions, from the one schema source.

    Inspect's JSON-Schema model has no ``minItems``/``maxItems``; those bounds are dropped from
    what a model is shown (the episode still refuses a wrong count, docs/inspect.md)."""
    return [ToolInfo.model_validate(t) for t in tool_schemas(names)]


def _parts(content: Sequence[Part]) -> list[Content]:
    return [ContentImage(image=data_uri(p)) if isinstance(p, DeliveredImage) else ContentText(text=p)
            for p in content]


def _arguments(raw: Any) -> dict:
    if isinstance(raw, dict):
        return raw
    try:
        val = json.loads(raw) if isinstance(raw, str) and raw.strip() else {}
    except ValueError:
        return {}
    return val if isinstance(val, dict) else {}


def to_chat_messages(messages: Sequence[Message]) -> list[ChatMessage]:
    """The wrapper's conversation as Inspect chat messages: text and frames (JPEG data URIs) in
    order; an assistant message keeps the model's own content (reasoning included) from Inspect."""
    out: list[ChatMessage] = []
    for m in messages:
        if m.role == "system":
            out.append(ChatMessageSystem(content=m.text))
        elif m.role == "user":
            out.append(ChatMessageUser(content=_parts(m.content)))
        elif m.role == "assistant":
            own = m.provider_content if isinstance(m.provider_content, ChatMessageAssistant) else None
            calls = [InspectToolCall(id=c.id, function=c.name if isinstance(c.name, str) else repr(c.name),
                                     arguments=_arguments(c.arguments)) for c in m.tool_calls]
            out.append(ChatMessageAssistant(content=own.content if own is not None else m.text,
                                            tool_calls=calls or None,
                                            model=own.model if own is not None else None))
        elif m.role == "tool":
            out.append(ChatMessageTool(content=_parts(m.content), tool_call_id=m.tool_call_id,
                                       function=m.tool_name))
        else:
            raise ValueError(f"unknown message role {m.role!r}; expected system, user, assistant or tool")
    return out


def to_model_reply(output: ModelOutput) -> ModelReply:
    """An Inspect model output as the wrapper's :class:`ModelReply`. Arguments arrive parsed by
    Inspect; a call Inspect could not parse keeps its parse error as (non-JSON) arguments text,
    so the wrapper refuses it as malformed."""
    msg = output.message
    calls = [ToolCall(c.id, c.function, c.parse_error if c.parse_error else dict(c.arguments))
             for c in (msg.tool_calls or [])]
    usage = {}
    if output.usage is not None:   # Inspect counts cache reads and writes apart from input_tokens;
        u = output.usage           # the run record's input is the whole input, those parts included
        read, written = u.input_tokens_cache_read or 0, u.input_tokens_cache_write or 0
        usage = {"input_tokens": u.input_tokens + read + written, "output_tokens": u.output_tokens,
                 "cached_input_tokens": read, "cache_write_input_tokens": written}
    stop = output.stop_reason
    return ModelReply(text=msg.text, tool_calls=calls, usage=usage,
                      stop_reason=_STOP_REASONS.get(stop, stop), provider_content=msg)


# ---- the agent ---------------------------------------------------------------------------------------
class _InspectModel:
    """Stands where a :class:`~spatialscout_gym.conversation.providers.ModelProvider` stands in a
    :class:`VLMAgent`, for the records only: the model calls go through Inspect."""

    provider = "inspect"
    api_mode = "inspect"
    max_tokens_source = "Inspect's --max-tokens"

    def __init__(self, model: Model, reasoning_effort: str | None, effort: EffortFallback | None = None) -> None:
        self.model = str(model)
        self.base_url = model.api.base_url
        self.reasoning_effort = reasoning_effort
        self._effort = effort
        self.max_output_tokens = model.config.max_tokens
        self.http_attempts = 0          # Inspect's own retries are in its log, not counted here
        self.failures: list[str] = []
        self.tool_names: tuple[str, ...] | None = None

    @property
    def effort_refused(self) -> dict[str, str]:
        """``{"reasoning_effort": the service's words}`` once the run's service refused it."""
        refused = self._effort.refused if self._effort is not None else None
        return {"reasoning_effort": refused} if refused else {}

    def reasoning_record(self) -> dict:
        """The effort, what was sent and what the service refused (``harness.json``)."""
        sent = {} if self.effort_refused or not self.reasoning_effort else {"reasoning_effort": self.reasoning_effort}
        note = ("no reasoning effort sent" if not self.reasoning_effort else
                "the service refused the effort; the run continued without it after the first request"
                if self.effort_refused else "sent with every request through Inspect's reasoning_effort")
        return {"effort": self.reasoning_effort, "sent_as": sent, "refused": dict(self.effort_refused), "note": note}

    def settings(self) -> dict:
        return {"provider": self.provider, "name": self.model, "api_mode": self.api_mode,
                "reasoning_effort": self.reasoning_effort, "max_output_tokens": self.max_output_tokens,
                "inspect_ai": _inspect_version(), "reasoning": self.reasoning_record()}

    def tool_schema(self) -> list[dict]:
        return [t.model_dump(exclude_none=True) for t in tool_infos(self.tool_names)]


class InspectAgent(VLMAgent):
    """A :class:`VLMAgent` whose model calls Inspect makes; its records say so."""

    def __init__(self, model: Model, *, sample_id: Any, reasoning_effort: str | None,
                 effort: EffortFallback | None = None, **options: Any) -> None:
        super().__init__(_InspectModel(model, reasoning_effort, effort), name=f"inspect:{model}", **options)
        self.sample_id = sample_id

    def _harness(self) -> dict:
        return {"name": HARNESS_NAME, "version": _inspect_version(), "sample_id": self.sample_id}

    def harness_settings(self) -> dict:
        return {**super().harness_settings(), "harness": self._harness()}

    def extra_result(self) -> dict:
        return {**super().extra_result(), "harness": self._harness()}


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", name).strip("._") or "model"


@solver
def spatialscout_agent(image_budget: int = 100, call_budget: int = 100, resolution: int = 512,
                       prompt: str = DEFAULT_PROMPT_STYLE, reasoning_effort: str | None = None,
                       image_max_side: int = MAX_SIDE_PX, out: str | None = None) -> Solver:
    """Run the sample's episode with Inspect's active model and write its run directory
    (``state.metadata["spatialscout"]`` names it). A model-service or runtime failure writes a
    failed attempt (as ``evaluate`` does) and is raised again, so Inspect records the sample as an
    error. The solver is built once per task, so its :class:`EffortFallback` is the run's: a refused
    effort reaches the service once per Inspect run."""
    effort = EffortFallback(reasoning_effort)

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        from spatialscout_gym.eval.running.evaluate import EpisodeTask, EvalSettings, check_settings, scene_dir_name
        from spatialscout_gym.eval.layout import archive_failed_attempt, record_scene_args, seed_dir_name
        from spatialscout_gym.eval.running.runner import env_episode, resolve_scene

        model = get_model()
        scene, seed = str(state.metadata["scene"]), int(state.metadata["seed"])
        root = Path(out if out else Path(DEFAULT_OUT) / _safe(str(model))).resolve()
        root.mkdir(parents=True, exist_ok=True)
        ep_task = EpisodeTask(scene, seed, str(root / scene_dir_name(scene) / seed_dir_name(seed)))
        options = {"mode": "active", "model_call_budget": call_budget, "prompt_style": prompt,
                   "image_max_side": image_max_side,
                   **({"reasoning_effort": reasoning_effort} if reasoning_effort else {})}
        check_settings(root, EvalSettings(f"inspect:{model}", image_budget, call_budget, resolution,
                                           agent_options={**options, "harness": HARNESS_NAME}))
        record_scene_args(root, {Path(ep_task.run_dir).parent.name: ep_task.scene})
        spec = resolve_scene(scene)
        attempt = archive_failed_attempt(Path(ep_task.run_dir))
        agent = InspectAgent(model, sample_id=state.sample_id, reasoning_effort=reasoning_effort, effort=effort,
                             model_call_budget=call_budget, prompt_style=prompt, image_max_side=image_max_side)
        t0 = time.perf_counter()
        # the runner's episode loop; a service or runtime failure is a failed attempt, as evaluate records it
        with env_episode(agent, spec, ep_task.run_dir, seed=seed, resolution=resolution, image_budget=image_budget,
                         tool_call_budget=None, attempt=attempt, keep_attempts=True, shared_renderer=True) as run:
            w = agent.begin_episode(run.env, seed=seed)
            tools = tool_infos(w.tool_names)
            while not w.done:
                output = await effort.generate(model, to_chat_messages(w.request()), tools)
                agent.provider.http_attempts += 1
                state.output = output
                agent.take_reply(to_model_reply(output))
        record, failure = parse_run_record(run.result), run.failure   # the record written, typed
        if agent.wrapper is not None:
            state.messages = to_chat_messages(agent.wrapper.messages)
        state.metadata["spatialscout"] = {"run_dir": ep_task.run_dir, "status": record.status,
                                          "end_reason": record.end_reason, "wall_s": time.perf_counter() - t0}
        state.completed = True
        if failure is not None:
            raise failure
        return state

    return solve


# ---- scorer and metrics --------------------------------------------------------------------------
def _score_record(s: SceneScore) -> dict:
    """A :class:`SceneScore` as JSON (NaN centre errors as None), for the metrics to rebuild."""
    return {"scene_id": s.scene_id, "num_submitted": int(s.num_submitted), "iou": s.iou.tolist(),
            "center_error_m": [None if not math.isfinite(x) else float(x) for x in s.center_error_m],
            "matched_id": list(s.matched_id), "hits": s.hits.astype(int).tolist(), "compat": s.compat,
            "lam": float(s.lam)}


def _scene_score(d: dict, cell: str) -> SceneScore:
    return SceneScore(cell, int(d["num_submitted"]), np.asarray(d["iou"], float),
                      np.asarray([np.nan if x is None else x for x in d["center_error_m"]], float),
                      list(d["matched_id"]), np.asarray(d["hits"], bool), d["compat"], float(d["lam"]))


def _table3(view: dict, prefix: str = "") -> dict[str, float]:
    """The Table-3 columns of one aggregate view (object-micro or scene-macro): all-target and
    submitted mean IoU and IoU > 0 / 0.5 / 0.9 rates, and coverage, in percent (names end in
    ``_pct``); names start with ``prefix``
    (Inspect shows every metric of a scorer under its own name)."""
    out = {"all_miou": view["all"]["mean_iou"]}
    out.update({f"all_{k}": view["all"][k] for k in THRESHOLD_KEYS})
    out["sub_miou"] = view["submitted"]["mean_iou"]
    out.update({f"sub_{k}": view["submitted"][k] for k in THRESHOLD_KEYS})
    out["coverage"] = view["coverage"]
    return {f"{prefix}{k}{PCT}": 100 * float(v) for k, v in out.items()}


PCT = "_pct"
"""Every metric is in percent, as ``report``, ``compare`` and the leaderboard print them, and its
name says so (``all_miou_pct``)."""


def _cells(scores: list) -> dict[tuple[str, int], SceneScore]:
    """The scored episodes as ``{(scene dir, seed): SceneScore}`` (sample ids are ``<scene>/seed_<k>``)."""
    cells = {}
    for s in scores:
        if s.score.metadata and "scene_score" in s.score.metadata:
            sample = str(s.sample_id)
            scene, seed = split_episode_key(sample)
            cell = (scene, seed) if seed is not None else (sample, 0)
            cells[cell] = _scene_score(s.score.metadata["scene_score"], sample)
    return cells


INTERVAL_FIGURES = {"all.mean_iou": "all_miou", "submitted.mean_iou": "sub_miou"}
"""The means reported with a 95% bootstrap interval beside them (``<name>_ci_low``, ``_ci_high``)."""


def _with_intervals(view: str, prefix: str, cells: dict[tuple[str, int], SceneScore]) -> dict[str, float]:
    """One view's Table-3 columns and, beside each mean IoU, its 95% percentile-bootstrap interval
    over scenes (:func:`~spatialscout_gym.eval.analysis.stats.bootstrap_intervals`: a scene's targets and
    seeds are resampled together, as in ``spatialscout report``); no interval with one scene."""
    from spatialscout_gym.eval.analysis.stats import bootstrap_intervals
    agg = aggregate(list(cells.values()))   # each episode's scene id is its sample id: all distinct
    out = _table3(agg[view], prefix)
    figures = bootstrap_intervals(cells)["figures"]
    for path, name in INTERVAL_FIGURES.items():
        ci = figures[f"{view}.{path}"]
        if ci["low"] is not None:
            out[f"{prefix}{name}{PCT}_ci_low"] = 100 * float(ci["low"])
            out[f"{prefix}{name}{PCT}_ci_high"] = 100 * float(ci["high"])
    return out


@metric(scores="unreduced")
def object_micro() -> Metric:
    """Table-3 columns pooled over every target of every episode (object-micro), in percent:
    ``all_miou_pct``, ``all_gt_0_pct``, ``all_gt_50_pct``, ``all_gt_90_pct``, ``sub_miou_pct``,
    ``sub_gt_..._pct``, ``coverage_pct``, and a 95% bootstrap interval over scenes beside each mean
    IoU (``all_miou_pct_ci_low``, ``all_miou_pct_ci_high``, ``sub_miou_pct_ci_low``,
    ``sub_miou_pct_ci_high``; two scenes or more)."""
    def compute(scores: list) -> dict[str, float]:
        cells = _cells(scores)
        return _with_intervals("object_micro", "", cells) if cells else {}
    return compute


@metric(scores="unreduced")
def scene_macro() -> Metric:
    """Table-3 columns averaged over episodes (scene-macro), named ``macro_...``, with the same
    intervals (``macro_all_miou_pct_ci_low``, ...)."""
    def compute(scores: list) -> dict[str, float]:
        cells = _cells(scores)
        return _with_intervals("scene_macro", "macro_", cells) if cells else {}
    return compute


@scorer(metrics=[object_micro(), scene_macro()])
def groupwise_iou() -> Scorer:
    """Re-score the sample's run directory (``predictions.json`` against ``ground_truth.json``)
    with the groupwise IoU of docs/protocol.md section 6."""

    async def score(state: TaskState, target: Target) -> Score:
        info = state.metadata.get("spatialscout") or {}
        run_dir = Path(info["run_dir"])
        gt = load_ground_truth(run_dir)
        s = score_scene(gt, load_predictions(run_dir, gt))
        m = s.metrics()
        return Score(value=_table3(m), answer=f"{m['num_submitted']} of {m['num_targets']} targets submitted",
                     explanation=f"end reason {info.get('end_reason')}; run directory {run_dir}",
                     metadata={"scene_score": _score_record(s), "run_dir": str(run_dir)})

    return score
