"""The provider-neutral conversation of a tool-calling model, and model replies in that form.

:class:`Message` (system, user, assistant and tool turns with text and image parts),
:class:`ToolCall` and :class:`ModelReply` are what :class:`~spatialscout_gym.wrappers.tool_call.ToolCallWrapper`
keeps and returns; the wire formats of the model services render them
(:mod:`spatialscout_gym.conversation.codecs`, one module per format), whose :func:`parse_reply` reads one
model reply in any of the forms a user holds: an OpenAI chat-completions message or completion, a
Responses response, an Anthropic message (SDK objects or their JSON dicts), a plain list of
``{"name", "arguments"}`` or a :class:`ModelReply`.
"""

from __future__ import annotations

import json
import math
import re
import sys
from dataclasses import dataclass, field, replace
from typing import Any, Sequence, Union

from spatialscout_gym.episode.tools import JSONABLE_MAX_DEPTH, argument_size_problem, to_jsonable
from spatialscout_gym.conversation.images import DeliveredImage
from spatialscout_gym.core.pricing import USAGE_KEYS
from spatialscout_gym.core.types import map_strings

__all__ = ["history_digest", "ToolCall", "Message", "ModelReply", "Part", "EpisodeOverError", "parse_arguments",
           "short_repr", "limit_image_history", "MAX_ARGUMENT_CHARS", "bound_reply", "clean_reply", "clean_text",
           "token_count", "clean_usage", "WIRE_FORMATS", "malformed_note", "safe_repr", "unique_id"]

Part = Union[str, DeliveredImage]
MAX_ARGUMENT_CHARS = 20_000
"""Longest tool-call arguments (JSON text, characters) a call may carry: longer ones are refused
without an env step and kept in the conversation and trace only as a note of their length (a valid
call of the ten tools is a few thousand characters at most)."""
_FLOAT_MAX = sys.float_info.max
UNWRITABLE = sys.maxsize
"""What :meth:`ToolCall.argument_chars` counts for arguments that no writer can turn into text."""


class EpisodeOverError(RuntimeError):
    """A model reply arrived after the episode ended."""


