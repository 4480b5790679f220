"""The task prompt, the first message and the reminders a model receives (docs/protocol.md
sections 1-5; paper section 3.1 and Appendix A, "Prompts and budgets").

Four wordings exist (``style``); each is sent in a role (:data:`PROMPT_ROLES`):

``"appendix-a"`` (the default; sent as the first user message, before frame 0)
    One sentence per line, each with a source (docs/protocol.md section 10 lists every sentence with
    it): what the paper's Appendix A ("Prompts and budgets") and section 3.1 say the prompt specifies,
    the two statements an outside audit of the authors' release quotes from the release's prompt
    (interchangeable ids within a group; a triangulated point is a surface point, not the box
    centre), and the ending rule of section 3.1 (a reply without a tool call ends the episode). The
    paper shows its own wording only as a figure, so this is a restatement, not the paper's text. The
    inventory and the calibration are not pasted in: the agent queries them with ``list_entities``
    and ``get_camera_intrinsics`` ("Starting from one RGB image, the agent queries the inventory and
    calibration"). Reminders are neutral.
``"content-list"`` (accepted under its earlier name ``"paper"``; first user message)
    The earlier default: a shorter paraphrase of Appendix A's list, without the statements above
    that it left out and with one sentence of its own ("each of your responses is one call").
``"detailed"`` (sent as the system message)
    This package's fuller wording, the default before the paper's content list was followed: the
    paper's guidance estimates supported by what the images show; in multi-view episodes,
    submit after the first two views, then add and revise while exploring; neutral budget
    reminders (calls and images left, nothing else) before the requests with 10 and 3 model calls
    remaining. With V = 1 the prompt asks for estimates from the initial image and its calibration
    (no triangulation, no "after your first two views"). The first message asks for tool calls and
    says that a response without one ends the episode, so planning happens in the same response as
    the first tool call (the ending rule of docs/protocol.md section 5).
``"legacy"``
    The wording this package used before it followed the paper (an unsubmitted target "scores
    nothing", a reminder that says "submit ... now and call finish_mapping", a first message that
    says "Start by planning"). Only used when a user asks for it by name; the run records it.

Passive mode (fixed views, camera tools disabled) has its own prompt in both styles: it names only
the enabled tools (:data:`PASSIVE_TOOLS`), describes the given views instead of camera moves, and
says so when the views share one camera centre (nothing can be triangulated then).

Blind mode (the blind control: every tool result, no image) keeps each wording and changes only
what would promise an image: the sentences about what the images show, the delivered-JPEG
conversion and "captured images included" give way to :data:`BLIND_NOTE`, a neutral statement that
images are withheld (frame ids and camera poses still come with every frame).

The prompt is built from public data only: the inventory (ids, categories, groups), the search
radius ``r``, the intrinsics and the budgets. It never mentions a score or a target position.
"""

from __future__ import annotations

import json
from typing import Mapping, Sequence

from spatialscout_gym.core.types import ArrayLike3

import numpy as np

from spatialscout_gym.core.camera import Intrinsics
from spatialscout_gym.core.spec import PublicScene
from spatialscout_gym.core.triangulation import MAX_OBSERVATIONS, MIN_BASELINE_M
from spatialscout_gym.episode.tools import (MAX_ROTATION_DEG, MAX_TRANSLATION_M, PITCH_LIMIT_DEG,
                                            SUBMIT_MARGIN_M, TOOL_NAMES, WORLD_BOX_M)
from spatialscout_gym.conversation.images import MAX_SIDE_PX, delivered_size

__all__ = ["task_prompt", "reminder_text", "first_message_text", "passive_baseline_m", "REMINDER_AT",
           "PASSIVE_NOTE", "PROMPT_STYLES", "DEFAULT_PROMPT_STYLE", "CAMERA_TOOLS", "PASSIVE_TOOLS",
           "check_prompt_style", "PROMPT_ROLES", "prompt_role", "PROMPT_STYLE_ALIASES",
           "appendix_a_lines", "BLIND_NOTE"]

