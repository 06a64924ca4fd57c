"""Rendered views of situated questions, for 3D-LLMs that take 3D as images.

GPT4Scene-style inputs drawn from a scene's object boxes (no mesh renderer, so they are
cheap enough for every training question):

* :func:`bev_image`: the room from above, north up, each object a filled box in its colour
  with its number (its index in the scene), as GPT4Scene marks objects on its BEV;
* :func:`ego_frame`: what the agent sees from its pose (pinhole camera at eye height, 90
  degree field of view): object boxes drawn far to near, with the same numbers. A rotated
  viewpoint turns the pose, so its frame turns with it.

:func:`view_rows` gives one row per (question, viewpoint): ``images = [bev, frame]``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import datasets
import numpy as np
from PIL import Image, ImageDraw
from tqdm.auto import tqdm

from hf_real3d.geometry import Pose
from hf_real3d.hub import ConfigData, add_config, load_local
from hf_real3d.scene import COLORS, Scene, SceneObject
from hf_real3d.schema import scene_from_row
from hf_real3d.sources import DatasetFolder, resolve

__all__ = ["bev_image", "ego_frame", "view_rows", "object_color", "EYE_HEIGHT"]

EYE_HEIGHT = 1.5  # metres above the floor (z = 0 at the room's lowest point)
STRUCTURE = frozenset({"wall", "floor", "ceiling"})


def object_color(obj: SceneObject) -> tuple[int, int, int]:
    """The object's mean point colour, else its ``color`` attribute, else grey."""
    if obj.points is not None and len(obj.points):
        rgb = np.clip(obj.points[:, 3:6].mean(0), 0, 1)
        return tuple(int(v * 255) for v in rgb)
    name = obj.attributes.get("color")
    return tuple(COLORS[name]) if name in COLORS else (128, 128, 128)


def _footprint(obj: SceneObject) -> np.ndarray:
    """(4, 2) corners of the object's box seen from above."""
    c, s = np.cos(obj.yaw), np.sin(obj.yaw)
    hx, hy = obj.size[0] / 2, obj.size[1] / 2
    local = np.array([[hx, hy], [-hx, hy], [-hx, -hy], [hx, -hy]])
    return obj.center[:2] + local @ np.array([[c, s], [-s, c]])


def bev_image(scene: Scene, size: int = 128, margin: float = 0.3) -> Image.Image:
    """Top-down view: x to the right, y up, objects numbered by their index."""
    img = Image.new("RGB", (size, size), (255, 255, 255))
    if not scene.objects:
        return img
    corners = np.concatenate([_footprint(o) for o in scene.objects])
    lo, hi = corners.min(0) - margin, corners.max(0) + margin
    scale = (size - 1) / max(float((hi - lo).max()), 1e-6)

    def px(xy: np.ndarray) -> list[tuple[float, float]]:
        return [(float((x - lo[0]) * scale), float((hi[1] - y) * scale)) for x, y in xy]

    draw = ImageDraw.Draw(img)
    order = sorted(range(len(scene.objects)), key=lambda i: scene.objects[i].center[2])
    for i in order:  # lower objects first: a lamp on a table stays visible
        o = scene.objects[i]
        draw.polygon(px(_footprint(o)), fill=object_color(o), outline=(0, 0, 0))
        cx, cy = px(o.center[None, :2])[0]
        draw.text((cx - 3, cy - 5), str(i), fill=(0, 0, 0))
    return img


