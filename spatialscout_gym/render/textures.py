"""Procedural textures: ``Material.texture`` dicts to RGBA images, in code, with numpy only.

Nothing is downloaded or read from disk (colours and textures are made in code).
A texture dict is ``{"kind": str, "seed": int, "color": [r, g, b], "color2": [r, g, b],
"scale": float}``; only ``kind`` is required. Colours are display (sRGB) values in 0-1; the
renderer uploads the image as an sRGB texture. The same dict always gives the same image, and
images are cached in-process per canonical dict.

Kinds and how the renderer maps them (:data:`TEXTURE_KINDS`):

==============  ======  ================================================================
kind            mode    picture
==============  ======  ================================================================
``wood``        tile    grain along the image's u axis, with rings and knots
``fabric``      tile    a two-thread weave with slight colour noise
``tiles``       tile    4 x 4 square tiles with grout lines
``carpet``      tile    dense fibre noise
``marble``      tile    light stone with dark veins
``brick``       tile    running-bond bricks with mortar
``noise``       tile    smooth multi-octave value noise between ``color`` and ``color2``
``painting``    fit     a generated picture per seed: landscape, abstract shapes or portrait
``paper``       fit     a light page with text-like lines
``book_spine``  fit     a coloured spine with bands and title marks (text runs along v)
``screen``      fit     a dark glossy display with a subtle gradient
==============  ======  ================================================================

"tile" kinds repeat every :func:`tile_size_m` metres of surface (times ``scale``); "fit" kinds
stretch one copy over each face.

The texture library (version :data:`TEXTURE_LIBRARY_VERSION`)
--------------------------------------------------------------
Every kind's picture is affine in its two colours: ``rgb = color * A + color2 * B + C``, with
scalar weight fields ``A``, ``B`` of shape (S, S) and a constant part ``C`` (non-zero only for
paintings' fixed colours). The library keeps these fields for :data:`LIBRARY_VARIANTS` pattern
variants per kind (``seed % LIBRARY_VARIANTS``), so a texture costs one multiply-add instead of
procedural noise in numpy, and the library is finite: 11 kinds x 16 variants, about 36 MB of
float16 fields when all are in use. Fields are made on first use and cached on disk under
:func:`library_dir` (``$SPATIALSCOUT_CACHE_DIR``, default ``~/.cache/spatialscout_gym``), so a new
process reads them instead of making them. Colours are quantised to 1/64 so equal-looking
materials share one image. Images made from the library are kept in a small LRU cache
(:data:`IMAGE_CACHE_BYTES`); the renderer releases the GPU textures a new scene does not use.
``texture_image(texture, library=False)`` gives the exact per-seed picture of catalog v1.0.
"""

from __future__ import annotations

import os
from collections import OrderedDict
from pathlib import Path
from typing import Callable

import numpy as np

from spatialscout_gym.core.files import cache_root
from spatialscout_gym.core.spec import canonical_json

__all__ = ["TEXTURE_KINDS", "texture_image", "texture_key", "texture_mode", "tile_size_m",
           "library_texture", "library_dir", "TEXTURE_LIBRARY_VERSION", "LIBRARY_VARIANTS",
           "IMAGE_CACHE_BYTES", "cache_stats", "clear_caches"]

TEXTURE_LIBRARY_VERSION = 1
"""Version of the texture library (hashed with catalog v2.0's render settings)."""
LIBRARY_VARIANTS = 16
"""Pattern variants per kind in the library."""
IMAGE_CACHE_BYTES = 16 * 2**20
"""Host memory the LRU cache of finished library images may hold."""
_COLOR_STEPS = 64

_TILE_M: dict[str, float] = {"wood": 0.6, "fabric": 0.12, "tiles": 1.2, "carpet": 0.4,
                             "marble": 1.0, "brick": 1.0, "noise": 0.5}
_FIT = ("painting", "paper", "book_spine", "screen")