REMINDER_AT: tuple[int, ...] = (10, 3)
"""A reminder is inserted before the model request when this many model calls remain, the call
about to be made included (docs/protocol.md section 5)."""

PROMPT_STYLES: tuple[str, ...] = ("appendix-a", "content-list", "detailed", "legacy")
"""Prompt wordings (see the module docstring); ``"appendix-a"`` is the default."""
DEFAULT_PROMPT_STYLE = "appendix-a"
PROMPT_STYLE_ALIASES: dict[str, str] = {"paper": "content-list"}
"""Earlier names still accepted: ``"paper"`` named the content-list wording while it was the default;
a run records the wording's current name."""
PROMPT_ROLES: dict[str, str] = {"appendix-a": "user", "content-list": "user", "detailed": "system",
                                "legacy": "system"}
"""The message role each wording's task prompt is sent in: ``"user"`` (the first user message, with
frame 0 after it, as the paper's "default user prompt") or ``"system"``."""

CAMERA_TOOLS: tuple[str, ...] = ("set_camera_position", "move_camera", "rotate_camera", "capture_image")
"""Tools disabled in passive mode (the views are fixed)."""
PASSIVE_TOOLS: tuple[str, ...] = tuple(n for n in TOOL_NAMES if n not in CAMERA_TOOLS)
"""The tools a passive-mode model receives, in the order of the tool list."""

PASSIVE_NOTE = (
    "PASSIVE MODE: the camera is fixed. You are given a fixed set of views captured along a "
    "scripted path; set_camera_position, move_camera, rotate_camera and capture_image are disabled "
    "and will be refused. Work only from the given frames: mark pixels, triangulate, submit, finish.")
"""The note the legacy wording appended to the active prompt in passive mode (kept for reference;
passive mode now has its own prompt)."""

BLIND_NOTE = ("Images are withheld in this episode: frame 0 and every capture come with their frame id "
              "and camera pose, without the image.")
"""What a blind-mode prompt says of images, in place of any sentence that would promise one."""


def check_prompt_style(style: str) -> str:
    """The wording's name (an earlier name of :data:`PROMPT_STYLE_ALIASES` becomes the current one);
    a readable ``ValueError`` for an unknown name."""
    style = PROMPT_STYLE_ALIASES.get(style, style)
    if style not in PROMPT_STYLES:
        raise ValueError(f"unknown prompt style {style!r}; expected one of {', '.join(PROMPT_STYLES)} "
                         f"(appendix-a: every sentence sourced, as the first user message, the default; "
                         f"content-list: the earlier, shorter paraphrase of the paper's list (also 'paper'); "
                         f"detailed: this package's fuller system prompt; legacy: its earliest wording)")
    return style


def prompt_role(style: str, *, passive: bool = False) -> str:
    """The role (``"user"`` or ``"system"``) the task prompt of ``style`` is sent in. Passive mode
    (this package's extension; the paper's prompt is for active episodes) keeps its own prompt as a
    system message in every style."""
    return "system" if passive else PROMPT_ROLES[check_prompt_style(style)]


def passive_baseline_m(positions: Sequence[ArrayLike3]) -> float:
    """The largest distance between two camera centres (metres): 0 for one view or views taken
    from one point. Triangulation needs more than ``MIN_BASELINE_M`` (5 cm)."""
    pts = np.asarray([np.asarray(p, dtype=float) for p in positions]).reshape(-1, 3)
    if len(pts) < 2:
        return 0.0
    return float(np.max(np.linalg.norm(pts[:, None, :] - pts[None, :, :], axis=-1)))


# ---- shared sections ----------------------------------------------------------------------------
def _inventory(public: PublicScene) -> tuple[list[dict], list[str]]:
    inventory = [e.to_dict() for e in public.inventory]
    groups: dict[str, int] = {}
    for e in inventory:
        groups[e["group"]] = groups.get(e["group"], 0) + 1
    return inventory, sorted(g for g, n in groups.items() if n > 1)


