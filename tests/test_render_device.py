"""Device check: a real probe finds the software (or a GPU) device; a fake "no device" names the fix."""

import pytest

from render_fixtures import make_room_spec
from spatialscout_gym.render import device
from spatialscout_gym.render.device import RenderDeviceError, check_vulkan, fix_commands


def test_check_vulkan_finds_a_device_here():
    report = check_vulkan()
    assert report.ok, report.error
    assert report.device and report.sapien_version.startswith("3.")
    assert report.fix == []


def test_fix_commands_use_backports_on_bookworm_only():
    bookworm = " ".join(fix_commands({"ID": "debian", "VERSION_CODENAME": "bookworm"}))
    assert "-t bookworm-backports mesa-vulkan-drivers libvulkan1 vulkan-tools" in bookworm
    assert "/usr/share/keyrings/debian-archive-keyring.gpg" in bookworm
    ubuntu = " ".join(fix_commands({"ID": "ubuntu", "VERSION_CODENAME": "noble"}))
    assert "mesa-vulkan-drivers libvulkan1" in ubuntu and "backports" not in ubuntu


def test_renderer_without_a_device_raises_the_fix(monkeypatch):
    import sapien

    def no_device(*args, **kwargs):
        raise RuntimeError("failed to find a rendering device")

    monkeypatch.setattr(sapien.render, "RenderSystem", no_device)
    from spatialscout_gym.render.sapien_renderer import SapienRenderer
    with pytest.raises(RenderDeviceError, match="mesa-vulkan-drivers") as info:
        SapienRenderer(make_room_spec())
    assert "24.3" in str(info.value)


def test_probe_failure_returns_a_report_with_the_fix(monkeypatch):
    monkeypatch.setattr(device, "_PROBE", "raise SystemExit('failed to find a rendering device')")
    report = check_vulkan(timeout_s=30)
    assert not report.ok
    assert "rendering device" in report.error
    assert any("mesa-vulkan-drivers" in c for c in report.fix)