_DEFAULT_COLORS: dict[str, tuple[tuple[float, float, float], tuple[float, float, float]]] = {
    "wood": ((0.55, 0.36, 0.2), (0.36, 0.22, 0.11)),
    "fabric": ((0.45, 0.5, 0.62), (0.32, 0.36, 0.46)),
    "tiles": ((0.88, 0.88, 0.86), (0.55, 0.55, 0.53)),
    "carpet": ((0.55, 0.42, 0.35), (0.42, 0.3, 0.25)),
    "marble": ((0.92, 0.91, 0.89), (0.45, 0.45, 0.48)),
    "brick": ((0.62, 0.27, 0.18), (0.78, 0.76, 0.72)),
    "noise": ((0.6, 0.6, 0.6), (0.4, 0.4, 0.4)),
    "painting": ((0.5, 0.6, 0.8), (0.3, 0.5, 0.25)),
    "paper": ((0.96, 0.95, 0.92), (0.2, 0.2, 0.25)),
    "book_spine": ((0.6, 0.15, 0.15), (0.9, 0.8, 0.45)),
    "screen": ((0.03, 0.04, 0.06), (0.1, 0.12, 0.18)),
}

_EXACT: "OrderedDict[str, np.ndarray]" = OrderedDict()
"""Exact per-seed images (``library=False``), LRU-bounded like the library images."""
_FIELDS: dict[tuple[str, int], tuple[np.ndarray, np.ndarray, np.ndarray | None]] = {}
"""(kind, variant) -> (A, B, C) float16 fields of the library."""
_IMAGES: "OrderedDict[str, np.ndarray]" = OrderedDict()
_CACHED_BYTES = {"images": 0, "exact": 0}


def texture_key(texture: dict) -> str:
    """Canonical JSON of a texture dict: equal keys mean equal images."""
    return canonical_json(texture)


def texture_mode(kind: str) -> str:
    """``"tile"`` (repeats at a real-world size) or ``"fit"`` (one copy per face)."""
    _check_kind(kind)
    return "fit" if kind in _FIT else "tile"


def tile_size_m(texture: dict) -> float:
    """Edge length in metres of surface that one copy of a tiled texture covers."""
    _check_kind(texture["kind"])
    return _TILE_M.get(texture["kind"], 1.0) * float(texture.get("scale", 1.0))


def _check_kind(kind: str) -> None:
    if kind not in TEXTURE_KINDS:
        raise ValueError(f"unknown texture kind {kind!r}; expected one of {sorted(TEXTURE_KINDS)}")


def library_texture(texture: dict) -> dict:
    """The library entry ``texture`` maps to: ``seed % LIBRARY_VARIANTS`` and colours quantised
    to 1/64 (what is drawn when ``library=True``)."""
    kind = texture["kind"]
    _check_kind(kind)
    c1, c2 = _DEFAULT_COLORS[kind]
    q = lambda c: [round(float(np.clip(x, 0.0, 1.0)) * _COLOR_STEPS) / _COLOR_STEPS for x in c[:3]]  # noqa: E731
    return {"kind": kind, "variant": int(texture.get("seed", 0)) % LIBRARY_VARIANTS,
            "color": q(texture.get("color", c1)), "color2": q(texture.get("color2", c2))}


def texture_image(texture: dict, *, library: bool = True) -> np.ndarray:
    """Render a texture dict to an image.

    Parameters
    ----------
    texture : dict
        ``{"kind": ..., "seed"?: int, "color"?: [r, g, b], "color2"?: [r, g, b], "scale"?: float}``.
    library : bool
        Draw the library entry of :func:`library_texture` (default); False draws the exact
        per-seed picture (the textures of catalog v1.0; slower, not bounded in variety).

    Returns
    -------
    image : ndarray, shape (S, S, 4), uint8
        RGBA, alpha 255; row 0 is the top of the picture (texture coordinate v = 0). Read-only:
        it is shared through the cache.
    """
    if not isinstance(texture, dict) or "kind" not in texture:
        raise ValueError(f"a texture must be a dict with a 'kind' key, got {texture!r}")
    _check_kind(texture["kind"])
    if not library:
        return _exact_image(texture)
    entry = library_texture(texture)
    key = texture_key(entry)
    img = _IMAGES.get(key)
    if img is not None:
        _IMAGES.move_to_end(key)
        return img
    A, B, C = _fields(entry["kind"], entry["variant"])
    img = _library_rgba(A, B, C, np.asarray(entry["color"], np.float32), np.asarray(entry["color2"], np.float32))
    _remember(_IMAGES, "images", key, img)
    return img


