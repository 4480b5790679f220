"""The category table: AI2-THOR names, real-world size ranges, roles and where things rest.

Sizes are ``(sx, sy, sz)`` ranges in metres in an object's local frame (scenes/geometry.py):
``sx`` depth (front to back), ``sy`` width, ``sz`` height. A builder in scenes/furniture.py
turns a sampled size into parts.

``candidate`` marks movable objects with a known category: the pool docs/protocol.md section 8 picks
targets from (nearest first); the rest are hidden. AI2-THOR counts furniture (Chair, Sofa, Bed,
DiningTable, ...) and wall items (Painting, Window, Mirror, ...) as inventory categories, and the
paper's most common targets are Chair, Painting, Window and Book, so those are candidates too.
Room structure (Floor, Wall, Ceiling, Doorway, CounterTop, Cabinet) is ``static``.

``rests_on`` lists the surface kinds an item may lie on (``floor``, ``wall``, ``table``,
``counter``, ``shelf``, ``bed``, ``sofa``, ``desk``); scenes/layout.py uses it.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["CategoryInfo", "CATEGORIES", "SMALL_ITEMS_BY_ROOM", "GENERIC_ITEMS", "candidate_categories"]

Range3 = tuple[tuple[float, float], tuple[float, float], tuple[float, float]]


@dataclass(frozen=True)
class CategoryInfo:
    """One category of the table.

    Attributes
    ----------
    name : str
        The AI2-THOR category name (also the equivalence group, docs/protocol.md section 1).
    size : tuple of three (min, max)
        Depth, width, height ranges in metres (local x, y, z).
    candidate : bool
        Movable with a known category: may become a target (docs/protocol.md section 8).
    rests_on : tuple of str
        Surface kinds it may be placed on.
    """

    name: str
    size: Range3
    candidate: bool = True
    rests_on: tuple[str, ...] = ("floor",)


def _c(name, sx, sy, sz, rests=("floor",), candidate=True) -> CategoryInfo:
    return CategoryInfo(name, (sx, sy, sz), candidate, tuple(rests))


_T = ("table", "desk", "counter", "shelf")
_ALL = ("table", "desk", "counter", "shelf", "bed", "sofa")

CATEGORIES: dict[str, CategoryInfo] = {c.name: c for c in [
    # --- structure (never targets) ---
    _c("Floor", (1, 1), (1, 1), (0.05, 0.05), (), False),
    _c("Wall", (0.1, 0.1), (1, 1), (2.6, 2.9), (), False),
    _c("Ceiling", (1, 1), (1, 1), (0.05, 0.05), (), False),
    _c("Doorway", (0.1, 0.1), (0.9, 0.9), (2.1, 2.1), (), False),
    _c("CounterTop", (0.6, 0.65), (1.2, 2.4), (0.9, 0.92), (), False),
    _c("Cabinet", (0.32, 0.36), (0.6, 1.2), (0.6, 0.75), ("wall",), False),
    # --- furniture on the floor ---
    _c("Chair", (0.45, 0.52), (0.42, 0.5), (0.82, 0.98)),
    _c("ArmChair", (0.75, 0.9), (0.75, 0.95), (0.8, 0.95)),
    _c("Sofa", (0.85, 0.95), (1.7, 2.3), (0.78, 0.9)),
    _c("Ottoman", (0.45, 0.6), (0.45, 0.6), (0.38, 0.45)),
    _c("Stool", (0.32, 0.38), (0.32, 0.38), (0.6, 0.75)),
    _c("DiningTable", (0.8, 1.0), (1.2, 1.8), (0.74, 0.78)),
    _c("CoffeeTable", (0.5, 0.65), (0.9, 1.2), (0.4, 0.48)),
    _c("SideTable", (0.4, 0.5), (0.4, 0.5), (0.5, 0.62)),
    _c("Desk", (0.6, 0.75), (1.1, 1.5), (0.73, 0.77)),
    _c("Bed", (2.0, 2.1), (1.4, 1.8), (0.9, 1.1)),
    _c("Dresser", (0.45, 0.55), (0.9, 1.3), (0.8, 1.0)),
    _c("ShelvingUnit", (0.3, 0.38), (0.8, 1.1), (1.6, 1.9)),
    _c("TVStand", (0.4, 0.48), (1.2, 1.6), (0.45, 0.55)),
    _c("Fridge", (0.65, 0.72), (0.65, 0.8), (1.7, 1.85)),
    _c("GarbageCan", (0.28, 0.36), (0.28, 0.36), (0.4, 0.6)),
    _c("FloorLamp", (0.35, 0.42), (0.35, 0.42), (1.5, 1.75)),
    _c("HousePlant", (0.3, 0.45), (0.3, 0.45), (0.5, 1.1), ("floor", "table", "shelf")),
    _c("Toilet", (0.65, 0.72), (0.38, 0.42), (0.75, 0.8)),
    _c("Bathtub", (0.7, 0.78), (1.5, 1.7), (0.55, 0.6)),
    _c("Sink", (0.45, 0.52), (0.5, 0.6), (0.82, 0.88)),
    _c("LaundryHamper", (0.35, 0.42), (0.42, 0.5), (0.5, 0.6)),
    _c("Safe", (0.35, 0.4), (0.38, 0.45), (0.4, 0.5)),
    _c("DogBed", (0.5, 0.6), (0.65, 0.8), (0.15, 0.2)),
    _c("Boots", (0.28, 0.32), (0.2, 0.24), (0.3, 0.38)),
    _c("BasketBall", (0.24, 0.24), (0.24, 0.24), (0.24, 0.24), ("floor",)),
    _c("Plunger", (0.12, 0.14), (0.12, 0.14), (0.42, 0.5)),
    # --- on walls ---
    _c("Painting", (0.025, 0.04), (0.4, 1.1), (0.35, 0.8), ("wall",)),
    _c("Poster", (0.002, 0.004), (0.4, 0.6), (0.55, 0.85), ("wall",)),
    _c("Window", (0.06, 0.1), (0.8, 1.4), (1.0, 1.4), ("wall",)),
    _c("Mirror", (0.02, 0.03), (0.45, 0.7), (0.6, 0.9), ("wall",)),
    _c("LightSwitch", (0.012, 0.015), (0.07, 0.08), (0.11, 0.12), ("wall",)),
    _c("TowelHolder", (0.07, 0.09), (0.45, 0.6), (0.04, 0.05), ("wall",)),
    _c("Towel", (0.04, 0.06), (0.35, 0.5), (0.5, 0.7), ("wall",)),
    _c("ToiletPaperHanger", (0.08, 0.1), (0.15, 0.17), (0.06, 0.07), ("wall",)),
    _c("Blinds", (0.06, 0.08), (0.8, 1.4), (0.12, 0.14), ("wall",)),
    _c("Curtains", (0.06, 0.1), (0.35, 0.5), (1.9, 2.2), ("wall",)),
    _c("Television", (0.06, 0.09), (0.9, 1.3), (0.55, 0.78), ("table",)),
    # --- appliances on counters ---
    _c("Microwave", (0.36, 0.4), (0.48, 0.55), (0.28, 0.32), ("counter",)),
    _c("Toaster", (0.17, 0.2), (0.26, 0.3), (0.18, 0.21), ("counter",)),
    _c("CoffeeMachine", (0.26, 0.32), (0.2, 0.24), (0.33, 0.38), ("counter",)),
    _c("Kettle", (0.16, 0.2), (0.22, 0.26), (0.2, 0.25), ("counter",)),
    _c("Pot", (0.22, 0.28), (0.3, 0.36), (0.14, 0.18), ("counter",)),
    _c("Pan", (0.24, 0.28), (0.42, 0.48), (0.05, 0.06), ("counter",)),
    _c("Faucet", (0.18, 0.22), (0.05, 0.06), (0.26, 0.32), ("counter",)),
    # --- small items ---
    _c("Book", (0.15, 0.21), (0.02, 0.045), (0.21, 0.28), ("shelf", "table", "desk", "bed")),
    _c("Mug", (0.12, 0.13), (0.085, 0.095), (0.095, 0.11), _T),
    _c("Cup", (0.075, 0.085), (0.075, 0.085), (0.1, 0.12), _T),
    _c("Plate", (0.24, 0.27), (0.24, 0.27), (0.02, 0.025), ("table", "counter", "shelf")),
    _c("Bowl", (0.15, 0.2), (0.15, 0.2), (0.06, 0.08), ("table", "counter", "shelf")),
    _c("Knife", (0.02, 0.025), (0.25, 0.3), (0.015, 0.02), ("counter", "table")),
    _c("ButterKnife", (0.018, 0.022), (0.2, 0.22), (0.008, 0.009), ("counter", "table")),
    _c("Fork", (0.022, 0.026), (0.18, 0.2), (0.012, 0.015), ("counter", "table")),
    _c("Spoon", (0.035, 0.04), (0.17, 0.19), (0.012, 0.016), ("counter", "table")),
    _c("Spatula", (0.06, 0.07), (0.3, 0.33), (0.02, 0.025), ("counter",)),
    _c("Ladle", (0.08, 0.09), (0.3, 0.33), (0.06, 0.07), ("counter",)),
    _c("Apple", (0.075, 0.085), (0.075, 0.085), (0.075, 0.085), ("counter", "table")),
    _c("Tomato", (0.065, 0.075), (0.065, 0.075), (0.055, 0.065), ("counter", "table")),
    _c("Potato", (0.07, 0.08), (0.1, 0.12), (0.06, 0.07), ("counter",)),
    _c("Egg", (0.043, 0.045), (0.043, 0.045), (0.056, 0.06), ("counter",)),
    _c("Lettuce", (0.15, 0.18), (0.15, 0.18), (0.13, 0.16), ("counter",)),
    _c("Bread", (0.11, 0.13), (0.24, 0.3), (0.1, 0.12), ("counter", "table")),
    _c("SaltShaker", (0.04, 0.045), (0.04, 0.045), (0.09, 0.1), ("counter", "table")),
    _c("PepperShaker", (0.04, 0.045), (0.04, 0.045), (0.09, 0.1), ("counter", "table")),
    _c("Bottle", (0.07, 0.08), (0.07, 0.08), (0.25, 0.3), ("counter", "table", "shelf")),
    _c("WineBottle", (0.075, 0.08), (0.075, 0.08), (0.3, 0.32), ("counter", "table", "shelf")),
    _c("SoapBottle", (0.06, 0.07), (0.07, 0.08), (0.17, 0.2), ("counter",)),
    _c("DishSponge", (0.06, 0.07), (0.09, 0.1), (0.025, 0.03), ("counter",)),
    _c("PaperTowelRoll", (0.12, 0.13), (0.12, 0.13), (0.26, 0.28), ("counter",)),
    _c("CellPhone", (0.07, 0.075), (0.145, 0.16), (0.0078, 0.0085), _ALL),
    _c("CreditCard", (0.054, 0.054), (0.0856, 0.0856), (0.0008, 0.0009), _ALL),
    _c("Pen", (0.0085, 0.0095), (0.14, 0.15), (0.0085, 0.0095), ("desk", "table", "shelf")),
    _c("Pencil", (0.007, 0.0075), (0.17, 0.19), (0.007, 0.0075), ("desk", "table", "shelf")),
    _c("RemoteControl", (0.045, 0.05), (0.17, 0.2), (0.02, 0.025), ("table", "sofa", "bed", "shelf")),
    _c("KeyChain", (0.03, 0.04), (0.07, 0.09), (0.012, 0.015), _ALL),
    _c("Watch", (0.038, 0.042), (0.2, 0.23), (0.012, 0.014), ("table", "desk", "shelf")),
    _c("Newspaper", (0.3, 0.32), (0.2, 0.25), (0.008, 0.012), ("table", "sofa", "desk")),
    _c("Laptop", (0.22, 0.26), (0.32, 0.36), (0.21, 0.24), ("desk", "table", "bed")),
    _c("Vase", (0.12, 0.16), (0.12, 0.16), (0.22, 0.35), ("table", "shelf", "desk")),
    _c("Statue", (0.1, 0.14), (0.1, 0.14), (0.2, 0.32), ("table", "shelf", "desk")),
    _c("Box", (0.25, 0.35), (0.3, 0.4), (0.18, 0.28), ("floor", "shelf", "table")),
    _c("Candle", (0.06, 0.08), (0.06, 0.08), (0.1, 0.16), ("table", "shelf", "counter")),
    _c("AlarmClock", (0.07, 0.09), (0.11, 0.14), (0.09, 0.11), ("table", "shelf", "desk")),
    _c("TissueBox", (0.11, 0.12), (0.22, 0.24), (0.1, 0.12), ("table", "shelf", "counter", "desk")),
    _c("DeskLamp", (0.15, 0.18), (0.15, 0.18), (0.38, 0.48), ("desk", "table")),
    _c("Pillow", (0.35, 0.45), (0.45, 0.6), (0.12, 0.18), ("bed", "sofa")),
    _c("TeddyBear", (0.16, 0.2), (0.22, 0.28), (0.28, 0.35), ("bed", "sofa", "floor")),
    _c("Cloth", (0.25, 0.35), (0.25, 0.35), (0.01, 0.015), ("bed", "table", "counter")),
    _c("SprayBottle", (0.08, 0.1), (0.06, 0.07), (0.24, 0.28), ("counter", "shelf")),
    _c("ToiletPaper", (0.11, 0.12), (0.11, 0.12), (0.1, 0.11), ("counter", "shelf", "floor")),
    _c("HandTowel", (0.2, 0.25), (0.14, 0.18), (0.03, 0.04), ("counter",)),
    _c("ScrubBrush", (0.08, 0.1), (0.08, 0.1), (0.3, 0.36), ("floor",)),
    _c("Dumbbell", (0.09, 0.1), (0.28, 0.32), (0.09, 0.1), ("floor",)),
    _c("TennisRacket", (0.26, 0.28), (0.66, 0.69), (0.03, 0.035), ("floor", "bed")),
    _c("BaseballBat", (0.065, 0.07), (0.8, 0.86), (0.065, 0.07), ("floor",)),
    _c("CD", (0.12, 0.12), (0.12, 0.12), (0.0012, 0.0012), ("desk", "shelf", "table")),
    _c("Globe", (0.26, 0.3), (0.26, 0.3), (0.36, 0.42), ("desk", "shelf")),
    # --- catalog v3.0: the rest of ProcTHOR's object types (sizes from AI2-THOR's assets;
    # these ranges set each builder's shape: which side is longest) ---
    _c("AluminumFoil", (0.06, 0.065), (0.28, 0.32), (0.055, 0.06), ("counter",)),
    _c("Cart", (0.5, 0.6), (0.9, 1.0), (0.78, 0.85)),
    _c("ClothesDryer", (0.6, 0.65), (0.58, 0.62), (0.82, 0.88)),
    _c("Desktop", (0.22, 0.26), (0.55, 0.65), (0.42, 0.5), ("desk",)),
    _c("Footstool", (0.32, 0.36), (0.34, 0.4), (0.26, 0.3)),
    _c("GarbageBag", (0.45, 0.5), (0.42, 0.48), (0.5, 0.55)),
    _c("HandTowelHolder", (0.05, 0.06), (0.2, 0.22), (0.16, 0.18), ("wall",)),
    _c("RoomDecor", (0.3, 0.36), (0.3, 0.36), (1.0, 1.4)),
    _c("ShowerCurtain", (0.28, 0.32), (0.34, 0.38), (1.6, 1.7), ("wall",)),
    _c("ShowerHead", (0.22, 0.24), (0.2, 0.22), (1.2, 1.4), ("wall",)),
    _c("SoapBar", (0.055, 0.06), (0.09, 0.095), (0.024, 0.026), ("counter",)),
    _c("TableTopDecor", (0.26, 0.3), (0.36, 0.4), (0.12, 0.14), ("desk", "table", "shelf")),
    _c("VacuumCleaner", (0.3, 0.34), (0.34, 0.38), (0.95, 1.05)),
    _c("WashingMachine", (0.6, 0.65), (0.58, 0.62), (0.84, 0.9)),
    _c("WateringCan", (0.14, 0.16), (0.26, 0.3), (0.18, 0.2), ("table", "shelf", "floor")),
]}

# Small items per room kind, with relative weights (scenes/layout.py draws from these).
SMALL_ITEMS_BY_ROOM: dict[str, dict[str, float]] = {
    "Kitchen": {"Mug": 3, "Cup": 2, "Plate": 2, "Bowl": 2, "Knife": 1.5, "ButterKnife": 1,
                "Fork": 1.5, "Spoon": 1.5, "Spatula": 1, "Ladle": 0.7, "Apple": 2, "Tomato": 1.5,
                "Potato": 1, "Egg": 1, "Lettuce": 1, "Bread": 1, "SaltShaker": 1, "PepperShaker": 1,
                "Bottle": 1.5, "WineBottle": 1, "SoapBottle": 1, "DishSponge": 1,
                "PaperTowelRoll": 0.8, "CellPhone": 0.6, "CreditCard": 0.42, "KeyChain": 0.5,
                "Kettle": 0.6, "Pot": 0.6, "Pan": 0.6, "Candle": 0.3, "Vase": 0.4, "Book": 0.3},
    "LivingRoom": {"Book": 1.5, "RemoteControl": 2, "Vase": 2, "Statue": 1.5, "Candle": 1.5,
                   "Box": 1, "Newspaper": 0.6, "CellPhone": 0.9, "CreditCard": 0.9, "KeyChain": 1,
                   "Mug": 1, "Laptop": 0.6, "TissueBox": 1, "Watch": 0.8, "Pillow": 2,
                   "AlarmClock": 0.5, "Bowl": 0.5, "WineBottle": 0.5, "Pen": 0.48, "CD": 0.36},
    "Bedroom": {"Book": 1.2, "Pillow": 3, "AlarmClock": 1.5, "CellPhone": 0.9, "CreditCard": 0.72,
                "KeyChain": 1, "Watch": 1, "Laptop": 0.8, "TeddyBear": 0.8, "Cloth": 1,
                "Candle": 0.8, "Box": 0.8, "Vase": 0.8, "Statue": 0.6, "TissueBox": 0.8,
                "Pen": 0.6, "Pencil": 0.48, "Mug": 0.6, "CD": 0.3, "TennisRacket": 0.3,
                "BaseballBat": 0.3, "BasketBall": 0.4, "Dumbbell": 0.3},
    "Bathroom": {"SoapBottle": 2, "ToiletPaper": 2, "SprayBottle": 1.5, "HandTowel": 1.5,
                 "Candle": 1.5, "Cloth": 1, "TissueBox": 1, "Cup": 1, "Vase": 0.5, "Box": 0.6,
                 "CellPhone": 0.42, "Watch": 0.5, "Book": 0.5, "Bottle": 0.8, "DishSponge": 0.6},
    "Office": {"Book": 1.5, "Pen": 0.6, "Pencil": 0.6, "CellPhone": 0.9, "CreditCard": 0.72,
               "Mug": 1.5, "Laptop": 1, "KeyChain": 0.8, "Watch": 0.6, "AlarmClock": 0.6,
               "Box": 1, "Vase": 0.6, "Statue": 0.6, "TissueBox": 0.6, "Newspaper": 0.36,
               "CD": 0.6, "Globe": 0.6, "Candle": 0.4, "RemoteControl": 0.4},
}


# Items any room may hold (low weight), for variety across categories.
GENERIC_ITEMS: tuple[str, ...] = ("Vase", "Statue", "Candle", "Box", "Bowl", "AlarmClock", "Watch",
                                  "TissueBox", "Laptop", "Globe", "Bottle", "SprayBottle", "Cloth",
                                  "KeyChain", "Mug", "Cup", "Apple", "WineBottle", "RemoteControl",
                                  "Book", "Plate", "TeddyBear", "DeskLamp", "Newspaper")


def candidate_categories() -> list[str]:
    """Names of every category that may become a target, sorted."""
    return sorted(name for name, c in CATEGORIES.items() if c.candidate)
