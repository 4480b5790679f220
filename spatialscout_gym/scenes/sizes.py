"""Object sizes and the generator's versioned rules (catalog v1.0, v2.0, v3.0, which keeps v2.0's sizes,
and v3.1, which keeps every room inside the world box).

A frozen catalog version must regenerate bit for bit, so the generator never changes in place:
each catalog version names a :class:`GeneratorRules` in :data:`RULES`, and every rule a newer
version changes is a field here.

* **v1.0** (``sizes="v1"``): each side uniform in the ranges of scenes/categories.py (hand-set
  real-world sizes).
* **v2.0** (``sizes="ai2thor"``): sizes follow AI2-THOR's assets, the paper's source scenes. For a
  category AI2-THOR has, an object's cube-root box volume is drawn from the category's asset
  distribution (data/ai2thor_sizes.json, quantile-interpolated between its 5 % and 95 %
  quantiles), its proportions are the category's median asset proportions (sides sorted large to
  small and handed to our axes in the order our builder's shape has them, so a TV stays wide and
  thin and a sofa long), and each side gets a +-4 % jitter. Categories whose builder needs its own
  proportions (:data:`OWN_SHAPE`) keep ours, scaled to the AI2-THOR volume. Categories AI2-THOR
  lacks (:data:`NOT_IN_AI2THOR`) keep the v1 real-world ranges of scenes/categories.py.

Sizes are ``(sx, sy, sz)`` = depth, width, height in metres in the object's local frame.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from functools import lru_cache
from pathlib import Path

import numpy as np

from spatialscout_gym.scenes.categories import CATEGORIES

__all__ = ["GeneratorRules", "RULES", "TRAINING_RULES", "RULES_V1", "RULES_V2", "sample_size", "ai2thor_reference",
           "AI2THOR_SIZES_PATH", "RULES_V3", "ROUND_CATEGORIES", "OWN_SHAPE", "NOT_IN_AI2THOR", "rules_for"]

AI2THOR_SIZES_PATH = Path(__file__).parent / "data" / "ai2thor_sizes.json"

ROUND_CATEGORIES = frozenset({
    "Cup", "Plate", "Bowl", "Apple", "Tomato", "Egg", "Lettuce", "SaltShaker", "PepperShaker", "Bottle",
    "WineBottle", "PaperTowelRoll", "Vase", "Statue", "Candle", "GarbageCan", "FloorLamp", "HousePlant",
    "DeskLamp", "Globe", "ToiletPaper", "ScrubBrush", "Plunger", "CD", "Stool", "BasketBall", "RoomDecor"})
"""Categories built round: equal depth and width."""

OWN_SHAPE: frozenset[str] = frozenset({"Blinds"})
"""Categories for which v2.0 keeps our proportions, scaled to AI2-THOR's volume: our blinds are a
rolled-up blind whose roller fills the box (AI2-THOR's one blinds asset is a 3 cm thin slat
pack). The faucet and sink got v2.0 builders of AI2-THOR's shape instead."""

# The v2.0 Sink is a basin resting on a counter (AI2-THOR's sinks are counter basins, about
# 0.66 x 0.46 x 0.15 m); v1.0's is a pedestal wash basin on the floor.
_BASIN_TEMPLATE = (0.45, 0.6, 0.15)


