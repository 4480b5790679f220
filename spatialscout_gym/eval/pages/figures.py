"""Pictures of an evaluation: Figure-4 views and an HTML page.

:func:`scene_figure` renders, with SAPIEN, two versions of a scene seen from the initial camera
position at the initial yaw and at +-55 deg (paper Figure 4):

* top row, **reference**: the scene as it is;
* bottom row, **prediction**: every target moved so that its box centre sits on the submitted
  centre *matched to it* by the scorer's distance assignment (``c_world = o0 + R0 p_hat``;
  position-matched, as in the paper: a prediction filed under a sibling's id in the same group
  moves the target it was matched to); targets without a matched submission are hidden.

Two styles:

* ``"meshes"`` (default, the paper's): each target's own mesh, shape and orientation kept, in the
  full textured scene (:func:`mesh_scene`); in the prediction row the silhouette of each target
  is outlined in a colour from red (IoU 0) through yellow to green (IoU 1) and labelled with its
  IoU. Needs the scene spec (rebuilt from the catalog or generator); without it the box style is
  used.
* ``"boxes"``: each target's reference box (world AABB, sides floored at 1 cm), one colour per
  target, inside the static geometry drawn in light grey (:func:`box_scene`).

:func:`write_index_html` writes ``DIR/index.html`` with the report tables, the replay curves and
these figures, all by relative links.
"""

from __future__ import annotations

import colorsys
import dataclasses
import html
import os
from pathlib import Path
from typing import Any, Mapping

import numpy as np
from PIL import Image, ImageDraw

from spatialscout_gym.core.camera import Intrinsics, project_world_to_pixel
from spatialscout_gym.core.files import load_ground_truth, load_predictions
from spatialscout_gym.core.frames import CameraPose, wrap_degrees
from spatialscout_gym.core.types import ArrayLike3
from spatialscout_gym.core.scoring import MIN_SIDE_M, GroundTruth
from spatialscout_gym.core.spec import Light, Material, Part, PrivateScene, PublicScene, SceneObject, SceneSpec
from spatialscout_gym.core.run_files import ENTITY_LIBRARY_FILE, RESULT_FILE
from spatialscout_gym.core.eval_records import ReportRecord
from spatialscout_gym.core.records import RunRecord
from spatialscout_gym.eval.layout import (EvalDir, EvalDirError, read_json_object,
                                          read_record, read_scene_args)

__all__ = ["VIEW_YAWS_DEG", "box_scene", "mesh_scene", "scene_figure", "write_run_figures", "write_run_figure",
           "write_index_html", "target_colors", "iou_color", "STYLES"]

STYLES: tuple[str, ...] = ("meshes", "boxes")

VIEW_YAWS_DEG: tuple[float, ...] = (55.0, 0.0, -55.0)
"""View yaws relative to the initial heading, left to right (positive turns left), degrees."""
VIEW_PITCH_DEG = -20.0
VIEW_FOV_Y_DEG = 80.0
_STATIC_COLOR = (0.72, 0.72, 0.70, 1.0)


def target_colors(n: int) -> np.ndarray:
    """``n`` well-separated saturated RGB colours in [0, 1], shape (n, 3) (golden-ratio hues)."""
    return np.array([colorsys.hsv_to_rgb((0.13 + 0.618034 * k) % 1.0, 0.85 if k % 2 else 0.65,
                                         0.95 if k % 3 else 0.75) for k in range(n)])


def _floor(gt: GroundTruth) -> SceneObject:
    """A grey floor slab under the targets, for scenes whose static geometry is unavailable."""
    lo = np.min([t.box_min for t in gt.targets], axis=0)
    hi = np.max([t.box_max for t in gt.targets], axis=0)
    center = np.array([(lo[0] + hi[0]) / 2, (lo[1] + hi[1]) / 2, lo[2] - 0.02])
    half = np.array([(hi[0] - lo[0]) / 2 + 3.0, (hi[1] - lo[1]) / 2 + 3.0, 0.02])
    return SceneObject("floor", "Floor", "floor", "static",
                       [Part("box", center, half_size=half, material=Material(_STATIC_COLOR, 0.9))])


