"""The one reader of inputs: what kind of input a path is, its questions, and the one scene
getter.

Every command and module that takes a user's path asks :func:`resolve` what it is, instead
of looking into the folder itself (a folder that is two kinds at once, release files beside a
saved dataset say, is an error naming both; a link that loops is named as one):

* :class:`Release`: the official Real-3DQA release (``rotation_0.json`` and the de-biased
  file ``de-biased_testset_with_question_type.json``);
* :class:`RotationFiles`: a folder of ``rotation_{k}.json`` files in the release's format,
  without the de-biased file (what ``export-rotations`` writes, or a lab's own set);
* :class:`DatasetFolder`: a dataset folder this library built or imported (a ``README.md``
  card whose YAML lists configs of parquet files), or a ``datasets.save_to_disk`` folder;
* :class:`SQA3DFolder`: SQA3D's ``v1_balanced_questions_{split}_scannetv2.json`` with its
  annotations file;
* :class:`ScanQAFile`: a ScanQA JSON file (or a folder holding exactly one);
* :class:`SRBenchTSV`: a 3DSRBench TSV in VLMEvalKit's format.

:func:`read_questions` is the one way to the questions (SQA3D records) of any of them that
holds some, and :data:`QUESTION_CONFIGS` the one list of a dataset folder's configs that hold
them. :func:`scene_getter` is the one way to the scenes: a folder of ScanNet-format scenes, or a
dataset folder's ``scenes`` config; :class:`SceneRows` reads a ``scenes`` config already
loaded (the rooms by id, each read once).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hf_real3d._io import check_link
from hf_real3d.errors import FormatError, InputError

if TYPE_CHECKING:  # for annotations only
    from hf_real3d.scene import Scene
    from hf_real3d.sqa3d import SQA3DRecord

__all__ = ["DEBIASED_FILE", "QUESTION_CONFIGS", "DatasetFolder", "Release", "RotationFiles",
           "SQA3DFolder", "SRBenchTSV", "ScanQAFile", "SceneRows", "Source", "read_questions",
           "resolve", "scene_getter"]

DEBIASED_FILE = "de-biased_testset_with_question_type.json"
#: the configs of a dataset folder that hold its questions, in the order they are looked for:
#: the kept (de-biased) set before the set it was filtered from; 3DSRBench's last
QUESTION_CONFIGS = ("real3dqa", "real_scanqa", "sqa3d", "scanqa", "real", "synthetic_common")
_KINDS_TEXT = {
    "Release": "the Real-3DQA release folder (rotation_0.json and the de-biased file)",
    "RotationFiles": "a folder of rotation_{k}.json files",
    "DatasetFolder": "a dataset folder this library built or imported (README.md card)",
    "SQA3DFolder": "an SQA3D folder (v1_balanced_questions_<split>_scannetv2.json)",
    "ScanQAFile": "a ScanQA JSON file (or a folder holding exactly one .json)",
    "SRBenchTSV": "a 3DSRBench .tsv",
}


@dataclass(frozen=True)
class Source:
    """A user's input, once its kind is known."""

    path: Path

    @property
    def kind(self) -> str:
        return type(self).__name__


@dataclass(frozen=True)
class Release(Source):
    """The official Real-3DQA release folder."""


@dataclass(frozen=True)
class RotationFiles(Source):
    """A folder of ``rotation_{k}.json`` files in the release's format."""


@dataclass(frozen=True)
class DatasetFolder(Source):
    """A dataset folder: a card listing parquet configs, or a ``save_to_disk`` folder
    (``saved``)."""

    saved: bool = False

    def configs(self) -> list[str]:
        """The configs the card lists (none for a saved dataset)."""
        if self.saved:
            return []
        # the card reader (hub, which brings datasets) only for a dataset folder
        from hf_real3d.hub import card_configs

        return card_configs(self.path)

    def pick_split(self, config: str, split: str | None = None) -> str:
        """``split`` of ``config`` (an error naming the splits the card lists when it lacks
        it); by default ``test``, or the config's one split."""
        # likewise
        from hf_real3d.hub import card_splits

        splits = card_splits(self.path, config)
        if split is None and len(splits) == 1:
            return splits[0]
        if splits and (split or "test") not in splits:
            raise InputError(f"{self.path}: its {config} config has splits {splits}, not "
                             f"{split or 'test'!r}" + ("" if split else "; name the split"))
        return split or "test"

    def table(self, config: str, split: str | None = None) -> tuple[Any, str]:
        """``config``'s split (:meth:`pick_split`) as a ``datasets.Dataset``, and the split."""
        # the dataset folder's rows (hub, datasets) only when they are read
        from hf_real3d.hub import load_local

        split = self.pick_split(config, split)
        return load_local(self.path, config, split), split

    def rows(self, config: str, split: str | None = None, columns: Sequence[str] | None = None
             ) -> tuple[list[dict[str, Any]], str]:
        """The rows of ``config``'s split (:meth:`pick_split`) as plain Python values, and
        the split read; ``columns``: only those of them the config has."""
        ds, split = self.table(config, split)
        if columns is not None:
            ds = ds.select_columns([c for c in columns if c in ds.column_names])
        return ds.to_list(), split

    def question_config(self, *, before_filtering: bool = False,
                        situated: bool = False) -> str | None:
        """The config that holds the folder's questions: the first of
        :data:`QUESTION_CONFIGS` the card lists (``before_filtering``: the set a filter
        reads, sqa3d or scanqa, first; ``situated``: real3dqa or sqa3d alone), or None."""
        order = [c for c in QUESTION_CONFIGS if not situated or c in ("real3dqa", "sqa3d")]
        if before_filtering:
            order.sort(key=lambda c: c not in ("sqa3d", "scanqa"))
        return next((c for c in order if c in self.configs()), None)


