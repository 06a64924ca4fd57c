"""Procedural indoor rooms: walls, floor, windows, doors and 10-30 furnished objects."""

from __future__ import annotations

import math

import numpy as np

from hf_real3d.scene import Scene, SceneObject
from hf_real3d.synth.catalog import CATALOG, COLORS, FREE_COLORS, ROOM_TYPES, Category
from hf_real3d.synth.mesh import object_mesh

__all__ = ["generate_room"]

_LABEL_CAP = {"chair": 6, "pillow": 4, "box": 3, "picture": 3, "window": 3}


class _Room:
    def __init__(self, rng: np.random.Generator, width: float, depth: float, height: float):
        self.rng, self.w, self.d, self.h = rng, width, depth, height
        self.objects: list[SceneObject] = []
        self.floor_boxes: list[tuple[np.ndarray, np.ndarray]] = []  # xy AABB (lo, hi)
        self.mounted: list[tuple[int, float, float, float, float]] = []  # wall, t0, t1, z0, z1

    # walls: index -> (inner point at t=0, along unit, inward normal, length)
    def wall(self, i: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
        w, d = self.w, self.d
        return [
            (np.array([0.0, 0.0]), np.array([1.0, 0.0]), np.array([0.0, 1.0]), w),
            (np.array([w, d]), np.array([-1.0, 0.0]), np.array([0.0, -1.0]), w),
            (np.array([0.0, d]), np.array([0.0, -1.0]), np.array([1.0, 0.0]), d),
            (np.array([w, 0.0]), np.array([0.0, 1.0]), np.array([-1.0, 0.0]), d),
        ][i]

    def add(self, label: str, center, size, yaw: float, attrs: dict, *, spacing: float,
            round_shape: bool = False) -> None:
        """A new object with its surface mesh; its id is its place in the room."""
        rgb = COLORS[attrs["color"]]
        pts, faces = object_mesh(center, size, yaw, rgb, self.rng, round_shape=round_shape,
                                 spacing=spacing)
        self.objects.append(SceneObject(len(self.objects), label, center, size, yaw, attrs,
                                        pts, faces))

    def free_xy(self, lo: np.ndarray, hi: np.ndarray, gap: float = 0.08) -> bool:
        if lo[0] < 0.02 or lo[1] < 0.02 or hi[0] > self.w - 0.02 or hi[1] > self.d - 0.02:
            return False
        for blo, bhi in self.floor_boxes:
            if (lo[0] < bhi[0] + gap and hi[0] > blo[0] - gap
                    and lo[1] < bhi[1] + gap and hi[1] > blo[1] - gap):
                return False
        return True


def _footprint_aabb(center: np.ndarray, size: np.ndarray, yaw: float) -> tuple:
    c, s = abs(math.cos(yaw)), abs(math.sin(yaw))
    ex = (size[0] * c + size[1] * s) / 2
    ey = (size[0] * s + size[1] * c) / 2
    return center[:2] - (ex, ey), center[:2] + (ex, ey)


def _draw_size(cat: Category, rng: np.random.Generator, shape: str) -> np.ndarray:
    size = rng.uniform(cat.size_min, cat.size_max)
    if shape in ("round", "square") and cat.placement in ("free", "on"):
        size[1] = size[0] = max(size[0], min(size[1], cat.size_max[0]))
    return size


def _place(room: _Room, cat: Category, size: np.ndarray, tries: int = 40) -> tuple | None:
    """Centre and yaw for a category's placement rule, or None when it does not fit."""
    rng = room.rng
    for _ in range(tries):
        if cat.placement in ("wall", "mounted"):
            wi = int(rng.integers(4))
            p0, along, normal, length = room.wall(wi)
            if size[1] + 0.3 > length:
                continue
            t = rng.uniform(0.15 + size[1] / 2, length - 0.15 - size[1] / 2)
            xy = p0 + along * t + normal * (size[0] / 2 + 0.01)
            yaw = math.atan2(normal[1], normal[0])
            if cat.placement == "mounted":
                z0 = rng.uniform(*cat.mount_z)
                z1 = z0 + size[2]
                if z1 > room.h - 0.05:
                    continue
                t0, t1 = t - size[1] / 2, t + size[1] / 2
                if any(w == wi and t0 < b1 + 0.1 and t1 > b0 - 0.1 and z0 < c1 and z1 > c0
                       for w, b0, b1, c0, c1 in room.mounted):
                    continue
                center = np.array([xy[0], xy[1], z0 + size[2] / 2])
                if cat.label == "door":  # keep the swing area clear of furniture
                    lo, hi = _footprint_aabb(
                        np.array([*(xy + normal * 0.45), 0.0]), np.array([0.9, size[1], 0]), yaw)
                    if not room.free_xy(lo, hi, gap=0.0):
                        continue
                    room.floor_boxes.append((lo, hi))
                room.mounted.append((wi, t0, t1, z0, z1))
                return center, yaw
            center = np.array([xy[0], xy[1], size[2] / 2])
        else:  # free
            yaw = float(rng.uniform(-math.pi, math.pi))
            r = 0.3 + max(size[0], size[1]) / 2
            if room.w - 2 * r < 0.1 or room.d - 2 * r < 0.1:
                return None
            xy = rng.uniform([r, r], [room.w - r, room.d - r])
            center = np.array([xy[0], xy[1], size[2] / 2])
        lo, hi = _footprint_aabb(center, size, yaw)
        if room.free_xy(lo, hi):
            room.floor_boxes.append((lo, hi))
            return center, yaw
    return None


def _place_on(room: _Room, cat: Category, size: np.ndarray) -> tuple | None:
    rng = room.rng
    supports = [o for o in room.objects if o.label in cat.supports]
    rng.shuffle(supports)
    for sup in supports:
        free = sup.size[:2] - size[:2]
        if (free < 0).any():
            continue
        taken = sup.attributes.get("_on", 0)
        if taken >= 2:
            continue
        local = rng.uniform(-free / 2, free / 2)
        c, s = math.cos(sup.yaw), math.sin(sup.yaw)
        xy = sup.center[:2] + np.array([c * local[0] - s * local[1], s * local[0] + c * local[1]])
        sup.attributes["_on"] = taken + 1
        return np.array([xy[0], xy[1], sup.top + size[2] / 2]), sup.yaw, sup
    return None


def generate_room(scene_id: str, rng: np.random.Generator, *,
                  n_objects: tuple[int, int] = (10, 30), spacing: float = 0.1,
                  counter_prior_rate: float = 0.0, label_cap: int | None = None) -> Scene:
    """A random furnished room with ScanNet labels, attributes and coloured surface points.

    Coordinates: the floor is ``z = 0`` and the room spans ``[0, W] x [0, D]``; objects get
    ``attributes`` ``color`` (always), ``shape`` and ``state`` where the category has them,
    and ``on`` (the id of the object they stand on). An object whose category has a usual
    colour (``prior_color``) gets another colour with probability ``counter_prior_rate``:
    the language prior is then wrong about it. ``label_cap`` limits the objects of any one
    label (default: per-category caps of up to 3, which count questions need; 1 gives rooms
    where every object is named by its label alone, as 3DSRBench's questions need).
    """
    if label_cap is not None and label_cap < 1:
        raise ValueError(f"Expected label_cap >= 1 but got {label_cap}")
    room_type = str(rng.choice(list(ROOM_TYPES)))
    width, depth = float(rng.uniform(4.0, 8.0)), float(rng.uniform(3.5, 7.0))
    height = float(rng.uniform(2.5, 3.0))
    room = _Room(rng, width, depth, height)
    _build_shell(room)
    _furnish(room, ROOM_TYPES[room_type], n_objects, spacing=spacing,
             counter_prior_rate=counter_prior_rate, label_cap=label_cap)
    for o in room.objects:
        o.attributes.pop("_on", None)
    scene = Scene(scene_id, room.objects,
                  extras={"room_type": room_type, "room_size": [width, depth, height]})
    lo, hi = scene.mesh_bounds()
    scene.origin = (lo + hi) / 2
    return scene


def _build_shell(room: _Room, spacing: float = 0.3) -> None:
    """The floor and the four walls, each of one colour drawn for the room, their points
    ``spacing`` metres apart."""
    rng = room.rng
    floor_color = str(rng.choice(["brown", "gray", "beige"]))
    wall_color = str(rng.choice(["white", "beige", "gray"]))
    room.add("floor", [room.w / 2, room.d / 2, -0.025], [room.w, room.d, 0.05], 0.0,
             {"color": floor_color}, spacing=spacing)
    for wi in range(4):
        p0, along, normal, length = room.wall(wi)
        xy = p0 + along * length / 2 - normal * 0.05
        room.add("wall", [xy[0], xy[1], room.h / 2], [0.1, length, room.h],
                 math.atan2(normal[1], normal[0]), {"color": wall_color}, spacing=spacing)


def _furnish(room: _Room, weights: dict[str, float], n_objects: tuple[int, int], *,
             spacing: float, counter_prior_rate: float, label_cap: int | None) -> None:
    """A door, one or two windows, then objects drawn by the room type's ``weights`` until
    the drawn number stand in the room (or 6 tries per object are spent)."""
    rng = room.rng
    target = int(rng.integers(n_objects[0], n_objects[1] + 1))
    windows = int(rng.integers(1, 3))
    queue = ["door"] + ["window"] * (windows if label_cap is None else min(windows, label_cap))
    names, w = list(weights), np.array(list(weights.values()), dtype=float)
    attempts = 0
    placed_non_structural = 0
    prior_colors: dict[str, str] = {}
    while placed_non_structural < target and attempts < 6 * target:
        attempts += 1
        if queue:
            label = queue.pop(0)
        else:
            label = str(rng.choice(names, p=w / w.sum()))
            cap = _LABEL_CAP.get(label, 3) if label_cap is None else label_cap
            if sum(o.label == label for o in room.objects) >= cap:
                continue
        cat = CATALOG[label]
        shape = str(rng.choice(cat.shapes))
        size = _draw_size(cat, rng, shape)
        attrs = _draw_attributes(cat, shape, rng, counter_prior_rate, prior_colors)
        if cat.placement == "on":
            got = _place_on(room, cat, size)
            if got is None:
                continue
            center, yaw, sup = got
            attrs["on"] = str(sup.object_id)
        else:
            got = _place(room, cat, size)
            if got is None:
                continue
            center, yaw = got
        room.add(label, center, size, yaw, attrs, spacing=spacing, round_shape=shape == "round")
        placed_non_structural += 1


def _draw_attributes(cat: Category, shape: str, rng: np.random.Generator,
                     counter_prior_rate: float, prior_colors: dict[str, str]) -> dict[str, str]:
    """An object's colour, shape and state. A category's usual colour is kept or replaced
    once per room (``prior_colors``), with probability ``counter_prior_rate``."""
    if cat.prior_color and counter_prior_rate:
        if cat.label not in prior_colors:  # decided once per category and room
            prior_colors[cat.label] = cat.prior_color
            if rng.random() < counter_prior_rate:
                # counter-prior: the category's usual colour is not this room's
                others = [c for c in (cat.colors if cat.colors != (cat.prior_color,) else
                                      FREE_COLORS) if c != cat.prior_color]
                prior_colors[cat.label] = str(rng.choice(others))
        attrs = {"color": prior_colors[cat.label]}
    else:
        attrs = {"color": cat.prior_color or str(rng.choice(cat.colors))}
    if len(cat.shapes) > 1 or cat.shapes != ("rectangular",):
        attrs["shape"] = shape
    if cat.states:
        attrs["state"] = str(rng.choice(cat.states))
    return attrs