def box_scene(public: PublicScene, gt: GroundTruth, centers_world: dict[str, np.ndarray],
              colors: dict[str, np.ndarray], static: SceneSpec | None = None) -> SceneSpec:
    """A renderable spec of coloured boxes.

    Parameters
    ----------
    public : PublicScene
        The scene's public half (initial camera).
    gt : GroundTruth
        Reference boxes (world AABBs; sides floored at 1 cm here).
    centers_world : dict of str to ndarray, shape (3,)
        Target id -> world centre of its box, metres (ids left out are not drawn).
    colors : dict of str to ndarray, shape (3,)
        RGB in [0, 1] per target id.
    static : SceneSpec, optional
        The full scene; its static objects (walls, floors, fixed furniture) and lights are drawn
        in light grey. Without it, a floor slab under the targets and default lights are used.
    """
    sizes = {t.id: np.maximum(t.size, MIN_SIDE_M) for t in gt.targets}
    objects = []
    if static is not None:
        for o in static.private.objects:
            if o.role == "static":
                parts = [dataclasses.replace(p, material=Material(_STATIC_COLOR, 0.9)) for p in o.parts]
                objects.append(SceneObject(o.id, o.category, o.group, "static", parts, o.movable, o.room))
        lights = static.private.lights
    else:
        objects.append(_floor(gt))
        lights = [Light("directional", (1.5, 1.5, 1.5), direction_world=np.array([0.3, 0.2, -1.0])),
                  Light("directional", (0.6, 0.6, 0.6), direction_world=np.array([-0.4, -0.3, -1.0]))]
    for tid, c in centers_world.items():
        rgb = tuple(float(x) for x in colors[tid])
        objects.append(SceneObject(f"box::{tid}", "Box", "box", "static",
                                   [Part("box", np.asarray(c, float), half_size=sizes[tid] / 2,
                                         material=Material((float(rgb[0]), float(rgb[1]), float(rgb[2]), 1.0), 0.6))]))
    pub = dataclasses.replace(public)
    return SceneSpec(pub, PrivateScene(objects, list(lights), (0.55, 0.55, 0.55), {}))


def _label(img: Image.Image, text: str, xy=(4, 3)) -> None:
    d = ImageDraw.Draw(img)
    d.rectangle([xy[0] - 3, xy[1] - 2, xy[0] + 6 * len(text) + 4, xy[1] + 12], fill=(0, 0, 0))
    d.text(xy, text, fill=(255, 255, 255))


def _annotate_ids(img: Image.Image, K: Intrinsics, pose: CameraPose, centers: dict[str, np.ndarray],
                  colors: dict[str, np.ndarray]) -> None:
    if not centers:
        return
    ids = list(centers)
    uv, depth = project_world_to_pixel(K, pose, np.array([centers[i] for i in ids]))
    d = ImageDraw.Draw(img)
    for tid, (u, v), z in zip(ids, np.asarray(uv), np.asarray(depth)):
        if z > 0.05 and 0 <= u < K.width - 20 and 12 <= v < K.height:
            c = tuple(int(255 * x) for x in colors[tid])
            d.text((float(u) + 1, float(v) - 11), tid, fill=(0, 0, 0))
            d.text((float(u), float(v) - 12), tid, fill=c if sum(c) < 600 else (60, 60, 60))


