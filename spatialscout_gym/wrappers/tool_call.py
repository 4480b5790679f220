"""``ToolCallWrapper``: text tool calls in, text + images out, under a model-call budget.

The wrapper drives one :class:`~spatialscout_gym.episode.Episode` for a tool-calling model
(docs/protocol.md sections 3-5). It does one job: keep a provider-neutral **conversation** (system prompt,
user messages with images, assistant turns with tool calls, tool results), run the tool calls a
model response carries, and count model calls against B and images against V. Thin adapters
(:func:`to_openai_messages`, :func:`to_anthropic_messages`) render the conversation in the OpenAI
chat-completions and the Anthropic messages wire formats; the tools are rendered the same two ways
from one source of truth (:data:`spatialscout_gym.episode.tools.TOOL_SPECS`).

Protocol of one model call (docs/protocol.md section 5)
----------------------------------------------
1. :meth:`ToolCallWrapper.begin_request` counts the call against B (it raises once the episode
   has ended) and, when 10 or 3 calls remain (this one included), appends a reminder first.
2. The caller sends :attr:`ToolCallWrapper.messages` to the model (through an adapter).
3. :meth:`ToolCallWrapper.apply_reply` records the assistant turn and runs its tool calls in
   order. Malformed calls (unknown tool, arguments that are not a JSON object, wrong types,
   NaN/inf) become tool errors that list the valid tools or arguments; the episode goes on.
   ``finish_mapping`` ends the episode and the calls after it are skipped. A reply without a tool
   call ends the episode (``end_reason="no_tool_call"``); so does the B-th reply
   (``"model_call_budget"``) if nothing ended it before.

Images: the initial frame (or, in passive mode, the given frames) opens the conversation; every
successful ``capture_image`` returns its frame as JPEG (quality 82, at most 384 px) with the
conversion to render pixels stated beside it (:mod:`spatialscout_gym.wrappers.images`).

Nothing a model receives is built from the private half of a scene: tool results come from the
episode, which only sees the public half, and the wrapper never computes a score.

Trace (appended to ``episode.trace``, docs/protocol.md section 7): ``model_request`` (model-call index,
calls left, the messages added since the previous request, with images by frame file name),
``model_response`` (text, tool calls, usage, HTTP attempts), ``tool_call_refused`` (malformed,
disabled or skipped calls); the episode's ``map`` and ``end`` events get the model-call index.
The full request ``k`` is the concatenation of the ``new_messages`` of requests ``0..k``.
Every wrapper event carries ``time_unix_s`` (wall clock, seconds): a ``model_request``'s is when the
request was handed to the provider, a ``model_response``'s when the reply came back.
"""

from __future__ import annotations

import base64
import json
import sys
import time
from dataclasses import dataclass, field
from typing import Any, Iterable, Union

from spatialscout_gym.episode.episode import Episode
from spatialscout_gym.episode.tools import TOOL_NAMES, TOOL_SPECS, ArgSpec, ToolResult, model_json, to_jsonable
from spatialscout_gym.wrappers.images import (JPEG_QUALITY, MAX_SIDE_PX, DeliveredImage, conversion_text,
                                              encode_for_model)
from spatialscout_gym.wrappers.prompt import (CAMERA_TOOLS, DEFAULT_PROMPT_STYLE, PASSIVE_TOOLS, REMINDER_AT,
                                              check_prompt_style, first_message_text, reminder_text, task_prompt)

__all__ = ["ToolCallWrapper", "ToolCall", "Message", "ModelReply", "EpisodeOverError",
           "tool_schemas", "openai_tools", "anthropic_tools", "to_openai_messages",
           "to_anthropic_messages", "CAMERA_TOOLS", "parse_arguments"]

_MAX_ERROR_CHARS = 600
_FLOAT_MAX = sys.float_info.max
Part = Union[str, DeliveredImage]


# ---- tool schemas: one source (TOOL_SPECS), two renderings --------------------------------------
_VEC3 = {"type": "array", "items": {"type": "number"}, "minItems": 3, "maxItems": 3}