def _frame_sections(public: PublicScene, shared: list[str], *, origin: str) -> list[str]:
    r = float(public.radius_m)
    return [
        f"TASK FRAME (all positions you receive and submit): origin at {origin}; "
        "+x = the initial camera's forward (optical) direction, +y = its left, +z = its up; metres. "
        "If the initial camera is pitched, task +z is tilted from true vertical by the same angle.",
        "TARGET: the centre of the object's world-axis-aligned bounding box (the box around all of its "
        "geometry), not a point on its surface.",
        "GROUPS: targets of the same group are interchangeable for scoring: it does not matter which "
        "id of a group you file a position under, as long as each instance gets one position."
        + (f" Groups with several instances here: {', '.join(shared)}." if shared else ""),
        f"SEARCH RADIUS: every target centre lies within r = {r:.3f} m of the origin; a submission "
        f"with |p| > r + {SUBMIT_MARGIN_M:g} = {r + SUBMIT_MARGIN_M:.3f} m is refused.",
    ]


def _calls_text(model_call_budget: int, budget_counts_tool_calls: bool) -> str:
    return (f"{model_call_budget} tool calls (every tool call counts, refused ones included)"
            if budget_counts_tool_calls else
            f"{model_call_budget} model calls (each of your responses is one call, whatever number of "
            "tool calls it carries)")


def _ending_text(budget_counts_tool_calls: bool) -> str:
    if budget_counts_tool_calls:   # MCP: the server sees tool calls only, never a reply without one
        return ("The episode ends when you call finish_mapping, when B is used up, or when the "
                "connection closes; your last accepted map is what counts, so submit as you go and call "
                "finish_mapping when you are done.")
    text = ("The episode ends when you call finish_mapping (tools after it in the same response are "
            "skipped), when you answer without a tool call, or when B is used up; your last accepted "
            "map is what counts.")
    if not budget_counts_tool_calls:
        text += (f" Reminders of what is left come before the requests with "
                 f"{' and '.join(str(k) for k in REMINDER_AT)} model calls remaining (the call about "
                 "to be made included).")
    return text


def _responses_section(budget_counts_tool_calls: bool) -> list[str]:
    if budget_counts_tool_calls:   # MCP: the client decides when a turn ends
        return []
    return ["", "RESPONSES: every response must carry at least one tool call until you are done: a "
            "response without a tool call ends the episode. Write your reasoning and plans in the same "
            "response as your tool calls. Tool calls in one response run in order before you see "
            "their results."]


def _pixels_section(intrinsics: Intrinsics, max_side: int, blind: bool = False) -> list[str]:
    K = intrinsics
    if blind:   # no image is delivered: the calibration stays, the JPEG conversion goes
        return ["", f"PIXELS: the render grid is {K.width}x{K.height} (fx={K.fx:.3f}, fy={K.fy:.3f}, "
                f"cx={K.cx:.3f}, cy={K.cy:.3f}); pixel (u, v) has u to the right and v down, integers at "
                "pixel centres, origin at the centre of the top-left pixel; triangulate_observations takes "
                "render-grid pixels. " + BLIND_NOTE]
    wd, hd = delivered_size(K.width, K.height, max_side)
    return ["",
            f"PIXELS: the render grid is {K.width}x{K.height} (fx={K.fx:.3f}, fy={K.fy:.3f}, "
            f"cx={K.cx:.3f}, cy={K.cy:.3f}); pixel (u, v) has u to the right and v down, integers at pixel "
            "centres, origin at the centre of the top-left pixel. Images are sent to you as JPEG no "
            f"larger than {max_side} px (here {wd}x{hd}). A point (u_d, v_d) on a delivered image of "
            "size W_d x H_d maps to the render grid by u = (u_d + 0.5) * W / W_d - 0.5, "
            "v = (v_d + 0.5) * H / H_d - 0.5; triangulate_observations takes render-grid pixels. Each "
            "image message repeats the conversion with its numbers."]


_TRIANGULATION = (
    "TRIANGULATION: mark the same physical point in >= 2 frames taken from different positions "
    "(the camera centres must differ by more than 5 cm; wider baselines are more accurate). The "
    "result is a point on the object's SURFACE, not the box centre: reason from it to the centre "
    "(e.g. add half the object's depth away from the camera, or triangulate opposite edges and "
    "average). Heed warnings (small ray angle, large residual). At most "
    f"{MAX_OBSERVATIONS} observations per call.")