def mesh_scene(spec: SceneSpec, centers_world: dict[str, np.ndarray],
               reference_world: dict[str, np.ndarray] | None = None) -> SceneSpec:
    """``spec`` with each target's own mesh moved so that its box centre sits on
    ``centers_world[target id]`` (metres); targets not in ``centers_world`` are hidden (role
    ``"hidden"``, never rendered). The box centre is ``reference_world[target id]`` when given
    (the ground truth's, e.g. for imported meshes whose vertices are not loaded), else the world
    AABB centre of the target's parts. Static objects, lights and the public half are kept. The
    object table keeps its order, so a privileged capture's segmentation still indexes it."""
    objects = []
    for o in spec.private.objects:
        if o.role != "target":
            objects.append(o)
            continue
        if o.id not in centers_world:
            objects.append(dataclasses.replace(o, role="hidden"))
            continue
        if reference_world is not None and o.id in reference_world:
            centre = np.asarray(reference_world[o.id], float)
        else:
            lo, hi = o.aabb_world
            centre = (lo + hi) / 2
        shift = np.asarray(centers_world[o.id], float) - centre
        parts = [dataclasses.replace(p, position_world=np.asarray(p.position_world, float) + shift) for p in o.parts]
        objects.append(dataclasses.replace(o, parts=parts))
    return SceneSpec(spec.public, dataclasses.replace(spec.private, objects=objects))


def iou_color(iou: float) -> tuple[int, int, int]:
    """RGB (0-255) from red (IoU 0) through yellow (0.5) to green (1)."""
    q = float(np.clip(iou, 0.0, 1.0))
    return (255, int(round(255 * min(1.0, 2 * q))), 0) if q < 0.5 else (int(round(255 * (2 - 2 * q))), 200, 0)


def _outline_by_iou(img: Image.Image, segmentation: np.ndarray, index: dict[int, str], iou: dict[str, float],
                    K: Intrinsics, pose: CameraPose, centers: dict[str, np.ndarray]) -> None:
    """Outline each target's silhouette (privileged segmentation) in :func:`iou_color` and write
    its IoU next to its centre."""
    from scipy.ndimage import binary_dilation
    px = np.asarray(img).copy()
    for obj, tid in index.items():
        mask = segmentation == obj
        if not mask.any():
            continue
        edge = binary_dilation(mask, iterations=1) & ~mask
        px[edge] = iou_color(iou[tid])
    img.paste(Image.fromarray(px))
    obj_of = {tid: obj for obj, tid in index.items()}
    ids = [t for t in centers if t in obj_of and (segmentation == obj_of[t]).any()]
    if not ids:
        return
    uv, depth = project_world_to_pixel(K, pose, np.array([centers[i] for i in ids]))
    d = ImageDraw.Draw(img)
    for tid, (u, v), z in zip(ids, np.asarray(uv), np.asarray(depth)):
        if z > 0.05 and 0 <= u < K.width - 20 and 12 <= v < K.height:
            d.text((float(u) + 1, float(v) - 5), f"{iou[tid]:.2f}", fill=(0, 0, 0))
            d.text((float(u), float(v) - 6), f"{iou[tid]:.2f}", fill=iou_color(iou[tid]))


