"""Builders of the object types catalog v3.0 adds to reach all of ProcTHOR's (docs/protocol.md
section 8): laundry machines, shower parts, a cart, a desktop computer and small decor.

Same contract as scenes/furniture.py: ``build_<name>(rng, size) -> list[Part]`` with ``size =
(sx, sy, sz)`` (depth, width, height in metres; local frame with the origin at the footprint
centre on the supporting surface, front towards +x); the parts fill that box.
"""

from __future__ import annotations

import numpy as np

from spatialscout_gym.core.spec import Part
from spatialscout_gym.scenes.furniture import (BLACK, DARK_METAL, GLASS, METAL, _BRIGHT, _pick, _screen,
                                               _seed, builder, fabric, wood)
from spatialscout_gym.scenes.geometry import box, cyl_x, cyl_y, cyl_z, ellipsoid, lathe, mat, sphere, torus

__all__ = ["NEW_BUILDERS"]

NEW_BUILDERS = ("AluminumFoil", "Cart", "ClothesDryer", "Desktop", "Footstool", "GarbageBag", "HandTowelHolder",
                "RoomDecor", "ShowerCurtain", "ShowerHead", "SoapBar", "TableTopDecor", "VacuumCleaner",
                "WashingMachine", "WateringCan")
"""The categories this module builds (CounterTop and HandTowel already had builders)."""


def _laundry_machine(rng, s, drum: bool) -> list[Part]:
    """A front-loading washer (``drum``: a glass porthole) or dryer (a solid round door)."""
    sx, sy, sz = s
    body = mat(_pick(rng, [(0.95, 0.95, 0.95), (0.85, 0.86, 0.88), (0.3, 0.3, 0.32)]), 0.3, 0.2)
    r = min(sy, sz * 0.75) * 0.32
    door_z = sz * 0.45
    parts = [box((-0.01, 0, sz / 2), (sx - 0.02, sy, sz), body),
             box((sx / 2 - 0.01, 0, sz - 0.08), (0.02, sy - 0.04, 0.12), mat((0.75, 0.76, 0.78), 0.3, 0.3)),
             cyl_x((sx / 2 - 0.01, sy * 0.3, sz - 0.08), 0.03, 0.02, DARK_METAL),
             cyl_x((sx / 2 - 0.012, 0, door_z), r * 1.15, 0.016, METAL),
             cyl_x((sx / 2 - 0.006, 0, door_z), r, 0.012, GLASS if drum else body)]
    if drum:
        parts.append(cyl_x((sx / 2 - 0.014, 0, door_z), r * 0.8, 0.01, DARK_METAL))
    return parts


@builder("WashingMachine")
def build_washing_machine(rng: np.random.Generator, s: np.ndarray) -> list[Part]:
    return _laundry_machine(rng, s, True)


@builder("ClothesDryer")
def build_clothes_dryer(rng: np.random.Generator, s: np.ndarray) -> list[Part]:
    return _laundry_machine(rng, s, False)


@builder("ShowerHead")
def build_shower_head(rng: np.random.Generator, s: np.ndarray) -> list[Part]:
    """A riser pipe up the wall with a round head tilted into the room at the top."""
    sx, sy, sz = s
    r = min(sy / 2, 0.11)
    return [box((-sx / 2 + 0.01, 0, 0.03), (0.02, 0.08, 0.06), METAL),
            cyl_z((-sx / 2 + 0.03, 0, sz / 2), 0.012, sz - 0.04, METAL),
            cyl_x((-sx / 2 + (sx - 0.05) / 2 + 0.03, 0, sz - 0.06), 0.012, sx - 0.05, METAL),
            cyl_z((sx / 2 - r, 0, sz - 0.055), r, 0.03, METAL),
            cyl_z((sx / 2 - r, 0, sz - 0.072), r * 0.85, 0.004, DARK_METAL),
            box((-sx / 2 + 0.05, 0, sz * 0.45), (0.04, 0.05, 0.1), METAL)]