def _library_rgba(A: np.ndarray, B: np.ndarray, C: np.ndarray | None, c1: np.ndarray, c2: np.ndarray) -> np.ndarray:
    """``_rgba(A c1 + B c2 + C)`` in float32, one colour channel at a time: the same operations
    on the same values as the (S, S, 3) broadcast, so the same bytes, several times faster
    (numpy's inner loops then run over whole planes, not over 3 channels)."""
    a, b = A.astype(np.float32), B.astype(np.float32)
    img = np.empty(a.shape + (4,), dtype=np.uint8)
    img[..., 3] = 255
    plane, other = np.empty_like(a), np.empty_like(a)
    for k in range(3):
        np.multiply(a, c1[k], out=plane)
        np.multiply(b, c2[k], out=other)
        plane += other
        if C is not None:
            plane += C[..., k].astype(np.float32)
        plane *= np.float32(255.0)
        np.rint(plane, out=plane)
        np.clip(plane, 0, 255, out=plane)
        img[..., k] = plane
    img.setflags(write=False)
    return img


def _rgba(rgb: np.ndarray) -> np.ndarray:
    img = np.empty(rgb.shape[:2] + (4,), dtype=np.uint8)
    img[..., :3] = np.clip(np.rint(rgb * 255.0), 0, 255).astype(np.uint8)
    img[..., 3] = 255
    img.setflags(write=False)
    return img


def _remember(cache: "OrderedDict[str, np.ndarray]", name: str, key: str, img: np.ndarray) -> None:
    cache[key] = img
    _CACHED_BYTES[name] += img.nbytes
    while _CACHED_BYTES[name] > IMAGE_CACHE_BYTES and len(cache) > 1:
        _, old = cache.popitem(last=False)
        _CACHED_BYTES[name] -= old.nbytes


def _exact_image(texture: dict) -> np.ndarray:
    key = texture_key(texture)
    img = _EXACT.get(key)
    if img is None:
        kind = texture["kind"]
        rng = np.random.default_rng(int(texture.get("seed", 0)) + 7919 * _kind_index(kind))
        c1, c2 = _DEFAULT_COLORS[kind]
        color = np.asarray(texture.get("color", c1), dtype=float)[:3]
        color2 = np.asarray(texture.get("color2", c2), dtype=float)[:3]
        img = _rgba(TEXTURE_KINDS[kind](rng, color, color2))
        _remember(_EXACT, "exact", key, img)
    else:
        _EXACT.move_to_end(key)
    return img


def library_dir() -> Path:
    """Where the library's fields are cached on disk (one ``.npz`` per kind and variant)."""
    return cache_root() / f"textures-v{TEXTURE_LIBRARY_VERSION}"


def _fields(kind: str, variant: int) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """The (A, B, C) fields of one library entry: memory, then disk, then made (and saved)."""
    got = _FIELDS.get((kind, variant))
    if got is not None:
        return got
    path = library_dir() / f"{kind}_{variant:02d}.npz"
    try:
        with np.load(path) as z:
            got = (z["A"], z["B"], z["C"] if "C" in z.files else None)
    except (OSError, KeyError, ValueError):  # not cached yet, or a damaged file: make it
        got = _make_fields(kind, variant)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_suffix(f".{os.getpid()}.tmp.npz")
            arrays = {"A": got[0], "B": got[1]} | ({"C": got[2]} if got[2] is not None else {})
            np.savez(tmp, allow_pickle=False, **arrays)
            os.replace(tmp, path)
        except OSError:  # a read-only home: the library still works from memory
            pass
    _FIELDS[(kind, variant)] = got
    return got


