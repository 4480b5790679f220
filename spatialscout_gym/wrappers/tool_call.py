"""``ToolCallWrapper``: a Gymnasium wrapper that takes model replies and returns model messages.

Wrap any SpatialScout env (``gym.make("SpatialScout/<scene>-v0", tool_call_budget=None)``, possibly
wrapped further) and the env speaks to a tool-calling model (docs/protocol.md sections 3-5):

* ``reset()`` returns the conversation opening as the observation: the task prompt (by default
  the sourced ``appendix-a`` sentences, as the first user message; or a system message in the ``detailed``/``legacy``
  wordings) and frame 0 (or, in passive mode, the fixed views) as JPEG with its caption (in blind mode,
  ``blind=True``, the caption alone: every frame's image is withheld, its id and pose are sent);
* ``step(reply)`` takes one model reply (an OpenAI or Anthropic message, SDK object or dict, a
  plain list of ``{"name", "arguments"}`` or a :class:`~spatialscout_gym.conversation.messages.ModelReply`),
  encodes each tool call into the env's action (:mod:`spatialscout_gym.wrappers.encode`) and calls
  ``self.env.step(action)`` for it, in order; it returns the next messages to send (tool results,
  frame captions and JPEGs, a reminder when 10 or 3 model calls remain), the reward the inner steps
  earned (evaluation runners ignore it; a model never sees it), and ``terminated``/``truncated``.

Endings (docs/protocol.md section 5): ``finish_mapping`` (the env terminates; later calls of the
same reply are skipped with a reason), a reply without a tool call (``terminated``,
``end_reason="no_tool_call"``), the B-th reply (``truncated``, ``"model_call_budget"``). B, the
model-call budget, lives here; the env's own tool-call cap is lifted (``None``, the paper's
protocol) unless the user set one in ``gym.make(..., tool_call_budget=N)``, which is kept (an env
built without ``gym.make`` keeps its cap, with a warning): ``inner_tool_call_cap`` says which. Gymnasium wrappers inside this one (``RecordEpisodeStatistics``, a logger) see one
``step`` per tool call and the episode's end when the env ends it (``finish_mapping``, its tool-call
budget); an episode this wrapper ends (no tool call, B) ends above them.

Refusals: a call to an unknown tool, arguments that are not a JSON object (or hold an integer
beyond the float range) and, in passive mode, the camera tools are refused here without an env
step; every other call is one env step, so the episode refuses malformed arguments with its own
reason and counts them. Texts come from one formatter shared with the MCP server
(:mod:`spatialscout_gym.conversation.replies`).

Trace (docs/protocol.md section 7): :meth:`ToolCallWrapper.trace` is the episode's trace with this
wrapper's events in place: ``model_request`` (model-call index, calls left, the messages added since
the previous request, images by frame file name, and ``history_sha256``, the digest of the whole
conversation so far, so every reply's text is carried by the requests after it), ``model_response`` (text, tool calls, usage, HTTP
attempts, stop reason) and ``tool_call_refused``; ``map`` events carry the model-call index and the
``end`` event the number of model calls. The full request ``k`` is the concatenation of the
``new_messages`` of requests ``0..k``. The episode's own trace is never written to.
Every wrapper event carries ``time_unix_s`` (wall clock, seconds): a ``model_request``'s is when the
request was handed to the provider, a ``model_response``'s when the reply came back.

Example
-------
>>> env = ToolCallWrapper(gym.make("SpatialScout/Kitchen_01-v0", tool_call_budget=None))  # doctest: +SKIP
>>> messages, info = env.reset(seed=0)                                                  # doctest: +SKIP
>>> messages, reward, terminated, truncated, info = env.step(
...     [{"name": "capture_image", "arguments": {}}])                                  # doctest: +SKIP
"""

from __future__ import annotations

import time
import warnings
from typing import TYPE_CHECKING, Any, Sequence, cast

import gymnasium as gym