def _one_view(single: bool, blind: bool = False) -> str:
    """Estimating without triangulation: the ray of a pixel, and depth from what the image shows."""
    if blind:   # single view only (passive mode has no blind form)
        return ("Estimate each centre from the calibration: pixel (u, v) of frame 0 looks from the origin "
                "along the task-frame direction (1, -(u - cx)/fx, -(v - cy)/fy) (frame 0's camera axes are "
                "the task axes).")
    if single:
        ray = ("Estimate each centre from the initial image and its calibration: pixel (u, v) of frame 0 "
               "looks from the origin along the task-frame direction (1, -(u - cx)/fx, -(v - cy)/fy) "
               "(frame 0's camera axes are the task axes)")
    else:
        ray = ("Estimate each centre from the images and their calibration: pixel (u, v) of a frame looks "
               "from its camera position along (1, -(u - cx)/fx, -(v - cy)/fy) in that camera's "
               "(forward, left, up) axes")
    return (ray + "; judge the distance along that ray from what the image shows (the object's apparent "
            "size, where it meets the floor, what it stands next to).")


def _camera_section(blind: bool = False) -> list[str]:
    capture = ("capture_image records a new frame at the current pose (its image is withheld); moving alone "
               "records no frame." if blind else
               "capture_image renders a new image at the current pose; moving alone gives no image.")
    return ["",
            f"CAMERA MOVES: move_camera translates along the current horizontal forward/right and world "
            f"vertical, at most {MAX_TRANSLATION_M:g} m per call; rotate_camera turns by yaw (positive = "
            f"left, counter-clockwise seen from above) and pitch (positive = up), each at most "
            f"{MAX_ROTATION_DEG:g} degrees per call; pitch is clamped to [-{PITCH_LIMIT_DEG:g}, "
            f"{PITCH_LIMIT_DEG:g}] degrees; roll is always 0; every world coordinate of the camera stays "
            f"within +-{WORLD_BOX_M:g} m. set_camera_position teleports to a task-frame position (yaw "
            "relative to the initial heading, pitch = elevation). A request outside a bound is refused and "
            "nothing moves. The camera passes through objects (no collisions). " + capture]


def _inventory_section(inventory: list[dict]) -> list[str]:
    return ["", f"INVENTORY ({len(inventory)} targets; id, category, group):",
            json.dumps(inventory, separators=(",", ":"))]