def scene_figure(public: PublicScene, gt: GroundTruth, positions_task: Mapping[str, ArrayLike3],
                 static: SceneSpec | None = None, renderer: Any = None, tile_px: int = 320,
                 style: str = "meshes") -> Image.Image:
    """The two-row, three-column Figure-4 picture of one scene (see the module docstring).

    Parameters
    ----------
    public : PublicScene
        The scene's public half (``entity_library.json``): the initial camera.
    gt : GroundTruth
        The reference boxes (``ground_truth.json``).
    positions_task : dict of str to array_like, shape (3,)
        The final accepted map, task frame, metres.
    static : SceneSpec, optional
        The full scene: its meshes (style ``"meshes"``) or its static geometry (``"boxes"``).
        Without it the boxes are drawn on a floor slab.
    renderer : SapienRenderer, optional
        Reused (``set_scene``) when given; must render ``tile_px`` square images.
    tile_px : int
        Side of one view, pixels.
    style : {"meshes", "boxes"}
    """
    from spatialscout_gym.core.scoring import score_scene
    if style not in STYLES:
        raise ValueError(f"style must be one of {STYLES}, got {style!r}")
    meshes = style == "meshes" and static is not None
    ids = list(gt.ids)
    colors = dict(zip(ids, target_colors(len(ids))))
    ref = {t.id: (t.box_min + t.box_max) / 2 for t in gt.targets}
    score = score_scene(gt, positions_task)
    # position-matched: target i goes to the prediction the distance assignment matched to it
    pred = {tid: gt.origin + gt.R_world_task @ np.asarray(positions_task[mid], float)
            for tid, mid in zip(ids, score.matched_id) if mid is not None}
    iou = {tid: float(q) for tid, q in zip(ids, score.iou)}
    K = Intrinsics.from_fov(tile_px, tile_px, VIEW_FOV_Y_DEG)
    public = dataclasses.replace(public, intrinsics=K)
    cam = public.initial_camera
    poses = [CameraPose(cam.position_world, wrap_degrees(cam.yaw_deg + dy), VIEW_PITCH_DEG) for dy in VIEW_YAWS_DEG]
    owns = renderer is None
    rows = []
    try:
        for r, (name, centers) in enumerate((("reference", ref), (f"predicted ({len(pred)}/{len(ids)} matched)", pred))):
            if meshes:
                assert static is not None
                s = mesh_scene(SceneSpec(public, static.private), centers, ref)
                index = {i: o.id for i, o in enumerate(s.private.objects) if o.role == "target"}
            else:
                s = box_scene(public, gt, centers, colors, static)
            if renderer is None:
                from spatialscout_gym.render.sapien_renderer import SapienRenderer
                renderer = SapienRenderer(s, tile_px, tile_px)
            else:
                renderer.set_scene(s)
            tiles = []
            for dy, pose in zip(VIEW_YAWS_DEG, poses):
                img = Image.fromarray(renderer.capture_rgb(pose))
                if meshes and r == 1:
                    _outline_by_iou(img, np.asarray(renderer.capture_privileged(pose).segmentation), index,
                                    iou, K, pose, centers)
                elif not meshes:
                    _annotate_ids(img, K, pose, centers, colors)
                _label(img, f"{name}, yaw {dy:+.0f} deg")
                tiles.append(img)
            rows.append(tiles)
    finally:
        if owns and renderer is not None:
            renderer.close()
    if meshes:
        title = [f"{gt.scene_id}: top, the reference scene; bottom, each target's own mesh at the submitted",
                 "centre matched to it (omitted targets hidden), outlined by IoU: red 0, yellow 0.5, green 1"]
    else:
        note = "" if static is not None else " [room geometry unavailable: floor only]"
        title = [f"{gt.scene_id}: top, reference boxes in place; bottom, the same boxes at the submitted",
                 f"centres matched to them (omitted targets hidden){note}"]
    head = 8 + 12 * len(title)
    out = Image.new("RGB", (3 * tile_px + 8, 2 * tile_px + 4 + head), (255, 255, 255))
    ImageDraw.Draw(out).multiline_text((6, 4), "\n".join(title), fill=(0, 0, 0), spacing=2)
    for r, tiles in enumerate(rows):
        for c, t in enumerate(tiles):
            out.paste(t, (c * (tile_px + 4), head + r * (tile_px + 4)))
    return out


def _resolve_run_scene(run_dir: Path, result: RunRecord, scene_args: dict[str, str]) -> SceneSpec | None:
    """The run's scene when it can be rebuilt exactly (verify's rule), else None: boxes are drawn."""
    from spatialscout_gym.eval.running.runner import SceneNotRecoverable, resolve_recorded_scene
    try:
        return resolve_recorded_scene(run_dir, result, scene_args)
    except SceneNotRecoverable:
        return None


_run_key = EvalDir.key_of