@dataclass
class ToolCall:
    """One tool call of a model response.

    ``arguments`` is what the provider sent: a JSON string (OpenAI) or an object (Anthropic).
    """

    id: str
    name: Any
    arguments: Any = None

    def argument_chars(self) -> int:
        """Length of the arguments as JSON text, characters."""
        if isinstance(self.arguments, str):
            return len(self.arguments)
        try:
            return len(json.dumps(to_jsonable(self.arguments)))
        except (TypeError, ValueError, RecursionError):
            try:
                return len(repr(self.arguments))
            except Exception:   # an integer of > 4300 digits, nesting too deep: no text at all
                return UNWRITABLE

    def bounded(self, limit: int = MAX_ARGUMENT_CHARS) -> "ToolCall":
        """This call, or, when its arguments exceed ``limit`` characters (or cannot be written as
        text at all), a copy whose arguments are a JSON text that says so (kept in the conversation
        and the trace instead of the whole text)."""
        n = self.argument_chars()
        if n <= limit:
            return self
        what = ("arguments that cannot be written as JSON (a number with too many digits or nesting "
                "too deep)" if n == UNWRITABLE else f"{n} characters of arguments (more than {limit})")
        return replace(self, arguments=json.dumps({"not_kept": f"{what}; refused"}))

    def to_trace(self) -> dict:
        args = self.arguments if isinstance(self.arguments, str) else to_jsonable(self.arguments)
        name = self.name if isinstance(self.name, str) else safe_repr(self.name)
        if len(name) > 200:   # a made-up tool name is kept in part, its length stated
            name = name[:200] + f"... ({len(name)} chars)"
        return {"id": self.id, "name": name, "arguments": args}


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
        Assistant messages only: the provider's own content (e.g. Anthropic thinking blocks,
        OpenAI Responses reasoning items), replayed verbatim by that provider's wire format.
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
        Provider content to replay in later requests (optional).
    stop_reason : str or None
    http : dict or None
        The call's HTTP record as the harness traced it (attempts, failures, rate-limit waits, request
        cache answers: :data:`~spatialscout_gym.core.records.HTTP_FIELD`); None when not recorded.
    malformed : list of str
        What of the reply could not be read (a text that is not a string, tool calls that are not a
        list, an item that is not an object, ...), one reason each: the wrapper tells the model and
        the episode goes on (docs/protocol.md section 5).
    """

    text: str = ""
    tool_calls: list[ToolCall] = field(default_factory=list)
    usage: dict = field(default_factory=dict)
    attempts: int = 1
    provider_content: Any = None
    stop_reason: str | None = None
    malformed: list[str] = field(default_factory=list)
    http: dict | None = None


WIRE_FORMATS = ("chat_completions", "responses", "messages")
"""The wire formats a reply is decoded from (the providers' ``api_mode``; one codec each)."""
_MAX_REASONS = 5


def malformed_note(reasons: list[str]) -> str:
    """What the model reads after a reply that could not be read in full."""
    shown = "; ".join(reasons[:_MAX_REASONS]) + (f"; and {len(reasons) - _MAX_REASONS} more"
                                                 if len(reasons) > _MAX_REASONS else "")
    return (f"Your last reply was malformed and was read only in part: {shown}. Send each tool call in the "
            "tool-call format of this API (a tool name and a JSON object of arguments); the episode goes on.")


def token_count(x: Any) -> int | None:
    """A token count, or None when a service sent something that is not one (a string, a negative
    or non-finite number, a bool): such usage is unknown, never an error."""
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        return None
    if isinstance(x, float) and not math.isfinite(x):
        return None
    return int(x) if x >= 0 else None


def clean_usage(usage: Any) -> dict:
    """The well-formed token counts of ``usage`` (a dict; anything else is unknown usage, ``{}``):
    ``input_tokens``, ``output_tokens`` and, where the reply reports them, the prompt-cache parts of
    the input (:data:`~spatialscout_gym.core.pricing.USAGE_KEYS`)."""
    if not isinstance(usage, dict):
        return {}
    out = {}
    for k in USAGE_KEYS:
        n = token_count(usage.get(k))
        if n is not None:
            out[k] = n
    return out


def bound_reply(reply: ModelReply, limit: int = MAX_ARGUMENT_CHARS) -> ModelReply:
    """``reply`` with every tool call over ``limit`` argument characters replaced by
    :meth:`ToolCall.bounded`, in its calls and in the provider content replayed later (OpenAI
    Responses ``function_call`` items, Anthropic ``tool_use`` blocks, matched to the calls in order,
    as the codecs read them), so that a huge argument is neither re-sent nor traced."""
    big = [c.argument_chars() > limit for c in reply.tool_calls]
    if not any(big):
        return reply
    calls = [c.bounded(limit) if b else c for c, b in zip(reply.tool_calls, big)]
    content = reply.provider_content
    if isinstance(content, list):
        content = [dict(item) if isinstance(item, dict) else item for item in content]
        k = 0
        for item in content:
            kind = item.get("type") if isinstance(item, dict) else None
            if kind not in ("function_call", "tool_use"):
                continue
            if k < len(calls) and big[k]:
                if kind == "function_call":
                    item["arguments"] = calls[k].arguments
                else:
                    item["input"] = json.loads(calls[k].arguments)
            k += 1
    return replace(reply, tool_calls=calls, provider_content=content)


_SURROGATE = re.compile("[\ud800-\udfff]")


def clean_text(s: str) -> str:
    """``s`` with lone surrogates (which no UTF-8 request or trace can carry) replaced by U+FFFD."""
    try:
        s.encode("utf-8")
        return s
    except UnicodeEncodeError:
        return _SURROGATE.sub("\ufffd", s)


def _clean(x: Any) -> Any:
    """``x`` with every string (dict keys too) passed through :func:`clean_text`; containers
    below 32 levels only (deeper ones are left to the JSON writers' own depth cap). Callers pass
    only values :func:`_size_problem` accepted, so the walk is bounded."""
    return map_strings(x, clean_text, 32)


MAX_REPLY_VALUES = 100_000
"""Most values (containers, strings, numbers) a reply's name or provider content may hold: a
Python caller can hand over a cyclic or self-sharing object, whose walk would never end."""


def _size_problem(x: Any, max_values: int = MAX_REPLY_VALUES, max_depth: int = JSONABLE_MAX_DEPTH) -> str | None:
    """None when ``x`` holds at most ``max_values`` values nested at most ``max_depth`` levels,
    else why not; level by level, never holding more than ``max_values`` references (a cycle is
    nested without end)."""
    level, seen, depth = [x], 1, 0
    while level:
        nxt: list[Any] = []
        for y in level:
            if isinstance(y, (dict, list, tuple)):
                if depth >= max_depth:
                    return f"nested more than {max_depth} levels deep"
                seen += 2 * len(y) if isinstance(y, dict) else len(y)
                if seen > max_values:
                    return f"more than {max_values} values"
                if isinstance(y, dict):
                    nxt.extend(y.keys())
                    nxt.extend(y.values())
                else:
                    nxt.extend(y)
        level, depth = nxt, depth + 1
    return None


def _bounded_arguments(args: Any) -> Any:
    """``args``, or a short JSON text in their place when they cross the argument bounds of
    docs/protocol.md section 4 (a cyclic object does: it is nested without end), so that nothing
    after this (cleaning, the trace, the history sent back) walks them; the episode refuses the
    call as it refuses any argument it does not know."""
    if args is None or isinstance(args, str):
        return args
    problem = argument_size_problem(args)   # bounded: at most MAX_ARG_VALUES steps
    if problem is None:
        return args
    return json.dumps({"not_kept": f"arguments over the size bounds ({problem}); refused"})


def clean_reply(reply: ModelReply) -> ModelReply:
    """``reply`` made safe to keep, trace and send back: a text that is not a string is dropped
    (and listed as malformed), lone surrogates in text, ids, names, arguments and provider content
    become U+FFFD, tool-call ids that are not strings become ``call_<k>``."""
    bad = list(reply.malformed)
    text = reply.text
    if not isinstance(text, str):
        bad.append(f"the reply text is {type(text).__name__}, not a string")
        text = ""
    calls: list[ToolCall] = []
    seen: dict[str, int] = {}
    for k, c in enumerate(reply.tool_calls if isinstance(reply.tool_calls, list) else []):
        cid = c.id if isinstance(c.id, str) and c.id else f"call_{k}"
        name = c.name if _size_problem(c.name, 1000) is None else safe_repr(type(c.name))
        calls.append(ToolCall(unique_id(clean_text(cid), seen), _clean(name), _clean(_bounded_arguments(c.arguments))))
    content = reply.provider_content
    if content is not None:
        try:
            if _size_problem(content, max_depth=sys.maxsize) is not None:   # to_jsonable caps depth
                raise ValueError("a cyclic or oversized provider content")
            content = _clean(to_jsonable(content))
            json.dumps(content)   # what the next request sends: an integer of > 4300 digits cannot go
        except (RecursionError, ValueError):   # nested too deep or a huge integer: nothing to replay
            bad.append("the provider content cannot be written as JSON (nested too deeply or a number "
                       "with too many digits); it is not replayed")
            content = None
    stop = reply.stop_reason if isinstance(reply.stop_reason, str) else None
    return replace(reply, text=clean_text(text), tool_calls=calls, provider_content=content,
                   stop_reason=None if stop is None else clean_text(stop), malformed=[clean_text(r) for r in bad])


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
                          f"{{\"forward\": 0.5}}, got {short_repr(raw)}")
        if not isinstance(val, dict):
            return None, f"the arguments must be a JSON object (name -> value), got {type(val).__name__} {short_repr(raw)}"
        return _refuse_huge_ints(_clean(val))   # a "\udc80" escape decodes to a lone surrogate
    return None, f"the arguments must be a JSON object (name -> value), got {type(raw).__name__}"


