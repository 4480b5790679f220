"""The SAPIEN camera shader folder a :class:`~spatialscout_gym.render.sapien_renderer.SapienRenderer`
draws with (docs/architecture.md "Rendering is SAPIEN 3 through Vulkan"; figures in docs/speed.md).

SAPIEN's "minimal" shader pack declares a BRDF lookup table for image-based lighting, and SAPIEN
builds that table with a compute shader on the first picture of every process that declares it. On
lavapipe (software Vulkan, every CPU machine) the build takes about 10 s of wall time and 20 s of CPU
on two cores, in each process that renders: each ``evaluate`` worker, each NBV worker, each
``spatialscout run``. The scenes this package renders set no environment map, so SAPIEN lights them
with a black one: the image-based-lighting terms are zero whatever the table holds, and the table
changes no pixel.

:func:`camera_shader_dir` therefore hands the renderer SAPIEN's own installed "minimal" pack with
the table's two declarations removed and its one read replaced by zero. The pack is derived from the
installed files at first use, never shipped, into the package's cache
(:func:`~spatialscout_gym.core.files.cache_root`), under a name that hashes its content, so another
SAPIEN gets its own. A pack found there is used only when it holds exactly the files this module
derives, no more, each with exactly their text; any other is rewritten. tests/test_render_shaders.py renders real scenes with both packs and finds the same
bits in colour, depth, segmentation and positions.

When the cache cannot be written, the pack goes into a folder of the user's own in the machine's
temporary directory (refused when another user could write it). When the installed pack lacks the
lines this change expects (another SAPIEN version) or neither folder can be used, the unmodified pack
is used: the same pictures, with the slow first one.
"""

from __future__ import annotations

import functools
import hashlib
import os
import shutil
import stat
import tempfile
from pathlib import Path

from spatialscout_gym.core.files import cache_root

__all__ = ["camera_shader_dir", "derive_minimal_pack", "LUT_FREE_EDITS"]

LUT_FREE_EDITS: dict[str, tuple[tuple[str, str], ...]] = {
    "gbuffer.frag": (
        ("layout(set = 3, binding = 8) uniform sampler2D samplerBRDFLUT;\n", ""),
        ("texture(samplerBRDFLUT, vec2(roughness, dotNV)).xy", "vec2(0.0)"),
    ),
    "composite0.frag": (
        ("layout(set = 2, binding = 8) uniform sampler2D samplerBRDFLUT;\n", ""),
    ),
}
"""File -> (old text, new text) edits that take the BRDF lookup table out of SAPIEN's "minimal"
pack; each old text must occur exactly once."""

PACK_NAME = "minimal"
_COMPLETE = ".complete"


def derive_minimal_pack(stock_root: Path) -> dict[str, dict[str, str]] | None:
    """The LUT-free pack's files as ``{"minimal": {name: text}, "common": {name: text}}``, read from
    SAPIEN's shader folder ``stock_root`` (``.../sapien/vulkan_shader``); None when an edit of
    :data:`LUT_FREE_EDITS` does not find its text exactly once, or a file is missing."""
    try:
        files = {sub: {p.name: p.read_text(encoding="utf-8") for p in sorted((stock_root / sub).iterdir())
                       if p.is_file()}
                 for sub in (PACK_NAME, "common")}
    except OSError:
        return None
    for name, edits in LUT_FREE_EDITS.items():
        text = files[PACK_NAME].get(name)
        if text is None:
            return None
        for old, new in edits:
            if text.count(old) != 1:
                return None
            text = text.replace(old, new)
        files[PACK_NAME][name] = text
    if any("samplerBRDFLUT" in t for t in files[PACK_NAME].values()):
        return None   # a declaration or read this change does not know: keep SAPIEN's own
    return files


def _names(folder: Path) -> set[str]:
    return {p.name for p in folder.iterdir()}


def _written(folder: Path, files: dict[str, dict[str, str]]) -> bool:
    """``folder`` holds exactly ``files`` and was completed: the same file names, no more (SAPIEN
    compiles every shader file a pack folder holds, so a stray one breaks every picture), each a
    regular file, not a link, with the same text."""
    try:
        if _names(folder) != {*files, _COMPLETE} or not (folder / _COMPLETE).is_file():
            return False
        for sub, group in files.items():
            if _names(folder / sub) != set(group):
                return False
            for name, text in group.items():
                path = folder / sub / name
                if not stat.S_ISREG(os.lstat(path).st_mode) or path.read_text(encoding="utf-8") != text:
                    return False
        return True
    except (OSError, UnicodeDecodeError):
        return False


def _private(root: Path) -> bool:
    """``root`` is a real folder of this user that nobody else can write: a folder in a shared
    temporary directory could otherwise be made, or swapped, by another user."""
    try:
        st = os.lstat(root)
    except OSError:
        return False
    return stat.S_ISDIR(st.st_mode) and st.st_uid == os.getuid() and not st.st_mode & 0o022


def _write_pack(root: Path, files: dict[str, dict[str, str]], *, shared: bool = False) -> Path | None:
    """The pack written under ``root`` (atomically: a temporary folder renamed into place, so
    processes starting together never see half a pack); None if ``root`` cannot be written, or,
    with ``shared`` (a folder in the machine's temporary directory), is not :func:`_private`."""
    digest = hashlib.sha256(repr(sorted((s, sorted(g.items())) for s, g in files.items())).encode()).hexdigest()
    final = root / f"sapien-shaders-{digest[:16]}"
    try:
        root.mkdir(mode=0o700, parents=True, exist_ok=True)
    except OSError:
        return None
    if shared and not _private(root):
        return None
    if _written(final, files):
        return final / PACK_NAME
    try:
        tmp = Path(tempfile.mkdtemp(prefix=".sapien-shaders-", dir=root))
    except OSError:
        return None
    try:
        for sub, group in files.items():
            (tmp / sub).mkdir()
            for name, text in group.items():
                (tmp / sub / name).write_text(text, encoding="utf-8")
        (tmp / _COMPLETE).write_text("", encoding="utf-8")
        if final.exists() and not _written(final, files):
            shutil.rmtree(final, ignore_errors=True)   # a damaged or partial pack from a killed writer
        try:
            os.rename(tmp, final)
        except OSError:
            pass                                        # another process renamed its copy first
    except OSError:
        return None
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return final / PACK_NAME if _written(final, files) else None


@functools.lru_cache(maxsize=None)
def camera_shader_dir(shader: str, stock_root: str) -> str:
    """The shader folder to give SAPIEN's camera for ``shader`` ("minimal" or "default"), with
    SAPIEN's own shader folder at ``stock_root``: the LUT-free "minimal" pack when it can be
    derived and written, else SAPIEN's folder for ``shader`` itself."""
    stock = os.path.join(stock_root, shader)
    if shader != PACK_NAME:
        return stock
    files = derive_minimal_pack(Path(stock_root))
    if files is None:
        return stock
    pack = _write_pack(cache_root(), files) or \
        _write_pack(Path(tempfile.gettempdir()) / f"spatialscout_gym-{os.getuid()}", files, shared=True)
    return stock if pack is None else str(pack)