@builder("ShowerCurtain")
def build_shower_curtain(rng: np.random.Generator, s: np.ndarray) -> list[Part]:
    """A curtain gathered at one end of its rod: pleats hanging from rings."""
    sx, sy, sz = s
    c = _pick(rng, [(0.95, 0.95, 0.95), (0.55, 0.75, 0.85), (0.85, 0.8, 0.6), (0.7, 0.8, 0.7)])
    f = mat(c, 0.8, texture={"kind": "fabric", "seed": _seed(rng), "color": list(c),
                              "color2": [x * 0.85 for x in c], "scale": 3.0})
    parts = [cyl_y((0, 0, sz - 0.015), 0.015, sy, METAL)]
    n = 4
    for k in range(n):
        y = -sy / 2 + sy * (k + 0.5) / n
        parts.append(ellipsoid((sx / 2 - 0.01 * (k % 2), sy / (2 * n), (sz - 0.04) / 2), f,
                               (0.01 * (k % 2), y, (sz - 0.04) / 2), segments=10, rings=6))
    return parts


@builder("HandTowelHolder")
def build_hand_towel_holder(rng: np.random.Generator, s: np.ndarray) -> list[Part]:
    """A wall plate with a ring for a hand towel."""
    sx, sy, sz = s
    rr = min(sy, sz) / 2
    return [box((-sx / 2 + 0.005, 0, sz - 0.025), (0.01, 0.06, 0.05), METAL),
            box((0, 0, sz - 0.015), (sx - 0.01, 0.02, 0.02), METAL),
            torus(rr - 0.008, 0.008, METAL, (sx / 2 - 0.012, 0, sz - rr), axis="x", segments=14)]


@builder("Cart")
def build_cart(rng: np.random.Generator, s: np.ndarray) -> list[Part]:
    """A rolling utility cart: two shelves on four posts and castors, a push handle."""
    sx, sy, sz = s
    m = _pick(rng, [(0.2, 0.2, 0.22), (0.85, 0.85, 0.85), (0.15, 0.35, 0.6), (0.6, 0.15, 0.15)])
    frame = mat(m, 0.4, 0.5)
    parts = []
    for ix in (-1, 1):
        for iy in (-1, 1):
            parts.append(cyl_z((ix * (sx / 2 - 0.04), iy * (sy / 2 - 0.12), 0.035), 0.035, 0.07, BLACK))
            parts.append(cyl_z((ix * (sx / 2 - 0.04), iy * (sy / 2 - 0.12), 0.07 + (sz - 0.17) / 2), 0.012,
                               sz - 0.17, frame))
    for z in (0.2, sz - 0.12):
        parts.append(box((0, -0.04, z), (sx - 0.04, sy - 0.16, 0.03), frame))
        parts.append(box((0, -0.04, z + 0.05), (sx - 0.04, sy - 0.16, 0.002), frame))
    parts.append(cyl_x((0, sy / 2 - 0.02, sz - 0.02), 0.018, sx - 0.1, DARK_METAL))
    for ix in (-1, 1):
        parts.append(box((ix * (sx / 2 - 0.06), sy / 2 - 0.06, sz - 0.05), (0.025, 0.1, 0.025), frame))
    return parts


@builder("Desktop")
def build_desktop(rng: np.random.Generator, s: np.ndarray) -> list[Part]:
    """A desktop computer: a monitor on a stand, a keyboard in front, a mouse."""
    sx, sy, sz = s
    dark = _pick(rng, [(0.08, 0.08, 0.09), (0.85, 0.85, 0.87)])
    case = mat(dark, 0.4, 0.2)
    mon_w, mon_h = sy * 0.72, sz * 0.62
    back = -sx / 2 + 0.05
    return [box((back, -sy * 0.1, 0.008), (0.1, 0.2, 0.016), case),
            box((back - 0.02, -sy * 0.1, sz * 0.2), (0.03, 0.05, sz * 0.36), case),
            box((back, -sy * 0.1, sz - mon_h / 2), (0.04, mon_w, mon_h), case),
            box((back + 0.021, -sy * 0.1, sz - mon_h / 2), (0.002, mon_w - 0.03, mon_h - 0.03), _screen(rng)),
            box((sx / 2 - 0.08, -sy * 0.1, 0.012), (0.14, sy * 0.5, 0.024), case),
            ellipsoid((0.05, 0.032, 0.018), case, (sx / 2 - 0.06, sy / 2 - 0.22, 0.018)),
            box((0, sy / 2 - 0.1, sz * 0.45), (sx - 0.02, 0.18, sz * 0.9), case)]