# ---- the prompts --------------------------------------------------------------------------------
def task_prompt(public: PublicScene, intrinsics: Intrinsics, *, model_call_budget: int,
                image_budget: int, passive: bool = False, budget_counts_tool_calls: bool = False,
                style: str = DEFAULT_PROMPT_STYLE, max_side: int = MAX_SIDE_PX,
                passive_positions: Mapping[int, ArrayLike3] | None = None, blind: bool = False) -> str:
    """The task prompt: the sourced sentences (``"appendix-a"``), the earlier content list
    (``"content-list"``), or the protocol, the inventory and the budgets (``"detailed"``,
    ``"legacy"``); :func:`prompt_role` says in which role it is sent.

    Parameters
    ----------
    public : PublicScene
        The public half of the scene (inventory, radius).
    intrinsics : Intrinsics
        The render grid the tools use.
    model_call_budget : int
        B, model calls per episode.
    image_budget : int
        V, images per episode including the initial one.
    passive : bool
        Passive mode: its own prompt (fixed views, only :data:`PASSIVE_TOOLS`).
    budget_counts_tool_calls : bool
        B counts tool calls instead of model calls (the MCP server, which cannot see the client's
        model calls).
    style : {"appendix-a", "content-list", "detailed", "legacy"}
        The wording (module docstring; ``"paper"`` means ``"content-list"``).
    max_side : int
        Longest side of a delivered image, pixels (the prompt states it).
    passive_positions : mapping of int to [x, y, z], optional
        Passive mode: camera centre (task frame, metres) of each given frame; the prompt states
        the number of views and whether they allow triangulation.
    blind : bool
        Blind mode: the wording of ``style`` with no sentence that promises an image
        (:data:`BLIND_NOTE` says they are withheld). Not with ``passive``.
    """
    style = check_prompt_style(style)
    if blind and passive:
        raise ValueError("blind and passive are two modes: a prompt is one or the other")
    if style == "legacy":
        return _legacy_prompt(public, intrinsics, model_call_budget=model_call_budget,
                              image_budget=image_budget, passive=passive,
                              budget_counts_tool_calls=budget_counts_tool_calls, max_side=max_side, blind=blind)
    if passive:
        return _passive_prompt(public, intrinsics, model_call_budget=model_call_budget,
                               max_side=max_side, positions=passive_positions or {0: [0.0, 0.0, 0.0]})
    if style == "appendix-a":
        return "\n".join(appendix_a_lines(model_call_budget=model_call_budget, image_budget=image_budget,
                                           budget_counts_tool_calls=budget_counts_tool_calls, blind=blind))
    if style == "content-list":
        return _content_list_prompt(model_call_budget=model_call_budget, image_budget=image_budget,
                                    budget_counts_tool_calls=budget_counts_tool_calls, blind=blind)
    inventory, shared = _inventory(public)
    one_view = int(image_budget) == 1
    lines = ["You are mapping an indoor scene with a camera. Estimate the 3D centre of every target in "
             "the inventory below and submit your estimates with the tools.", ""]
    lines += _frame_sections(public, shared, origin="the initial camera position")
    budgets = (f"BUDGETS: B = {_calls_text(model_call_budget, budget_counts_tool_calls)} and "
               f"V = {image_budget} image{'' if one_view else 's'} (the initial image counts). ")
    if one_view:
        budgets += ("With V = 1 the initial image (frame 0) is the only image of this episode: "
                    "captures are refused, but you can still submit and finish. ")
    else:
        budgets += ("Captures in one response can inform your next response. After V images captures "
                    "are refused (a refused capture uses no image), but you can still triangulate, "
                    "submit and finish. ")
    lines += ["", budgets + _ending_text(budget_counts_tool_calls)]
    lines += _responses_section(budget_counts_tool_calls)
    lines += _camera_section(blind)
    lines += _pixels_section(intrinsics, max_side, blind)
    lines += ["", ("ONE VIEW: triangulate_observations needs marks in two frames taken from different "
                   "positions, so it cannot help here. " + _one_view(True, blind)) if one_view else _TRIANGULATION]
    if blind:
        guidance = ("SUBMISSIONS: give your estimates using the calibration (intrinsics above; frame 0's "
                    "camera is at the origin looking along +x)." if one_view else
                    "SUBMISSIONS: after your first two views, submit estimates for the targets you can "
                    "locate, then add new targets and revise earlier estimates as you explore.")
    elif one_view:
        guidance = ("SUBMISSIONS: give estimates that are supported by what you see in the initial image, "
                    "using its calibration (intrinsics above; frame 0's camera is at the origin looking "
                    "along +x).")
    else:
        guidance = ("SUBMISSIONS: give estimates that are supported by what you see in the images. After "
                    "your first two views, submit estimates for the targets you can locate, then add new "
                    "targets and revise earlier estimates as you explore.")
    guidance += (" Each accepted entry replaces that id's earlier estimate; submit_positions returns "
                 "the whole accepted map, and an empty batch ({}) shows it without changing it.")
    lines += ["", guidance]
    lines += _inventory_section(inventory)
    return "\n".join(lines)