def _make_fields(kind: str, variant: int) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """Solve ``rgb = c1 A + c2 B + C`` for one pattern: the generators only mix the colours
    linearly, and their random draws do not depend on the colours."""
    seed = variant + 7919 * _kind_index(kind)
    gen = TEXTURE_KINDS[kind]
    e = np.eye(3)
    probe = gen(np.random.default_rng(seed), e[0], e[1])           # channel 0: A + C0, 1: B + C1
    const = gen(np.random.default_rng(seed), np.zeros(3), np.zeros(3))
    A = probe[..., 0] - const[..., 0]
    B = probe[..., 1] - const[..., 1]
    C = const if np.any(const) else None
    def f16(x: np.ndarray) -> np.ndarray:
        return np.ascontiguousarray(x, dtype=np.float16)
    return f16(A), f16(B), None if C is None else f16(C)


def cache_stats() -> dict:
    """Sizes of the in-process texture caches (entries and bytes), for memory checks."""
    field_bytes = sum(a.nbytes + b.nbytes + (0 if c is None else c.nbytes) for a, b, c in _FIELDS.values())
    return {"library_fields": len(_FIELDS), "library_field_bytes": field_bytes,
            "images": len(_IMAGES), "image_bytes": _CACHED_BYTES["images"],
            "exact_images": len(_EXACT), "exact_image_bytes": _CACHED_BYTES["exact"]}


def clear_caches() -> None:
    """Forget every in-process texture (the disk cache stays)."""
    _FIELDS.clear()
    _IMAGES.clear()
    _EXACT.clear()
    _CACHED_BYTES.update(images=0, exact=0)


def _kind_index(kind: str) -> int:
    return sorted(TEXTURE_KINDS).index(kind)


# ---- building blocks -----------------------------------------------------------------------
def _value_noise(rng: np.random.Generator, size: int, cells: int) -> np.ndarray:
    """Tileable smooth noise in [0, 1], shape (size, size): a ``cells x cells`` random grid,
    bicubic-smoothstep interpolated with wrap-around."""
    grid = rng.random((cells, cells))
    t = np.arange(size) * cells / size
    i0 = np.floor(t).astype(int)
    f = t - i0
    f = f * f * (3 - 2 * f)
    i1 = (i0 + 1) % cells
    rows = grid[i0] * (1 - f)[:, None] + grid[i1] * f[:, None]
    return rows[:, i0] * (1 - f)[None, :] + rows[:, i1] * f[None, :]


def _fbm(rng: np.random.Generator, size: int, base_cells: int = 4, octaves: int = 4) -> np.ndarray:
    out = np.zeros((size, size))
    amp, total = 1.0, 0.0
    for o in range(octaves):
        cells = min(base_cells * 2 ** o, size)
        out += amp * _value_noise(rng, size, cells)
        total += amp
        amp *= 0.5
    return out / total


def _mix(c1: np.ndarray, c2: np.ndarray, t: np.ndarray) -> np.ndarray:
    t = np.clip(t, 0.0, 1.0)[..., None]
    return c1 * (1 - t) + c2 * t


def _grid(size: int) -> tuple[np.ndarray, np.ndarray]:
    """Row (y, down) and column (x, right) coordinates in [0, 1), shape (size, size)."""
    c = (np.arange(size) + 0.5) / size
    return np.meshgrid(c, c, indexing="ij")


# ---- kinds ---------------------------------------------------------------------------------
def _wood(rng, c1, c2, size=256):
    y, x = _grid(size)
    warp = _fbm(rng, size, 2, 3)
    rings = np.sin((y * 9 + warp * 3.0 + 0.15 * np.sin(x * 2 * np.pi)) * 2 * np.pi)
    fine = _value_noise(rng, size, 64)
    streaks = _value_noise(rng, size, 32)[:, :1] * np.ones((1, size))  # grain along x (u)
    t = 0.5 + 0.3 * rings + 0.25 * (streaks - 0.5) + 0.1 * (fine - 0.5)
    return _mix(c1, c2, t)


