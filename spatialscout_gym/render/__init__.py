"""SAPIEN rendering of scene specs (docs/architecture.md "render" layer).

Importing this package is light; SAPIEN is imported when a :class:`SapienRenderer` is built.
"""

from __future__ import annotations

from typing import Any

__all__ = ["SapienRenderer", "CameraGroup", "RenderDeviceError", "DeviceReport", "check_vulkan", "texture_image"]

_LAZY = {
    "SapienRenderer": "spatialscout_gym.render.sapien_renderer",
    "CameraGroup": "spatialscout_gym.render.camera_group",
    "RenderDeviceError": "spatialscout_gym.render.device",
    "DeviceReport": "spatialscout_gym.render.device",
    "check_vulkan": "spatialscout_gym.render.device",
    "texture_image": "spatialscout_gym.render.textures",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'spatialscout_gym.render' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