def _arg_schema(a: ArgSpec) -> dict:
    if a.kind == "number":
        return {"type": "number", "description": a.description}
    if a.kind == "vec3":
        return {**_VEC3, "description": a.description}
    if a.kind == "marks":
        return {"type": "array", "minItems": 2, **({"maxItems": a.max_items} if a.max_items else {}),
                "description": a.description + " (render-grid pixels; "
                "convert from delivered images first)",
                "items": {"type": "object", "additionalProperties": False,
                          "required": ["frame_id", "u", "v"],
                          "properties": {"frame_id": {"type": "integer", "description": "a captured frame id"},
                                         "u": {"type": "number", "description": "pixel column, right"},
                                         "v": {"type": "number", "description": "pixel row, down"}}}}
    if a.kind == "positions":
        return {"type": "object", "description": a.description + "; ids from list_entities",
                "additionalProperties": {**_VEC3, "description": "[x, y, z] task frame, metres"}}
    raise ValueError(f"unknown argument kind {a.kind!r} of {a.name!r}; expected number, vec3, marks or positions")


def tool_schemas(names: Iterable[str] | None = None) -> list[dict]:
    """The ten tools (or those in ``names``, in tool-list order) as ``{"name", "description",
    "parameters"}`` with JSON Schema parameters."""
    keep = None if names is None else set(names)
    out = []
    for spec in TOOL_SPECS:
        if keep is not None and spec.name not in keep:
            continue
        params = {"type": "object", "properties": {a.name: _arg_schema(a) for a in spec.args},
                  "required": [a.name for a in spec.args if a.required], "additionalProperties": False}
        out.append({"name": spec.name, "description": spec.description, "parameters": params})
    return out


def openai_tools(names: Iterable[str] | None = None) -> list[dict]:
    """The tools in the OpenAI chat-completions format ``{"type": "function", "function": {...}}``."""
    return [{"type": "function", "function": t} for t in tool_schemas(names)]


def anthropic_tools(names: Iterable[str] | None = None) -> list[dict]:
    """The tools in the Anthropic messages format ``{"name", "description", "input_schema"}``."""
    return [{"name": t["name"], "description": t["description"], "input_schema": t["parameters"]}
            for t in tool_schemas(names)]


# ---- the provider-neutral conversation ----------------------------------------------------------
@dataclass
class ToolCall:
    """One tool call of a model response.

    ``arguments`` is what the provider sent: a JSON string (OpenAI) or an object (Anthropic).
    """

    id: str
    name: Any
    arguments: Any = None

    def to_trace(self) -> dict:
        args = self.arguments if isinstance(self.arguments, str) else to_jsonable(self.arguments)
        return {"id": self.id, "name": self.name if isinstance(self.name, str) else repr(self.name),
                "arguments": args}


@dataclass
class Message:
    """One message of the conversation.

    Attributes
    ----------
    role : str
        ``"system"``, ``"user"``, ``"assistant"`` or ``"tool"``.
    content : list of str or DeliveredImage
        Text and image parts, in order.
    tool_calls : list of ToolCall
        Assistant messages only.
    tool_call_id, tool_name : str
        Tool messages only: the call this result answers.
    is_error : bool
        Tool messages only: the call was refused.
    provider_content : object
        Assistant messages only: the provider's own content blocks (e.g. Anthropic thinking
        blocks), replayed verbatim by that provider's adapter.
    """

    role: str
    content: list[Part] = field(default_factory=list)
    tool_calls: list[ToolCall] = field(default_factory=list)
    tool_call_id: str | None = None
    tool_name: str | None = None
    is_error: bool = False
    provider_content: Any = None

    @property
    def text(self) -> str:
        return "\n".join(p for p in self.content if isinstance(p, str))

    @property
    def images(self) -> list[DeliveredImage]:
        return [p for p in self.content if isinstance(p, DeliveredImage)]

    def to_trace(self) -> dict:
        """JSON-able form with images by reference (frame file names), never image bytes."""
        d: dict[str, Any] = {"role": self.role, "content": [
            p if isinstance(p, str) else p.reference() for p in self.content]}
        if self.tool_calls:
            d["tool_calls"] = [c.to_trace() for c in self.tool_calls]
        if self.role == "tool":
            d.update(tool_call_id=self.tool_call_id, tool_name=self.tool_name, is_error=self.is_error)
        return d


