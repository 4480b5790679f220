"""Pictures of a scene for people to look at: the initial view, an 8-view
panorama and a labelled top-down map of the targets' boxes. Reusable for run reports.

matplotlib is imported inside :func:`topdown_map` only.
"""

from __future__ import annotations

from pathlib import Path

from PIL import Image, ImageDraw

from spatialscout_gym.core.frames import CameraPose, wrap_degrees
from spatialscout_gym.core.renderer_api import Renderer
from spatialscout_gym.core.spec import SceneSpec

__all__ = ["panorama_poses", "panorama", "topdown_map", "task_axes_xy", "write_scene_pictures"]


def panorama_poses(initial: CameraPose, n_views: int = 8) -> list[CameraPose]:
    """``n_views`` poses at the initial position, yaw stepping by ``360 / n_views`` degrees
    (counter-clockwise, starting at the initial heading), pitch 0."""
    step = 360.0 / n_views
    return [CameraPose(initial.position_world, wrap_degrees(initial.yaw_deg + k * step), 0.0)
            for k in range(n_views)]


def panorama(renderer: Renderer, initial: CameraPose, n_views: int = 8, columns: int = 4,
             tile_px: int = 256) -> Image.Image:
    """Tile ``n_views`` renders into one labelled image (``columns`` per row, each ``tile_px``
    wide); labels give the yaw relative to the initial heading."""
    tiles = []
    for k, pose in enumerate(panorama_poses(initial, n_views)):
        img = Image.fromarray(renderer.capture_rgb(pose))
        img = img.resize((tile_px, round(tile_px * img.height / img.width)), Image.Resampling.BILINEAR)
        draw = ImageDraw.Draw(img)
        label = f"yaw {k * 360.0 / n_views:+.0f} deg"
        draw.rectangle([0, 0, 8 + 7 * len(label), 16], fill=(0, 0, 0))
        draw.text((4, 2), label, fill=(255, 255, 255))
        tiles.append(img)
    rows = -(-n_views // columns)
    w, h = tiles[0].size
    out = Image.new("RGB", (columns * w, rows * h), (0, 0, 0))
    for k, t in enumerate(tiles):
        out.paste(t, ((k % columns) * w, (k // columns) * h))
    return out


def task_axes_xy(spec: SceneSpec) -> dict[str, list[float]]:
    """The task frame seen from above (docs/protocol.md section 2): its origin (the initial camera)
    and its +x (initial forward) and +y (initial left) unit directions projected onto the world
    x-y plane, each as ``[x, y]`` in world metres. Predictions and tool poses are task coordinates;
    these axes let a reader of a world top-down map read them."""
    import numpy as np
    cam = spec.public.initial_camera
    R = cam.R_world_cam
    out = {"origin": [float(cam.position_world[0]), float(cam.position_world[1])]}
    for name, col in (("x", R[:, 0]), ("y", R[:, 1])):
        d = np.asarray(col[:2], dtype=float)
        n = float(np.linalg.norm(d))
        out[name] = (d / n).tolist() if n > 1e-9 else [0.0, 0.0]
    return out


def topdown_map(spec: SceneSpec, path: str | Path, dpi: int = 110) -> dict:
    """Write a top-down (world x right, y up) map: static geometry outlines in grey, each target's
    AABB as a labelled rectangle, the initial camera and its heading as an arrow, and the task
    frame's x and y axes (dashed, ticked every metre up to ``r``) so that task-frame predictions
    can be read off it. Returns ``{"task_axes": task_axes_xy(spec), "labels": [texts drawn]}``."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import Rectangle

    fig, ax = plt.subplots(figsize=(9, 9))
    for obj in spec.private.objects:
        if obj.role != "static":
            continue
        lo, hi = obj.aabb_world
        ax.add_patch(Rectangle((float(lo[0]), float(lo[1])), *(hi - lo)[:2], fill=True, facecolor=(0.9, 0.9, 0.9),
                               edgecolor=(0.55, 0.55, 0.55), lw=0.8, zorder=1))
    cmap = plt.get_cmap("tab20")
    for k, t in enumerate(spec.targets):
        color = cmap(k % 20)
        ax.add_patch(Rectangle((float(t.box_min[0]), float(t.box_min[1])), *t.size[:2], fill=False, edgecolor=color, lw=1.5, zorder=3))
        ax.text(t.box_max[0], t.box_max[1], t.id, fontsize=6, color=color, zorder=4)
    cam = spec.public.initial_camera
    p, f = cam.position_world, cam.horizontal_forward_world
    ax.plot(p[0], p[1], "ko", ms=7, zorder=5)  # a dot, so the arrow alone shows the heading
    ax.annotate("", xy=(p[0] + 0.6 * f[0], p[1] + 0.6 * f[1]), xytext=(p[0], p[1]),
                arrowprops={"arrowstyle": "->", "lw": 2}, zorder=5)
    ax.text(p[0], p[1] - 0.25, "initial camera", fontsize=7, ha="center")
    axes = task_axes_xy(spec)
    o = axes["origin"]
    reach = max(1.0, float(spec.public.radius_m))
    for name, axis_color in (("x", (0.8, 0.1, 0.1)), ("y", (0.1, 0.5, 0.1))):
        d = axes[name]
        ax.plot([o[0] - reach * d[0], o[0] + reach * d[0]], [o[1] - reach * d[1], o[1] + reach * d[1]],
                ls="--", lw=1.2, color=axis_color, zorder=2)
        for m in range(-int(reach), int(reach) + 1):
            if m:
                ax.text(o[0] + m * d[0], o[1] + m * d[1], f"{m:+d}", fontsize=5, color=axis_color,
                        ha="center", va="center", zorder=2)
        ax.text(o[0] + reach * d[0], o[1] + reach * d[1], f"task +{name}", fontsize=7, color=axis_color,
                fontweight="bold", zorder=4)
    ax.set_aspect("equal")
    ax.autoscale_view()
    ax.set_xlabel("world x (m)")
    ax.set_ylabel("world y (m)")
    ax.set_title(f"{spec.scene_id}: {len(spec.targets)} targets (boxes from above); dashed: task-frame "
                 f"x/y axes, ticks in metres", fontsize=9)
    ax.grid(True, lw=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=dpi)
    labels = [t.get_text() for t in ax.texts]
    plt.close(fig)
    return {"task_axes": axes, "labels": labels}


def write_scene_pictures(spec: SceneSpec, renderer: Renderer, out_dir: str | Path) -> dict[str, Path]:
    """Write ``initial.png``, ``panorama.png`` and ``topdown.png`` to ``out_dir``; return their paths."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = {"initial": out / "initial.png", "panorama": out / "panorama.png", "topdown": out / "topdown.png"}
    Image.fromarray(renderer.capture_rgb(spec.public.initial_camera)).save(paths["initial"])
    panorama(renderer, spec.public.initial_camera).save(paths["panorama"])
    topdown_map(spec, paths["topdown"])
    return paths
