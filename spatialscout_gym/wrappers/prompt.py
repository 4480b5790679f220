"""The task prompt and the reminders a model receives (docs/protocol.md sections 1-5).

The prompt is built from public data only: the inventory (ids, categories, groups), the search
radius ``r``, the intrinsics and the budgets. It never mentions a score or a target position.
"""

from __future__ import annotations

import json

from spatialscout_gym.core.camera import Intrinsics
from spatialscout_gym.core.spec import PublicScene
from spatialscout_gym.episode.tools import (MAX_OBSERVATIONS, MAX_ROTATION_DEG, MAX_TRANSLATION_M,
                                            PITCH_LIMIT_DEG, SUBMIT_MARGIN_M, WORLD_BOX_M)
from spatialscout_gym.wrappers.images import MAX_SIDE_PX, delivered_size

__all__ = ["task_prompt", "reminder_text", "REMINDER_AT", "PASSIVE_NOTE"]

REMINDER_AT: tuple[int, ...] = (10, 3)
"""A reminder is inserted before the model request when this many model calls remain."""

PASSIVE_NOTE = (
    "PASSIVE MODE: the camera is fixed. You are given a fixed set of views captured along a "
    "scripted path; set_camera_position, move_camera, rotate_camera and capture_image are disabled "
    "and will be refused. Work only from the given frames: mark pixels, triangulate, submit, finish.")


def task_prompt(public: PublicScene, intrinsics: Intrinsics, *, model_call_budget: int,
                image_budget: int, passive: bool = False, budget_counts_tool_calls: bool = False) -> str:
    """The system prompt: the protocol, the inventory and the budgets.

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
        Add the passive-mode note (camera tools disabled).
    budget_counts_tool_calls : bool
        B counts tool calls instead of model calls, and the ending rule is worded for a tool
        server (the MCP server, which cannot see the client's model calls or its text replies).
    """
    K = intrinsics
    wd, hd = delivered_size(K.width, K.height)
    r = float(public.radius_m)
    inventory = [e.to_dict() for e in public.inventory]
    groups: dict[str, int] = {}
    for e in inventory:
        groups[e["group"]] = groups.get(e["group"], 0) + 1
    shared = sorted(g for g, n in groups.items() if n > 1)
    calls = (f"{model_call_budget} tool calls (every tool call counts, refused ones included)"
             if budget_counts_tool_calls else
             f"{model_call_budget} model calls (each of your responses is one call, whatever number of "
             "tool calls it carries)")
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
        + ("Tool calls run in the order you make them. After V images captures are refused, but you "
           "can still triangulate, submit and finish. The episode ends when you call finish_mapping "
           "or when B is used up (or when the connection closes); your last accepted map is what "
           "counts, so submit as you go and call finish_mapping when you are done."
           if budget_counts_tool_calls else  # the MCP server: no 'response without a tool call' there
           "Tool calls in one response run in order. After V images captures are refused, but you can "
           "still triangulate, submit and finish. The episode ends when you call finish_mapping (tools "
           "after it in the same response are skipped), when you answer without a tool call, or when "
           "B is used up; your last accepted map is what counts."),
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
        f"larger than {MAX_SIDE_PX} px (here {wd}x{hd}). A point (u_d, v_d) on a delivered image of "
        "size W_d x H_d maps to the render grid by u = (u_d + 0.5) * W / W_d - 0.5, "
        "v = (v_d + 0.5) * H / H_d - 0.5; triangulate_observations takes render-grid pixels. Each "
        "image message repeats the conversion with its numbers.",
        "",
        f"TRIANGULATION: mark the same physical point in 2 to {MAX_OBSERVATIONS} frames taken from "
        "different positions "
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
    lines += ["", f"INVENTORY ({len(inventory)} targets; id, category, group):",
              json.dumps(inventory, separators=(",", ":"))]
    return "\n".join(lines)


def reminder_text(calls_left: int, images_left: int, submitted: int, inventory: int) -> str:
    """The reminder inserted before a request when ``calls_left`` (this one included) is in
    :data:`REMINDER_AT`."""
    return (f"REMINDER: {calls_left} model calls remain, this one included ({images_left} images "
            f"left). Your accepted map holds {submitted} of {inventory} targets. Submit your best "
            f"estimates for every target now and call finish_mapping before the budget runs out.")