@dataclass(frozen=True)
class GeneratorRules:
    """The rules one catalog version was generated with.

    Attributes
    ----------
    version : str
        The catalog version.
    sizes : str
        ``"v1"`` (uniform in the category ranges) or ``"ai2thor"`` (see the module docstring).
    room_scale : float
        Factor on the room size ranges of scenes/rooms.py (both sides).
    repeat_decay : float
        Each time a room draws a small-item category, its weight is multiplied by this (lower:
        fewer repeats, fewer multi-instance groups).
    sink : str
        ``"pedestal"`` (a floor-standing wash basin) or ``"basin"`` (a basin on a counter, with
        the faucet behind it, in bathrooms and kitchens).
    camera_offset_m : tuple of float
        Range of the initial camera's distance from its wall, metres.
    camera_wall_margin : float
        The initial camera stands along its wall at least this fraction of the wall from either end.
    wall_clearance_m : float
        Space kept free in front of every wall item (paintings, posters, windows, ...), metres:
        nothing stands in front of them, so none is hidden behind furniture.
    drop_unseen : bool
        Remove targets no viewpoint inside the search ball sees (scenes/visibility.py) and
        select again.
    tv_stand_clear_m : float
        Height available above a TV stand's top, metres (v2.0: room for AI2-THOR-sized TVs).
    placement : str
        ``"free"`` (v1.0, v2.0: each room kind's own lists) or ``"procthor"`` (v3.0: a category
        goes only into room types where ProcTHOR places it, once per room unless its
        ``multiplePerRoom`` allows more, and onto furniture ProcTHOR's receptacles let hold it;
        scenes/placement.py).
    extra_candidates : tuple of str
        Structure categories that are targets under these rules where ProcTHOR places them
        (v3.0: CounterTop in kitchens).
    room_scale_by_kind : tuple of (kind, factor)
        Per room kind overrides of ``room_scale``.
    loose_repeat_cap : int
        Most objects of one category the loose-item fill (and its top-up) puts in one room; 0: no
        cap (v1.0, v2.0). A category whose ``multiplePerRoom`` is false gets one regardless.
    floor_repeat_cap : int
        The same for loose floor items (footstools, boots, boxes, ...); 0: no cap.
    pillows_min : int
        Fewest pillows on a bed or sofa (at most 4 and 3); lower brings Pillow's share of the
        targets toward the paper's mix, where Chair, Painting, Window and Book lead.
    in_world_box : bool
        Move a catalog floor plan that reaches past the +-15 m world box inside it (scenes/rooms.py
        ``inside_world_box``; v3.1). Earlier versions are frozen as drawn: five v3.0 apartments
        (11, 16, 17, 26, 31) have walls past x = 15 m. Training scenes are always moved.
    """

    version: str
    sizes: str = "v1"
    room_scale: float = 1.0
    repeat_decay: float = 0.3
    sink: str = "pedestal"
    camera_offset_m: tuple[float, float] = (0.6, 1.1)
    camera_wall_margin: float = 0.3
    wall_clearance_m: float = 0.0
    drop_unseen: bool = False
    pillows_min: int = 2
    tv_stand_clear_m: float = 0.6
    placement: str = "free"
    extra_candidates: tuple[str, ...] = ()
    room_scale_by_kind: tuple[tuple[str, float], ...] = ()
    loose_repeat_cap: int = 0
    floor_repeat_cap: int = 0
    in_world_box: bool = False

    def room_scale_of(self, kind: str) -> float:
        """The room size factor of room ``kind`` (``room_scale`` unless ``room_scale_by_kind``
        names the kind)."""
        return dict(self.room_scale_by_kind).get(kind, self.room_scale)

    def builder_key(self, category: str) -> str:
        """The scenes/furniture.py builder a category uses under these rules."""
        if self.sink == "basin" and category in ("Sink", "Faucet"):
            return {"Sink": "SinkBasin", "Faucet": "FaucetWide"}[category]
        return category


RULES_V1 = GeneratorRules("1.0")
RULES_V2 = GeneratorRules("2.0", sizes="ai2thor", room_scale=1.15, repeat_decay=0.22, sink="basin",
                          camera_offset_m=(0.45, 0.9), camera_wall_margin=0.08,
                          wall_clearance_m=0.15, drop_unseen=True, pillows_min=1,
                          tv_stand_clear_m=1.3)
"""v2.0: AI2-THOR sizes; rooms 15 % larger, fewer repeated items, the camera nearer its wall and
anywhere along it, so targets sit as far from the start as the paper's; wall
items keep 15 cm free in front of them; every target is visible from inside the search ball."""
RULES_V3 = GeneratorRules("3.0", sizes="ai2thor", room_scale=1.21, repeat_decay=0.22, sink="basin",
                          camera_offset_m=(0.45, 0.9), camera_wall_margin=0.08,
                          wall_clearance_m=0.15, drop_unseen=True, pillows_min=1,
                          tv_stand_clear_m=1.3, placement="procthor", extra_candidates=("CounterTop",),
                          room_scale_by_kind=(("Bathroom", 0.92),), loose_repeat_cap=3, floor_repeat_cap=2)
