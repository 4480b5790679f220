"""Object builders: one function per category, each returning :class:`Part` lists at real sizes.

Every builder has the signature ``build_<name>(rng, size) -> list[Part]`` with ``size = (sx, sy,
sz)`` (depth, width, height in metres, local frame of scenes/geometry.py: origin at the footprint
centre on the supporting surface, front towards +x). The parts fill the box
``[-sx/2, sx/2] x [-sy/2, sy/2] x [0, sz]`` (a few builders, e.g. a mug's handle, reach exactly to
its faces), so the object's AABB is its sampled size. Colours and procedural textures are drawn
from ``rng``; texture kinds are the renderer's (spatialscout_gym/render/textures.py).
"""

from __future__ import annotations

from typing import Callable, Sequence

import numpy as np

from spatialscout_gym.core.spec import Material, Part
from spatialscout_gym.core.types import ArrayLike3
from spatialscout_gym.scenes.geometry import (box, cyl_x, cyl_y, cyl_z, ellipsoid, lathe, mat,
                                              sphere, torus)

__all__ = ["BUILDERS", "build_object", "wood", "fabric"]

Builder = Callable[[np.random.Generator, np.ndarray], list[Part]]
BUILDERS: dict[str, Builder] = {}

_WOODS = [(0.55, 0.36, 0.2), (0.42, 0.26, 0.14), (0.7, 0.52, 0.32), (0.3, 0.2, 0.12),
          (0.82, 0.68, 0.5), (0.6, 0.45, 0.3)]
_FABRICS = [(0.25, 0.35, 0.55), (0.55, 0.2, 0.2), (0.35, 0.5, 0.35), (0.6, 0.6, 0.58),
            (0.2, 0.2, 0.22), (0.75, 0.65, 0.45), (0.45, 0.3, 0.5), (0.15, 0.4, 0.45)]
_BRIGHT = [(0.85, 0.15, 0.15), (0.15, 0.45, 0.85), (0.95, 0.75, 0.1), (0.2, 0.65, 0.3),
           (0.9, 0.45, 0.1), (0.6, 0.25, 0.7), (0.95, 0.95, 0.95), (0.1, 0.1, 0.1)]


def _seed(rng: np.random.Generator) -> int:
    return int(rng.integers(0, 2**31 - 1))


def _pick(rng: np.random.Generator, palette) -> tuple[float, float, float]:
    c = np.asarray(palette[int(rng.integers(len(palette)))], float)
    return tuple(np.clip(c * rng.uniform(0.9, 1.1), 0, 1))


def wood(rng: np.random.Generator, color: Sequence[float] | None = None) -> Material:
    c = _pick(rng, _WOODS) if color is None else color
    return mat(c, 0.6, texture={"kind": "wood", "seed": _seed(rng), "color": list(c),
                                "color2": [x * 0.7 for x in c], "scale": 2.0})


def fabric(rng: np.random.Generator, color: Sequence[float] | None = None) -> Material:
    c = _pick(rng, _FABRICS) if color is None else color
    return mat(c, 0.95, texture={"kind": "fabric", "seed": _seed(rng), "color": list(c),
                                 "color2": [x * 0.8 for x in c], "scale": 4.0})


def _texture_color(m: Material, key: str = "color") -> list[float]:
    """A colour (``"color"`` or ``"color2"``) of a :func:`wood` or :func:`fabric` texture."""
    assert m.texture is not None    # wood() and fabric() always give a texture
    return m.texture[key]


def _flat(rng, palette, rough=0.5, metallic=0.0):
    return mat(_pick(rng, palette), rough, metallic)


METAL = mat((0.7, 0.7, 0.72), 0.3, 0.9)
DARK_METAL = mat((0.15, 0.15, 0.16), 0.4, 0.6)
WHITE = mat((0.93, 0.93, 0.92), 0.3)
CERAMIC = mat((0.95, 0.95, 0.95), 0.15)
BLACK = mat((0.04, 0.04, 0.05), 0.4)
GLASS = mat((0.55, 0.72, 0.85), 0.05, 0.1)


def _screen(rng):
    return mat((0.03, 0.03, 0.05), 0.1, texture={"kind": "screen", "seed": _seed(rng)})


def builder(name: str) -> Callable[[Builder], Builder]:
    def deco(fn: Builder) -> Builder:
        BUILDERS[name] = fn
        return fn
    return deco


def build_object(category: str, rng: np.random.Generator, size: ArrayLike3) -> list[Part]:
    """Parts of one ``category`` instance of full size ``size`` (3,) in its local frame."""
    try:
        fn = BUILDERS[category]
    except KeyError:
        raise KeyError(f"no builder for category {category!r}; known: {sorted(BUILDERS)}") from None
    return fn(rng, np.asarray(size, float))


# ---------------------------------------------------------------- furniture ----------------
def _legs(sx, sy, h, t, material, inset=0.02, round_legs=False):
    out = []
    for ix in (-1, 1):
        for iy in (-1, 1):
            c = (ix * (sx / 2 - inset - t / 2), iy * (sy / 2 - inset - t / 2), h / 2)
            out.append(cyl_z(c, t / 2, h, material) if round_legs else box(c, (t, t, h), material))
    return out


@builder("Chair")
def build_chair(rng: np.random.Generator, s: np.ndarray) -> list[Part]:
    sx, sy, sz = s
    m = wood(rng)
    seat_h = 0.45
    seat = m if rng.random() < 0.5 else fabric(rng)
    parts = _legs(sx, sy, seat_h - 0.04, 0.035, m, inset=0.0)
    parts.append(box((0, 0, seat_h - 0.02), (sx, sy, 0.04), seat))
    back_h = sz - seat_h
    parts += [box((-sx / 2 + 0.0175, iy * (sy / 2 - 0.0175), seat_h + back_h / 2), (0.035, 0.035, back_h), m)
              for iy in (-1, 1)]
    parts.append(box((-sx / 2 + 0.015, 0, sz - 0.09), (0.03, sy - 0.07, 0.16), m))
    parts.append(box((-sx / 2 + 0.015, 0, seat_h + back_h * 0.35), (0.02, sy - 0.07, 0.05), m))
    return parts


@builder("Stool")
def build_stool(rng: np.random.Generator, s: np.ndarray) -> list[Part]:
    sx, sy, sz = s
    m = wood(rng)
    parts = _legs(sx, sy, sz - 0.04, 0.03, m, inset=0.0, round_legs=True)
    parts.append(cyl_z((0, 0, sz - 0.02), min(sx, sy) / 2, 0.04, fabric(rng) if rng.random() < .5 else m))
    parts.append(box((0, 0, 0.25), (sx - 0.06, 0.02, 0.02), m))
    return parts


@builder("ArmChair")
def build_armchair(rng: np.random.Generator, s: np.ndarray) -> list[Part]:
    sx, sy, sz = s
    f = fabric(rng)
    arm = 0.14
    parts = [box((0.02, 0, 0.2), (sx - 0.04, sy - 2 * arm, 0.3), f),           # base
             box((0.04, 0, 0.41), (sx - 0.12, sy - 2 * arm, 0.12), fabric(rng, _texture_color(f, "color"))),
             box((-sx / 2 + 0.1, 0, (sz + 0.05) / 2), (0.2, sy, sz - 0.05), f)]   # back
    parts += [box((0.0, iy * (sy / 2 - arm / 2), 0.33), (sx, arm, 0.56), f) for iy in (-1, 1)]
    m = wood(rng)
    parts += [box((ix * (sx / 2 - 0.05), iy * (sy / 2 - 0.05), 0.025), (0.04, 0.04, 0.05), m)
              for ix in (-1, 1) for iy in (-1, 1)]
    return parts


@builder("Sofa")
def build_sofa(rng: np.random.Generator, s: np.ndarray) -> list[Part]:
    sx, sy, sz = s
    f = fabric(rng)
    arm = 0.18
    n = 3 if sy > 1.9 else 2
    inner = sy - 2 * arm
    parts = [box((0.02, 0, 0.23), (sx - 0.04, sy - 0.02, 0.3), f),
             box((-sx / 2 + 0.11, 0, (sz + 0.1) / 2), (0.22, sy, sz - 0.1), f)]
    parts += [box((0.0, iy * (sy / 2 - arm / 2), 0.33), (sx, arm, 0.6), f) for iy in (-1, 1)]
    cw = inner / n
    for k in range(n):
        y = -inner / 2 + cw * (k + 0.5)
        parts.append(box((0.06, y, 0.44), (sx - 0.26, cw - 0.015, 0.12), fabric(rng, _texture_color(f, "color"))))
    parts += [box((ix * (sx / 2 - 0.06), iy * (sy / 2 - 0.06), 0.04), (0.05, 0.05, 0.08), DARK_METAL)
              for ix in (-1, 1) for iy in (-1, 1)]
    return parts