@dataclass
class ModelReply:
    """A model response in neutral form, as a provider adapter parses it.

    Attributes
    ----------
    text : str
    tool_calls : list of ToolCall
    usage : dict
        ``{"input_tokens": int, "output_tokens": int}`` when the service reports it.
    attempts : int
        HTTP attempts this logical call took.
    provider_content : object
        Provider content blocks to replay in later requests (optional).
    stop_reason : str or None
    """

    text: str = ""
    tool_calls: list[ToolCall] = field(default_factory=list)
    usage: dict = field(default_factory=dict)
    attempts: int = 1
    provider_content: Any = None
    stop_reason: str | None = None


class EpisodeOverError(RuntimeError):
    """A request was started after the episode ended."""


def parse_arguments(raw: Any) -> tuple[dict | None, str | None]:
    """Tool arguments as a dict, or ``(None, reason)``.

    Accepts a dict, a JSON object text, or nothing (``None`` / ``""`` mean ``{}``). ``NaN`` and
    ``Infinity`` parse (Python's JSON reader accepts them) and are then refused by the tool's
    validation as non-finite numbers. An integer too large for a float (JSON allows any number of
    digits) is refused here, since converting it would raise instead of giving a tool error.
    """
    if raw is None or (isinstance(raw, str) and not raw.strip()):
        return {}, None
    if isinstance(raw, dict):
        return _refuse_huge_ints(raw)
    if isinstance(raw, str):
        try:
            val = json.loads(raw)
        except (ValueError, RecursionError) as exc:  # ValueError: also an integer of > 4300 digits
            if isinstance(exc, json.JSONDecodeError):
                msg = exc.msg
            elif isinstance(exc, RecursionError):
                msg = "nested too deeply"
            else:
                msg = "a number with too many digits"
            return None, (f"the arguments are not valid JSON ({msg}); expected one JSON object such as "
                          f"{{\"forward\": 0.5}}, got {_short(raw)}")
        if not isinstance(val, dict):
            return None, f"the arguments must be a JSON object (name -> value), got {type(val).__name__} {_short(raw)}"
        return _refuse_huge_ints(val)
    return None, f"the arguments must be a JSON object (name -> value), got {type(raw).__name__}"


def _refuse_huge_ints(args: dict) -> tuple[dict | None, str | None]:
    """``(args, None)``, or ``(None, reason)`` when a nested integer exceeds the float range."""
    stack: list[Any] = [args]
    while stack:
        x = stack.pop()
        if isinstance(x, dict):
            stack.extend(x.values())
        elif isinstance(x, (list, tuple)):
            stack.extend(x)
        elif isinstance(x, int) and not isinstance(x, bool) and abs(x) > _FLOAT_MAX:
            return None, ("a number is beyond the float range (|x| > 1.8e308); use finite numbers "
                          "(metres, degrees, pixels)")
    return args, None


def _short(x: Any, n: int = 120) -> str:
    s = x if isinstance(x, str) else repr(x)
    return repr(s) if len(s) <= n else repr(s[:n]) + f"... ({len(s)} chars)"


def _clip(text: str, n: int = _MAX_ERROR_CHARS) -> str:
    return text if len(text) <= n else text[:n] + f"... [{len(text) - n} more characters]"