"""v3.0: v2.0's sizes and camera, ProcTHOR's placement rules and all its object types; rooms 21 %
larger than scenes/rooms.py's ranges (both reference losses within 5 % of the paper's), bathrooms at their real-world sizes, so the smallest search radius nears the paper's (2.2 m or less);
at most 3 of one loose item and 2 of one loose floor item per room, so a small room is not filled
with one category."""
RULES_V3_1 = replace(RULES_V3, version="3.1", in_world_box=True)
"""v3.1: v3.0's rules, with every floor plan inside the world box the camera may move in. Five
apartments move towards the origin along x (Apartment_11 8.38 m, 17 8.28 m, 16 8.04 m, 26 8.01 m,
31 7.69 m; CHANGELOG.md); every target keeps its task-frame centre."""
RULES: dict[str, GeneratorRules] = {"1.0": RULES_V1, "2.0": RULES_V2, "3.0": RULES_V3, "3.1": RULES_V3_1}
TRAINING_RULES: dict[str, str] = {"3.1": "3.0"}
"""Catalog versions whose training scenes (``procedural:<seed>``) are another version's: v3.1 only
moves catalog plans inside the world box, which training plans always are, so its training scenes
are v3.0's (same content hashes, same recorded ``rules``)."""


def rules_for(version: str) -> GeneratorRules:
    """The rules of catalog ``version`` ("1.0", "2.0", "3.0" or "3.1"); ValueError naming the known ones."""
    try:
        return RULES[str(version)]
    except KeyError:
        raise ValueError(f"unknown catalog version {version!r}; known: {', '.join(RULES)}") from None


@lru_cache(maxsize=1)
def ai2thor_reference() -> dict:
    """data/ai2thor_sizes.json: per AI2-THOR object type ``n_assets``, ``cbrt_volume_m``
    quantiles (at ``quantiles``), ``median_box_m`` ([x, y = height, z]) and ``proportions``."""
    return json.loads(AI2THOR_SIZES_PATH.read_text())


NOT_IN_AI2THOR = frozenset(c for c in CATEGORIES if c not in json.loads(AI2THOR_SIZES_PATH.read_text())["categories"])
"""Our categories AI2-THOR's asset database lacks (Bathtub, Globe, Mirror, Poster, Curtains and
room structure); they keep v1's real-world ranges in every version."""


def _v1(category: str, rng: np.random.Generator) -> np.ndarray:
    s = np.array([rng.uniform(a, b) for a, b in CATEGORIES[category].size])
    if category in ROUND_CATEGORIES:
        s[1] = s[0]
    return s


def _template(category: str, rules: GeneratorRules) -> np.ndarray:
    if category == "Sink" and rules.sink == "basin":
        return np.array(_BASIN_TEMPLATE)
    return np.array([(a + b) / 2 for a, b in CATEGORIES[category].size])


def _ai2thor(category: str, rng: np.random.Generator, rules: GeneratorRules) -> np.ndarray:
    ref = ai2thor_reference()
    row = ref["categories"][category]
    v = float(np.interp(rng.uniform(0.05, 0.95), ref["quantiles"], row["cbrt_volume_m"]))
    tmpl = _template(category, rules)
    if category in OWN_SHAPE:
        s = tmpl / np.cbrt(np.prod(tmpl)) * v
    else:
        s = np.empty(3)
        s[np.argsort(-tmpl, kind="stable")] = np.asarray(row["proportions"]) * v
    s = s * rng.uniform(0.96, 1.04, 3)
    if category in ROUND_CATEGORIES:
        s[0] = s[1] = float(np.sqrt(s[0] * s[1]))
    return s


def sample_size(category: str, rng: np.random.Generator, rules: GeneratorRules = RULES_V1) -> np.ndarray:
    """Depth, width, height (metres, local frame) of one new ``category`` instance under ``rules``."""
    if rules.sizes == "v1" or category in NOT_IN_AI2THOR or not CATEGORIES[category].candidate:
        return _v1(category, rng)
    return _ai2thor(category, rng, rules)