@builder("Ottoman")
def build_ottoman(rng: np.random.Generator, s: np.ndarray) -> list[Part]:
    sx, sy, sz = s
    return [box((0, 0, sz / 2 + 0.02), (sx, sy, sz - 0.04), fabric(rng)),
            box((0, 0, 0.01), (sx - 0.06, sy - 0.06, 0.02), DARK_METAL)]


def _table(rng, s, top_t=0.04, m=None, leg=0.05, round_legs=False):
    sx, sy, sz = s
    m = m or wood(rng)
    parts = [box((0, 0, sz - top_t / 2), (sx, sy, top_t), m)]
    parts += _legs(sx, sy, sz - top_t, leg, m, inset=0.04, round_legs=round_legs)
    return parts


@builder("DiningTable")
def build_dining_table(rng: np.random.Generator, s: np.ndarray) -> list[Part]:
    return _table(rng, s, 0.045, leg=0.07)


@builder("CoffeeTable")
def build_coffee_table(rng: np.random.Generator, s: np.ndarray) -> list[Part]:
    sx, sy, sz = s
    m = wood(rng)
    parts = _table(rng, s, 0.04, m, 0.05)
    parts.append(box((0, 0, 0.12), (sx - 0.1, sy - 0.1, 0.02), m))  # lower shelf
    return parts


@builder("SideTable")
def build_side_table(rng: np.random.Generator, s: np.ndarray) -> list[Part]:
    sx, sy, sz = s
    m = wood(rng)
    parts = _table(rng, s, 0.03, m, 0.04)
    parts.append(box((0.0, 0, sz - 0.12), (sx - 0.04, sy - 0.04, 0.15), m))  # drawer box
    parts.append(sphere((sx / 2 - 0.012, 0, sz - 0.12), 0.012, METAL))
    return parts


@builder("Desk")
def build_desk(rng: np.random.Generator, s: np.ndarray) -> list[Part]:
    sx, sy, sz = s
    m = wood(rng)
    parts = [box((0, 0, sz - 0.02), (sx, sy, 0.04), m)]
    ped = 0.4
    parts.append(box((0, sy / 2 - ped / 2, (sz - 0.04) / 2), (sx, ped, sz - 0.04), m))
    for k in range(3):
        z = (sz - 0.04) * (k + 0.5) / 3
        parts.append(box((sx / 2 - 0.004, sy / 2 - ped / 2, z), (0.008, ped - 0.06, 0.18), wood(rng, _texture_color(m, "color2"))))
    parts += [box((ix * (sx / 2 - 0.03), -sy / 2 + 0.03, (sz - 0.04) / 2), (0.05, 0.05, sz - 0.04), m)
              for ix in (-1, 1)]
    return parts


@builder("Bed")
def build_bed(rng: np.random.Generator, s: np.ndarray) -> list[Part]:
    sx, sy, sz = s
    m = wood(rng)
    frame_h = 0.35
    parts = [box((0.03, 0, frame_h / 2), (sx - 0.06, sy, frame_h), m),
             box((0.03, 0, frame_h + 0.11), (sx - 0.1, sy - 0.04, 0.22), WHITE),        # mattress
             box((0.25, 0, frame_h + 0.23), (sx - 0.6, sy - 0.02, 0.04), fabric(rng)),  # duvet
             box((-sx / 2 + 0.03, 0, sz / 2), (0.06, sy, sz), m)]                       # headboard
    return parts


def _cabinet_body(rng, s, m, n_drawers, handle=METAL):
    sx, sy, sz = s
    parts = [box((0, 0, sz / 2 + 0.04), (sx, sy, sz - 0.08), m),
             box((0, 0, 0.02), (sx - 0.04, sy - 0.04, 0.04), DARK_METAL)]
    h = (sz - 0.1) / n_drawers
    for k in range(n_drawers):
        z = 0.07 + h * (k + 0.5)
        parts.append(box((sx / 2 - 0.005, 0, z), (0.01, sy - 0.05, h - 0.02), wood(rng, _texture_color(m, "color"))))
        parts.append(cyl_y((sx / 2 - 0.008, 0, z), 0.008, min(0.2, sy * 0.3), handle))
    return parts


@builder("Dresser")
def build_dresser(rng: np.random.Generator, s: np.ndarray) -> list[Part]:
    return _cabinet_body(rng, s, wood(rng), int(rng.integers(3, 5)))


@builder("Safe")
def build_safe(rng: np.random.Generator, s: np.ndarray) -> list[Part]:
    sx, sy, sz = s
    return [box((0, 0, sz / 2), (sx - 0.01, sy, sz), DARK_METAL),
            box((sx / 2 - 0.005, 0, sz / 2), (0.01, sy - 0.06, sz - 0.06), mat((0.25, 0.25, 0.27), .4, .7)),
            cyl_x((sx / 2 - 0.005, 0.05, sz / 2), 0.03, 0.01, METAL)]


@builder("ShelvingUnit")
def build_shelving_unit(rng: np.random.Generator, s: np.ndarray) -> list[Part]:
    sx, sy, sz = s
    m = wood(rng)
    t = 0.025
    parts = [box((0, iy * (sy / 2 - t / 2), sz / 2), (sx, t, sz), m) for iy in (-1, 1)]
    parts.append(box((-sx / 2 + 0.005, 0, sz / 2), (0.01, sy - 2 * t, sz), m))
    for z in shelf_levels(sz):
        parts.append(box((0, 0, z - t / 2), (sx, sy - 2 * t, t), m))
    parts.append(box((0, 0, sz - t / 2), (sx, sy - 2 * t, t), m))
    return parts


def shelf_levels(sz: float) -> list[float]:
    """Heights of the shelf boards' top faces of a ShelvingUnit of height ``sz``, metres."""
    n = 4 if sz > 1.7 else 3
    return [0.08 + (sz - 0.12) * k / n for k in range(n)]


@builder("TVStand")
def build_tv_stand(rng: np.random.Generator, s: np.ndarray) -> list[Part]:
    sx, sy, sz = s
    m = wood(rng)
    parts = [box((0, 0, sz / 2 + 0.03), (sx, sy, sz - 0.06), m)]
    parts += [box((sx / 2 - 0.004, iy * sy / 4, sz / 2 + 0.03), (0.008, sy / 2 - 0.04, sz - 0.12),
                  wood(rng, _texture_color(m, "color2"))) for iy in (-1, 1)]
    parts += [box((ix * (sx / 2 - 0.04), iy * (sy / 2 - 0.04), 0.015), (0.03, 0.03, 0.03), DARK_METAL)
              for ix in (-1, 1) for iy in (-1, 1)]
    return parts


@builder("Television")
def build_television(rng: np.random.Generator, s: np.ndarray) -> list[Part]:
    sx, sy, sz = s
    stand_h = 0.08
    return [box((0, 0, 0.01), (sx, sy * 0.35, 0.02), BLACK),
            box((-0.005, 0, stand_h / 2), (0.03, 0.06, stand_h), BLACK),
            box((0, 0, stand_h + (sz - stand_h) / 2), (0.035, sy, sz - stand_h), BLACK),
            box((0.0185, 0, stand_h + (sz - stand_h) / 2), (0.002, sy - 0.03, sz - stand_h - 0.03), _screen(rng))]


@builder("Fridge")
def build_fridge(rng: np.random.Generator, s: np.ndarray) -> list[Part]:
    sx, sy, sz = s
    body = _flat(rng, [(0.92, 0.92, 0.92), (0.75, 0.76, 0.78), (0.2, 0.2, 0.22)], 0.3, 0.4)
    split = sz * 0.62
    return [box((-0.02, 0, sz / 2), (sx - 0.04, sy, sz), body),
            box((sx / 2 - 0.02, 0, split / 2), (0.04, sy - 0.01, split - 0.02), body),
            box((sx / 2 - 0.02, 0, (sz + split) / 2), (0.04, sy - 0.01, sz - split - 0.02), body),
            box((sx / 2 - 0.01, -sy / 2 + 0.06, split - 0.3), (0.02, 0.025, 0.35), METAL),
            box((sx / 2 - 0.01, -sy / 2 + 0.06, split + 0.2), (0.02, 0.025, 0.25), METAL)]