def appendix_a_lines(*, model_call_budget: int, image_budget: int,
                     budget_counts_tool_calls: bool = False, blind: bool = False) -> list[str]:
    """The ``"appendix-a"`` task prompt, one sentence per line; docs/protocol.md section 10 gives
    each sentence's source (a test checks that table against these lines). ``blind``: the three
    sentences that speak of seen images become :data:`BLIND_NOTE`, "from frame 0's pose and its
    calibration" and the same sentence without "captured images included"."""
    multi = int(image_budget) > 1
    calls = "tool calls" if budget_counts_tool_calls else "model calls"
    lines = [
        # paper section 2.1: the task
        "Estimate the 3D centre of every target object in this indoor scene and submit your estimates "
        "with the tools.",
        # Appendix A: the actual model-call and capture budgets; section 3.1: the initial image counts
        f"Budgets: {calls} {model_call_budget}; images {image_budget}, the initial image included.",
        # Appendix A: the fixed task axes (section 2.1 defines them)
        "Task axes, fixed for the whole episode: origin at the initial camera position; +x along its "
        "initial forward (optical) direction, +y to its initial left, +z along its initial up direction; "
        "metres.",
        # Appendix A: the world-AABB centre convention
        "A target's centre is the centre of its world-axis-aligned bounding box.",
        # the release's prompt, as an outside audit quotes it
        "IDs within the same group are interchangeable for scoring, so submit one distinct valid ID per "
        "observed instance without worrying about their order.",
        # the release's prompt and triangulation tool description, per the same audit
        "A point from triangulate_observations is the surface point at the marked pixels, not the centre "
        "of the object's bounding box.",
        # section 3.1: visually supported estimates
        BLIND_NOTE if blind else "Give estimates that are supported by what you see in the images.",
        # section 3.1 (V > 1): submit after the first two views; Appendix A (V = 1)
        ("After your first two views, submit estimates for the targets you can locate, then add new "
         "targets and revise earlier estimates as you explore." if multi else
         "Estimate the centres from frame 0's pose and its calibration." if blind else
         "Estimate the centres from the initial image and its calibration."),
        # section 3.1: submissions return the map; an empty batch inspects it
        "Each submission returns the current accepted map, and an empty submission shows it without "
        "changing it.",
        # Appendix A: actions in one response are specified before their feedback is seen
        "All tool calls in one response are specified before you see any of their results"
        + ("." if blind else ", captured images included."),
        # Appendix A: rejected captures use no image
        "A rejected capture does not use an image.",
    ]
    if budget_counts_tool_calls:   # MCP: the server sees tool calls only, never a reply without one
        lines.append("The episode ends when you call finish_mapping or use up the tool calls, and your last "
                     "accepted map is the one scored.")
    else:   # section 3.1, "Budgets and stopping": the ending rule
        lines += ["A reply without a tool call ends the episode.",
                  "The episode also ends when you call finish_mapping or use up the model calls, and your "
                  "last accepted map is the one scored."]
    return lines


def _content_list_prompt(*, model_call_budget: int, image_budget: int, budget_counts_tool_calls: bool,
                         blind: bool = False) -> str:
    """The earlier default, a paraphrase of the paper's content list (kept verbatim)."""
    one_view = int(image_budget) == 1
    calls = (f"{model_call_budget} tool calls" if budget_counts_tool_calls else
             f"{model_call_budget} model calls (each of your responses is one call)")
    lines = ["Estimate the 3D centre of every target object in this indoor scene and submit your "
             "estimates with the tools.",
             f"Budgets: {calls} and {image_budget} image{'' if one_view else 's'}, the initial image included.",
             "Task axes (fixed for the episode): origin at the initial camera position; +x is the initial "
             "camera's forward direction, +y its left, +z its up; metres.",
             "A target's centre is the centre of its world-axis-aligned bounding box.",
             BLIND_NOTE if blind else "Give estimates that are supported by what you see in the images."]
    if one_view:
        lines.append("Estimate the centres from frame 0's pose and its calibration." if blind else
                     "Estimate the centres from the initial image and its calibration.")
    else:
        lines.append("After your first two views, submit estimates for the targets you can locate, then add "
                     "new targets and revise earlier estimates as you explore.")
    return "\n".join(lines)


