"""The reference table ``hf-real3d evaluate`` scores against: one row per question and
viewpoint, from one of

* the official release folder (``rotation_{0,90,180,270}.json`` + the de-biased set),
  parsed once and cached;
* a dataset folder built by ``hf-real3d build-real3dqa`` (parquet configs);
* an SQA3D folder (``v1_balanced_*_test_scannetv2.json``; rotation 0 only);

and its subsets: what iterative bias pruning kept, or the rotation groups
``hf-real3d check-rotations`` finds sound (``exclude_flagged``, ``exclude_needs_scene``).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from hf_real3d._io import atomic_path, cache_root, read_json, write_json
from hf_real3d.real3dqa.format import (
    CORRECTED_MARK,
    DEBIASED_FILE,
    RELEASE_HEADERS_FILE,
    RELEASE_VIEWPOINTS,
    read_release,
    release_headers,
)
from hf_real3d.sources import DatasetFolder, Release, RotationFiles, SQA3DFolder, resolve
from hf_real3d.sqa3d import read_split

logger = logging.getLogger(__name__)

__all__ = ["load_references", "reference_cache_dir", "load_folder_references",
           "ReferenceColumns", "reference_columns", "repaired_items"]


def load_folder_references(folder: str | os.PathLike, *, pruned: bool = False) -> pd.DataFrame:
    """Reference table from a built dataset folder: the
    ``sqa3d`` config (all questions, rotation 0) when present, else ``real3dqa``, plus the
    ``rotations`` config; ``in_debiased`` marks the questions ``real3dqa`` kept. ``pruned``:
    ``real3dqa_tst`` and ``rotations_tst`` (what ``hf-real3d stress-test --prune`` kept) in
    place of ``real3dqa`` and ``rotations``."""
    folder = Path(folder)
    tst = "_tst" if pruned else ""
    configs = resolve(folder, DatasetFolder, what="a dataset folder").configs()
    if pruned and "real3dqa_tst" not in configs:
        raise FileNotFoundError(f"{folder}: no real3dqa_tst config; write it with hf-real3d "
                                f"stress-test `dataset` {folder} `out` DIR `prune`")

    # the datasets library (through hub) only for built folders: scoring against a release
    # folder does not pay for importing it
    from hf_real3d.hub import load_frame

    def load(config: str) -> pd.DataFrame | None:
        return load_frame(folder, config) if config in configs else None

    kept, base, rot = load(f"real3dqa{tst}"), load("sqa3d"), load(f"rotations{tst}")
    base = base if base is not None else kept
    if base is None and rot is None:
        raise FileNotFoundError(f"{folder}: no sqa3d/, real3dqa/ or rotations/ config to score "
                                "against")
    frames = []
    if rot is not None:
        frames.append(rot.assign(in_rotation=True))
    if base is not None:
        base = base.assign(in_rotation=False, rotation_deg=0)
        if rot is not None:
            have = set(zip(rot.question_id, rot.rotation_deg))
            base = base[[(q, 0) not in have for q in base.question_id]]
        frames.append(base)
    df = pd.concat(frames, ignore_index=True)
    df["in_debiased"] = df.question_id.isin(set() if kept is None else set(kept.question_id))
    df["answers"] = [list(a) for a in df.answers]
    return df[["question_id", "rotation_deg", "answers", "question_type", "in_debiased",
               "in_rotation"]]


REF_COLUMNS = ["question_id", "rotation_deg", "answers", "question_type", "in_debiased",
               "in_rotation"]
_CACHE_FORMAT = 2  # bump when the reference table or the release reader changes


@dataclass
class ReferenceColumns:
    """A reference table as columns, answers and question types dictionary-encoded (what
    scoring works on; :meth:`to_frame` gives the :data:`REF_COLUMNS` DataFrame)."""

    question_id: np.ndarray  # int64, or object for ids that are not whole numbers
    rotation_deg: np.ndarray  # int64
    answer_code: np.ndarray  # row -> answer_vocab index
    answer_vocab: list[list[str]]  # distinct answer lists
    type_code: np.ndarray  # row -> type_vocab index (-1: none)
    type_vocab: list[str]
    in_debiased: np.ndarray
    in_rotation: np.ndarray
    report: dict[str, Any] | None = None
    # a subset of a fuller set (iterative bias pruning's configs, or the rotation groups the
    # checker passes): predictions of what it left out are dropped with a note, not refused
    subset: bool = False
    left_out_what: str = "questions that bias pruning removed"

    def __len__(self) -> int:
        return len(self.question_id)

    def question_types(self) -> np.ndarray:
        return np.asarray([*self.type_vocab, ""], dtype=object)[self.type_code]

    def to_frame(self) -> pd.DataFrame:
        df = pd.DataFrame({
            "question_id": self.question_id, "rotation_deg": self.rotation_deg,
            "answers": [list(self.answer_vocab[c]) for c in self.answer_code.tolist()],
            "question_type": self.question_types().tolist(),
            "in_debiased": self.in_debiased, "in_rotation": self.in_rotation})
        if self.report is not None:
            df.attrs["report"] = self.report
        return df

    @classmethod
    def from_frame(cls, df: pd.DataFrame) -> ReferenceColumns:
        missing = [c for c in REF_COLUMNS if c not in df.columns]
        if missing:
            raise ValueError(f"reference table lacks column(s) {missing}; expected {REF_COLUMNS} "
                             "(as load_references returns)")
        keys = [(a,) if isinstance(a, str) else tuple(a) for a in df.answers.tolist()]
        codes, vocab = pd.factorize(pd.Series(keys, dtype=object))
        tcodes, tvocab = pd.factorize(df.question_type.astype(object).fillna("").to_numpy())
        qid = df.question_id.to_numpy()
        return cls(qid if qid.dtype.kind in "iu" else np.asarray(qid, dtype=object),
                   df.rotation_deg.to_numpy().astype(np.int64),
                   codes.astype(np.int64), [list(v) for v in vocab],
                   tcodes.astype(np.int64), [str(t) for t in tvocab],
                   df.in_debiased.to_numpy(bool), df.in_rotation.to_numpy(bool),
                   df.attrs.get("report"))

    # the cache: arrays in one .npz, vocabularies and report in a .json beside it
    _ARRAYS = ("question_id", "rotation_deg", "answer_code", "type_code", "in_debiased",
               "in_rotation")

    def save(self, table: Path, meta: Path) -> None:
        write_json(meta, {"answer_vocab": self.answer_vocab, "type_vocab": self.type_vocab,
                          "report": self.report})
        with atomic_path(table) as tmp:  # the table last: its presence means both are whole
            with open(tmp, "wb") as f:
                np.savez(f, **{k: getattr(self, k) for k in self._ARRAYS})

    @classmethod
    def load(cls, table: Path, meta: Path) -> ReferenceColumns:
        m = json.loads(meta.read_text())
        with np.load(table, allow_pickle=False) as z:
            arrays = {k: z[k] for k in cls._ARRAYS}
        return cls(**arrays, answer_vocab=m["answer_vocab"], type_vocab=m["type_vocab"],
                   report=m["report"])


def reference_cache_dir() -> Path:
    """Where parsed release references are kept: :func:`hf_real3d._io.cache_root`
    (``$HF_REAL3D_CACHE``, else ``$HF_HOME/hf_real3d``)."""
    return cache_root()


def _release_key(src: Path) -> str:
    """Fingerprint of the five release files: resolved path, size and modification and
    change times (as ``make`` and ``ccache`` do), plus the cache format; any edit, copy or
    replacement of a file gives another key."""
    parts = [_CACHE_FORMAT]
    for name in [DEBIASED_FILE, *(f"rotation_{k}.json" for k in RELEASE_VIEWPOINTS)]:
        st = (src / name).stat()
        parts.append([str((src / name).resolve()), st.st_size, st.st_mtime_ns, st.st_ctime_ns])
    return hashlib.sha256(json.dumps(parts).encode()).hexdigest()[:24]


def _release_references(src: Path, cache: bool) -> ReferenceColumns:
    key = _release_key(src)
    table = reference_cache_dir() / f"real3dqa-references-{key}.npz"
    meta = table.with_suffix(".json")
    if cache and table.is_file() and meta.is_file():
        try:
            return ReferenceColumns.load(table, meta)
        except (OSError, ValueError, KeyError, TypeError) as err:  # unreadable: rebuild it
            logger.warning("ignoring unreadable reference cache %s (%s)", table, err)
    data = read_release(src)
    rot = pd.DataFrame(data.rotations)
    rot["in_rotation"] = True
    deb = pd.DataFrame(data.debiased)
    deb["rotation_deg"] = 0
    deb["in_debiased"] = True
    deb["in_rotation"] = False
    merged = pd.concat([rot, deb[~deb.question_id.isin(rot.question_id)]], ignore_index=True)
    merged["in_debiased"] = merged.question_id.isin(set(deb.question_id))
    df = merged[REF_COLUMNS].reset_index(drop=True)
    df["rotation_deg"] = df.rotation_deg.astype(np.int64)
    df.attrs["report"] = data.report
    refs = ReferenceColumns.from_frame(df)
    if cache:
        try:
            refs.save(table, meta)
        except OSError as err:  # a read-only cache is not an error: the next run re-reads
            logger.warning("could not cache the parsed references in %s (%s)", table.parent,
                           err)
    return refs


def reference_columns(source: str | os.PathLike, split: str = "test", *,
                      cache: bool = True, pruned: bool = False,
                      exclude_flagged: bool = False,
                      exclude_needs_scene: bool = False) -> ReferenceColumns:
    """:func:`load_references` as :class:`ReferenceColumns` (what scoring uses); ``pruned``
    (a built folder): the configs iterative bias pruning kept; ``exclude_flagged``: without
    the turned viewpoints of the rotation groups ``hf-real3d check-rotations`` flags (a
    folder's ``rotation_checks`` config; a release folder is checked here, by the text
    rules)."""
    src = Path(source)
    kind = resolve(src, Release, DatasetFolder, SQA3DFolder, what="the references")
    if pruned:
        refs = ReferenceColumns.from_frame(load_folder_references(src, pruned=True))
        refs.subset = True
    elif isinstance(kind, Release):
        refs = _release_references(src, cache)
    elif isinstance(kind, DatasetFolder):
        refs = ReferenceColumns.from_frame(load_folder_references(src))
    else:
        recs = read_split(src, kind.check_split(split))
        refs = ReferenceColumns.from_frame(pd.DataFrame({
            "question_id": [r.question_id for r in recs], "rotation_deg": 0,
            "answers": [r.answers for r in recs],
            "question_type": [r.qtype for r in recs],
            "in_debiased": False, "in_rotation": False,
        }))
    if exclude_flagged or exclude_needs_scene:
        return _without_flagged(refs, src, needs_scene=exclude_needs_scene)
    return refs


def _group_verdicts(src: Path) -> dict[str, set[Any]]:
    """The group ids with a ``defect`` item and those with a ``needs_scene`` item, as
    ``hf-real3d check-rotations`` judges ``src`` (a release: here, by the text rules, with the
    questions at each pose when SQA3D's files lie beside it, as the command reads them; a
    dataset folder: its ``rotation_checks`` config, which must have judged its rotations)."""
    # the checker only when groups are left out by its verdicts
    from hf_real3d.real3dqa.checker.folder import read_checks_config
    from hf_real3d.real3dqa.checker.outputs import flagged_groups
    from hf_real3d.real3dqa.checker.run import check_with_evidence
    from hf_real3d.real3dqa.rotation_set import read_rotation_set

    rs = read_rotation_set(src)
    if rs.source == "release":  # the text rules (and the questions at each pose), on the fly
        res = check_with_evidence(rs)
        return {v: res.ids_with(v) for v in ("defect", "needs_scene")}
    rows = read_checks_config(rs)
    return {v: flagged_groups(rows, (v,)) for v in ("defect", "needs_scene")}


def _without_flagged(refs: ReferenceColumns, src: Path,
                     needs_scene: bool = False) -> ReferenceColumns:
    """``refs`` without the turned viewpoints of the rotation groups with a ``defect`` item
    (and, with ``needs_scene``, a ``needs_scene`` item); their 0-degree rows stay for EM but
    leave the rotation groups."""
    if not refs.in_rotation.any():
        raise ValueError(f"{src}: no rotation groups, so none to leave out (excluding flagged "
                         "groups needs a rotation set)")
    verdicts = _group_verdicts(src)
    left_out = verdicts["defect"] | (verdicts["needs_scene"] if needs_scene else set())
    flagged = np.isin(refs.question_id, np.asarray(sorted(left_out),
                                                   dtype=refs.question_id.dtype))
    keep = ~(flagged & (refs.rotation_deg != 0))
    in_groups = pd.unique(refs.question_id[refs.in_rotation])
    groups = len(in_groups)
    gone = len(pd.unique(refs.question_id[refs.in_rotation & flagged]))
    report = dict(refs.report or {})
    defect = set(verdicts["defect"]) & set(in_groups.tolist())
    unsure = (set(verdicts["needs_scene"]) & set(in_groups.tolist())) - defect
    report["excluded_flagged"] = {
        "groups": gone, "of": groups, "needs_scene_too": needs_scene,
        "rests_on": {"all": groups, "no defect": groups - len(defect),
                     "no defect or needs_scene": groups - len(defect) - len(unsure)}}
    out = ReferenceColumns(
        refs.question_id[keep], refs.rotation_deg[keep], refs.answer_code[keep],
        refs.answer_vocab, refs.type_code[keep], refs.type_vocab, refs.in_debiased[keep],
        refs.in_rotation[keep] & ~flagged[keep], report, subset=True,
        left_out_what="rotation groups in which check-rotations finds a defect"
        + (" or needs the scene" if needs_scene else "") + " (their turned viewpoints)")
    return out


def load_references(source: str | os.PathLike, split: str = "test", *,
                    cache: bool = True) -> pd.DataFrame:
    """A reference table: question_id, rotation_deg, answers, question_type, in_debiased,
    in_rotation (one row per question and viewpoint).

    A release folder is parsed and validated once; the table is then kept under
    :func:`reference_cache_dir`, keyed by each file's path, size and times, so later
    evaluations against the same files skip the JSON (``cache=False`` always re-reads)."""
    return reference_columns(source, split, cache=cache).to_frame()


def corrected_from(src: Path) -> dict[str, Any] | None:
    """What ``hf-real3d correct-rotations`` says of the corrected set at ``src`` (a release
    folder it wrote, or that folder imported: the files' headers carry it), or None."""
    kind = resolve(src, what="the references")
    if isinstance(kind, Release | RotationFiles):
        heads = release_headers(src)
    elif isinstance(kind, DatasetFolder) and (src / RELEASE_HEADERS_FILE).is_file():
        heads = read_json(src / RELEASE_HEADERS_FILE)
    else:
        return None
    info = (heads.get("rotation_0.json") or {}).get("info") if isinstance(heads, dict) else None
    said = info.get(CORRECTED_MARK) if isinstance(info, dict) else None
    return said if isinstance(said, dict) else None


def repaired_items(src: Path) -> int:
    """How many rotated items of the references carry repairs no one reviewed (an
    ``export-rotations --repairs all`` release, or a dataset folder imported from one)."""
    kind = resolve(src, what="the references")
    if isinstance(kind, Release | RotationFiles):
        path = src / "review.json"
        if not path.is_file():
            return 0
        try:
            return int(json.loads(path.read_text(encoding="utf-8")).get("repaired", 0))
        except (ValueError, AttributeError, TypeError):
            return 0
    if isinstance(kind, DatasetFolder) and "rotations" in kind.configs():
        from hf_real3d.hub import load_frame  # datasets only for a built folder

        df = load_frame(src, "rotations", columns=("source",))
        return int((df["source"] == "repaired").sum()) if "source" in df else 0
    return 0