@builder("GarbageCan")
def build_garbage_can(rng: np.random.Generator, s: np.ndarray) -> list[Part]:
    sx, sy, sz = s
    r = min(sx, sy) / 2
    m = _flat(rng, [(0.3, 0.3, 0.32), (0.7, 0.7, 0.72), (0.2, 0.45, 0.25), (0.9, 0.9, 0.9)], 0.4, 0.5)
    return [lathe([(r * 0.82, 0), (r, sz - 0.02), (r * 0.98, sz - 0.02), (r * 0.98, sz)], m),
            cyl_z((0, 0, sz - 0.01), r * 0.9, 0.02, BLACK)]


@builder("FloorLamp")
def build_floor_lamp(rng: np.random.Generator, s: np.ndarray) -> list[Part]:
    sx, sy, sz = s
    r = min(sx, sy) / 2
    shade = mat((0.95, 0.9, 0.75), 0.9)
    return [cyl_z((0, 0, 0.015), r * 0.7, 0.03, DARK_METAL),
            cyl_z((0, 0, (sz - 0.3) / 2), 0.012, sz - 0.3, DARK_METAL),
            lathe([(r, sz - 0.32), (r * 0.6, sz), (0.0, sz)], shade)]


@builder("DeskLamp")
def build_desk_lamp(rng: np.random.Generator, s: np.ndarray) -> list[Part]:
    sx, sy, sz = s
    m = _flat(rng, _BRIGHT, 0.4, 0.3)
    r = min(sx, sy) / 2
    return [cyl_z((0, 0, 0.01), r * 0.6, 0.02, m),
            cyl_z((0, 0, (sz - 0.14) / 2 + 0.01), 0.01, sz - 0.14, METAL),
            lathe([(r, sz - 0.14), (r * 0.35, sz), (0, sz)], m)]


def _pot_and_leaves(rng, r, h_pot, sz):
    pot = _flat(rng, [(0.7, 0.35, 0.2), (0.9, 0.9, 0.88), (0.2, 0.2, 0.22), (0.55, 0.5, 0.45)], 0.6)
    green = [(0.15, 0.45, 0.15), (0.2, 0.55, 0.2), (0.1, 0.35, 0.12)]
    rp = r * 0.6
    parts = [lathe([(rp * 0.7, 0), (rp, h_pot), (rp * 0.92, h_pot), (rp * 0.92, h_pot + 0.005)], pot),
             cyl_z((0, 0, h_pot - 0.01), rp * 0.9, 0.02, mat((0.25, 0.17, 0.1), 1.0))]
    foliage = sz - h_pot
    n = int(rng.integers(4, 7))
    for k in range(n):
        a = 2 * np.pi * k / n + rng.uniform(-0.2, 0.2)
        rr = r * rng.uniform(0.45, 0.5)
        lr = np.array([r * 0.5, r * 0.5, foliage * 0.35])
        c = (rr * np.cos(a), rr * np.sin(a), h_pot + foliage * 0.45)
        parts.append(ellipsoid(lr, mat(_pick(rng, green), 0.8), c, segments=8, rings=5))
    parts.append(ellipsoid((r * 0.55, r * 0.55, foliage * 0.3), mat(_pick(rng, green), 0.8),
                           (0, 0, sz - foliage * 0.3), segments=8, rings=5))
    return parts


@builder("HousePlant")
def build_house_plant(rng: np.random.Generator, s: np.ndarray) -> list[Part]:
    sx, sy, sz = s
    r = min(sx, sy) / 2
    return _pot_and_leaves(rng, r, sz * 0.35, sz)


@builder("Toilet")
def build_toilet(rng: np.random.Generator, s: np.ndarray) -> list[Part]:
    sx, sy, sz = s
    return [box((-sx / 2 + 0.09, 0, sz - 0.2), (0.18, sy, 0.4), CERAMIC),           # tank
            cyl_z((0.02, 0, 0.19), 0.13, 0.38, CERAMIC),                            # pedestal
            ellipsoid((sx / 2 - 0.09, sy / 2 - 0.01, 0.06), CERAMIC, (0.07, 0, 0.38)),
            box((0.07, 0, 0.44), (sx - 0.2, sy - 0.04, 0.02), WHITE),
            box((-sx / 2 + 0.15, sy / 2 - 0.06, sz - 0.03), (0.02, 0.06, 0.015), METAL)]


@builder("Bathtub")
def build_bathtub(rng: np.random.Generator, s: np.ndarray) -> list[Part]:
    sx, sy, sz = s
    t = 0.07
    return [box((0, 0, 0.04), (sx, sy, 0.08), CERAMIC),
            box((sx / 2 - t / 2, 0, sz / 2), (t, sy, sz), CERAMIC),
            box((-sx / 2 + t / 2, 0, sz / 2), (t, sy, sz), CERAMIC),
            box((0, sy / 2 - t / 2, sz / 2), (sx - 2 * t, t, sz), CERAMIC),
            box((0, -sy / 2 + t / 2, sz / 2), (sx - 2 * t, t, sz), CERAMIC),
            box((0, 0, 0.1), (sx - 2 * t, sy - 2 * t, 0.02), mat((0.7, 0.85, 0.95), 0.05))]


@builder("Sink")
def build_sink(rng: np.random.Generator, s: np.ndarray) -> list[Part]:  # pedestal wash basin
    sx, sy, sz = s
    return [cyl_z((-0.05, 0, (sz - 0.15) / 2), 0.09, sz - 0.15, CERAMIC),
            box((0, 0, sz - 0.075), (sx, sy, 0.15), CERAMIC),
            ellipsoid((sx / 2 - 0.08, sy / 2 - 0.07, 0.01), mat((0.75, 0.8, 0.85), 0.1), (0.03, 0, sz - 0.011))]


@builder("Faucet")
def build_faucet(rng: np.random.Generator, s: np.ndarray) -> list[Part]:
    sx, sy, sz = s
    return [cyl_z((-sx / 2 + sy / 2, 0, sz / 2), sy / 2, sz, METAL),
            cyl_x((0.0, 0, sz - 0.012), 0.012, sx - 0.002, METAL),
            cyl_z((sx / 2 - 0.012, 0, sz - 0.04), 0.01, 0.05, METAL)]


@builder("SinkBasin")
def build_sink_basin(rng: np.random.Generator, s: np.ndarray) -> list[Part]:
    """Catalog v2.0's Sink: a basin resting on a counter (AI2-THOR's sinks are counter basins).
    The back deck (local -x, 30 % of the depth) carries the faucet."""
    sx, sy, sz = s
    t, back = 0.03, 0.3 * sx
    inner = mat((0.78, 0.82, 0.86), 0.1)
    return [box((0, 0, 0.01), (sx, sy, 0.02), CERAMIC),
            box((-sx / 2 + back / 2, 0, sz / 2), (back, sy, sz), CERAMIC),
            box((sx / 2 - t / 2, 0, sz / 2), (t, sy, sz), CERAMIC),
            box((back / 2 - t / 2, sy / 2 - t / 2, sz / 2), (sx - back - t, t, sz), CERAMIC),
            box((back / 2 - t / 2, -sy / 2 + t / 2, sz / 2), (sx - back - t, t, sz), CERAMIC),
            box((back / 2 - t / 2, 0, 0.025), (sx - back - t, sy - 2 * t, 0.01), inner)]


@builder("FaucetWide")
def build_faucet_wide(rng: np.random.Generator, s: np.ndarray) -> list[Part]:
    """Catalog v2.0's Faucet: base plate, spout and two handles spanning its width (AI2-THOR's
    faucet boxes include the handles). Its back (local -x) rests on a basin's back rim."""
    sx, sy, sz = s
    r = float(np.clip(0.08 * sy, 0.012, 0.025))
    base_d = 0.06
    x_post = -sx / 2 + base_d / 2
    return [box((x_post, 0, 0.01), (base_d, sy, 0.02), METAL),
            cyl_z((x_post, 0, sz / 2), r, sz, METAL),
            cyl_x((x_post / 2 + (sx / 2 - r) / 2, 0, sz - r), r * 0.8, sx / 2 - r - x_post, METAL),
            cyl_z((sx / 2 - r, 0, sz - r - 0.03), r * 0.8, 0.06, METAL),
            cyl_z((x_post, -sy / 2 + 0.025, 0.05), 0.022, 0.06, METAL),
            cyl_z((x_post, sy / 2 - 0.025, 0.05), 0.022, 0.06, METAL)]


@builder("LaundryHamper")
def build_laundry_hamper(rng: np.random.Generator, s: np.ndarray) -> list[Part]:
    sx, sy, sz = s
    m = mat(_pick(rng, [(0.75, 0.65, 0.45), (0.9, 0.9, 0.88), (0.4, 0.55, 0.7)]), 0.9,
            texture={"kind": "fabric", "seed": _seed(rng), "scale": 8.0})
    return [box((0, 0, sz / 2), (sx, sy, sz), m), box((0, 0, sz - 0.01), (sx - 0.04, sy - 0.04, 0.02), fabric(rng))]


