"""Scenes as objects with boxes and points; ScanNet on-disk format (the mesh read and written
with plyfile, as ScanNet's own scripts do); scene-graph queries.

A ScanNet scene folder ``<root>/<scene_id>/`` holds

* ``<scene_id>_vh_clean_2.ply``: the mesh (vertices with colours, triangle faces),
* ``<scene_id>_vh_clean_2.0.010000.segs.json``: ``{"segIndices": [...]}``, one segment id
  per vertex,
* ``<scene_id>.aggregation.json``: ``{"segGroups": [{"objectId", "label", "segments"}]}``.

Our writer adds optional keys to each seg group (``attributes``, ``center``, ``size``,
``yaw``) so that a synthetic scene round-trips exactly; a reader of real ScanNet data finds
none and derives boxes from the points (axis-aligned, ``yaw = 0``).
"""

from __future__ import annotations

import collections
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from plyfile import PlyData, PlyElement, PlyParseError

from hf_real3d._io import FormatError, atomic_dir, read_json, write_json
from hf_real3d.geometry import Pose, bin_margin, direction_bin

__all__ = ["COLORS", "SceneObject", "Scene", "STRUCTURAL_LABELS", "check_scene_id", "scannet_paths",
           "read_scannet", "write_scannet"]

# the named colours of the procedural rooms; SceneLM's colour words name an object's points
# by the nearest of them (rgb 0-255)
COLORS: dict[str, tuple[int, int, int]] = {
    "white": (235, 235, 230),
    "black": (30, 30, 32),
    "brown": (120, 80, 45),
    "gray": (128, 128, 128),
    "red": (190, 40, 40),
    "blue": (50, 80, 180),
    "green": (60, 150, 60),
    "yellow": (220, 200, 60),
    "beige": (215, 200, 165),
    "orange": (225, 130, 40),
}

STRUCTURAL_LABELS = frozenset({"wall", "floor", "ceiling"})
_SCENE_ID_RE = re.compile(r"[A-Za-z]{1,16}\d{4}_\d{2}")


def check_scene_id(scene_id: object) -> str:
    """Return ``scene_id`` if it is ``sceneXXXX_XX``-like; raise before any file is touched.

    Letters, four digits, underscore, two digits (``scene0050_00``, ``synth0003_00``);
    anything with path separators, ``..`` or other characters is rejected.
    """
    if not isinstance(scene_id, str) or not _SCENE_ID_RE.fullmatch(scene_id):
        raise FormatError(
            f"unsafe or malformed scene id {scene_id!r}: expected letters + 4 digits + '_' + "
            "2 digits such as 'scene0050_00' (no path separators or '..')")
    return scene_id


def scannet_paths(root: str | os.PathLike, scene_id: str) -> dict[str, Path]:
    """The three ScanNet files of ``scene_id`` under ``root/<scene_id>/``."""
    check_scene_id(scene_id)
    folder = Path(root) / scene_id
    return {
        "folder": folder,
        "ply": folder / f"{scene_id}_vh_clean_2.ply",
        "segs": folder / f"{scene_id}_vh_clean_2.0.010000.segs.json",
        "aggregation": folder / f"{scene_id}.aggregation.json",
    }


@dataclass
class SceneObject:
    """One object: id, label, box (centre, size along its local axes, yaw), attributes.

    ``yaw`` (radians) turns the object's local +x axis, its *front*, about z.
    ``points`` is an optional (N, 6) float32 array of xyz + rgb (rgb in [0, 1]);
    ``faces`` optional (F, 3) int triangles indexing ``points``.
    """

    object_id: int
    label: str
    center: np.ndarray
    size: np.ndarray
    yaw: float = 0.0
    attributes: dict[str, str] = field(default_factory=dict)
    points: np.ndarray | None = None
    faces: np.ndarray | None = None

    def __post_init__(self) -> None:
        self.center = np.asarray(self.center, dtype=float).reshape(3)
        self.size = np.asarray(self.size, dtype=float).reshape(3)
        if self.points is not None:
            self.points = np.asarray(self.points, dtype=np.float32).reshape(-1, 6)

    @property
    def front(self) -> np.ndarray:
        """Unit vector of the object's front (its local +x) in the world."""
        return np.array([np.cos(self.yaw), np.sin(self.yaw), 0.0])

    @property
    def top(self) -> float:
        return float(self.center[2] + self.size[2] / 2)

    @property
    def bottom(self) -> float:
        return float(self.center[2] - self.size[2] / 2)

    def footprint_corners(self) -> np.ndarray:
        """The four xy corners of the (possibly rotated) box, (4, 2)."""
        hx, hy = self.size[0] / 2, self.size[1] / 2
        local = np.array([[hx, hy], [-hx, hy], [-hx, -hy], [hx, -hy]])
        c, s = np.cos(self.yaw), np.sin(self.yaw)
        rot = np.array([[c, -s], [s, c]])
        return local @ rot.T + self.center[:2]

    @property
    def is_structural(self) -> bool:
        return self.label in STRUCTURAL_LABELS