def _fabric(rng, c1, c2, size=128):
    y, x = _grid(size)
    n = 16
    warp_thread = 0.5 + 0.5 * np.cos(x * n * 2 * np.pi)
    weft_thread = 0.5 + 0.5 * np.cos(y * n * 2 * np.pi)
    over = ((np.floor(x * n) + np.floor(y * n)) % 2).astype(float)
    t = over * warp_thread * 0.6 + (1 - over) * weft_thread * 0.6 + 0.25 * _value_noise(rng, size, 32)
    return _mix(c1, c2, t) * (0.85 + 0.15 * _value_noise(rng, size, 8))[..., None]


def _tiles(rng, c1, c2, size=256):
    y, x = _grid(size)
    n = 4
    fx, fy = (x * n) % 1.0, (y * n) % 1.0
    grout = (np.minimum(np.minimum(fx, 1 - fx), np.minimum(fy, 1 - fy)) < 0.03).astype(float)
    tint = rng.normal(0, 0.03, (n, n))[np.floor(y * n).astype(int), np.floor(x * n).astype(int)]
    base = c1[None, None, :] * (1 + tint[..., None] + 0.04 * (_value_noise(rng, size, 16) - 0.5)[..., None])
    return base * (1 - grout[..., None]) + c2 * grout[..., None]


def _carpet(rng, c1, c2, size=128):
    t = 0.6 * rng.random((size, size)) + 0.4 * _fbm(rng, size, 4, 3)
    return _mix(c1, c2, t)


def _marble(rng, c1, c2, size=256):
    y, x = _grid(size)
    turb = _fbm(rng, size, 3, 5)
    veins = np.abs(np.sin((x * 3 + y * 2 + turb * 4.0) * np.pi))
    t = np.clip(1.0 - veins, 0, 1) ** 6 * 0.9 + 0.1 * _value_noise(rng, size, 16)
    return _mix(c1, c2, t)


def _brick(rng, c1, c2, size=256):
    y, x = _grid(size)
    rows, cols = 8, 4
    r = np.floor(y * rows)
    xs = x * cols + 0.5 * (r % 2)
    fx, fy = xs % 1.0, (y * rows) % 1.0
    mortar = ((fx < 0.03) | (fx > 0.97) | (fy < 0.06) | (fy > 0.94)).astype(float)
    brick_id = (r * 13 + np.floor(xs)).astype(int) % 64
    tint = rng.normal(0, 0.08, 64)[brick_id]
    body = c1[None, None, :] * (1 + tint[..., None] + 0.15 * (_value_noise(rng, size, 32) - 0.5)[..., None])
    return body * (1 - mortar[..., None]) + c2 * mortar[..., None]


def _noise(rng, c1, c2, size=128):
    return _mix(c1, c2, _fbm(rng, size, 4, 4))


