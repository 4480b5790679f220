"""``spatialscout doctor``: can this machine render?

Probes SAPIEN's Vulkan device (a GPU when there is one, else Mesa's software lavapipe), renders
one frame of a small built-in scene, and prints the device, driver, Mesa and SAPIEN versions, the
first-frame and per-frame times. When something is missing it prints the commands that fix it.
Exit code 0 when rendering works, 1 otherwise.
"""

from __future__ import annotations

import argparse
import time
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from spatialscout_gym.core.spec import SceneSpec

__all__ = ["register", "run_doctor", "probe_scene"]


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = subparsers.add_parser("doctor", help="check that SAPIEN can render here; print fixes if not",
                              description=__doc__.split("\n\n")[1])
    p.set_defaults(func=run_doctor)


def probe_scene() -> SceneSpec:
    """A one-object scene (a lit box in front of the camera) for the render check."""
    from spatialscout_gym.core.camera import Intrinsics
    from spatialscout_gym.core.frames import CameraPose
    from spatialscout_gym.core.spec import Light, Material, Part, SceneObject, SceneSpec
    box = SceneObject("Box_1", "Box", "Box", "target", [
        Part("box", np.array([2.0, 0.0, 0.0]), half_size=np.array([0.3, 0.3, 0.3]),
             material=Material((0.8, 0.3, 0.2, 1.0), texture={"kind": "wood", "seed": 0}))])
    return SceneSpec.from_objects("doctor", [box], CameraPose(np.zeros(3), 0.0, 0.0),
                                  Intrinsics.from_fov(512, 512, 60.0),
                                  [Light("point", (2.0, 2.0, 2.0), position_world=np.array([0.0, 0.0, 1.0]))])


def _why_no_mesa_version() -> str:
    """Why ``vulkaninfo`` gave no Mesa version: the tool is missing, or it lists no Mesa driver."""
    import shutil
    if shutil.which("vulkaninfo") is None:
        return "unknown (vulkaninfo missing; apt-get install vulkan-tools)"
    return "unknown (vulkaninfo lists no Mesa Vulkan driver)"


def run_doctor(args: argparse.Namespace | None = None) -> int:
    from spatialscout_gym.render.device import check_vulkan, fix_message
    print("spatialscout doctor: probing Vulkan through SAPIEN ...")
    report = check_vulkan()
    print(f"  SAPIEN version : {report.sapien_version or 'not importable'}")
    print(f"  Mesa version   : {report.mesa_version or _why_no_mesa_version()}")
    if not report.ok:
        print(f"  device         : NONE ({report.error})")
        print("fix: run these commands, then `spatialscout doctor` again:")
        for cmd in report.fix:
            print(f"  {cmd}")
        return 1
    kind = "software (CPU, Mesa lavapipe)" if report.software else "GPU"
    print(f"  device         : {report.device} [{kind}]")
    try:
        from spatialscout_gym.render.sapien_renderer import SapienRenderer
        spec = probe_scene()
        t0 = time.perf_counter()
        renderer = SapienRenderer(spec)
        img = renderer.capture_rgb(spec.public.initial_camera)
        first = time.perf_counter() - t0
        times = []
        for _ in range(5):
            t = time.perf_counter()
            renderer.capture_rgb(spec.public.initial_camera)
            times.append(time.perf_counter() - t)
        renderer.close()
    except Exception as exc:  # report any render failure as a diagnosis, not a traceback
        print(f"  render         : FAILED ({type(exc).__name__}: {exc})")
        print(fix_message(str(exc)))
        return 1
    if img.std() < 1.0:
        print(f"  render         : FAILED (the frame is blank: mean {img.mean():.1f}); "
              f"the driver renders nothing. Try a newer Mesa:")
        print(fix_message())
        return 1
    print(f"  first frame    : {first:.2f} s (includes building the scene and compiling shaders)")
    print(f"  frame time     : {1000 * float(np.median(times)):.1f} ms per 512 x 512 RGB (minimal shader)")
    print("rendering works.")
    return 0