from spatialscout_gym.episode import trace as tr
from spatialscout_gym.episode.episode import Episode
from spatialscout_gym.episode.tools import TOOL_NAMES
from spatialscout_gym.conversation.codecs import parse_reply, wire_format_of
from spatialscout_gym.conversation.messages import (MAX_ARGUMENT_CHARS, WIRE_FORMATS, EpisodeOverError, Message,
                                                    history_digest,
                                                    ModelReply, Part, ToolCall, bound_reply, clean_reply,
                                                    clean_usage, malformed_note, parse_arguments, safe_repr)
from spatialscout_gym.conversation.spaces import MessagesSpace, ReplySpace
from spatialscout_gym.wrappers.encode import encode_call
from spatialscout_gym.conversation.images import JPEG_QUALITY, MAX_SIDE_PX
from spatialscout_gym.conversation.prompt import (CAMERA_TOOLS, DEFAULT_PROMPT_STYLE, PASSIVE_TOOLS, REMINDER_AT,
                                              check_prompt_style, first_message_text, prompt_role, reminder_text,
                                              task_prompt)
from spatialscout_gym.conversation.replies import (clip_error, frame_parts, refusal_text, result_text,
                                               unknown_tool_error, withheld_caption)
from spatialscout_gym.conversation.schemas import tool_schemas

if TYPE_CHECKING:
    from spatialscout_gym.envs.spatialscout_env import SpatialScoutEnv

__all__ = ["ToolCallWrapper", "ToolCall", "Message", "ModelReply", "EpisodeOverError", "tool_schemas",
           "CAMERA_TOOLS", "PASSIVE_TOOLS", "parse_arguments", "parse_reply"]


