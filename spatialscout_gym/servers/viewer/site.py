"""Write the viewer page of a run or evaluation directory as static files (docs/protocol.md
section 7 for the directories read).

A site is ``index.html`` + ``view.js``/``common.js``/``style.css`` + ``data.js`` (the payload as
``window.SS_DATA``, so the page also opens from ``file://``) + ``frames/``. An evaluation
directory's site lists its episodes on ``index.html`` and holds one run site per episode under
``ep/NNN/``.

Only the run's own regular files are copied: an entry of ``frames/`` that is a symbolic link (to a
file or a directory, wherever it leads), a hard link (a file with more than one link) or a
directory is skipped and listed, so a site never carries a file from outside the run directory;
so is a file that is not a PNG of frame size (:func:`png_problem`: an empty file, a GIF, a
60000 x 60000 header), which a browser would be asked to decode.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
from importlib import resources
from pathlib import Path

from spatialscout_gym.core.limits import MAX_RESOLUTION_PX
from spatialscout_gym.servers.viewer.data import eval_payload, frame_files, is_run_dir, run_dirs, run_payload

__all__ = ["write_site", "STATIC_FILES", "png_problem", "MAX_FRAME_BYTES"]

STATIC_FILES = ("common.js", "view.js", "style.css")


def _static(name: str) -> str:
    return resources.files("spatialscout_gym.servers.viewer").joinpath("static").joinpath(name).read_text(encoding="utf-8")


def _page(out: Path, payload: dict, assets: str) -> None:
    out.mkdir(parents=True, exist_ok=True)
    html = _static("view.html").replace("{{ASSETS}}", assets)
    (out / "index.html").write_text(html, encoding="utf-8")
    # "</" inside a JSON string would end the script element early
    (out / "data.js").write_text("window.SS_DATA = " + json.dumps(payload).replace("</", "<\\/") + ";\n",
                                 encoding="utf-8")


def _run_site(run: Path, out: Path, assets: str, back: str | None, skipped: list[Path]) -> None:
    payload = run_payload(run)
    payload["back"] = back
    _page(out, payload, assets)
    keep, skip = frame_files(run)
    skipped.extend(skip)
    if keep:
        (out / "frames").mkdir(parents=True, exist_ok=True)
    for f in keep:
        if not _copy_own(f, out / "frames" / f.name):
            skipped.append(f)


_PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
MAX_FRAME_BYTES = 4 * MAX_RESOLUTION_PX * MAX_RESOLUTION_PX + (1 << 20)
"""Largest frame file copied, bytes: more than a 4096 x 4096 RGBA PNG stored uncompressed."""


def png_problem(header: bytes, size: int) -> str | None:
    """Why a frame file whose first 24 bytes are ``header`` and whose size is ``size`` bytes is not
    a frame a run writes, or None: a PNG (signature, then its IHDR chunk) of at most
    :data:`MAX_RESOLUTION_PX` a side (so what a browser decodes stays bounded) and
    :data:`MAX_FRAME_BYTES`. An empty file, a GIF, a 60000 x 60000 header are refused."""
    if not header.startswith(_PNG_SIGNATURE) or len(header) < 24 or header[12:16] != b"IHDR":
        return "not a PNG file"
    width, height = int.from_bytes(header[16:20], "big"), int.from_bytes(header[20:24], "big")
    if not (0 < width <= MAX_RESOLUTION_PX and 0 < height <= MAX_RESOLUTION_PX):
        return f"a PNG of {width} x {height} pixels (frames have at most {MAX_RESOLUTION_PX} a side)"
    if size > MAX_FRAME_BYTES:
        return f"a PNG of {size} bytes (at most {MAX_FRAME_BYTES})"
    return None


def _copy_own(src: Path, dst: Path) -> bool:
    """Copy ``src`` when the file opened (no link followed) is regular with one link and a PNG
    within the frame bounds (:func:`png_problem`); False, and nothing written, otherwise (it is
    not a frame, or it changed since it was listed)."""
    try:
        fd = os.open(src, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return False
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(f.fileno())
        if not stat.S_ISREG(st.st_mode) or st.st_nlink != 1:
            return False
        header = f.read(24)
        if png_problem(header, st.st_size) is not None:
            return False
        with open(dst, "wb") as g:
            g.write(header)
            shutil.copyfileobj(f, g)
    return True


def write_site(src: str | Path, out: str | Path, skipped: list[Path] | None = None) -> Path:
    """Write the page of ``src`` (a run directory, or a directory holding run directories) into
    ``out``; returns ``out``. Raises ``FileNotFoundError`` when ``src`` holds no run and
    :class:`~spatialscout_gym.eval.layout.EvalDirError` for a run file that cannot be read. The
    ``frames/`` entries left out (links, directories) are appended to ``skipped``."""
    src, out = Path(src), Path(out)
    skipped = [] if skipped is None else skipped
    runs = run_dirs(src) if src.is_dir() else []
    if not runs:
        raise FileNotFoundError(f"{src} is neither a run directory (trace.jsonl + result.json) "
                                "nor a directory holding run directories")
    out.mkdir(parents=True, exist_ok=True)
    for name in STATIC_FILES:
        (out / name).write_text(_static(name), encoding="utf-8")
    if is_run_dir(src):
        _run_site(src, out, ".", None, skipped)
        return out
    payload = eval_payload(src, runs)
    for i, (run, row) in enumerate(zip(runs, payload["episodes"])):
        row["href"] = f"ep/{i:03d}/index.html"
        _run_site(run, out / "ep" / f"{i:03d}", "../..", "../../index.html", skipped)
    payload["back"] = None
    _page(out, payload, ".")
    return out