@dataclass
class Scene:
    """A scene: id and objects. ``origin`` is the centre of the mesh's axis-aligned box,
    the point SQA3D positions are relative to."""

    scene_id: str
    objects: list[SceneObject]
    origin: np.ndarray = field(default_factory=lambda: np.zeros(3))
    extras: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        check_scene_id(self.scene_id)
        self.origin = np.asarray(self.origin, dtype=float).reshape(3)
        ids = [o.object_id for o in self.objects]
        if len(set(ids)) != len(ids):
            dup = [i for i, c in collections.Counter(ids).items() if c > 1]
            raise FormatError(f"{self.scene_id}: duplicate object ids {dup[:5]}")
        self._by_id = {o.object_id: o for o in self.objects}

    # --- basic lookups ---------------------------------------------------------------
    def object(self, object_id: int) -> SceneObject:
        try:
            return self._by_id[object_id]
        except KeyError:
            raise KeyError(f"{self.scene_id}: no object with id {object_id}") from None

    def by_label(self, label: str) -> list[SceneObject]:
        return [o for o in self.objects if o.label == label]

    def counts(self) -> collections.Counter:
        """Objects per label, structure (walls, floor, ceiling) left out."""
        return collections.Counter(o.label for o in self.non_structural())

    def count(self, label: str) -> int:
        return sum(1 for o in self.objects if o.label == label)

    def non_structural(self) -> list[SceneObject]:
        return [o for o in self.objects if not o.is_structural]

    def mesh_bounds(self) -> tuple[np.ndarray, np.ndarray]:
        """(min, max) corners of all points, or of the boxes when there are no points."""
        pts = [o.points[:, :3] for o in self.objects if o.points is not None and len(o.points)]
        if pts:
            allp = np.concatenate(pts)
            return allp.min(0).astype(float), allp.max(0).astype(float)
        lo = np.min([o.center - o.size / 2 for o in self.objects], axis=0)
        hi = np.max([o.center + o.size / 2 for o in self.objects], axis=0)
        return lo, hi

    # --- egocentric queries ----------------------------------------------------------
    def egocentric(self, pose: Pose, objects: Sequence[SceneObject] | None = None, n: int = 4
                   ) -> dict[str, np.ndarray]:
        """Vectorised view of objects from ``pose``: angle, bin, bin margin, distance."""
        objs = list(self.non_structural() if objects is None else objects)
        centers = np.stack([o.center for o in objs]) if objs else np.zeros((0, 3))
        angle = np.atleast_1d(pose.ego_angle(centers)) if objs else np.zeros(0)
        return {
            "angle": angle,
            "bin": np.atleast_1d(direction_bin(angle, n)) if objs else np.zeros(0, int),
            "margin": np.atleast_1d(bin_margin(angle, n)) if objs else np.zeros(0),
            "distance": np.atleast_1d(pose.distance(centers)) if objs else np.zeros(0),
        }

    # --- arrays for datasets ---------------------------------------------------------
    def point_cloud(self) -> np.ndarray:
        """All points (N, 6) float32, xyz + rgb in [0, 1]."""
        pts = [o.points for o in self.objects if o.points is not None]
        return np.concatenate(pts).astype(np.float32) if pts else np.zeros((0, 6), np.float32)


# --- ScanNet I/O ---------------------------------------------------------------------------


