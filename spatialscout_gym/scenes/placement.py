"""ProcTHOR's placement rules (catalog v3.0, docs/protocol.md section 8): which room types an
object type goes into, whether several may share a room, and what a surface may hold.

Source: ``data/procthor_placement.json``, derived by scripts/derive_procthor_placement.py from
ProcTHOR's ``placement-annotations.json`` and ``receptacles.json`` (Apache-2.0; source commit in
the file's header). ProcTHOR has four room types; our offices follow its bedrooms (desks, desk
computers, books and laptops are bedroom things there), and each apartment room follows its own
kind.
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path

__all__ = ["PROCTHOR_PLACEMENT_PATH", "procthor_placement", "procthor_room", "allowed_in_room",
           "multiple_per_room", "receptacles_of", "annotated_rooms", "OWN_CATEGORY_ROOMS", "MULTIPLE_EXEMPT"]

PROCTHOR_PLACEMENT_PATH = Path(__file__).parent / "data" / "procthor_placement.json"

_ROOM_OF = {"Kitchen": "Kitchen", "LivingRoom": "LivingRoom", "Bedroom": "Bedroom", "Bathroom": "Bathroom",
            "Office": "Bedroom"}

OWN_CATEGORY_ROOMS: dict[str, tuple[str, ...]] = {
    "Bathtub": ("Bathroom",), "Globe": ("LivingRoom", "Bedroom"),
    "Mirror": ("Kitchen", "LivingRoom", "Bedroom", "Bathroom"),
    "Poster": ("Kitchen", "LivingRoom", "Bedroom", "Bathroom"),
    "Curtains": ("Kitchen", "LivingRoom", "Bedroom", "Bathroom")}
"""Room types (ProcTHOR's) of our categories ProcTHOR lacks."""

MULTIPLE_EXEMPT = frozenset({"Pillow"})
"""Types placed as a set on one piece of furniture (the pillows of a bed or sofa; ProcTHOR spawns
them per receptacle), so ``multiplePerRoom`` does not limit them."""


@lru_cache(maxsize=1)
def procthor_placement() -> dict:
    """``data/procthor_placement.json``: ``types`` (per object type: ``rooms`` {room kind: 0/1/2},
    ``onFloor``, ``onWall``, ``inCorner``, ``onEdge``, ``multiplePerRoom``, ...) and
    ``receptacles`` ({receptacle type: {object type: spawn probability}})."""
    return json.loads(PROCTHOR_PLACEMENT_PATH.read_text())


def procthor_room(kind: str) -> str:
    """ProcTHOR's room type for our room ``kind`` (an office follows bedrooms)."""
    return _ROOM_OF[kind]


def annotated_rooms(category: str) -> dict[str, int] | None:
    """The room annotation of a ProcTHOR type ({room type: 0/1/2}), or None when ProcTHOR does not
    annotate it by room: our own categories, structure (Window) and the types it places only
    through their holder (Painting on walls, Sink in counters, Television on stands: all 0)."""
    row = procthor_placement()["types"].get(category)
    if row is None:
        return None
    rooms = row["rooms"]
    if any(v is None for v in rooms.values()) or not any(rooms.values()):
        return None
    return rooms


def allowed_in_room(category: str, kind: str) -> bool:
    """Whether ProcTHOR would put ``category`` in a room of our ``kind``."""
    room = procthor_room(kind)
    if category in OWN_CATEGORY_ROOMS:
        return room in OWN_CATEGORY_ROOMS[category]
    rooms = annotated_rooms(category)
    return True if rooms is None else bool(rooms[room])


def multiple_per_room(category: str) -> bool:
    """Whether several ``category`` objects may share a room (``multiplePerRoom``; True for types
    ProcTHOR does not annotate)."""
    if category in MULTIPLE_EXEMPT:
        return True
    row = procthor_placement()["types"].get(category)
    return True if row is None or row["multiplePerRoom"] is None else bool(row["multiplePerRoom"])


@lru_cache(maxsize=None)
def receptacles_of(category: str) -> frozenset[str] | None:
    """The furniture types ProcTHOR spawns ``category`` on (``receptacles.json``), or None when no
    receptacle lists it (then the category's own ``rests_on`` surface kinds apply)."""
    out = frozenset(r for r, objs in procthor_placement()["receptacles"].items() if category in objs)
    return out or None