def ego_frame(scene: Scene, pose: Pose, size: int = 128, fov_deg: float = 90.0
              ) -> Image.Image:
    """The agent's view: a pinhole camera at ``EYE_HEIGHT`` looking along its facing."""
    img = Image.new("RGB", (size, size), (235, 235, 235))
    draw = ImageDraw.Draw(img)
    draw.rectangle([0, size // 2, size, size], fill=(200, 190, 175))  # floor
    f = (size / 2) / np.tan(np.radians(fov_deg) / 2)
    floor = min((o.center[2] - o.size[2] / 2 for o in scene.objects), default=0.0)
    items = []
    for i, o in enumerate(scene.objects):
        if o.label in STRUCTURE:  # the room's shell is the background
            continue
        corners = np.concatenate([_footprint(o), _footprint(o)])
        z = np.repeat([o.center[2] - o.size[2] / 2, o.center[2] + o.size[2] / 2], 4)
        ego = pose.to_ego(np.column_stack([corners, z]))  # x forward, y left, z up
        depth = ego[:, 0]
        if (depth <= 0.1).all():
            continue
        depth = np.maximum(depth, 0.1)
        u = size / 2 - f * ego[:, 1] / depth
        v = size / 2 - f * (ego[:, 2] - (floor + EYE_HEIGHT)) / depth
        box = [float(u.min()), float(v.min()), float(u.max()), float(v.max())]
        if box[2] < 0 or box[0] > size:
            continue
        items.append((float(ego[:, 0].mean()), i, box, object_color(o)))
    for _, i, box, color in sorted(items, reverse=True):  # far to near
        draw.rectangle(box, fill=color, outline=(0, 0, 0))
        cx, cy = (box[0] + box[2]) / 2, (box[1] + box[3]) / 2
        draw.text((cx - 3, cy - 5), str(i), fill=(0, 0, 0))
    return img


def view_rows(rows: Iterable[Mapping[str, Any]], scenes: Mapping[str, Scene], *,
              size: int = 128) -> Iterable[dict[str, Any]]:
    """One row per question row: ``question_id, rotation_deg, scene_id, images`` with
    ``images = [bev, ego frame]`` (positions relative to each scene's ``origin``, as SQA3D
    writes them)."""
    bev: dict[str, Image.Image] = {}
    for r in rows:
        sid = r["scene_id"]
        if sid not in scenes:
            raise ValueError(f"question_id {r['question_id']}: scene {sid!r} is not in the "
                             "scenes config; rebuild the dataset with its scenes")
        if sid not in bev:
            bev[sid] = bev_image(scenes[sid], size)
        pose = Pose.from_sqa3d(r["position"], r["rotation"], scenes[sid].origin,
                               item=f"question_id {r['question_id']}")
        yield {"question_id": str(r["question_id"]), "rotation_deg": int(r.get("rotation_deg")
                                                                         or 0),
               "scene_id": sid, "images": [bev[sid], ego_frame(scenes[sid], pose, size)]}


def add_views_config(folder: str, *, configs: tuple[str, ...] = ("sqa3d", "rotations"),
                     size: int = 128, name: str = "views") -> dict[str, int]:
    """Render every question of ``configs`` (those the folder has) into the ``views``
    config of the dataset folder (keys ``question_id`` + ``rotation_deg``); returns the rows
    per split. Needs the folder's ``scenes`` config."""
    root = Path(folder)
    have = set(resolve(root, DatasetFolder, what="a dataset folder with scenes").configs())
    if "scenes" not in have:
        raise ValueError(f"{root}: no 'scenes' config to render views from (the official "
                         "release has no geometry; build with hf-real3d synth or "
                         "build-real3dqa `scans`)")
    scenes = {}
    for split in load_local(root, "scenes", split=None).values():
        for row in split.with_format("numpy", columns=["points"], output_all_columns=True):
            scenes.setdefault(row["scene_id"], scene_from_row(row))
    splits: dict[str, list[dict[str, Any]]] = {}
    for cfg in configs:
        if cfg not in have:
            continue
        for split, ds in load_local(root, cfg, split=None).items():
            cols = [c for c in ("question_id", "rotation_deg", "scene_id", "position",
                                "rotation") if c in ds.column_names]
            rows = tqdm(ds.select_columns(cols), desc=f"views {cfg}/{split}", leave=False)
            splits.setdefault(split, []).extend(view_rows(rows, scenes, size=size))
    feats = datasets.Features({"question_id": datasets.Value("string"),
                               "rotation_deg": datasets.Value("int32"),
                               "scene_id": datasets.Value("string"),
                               "images": datasets.Sequence(datasets.Image())})
    for rows in splits.values():  # one row per (question, viewpoint)
        seen: dict[tuple[str, int], dict] = {}
        for r in rows:
            seen.setdefault((r["question_id"], r["rotation_deg"]), r)
        rows[:] = list(seen.values())
    cfg = ConfigData(name, splits, feats, rows_per_shard=5000,
                     description="rendered views for VLMs, keyed by question_id + "
                                 "rotation_deg: images = [BEV with numbered objects, the "
                                 "agent's egocentric frame]")
    add_config(root, cfg, section=(
        f"Images are {size}x{size} PNGs drawn from the `scenes` config's object boxes "
        "(`hf_real3d.views`): a top-down view with each object's number, and a pinhole "
        f"frame from the agent's pose ({EYE_HEIGHT} m eye height, 90 degree field of view), "
        "turned with each rotated viewpoint."))
    return dict(cfg.counts)