@dataclass(frozen=True)
class SQA3DFolder(Source):
    """SQA3D's questions and annotations files, one pair per split."""

    def splits(self) -> list[str]:
        return sorted(p.name.removeprefix("v1_balanced_questions_").removesuffix(
            "_scannetv2.json") for p in self.path.glob("v1_balanced_questions_*_scannetv2.json"))

    def check_split(self, split: str) -> str:
        """``split``, or an error naming the splits the folder has."""
        if split not in self.splits():
            raise InputError(f"{self.path}: no SQA3D split {split!r} "
                             f"(v1_balanced_questions_{split}_scannetv2.json); it has "
                             f"{self.splits()}")
        return split


@dataclass(frozen=True)
class ScanQAFile(Source):
    """A ScanQA JSON file."""


@dataclass(frozen=True)
class SRBenchTSV(Source):
    """A 3DSRBench TSV in VLMEvalKit's format."""


def _folder_kinds(path: Path) -> list[Source]:
    """Every kind a folder's files say it is (more than one: an ambiguous folder)."""
    for p in [*path.glob("rotation_*.json"), path / DEBIASED_FILE]:
        check_link(p)  # a link that loops or leads nowhere is named, not called missing
    kinds: list[Source] = []
    if (path / "rotation_0.json").is_file():
        kinds.append(Release(path) if (path / DEBIASED_FILE).is_file() else RotationFiles(path))
    if (path / "README.md").is_file() and any(path.rglob("*.parquet")):
        kinds.append(DatasetFolder(path))
    elif (path / "state.json").is_file() or (path / "dataset_dict.json").is_file():
        kinds.append(DatasetFolder(path, saved=True))
    if any(path.glob("v1_balanced_questions_*_scannetv2.json")):
        kinds.append(SQA3DFolder(path))
    return kinds


def _classify(path: Path) -> Source | None:
    if path.is_file():
        if path.suffix == ".tsv":
            return SRBenchTSV(path)
        if path.suffix == ".json" and path.name.startswith("rotation_"):
            return None  # one file of a rotation set: the folder is the input
        if path.suffix == ".json":
            return ScanQAFile(path)
        return None
    if not path.is_dir():
        check_link(path)
        return None
    kinds = _folder_kinds(path)
    if len(kinds) > 1:
        what = " and ".join("a saved dataset (dataset_dict.json or state.json)"
                            if getattr(k, "saved", False) else _KINDS_TEXT[k.kind]
                            for k in kinds)
        raise InputError(f"{path}: ambiguous, it holds both {what}; move one of them into a "
                         "folder of its own and give that")
    if kinds:
        return kinds[0]
    jsons = sorted(path.glob("*.json"))
    if len(jsons) == 1 and not jsons[0].name.startswith("rotation_"):
        return ScanQAFile(jsons[0])
    return None


def resolve(path: str | os.PathLike, *kinds: type[Source], what: str = "input") -> Source:
    """What ``path`` is: one of :class:`Source`'s kinds. ``kinds``: the kinds the caller
    reads; another kind, or none, is an error naming what the path is and what is expected
    (``what`` names the input, e.g. "a rotation set")."""
    p = Path(path)
    found = _classify(p)
    want = " or ".join(_KINDS_TEXT[k.__name__] for k in kinds) if kinds else \
        ", ".join(_KINDS_TEXT.values())
    if found is None:
        if not p.exists():
            raise FileNotFoundError(f"{p}: no such file or folder; {what} is {want}")
        if p.is_file() and p.name.startswith("rotation_") and p.suffix == ".json":
            raise InputError(f"{p}: one file of a rotation set; give its folder ({want})")
        raise InputError(f"{p}: a {'file' if p.is_file() else 'folder'} this library cannot "
                         f"read as {what}; {what} is {want}")
    if kinds and not isinstance(found, kinds):
        raise InputError(f"{p}: {_KINDS_TEXT[found.kind]}, but {what} is {want}")
    return found