@builder("Footstool")
def build_footstool(rng: np.random.Generator, s: np.ndarray) -> list[Part]:
    """A small step stool: a padded top on four short legs."""
    sx, sy, sz = s
    legs = wood(rng)
    top = fabric(rng)
    parts = [box((0, 0, sz - 0.05), (sx, sy, 0.1), top)]
    for ix in (-1, 1):
        for iy in (-1, 1):
            parts.append(cyl_z((ix * (sx / 2 - 0.04), iy * (sy / 2 - 0.04), (sz - 0.1) / 2), 0.02, sz - 0.1, legs))
    return parts


@builder("GarbageBag")
def build_garbage_bag(rng: np.random.Generator, s: np.ndarray) -> list[Part]:
    """A full bin bag: a rounded sack with a tied neck."""
    sx, sy, sz = s
    m = mat(_pick(rng, [(0.05, 0.05, 0.06), (0.2, 0.35, 0.2), (0.85, 0.85, 0.85)]), 0.25)
    body_h = sz * 0.82
    return [ellipsoid((sx / 2, sy / 2, body_h / 2), m, (0, 0, body_h / 2), segments=14, rings=8),
            lathe([(0.05, body_h - 0.04), (0.02, body_h + 0.02), (0.06, sz - 0.02), (0.0, sz)], m)]


@builder("RoomDecor")
def build_room_decor(rng: np.random.Generator, s: np.ndarray) -> list[Part]:
    """A tall floor vase with dry branches."""
    sx, sy, sz = s
    r = min(sx, sy) / 2
    c = _pick(rng, [(0.85, 0.8, 0.7), (0.2, 0.25, 0.35), (0.7, 0.35, 0.2), (0.9, 0.9, 0.88)])
    vase = mat(c, 0.3, texture={"kind": "noise", "seed": _seed(rng), "color": list(c),
                                 "color2": [x * 0.85 for x in c], "scale": 3.0})
    vh = sz * 0.55
    parts = [lathe([(r * 0.55, 0), (r, vh * 0.4), (r * 0.8, vh * 0.8), (r * 0.3, vh), (0.0, vh)], vase)]
    twig = mat((0.45, 0.32, 0.2), 0.9)
    for k, ang in enumerate((-0.25, 0.0, 0.3)):
        x = np.sin(ang) * (r * 0.6)
        parts.append(box((x * 0.5, (k - 1) * r * 0.25, vh + (sz - vh) / 2), (0.012, 0.012, sz - vh), twig))
        parts.append(ellipsoid((r * 0.3, r * 0.3, 0.05), mat((0.9, 0.85, 0.7), 0.9),
                               (x * 0.5, (k - 1) * r * 0.25, sz - 0.05 - 0.08 * k), segments=8, rings=4))
    return parts


@builder("SoapBar")
def build_soap_bar(rng: np.random.Generator, s: np.ndarray) -> list[Part]:
    """A rounded bar of soap."""
    sx, sy, sz = s
    c = _pick(rng, [(0.95, 0.9, 0.75), (0.85, 0.55, 0.65), (0.6, 0.8, 0.6), (0.95, 0.95, 0.95)])
    return [ellipsoid((sx / 2, sy / 2, sz / 2), mat(c, 0.5), (0, 0, sz / 2), segments=12, rings=6)]