# ---- the wrapper --------------------------------------------------------------------------------
class ToolCallWrapper:
    """Drive one episode with text tool calls from a model (see the module docstring).

    Parameters
    ----------
    episode : Episode or gymnasium.Env
        The episode to drive, or an env after ``reset`` (its ``unwrapped.episode`` is used). Give
        it an unlimited tool-call budget (``tool_call_budget=None``): this wrapper counts model calls.
    model_call_budget : int
        B, model calls per episode (docs/protocol.md section 5: 100).
    passive_frames : iterable of int, optional
        Passive mode: these already-captured frames open the conversation and the camera tools
        (:data:`CAMERA_TOOLS`) are refused with a reason.
    max_side, jpeg_quality : int
        Delivered image size bound (pixels) and JPEG quality.
    prompt_style : {"paper", "legacy"}
        Wording of the prompt, first message and reminders (:mod:`spatialscout_gym.wrappers.prompt`).

    Attributes
    ----------
    messages : list of Message
        The conversation so far.
    model_calls : int
        Model calls begun.
    usage : dict
        Summed ``input_tokens`` / ``output_tokens`` over replies.
    attempts : int
        Summed HTTP attempts over replies.
    """

    def __init__(self, episode: Any, *, model_call_budget: int = 100,
                 passive_frames: Iterable[int] | None = None, max_side: int = MAX_SIDE_PX,
                 jpeg_quality: int = JPEG_QUALITY, prompt_style: str = DEFAULT_PROMPT_STYLE) -> None:
        if not isinstance(episode, Episode):
            inner = getattr(getattr(episode, "unwrapped", episode), "episode", None)
            if not isinstance(inner, Episode):
                raise TypeError(f"expected an Episode or an env after reset() (with .unwrapped.episode), "
                                f"got {type(episode).__name__}")
            episode = inner
        if int(model_call_budget) < 1:
            raise ValueError(f"model_call_budget must be >= 1, got {model_call_budget}")
        self.episode = episode
        self.model_call_budget = int(model_call_budget)
        self.passive = passive_frames is not None
        self.max_side, self.jpeg_quality = int(max_side), int(jpeg_quality)
        self.prompt_style = check_prompt_style(prompt_style)
        self.model_calls = 0
        self.usage = {"input_tokens": 0, "output_tokens": 0}
        self.attempts = 0
        self._reported = 0  # messages already written to the trace
        self._awaiting_reply = False
        ep = episode
        frames = sorted(set(int(f) for f in passive_frames)) if self.passive else [0]
        missing = [f for f in frames if f not in ep.frames]
        if missing:
            raise ValueError(f"passive_frames {missing} are not captured frames; captured: {sorted(ep.frames)}")
        self.messages: list[Message] = [Message("system", [task_prompt(
            ep.public, ep.intrinsics, model_call_budget=self.model_call_budget,
            image_budget=ep.image_budget, passive=self.passive, style=self.prompt_style,
            max_side=self.max_side,
            passive_positions={f: ep.frames[f].position_task for f in frames} if self.passive else None)])]
        parts: list[Part] = [first_message_text(passive=self.passive, style=self.prompt_style, frames=frames)]
        for fid in frames:
            parts += self._image_parts(fid)
        self.messages.append(Message("user", parts))

    # ---- state --------------------------------------------------------------------------------
    @property
    def done(self) -> bool:
        return self.episode.done

    @property
    def calls_left(self) -> int:
        return self.model_call_budget - self.model_calls

    @property
    def tool_names(self) -> tuple[str, ...]:
        """The tools the model is offered: all ten, or :data:`PASSIVE_TOOLS` in passive mode."""
        return PASSIVE_TOOLS if self.passive else TOOL_NAMES

    def _event(self, event_kind: str, **fields) -> None:
        from spatialscout_gym.episode.trace import event
        # time_unix_s: when the request was handed to the provider / the reply came back (seconds)
        self.episode.trace.append(event(event_kind, **fields, time_unix_s=time.time()))

    def _image_parts(self, fid: int) -> list[Part]:
        frame = self.episode.frames[fid]
        img = encode_for_model(frame.image, fid, max_side=self.max_side, quality=self.jpeg_quality)
        pose = self.episode.task_frame.pose_to_task(frame.pose)
        pos = ", ".join(f"{x:.3f}" for x in pose["position"])
        return [f"Frame {fid}: camera at [{pos}] m (task frame), yaw {pose['yaw_deg']:.1f} deg, pitch "
                f"{pose['pitch_deg']:.1f} deg. {conversion_text(img)}", img]

    # ---- one model call ------------------------------------------------------------------------
    def begin_request(self) -> list[Message]:
        """Count one model call and return the messages to send (a reminder is appended first
        when 10 or 3 calls remain, this one included).

        Raises
        ------
        EpisodeOverError
            The episode has ended (by ``finish_mapping``, a reply without a tool call, or B).
        """
        if self.done:
            raise EpisodeOverError(f"the episode has ended ({self.episode.end_reason}); no further model calls")
        left = self.calls_left
        if left in REMINDER_AT:
            ep = self.episode
            self.messages.append(Message("user", [reminder_text(left, ep.images_left, len(ep.accepted_map),
                                                                len(ep.inventory_ids), style=self.prompt_style)]))
        index = self.model_calls
        self.model_calls += 1
        self._event("model_request", model_call_index=index, calls_left=left,
                    message_count=len(self.messages),
                    new_messages=[m.to_trace() for m in self.messages[self._reported:]])
        self._reported = len(self.messages)
        self._awaiting_reply = True
        return self.messages

    def apply_reply(self, reply: ModelReply) -> list[Message]:
        """Record the assistant turn, run its tool calls in order and return the tool messages.

        Ends the episode when the reply has no tool call or when it was the B-th model call.
        """
        if self.done:
            raise EpisodeOverError(f"the episode has ended ({self.episode.end_reason})")
        if not self._awaiting_reply:
            raise RuntimeError("apply_reply needs a begin_request() before each reply")
        self._awaiting_reply = False
        index = self.model_calls - 1
        self.attempts += int(reply.attempts)
        for k in self.usage:
            self.usage[k] += int(reply.usage.get(k, 0) or 0)
        self.messages.append(Message("assistant", [reply.text] if reply.text else [],
                                     tool_calls=list(reply.tool_calls),
                                     provider_content=reply.provider_content))
        self._event("model_response", model_call_index=index, text=reply.text,
                    tool_calls=[c.to_trace() for c in reply.tool_calls], usage=dict(reply.usage),
                    attempts=int(reply.attempts), stop_reason=reply.stop_reason)
        self._reported = len(self.messages)
        results: list[Message] = []
        for call in reply.tool_calls:
            if self.done:
                results.append(self._refused(call, index, "skipped: finish_mapping ended the episode "
                                             "before this call", kind="skipped"))
                continue
            results.append(self._run(call, index))
        self.messages.extend(results)
        if not self.done and not reply.tool_calls:
            self.episode.end("no_tool_call")
        if not self.done and self.model_calls >= self.model_call_budget:
            self.episode.end("model_call_budget")
        if self.done:
            self._annotate_last("end", model_calls=self.model_calls)
        return results

    # ---- tool execution --------------------------------------------------------------------------
    def _refused(self, call: ToolCall, index: int, error: str, kind: str) -> Message:
        error = _clip(error)
        self._event("tool_call_refused", model_call_index=index, refusal=kind, call=call.to_trace(), error=error)
        name = call.name if isinstance(call.name, str) else repr(call.name)
        return Message("tool", [json.dumps({"ok": False, "error": error})], tool_call_id=call.id,
                       tool_name=name, is_error=True)

    def _run(self, call: ToolCall, index: int) -> Message:
        name = call.name
        if not isinstance(name, str) or name not in TOOL_NAMES:
            return self._refused(call, index, f"unknown tool {_short(name, 60)}; valid tools: "
                                 f"{', '.join(TOOL_NAMES)}", kind="unknown_tool")
        if self.passive and name in CAMERA_TOOLS:
            return self._refused(call, index, f"{name} is disabled in passive mode: the views are fixed "
                                 f"(frames {sorted(self.episode.frames)}); use list_entities, get_camera_pose, "
                                 "get_camera_intrinsics, triangulate_observations, submit_positions and "
                                 "finish_mapping", kind="disabled")
        args, reason = parse_arguments(call.arguments)
        if reason is not None:
            return self._refused(call, index, f"{name}: {reason}", kind="malformed")
        res: ToolResult = self.episode.call(name, args)
        if name == "submit_positions" and res.ok:
            self._annotate_last("map", model_call_index=index)
        payload: dict[str, Any] = {"ok": res.ok}
        if res.ok:
            payload["result"] = res.result
        else:
            payload["error"] = _clip(res.error or "refused")
            if res.result:
                payload["result"] = res.result
        parts: list[Part] = [model_json(payload)]
        if res.ok and name == "capture_image" and res.frame_id is not None:
            parts += self._image_parts(res.frame_id)
        return Message("tool", parts, tool_call_id=call.id, tool_name=name, is_error=not res.ok)

    def _annotate_last(self, kind: str, **fields) -> None:
        for ev in reversed(self.episode.trace):
            if ev.get("event") == kind:
                ev.update(to_jsonable(fields))
                return


