"""Object categories of the procedural rooms: ScanNet labels, sizes, looks and priors.

Sizes are ``(depth, width, height)`` in metres along the object's local (front, side, up)
axes, drawn uniformly between ``size_min`` and ``size_max``.

``prior_color`` marks categories whose colour a text-only model can learn (a whiteboard
is white): the generator always paints them that colour, and only questions about them
are *guessable* colour questions. ``function`` is a description from which a text-only
model can name the object ("the thing on the wall that lets in natural light").
"""

from __future__ import annotations

from dataclasses import dataclass

from hf_real3d.scene import COLORS  # noqa: F401  (re-exported: the rooms paint with it)

FREE_COLORS = ("brown", "black", "gray", "red", "blue", "yellow", "beige", "orange", "white",
               "green")


@dataclass(frozen=True)
class Category:
    """One object category of the procedural rooms: its label, size range, placement, colours,
    shapes and what language priors say about it."""
    label: str
    size_min: tuple[float, float, float]
    size_max: tuple[float, float, float]
    placement: str  # "wall" (back to a wall), "free", "on" (on a support), "mounted" (on a wall)
    colors: tuple[str, ...] = FREE_COLORS
    shapes: tuple[str, ...] = ("rectangular",)
    states: tuple[str, ...] = ()
    prior_color: str | None = None
    function: str | None = None
    supports: tuple[str, ...] = ()  # for placement "on"
    mount_z: tuple[float, float] = (0.0, 0.0)  # bottom height for "mounted"
    oriented: bool = True  # has a meaningful front

    @property
    def round(self) -> bool:
        return self.shapes == ("round",)


_C = Category
CATALOG: dict[str, Category] = {c.label: c for c in [
    _C("chair", (0.45, 0.45, 0.8), (0.55, 0.55, 1.0), "free"),
    _C("armchair", (0.7, 0.7, 0.8), (0.9, 0.9, 1.0), "free"),
    _C("couch", (0.8, 1.6, 0.8), (1.0, 2.4, 0.9), "wall", states=("tidy", "messy")),
    _C("table", (0.7, 0.7, 0.7), (1.0, 1.6, 0.78), "free", shapes=("round", "square",
       "rectangular"), colors=("brown", "white", "black", "gray", "beige"), oriented=False),
    _C("coffee table", (0.5, 0.8, 0.4), (0.7, 1.2, 0.5), "free",
       shapes=("round", "square", "rectangular"), oriented=False),
    _C("desk", (0.6, 1.0, 0.72), (0.8, 1.6, 0.78), "wall", colors=("brown", "white", "black",
       "gray")),
    _C("bed", (1.95, 1.0, 0.5), (2.1, 1.8, 0.6), "wall", states=("made", "unmade"),
       function="the place where I can sleep at night"),
    _C("nightstand", (0.4, 0.4, 0.5), (0.5, 0.5, 0.6), "wall"),
    _C("dresser", (0.45, 0.9, 0.8), (0.55, 1.4, 1.1), "wall"),
    _C("cabinet", (0.4, 0.6, 0.8), (0.6, 1.2, 1.9), "wall", states=("open", "closed")),
    _C("bookshelf", (0.3, 0.8, 1.6), (0.4, 1.2, 2.0), "wall",
       function="the furniture where books are stored"),
    _C("refrigerator", (0.65, 0.6, 1.6), (0.75, 0.8, 1.9), "wall", prior_color="white",
       states=("open", "closed"), function="the appliance that keeps food cold"),
    _C("toilet", (0.65, 0.4, 0.75), (0.75, 0.45, 0.8), "wall", prior_color="white",
       function="the thing I use after drinking too much water"),
    _C("sink", (0.45, 0.5, 0.85), (0.55, 0.7, 0.9), "wall", prior_color="white",
       function="the place where I can wash my hands"),
    _C("piano", (0.5, 1.4, 1.2), (0.6, 1.5, 1.3), "wall", prior_color="black",
       function="the instrument with ebony and ivory keys"),
    _C("washing machine", (0.55, 0.6, 0.85), (0.65, 0.6, 0.9), "wall", prior_color="white",
       function="the appliance that cleans my clothes"),
    _C("trash can", (0.3, 0.3, 0.4), (0.4, 0.4, 0.7), "free", shapes=("round",),
       colors=("black", "gray", "blue", "green", "white"), oriented=False,
       function="the thing where I throw away rubbish"),
    _C("plant", (0.3, 0.3, 0.5), (0.5, 0.5, 1.2), "free", shapes=("round",), prior_color="green",
       oriented=False),
    _C("ottoman", (0.5, 0.5, 0.4), (0.7, 0.7, 0.45), "free", shapes=("round", "square"),
       oriented=False),
    _C("backpack", (0.2, 0.3, 0.4), (0.3, 0.4, 0.5), "free", oriented=False),
    _C("box", (0.3, 0.3, 0.2), (0.6, 0.6, 0.5), "free", colors=("brown", "white", "gray"),
       oriented=False),
    _C("whiteboard", (0.03, 1.2, 0.9), (0.04, 2.0, 1.2), "mounted", prior_color="white",
       mount_z=(0.8, 1.0), function="the board on the wall I can write notes on"),
    _C("picture", (0.03, 0.4, 0.3), (0.04, 0.9, 0.7), "mounted", mount_z=(1.2, 1.6)),
    _C("mirror", (0.03, 0.4, 0.6), (0.04, 0.7, 1.0), "mounted", colors=("gray",),
       mount_z=(0.9, 1.2), function="the thing on the wall that shows my reflection"),
    _C("tv", (0.08, 0.9, 0.5), (0.1, 1.3, 0.8), "mounted", prior_color="black",
       states=("on", "off"), mount_z=(1.0, 1.3), function="the screen I watch shows on"),
    _C("monitor", (0.15, 0.5, 0.35), (0.2, 0.6, 0.45), "on", prior_color="black",
       states=("on", "off"), supports=("desk", "table")),
    _C("lamp", (0.25, 0.25, 0.4), (0.3, 0.3, 0.6), "on", shapes=("round",), states=("on", "off"),
       supports=("nightstand", "desk", "dresser"), oriented=False),
    _C("laptop", (0.25, 0.33, 0.03), (0.3, 0.38, 0.04), "on", colors=("gray", "black", "white"),
       states=("open", "closed"), supports=("desk", "table", "coffee table", "bed")),
    _C("keyboard", (0.14, 0.42, 0.03), (0.16, 0.46, 0.04), "on", colors=("black", "white"),
       supports=("desk",)),
    _C("pillow", (0.35, 0.5, 0.12), (0.45, 0.65, 0.18), "on",
       supports=("bed", "couch", "armchair"), oriented=False),
    _C("microwave", (0.35, 0.45, 0.28), (0.4, 0.5, 0.32), "on", colors=("white", "black", "gray"),
       supports=("cabinet", "table", "dresser")),
    _C("printer", (0.35, 0.4, 0.2), (0.45, 0.5, 0.3), "on", colors=("white", "gray", "black"),
       supports=("desk", "cabinet")),
    _C("window", (0.06, 0.8, 0.9), (0.08, 1.6, 1.4), "mounted", states=("open", "closed"),
       colors=("white",), mount_z=(0.8, 1.0),
       function="the thing on the wall that lets natural light into the room"),
    _C("door", (0.05, 0.8, 2.0), (0.06, 0.95, 2.1), "mounted", states=("open", "closed"),
       colors=("brown", "white"), mount_z=(0.0, 0.0),
       function="the thing I open to leave the room"),
]}