def _passive_prompt(public: PublicScene, intrinsics: Intrinsics, *, model_call_budget: int,
                    max_side: int, positions: Mapping[int, ArrayLike3]) -> str:
    inventory, shared = _inventory(public)
    n = len(positions)
    fids = sorted(int(f) for f in positions)
    baseline = passive_baseline_m([positions[f] for f in fids])
    usable = baseline > MIN_BASELINE_M
    lines = [f"You are mapping an indoor scene from {n} fixed image{'s' if n != 1 else ''}. Estimate "
             "the 3D centre of every target in the inventory below and submit your estimates with the "
             "tools.", ""]
    lines += _frame_sections(public, shared, origin="the camera position of frame 0")
    lines += ["",
              f"VIEWS: frames {', '.join(str(f) for f in fids)} are given to you in the first message, "
              "captured along a fixed path (the same for every model); each image states its camera "
              "position and heading. The camera does not move and no other image can be taken.",
              f"TOOLS: {', '.join(PASSIVE_TOOLS)}.",
              "",
              f"BUDGETS: B = {_calls_text(model_call_budget, False)}. " + _ending_text(False)]
    lines += _responses_section(False)
    lines += _pixels_section(intrinsics, max_side)
    if usable:
        lines += ["", _TRIANGULATION.replace(">= 2 frames taken from different positions",
                                             ">= 2 of the given frames taken from different positions")
                  + f" The given camera centres are up to {baseline:.2f} m apart."]
        guidance = ("SUBMISSIONS: give estimates that are supported by what you see in the images: submit "
                    "the targets you can locate, then add the others and revise estimates as you study "
                    "more views.")
    else:
        lines += ["", "NO BASELINE: all given frames were taken from one camera centre, so no point can be "
                  "triangulated. " + _one_view(False)]
        guidance = ("SUBMISSIONS: give estimates that are supported by what you see in the images and "
                    "their calibration.")
    guidance += (" Each accepted entry replaces that id's earlier estimate; submit_positions returns the "
                 "whole accepted map, and an empty batch ({}) shows it without changing it.")
    lines += ["", guidance]
    lines += _inventory_section(inventory)
    return "\n".join(lines)


def first_message_text(*, passive: bool = False, style: str = DEFAULT_PROMPT_STYLE,
                       frames: Sequence[int] = (0,), blind: bool = False) -> str:
    """The text that opens the first user message (the images, or in blind mode frame 0's caption,
    follow it)."""
    style = check_prompt_style(style)
    initial = ("Here is frame 0, taken at the task-frame origin; its image is withheld." if blind else
               "Here is the initial image (frame 0), taken at the task-frame origin.")
    if style == "legacy":
        intro = "Here are the fixed views of this episode." if passive else initial
        return intro + " Start by planning; call list_entities if you want the inventory and budgets again."
    if passive:
        intro = f"Here are the fixed views of this episode (frames {', '.join(str(f) for f in frames)})."
    else:
        intro = initial
        if style in ("appendix-a", "content-list"):
            return intro
    return (intro + " Answer with tool calls; write your plan in the same response. A response without a "
            "tool call ends the episode.")


def reminder_text(calls_left: int, images_left: int, submitted: int, inventory: int, *,
                  style: str = DEFAULT_PROMPT_STYLE) -> str:
    """The reminder inserted before a request when ``calls_left`` (this one included) is in
    :data:`REMINDER_AT`.

    The paper's reminder is neutral: what is left, no advice. ``submitted`` and ``inventory`` are
    used by the legacy wording only.
    """
    style = check_prompt_style(style)
    if style == "legacy":
        return (f"REMINDER: {calls_left} model calls remain, this one included ({images_left} images "
                f"left). Your accepted map holds {submitted} of {inventory} targets. Submit your best "
                f"estimates for every target now and call finish_mapping before the budget runs out.")
    return (f"REMINDER: {calls_left} model calls remain, this one included; {images_left} images "
            f"remain.")