def _painting(rng, c1, c2, size=256):
    style = int(rng.integers(3))
    y, x = _grid(size)
    if style == 0:  # landscape: sky gradient, sun, two hill ranges
        sky_top = np.array([0.35, 0.55, 0.9]) * rng.uniform(0.8, 1.1)
        sky_bot = np.array([0.95, 0.85, 0.7])
        img = _mix(sky_top, sky_bot, y / 0.6)
        sx, sy, sr = rng.uniform(0.2, 0.8), rng.uniform(0.15, 0.35), rng.uniform(0.05, 0.1)
        sun = ((x - sx) ** 2 + (y - sy) ** 2) < sr ** 2
        img[sun] = np.array([1.0, 0.9, 0.45])
        for k, col in enumerate((np.array([0.35, 0.5, 0.3]), np.array([0.2, 0.4, 0.15]))):
            ph, fr = rng.uniform(0, 2 * np.pi), rng.uniform(1.5, 4.0)
            h = 0.55 + 0.12 * k + 0.07 * np.sin(x * fr * np.pi + ph) + 0.03 * np.sin(x * 9 + ph)
            img[y > h] = np.clip(col * rng.uniform(0.8, 1.2), 0, 1)
        return img * (0.92 + 0.08 * _value_noise(rng, size, 32))[..., None]
    if style == 1:  # abstract shapes on a tinted ground
        img = np.ones((size, size, 3)) * _mix(c1, c2, _fbm(rng, size, 2, 2))
        for _ in range(int(rng.integers(5, 10))):
            col = rng.random(3)
            cx, cy, r = rng.random(), rng.random(), rng.uniform(0.06, 0.25)
            if rng.random() < 0.5:
                mask = (x - cx) ** 2 + (y - cy) ** 2 < r ** 2
            else:
                mask = (np.abs(x - cx) < r) & (np.abs(y - cy) < r * rng.uniform(0.3, 1.0))
            img[mask] = col
        return img
    # portrait: dark background, shoulders and a head blob
    bg = rng.uniform(0.1, 0.35, 3)
    img = np.ones((size, size, 3)) * bg * (0.8 + 0.4 * _value_noise(rng, size, 4))[..., None]
    cloth = rng.uniform(0.1, 0.7, 3)
    body = ((x - 0.5) / 0.38) ** 2 + ((y - 1.05) / 0.4) ** 2 < 1
    img[body] = cloth
    skin = np.array([0.85, 0.66, 0.52]) * rng.uniform(0.6, 1.05)
    head = ((x - 0.5) / 0.16) ** 2 + ((y - 0.42) / 0.21) ** 2 < 1
    img[head] = skin
    hair = head & (y < 0.32)
    img[hair] = rng.uniform(0.05, 0.45) * np.array([1.0, 0.75, 0.5])
    return img


def _paper(rng, c1, c2, size=256):
    y, x = _grid(size)
    img = np.ones((size, size, 3)) * c1 * (0.97 + 0.03 * _value_noise(rng, size, 16))[..., None]
    n_lines = 22
    line = np.floor((y - 0.1) / 0.8 * n_lines)
    in_band = (y > 0.1) & (y < 0.9) & ((((y - 0.1) / 0.8 * n_lines) % 1.0) < 0.35)
    ends = rng.uniform(0.55, 0.9, n_lines + 1)
    ends[rng.random(n_lines + 1) < 0.15] = rng.uniform(0.2, 0.5)
    word_gaps = _value_noise(rng, size, 48)[0][None, :] > 0.25
    idx = np.clip(line, 0, n_lines).astype(int)
    text = in_band & (x > 0.1) & (x < ends[idx]) & word_gaps
    img[text] = c2
    return img


def _book_spine(rng, c1, c2, size=128):
    y, x = _grid(size)
    img = np.ones((size, size, 3)) * c1 * (0.9 + 0.1 * _value_noise(rng, size, 16))[..., None]
    for b in rng.choice([0.06, 0.1, 0.88, 0.92], size=2, replace=False):
        img[np.abs(y - b) < 0.015] = c2
    # title marks: blocks of "letters" running down the spine centre
    letters = (np.floor(y * 28) % 2 == 0) & (y > 0.22) & (y < rng.uniform(0.55, 0.78))
    img[letters & (np.abs(x - 0.5) < 0.18)] = c2
    return img


def _screen(rng, c1, c2, size=128):
    y, x = _grid(size)
    t = 0.6 * (1 - y) * x + 0.15 * _value_noise(rng, size, 4)
    return _mix(c1, c2, t)


TEXTURE_KINDS: dict[str, Callable[[np.random.Generator, np.ndarray, np.ndarray], np.ndarray]] = {
    "wood": _wood, "fabric": _fabric, "painting": _painting, "tiles": _tiles, "carpet": _carpet,
    "marble": _marble, "brick": _brick, "paper": _paper, "book_spine": _book_spine,
    "screen": _screen, "noise": _noise,
}
"""Generator of each kind: ``(rng, color, color2) -> (S, S, 3)`` float RGB in 0-1."""