@builder("DogBed")
def build_dog_bed(rng: np.random.Generator, s: np.ndarray) -> list[Part]:
    sx, sy, sz = s
    f = fabric(rng)
    return [box((0, 0, 0.04), (sx, sy, 0.08), f),
            box((-sx / 2 + 0.05, 0, sz / 2), (0.1, sy, sz), f),
            box((0.05, sy / 2 - 0.05, sz / 2), (sx - 0.1, 0.1, sz), f),
            box((0.05, -sy / 2 + 0.05, sz / 2), (sx - 0.1, 0.1, sz), f)]


@builder("Boots")
def build_boots(rng: np.random.Generator, s: np.ndarray) -> list[Part]:
    sx, sy, sz = s
    m = _flat(rng, [(0.3, 0.18, 0.1), (0.08, 0.08, 0.08), (0.5, 0.35, 0.2)], 0.6)
    w = sy / 2 - 0.01
    parts = []
    for iy in (-1, 1):
        y = iy * (sy / 4 + 0.0)
        parts += [box((0, y, 0.05), (sx, w, 0.1), m),
                  box((-sx / 2 + 0.06, y, sz / 2), (0.12, w, sz), m)]
    return parts


@builder("BasketBall")
def build_basketball(rng: np.random.Generator, s: np.ndarray) -> list[Part]:
    r = s[2] / 2
    return [sphere((0, 0, r), r, mat((0.85, 0.4, 0.1), 0.8)),
            torus(r - 0.004, 0.003, BLACK, (0, 0, r), axis="x", segments=16, sides=4)]


@builder("Plunger")
def build_plunger(rng: np.random.Generator, s: np.ndarray) -> list[Part]:
    sx, sy, sz = s
    r = min(sx, sy) / 2
    return [lathe([(r, 0), (r, 0.02), (r * 0.4, 0.09), (0.0, 0.09)], mat((0.6, 0.1, 0.1), 0.6)),
            cyl_z((0, 0, (sz + 0.09) / 2), 0.012, sz - 0.09, wood(rng))]


# ---------------------------------------------------------------- wall items ----------------
@builder("Painting")
def build_painting(rng: np.random.Generator, s: np.ndarray) -> list[Part]:
    sx, sy, sz = s
    frame = wood(rng) if rng.random() < 0.6 else _flat(rng, [(0.1, 0.1, 0.1), (0.85, 0.7, 0.3), (0.95, 0.95, 0.95)], 0.4, 0.3)
    f = min(0.06, 0.08 * min(sy, sz))
    pic = mat((0.8, 0.8, 0.8), 0.6, texture={"kind": "painting", "seed": _seed(rng)})
    return [box((-0.003, 0, sz / 2), (sx - 0.006, sy - 2 * f, sz - 2 * f), pic),
            box((0, sy / 2 - f / 2, sz / 2), (sx, f, sz), frame),
            box((0, -sy / 2 + f / 2, sz / 2), (sx, f, sz), frame),
            box((0, 0, sz - f / 2), (sx, sy - 2 * f, f), frame),
            box((0, 0, f / 2), (sx, sy - 2 * f, f), frame)]


@builder("Poster")
def build_poster(rng: np.random.Generator, s: np.ndarray) -> list[Part]:
    sx, sy, sz = s
    return [box((0, 0, sz / 2), (sx, sy, sz), mat((0.8, 0.8, 0.8), 0.8,
                                                 texture={"kind": "painting", "seed": _seed(rng)}))]


@builder("Window")
def build_window(rng: np.random.Generator, s: np.ndarray) -> list[Part]:
    sx, sy, sz = s
    frame = _flat(rng, [(0.95, 0.95, 0.95), (0.35, 0.25, 0.15), (0.2, 0.2, 0.2)], 0.4)
    sky = mat((0.65, 0.8, 0.95), 0.05, texture={"kind": "noise", "seed": _seed(rng),
                                                  "color": [0.6, 0.78, 0.95], "color2": [0.8, 0.9, 1.0],
                                                  "scale": 0.5})
    f = 0.06
    parts = [box((-0.01, 0, sz / 2), (sx - 0.02, sy - 2 * f, sz - 2 * f), sky),
             box((0, sy / 2 - f / 2, sz / 2), (sx, f, sz), frame),
             box((0, -sy / 2 + f / 2, sz / 2), (sx, f, sz), frame),
             box((0, 0, sz - f / 2), (sx, sy - 2 * f, f), frame),
             box((0, 0, f / 2), (sx, sy - 2 * f, f), frame),
             box((0, 0, sz / 2), (sx * 0.6, 0.03, sz - 2 * f), frame),           # mullion
             box((0, 0, sz * 0.55), (sx * 0.6, sy - 2 * f, 0.03), frame)]       # transom
    return parts


@builder("Mirror")
def build_mirror(rng: np.random.Generator, s: np.ndarray) -> list[Part]:
    sx, sy, sz = s
    frame = _flat(rng, [(0.85, 0.7, 0.3), (0.1, 0.1, 0.1), (0.9, 0.9, 0.9)], 0.3, 0.6)
    return [box((-0.003, 0, sz / 2), (sx - 0.006, sy, sz), frame),
            box((0, 0, sz / 2), (sx, sy - 0.05, sz - 0.05), mat((0.85, 0.88, 0.9), 0.02, 1.0))]


@builder("LightSwitch")
def build_light_switch(rng: np.random.Generator, s: np.ndarray) -> list[Part]:
    sx, sy, sz = s
    return [box((-0.002, 0, sz / 2), (sx - 0.004, sy, sz), WHITE),
            box((0, 0, sz / 2), (sx, 0.02, 0.035), mat((0.85, 0.85, 0.83), 0.3))]


@builder("TowelHolder")
def build_towel_holder(rng: np.random.Generator, s: np.ndarray) -> list[Part]:
    sx, sy, sz = s
    parts = [box((0, iy * (sy / 2 - 0.015), sz / 2), (sx, 0.03, sz), METAL) for iy in (-1, 1)]
    parts.append(cyl_y((sx / 2 - 0.012, 0, sz / 2), 0.012, sy - 0.06, METAL))
    return parts


@builder("Towel")
def build_towel(rng: np.random.Generator, s: np.ndarray) -> list[Part]:
    sx, sy, sz = s
    f = fabric(rng, _pick(rng, [(0.95, 0.95, 0.95), (0.3, 0.5, 0.8), (0.85, 0.4, 0.4), (0.9, 0.85, 0.6)]))
    return [box((0, 0, sz / 2), (sx, sy, sz), f)]


@builder("ToiletPaperHanger")
def build_toilet_paper_hanger(rng: np.random.Generator, s: np.ndarray) -> list[Part]:
    sx, sy, sz = s
    return [box((-sx / 2 + 0.005, 0, sz / 2), (0.01, sy, sz), METAL),
            box((0, -sy / 2 + 0.01, sz / 2), (sx, 0.02, 0.02), METAL),
            cyl_y((sx / 2 - 0.008, 0, sz / 2), 0.008, sy - 0.02, METAL)]


@builder("Blinds")
def build_blinds(rng: np.random.Generator, s: np.ndarray) -> list[Part]:
    sx, sy, sz = s
    m = _flat(rng, [(0.95, 0.95, 0.9), (0.7, 0.6, 0.45)], 0.6)
    return [box((0, 0, sz - 0.02), (sx, sy, 0.04), m),
            cyl_y((0, 0, (sz - 0.04) / 2), min(sx / 2, (sz - 0.04) / 2), sy - 0.02, m)]


@builder("Curtains")
def build_curtains(rng: np.random.Generator, s: np.ndarray) -> list[Part]:
    sx, sy, sz = s
    f = fabric(rng)
    n = 4
    w = sy / n
    return [box((0.0075 if k % 2 else -0.0075, -sy / 2 + w * (k + 0.5), sz / 2), (sx - 0.015, w, sz), f) for k in range(n)]


# ---------------------------------------------------------------- appliances ----------------
@builder("Microwave")
def build_microwave(rng: np.random.Generator, s: np.ndarray) -> list[Part]:
    sx, sy, sz = s
    body = _flat(rng, [(0.9, 0.9, 0.9), (0.15, 0.15, 0.16), (0.7, 0.7, 0.72)], 0.4, 0.4)
    return [box((-0.005, 0, sz / 2), (sx - 0.01, sy, sz), body),
            box((sx / 2 - 0.005, -0.06, sz / 2), (0.01, sy - 0.18, sz - 0.06), mat((0.05, 0.05, 0.06), 0.1)),
            box((sx / 2 - 0.005, sy / 2 - 0.06, sz / 2), (0.01, 0.09, sz - 0.06), BLACK)]