def _figure_of_run(d: Path, result: RunRecord, scene_args: dict[str, str], renderer: Any, tile_px: int,
                   style: str) -> tuple[Image.Image, Any, bool]:
    """Figure of one run directory; returns (image, renderer, room geometry found)."""
    spec = _resolve_run_scene(d, result, scene_args)
    gt = load_ground_truth(d)
    library = d / ENTITY_LIBRARY_FILE
    try:
        public = PublicScene.from_dict(read_json_object(library))
    except (KeyError, TypeError, ValueError, IndexError) as exc:
        if isinstance(exc, EvalDirError):
            raise
        raise EvalDirError(f"{library}: not a valid entity library ({type(exc).__name__}: {exc}); the file "
                           "is corrupted or was edited") from None
    positions = load_predictions(d, gt)
    if renderer is None:
        from spatialscout_gym.render.sapien_renderer import SapienRenderer
        K = Intrinsics.from_fov(tile_px, tile_px, VIEW_FOV_Y_DEG)
        renderer = SapienRenderer(box_scene(dataclasses.replace(public, intrinsics=K), gt, {}, {}),
                                  tile_px, tile_px)
    return scene_figure(public, gt, positions, spec, renderer, tile_px, style), renderer, spec is not None


def write_run_figure(run_dir: str | os.PathLike, path: str | os.PathLike, *, tile_px: int = 320,
                     eval_dir: str | os.PathLike | None = None, style: str = "meshes",
                     renderer: Any = None) -> tuple[Path, Any]:
    """Write the Figure-4 picture of one finished run directory to ``path`` (PNG).

    ``eval_dir`` (its ``scenes.json``) helps rebuild the scene spec from the scene argument.
    ``renderer`` (a ``tile_px`` square SapienRenderer) is reused when given, else one is built;
    the renderer is returned, open, for the next figure (the first capture of a new renderer
    compiles its shaders, seconds on lavapipe). Returns ``(path, renderer)``; the caller closes it.
    """
    d = Path(run_dir)
    result = read_record(d / RESULT_FILE)
    if result.status == "failed":
        raise ValueError(f"{d} is a failed episode (no map to draw); choose a completed run directory")
    img, renderer, _ = _figure_of_run(d, result, {} if eval_dir is None else read_scene_args(eval_dir),
                                      renderer, tile_px, style)
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    img.save(out)
    return out, renderer


def write_run_figures(out_dir: str | os.PathLike, tile_px: int = 320, seed: int | None = None,
                      style: str = "meshes") -> dict[str, Path]:
    """Write ``DIR/figures/<scene dir>__seed_<k>.png`` for every finished run (only ``seed`` when
    given; failed episodes are skipped). Targets and the initial camera come from the run's
    ``ground_truth.json`` and ``entity_library.json``; meshes and room geometry from the rebuilt
    scene spec when its content hash matches the recorded one, else boxes on a floor slab are
    drawn instead (listed in ``figures/no_room_geometry.txt``). Returns ``{run key: png path}``."""
    out = Path(out_dir)
    fig_dir = out / "figures"
    fig_dir.mkdir(parents=True, exist_ok=True)
    scene_args = read_scene_args(out)
    runs = EvalDir(out).run_dirs()
    written: dict[str, Path] = {}
    skipped = []
    renderer = None
    try:
        for d in runs:
            result = read_record(d / RESULT_FILE)
            if result.status == "failed":   # no ground truth: left out (docs/protocol.md section 5)
                continue
            if seed is not None and result.seed != seed:
                continue
            key = _run_key(d)
            img, renderer, found = _figure_of_run(d, result, scene_args, renderer, tile_px, style)
            if not found:
                skipped.append(key)
            path = fig_dir / (key.replace("/", "__") + ".png")
            img.save(path)
            written[key] = path
    finally:
        if renderer is not None:
            renderer.close()
    if skipped:
        (fig_dir / "no_room_geometry.txt").write_text("scene spec could not be rebuilt with the recorded content "
                                                     "hash (generator changed?); drawn as boxes on a floor slab:\n"
                                                     + "\n".join(skipped) + "\n")
    return written