def write_scannet(scene: Scene, root: str | os.PathLike) -> Path:
    """Write ``scene`` as ScanNet files under ``root/<scene_id>/`` atomically."""
    paths = scannet_paths(root, scene.scene_id)
    verts, colors, faces, seg_idx, groups = [], [], [], [], []
    offset = 0
    for seg, obj in enumerate(scene.objects):
        if obj.points is None or len(obj.points) == 0:
            raise FormatError(
                f"{scene.scene_id}: object {obj.object_id} ({obj.label}) has no points; "
                "ScanNet files store objects as mesh vertices")
        n = len(obj.points)
        verts.append(obj.points[:, :3].astype(np.float64))
        colors.append(obj.points[:, 3:6].astype(np.float64))
        if obj.faces is not None and len(obj.faces):
            faces.append(np.asarray(obj.faces, dtype=np.int64) + offset)
        seg_idx.append(np.full(n, seg, dtype=np.int64))
        groups.append({
            "id": len(groups),
            "objectId": int(obj.object_id),
            "segments": [seg],
            "label": obj.label,
            "attributes": dict(obj.attributes),
            "center": [float(v) for v in obj.center],
            "size": [float(v) for v in obj.size],
            "yaw": float(obj.yaw),
        })
        offset += n
    with atomic_dir(paths["folder"]) as tmp:
        _write_ply(tmp / paths["ply"].name, np.concatenate(verts), np.concatenate(colors),
                   np.concatenate(faces) if faces else np.zeros((0, 3), np.int64))
        write_json(tmp / paths["segs"].name, {
            "sceneId": scene.scene_id,
            "segIndices": np.concatenate(seg_idx).tolist(),
        })
        write_json(tmp / paths["aggregation"].name, {
            "sceneId": scene.scene_id,
            "appId": "hf_real3d",
            "segmentsFile": paths["segs"].name,
            "segGroups": groups,
            "extras": scene.extras,
        })
    return paths["folder"]


def _write_ply(path: Path, verts: np.ndarray, colors: np.ndarray, faces: np.ndarray) -> None:
    """A binary PLY mesh laid out as ScanNet's (and as open3d wrote it before): double x, y, z;
    uchar red, green, blue (a colour in [0, 1] times 255, rounded half away from zero); each
    face a uchar count and three uint indices. plyfile writes the header; the rows go at once
    (its writer would go face by face)."""
    v = np.empty(len(verts), dtype=[(k, "<f8") for k in "xyz"]
                 + [(k, "u1") for k in ("red", "green", "blue")])
    rgb = np.clip(colors, 0.0, 1.0) * 255.0
    rgb = np.floor(rgb) + (rgb - np.floor(rgb) >= 0.5)
    for i, k in enumerate("xyz"):
        v[k] = verts[:, i]
    for i, k in enumerate(("red", "green", "blue")):
        v[k] = rgb[:, i]
    f = np.empty(len(faces), dtype=[("n", "u1"), ("vertex_indices", "<u4", (3,))])
    f["n"], f["vertex_indices"] = 3, faces
    ply = PlyData([PlyElement.describe(v, "vertex"),
                   PlyElement.describe(np.empty(len(f), [f.dtype.descr[1]]), "face",
                                       len_types={"vertex_indices": "u1"},
                                       val_types={"vertex_indices": "u4"})],
                  text=False, byte_order="<", comments=["Created by hf_real3d"])
    with open(path, "wb") as out:
        out.write(ply.header.encode("ascii") + b"\n" + v.tobytes() + f.tobytes())