# Room profiles: categories drawn with these weights (windows/doors are always added).
ROOM_TYPES: dict[str, dict[str, float]] = {
    "bedroom": {"bed": 3, "nightstand": 2, "dresser": 1.5, "lamp": 2, "pillow": 2, "chair": 1,
                "desk": 1, "backpack": 1, "box": 1, "picture": 1, "mirror": 1, "trash can": 1,
                "plant": 0.5, "cabinet": 1, "laptop": 0.5, "tv": 0.5, "ottoman": 0.5},
    "office": {"desk": 3, "chair": 3, "monitor": 2.5, "keyboard": 1.5, "cabinet": 1.5,
               "bookshelf": 1.5, "printer": 1, "trash can": 1.5, "whiteboard": 1, "box": 1,
               "backpack": 1, "plant": 1, "laptop": 1, "table": 1, "picture": 0.5},
    "living room": {"couch": 3, "armchair": 2, "coffee table": 2, "tv": 1.5, "pillow": 2,
                    "lamp": 1, "plant": 1.5, "bookshelf": 1, "picture": 1.5, "ottoman": 1,
                    "table": 1, "chair": 1, "piano": 0.7, "box": 0.5, "cabinet": 1},
    "kitchen": {"table": 2, "chair": 3, "refrigerator": 2, "cabinet": 3, "sink": 2,
                "microwave": 1.5, "trash can": 1.5, "box": 1, "plant": 0.5, "picture": 0.5,
                "washing machine": 0.7},
    "bathroom": {"toilet": 3, "sink": 3, "mirror": 2, "trash can": 1.5, "cabinet": 1.5,
                 "washing machine": 1, "box": 0.5, "plant": 0.5},
}