@builder("Toaster")
def build_toaster(rng: np.random.Generator, s: np.ndarray) -> list[Part]:
    sx, sy, sz = s
    body = _flat(rng, [(0.75, 0.75, 0.78), (0.8, 0.15, 0.15), (0.95, 0.95, 0.9)], 0.3, 0.6)
    return [box((0, 0, sz / 2 - 0.005), (sx, sy, sz - 0.01), body),
            box((-0.03, -sy / 4, sz - 0.004), (0.03, sy * 0.35, 0.008), BLACK),
            box((0.03, -sy / 4, sz - 0.004), (0.03, sy * 0.35, 0.008), BLACK),
            box((0, sy / 2 - 0.01, sz * 0.6), (0.02, 0.02, 0.03), BLACK)]


@builder("CoffeeMachine")
def build_coffee_machine(rng: np.random.Generator, s: np.ndarray) -> list[Part]:
    sx, sy, sz = s
    body = _flat(rng, [(0.1, 0.1, 0.1), (0.6, 0.6, 0.62), (0.55, 0.1, 0.1)], 0.4, 0.5)
    return [box((0, 0, 0.015), (sx, sy, 0.03), body),
            box((-sx / 4, 0, sz / 2), (sx / 2, sy, sz), body),
            box((0.02, 0, sz - 0.04), (sx - 0.04, sy, 0.08), body),
            cyl_z((sx / 4, 0, 0.08), 0.035, 0.1, GLASS)]


@builder("Kettle")
def build_kettle(rng: np.random.Generator, s: np.ndarray) -> list[Part]:
    sx, sy, sz = s
    m = _flat(rng, [(0.75, 0.75, 0.78), (0.1, 0.1, 0.1), (0.9, 0.9, 0.9), (0.7, 0.2, 0.15)], 0.3, 0.6)
    r = min(sx, sy) / 2
    return [lathe([(r * 0.95, 0), (r, sz * 0.4), (r * 0.7, sz * 0.8), (r * 0.3, sz * 0.85), (0, sz * 0.85)], m,
                  (0, -(sy / 2 - r), 0)),
            torus(sz * 0.22, 0.012, BLACK, (0, -(sy / 2 - r), sz - 0.012 - sz * 0.22), axis="x", segments=10),
            cyl_y((0, sy / 2 - 0.04, sz * 0.5), 0.012, 0.08, m)]


@builder("Pot")
def build_pot(rng: np.random.Generator, s: np.ndarray) -> list[Part]:
    sx, sy, sz = s
    r = min(sx, sy) / 2
    return [lathe([(r, 0), (r, sz - 0.02), (r * 0.95, sz - 0.02), (0, sz - 0.005)], METAL, (0, 0, 0)),
            cyl_y((0, sy / 2 - (sy / 2 - r) / 2, sz * 0.7), 0.01, sy / 2 - r, BLACK),
            cyl_y((0, -(sy / 2 - (sy / 2 - r) / 2), sz * 0.7), 0.01, sy / 2 - r, BLACK),
            sphere((0, 0, sz - 0.012), 0.012, BLACK)]


@builder("Pan")
def build_pan(rng: np.random.Generator, s: np.ndarray) -> list[Part]:
    sx, sy, sz = s
    r = sx / 2
    handle_len = sy - 2 * r
    return [lathe([(r * 0.85, 0), (r, sz), (r * 0.95, sz), (r * 0.82, 0.006), (0, 0.006)], DARK_METAL,
                  (0, -sy / 2 + r, 0)),
            box((0, sy / 2 - handle_len / 2, sz * 0.7), (0.03, handle_len, 0.015), BLACK)]


# ---------------------------------------------------------------- small items ---------------
@builder("Book")
def build_book(rng: np.random.Generator, s: np.ndarray) -> list[Part]:
    sx, sy, sz = s   # depth x width(thickness) x height, standing upright, spine at +x
    cover_c = _pick(rng, _BRIGHT + _FABRICS)
    cover = mat(cover_c, 0.6, texture={"kind": "book_spine", "seed": _seed(rng), "color": list(cover_c)})
    paper = mat((0.95, 0.93, 0.85), 0.9, texture={"kind": "paper", "seed": _seed(rng)})
    c = 0.003
    return [box((0, 0, sz / 2), (sx - 0.006, sy - 2 * c, sz - 2 * c), paper),
            box((0, sy / 2 - c / 2, sz / 2), (sx, c, sz), cover),
            box((0, -sy / 2 + c / 2, sz / 2), (sx, c, sz), cover),
            box((sx / 2 - c / 2, 0, sz / 2), (c, sy, sz), cover)]


def book_lying(rng: np.random.Generator, s: np.ndarray) -> list[Part]:
    """A Book lying flat: ``s`` is its (depth, width, height) *as placed* (height = thickness)."""
    sx, sy, sz = s
    cover_c = _pick(rng, _BRIGHT + _FABRICS)
    cover = mat(cover_c, 0.6, texture={"kind": "book_spine", "seed": _seed(rng), "color": list(cover_c)})
    paper = mat((0.95, 0.93, 0.85), 0.9, texture={"kind": "paper", "seed": _seed(rng)})
    c = 0.003
    return [box((-0.003, 0, sz / 2), (sx - 0.006, sy - 0.006, sz - 2 * c), paper),
            box((0, 0, c / 2), (sx, sy, c), cover),
            box((0, 0, sz - c / 2), (sx, sy, c), cover),
            box((-sx / 2 + c / 2, 0, sz / 2), (c, sy, sz), cover)]


@builder("Mug")
def build_mug(rng: np.random.Generator, s: np.ndarray) -> list[Part]:
    sx, sy, sz = s
    r = sy / 2
    m = _flat(rng, _BRIGHT, 0.25)
    hr = (sx - 2 * r) / 2     # handle ring fits between body and the +x face
    tube = min(0.006, hr * 0.45)
    return [lathe([(r * 0.95, 0), (r, 0.005), (r, sz), (r * 0.9, sz), (r * 0.9, sz * 0.15), (0, sz * 0.15)], m,
                  (-(sx / 2 - r), 0, 0), segments=14),
            torus(hr - tube + 0.004, tube, m, (sx / 2 - hr - 0.002 + 0.0, 0, sz * 0.5), axis="y", segments=10)]


@builder("Cup")
def build_cup(rng: np.random.Generator, s: np.ndarray) -> list[Part]:
    sx, sy, sz = s
    r = min(sx, sy) / 2
    m = mat(_pick(rng, [(0.95, 0.95, 0.95), (0.6, 0.8, 0.9), (0.9, 0.6, 0.3)]), 0.15)
    return [lathe([(r * 0.7, 0), (r, sz), (r * 0.9, sz), (r * 0.63, sz * 0.1), (0, sz * 0.1)], m)]


@builder("Plate")
def build_plate(rng: np.random.Generator, s: np.ndarray) -> list[Part]:
    sx, sy, sz = s
    r = min(sx, sy) / 2
    return [lathe([(r * 0.6, 0), (r * 0.65, sz * 0.5), (r, sz), (r * 0.95, sz), (r * 0.6, sz * 0.6), (0, sz * 0.6)],
                  CERAMIC if rng.random() < 0.7 else _flat(rng, _BRIGHT, 0.2), segments=18)]


@builder("Bowl")
def build_bowl(rng: np.random.Generator, s: np.ndarray) -> list[Part]:
    sx, sy, sz = s
    r = min(sx, sy) / 2
    m = CERAMIC if rng.random() < 0.5 else _flat(rng, _BRIGHT + _WOODS, 0.3)
    return [lathe([(r * 0.45, 0), (r * 0.8, sz * 0.45), (r, sz), (r * 0.92, sz), (r * 0.7, sz * 0.45),
                   (r * 0.35, sz * 0.2), (0, sz * 0.2)], m, segments=16)]


@builder("Knife")
def build_knife(rng: np.random.Generator, s: np.ndarray) -> list[Part]:
    sx, sy, sz = s
    hl = sy * 0.4
    return [box((0, -sy / 2 + hl / 2, sz / 2), (sx * 0.9, hl, sz), BLACK),
            box((0, hl / 2, 0.0015), (sx, sy - hl, 0.003), METAL)]


@builder("ButterKnife")
def build_butter_knife(rng: np.random.Generator, s: np.ndarray) -> list[Part]:
    sx, sy, sz = s
    return [box((0, -sy / 4, sz / 2), (sx * 0.5, sy / 2, sz), METAL),
            box((0, sy / 4, 0.0015), (sx, sy / 2, 0.003), METAL)]


