"""``spatialscout scenes render SCENE --out DIR``: the initial view, an 8-view panorama and a
labelled top-down map of the targets' boxes, as PNG.

``cli/scenes.py`` calls :func:`add_render_parser` with its sub-parsers. SCENE is a catalog name
(resolved by ``spatialscout_gym.scenes.catalog.scene_by_name``) or a path to a scene-spec JSON file.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from spatialscout_gym.cli.errors import CliError
from spatialscout_gym.cli.options import scene_from_arg

__all__ = ["add_render_parser", "run_render"]


def add_render_parser(scenes_subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> argparse.ArgumentParser:
    """Add the ``render`` sub-command to ``spatialscout scenes``."""
    p = scenes_subparsers.add_parser(
        "render", help="write initial.png, panorama.png and topdown.png for one scene",
        description="Render a scene's initial view, an 8-view panorama (45 deg yaw steps from the "
                    "initial position) and a labelled top-down map of the targets' boxes.")
    p.add_argument("scene", metavar="SCENE", help="catalog scene name/id, or a scene-spec .json file")
    p.add_argument("--out", required=True, type=Path, help="output directory (created if missing)")
    p.add_argument("--size", type=int, default=512, help="render size in pixels (default 512)")
    p.set_defaults(func=run_render)
    return p


def run_render(args: argparse.Namespace) -> int:
    if args.size <= 0:
        raise CliError(f"--size must be a positive number of pixels, got {args.size} (default 512)")
    from spatialscout_gym.render.device import RenderDeviceError
    from spatialscout_gym.render.pictures import write_scene_pictures
    spec = scene_from_arg(args.scene)
    try:
        from spatialscout_gym.render.sapien_renderer import SapienRenderer
        from spatialscout_gym.scenes.catalog import uses_texture_library
        renderer = SapienRenderer(spec, args.size, args.size, texture_library=uses_texture_library(spec))
    except RenderDeviceError as exc:
        raise CliError(str(exc).replace("\n", " ")) from exc
    try:
        paths = write_scene_pictures(spec, renderer, args.out)
    finally:
        renderer.close()
    for p in paths.values():
        print(p)
    return 0