class ToolCallWrapper(gym.Wrapper, gym.utils.RecordConstructorArgs):
    """Model replies in, env actions down, model messages out (see the module docstring).

    Parameters
    ----------
    env : gymnasium.Env
        A SpatialScout env (``env.unwrapped`` is a
        :class:`~spatialscout_gym.envs.SpatialScoutEnv`), possibly wrapped.
    model_call_budget : int
        B, model calls per episode (docs/protocol.md section 5: 100).
    passive_views : int, optional
        Passive mode: on ``reset`` the evaluator captures this many views (frame 0 included) along
        ``passive_path`` (env steps, recorded in the trace like any tool call); they open the
        conversation and the camera tools (:data:`CAMERA_TOOLS`) are refused with a reason.
    blind : bool
        Blind mode (the blind control): every tool result and frame caption is sent, no image; a
        frame's caption says its image is withheld, and the prompt promises none
        (:data:`~spatialscout_gym.conversation.prompt.BLIND_NOTE`). Not with ``passive_views``.
    passive_path : sequence of (position, yaw_deg, pitch_deg)
        Task-frame poses to visit in order (a pose the episode refuses is skipped); the camera then
        returns to the origin. Required with ``passive_views``
        (:func:`spatialscout_gym.baselines.passive.scripted_path` is the benchmark's).
    max_side, jpeg_quality : int
        Delivered image size bound (pixels) and JPEG quality.
    prompt_style : {"appendix-a", "content-list", "detailed", "legacy"}
        Wording of the prompt, first message and reminders (:mod:`spatialscout_gym.conversation.prompt`);
        ``"appendix-a"`` (the default) and ``"content-list"`` send the task prompt as the first user
        message, the others as a system message (``prompt_role``).
    clock : callable, optional
        A wall clock (``time.time``) given to each episode on ``reset``, so its ``tool_call`` events
        carry ``started_unix_s`` and ``execution_s`` (the VLM agents pass it; None leaves the
        episode's own setting).
    wire_format : {"chat_completions", "responses", "messages"}, optional
        The wire format of the provider in use: every reply is decoded with its codec, whatever
        its shape. None: the first reply's declared format
        (:func:`~spatialscout_gym.conversation.codecs.wire_format_of`) is kept for the episode.

    A reply of the wrong shape (a text that is not a string, tool calls that are not a list, an
    item that is not an object, ...) is read as far as it goes; the model is told what could not
    be read (a user message after the tool results) and the episode goes on, even when no tool
    call could be read (the reply still counts against B).

    ``observation_space`` is a :class:`~spatialscout_gym.conversation.spaces.MessagesSpace`
    (lists of :class:`Message`) and ``action_space`` a
    :class:`~spatialscout_gym.conversation.spaces.ReplySpace` (model replies): they contain
    what this wrapper returns and takes, but have no fixed shape (no neural policy flattens them);
    ``env.unwrapped``'s spaces describe what each tool call becomes.

    Attributes
    ----------
    messages : list of Message
        The conversation so far (what a model is sent, in neutral form).
    model_calls : int
        Replies taken this episode.
    end_reason : str or None
        Why the episode ended.
    usage : dict
        Summed ``input_tokens`` / ``output_tokens`` over replies.
    attempts : int
        Summed HTTP attempts over replies.
    """

    def __init__(self, env: gym.Env, *, model_call_budget: int = 100, passive_views: int | None = None,
                 passive_path: Sequence[tuple[Sequence[float], float, float]] | None = None,
                 max_side: int = MAX_SIDE_PX, jpeg_quality: int = JPEG_QUALITY,
                 prompt_style: str = DEFAULT_PROMPT_STYLE, clock: Any = None,
                 wire_format: str | None = None, blind: bool = False) -> None:
        # recorded so that env.spec (and Gymnasium's checker) can rebuild the wrapper
        gym.utils.RecordConstructorArgs.__init__(self, model_call_budget=model_call_budget,
                                                 passive_views=passive_views, passive_path=passive_path,
                                                 max_side=max_side, jpeg_quality=jpeg_quality,
                                                 prompt_style=prompt_style, clock=clock,
                                                 wire_format=wire_format, blind=blind)
        gym.Wrapper.__init__(self, env)
        if wire_format is not None and wire_format not in WIRE_FORMATS:
            raise ValueError(f"wire_format must be one of {', '.join(WIRE_FORMATS)} or None, got {wire_format!r}")
        self.wire_format = self._given_wire_format = wire_format
        if int(model_call_budget) < 1:
            raise ValueError(f"model_call_budget must be >= 1, got {model_call_budget}")
        if passive_views is not None and passive_path is None:
            raise ValueError("passive_views needs passive_path, the poses to capture (e.g. "
                             "spatialscout_gym.baselines.passive.scripted_path())")
        if blind and passive_views is not None:
            raise ValueError("blind and passive are two modes: give passive_views or blind=True, not both")
        self.blind = bool(blind)
        self.model_call_budget = int(model_call_budget)
        self.passive_views = None if passive_views is None else int(passive_views)
        self.passive_path = list(passive_path) if passive_path is not None else None
        self.max_side, self.jpeg_quality = int(max_side), int(jpeg_quality)
        self.prompt_style = check_prompt_style(prompt_style)
        self.prompt_role = prompt_role(prompt_style, passive=self.passive_views is not None)
        self.clock = clock
        self.inner_tool_call_cap = self._lift_inner_cap()
        self.observation_space = MessagesSpace()
        self.action_space = ReplySpace(TOOL_NAMES)
        self._episode: Episode | None = None
        self._clear()

    @property
    def _scout(self) -> SpatialScoutEnv:
        """The SpatialScout env inside (``env.unwrapped``)."""
        return cast("SpatialScoutEnv", self.env.unwrapped)

    def _lift_inner_cap(self) -> int | None:
        """This wrapper owns B (model calls); the env's own tool-call cap is lifted unless the user
        set one. ``gym.make`` records the keyword arguments a user passed (``env.spec.kwargs``): a
        cap given there is kept; the env's default cap (100 tool calls) is lifted. An env built
        without ``gym.make`` cannot say, so its cap is kept with a warning. Returns the cap kept
        (None: unlimited)."""
        inner = self._scout
        cap = getattr(inner, "tool_call_budget", None)
        if cap is None:
            return None
        spec = getattr(inner, "spec", None)
        if spec is not None and "tool_call_budget" in (spec.kwargs or {}):
            return cap   # the user's choice
        if spec is None:
            warnings.warn(f"the wrapped env keeps its own cap of {cap} tool calls besides B = "
                          f"{self.model_call_budget} model calls; build it with tool_call_budget=None for "
                          "the paper's protocol", stacklevel=3)
            return cap
        inner.session.tool_call_budget = inner.tool_call_budget = None
        return None

    def _clear(self) -> None:
        self.messages: list[Message] = []
        self.model_calls = 0
        self.usage = {"input_tokens": 0, "output_tokens": 0}
        self.attempts = 0
        self.end_reason: str | None = None
        self._env_ended = False
        self._requested = False       # request() counted the current model call
        self._reported = 0            # messages already written to the trace
        self._events: list[tuple[int, dict]] = []      # (episode trace length then, event)
        self._annotations: dict[int, dict] = {}         # episode trace position -> added fields

    # ---- state ----------------------------------------------------------------------------------
    @property
    def passive(self) -> bool:
        return self.passive_views is not None

    @property
    def episode(self) -> Episode:
        """The env's current :class:`~spatialscout_gym.episode.Episode` (read only)."""
        if self._episode is None:
            raise RuntimeError("call reset() first")
        return self._episode

    @property
    def done(self) -> bool:
        return self.end_reason is not None

    @property
    def calls_left(self) -> int:
        return self.model_call_budget - self.model_calls

    @property
    def tool_names(self) -> tuple[str, ...]:
        """The tools the model is offered: all ten, or :data:`PASSIVE_TOOLS` in passive mode."""
        return PASSIVE_TOOLS if self.passive else TOOL_NAMES

    def _emit(self, kind: str, **fields: Any) -> None:
        # time_unix_s: when the request was handed to the provider / the reply came back (seconds)
        clock = self.clock if self.clock is not None else time.time
        self._events.append((len(self.episode.trace), tr.event(kind, **fields, time_unix_s=float(clock()))))

    def trace(self) -> list[dict]:
        """The episode's trace events with this wrapper's events in place (see the module docstring)."""
        base = self._episode.trace if self._episode is not None else []
        out: list[dict] = []
        events = iter(self._events)
        pending = next(events, None)
        has_end = False
        for i, ev in enumerate(base):
            while pending is not None and pending[0] <= i:
                out.append(dict(pending[1]))
                pending = next(events, None)
            ev = dict(ev)
            ev.update(self._annotations.get(i, {}))
            if ev.get("event") == "end":
                has_end = True
                if self.done:
                    ev["model_calls"] = self.model_calls
            out.append(ev)
        while pending is not None:
            out.append(dict(pending[1]))
            pending = next(events, None)
        if self.done and not has_end:  # ended here (no tool call, B): the env's episode runs on
            ep = self.episode
            out.append(tr.event("end", reason=self.end_reason, tool_calls=ep.tool_calls,
                                images_used=ep.images_used, model_calls=self.model_calls))
        return out

    # ---- gymnasium API ----------------------------------------------------------------------------
    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[list[Message], dict[str, Any]]:
        """Reset the env; returns the conversation opening (system prompt, first user message) and
        the env's reset info plus ``model_call_budget``."""
        _, info = self.env.reset(seed=seed, options=options)
        self._clear()
        self.wire_format = self._given_wire_format
        self._episode = ep = self._scout.episode
        assert ep is not None   # reset() built it
        if self.clock is not None:
            ep.clock = self.clock
        frames = self._capture_passive_views() if self.passive else [0]
        prompt = task_prompt(
            ep.public, ep.intrinsics, model_call_budget=self.model_call_budget,
            image_budget=ep.image_budget, passive=self.passive, style=self.prompt_style,
            max_side=self.max_side, blind=self.blind,
            passive_positions={f: ep.frames[f].position_task for f in frames} if self.passive else None)
        parts: list[Part] = [first_message_text(passive=self.passive, style=self.prompt_style, frames=frames,
                                                blind=self.blind)]
        for fid in frames:
            parts += self._image_parts(fid)
        if self.prompt_role == "system":
            self.messages = [Message("system", [prompt]), Message("user", parts)]
        else:   # the paper's "default user prompt": the task prompt opens the first user message
            self.messages = [Message("user", [prompt, *parts])]
        self._remind()
        return list(self.messages), {**info, "model_call_budget": self.model_call_budget}

    def request(self) -> list[Message]:
        """The whole conversation to send for the next model call, recorded as a ``model_request``
        trace event and counted against B now (so a request whose reply never comes, e.g. a failed
        service call, is in the trace). :meth:`step` does this itself when it was not called.

        Raises
        ------
        EpisodeOverError
            The episode has ended.
        """
        if self._episode is None:
            raise RuntimeError("call reset() before request()")
        if self.done:
            raise EpisodeOverError(f"the episode has ended ({self.end_reason}); call reset()")
        if not self._requested:
            self._emit("model_request", model_call_index=self.model_calls, calls_left=self.calls_left,
                       message_count=len(self.messages),
                       new_messages=[m.to_trace() for m in self.messages[self._reported:]],
                       history_sha256=history_digest(self.messages))
            self._reported = len(self.messages)
            self.model_calls += 1
            self._requested = True
        return list(self.messages)

    def step(self, reply: Any) -> tuple[list[Message], float, bool, bool, dict[str, Any]]:
        """Run one model reply's tool calls (one env step each) and return the next messages.

        Returns
        -------
        messages : list of Message
            Tool results in call order (then a reminder when 10 or 3 model calls remain).
        reward : float
            Sum of the inner steps' rewards.
        terminated, truncated : bool
        info : dict
            The last inner step's info (``counters``; ``metrics`` when the env ended; what inner
            wrappers add, e.g. ``episode`` from ``RecordEpisodeStatistics``) without its
            ``tool_result``, plus ``tool_results`` (the env's ``info["tool_result"]`` per call,
            refusals made here as ``{"tool", "ok": False, "error", ...}``), ``model_calls``,
            ``calls_left`` and ``end_reason``.

        Raises
        ------
        EpisodeOverError
            The episode has ended (call ``reset``).
        TypeError
            ``reply`` is not a model reply (see :func:`~spatialscout_gym.conversation.codecs.parse_reply`).
        """
        if self._episode is None:
            raise RuntimeError("call reset() before step()")
        if self.done:
            raise EpisodeOverError(f"the episode has ended ({self.end_reason}); call reset()")
        reply = self._read(reply)
        oversize = [c.argument_chars() > MAX_ARGUMENT_CHARS for c in reply.tool_calls]
        reply = bound_reply(reply)
        if not self._requested:
            self.request()
        self._requested = False
        index = self.model_calls - 1
        self.attempts += int(reply.attempts)
        usage = clean_usage(reply.usage)   # malformed counts are unknown, not an error
        for k in self.usage:
            self.usage[k] += usage.get(k, 0)
        self.messages.append(Message("assistant", [reply.text] if reply.text else [],
                                     tool_calls=list(reply.tool_calls), provider_content=reply.provider_content))
        self._emit("model_response", model_call_index=index, text=reply.text,
                   tool_calls=[c.to_trace() for c in reply.tool_calls], usage=usage,
                   attempts=int(reply.attempts), stop_reason=reply.stop_reason,
                   **({"malformed": list(reply.malformed)} if reply.malformed else {}),
                   **({"http": reply.http} if reply.http is not None else {}))
        self._reported = len(self.messages)
        results: list[Message] = []
        tool_results: list[dict] = []
        reward, terminated, truncated, last_info = 0.0, False, False, {}
        for call, too_long in zip(reply.tool_calls, oversize):
            if too_long:
                results.append(self._refused(call, index, f"{call.name if isinstance(call.name, str) else 'call'}: "
                                             f"the arguments exceed {MAX_ARGUMENT_CHARS} characters; send numbers, "
                                             "ids and short keys", kind="malformed", out=tool_results))
                continue
            if self._env_ended:
                reason = self.end_reason
                text = ("skipped: finish_mapping ended the episode before this call" if reason == "finish_mapping"
                        else f"skipped: the episode ended ({reason}) before this call")
                results.append(self._refused(call, index, text, kind="skipped", out=tool_results))
                continue
            msg, r, term, trunc, info = self._run(call, index, tool_results)
            results.append(msg)
            if info:
                reward += float(r)
                last_info = info
                if term or trunc:
                    terminated, truncated = bool(term), bool(trunc)
                    self._env_ended = True
                    self.end_reason = info.get("counters", {}).get("end_reason") or ("truncated" if trunc else "terminated")
        if reply.malformed and not self._env_ended:
            results.append(Message("user", [malformed_note(reply.malformed)]))
        self.messages.extend(results)
        if not self._env_ended and not reply.tool_calls and not reply.malformed:
            self.end_reason, terminated = "no_tool_call", True
        if not self.done and self.model_calls >= self.model_call_budget:
            self.end_reason, truncated = "model_call_budget", True
        out = list(results)
        if not self.done:
            out += self._remind()
        info_out = {k: v for k, v in last_info.items() if k != "tool_result"}
        info_out.update(tool_results=tool_results, model_calls=self.model_calls, calls_left=self.calls_left,
                        end_reason=self.end_reason)
        return out, reward, terminated, truncated, info_out

    def record_truncated(self, reply: Any) -> None:
        """Record a reply cut off at an output-token limit: a ``model_response`` event with
        ``truncated: true`` and its stop reason; its tool calls are not run. The model call stays
        counted; the caller fails the attempt (:class:`~spatialscout_gym.baselines.vlm.OutputCapError`)."""
        if self._episode is None:
            raise RuntimeError("call reset() before record_truncated()")
        reply = bound_reply(self._read(reply))
        if not self._requested:
            self.request()
        self._requested = False
        self.attempts += int(reply.attempts)
        usage = clean_usage(reply.usage)   # malformed counts are unknown, not an error
        for k in self.usage:
            self.usage[k] += usage.get(k, 0)
        self._emit("model_response", model_call_index=self.model_calls - 1, text=reply.text,
                   tool_calls=[c.to_trace() for c in reply.tool_calls], usage=usage,
                   attempts=int(reply.attempts), stop_reason=reply.stop_reason, truncated=True,
                   **({"http": reply.http} if reply.http is not None else {}))

    def _read(self, reply: Any) -> ModelReply:
        """``reply`` in neutral form, decoded with the episode's wire format (kept from the first
        reply when none was given) and made safe to keep and send back
        (:func:`~spatialscout_gym.conversation.messages.clean_reply`)."""
        if isinstance(reply, (ModelReply, list, tuple)):   # neutral forms: no wire format to decode
            return clean_reply(parse_reply(reply))
        if self.wire_format is None:
            self.wire_format = wire_format_of(reply)
        return clean_reply(parse_reply(reply, self.wire_format))

    # ---- tool calls -------------------------------------------------------------------------------
    def _env_step(self, name: str, args: dict):
        """One tool call as one env step; returns the step's five values."""
        unwrapped = self._scout
        action = encode_call(name, args, unwrapped.action_space, self.episode.inventory_ids,
                             unwrapped.decode_action)
        return self.env.step(action)

    def _run(self, call: ToolCall, index: int, tool_results: list[dict]):
        name = call.name
        if not isinstance(name, str) or name not in TOOL_NAMES:
            return self._refused(call, index, unknown_tool_error(name), "unknown_tool", tool_results), 0.0, False, False, {}
        if self.passive and name in CAMERA_TOOLS:
            return self._refused(call, index, f"{name} is disabled in passive mode: the views are fixed "
                                 f"(frames {sorted(self.episode.frames)}); use list_entities, get_camera_pose, "
                                 "get_camera_intrinsics, triangulate_observations, submit_positions and "
                                 "finish_mapping", "disabled", tool_results), 0.0, False, False, {}
        args, reason = parse_arguments(call.arguments)
        if reason is not None:
            return self._refused(call, index, f"{name}: {reason}", "malformed", tool_results), 0.0, False, False, {}
        assert args is not None   # parse_arguments gives arguments or a reason
        start = len(self.episode.trace)
        _, reward, terminated, truncated, info = self._env_step(name, args)
        for i in range(start, len(self.episode.trace)):
            if self.episode.trace[i].get("event") == "map":
                self._annotations[i] = {"model_call_index": index}
        res = info["tool_result"]
        tool_results.append(res)
        parts: list[Part] = [result_text(res)]
        if res["ok"] and name == "capture_image" and res.get("frame_id") not in (None, -1):
            parts += self._image_parts(int(res["frame_id"]))
        msg = Message("tool", parts, tool_call_id=call.id, tool_name=name, is_error=not res["ok"])
        return msg, reward, terminated, truncated, info

    def _refused(self, call: ToolCall, index: int, error: str, kind: str, out: list[dict]) -> Message:
        error = clip_error(error)
        self._emit("tool_call_refused", model_call_index=index, refusal=kind, call=call.to_trace(), error=error)
        name = call.name if isinstance(call.name, str) else safe_repr(call.name)
        out.append({"tool": name, "ok": False, "error": error, "result": {}, "frame_id": -1})
        return Message("tool", [refusal_text(error)], tool_call_id=call.id, tool_name=name, is_error=True)

    # ---- messages ---------------------------------------------------------------------------------
    def _image_parts(self, fid: int) -> list[Part]:
        if self.blind:   # the frame's id and pose, never its pixels
            return [withheld_caption(self.episode, fid)]
        caption, img = frame_parts(self.episode, fid, max_side=self.max_side, quality=self.jpeg_quality)
        return [caption, img]

    def _remind(self) -> list[Message]:
        """Append (and return) the reminder for the next request when 10 or 3 model calls remain."""
        left = self.calls_left
        if left not in REMINDER_AT:
            return []
        ep = self.episode
        msg = Message("user", [reminder_text(left, ep.images_left, len(ep.accepted_map), len(ep.inventory_ids),
                                             style=self.prompt_style)])
        self.messages.append(msg)
        return [msg]

    def _capture_passive_views(self) -> list[int]:
        """Capture the passive views with env steps (the evaluator's tool calls); returns frame ids."""
        ep = self.episode
        n = self.passive_views
        assert n is not None and self.passive_path is not None   # passive mode only
        if not 1 <= n <= ep.image_budget:
            raise ValueError(f"passive_views must be between 1 and the image budget {ep.image_budget}, got {n}")
        for position, yaw, pitch in self.passive_path:
            if ep.images_used >= n:
                break
            _, _, _, _, info = self._env_step("set_camera_position", {
                "position": [float(x) for x in position], "yaw_deg": yaw, "pitch_deg": pitch})
            if info["tool_result"]["ok"]:
                self._env_step("capture_image", {})
        self._env_step("set_camera_position", {"position": [0.0, 0.0, 0.0], "yaw_deg": 0.0,
                                               "pitch_deg": ep.public.initial_camera.pitch_deg})
        return sorted(ep.frames)