@builder("Fork")
def build_fork(rng: np.random.Generator, s: np.ndarray) -> list[Part]:
    sx, sy, sz = s
    parts = [box((0, -sy * 0.15, sz / 2), (sx * 0.4, sy * 0.7, sz), METAL),
             box((0, sy * 0.22, 0.002), (sx, sy * 0.06, 0.004), METAL)]
    parts += [box((k * sx * 0.3, sy * 0.37, 0.0015), (sx * 0.1, sy * 0.26, 0.003), METAL) for k in (-1.5, -0.5, 0.5, 1.5)]
    return parts


@builder("Spoon")
def build_spoon(rng: np.random.Generator, s: np.ndarray) -> list[Part]:
    sx, sy, sz = s
    return [box((0, -sy * 0.15, sz * 0.3), (sx * 0.25, sy * 0.7, sz * 0.3), METAL),
            ellipsoid((sx / 2, sy * 0.15, sz / 2), METAL, (0, sy * 0.35, sz / 2), segments=10, rings=4)]


@builder("Spatula")
def build_spatula(rng: np.random.Generator, s: np.ndarray) -> list[Part]:
    sx, sy, sz = s
    m = _flat(rng, [(0.1, 0.1, 0.1), (0.8, 0.2, 0.2), (0.95, 0.95, 0.95)], 0.5)
    return [box((0, -sy * 0.2, sz / 2), (0.025, sy * 0.6, sz), m),
            box((0, sy * 0.3, 0.002), (sx, sy * 0.4, 0.004), m)]


@builder("Ladle")
def build_ladle(rng: np.random.Generator, s: np.ndarray) -> list[Part]:
    sx, sy, sz = s
    r = sx / 2
    return [box((0, -r, 0.01), (0.018, sy - 2 * r, 0.008), METAL),
            lathe([(r * 0.4, 0), (r, sz * 0.6), (r * 0.95, sz * 0.6), (0, sz * 0.3)], METAL, (0, sy / 2 - r, 0)),
            box((0, sy / 2 - 2 * r - 0.005, sz * 0.4), (0.012, 0.012, sz * 0.8), METAL)]


def _fruit(rng, s, color, stem=True):
    sx, sy, sz = s
    parts = [ellipsoid((sx / 2, sy / 2, sz / 2 * (0.92 if stem else 1)), mat(color, 0.4), (0, 0, sz / 2 * (0.92 if stem else 1)))]
    if stem:
        parts.append(cyl_z((0, 0, sz * 0.92 + sz * 0.04), 0.004, sz * 0.08, mat((0.3, 0.2, 0.1), 0.8)))
    return parts


@builder("Apple")
def build_apple(rng: np.random.Generator, s: np.ndarray) -> list[Part]:
    return _fruit(rng, s, _pick(rng, [(0.8, 0.1, 0.1), (0.5, 0.75, 0.2), (0.85, 0.6, 0.15)]))


@builder("Tomato")
def build_tomato(rng: np.random.Generator, s: np.ndarray) -> list[Part]:
    sx, sy, sz = s
    return [ellipsoid((sx / 2, sy / 2, sz / 2 - 0.002), mat((0.85, 0.12, 0.08), 0.3), (0, 0, sz / 2 - 0.002)),
            cyl_z((0, 0, sz - 0.004), 0.012, 0.008, mat((0.2, 0.5, 0.15), 0.8))]


@builder("Potato")
def build_potato(rng: np.random.Generator, s: np.ndarray) -> list[Part]:
    return _fruit(rng, s, (0.6, 0.45, 0.28), stem=False)


@builder("Egg")
def build_egg(rng: np.random.Generator, s: np.ndarray) -> list[Part]:
    return _fruit(rng, s, (0.95, 0.9, 0.8), stem=False)


@builder("Lettuce")
def build_lettuce(rng: np.random.Generator, s: np.ndarray) -> list[Part]:
    sx, sy, sz = s
    parts = [ellipsoid((sx / 2, sy / 2, sz / 2), mat((0.45, 0.75, 0.3), 0.7), (0, 0, sz / 2))]
    parts.append(ellipsoid((sx * 0.38, sy * 0.38, sz * 0.4), mat((0.7, 0.9, 0.5), 0.7), (0, 0, sz * 0.55)))
    return parts


@builder("Bread")
def build_bread(rng: np.random.Generator, s: np.ndarray) -> list[Part]:
    sx, sy, sz = s
    crust = mat((0.7, 0.45, 0.2), 0.8)
    return [box((0, 0, sz * 0.3), (sx, sy, sz * 0.6), crust),
            ellipsoid((sx / 2, sy / 2 - 0.005, sz * 0.45), crust, (0, 0, sz * 0.55))]


def _shaker(rng, s, top):
    sx, sy, sz = s
    r = min(sx, sy) / 2
    return [lathe([(r, 0), (r, sz * 0.75), (r * 0.8, sz * 0.75), (0, sz * 0.75)], GLASS),
            lathe([(r * 0.9, sz * 0.75), (r * 0.9, sz * 0.9), (r * 0.5, sz), (0, sz)], top)]


@builder("SaltShaker")
def build_salt_shaker(rng: np.random.Generator, s: np.ndarray) -> list[Part]:
    return _shaker(rng, s, METAL)


@builder("PepperShaker")
def build_pepper_shaker(rng: np.random.Generator, s: np.ndarray) -> list[Part]:
    return _shaker(rng, s, BLACK)


def _bottle(rng, s, body, neck_frac=0.35):
    sx, sy, sz = s
    r = min(sx, sy) / 2
    nb = sz * (1 - neck_frac)
    return [lathe([(r, 0), (r, nb), (r * 0.35, nb + sz * neck_frac * 0.45), (r * 0.3, sz), (0, sz)], body)]


@builder("Bottle")
def build_bottle(rng: np.random.Generator, s: np.ndarray) -> list[Part]:
    return _bottle(rng, s, mat(_pick(rng, [(0.3, 0.6, 0.3), (0.55, 0.75, 0.9), (0.5, 0.3, 0.15)]), 0.05, 0.1))


@builder("WineBottle")
def build_wine_bottle(rng: np.random.Generator, s: np.ndarray) -> list[Part]:
    sx, sy, sz = s
    r = min(sx, sy) / 2
    parts = _bottle(rng, s, mat((0.1, 0.25, 0.1), 0.05, 0.1), 0.4)
    parts.append(cyl_z((0, 0, sz * 0.3), r + 0.001, sz * 0.2, mat((0.95, 0.92, 0.85), 0.8)))
    return parts


@builder("SoapBottle")
def build_soap_bottle(rng: np.random.Generator, s: np.ndarray) -> list[Part]:
    sx, sy, sz = s
    body = mat(_pick(rng, [(0.9, 0.5, 0.7), (0.4, 0.7, 0.9), (0.9, 0.9, 0.4)]), 0.2)
    bh = sz - 0.05
    return [box((0, 0, bh / 2), (sx, sy * 0.8, bh), body),
            cyl_z((0, 0, bh + 0.015), 0.012, 0.03, WHITE),
            box((0, sy * 0.1 + 0.0, bh + 0.04), (0.012, sy * 0.6, 0.012), WHITE)]


@builder("DishSponge")
def build_dish_sponge(rng: np.random.Generator, s: np.ndarray) -> list[Part]:
    sx, sy, sz = s
    return [box((0, 0, sz * 0.35), (sx, sy, sz * 0.7), mat((0.95, 0.85, 0.2), 0.95)),
            box((0, 0, sz * 0.85), (sx, sy, sz * 0.3), mat((0.2, 0.55, 0.25), 0.95))]


@builder("PaperTowelRoll")
def build_paper_towel_roll(rng: np.random.Generator, s: np.ndarray) -> list[Part]:
    sx, sy, sz = s
    r = min(sx, sy) / 2
    return [cyl_z((0, 0, sz / 2), r, sz - 0.004, mat((0.97, 0.97, 0.95), 0.95)),
            cyl_z((0, 0, sz / 2), 0.02, sz, mat((0.6, 0.45, 0.3), 0.9))]


@builder("CellPhone")
def build_cell_phone(rng: np.random.Generator, s: np.ndarray) -> list[Part]:
    sx, sy, sz = s
    body = _flat(rng, [(0.1, 0.1, 0.1), (0.85, 0.85, 0.87), (0.3, 0.35, 0.5)], 0.3, 0.5)
    return [box((0, 0, sz * 0.4), (sx, sy, sz * 0.8), body),
            box((0, 0, sz * 0.9), (sx - 0.006, sy - 0.01, sz * 0.2), _screen(rng))]