def _legacy_prompt(public: PublicScene, intrinsics: Intrinsics, *, model_call_budget: int,
                   image_budget: int, passive: bool, budget_counts_tool_calls: bool, max_side: int,
                   blind: bool = False) -> str:
    """The wording before the paper's guidance was followed (kept verbatim for ``style="legacy"``)."""
    K = intrinsics
    wd, hd = delivered_size(K.width, K.height, max_side)
    r = float(public.radius_m)
    inventory, shared = _inventory(public)
    calls = _calls_text(model_call_budget, budget_counts_tool_calls)
    lines = [
        "You are mapping an indoor scene with a camera. Estimate the 3D centre of every target in "
        "the inventory below and submit it with the tools.",
        "",
        "TASK FRAME (all positions you receive and submit): origin at the initial camera position; "
        "+x = the initial camera's forward (optical) direction, +y = its left, +z = its up; metres. "
        "If the initial camera is pitched, task +z is tilted from true vertical by the same angle.",
        "TARGET: the centre of the object's world-axis-aligned bounding box (the box around all of its "
        "geometry), not a point on its surface.",
        "GROUPS: targets of the same group are interchangeable for scoring: it does not matter which "
        "id of a group you file a position under, as long as each instance gets one position."
        + (f" Groups with several instances here: {', '.join(shared)}." if shared else ""),
        f"SEARCH RADIUS: every target centre lies within r = {r:.3f} m of the origin; a submission "
        f"with |p| > r + {SUBMIT_MARGIN_M:g} = {r + SUBMIT_MARGIN_M:.3f} m is refused.",
        "",
        f"BUDGETS: B = {calls} and V = {image_budget} images (the initial image counts). "
        "Tool calls in one response run in order. After V images captures are refused, but you can "
        "still triangulate, submit and finish. The episode ends when you call finish_mapping (tools "
        "after it in the same response are skipped), when you answer without a tool call, or when "
        "B is used up; your last accepted map is what counts.",
        "",
        f"CAMERA MOVES: move_camera translates along the current horizontal forward/right and world "
        f"vertical, at most {MAX_TRANSLATION_M:g} m per call; rotate_camera turns by yaw (positive = "
        f"left, counter-clockwise seen from above) and pitch (positive = up), each at most "
        f"{MAX_ROTATION_DEG:g} degrees per call; pitch is clamped to [-{PITCH_LIMIT_DEG:g}, "
        f"{PITCH_LIMIT_DEG:g}] degrees; roll is always 0; every world coordinate of the camera stays "
        f"within +-{WORLD_BOX_M:g} m. set_camera_position teleports to a task-frame position (yaw "
        "relative to the initial heading, pitch = elevation). A request outside a bound is refused and "
        "nothing moves. The camera passes through objects (no collisions).",
        "",
        f"PIXELS: the render grid is {K.width}x{K.height} (fx={K.fx:.3f}, fy={K.fy:.3f}, "
        f"cx={K.cx:.3f}, cy={K.cy:.3f}); pixel (u, v) has u to the right and v down, integers at pixel "
        "centres, origin at the centre of the top-left pixel. Images are sent to you as JPEG no "
        f"larger than {max_side} px (here {wd}x{hd}). A point (u_d, v_d) on a delivered image of "
        "size W_d x H_d maps to the render grid by u = (u_d + 0.5) * W / W_d - 0.5, "
        "v = (v_d + 0.5) * H / H_d - 0.5; triangulate_observations takes render-grid pixels. Each "
        "image message repeats the conversion with its numbers.",
        "",
        "TRIANGULATION: mark the same physical point in >= 2 frames taken from different positions "
        "(the camera centres must differ by more than 5 cm; wider baselines are more accurate). The "
        "result is a point on the object's SURFACE, not the box centre: reason from it to the centre "
        "(e.g. add half the object's depth away from the camera, or triangulate opposite edges and "
        "average). Heed warnings (small ray angle, large residual).",
        "",
        "STRATEGY: submit estimates for every target you can after your first two views, then add "
        "new targets and revise earlier ones as you see more. Submissions add or replace entries; an "
        "unsubmitted target scores nothing, so keep the map complete before the budget runs out.",
    ]
    if passive:
        lines += ["", PASSIVE_NOTE]
    if blind:   # the PIXELS paragraph without the delivered JPEG (the rest is kept verbatim)
        at = next(i for i, line in enumerate(lines) if line.startswith("PIXELS:"))
        lines[at] = _pixels_section(intrinsics, max_side, blind=True)[1]
    lines += _inventory_section(inventory)
    return "\n".join(lines)