def _refuse_huge_ints(args: dict) -> tuple[dict | None, str | None]:
    """``(args, None)``, or ``(None, reason)`` when a nested integer exceeds the float range.
    Arguments over the size bounds (a cyclic object among them) are passed on unwalked: the
    episode refuses them first, in bounded time."""
    if argument_size_problem(args) is not None:
        return args, None
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


def safe_repr(x: Any) -> str:
    """``repr(x)``, or ``<TYPE that cannot be shown>`` when the repr itself fails (nesting too deep,
    an integer of more than 4300 digits, a ``__repr__`` that raises): a reply's text never raises."""
    try:
        return repr(x)
    except Exception:
        return f"<{type(x).__name__} that cannot be shown>"


def unique_id(cid: str, seen: dict[str, int]) -> str:
    """``cid``, or ``cid_2``, ``cid_3``, ... when an earlier call of the same reply already has it
    (``seen`` holds the ids given so far and is updated): the Anthropic API refuses a turn whose
    tool results answer one id twice, and a result must name the call it answers."""
    if cid not in seen:
        seen[cid] = 1
        return cid
    k = seen[cid]
    while True:
        k += 1
        new = f"{cid}_{k}"
        if new not in seen:
            seen[cid] = k
            seen[new] = 1
            return new


def short_repr(x: Any, n: int = 120) -> str:
    """``repr`` of ``x`` (a string as itself), cut to ``n`` characters with the length stated."""
    s = x if isinstance(x, str) else safe_repr(x)
    return repr(s) if len(s) <= n else repr(s[:n]) + f"... ({len(s)} chars)"


def limit_image_history(messages: list[Message], keep_last: int | None) -> list[Message]:
    """The conversation with only the last ``keep_last`` images; each older image is replaced by a
    short note (its caption, which precedes it, stays). ``None`` keeps every image (the paper's
    protocol). Opt-in for models with small context windows: every request resends the history.

    Raises
    ------
    ValueError
        ``keep_last`` is negative.
    """
    if keep_last is None:
        return list(messages)
    if int(keep_last) < 0:
        raise ValueError(f"keep_last must be >= 0 images or None (keep all), got {keep_last}")
    total = sum(len(m.images) for m in messages)
    drop = total - int(keep_last)
    out: list[Message] = []
    for m in messages:
        if drop <= 0 or not m.images:
            out.append(m)
            continue
        content: list[Part] = []
        for p in m.content:
            if isinstance(p, DeliveredImage) and drop > 0:
                drop -= 1
                content.append(f"[image of frame {p.frame_id} not resent: this run keeps only the last "
                               f"{int(keep_last)} images in the conversation; its caption above still applies]")
            else:
                content.append(p)
        out.append(replace(m, content=content))
    return out


def history_digest(messages: Sequence[Message]) -> str:
    """SHA-256 of a conversation in its trace form (texts, tool calls, images by reference): a
    request records it, so an edit to any earlier reply's text no longer matches (``verify``)."""
    import hashlib
    blob = json.dumps([m.to_trace() for m in messages], sort_keys=True, ensure_ascii=True)
    return hashlib.sha256(blob.encode()).hexdigest()