def scene_getter(source: str | os.PathLike | Source | None = None, *,
                 scenes: str | os.PathLike | None = None, split: str | None = None
                 ) -> Callable[[str], Scene] | None:
    """The scenes of an input: ``scenes``, a folder of ScanNet-format scenes, when given;
    else a dataset folder's ``scenes`` config (its ``split``: by default ``test``, or its one
    split); else None (no geometry). The getter reads a scene by id, once, and raises
    ``KeyError`` naming the folder for an id it lacks."""
    if scenes is not None:
        root = Path(scenes)
        if not root.is_dir():
            raise FileNotFoundError(f"{root}: no such folder of ScanNet-format scenes")
        # the scene reader only when scenes are read
        from hf_real3d.scene import read_scannet, scannet_paths

        def from_scannet(scene_id: str) -> Scene:
            if not scannet_paths(root, scene_id)["ply"].is_file():
                raise KeyError(f"{root}: scene {scene_id!r} is referenced but absent; give "
                               "the folder that holds it")
            return read_scannet(root, scene_id)

        return from_scannet
    if source is None:
        return None
    src = source if isinstance(source, Source) else _classify(Path(source))
    if not isinstance(src, DatasetFolder) or "scenes" not in src.configs():
        return None
    # the dataset folder's rows (hub, datasets) only for a folder with scenes
    from hf_real3d.hub import load_local

    return SceneRows(load_local(src.path, "scenes", src.pick_split("scenes", split)),
                     where=str(src.path)).__getitem__


class SceneRows(Mapping[str, "Scene"]):
    """The rooms of a ``scenes`` config's rows (a ``datasets.Dataset``, a Hub id's included) by
    ``scene_id``, each read once, when first asked for; an id the rows lack raises
    ``KeyError`` naming ``where``."""

    def __init__(self, rows: Any, where: str = "the scenes config"):
        self.rows = rows
        self.where = where
        self._index = {sid: i for i, sid in enumerate(rows["scene_id"])}
        self._read: dict[str, Scene] = {}

    def __getitem__(self, scene_id: str) -> Scene:
        if scene_id not in self._index:
            raise KeyError(f"{self.where}: scene {scene_id!r} is not in the scenes config")
        if scene_id not in self._read:
            # the row reader (datasets' features) only when a scene is read
            from hf_real3d.schema import scene_from_row

            self._read[scene_id] = scene_from_row(self.rows[self._index[scene_id]])
        return self._read[scene_id]

    def __iter__(self) -> Iterator[str]:
        return iter(self._index)

    def __len__(self) -> int:
        return len(self._index)


def read_questions(src: Source, split: str = "test", *, before_filtering: bool = False,
                   situated: bool = False, validate_poses: bool = True) -> list[SQA3DRecord]:
    """The questions of ``src`` as SQA3D records: an SQA3D folder's ``split``; a dataset
    folder's (its :meth:`DatasetFolder.question_config`, whose questions take the
    ``semantics`` its rotations or sqa3d config records for them when they lack them, so
    geometry rotates what it rotated when the folder was built); a ScanQA file's (no situation,
    no pose, ScanQA's string ids). Another kind of source has none (an error)."""
    # each reader imported for its kind of input (datasets only for a dataset folder)
    from hf_real3d.sqa3d import SQA3DRecord, read_split

    if isinstance(src, SQA3DFolder):
        return read_split(src.path, src.check_split(split), validate_poses=validate_poses)
    if isinstance(src, ScanQAFile):
        # likewise
        from hf_real3d.scanqa import read_scanqa

        rows = read_scanqa(src.path).to_dict("records")
    elif isinstance(src, DatasetFolder):
        rows = _question_rows(src, split, before_filtering, situated)
    else:
        raise InputError(f"{src.path}: {_KINDS_TEXT[src.kind]} holds no questions to read")
    if rows and "position" not in rows[0]:  # ScanQA's: no situation, no pose
        return [SQA3DRecord(r["question_id"], r["scene_id"], r.get("situation") or "",
                            r["question"], list(r.get("answers") or []), {}, {}) for r in rows]
    # likewise
    from hf_real3d.schema import record_from_row

    return [record_from_row(r) for r in rows]


def _question_rows(src: DatasetFolder, split: str, before_filtering: bool,
                   situated: bool) -> list[dict[str, Any]]:
    """The rows of the folder's questions; without semantics, those its rotations (at 0
    degrees) or sqa3d config records for them."""
    config = src.question_config(before_filtering=before_filtering, situated=situated)
    if config is None:
        names = [c for c in QUESTION_CONFIGS if not situated or c in ("real3dqa", "sqa3d")]
        raise FormatError(f"{src.path}: its card lists configs {src.configs()}, none of "
                          f"{', '.join(names)}; build it with hf-real3d build-real3dqa or synth")
    rows, split = src.rows(config, split)
    if any(r.get("semantics") for r in rows) or "position" not in (rows or [{}])[0]:
        return rows
    known: dict[int, str] = {}
    for other in ("rotations", "sqa3d"):
        if other != config and other in src.configs():
            for r in src.rows(other, split, ("question_id", "rotation_deg", "semantics"))[0]:
                if r.get("semantics") and not r.get("rotation_deg"):
                    known.setdefault(int(r["question_id"]), r["semantics"])
    return [dict(r, semantics=known.get(int(r["question_id"]), "")) for r in rows]