@builder("CreditCard")
def build_credit_card(rng: np.random.Generator, s: np.ndarray) -> list[Part]:
    sx, sy, sz = s
    c = _pick(rng, [(0.15, 0.3, 0.7), (0.8, 0.65, 0.2), (0.1, 0.1, 0.1), (0.7, 0.1, 0.15)])
    return [box((0, 0, sz / 2), (sx, sy, sz), mat(c, 0.3, 0.3, texture={"kind": "noise", "seed": _seed(rng),
                                                                          "color": list(c), "scale": 40.0}))]


@builder("Pen")
def build_pen(rng: np.random.Generator, s: np.ndarray) -> list[Part]:
    sx, sy, sz = s
    c = _pick(rng, [(0.1, 0.2, 0.7), (0.1, 0.1, 0.1), (0.8, 0.1, 0.1)])
    r = sz / 2
    return [cyl_y((0, -0.01, r), r, sy - 0.02, mat(c, 0.3)),
            cyl_y((0, sy / 2 - 0.01, r), r * 0.5, 0.02, METAL)]


@builder("Pencil")
def build_pencil(rng: np.random.Generator, s: np.ndarray) -> list[Part]:
    sx, sy, sz = s
    r = sz / 2
    return [cyl_y((0, -0.01, r), r, sy - 0.02, mat((0.95, 0.75, 0.1), 0.5)),
            cyl_y((0, sy / 2 - 0.01, r), r * 0.5, 0.02, mat((0.85, 0.7, 0.5), 0.8)),
            cyl_y((0, -sy / 2 + 0.004, r), r, 0.008, mat((0.9, 0.5, 0.55), 0.8))]


@builder("RemoteControl")
def build_remote_control(rng: np.random.Generator, s: np.ndarray) -> list[Part]:
    sx, sy, sz = s
    parts = [box((0, 0, sz * 0.4), (sx, sy, sz * 0.8), mat((0.08, 0.08, 0.09), 0.5))]
    for k in range(4):
        parts.append(box((0, sy * (0.3 - k * 0.15), sz * 0.9), (sx * 0.6, 0.015, sz * 0.2), mat((0.5, 0.5, 0.52), 0.5)))
    parts.append(box((0, sy * 0.42, sz * 0.9), (0.012, 0.012, sz * 0.2), mat((0.8, 0.1, 0.1), 0.4)))
    return parts


@builder("KeyChain")
def build_key_chain(rng: np.random.Generator, s: np.ndarray) -> list[Part]:
    sx, sy, sz = s
    ring = min(sx / 2, 0.015)
    return [torus(ring - 0.002, 0.002, METAL, (0, -sy / 2 + ring, 0.002), axis="z", segments=10, sides=4),
            box((0, 0.012, 0.0015), (0.018, sy - 2 * ring, 0.003), METAL),
            box((0, sy / 2 - 0.015, sz / 2), (sx * 0.8, 0.03, sz), _flat(rng, _BRIGHT, 0.4))]


@builder("Watch")
def build_watch(rng: np.random.Generator, s: np.ndarray) -> list[Part]:
    sx, sy, sz = s
    strap = _flat(rng, [(0.1, 0.1, 0.1), (0.4, 0.25, 0.12)], 0.6)
    return [box((0, 0, 0.0015), (sx * 0.5, sy, 0.003), strap),
            cyl_z((0, 0, sz / 2), sx / 2, sz, METAL),
            cyl_z((0, 0, sz - 0.0005), sx / 2 - 0.003, 0.001, WHITE)]


@builder("Newspaper")
def build_newspaper(rng: np.random.Generator, s: np.ndarray) -> list[Part]:
    sx, sy, sz = s
    return [box((0, 0, sz / 2), (sx, sy, sz), mat((0.88, 0.87, 0.84), 0.9, texture={"kind": "paper", "seed": _seed(rng)}))]


@builder("Laptop")
def build_laptop(rng: np.random.Generator, s: np.ndarray) -> list[Part]:
    sx, sy, sz = s
    body = _flat(rng, [(0.75, 0.75, 0.78), (0.15, 0.15, 0.17), (0.35, 0.35, 0.38)], 0.3, 0.6)
    base_d = sx * 0.9   # base depth; lid leans back from its rear edge
    lid_h = sz - 0.02
    lean = sx - base_d
    parts = [box((sx / 2 - base_d / 2, 0, 0.01), (base_d, sy, 0.02), body),
             box((sx / 2 - base_d / 2 + 0.02, 0, 0.0205), (base_d * 0.45, sy * 0.85, 0.001), BLACK)]
    # lid: thin box tilted ~10 deg back about y, hinged at the rear edge of the base
    ang = np.arctan2(lean, lid_h)
    h = np.hypot(lid_h, lean) - 0.01
    q = np.array([np.cos(-ang / 2), 0.0, np.sin(-ang / 2), 0.0])
    cx, cz = -sx / 2 + lean / 2 + 0.004, 0.02 + lid_h / 2
    parts.append(Part("box", np.array([cx, 0.0, cz]), quat_wxyz=q, half_size=np.array([0.003, sy / 2, h / 2]),
                      material=body))
    ox = np.array([np.cos(ang), 0.0, -np.sin(ang)]) * 0.0035
    parts.append(Part("box", np.array([cx, 0.0, cz]) + ox, quat_wxyz=q,
                      half_size=np.array([0.0006, sy / 2 - 0.012, h / 2 - 0.012]), material=_screen(rng)))
    return parts


@builder("Vase")
def build_vase(rng: np.random.Generator, s: np.ndarray) -> list[Part]:
    sx, sy, sz = s
    r = min(sx, sy) / 2
    m = _flat(rng, [(0.2, 0.35, 0.6), (0.85, 0.85, 0.8), (0.6, 0.2, 0.15), (0.2, 0.5, 0.45)], 0.15)
    return [lathe([(r * 0.5, 0), (r, sz * 0.35), (r * 0.8, sz * 0.65), (r * 0.4, sz * 0.85), (r * 0.55, sz),
                   (0, sz)], m, segments=16)]


@builder("Statue")
def build_statue(rng: np.random.Generator, s: np.ndarray) -> list[Part]:
    sx, sy, sz = s
    r = min(sx, sy) / 2
    m = _flat(rng, [(0.85, 0.83, 0.78), (0.6, 0.45, 0.2), (0.15, 0.15, 0.15)], 0.5, 0.3)
    return [box((0, 0, 0.02), (sx, sy, 0.04), m),
            lathe([(r * 0.5, 0.04), (r * 0.7, sz * 0.5), (r * 0.45, sz * 0.7), (0, sz * 0.72)], m),
            sphere((0, 0, sz - r * 0.35), r * 0.35, m)]


@builder("Box")
def build_box(rng: np.random.Generator, s: np.ndarray) -> list[Part]:
    sx, sy, sz = s
    m = mat((0.72, 0.55, 0.35), 0.9, texture={"kind": "noise", "seed": _seed(rng), "color": [0.72, 0.55, 0.35],
                                               "scale": 6.0})
    return [box((0, 0, sz / 2), (sx, sy, sz), m),
            box((0, 0, sz - 0.001), (sx, 0.05, 0.002), mat((0.8, 0.7, 0.5), 0.4))]


@builder("Candle")
def build_candle(rng: np.random.Generator, s: np.ndarray) -> list[Part]:
    sx, sy, sz = s
    r = min(sx, sy) / 2
    return [cyl_z((0, 0, (sz - 0.015) / 2), r, sz - 0.015, mat(_pick(rng, [(0.95, 0.93, 0.85), (0.8, 0.2, 0.2)]), 0.7)),
            cyl_z((0, 0, sz - 0.0075), 0.002, 0.015, BLACK)]


@builder("AlarmClock")
def build_alarm_clock(rng: np.random.Generator, s: np.ndarray) -> list[Part]:
    sx, sy, sz = s
    m = _flat(rng, _BRIGHT, 0.4)
    return [box((-0.005, 0, sz / 2), (sx - 0.01, sy, sz), m),
            box((sx / 2 - 0.005, 0, sz * 0.55), (0.01, sy * 0.75, sz * 0.5), _screen(rng))]


@builder("TissueBox")
def build_tissue_box(rng: np.random.Generator, s: np.ndarray) -> list[Part]:
    sx, sy, sz = s
    return [box((0, 0, (sz - 0.02) / 2), (sx, sy, sz - 0.02), mat(_pick(rng, [(0.5, 0.7, 0.85), (0.9, 0.9, 0.85), (0.8, 0.5, 0.6)]), 0.6)),
            ellipsoid((0.03, 0.05, 0.025), WHITE, (0, 0, sz - 0.025), segments=8, rings=4)]


