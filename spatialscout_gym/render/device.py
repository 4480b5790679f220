"""Does SAPIEN find a Vulkan rendering device here, and if not, what fixes it (docs/architecture.md,
"Rendering is SAPIEN 3 through Vulkan").

The probe runs in a subprocess, so a driver that crashes or hangs cannot take the caller down.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path

from spatialscout_gym.core.errors import SpatialScoutError, install_command

__all__ = ["DeviceReport", "RenderDeviceError", "check_vulkan", "fix_commands", "mesa_version",
           "NO_DEVICE_MARKERS"]

NO_DEVICE_MARKERS = ("failed to find a rendering device", "no rendering device",
                     "failed to find a supported physical device", "vkCreateInstance failed",
                     "ErrorIncompatibleDriver")
"""Substrings of SAPIEN/Vulkan errors that mean "no usable rendering device"."""

_PROBE = r"""
import json, sys
out = {}
try:
    import sapien
    out["sapien_version"] = sapien.__version__
    sapien.render.RenderSystem()
    out["summary"] = sapien.render.get_device_summary()
    out["ok"] = True
except Exception as exc:  # report, never crash
    out["ok"] = False
    out["error"] = f"{type(exc).__name__}: {exc}"
print("@@PROBE@@" + json.dumps(out))
"""


class RenderDeviceError(SpatialScoutError, RuntimeError):
    """SAPIEN found no Vulkan device it can render with; the message names the fix."""


@dataclass
class DeviceReport:
    """What :func:`check_vulkan` found.

    Attributes
    ----------
    ok : bool
        SAPIEN created a render system.
    device : str
        Device name SAPIEN reports (e.g. ``"llvmpipe (LLVM 15.0.6, 256 bits)"``), "" if none.
    software : bool
        The device is Mesa's CPU driver (llvmpipe / lavapipe).
    mesa_version : str
        Mesa version from ``vulkaninfo --summary`` (e.g. ``"25.0.7"``), "" when unknown.
    sapien_version : str
    error : str
        The probe's error, "" when ``ok``.
    fix : list of str
        Shell commands that install a working driver; empty when ``ok``.
    """

    ok: bool
    device: str = ""
    software: bool = False
    mesa_version: str = ""
    sapien_version: str = ""
    error: str = ""
    fix: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        return asdict(self)


def _os_release(path: str = "/etc/os-release") -> dict[str, str]:
    try:
        text = Path(path).read_text()
    except OSError:
        return {}
    out = {}
    for line in text.splitlines():
        if "=" in line:
            k, v = line.split("=", 1)
            out[k.strip()] = v.strip().strip('"')
    return out


def fix_commands(os_release: dict[str, str] | None = None) -> list[str]:
    """Commands that install a Mesa Vulkan driver SAPIEN can use on this OS.

    Debian bookworm ships Mesa 22.3, whose lavapipe lacks ``descriptorBindingPartiallyBound``;
    Mesa >= 24.3 works (25.0.7 from bookworm-backports verified), so bookworm gets backports.
    """
    osr = _os_release() if os_release is None else os_release
    if osr.get("VERSION_CODENAME") == "bookworm":
        return [
            "printf 'Types: deb\\nURIs: http://deb.debian.org/debian\\nSuites: bookworm-backports\\n"
            "Components: main\\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\\n' "
            "| sudo tee /etc/apt/sources.list.d/backports.sources",
            "sudo apt-get update",
            "sudo apt-get install -y -t bookworm-backports mesa-vulkan-drivers libvulkan1 vulkan-tools",
        ]
    return ["sudo apt-get update",
            "sudo apt-get install -y mesa-vulkan-drivers libvulkan1 vulkan-tools"]


def fix_message(error: str = "") -> str:
    """One paragraph for users: what failed, why, and the commands that fix it."""
    head = f"SAPIEN found no Vulkan rendering device ({error.strip()})" if error else \
        "SAPIEN found no Vulkan rendering device"
    return (f"{head}. On a machine without a GPU, install Mesa's software Vulkan driver "
            f"(lavapipe), version 24.3 or newer (Debian bookworm's Mesa 22.3 is too old; 25.0.7 from "
            f"bookworm-backports is verified):\n  " + "\n  ".join(fix_commands())
            + "\nthen run `spatialscout doctor` (or scripts/setup.sh does all of this).")


def is_no_device_error(message: str) -> bool:
    """True when a SAPIEN/Vulkan error message means no usable rendering device."""
    low = message.lower()
    return any(m.lower() in low for m in NO_DEVICE_MARKERS)


def mesa_version(timeout_s: float = 20.0) -> str:
    """Mesa version from ``vulkaninfo --summary`` (package ``vulkan-tools``); "" if unavailable."""
    exe = shutil.which("vulkaninfo")
    if exe is None:
        return ""
    try:
        out = subprocess.run([exe, "--summary"], capture_output=True, text=True, timeout=timeout_s).stdout
    except (OSError, subprocess.TimeoutExpired):
        return ""
    m = re.search(r"Mesa (\d+\.\d+(?:\.\d+)?)", out)
    return m.group(1) if m else ""


def _parse_summary(summary: str) -> tuple[str, bool]:
    m = re.search(r"GPU:\s*(.+)", summary)
    name = m.group(1).strip() if m else summary.strip().splitlines()[0] if summary.strip() else ""
    soft = any(s in name.lower() for s in ("llvmpipe", "lavapipe", "swiftshader"))
    return name, soft


def check_vulkan(timeout_s: float = 60.0) -> DeviceReport:
    """Probe SAPIEN's Vulkan device in a subprocess; never raises.

    Returns
    -------
    DeviceReport
        ``ok`` and the device when SAPIEN can render; otherwise the error and ``fix`` commands.
    """
    mesa = mesa_version()
    try:
        proc = subprocess.run([sys.executable, "-c", _PROBE], capture_output=True, text=True,
                              timeout=timeout_s)
    except subprocess.TimeoutExpired:
        return DeviceReport(False, mesa_version=mesa, error=f"device probe timed out after {timeout_s} s",
                            fix=fix_commands())
    line = next((ln for ln in proc.stdout.splitlines() if ln.startswith("@@PROBE@@")), None)
    if line is None:
        err = (proc.stderr.strip().splitlines() or [f"probe exited with code {proc.returncode}"])[-1]
        return DeviceReport(False, mesa_version=mesa, error=err, fix=fix_commands())
    out = json.loads(line[len("@@PROBE@@"):])
    if not out.get("ok"):
        err = out.get("error", "")
        if "No module named" in err:
            return DeviceReport(False, mesa_version=mesa, error=err,
                                fix=[f"{install_command('render')}   # or: pip install sapien==3.0.3"])
        return DeviceReport(False, mesa_version=mesa, sapien_version=out.get("sapien_version", ""),
                            error=err, fix=fix_commands())
    name, soft = _parse_summary(out.get("summary", ""))
    return DeviceReport(True, name, soft, mesa, out.get("sapien_version", ""))