# ---- provider adapters -------------------------------------------------------------------------
def _data_uri(img: DeliveredImage) -> str:
    return "data:image/jpeg;base64," + base64.b64encode(img.jpeg).decode("ascii")


def _json_args(raw: Any) -> str:
    if isinstance(raw, str):
        return raw
    try:
        return json.dumps(to_jsonable(raw if raw is not None else {}))
    except (TypeError, ValueError):
        return json.dumps(repr(raw))


def to_openai_messages(messages: list[Message]) -> list[dict]:
    """The conversation in the OpenAI chat-completions format.

    Tool messages carry text only in this format, so the images of a run of tool results follow
    it in one user message, each after its caption.
    """
    out: list[dict] = []
    pending: list[dict] = []

    def flush() -> None:
        if pending:
            out.append({"role": "user", "content": list(pending)})
            pending.clear()

    def user_parts(parts: list[Part]) -> list[dict]:
        return [{"type": "text", "text": p} if isinstance(p, str)
                else {"type": "image_url", "image_url": {"url": _data_uri(p)}} for p in parts]

    for m in messages:
        if m.role != "tool":
            flush()
        if m.role == "system":
            out.append({"role": "system", "content": m.text})
        elif m.role == "user":
            out.append({"role": "user", "content": user_parts(m.content)})
        elif m.role == "assistant":
            d: dict[str, Any] = {"role": "assistant", "content": m.text or None}
            if m.tool_calls:
                d["tool_calls"] = [{"id": c.id, "type": "function", "function": {
                    "name": c.name if isinstance(c.name, str) else repr(c.name),
                    "arguments": _json_args(c.arguments)}} for c in m.tool_calls]
            out.append(d)
        elif m.role == "tool":
            text = m.text
            if m.images:
                text += f" (image of frame {m.images[0].frame_id} follows in the next user message)"
                pending.extend(user_parts(m.content[1:]))
            out.append({"role": "tool", "tool_call_id": m.tool_call_id, "content": text})
        else:
            raise ValueError(f"unknown message role {m.role!r}; expected system, user, assistant or tool")
    flush()
    return out


