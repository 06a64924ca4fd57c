"""A rotation set's rows, whatever holds them: the official release folder, a folder of
``rotation_{k}.json`` files in its format, or a dataset folder this library built or
imported (its ``rotations`` config), with the scenes when geometry is known. What kind of
input a path is, :func:`hf_real3d.sources.resolve` says."""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hf_real3d.errors import FormatError
from hf_real3d.real3dqa.format import read_release, read_rotation_files
from hf_real3d.sources import DatasetFolder, Release, RotationFiles, resolve, scene_getter

if TYPE_CHECKING:  # for annotations only
    from hf_real3d.scene import Scene

__all__ = ["RotationSet", "read_rotation_set"]

_ROW_KEYS = ("question_id", "rotation_deg", "scene_id", "situation", "question", "answers",
             "position", "rotation")
_OPTIONAL_KEYS = ("alternative_situation", "semantics", "source_question_id")


@dataclass
class RotationSet:
    """The rows of a rotation set (one per question and viewpoint, ``question_id`` the
    group's base id) and where they came from."""

    source: str  # "release", "files" or "folder"
    path: Path
    rows: list[dict[str, Any]]
    scenes: Callable[[str], Scene] | None = None  # scene_id -> Scene, when geometry is known
    scenes_from: str = ""  # where the scenes come from, for the report
    files: dict[int, str] = field(default_factory=dict)  # viewpoint -> file, for messages
    split: str = "test"  # a dataset folder's split the rows come from
    table: Any = None  # a dataset folder's rotations split as read (a datasets.Dataset)

    def fingerprint(self) -> str:
        """A short hash of the turned items (id, viewpoint, situation, answers): what binds a
        review folder and ``check-rotations``' outputs to the set they judged."""
        items = sorted((str(r["question_id"]), int(r["rotation_deg"]), r["situation"],
                        sorted(r["answers"])) for r in self.rows if int(r["rotation_deg"]))
        return hashlib.sha256(json.dumps(items).encode()).hexdigest()[:16]

    def groups(self) -> dict[Any, dict[int, dict[str, Any]]]:
        out: dict[Any, dict[int, dict[str, Any]]] = {}
        for r in self.rows:
            out.setdefault(r["question_id"], {})[int(r["rotation_deg"])] = r
        return out


def _folder_rows(src: DatasetFolder, split: str | None
                 ) -> tuple[list[dict[str, Any]], str, Any]:
    """The rows, the split and the whole split as read (a Dataset, read once)."""
    if "rotations" not in src.configs():
        raise FileNotFoundError(f"{src.path}: the card lists configs {src.configs()}, no "
                                "`rotations`; build it with hf-real3d build-real3dqa, "
                                "import-real3dqa or rotate first")
    table, split = src.table("rotations", split)
    keep = [c for c in (*_ROW_KEYS, *_OPTIONAL_KEYS) if c in table.column_names]
    return table.select_columns(keep).to_list(), split, table


def read_rotation_set(dataset: str | os.PathLike,
                      scenes: str | os.PathLike | None = None,
                      split: str | None = None) -> RotationSet:
    """A rotation set from ``dataset``: a release folder (``rotation_0.json`` + the de-biased
    file), a folder of ``rotation_{k}.json`` files, or a dataset folder with a ``rotations``
    config (its ``split``; by default ``test``, or the one split it has, as ``rotate --split
    train`` writes). ``scenes``: a folder of ScanNet-format scenes; without it a dataset
    folder's ``scenes`` config gives the geometry when it has one."""
    src = resolve(dataset, Release, RotationFiles, DatasetFolder, what="a rotation set")
    path = src.path
    if isinstance(src, DatasetFolder):
        rows, split, table = _folder_rows(src, split)
        rs = RotationSet("folder", path, rows, files={}, split=split, table=table)
        if scenes is None:
            rs.scenes = scene_getter(src)
            rs.scenes_from = "the folder's scenes config" if rs.scenes else ""
    else:
        if isinstance(src, Release):
            rows, source = read_release(path).rotations, "release"
        else:
            rows, source = read_rotation_files(path)[0], "files"
        files = {int(r["rotation_deg"]): f"rotation_{int(r['rotation_deg'])}.json"
                 for r in rows}
        rs = RotationSet(source, path, rows, files=files)
    if scenes is not None:
        rs.scenes = scene_getter(scenes=scenes)
        rs.scenes_from = str(scenes)
    if not any(int(r["rotation_deg"]) == 0 for r in rs.rows):
        raise FormatError(f"{path}: no row at viewpoint 0: a rotation set needs each "
                          "question's unturned viewpoint to check the others against")
    return rs
