"""The model side of a run re-derived (docs/protocol.md section 7, "Verification").

A model run's trace holds every request the harness sent (``model_request``: the messages added
since the previous one, images by reference) and every reply (``model_response``: text, tool
calls, usage, HTTP attempts, stop reason). The harness is deterministic, so :func:`replay_model_run`
feeds the recorded replies, in order, as a scripted model to the same
:class:`~spatialscout_gym.wrappers.tool_call.ToolCallWrapper` (same prompt style, budgets, image
settings and mode as ``harness.json`` records) around the scene's env with a renderer that draws
nothing (no tool result depends on pixels), and returns the trace that replay writes: the
requests the harness builds from the prompt, the settings and the earlier replies and tool
results; the tool calls parsed from each reply; reminders and the end rule where the settings put
them. :mod:`spatialscout_gym.eval.verification.verify` compares it with the recorded trace event by event.

Images are compared by their references (frame id, file, delivered and render sizes); their bytes
by the recorded hashes under ``verify --images``.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any


from spatialscout_gym.core.camera import Intrinsics
from spatialscout_gym.core.renderer_api import BlankRenderer
from spatialscout_gym.core.trace_events import ModelResponseEvent, StartEvent

if TYPE_CHECKING:
    from spatialscout_gym.core.spec import SceneSpec
    from spatialscout_gym.wrappers.tool_call import ToolCallWrapper

__all__ = ["MODEL_EVENTS", "TIMING_FIELDS", "not_checkable", "replay_model_run", "harness_expected"]

MODEL_EVENTS = ("model_request", "model_response", "tool_call_refused")
TIMING_FIELDS = ("time_unix_s", "started_unix_s", "execution_s")
"""Wall-clock fields: never re-derived, never compared."""


def not_checkable(harness: dict | None) -> str | None:
    """Why the conversation of a model run cannot be re-derived from its records (None: it can)."""
    if harness is None:
        return "no harness.json (a run written before harness records)"
    need = {"prompt_style": harness.get("prompt_style"), "mode": harness.get("mode"),
            "budgets.model_call_budget": (harness.get("budgets") or {}).get("model_call_budget"),
            "images.max_side_px": (harness.get("images") or {}).get("max_side_px"),
            "images.jpeg_quality": (harness.get("images") or {}).get("jpeg_quality")}
    missing = [k for k, v in need.items() if v is None]
    if missing:
        return f"harness.json lacks {', '.join(missing)} (a run written before these were recorded)"
    return None


def replay_model_run(spec: SceneSpec, start: StartEvent, harness: dict, replies: list[ModelResponseEvent],
                     seed: int) -> tuple[ToolCallWrapper, list[dict]]:
    """Replay ``replies`` (the trace's recorded replies, typed) from its ``start`` event through
    the harness.

    Returns ``(wrapper, trace)``: the wrapper after the replay (its ``usage``, ``attempts``,
    ``model_calls``, ``messages``) and its trace with timing fields removed. Replies left over
    after the episode ended are not fed (the caller reports them).
    """
    from spatialscout_gym.baselines.passive import scripted_path
    from spatialscout_gym.eval.running.runner import make_scene_env
    from spatialscout_gym.conversation.messages import ModelReply, ToolCall
    from spatialscout_gym.wrappers.tool_call import ToolCallWrapper

    K = Intrinsics.from_dict(start.intrinsics)
    passive = harness.get("mode") == "passive"
    env = make_scene_env(spec, renderer=BlankRenderer(spec, K), resolution=K.width,
                         image_budget=start.image_budget, tool_call_budget=start.tool_call_budget)
    try:
        w = ToolCallWrapper(env, model_call_budget=int(harness["budgets"]["model_call_budget"]),
                            passive_views=int((harness.get("passive") or {}).get("views") or 0) if passive else None,
                            passive_path=scripted_path() if passive else None,
                            max_side=int(harness["images"]["max_side_px"]),
                            jpeg_quality=int(harness["images"]["jpeg_quality"]),
                            prompt_style=str(harness["prompt_style"]), blind=harness.get("mode") == "blind")
        w.reset(seed=seed)
        for r in replies:
            if w.done:
                break
            calls = [ToolCall(str(c.get("id")), c.get("name"), _arguments(c.get("arguments")))
                     for c in r.tool_calls if isinstance(c, dict)]
            # usage and the HTTP record are what the service did: recorded, not re-derived
            reply = ModelReply(text=r.text or "", tool_calls=calls, usage=r.usage, attempts=r.attempts or 1,
                               stop_reason=r.stop_reason, http=r.http)
            w.request()
            if r.truncated:
                w.record_truncated(reply)
                break
            w.step(reply)
        if not w.done and not any(r.truncated for r in replies):
            w.request()        # the harness would ask again: the recorded trace must hold that request
        if w.done and not w.episode.done:
            w.episode.end(str(w.end_reason))     # as the runner ends an episode the wrapper ended
        trace = [{k: v for k, v in e.items() if k not in TIMING_FIELDS} for e in w.trace()]
        return w, trace
    finally:
        env.close()


def _arguments(recorded: Any) -> Any:
    """The arguments to replay: a call whose arguments were too long was recorded as a note of
    their length; an argument text of that length is refused (and noted) the same way again."""
    if isinstance(recorded, str) and recorded.startswith('{"not_kept": '):
        m = re.match(r'\{"not_kept": "(\d+) characters of arguments', recorded)
        if m:
            return " " * int(m.group(1))
    return recorded


def harness_expected(w: Any, harness: dict) -> dict:
    """What ``harness.json`` must say of the prompt and tools, re-derived by the replay's wrapper
    and the wire format's codec."""
    from spatialscout_gym.conversation.codecs import CODECS
    role = w.prompt_role
    opening = [m for m in w.messages if m.role in ("system", "user")][:2]
    prompt = opening[0].text if role == "system" else opening[0].content[0]
    first = opening[1] if role == "system" and len(opening) > 1 else opening[0]
    out = {"prompt_role": role, "task_prompt": prompt, "system_prompt": prompt if role == "system" else None,
           "first_message": [p if isinstance(p, str) else p.reference() for p in first.content],
           "tool_names": list(w.tool_names)}
    codec = CODECS.get(str((harness.get("model") or {}).get("api_mode")))
    if codec is not None:
        out["tool_schema"] = codec.tools(w.tool_names)
    return out