def to_anthropic_messages(messages: list[Message]) -> tuple[str, list[dict]]:
    """The conversation in the Anthropic messages format: ``(system, messages)``.

    Consecutive tool results and user messages merge into one user turn (tool results first), as
    the format requires alternating roles; images travel inside the tool results.
    """
    system = ""
    out: list[dict] = []

    def blocks(parts: list[Part]) -> list[dict]:
        return [{"type": "text", "text": p} if isinstance(p, str) else
                {"type": "image", "source": {"type": "base64", "media_type": "image/jpeg",
                                             "data": base64.b64encode(p.jpeg).decode("ascii")}}
                for p in parts if not (isinstance(p, str) and not p)]

    def add_user(content: list[dict]) -> None:
        if out and out[-1]["role"] == "user":
            out[-1]["content"].extend(content)
        else:
            out.append({"role": "user", "content": list(content)})

    for m in messages:
        if m.role == "system":
            system = m.text
        elif m.role == "user":
            add_user(blocks(m.content))
        elif m.role == "tool":
            add_user([{"type": "tool_result", "tool_use_id": m.tool_call_id, "content": blocks(m.content),
                       "is_error": bool(m.is_error)}])
        elif m.role == "assistant":
            if m.provider_content is not None:
                content = list(m.provider_content)
            else:
                content = [{"type": "text", "text": m.text}] if m.text else []
                for c in m.tool_calls:
                    args, _ = parse_arguments(c.arguments)
                    content.append({"type": "tool_use", "id": c.id,
                                    "name": c.name if isinstance(c.name, str) else repr(c.name),
                                    "input": to_jsonable(args) if args is not None else {}})
            out.append({"role": "assistant", "content": content or [{"type": "text", "text": "(no text)"}]})
        else:
            raise ValueError(f"unknown message role {m.role!r}; expected system, user, assistant or tool")
    return system, out