@builder("Pillow")
def build_pillow(rng: np.random.Generator, s: np.ndarray) -> list[Part]:
    sx, sy, sz = s
    f = fabric(rng)
    return [ellipsoid((sx / 2, sy / 2, sz / 2), f, (0, 0, sz / 2), segments=12, rings=6)]


@builder("TeddyBear")
def build_teddy_bear(rng: np.random.Generator, s: np.ndarray) -> list[Part]:
    sx, sy, sz = s
    fur = mat(_pick(rng, [(0.55, 0.35, 0.2), (0.85, 0.75, 0.6), (0.4, 0.25, 0.15)]), 1.0)
    hr = sz * 0.2
    return [ellipsoid((sx / 2 - 0.02, sy * 0.3, sz * 0.3), fur, (0, 0, sz * 0.3)),
            sphere((0.0, 0, sz - hr), hr, fur),
            sphere((0.0, hr * 0.8, sz - hr * 0.3), hr * 0.3, fur),
            sphere((0.0, -hr * 0.8, sz - hr * 0.3), hr * 0.3, fur),
            sphere((hr * 0.9, 0, sz - hr * 1.1), hr * 0.25, mat((0.2, 0.1, 0.05), 0.6)),
            ellipsoid((sx / 2 - 0.02, 0.04, 0.035), fur, (0.02, sy / 2 - 0.04, 0.035), segments=8, rings=4),
            ellipsoid((sx / 2 - 0.02, 0.04, 0.035), fur, (0.02, -sy / 2 + 0.04, 0.035), segments=8, rings=4)]


@builder("Cloth")
def build_cloth(rng: np.random.Generator, s: np.ndarray) -> list[Part]:
    sx, sy, sz = s
    return [box((0, 0, sz / 2), (sx, sy, sz), fabric(rng, _pick(rng, _BRIGHT)))]


@builder("SprayBottle")
def build_spray_bottle(rng: np.random.Generator, s: np.ndarray) -> list[Part]:
    sx, sy, sz = s
    body = mat(_pick(rng, [(0.3, 0.6, 0.9), (0.9, 0.9, 0.3), (0.95, 0.95, 0.95)]), 0.2)
    r = sy / 2
    bh = sz * 0.72
    return [cyl_z((-(sx / 2 - r), 0, bh / 2), r, bh, body),
            box((-(sx / 2 - r), 0, bh + (sz - bh) / 2), (0.03, 0.025, sz - bh), WHITE),
            box((-(sx / 2 - r) + (sx - r) / 2, 0, sz - 0.02), (sx - r, 0.015, 0.02), WHITE)]


@builder("ToiletPaper")
def build_toilet_paper(rng: np.random.Generator, s: np.ndarray) -> list[Part]:
    sx, sy, sz = s
    r = min(sx, sy) / 2
    return [cyl_z((0, 0, sz / 2), r, sz, mat((0.98, 0.98, 0.97), 0.95)),
            cyl_z((0, 0, sz / 2 + 0.0005), 0.022, sz, mat((0.6, 0.45, 0.3), 0.9))]


@builder("HandTowel")
def build_hand_towel(rng: np.random.Generator, s: np.ndarray) -> list[Part]:
    sx, sy, sz = s
    return [box((0, 0, sz / 2), (sx, sy, sz), fabric(rng, _pick(rng, [(0.95, 0.95, 0.95), (0.3, 0.5, 0.8)])))]


@builder("ScrubBrush")
def build_scrub_brush(rng: np.random.Generator, s: np.ndarray) -> list[Part]:
    sx, sy, sz = s
    r = min(sx, sy) / 2
    return [lathe([(r * 0.8, 0), (r, 0.08), (r, 0.1), (0, 0.1)], WHITE),
            cyl_z((0, 0, 0.1 + (sz - 0.1) / 2), 0.012, sz - 0.1, mat((0.2, 0.4, 0.8), 0.4))]


@builder("Dumbbell")
def build_dumbbell(rng: np.random.Generator, s: np.ndarray) -> list[Part]:
    sx, sy, sz = s
    r = min(sx, sz) / 2
    return [cyl_y((0, 0, r), 0.015, sy - 0.04, METAL),
            cyl_y((0, sy / 2 - 0.04, r), r, 0.08, BLACK),
            cyl_y((0, -sy / 2 + 0.04, r), r, 0.08, BLACK)]


@builder("TennisRacket")
def build_tennis_racket(rng: np.random.Generator, s: np.ndarray) -> list[Part]:
    sx, sy, sz = s
    head = sx / 2
    m = _flat(rng, _BRIGHT, 0.4)
    return [ellipsoid((head, head * 1.2, sz / 2), mat((0.9, 0.9, 0.85), 0.8, alpha=1.0), (0, sy / 2 - head * 1.2, sz / 2),
                      segments=12, rings=4),
            box((0, -(sy / 2 - (sy - 2.4 * head) / 2), sz / 2), (0.03, sy - 2.4 * head, sz), m)]


@builder("BaseballBat")
def build_baseball_bat(rng: np.random.Generator, s: np.ndarray) -> list[Part]:
    sx, sy, sz = s
    r = sz / 2
    m = wood(rng, (0.8, 0.65, 0.4))
    prof = [(0.0, 0), (r * 0.45, 0.0), (r * 0.35, sy * 0.4), (r, sy * 0.85), (r * 0.85, sy), (0, sy)]
    part = lathe(prof, m, (0, 0, 0), segments=10)
    assert part.vertices is not None    # a lathe solid is a mesh part
    v = part.vertices.copy()     # lathe axis z -> along y, then lift to lie on the surface
    part.vertices = np.round(np.stack([v[:, 0], v[:, 2] - sy / 2, v[:, 1] + r], axis=1), 6)
    return [part]


@builder("CD")
def build_cd(rng: np.random.Generator, s: np.ndarray) -> list[Part]:
    sx, sy, sz = s
    return [cyl_z((0, 0, sz / 2), sx / 2, sz, mat((0.85, 0.85, 0.9), 0.1, 0.9))]


@builder("Globe")
def build_globe(rng: np.random.Generator, s: np.ndarray) -> list[Part]:
    sx, sy, sz = s
    r = min(sx, sy) / 2 - 0.01
    return [cyl_z((0, 0, 0.01), 0.07, 0.02, wood(rng)),
            cyl_z((0, 0, 0.05), 0.008, 0.08, METAL),
            sphere((0, 0, sz - r), r, mat((0.2, 0.45, 0.75), 0.5, texture={"kind": "noise", "seed": _seed(rng),
                                                                          "color": [0.2, 0.45, 0.75],
                                                                          "color2": [0.35, 0.6, 0.3], "scale": 3.0}))]


# ---------------------------------------------------------------- static structure ----------
@builder("CounterTop")
def build_counter(rng: np.random.Generator, s: np.ndarray) -> list[Part]:
    sx, sy, sz = s
    body = _flat(rng, [(0.95, 0.95, 0.93), (0.3, 0.35, 0.45), (0.55, 0.4, 0.25), (0.3, 0.45, 0.35)], 0.5)
    top = mat((0.85, 0.85, 0.83), 0.3, texture={"kind": "marble", "seed": _seed(rng), "scale": 1.0})
    parts = [box((-0.02, 0, (sz - 0.04) / 2 + 0.05), (sx - 0.04, sy, sz - 0.04 - 0.1), body),
             box((-0.05, 0, 0.05), (sx - 0.1, sy, 0.1), BLACK),
             box((0, 0, sz - 0.02), (sx, sy, 0.04), top)]
    n = max(1, int(round(sy / 0.6)))
    w = sy / n
    for k in range(n):
        y = -sy / 2 + w * (k + 0.5)
        parts.append(box((sx / 2 - 0.03, y, 0.12 + (sz - 0.04 - 0.12) / 2 - 0.02), (0.02, w - 0.02, sz - 0.2), body))
        parts.append(box((sx / 2 - 0.015, y, sz - 0.15), (0.01, w * 0.4, 0.015), METAL))
    return parts


@builder("Cabinet")
def build_cabinet(rng: np.random.Generator, s: np.ndarray) -> list[Part]:
    sx, sy, sz = s
    m = wood(rng)
    n = max(1, int(round(sy / 0.6)))
    w = sy / n
    parts = [box((-0.01, 0, sz / 2), (sx - 0.02, sy, sz), m)]
    for k in range(n):
        y = -sy / 2 + w * (k + 0.5)
        parts.append(box((sx / 2 - 0.01, y, sz / 2), (0.02, w - 0.015, sz - 0.015), wood(rng, _texture_color(m, "color"))))
        parts.append(box((sx / 2, y + w * 0.35, 0.08), (0.004, 0.012, 0.1), METAL))
    return parts