def plots_available() -> bool:
    """Whether matplotlib (the ``plots`` extra) can be imported: without it, reports and the
    leaderboard are written as tables only, without the PNG curves and plots."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return False
    return True


def no_plots_note() -> str:
    """The one line saying that plots were left out, and how to get them."""
    from spatialscout_gym.core.errors import install_command
    return f"no plots drawn: the 'plots' extra is not installed (matplotlib); tables only. To draw them: {install_command('plots')}"


def write_index_html(out_dir: str | os.PathLike, report: ReportRecord, replay: dict | None,
                     figures: dict[str, Path]) -> Path:
    """Write ``DIR/index.html``: the Table-3 report, per-category and per-scene tables, the replay
    curves and the Figure-4 pictures, all linked relatively. Returns its path."""
    from spatialscout_gym.core.table import format_table_html
    from spatialscout_gym.eval.pages.page import write_page
    from spatialscout_gym.eval.pages.report import shown_counters
    out = Path(out_dir)
    e = html.escape
    rel = lambda p: Path(os.path.relpath(p, out)).as_posix()  # noqa: E731
    c = report.counters
    parts = [f"<h1>SpatialScout evaluation: {e(out.resolve().name)}</h1>",
             f"<p>agent {e(', '.join(report.agent))}; catalog version {e(str(report.catalog_version))}; "
             f"{c['episodes']} episodes finished, {len(report.failures)} failed (left out of aggregates).</p>",
             "<h2>Table 3 (object-micro is the headline)</h2>",
             format_table_html({"object-micro": report.object_micro, "scene-macro": report.scene_macro or {}})
             if report.object_micro is not None else
             "<p><b>No episode completed</b>: nothing to score; the failed episodes are listed below.</p>",
             "<h2>Counters (totals over finished episodes)</h2><table><tr><th>counter</th><th>total</th></tr>"]
    parts += [f"<tr><td>{e(k)}</td><td>{v:.4g}</td></tr>" if isinstance(v, float) else
              f"<tr><td>{e(k)}</td><td>{v}</td></tr>" for k, v in shown_counters(c).items()]
    parts.append("</table>")
    s = report.seeds
    if len(s.seeds) > 1 and s.mean is not None and s.std is not None:
        parts.append(f"<p>{len(s.seeds)} seeds: all-target mean IoU {100 * s.mean:.2f}% +- "
                     f"{100 * s.std:.2f}% (std across seeds)</p>")
    if report.failures:
        parts.append("<h2>Failed episodes</h2><ul>" + "".join(
            f"<li>{e(f['run'])}: {e(str(f['error']))}</li>" for f in report.failures) + "</ul>")
    if replay is not None:
        parts.append("<h2>Replay curves</h2>")
        for name in ("curves_calls.png", "curves_images.png", "loss_lambda.png"):
            p = out / "replay" / name
            if p.is_file():
                parts.append(f"<p><img src='{e(rel(p))}' alt='{e(name)}'></p>")
    parts.append("<h2>Per category (pooled)</h2><table><tr><th>category</th><th>targets</th><th>submitted</th>"
                 "<th>mean IoU %</th><th>IoU&gt;0.5 %</th></tr>")
    parts += [f"<tr><td>{e(k)}</td><td>{v['num_targets']}</td><td>{v['num_submitted']}</td>"
              f"<td>{100 * v['mean_iou']:.2f}</td><td>{100 * v['gt_50']:.2f}</td></tr>"
              for k, v in report.categories.items()]
    parts += ["</table><h2>Per scene</h2>", format_table_html(report.scenes) if report.scenes else "<p>none</p>"]
    if figures:
        parts.append("<h2>Reference scene and the submitted map (Figure 4; views at yaw +55, 0, -55 deg)</h2>")
        for key, p in figures.items():
            parts.append(f"<h3>{e(key)}</h3><p><a href='{e(rel(p))}'><img src='{e(rel(p))}' alt='{e(key)}' "
                         f"loading='lazy'></a></p>")
    return write_page(out / "index.html", f"SpatialScout: {out.resolve().name}", parts)