def _read_ply(path: Path) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(vertices, colours in [0, 1], triangles) of a PLY mesh; a file cut short or corrupt is
    a :class:`FormatError` (never garbage read past its end)."""
    try:
        with open(path, "rb") as f:
            ply = PlyData.read(f, known_list_len={"face": {"vertex_indices": 3,
                                                           "vertex_index": 3}})
            v = ply["vertex"].data
            verts = np.stack([v[k] for k in "xyz"], axis=1).astype(np.float64)
            rgb = ("red", "green", "blue")
            colors = np.stack([v[k] for k in rgb], axis=1) / 255.0 \
                if set(rgb) <= set(v.dtype.names) else np.zeros_like(verts)
            faces = ply["face"].data[ply["face"].properties[0].name] if "face" in ply else []
            # a text file's faces come as an array of lists, a binary file's as one table
            tris = np.array(np.vstack(faces) if len(faces) and faces.dtype == object else
                            faces, dtype=np.int64).reshape(len(faces), -1)
    except (PlyParseError, KeyError, ValueError) as err:
        raise FormatError(f"{path}: not a readable PLY mesh of triangles with x, y, z vertices "
                          f"({err}): the file is truncated or corrupt; copy it again") from None
    if len(verts) == 0:
        raise FormatError(f"{path}: no vertices (not a ScanNet mesh?)")
    if len(tris) and tris.shape[1] != 3:
        raise FormatError(f"{path}: faces of {tris.shape[1]} vertices; a ScanNet mesh has "
                          "triangles")
    if not np.isfinite(verts).all():
        raise FormatError(f"{path}: vertex positions are not finite; the file is corrupt")
    if len(tris) and (tris.min() < 0 or tris.max() >= len(verts)):
        raise FormatError(f"{path}: faces index vertices outside 0..{len(verts) - 1}")
    return verts, colors, tris


def read_scannet(root: str | os.PathLike, scene_id: str) -> Scene:
    """Read a ScanNet-format scene; boxes come from the aggregation extras or the points."""
    paths = scannet_paths(root, scene_id)  # validates the id before touching files
    for key in ("ply", "segs", "aggregation"):
        if not paths[key].is_file():
            raise FileNotFoundError(
                f"{scene_id}: missing {paths[key].name} in {paths['folder']}; "
                "expected ScanNet's *_vh_clean_2.ply, *.segs.json and *.aggregation.json")
    verts, colors, tris = _read_ply(paths["ply"])
    segs = read_json(paths["segs"])
    agg = read_json(paths["aggregation"])
    if not isinstance(segs, dict) or "segIndices" not in segs:
        raise FormatError(f"{paths['segs']}: expected an object with 'segIndices'")
    seg_indices = np.asarray(segs["segIndices"], dtype=np.int64)
    if len(seg_indices) != len(verts):
        raise FormatError(
            f"{scene_id}: {paths['ply'].name} has {len(verts)} vertices but "
            f"{paths['segs'].name} has {len(seg_indices)} segIndices; the two files must come "
            "from the same mesh")
    if not isinstance(agg, dict) or not isinstance(agg.get("segGroups"), list):
        raise FormatError(f"{paths['aggregation']}: expected an object with a 'segGroups' list")
    pts_all = np.concatenate([verts, colors], axis=1).astype(np.float32)
    known_segments = set(np.unique(seg_indices).tolist())
    objects = []
    for g in agg["segGroups"]:
        try:
            oid, label, segments = int(g["objectId"]), str(g["label"]), g["segments"]
        except (KeyError, TypeError, ValueError):
            raise FormatError(f"{paths['aggregation']}: seg group {g!r} lacks "
                              "objectId/label/segments") from None
        absent = sorted(set(int(s) for s in segments) - known_segments)
        if absent:
            raise FormatError(
                f"{paths['aggregation']}: object {oid} ({label}) refers to segment(s) "
                f"{absent[:5]} that {paths['segs'].name} does not have; the files must come "
                "from the same scan")
        mask = np.isin(seg_indices, np.asarray(segments, dtype=np.int64))
        idx = np.flatnonzero(mask)
        pts = pts_all[idx]
        faces = None
        if len(tris):
            remap = np.full(len(verts), -1, dtype=np.int64)
            remap[idx] = np.arange(len(idx))
            keep = mask[tris].all(axis=1)
            faces = remap[tris[keep]]
        if "center" in g and "size" in g:
            center, size, yaw = g["center"], g["size"], float(g.get("yaw", 0.0))
        elif len(pts):
            lo, hi = pts[:, :3].min(0), pts[:, :3].max(0)
            center, size, yaw = (lo + hi) / 2, hi - lo, 0.0
        else:
            raise FormatError(f"{scene_id}: object {oid} ({label}) has no vertices in "
                              f"segments {segments[:5]}")
        objects.append(SceneObject(oid, label, center, size, yaw, dict(g.get("attributes", {})),
                                   pts, faces))
    lo, hi = verts.min(0), verts.max(0)
    return Scene(scene_id, objects, origin=(lo + hi) / 2, extras=dict(agg.get("extras", {})))
