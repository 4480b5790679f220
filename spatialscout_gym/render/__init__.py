"""SAPIEN rendering of scene specs (docs/architecture.md "render" layer).

Importing this package is light; SAPIEN is imported when a :class:`SapienRenderer` is built.
"""

from __future__ import annotations

from spatialscout_gym.core.lazy import lazy_exports

__all__ = ["SapienRenderer", "CameraGroup", "RenderDeviceError", "DeviceReport", "check_vulkan", "texture_image"]

_WHERE = {
    "SapienRenderer": "spatialscout_gym.render.sapien_renderer",
    "CameraGroup": "spatialscout_gym.render.camera_group",
    "RenderDeviceError": "spatialscout_gym.render.device",
    "DeviceReport": "spatialscout_gym.render.device",
    "check_vulkan": "spatialscout_gym.render.device",
    "texture_image": "spatialscout_gym.render.textures",
}

__getattr__, __dir__ = lazy_exports(__name__, _WHERE)
