"""What the wire-format codecs share: reading SDK objects and dicts alike, usage counts that may be
malformed, tool-call arguments as JSON text, and the deferral of tool-result images to a user turn
(formats whose tool results carry text only)."""

from __future__ import annotations

import base64
import json
from typing import Any, Callable

from spatialscout_gym.episode.tools import to_jsonable
from spatialscout_gym.conversation.messages import safe_repr, token_count, unique_id
from spatialscout_gym.conversation.images import DeliveredImage

__all__ = ["get", "usage_counts", "cached_input_tokens", "cache_write_tokens", "json_args", "call_name", "data_uri", "as_json", "ImageDeferral", "is_object",
           "Reading"]


def get(obj: Any, key: str, default: Any = None) -> Any:
    """``obj[key]`` for dicts, ``obj.key`` for SDK objects (pydantic models)."""
    if isinstance(obj, dict):
        return obj.get(key, default)
    return getattr(obj, key, default)


def usage_counts(usage: Any, input_key: str, output_key: str) -> dict:
    """``{"input_tokens", "output_tokens"}`` from a usage object, keeping only well-formed counts
    (a malformed or missing count is left out, i.e. unknown)."""
    if usage is None:
        return {}
    out = {}
    for ours, theirs in (("input_tokens", input_key), ("output_tokens", output_key)):
        n = token_count(get(usage, theirs))
        if n is not None:
            out[ours] = n
    return out


def cached_input_tokens(response: Any) -> int:
    """Input tokens the service answered from its prompt cache, as its usage reports them (OpenAI
    chat ``prompt_tokens_details.cached_tokens``, Responses ``input_tokens_details.cached_tokens``,
    both part of the input count; Anthropic ``cache_read_input_tokens``); 0 when not reported."""
    usage = get(response, "usage")
    if usage is None:
        return 0
    for details, key in (("prompt_tokens_details", "cached_tokens"), ("input_tokens_details", "cached_tokens")):
        n = token_count(get(get(usage, details), key)) if get(usage, details) is not None else None
        if n:
            return n
    return token_count(get(usage, "cache_read_input_tokens")) or 0


def cache_write_tokens(response: Any) -> int:
    """Input tokens the service wrote to its prompt cache (Anthropic ``cache_creation_input_tokens``,
    part of the recorded input; the OpenAI formats report none); 0 when not reported."""
    usage = get(response, "usage")
    return 0 if usage is None else token_count(get(usage, "cache_creation_input_tokens")) or 0


def json_args(raw: Any) -> str:
    """Tool-call arguments as the JSON text the OpenAI formats carry."""
    if isinstance(raw, str):
        return raw
    try:
        return json.dumps(to_jsonable(raw if raw is not None else {}))
    except (TypeError, ValueError):
        return json.dumps(repr(raw))


def call_name(c: Any) -> str:
    return c.name if isinstance(c.name, str) else safe_repr(c.name)


def data_uri(img: DeliveredImage) -> str:
    return "data:image/jpeg;base64," + base64.b64encode(img.jpeg).decode("ascii")


def is_object(x: Any) -> bool:
    """A dict or an SDK object (pydantic model): what a reply's items must be."""
    return isinstance(x, dict) or callable(getattr(type(x), "model_dump", None))


def as_json(obj: Any) -> dict[str, Any]:
    """An SDK object (pydantic) or a dict as a JSON-able dict, for replay in later requests (an
    object built without validation may hold any value: it is kept as it is, serialised later)."""
    if isinstance(obj, dict):
        return dict(obj)
    return obj.model_dump(mode="python", exclude_none=True, warnings=False)


class Reading:
    """Reads the fields of one reply, listing what is not of the expected kind in :attr:`bad`
    (the reply's :attr:`~spatialscout_gym.conversation.messages.ModelReply.malformed`) instead
    of raising."""

    def __init__(self) -> None:
        self.bad: list[str] = []
        self._ids: dict[str, int] = {}

    def _kind(self, x: Any) -> str:
        if x is None:
            return "missing"
        shown = safe_repr(x)
        return f"{type(x).__name__} {shown if len(shown) <= 40 else shown[:40] + '...'}"

    def items(self, x: Any, what: str) -> list:
        """``x`` as a list (None: empty); anything else is listed as malformed."""
        if x is None:
            return []
        if isinstance(x, (list, tuple)):
            return list(x)
        self.bad.append(f"{what} is {self._kind(x)}, not a list")
        return []

    def text(self, x: Any, what: str) -> str:
        """``x`` as a string (None: empty); anything else is listed as malformed."""
        if x is None or isinstance(x, str):
            return x or ""
        self.bad.append(f"{what} is {self._kind(x)}, not a string")
        return ""

    def obj(self, x: Any, what: str) -> bool:
        """Whether ``x`` is an object; if not, it is listed as malformed."""
        if is_object(x):
            return True
        self.bad.append(f"{what} is {self._kind(x)}, not an object")
        return False

    def call_id(self, x: Any, k: int) -> str:
        """A tool call's id, or ``call_<k>`` when the service sent none (or not a string); an id an
        earlier call of the reply already has becomes ``<id>_2``, ``<id>_3``, ...
        (:func:`~spatialscout_gym.conversation.messages.unique_id`), in the calls and in the
        provider content replayed, so every tool result answers one call."""
        return unique_id(x if isinstance(x, str) and x else f"call_{k}", self._ids)

    def stop(self, x: Any) -> str | None:
        return x if isinstance(x, str) else None


class ImageDeferral:
    """Tool results that carry text only: the images of a run of consecutive tool results follow it
    in one user message, each after its caption, and the tool result says so.

    ``user_parts`` renders neutral parts (text, images) in the format; ``out`` receives the user
    message on :meth:`flush`.
    """

    def __init__(self, out: list[dict], user_parts: Callable[[list], list[dict]]) -> None:
        self._out, self._user_parts = out, user_parts
        self._pending: list[dict] = []

    def tool_text(self, m: Any) -> str:
        """The tool result's text; its images (after the text part) are kept for the next flush."""
        text = m.text
        if m.images:
            text += f" (image of frame {m.images[0].frame_id} follows in the next user message)"
            self._pending.extend(self._user_parts(m.content[1:]))
        return text

    def flush(self) -> None:
        if self._pending:
            self._out.append({"role": "user", "content": list(self._pending)})
            self._pending = []