@builder("TableTopDecor")
def build_table_top_decor(rng: np.random.Generator, s: np.ndarray) -> list[Part]:
    """A decorative tray with three ornamental balls."""
    sx, sy, sz = s
    tray = wood(rng)
    parts = [box((0, 0, 0.01), (sx, sy, 0.02), tray)]
    rb = min(sx / 2 - 0.01, sy / 6, sz / 2 - 0.01)
    for k, c in enumerate(rng.permutation(len(_BRIGHT))[:3]):
        parts.append(sphere(((k % 2) * 0.3 * (sx / 2 - rb), (k - 1) * (sy / 3), 0.02 + rb),
                            rb * (1.0 if k != 1 else 0.9), mat(_BRIGHT[int(c)], 0.3, 0.3)))
    parts.append(box((0, 0, sz - 0.01), (0.02, 0.02, 0.02), mat((0.9, 0.75, 0.3), 0.3, 0.8)))
    parts.append(cyl_z((0, 0, (sz + 0.02) / 2), 0.004, sz - 0.02, mat((0.9, 0.75, 0.3), 0.3, 0.8)))
    return parts


@builder("VacuumCleaner")
def build_vacuum_cleaner(rng: np.random.Generator, s: np.ndarray) -> list[Part]:
    """An upright vacuum cleaner: a floor head, a bagged body and a handle."""
    sx, sy, sz = s
    c = mat(_pick(rng, _BRIGHT[:6]), 0.35, 0.1)
    return [box((0.0, 0, 0.04), (sx, sy, 0.08), c),
            cyl_y((sx / 2 - 0.03, 0, 0.03), 0.03, sy - 0.02, BLACK),
            box((-sx / 2 + 0.09, 0, 0.08 + sz * 0.25), (0.14, sy * 0.6, sz * 0.5), c),
            box((-sx / 2 + 0.09, 0, 0.08 + sz * 0.25), (0.15, sy * 0.4, sz * 0.35), DARK_METAL),
            cyl_z((-sx / 2 + 0.09, 0, 0.08 + sz * 0.5 + (sz * 0.42 - 0.08) / 2), 0.015, sz * 0.42 - 0.08, METAL),
            box((-sx / 2 + 0.09, 0, sz - 0.02), (0.04, 0.14, 0.04), BLACK)]


@builder("WateringCan")
def build_watering_can(rng: np.random.Generator, s: np.ndarray) -> list[Part]:
    """A watering can: a round body, a long spout forward and a handle on top."""
    sx, sy, sz = s
    m = mat(_pick(rng, [(0.2, 0.55, 0.3), (0.75, 0.75, 0.78), (0.85, 0.35, 0.2), (0.2, 0.4, 0.75)]), 0.35, 0.4)
    r = min(sx / 2, sy * 0.3)
    bh = sz * 0.62
    body_y = -sy / 2 + r
    return [cyl_z((0, body_y, bh / 2), r, bh, m),
            box((0, body_y + r + (sy / 2 - body_y - r) / 2, bh * 0.75), (0.025, sy / 2 - body_y - r, 0.025), m),
            cyl_y((0, sy / 2 - 0.025, bh * 0.95), 0.03, 0.05, m),
            box((0, body_y, bh + (sz - bh) / 2), (0.02, 0.02, sz - bh), m),
            box((0, body_y + r * 0.3, sz - 0.01), (0.02, r * 1.2, 0.02), m)]


@builder("AluminumFoil")
def build_aluminum_foil(rng: np.random.Generator, s: np.ndarray) -> list[Part]:
    """A boxed roll of foil: a long carton with its silver roll showing at the end."""
    sx, sy, sz = s
    carton = mat(_pick(rng, [(0.2, 0.3, 0.65), (0.8, 0.15, 0.15), (0.85, 0.85, 0.8)]), 0.6)
    return [box((0, -0.01, sz / 2), (sx, sy - 0.02, sz), carton),
            cyl_y((0, sy / 2 - 0.01, min(sx, sz) / 2), min(sx, sz) / 2 - 0.002, 0.02, METAL)]
