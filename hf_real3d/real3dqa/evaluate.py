"""Score prediction files against Real-3DQA-style references (``hf-real3d evaluate``).

References come from one of:

* the official release folder (``rotation_{0,90,180,270}.json`` + the de-biased set),
* a dataset folder built by ``hf-real3d build-real3dqa`` (parquet configs),
* an SQA3D folder (``v1_balanced_*_test_scannetv2.json``; rotation 0 only).

Predictions are JSONL/JSON rows with ``question_id``, ``prediction`` and optionally
``rotation`` / ``rotation_deg`` (degrees, default 0), or the official Real-3DQA format
(a JSON list with ``question_id``, ``response_pred``, ``response_gt``; the viewpoint is
read from the file name, ``..._90.json`` / ``rot90`` / ``rotation_90``, or from a
``01``/``02``/``03`` id suffix).
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

from hf_real3d._io import atomic_path, cache_root, write_json
from hf_real3d.real3dqa.format import (
    DEBIASED_FILE,
    RELEASE_VIEWPOINTS,
    SUFFIX_DEG,
    read_release,
    suffixed_ids,
)
from hf_real3d.real3dqa.predictions import PredictionColumns, read_model_prediction_columns
from hf_real3d.real3dqa.report import results_table, write_report
from hf_real3d.scoring import (
    MetricInputError,
    answer_correctness,
    bootstrap_ci,
    degenerate_counts,
    first_rows,
    vrs,
)
from hf_real3d.sources import DatasetFolder, Release, RotationFiles, SQA3DFolder, resolve
from hf_real3d.specs import check_unique_names
from hf_real3d.sqa3d import read_split

logger = logging.getLogger(__name__)

__all__ = ["load_references", "reference_cache_dir", "load_folder_references",
           "score_predictions", "ModelScores", "EvaluationReport", "evaluate_files",
           "ReferenceColumns", "reference_columns"]


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
    ``hf-real3d check-rotations`` decides them for ``src`` (with the questions at each pose
    when SQA3D's files lie beside it, as the command reads them)."""
    # the checker only when groups are left out by its verdicts
    from hf_real3d.real3dqa.check_rotations import (
        CHECKS_CONFIG,
        check_set,
        flagged_groups,
        pose_questions_for,
    )

    # ... and the rotation set it reads
    from hf_real3d.real3dqa.rotation_set import read_rotation_set

    kind = resolve(src, Release, DatasetFolder, what="the references")
    if isinstance(kind, Release):  # the text rules, on the fly (about a second)
        res = check_set(read_rotation_set(src), at_pose=pose_questions_for(src)[0])
        return {v: res.ids_with(v) for v in ("defect", "needs_scene")}
    from hf_real3d.hub import load_local  # datasets only for a built folder

    if CHECKS_CONFIG not in kind.configs():
        raise FileNotFoundError(f"{src}: no {CHECKS_CONFIG} config to leave groups out by; "
                                f"write it with hf-real3d check-rotations `dataset` {src} "
                                "`out` DIR")
    ds = load_local(src, CHECKS_CONFIG)
    if "verdict" not in ds.column_names:
        raise FileNotFoundError(f"{src}: its {CHECKS_CONFIG} config predates the verdicts "
                                f"(no verdict column); write it again with hf-real3d "
                                f"check-rotations `dataset` {src} `out` DIR")
    rows = ds.select_columns(["question_id", "verdict"]).to_list()
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


def _answer_key(p: str | list) -> str:
    return p if isinstance(p, str) else "\x1f".join(p)


@dataclass
class _Aligned:
    rows: np.ndarray  # the prediction rows kept (repeats dropped), in file order
    ref: np.ndarray  # each kept row's reference row
    question_id: np.ndarray  # ids with the x100+suffix scheme resolved
    rotation_deg: np.ndarray
    repeats: int  # identical repeated predictions dropped
    left_out: int = 0  # predictions of questions a subset's references leave out


def _answer_codes(preds: PredictionColumns) -> tuple[np.ndarray, np.ndarray]:
    """Each row's distinct-answer code (a list of candidates keyed by its joined strings)
    and the first row holding each code."""
    texts = preds.prediction
    if not set(map(type, texts)) <= {str}:
        texts = [_answer_key(p) for p in texts]
    codes, uniq = pd.factorize(np.asarray(texts, dtype=object))
    return codes.astype(np.int64), first_rows(codes, len(uniq))


def _align(refs: ReferenceColumns, preds: PredictionColumns, answers: np.ndarray,
           name: str) -> _Aligned:
    """Each prediction row's reference row; ``answers``: the rows' answer codes."""
    qid, deg = preds.question_id, preds.rotation_deg
    if qid.dtype == object and all(isinstance(q, str) for q in qid[:50]):
        try:
            qid = qid.astype(np.int64)
        except (ValueError, OverflowError):
            pass
    ref_ids = refs.question_id
    # id x 100 + suffix scheme (the official rotated files): map back to the base id and
    # viewpoint, for ids that are not base ids themselves but id // 100 is one
    if qid.dtype.kind in "iu" and ref_ids.dtype.kind in "iu":
        sfx, head, tail = suffixed_ids(qid, pd.unique(ref_ids))
        sfx &= np.isin(tail, list(SUFFIX_DEG))
        if sfx.any():
            deg = deg.copy()
            deg[sfx] = [SUFFIX_DEG[t] for t in tail[sfx].tolist()]
            named = preds.name_degrees()
            if named is not None:  # the file's name and the id's suffix must agree
                clash = sfx & (named >= 0) & (named != deg)
                if clash.any():
                    i = int(np.argmax(clash))
                    raise MetricInputError(
                        f"{preds.file_of(i)}: the file name says {int(named[i])} degrees but "
                        f"question_id {preds.question_id[i]} carries the suffix "
                        f"{int(tail[i]):02d} ({int(deg[i])} degrees); rename the file or fix "
                        "its ids")
            qid = np.where(sfx, head, qid)
    # one integer key per (question_id, rotation_deg), shared by references and predictions
    nr = len(refs)
    both = np.concatenate([ref_ids, qid]) if ref_ids.dtype == qid.dtype else \
        np.concatenate([ref_ids.astype(object), qid.astype(object)])
    qcodes, quniq = pd.factorize(both)
    dcodes, duniq = pd.factorize(np.concatenate([refs.rotation_deg, deg]))
    keys = qcodes.astype(np.int64) * len(duniq) + dcodes
    ref_keys, pred_keys = keys[:nr], keys[nr:]
    # the official de-biased and rotation_0 files both answer the shared questions at 0
    # degrees: the same answer twice is one prediction; two different ones are an error
    pcodes, puniq = pd.factorize(pred_keys)
    first = first_rows(pcodes, len(puniq))
    repeat = np.ones(len(pcodes), dtype=bool)
    repeat[first] = False
    same = answers == answers[first[pcodes]]
    clash = repeat & ~same
    if clash.any():
        i = int(np.argmax(clash))
        raise MetricInputError(
            f"{name}: duplicate prediction for question_id {qid[i]} at rotation {deg[i]} "
            "with different answers; keep one row per (question_id, rotation_deg)")
    drop = repeat & same
    rows = np.flatnonzero(~drop)
    index = pd.Index(ref_keys)
    if not index.is_unique:
        raise MetricInputError("the reference table repeats a (question_id, rotation_deg) row; "
                               "build it again with load_references")
    ref = index.get_indexer(pred_keys[rows])
    unknown = ref < 0
    if unknown.any() and refs.subset:  # the questions the subset left out
        left_out = int(unknown.sum())
        rows, ref = rows[~unknown], ref[~unknown]
        return _Aligned(rows, ref.astype(np.int64), qid[rows], deg[rows], int(drop.sum()),
                        left_out)
    if unknown.any():
        i = int(rows[np.argmax(unknown)])
        raise MetricInputError(
            f"{name}: {int(unknown.sum())} prediction(s) match no reference, e.g. question_id "
            f"{qid[i]} at rotation {deg[i]}; check the ids and viewpoints")
    return _Aligned(rows, ref.astype(np.int64), qid[rows], deg[rows], int(drop.sum()))


def _correctness(refs: ReferenceColumns, preds: PredictionColumns, al: _Aligned,
                 answers: tuple[np.ndarray, np.ndarray],
                 leo_compatible: bool) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """(EM, refined EM) per aligned row, each distinct (prediction, answers) pair matched
    once; and the warnings of :func:`degenerate_counts`."""
    codes, first = answers[0][al.rows], answers[1]
    pair = codes * len(refs.answer_vocab) + refs.answer_code[al.ref]
    pcodes, puniq = pd.factorize(pair)
    pfirst = first_rows(pcodes, len(puniq))
    cand = [preds.prediction[i] for i in al.rows[pfirst].tolist()]
    ref_answers = [refs.answer_vocab[c] for c in refs.answer_code[al.ref[pfirst]].tolist()]
    em, ref = answer_correctness(cand, ref_answers, leo_compatible=leo_compatible)
    em, ref = em[pcodes], ref[pcodes]
    texts = [p if isinstance(p, str) else " ".join(p)
             for p in (preds.prediction[i] for i in first.tolist())]
    counts = np.bincount(codes, minlength=len(first))
    return em, ref, degenerate_counts(counts, texts, em, ref)


@dataclass
class ModelScores:
    """One model's scores: its name, its metrics and its rows aligned with the references (with
    ``em`` / ``em_refined``)."""
    name: str
    metrics: dict[str, Any]
    rows: pd.DataFrame  # aligned rows with em / em_refined columns


def _subset_scores(refs: ReferenceColumns, mask: np.ndarray, have: np.ndarray,
                   em: np.ndarray, em_r: np.ndarray, what: str, allow_missing: bool,
                   notices: list[str]) -> dict[str, Any] | None:
    """EM / refined EM over every reference row of a subset (``mask``); rows without a
    prediction are counted wrong when ``allow_missing``, else the figure is not computed (a
    notice says why)."""
    idx = np.flatnonzero(mask)
    if not len(idx):
        return None
    present = have[idx]
    n_missing = int((~present).sum())
    if n_missing and (not allow_missing or not present.any()):
        i = int(idx[np.argmin(present)])
        notices.append(f"{what} EM / refined EM not computed: predictions missing for "
                       f"{n_missing} of {len(idx)} rows, e.g. question_id "
                       f"{refs.question_id[i]} at rotation {refs.rotation_deg[i]}"
                       + ("" if present.any() and allow_missing else
                          " (pass --allow_missing, or allow_missing=True, to count missing "
                          "rows as wrong)"))
        return None
    if n_missing:
        notices.append(f"{what}: {n_missing} of {len(idx)} rows have no prediction and are "
                       "counted wrong")
    e, r = em[idx], em_r[idx]  # missing rows are False
    out = {"em": float(e.mean() * 100), "em_refined": float(r.mean() * 100),
           "n": len(idx), "missing": n_missing, "em_refined_ci": bootstrap_ci(r)}
    t = refs.type_code[idx]
    ok = t >= 0
    m = len(refs.type_vocab)
    n_t = np.bincount(t[ok], minlength=m)
    e_t = np.bincount(t[ok], weights=e[ok], minlength=m)
    r_t = np.bincount(t[ok], weights=r[ok], minlength=m)
    out["per_type"] = {name: {"em": float(e_t[c] / n_t[c] * 100),
                              "em_refined": float(r_t[c] / n_t[c] * 100), "n": int(n_t[c])}
                       for name, c in sorted((n, c) for c, n in enumerate(refs.type_vocab))
                       if name and n_t[c]}
    return out


def _score(refs: ReferenceColumns, preds: PredictionColumns, name: str, leo_compatible: bool,
           allow_missing: bool) -> tuple[dict[str, Any], _Aligned, np.ndarray, np.ndarray]:
    """The metrics of one model, and its aligned rows with their (EM, refined EM)."""
    answers = _answer_codes(preds)
    al = _align(refs, preds, answers[0], name)
    em, ref, warnings = _correctness(refs, preds, al, answers, leo_compatible)
    notices: list[str] = []
    if al.left_out:
        notices.append(f"{al.left_out} predictions of {refs.left_out_what} are left out")
    if al.repeats:
        notices.append(f"{al.repeats} repeated predictions (same question, "
                       "viewpoint and answer, e.g. in both the de-biased and rotation_0 files) "
                       "counted once")
    metrics: dict[str, Any] = {
        "model": name, "predictions": len(al.rows),
        "warnings": warnings,
        "notices": notices}
    # per reference row: its prediction's correctness (False where none)
    have = np.zeros(len(refs), dtype=bool)
    have[al.ref] = True
    em_ref = np.zeros(len(refs), dtype=bool)
    em_ref[al.ref] = em
    ok_ref = np.zeros(len(refs), dtype=bool)
    ok_ref[al.ref] = ref
    orig = refs.rotation_deg == 0
    for key, mask in (("original", orig), ("debiased", orig & refs.in_debiased)):
        if key == "debiased" and not refs.in_debiased.any():
            continue
        what = "original-view" if key == "original" else "de-biased"
        s = _subset_scores(refs, mask, have, em_ref, ok_ref, what, allow_missing, notices)
        if s:
            metrics[key] = s
    rot_rows = np.flatnonzero(refs.in_rotation)
    if len(rot_rows):
        n_pred_vps = len(np.unique(al.rotation_deg[refs.in_rotation[al.ref]]))
        if n_pred_vps < 2:
            notices.append("P_k and VRS not computed: the predictions cover "
                           f"{n_pred_vps} viewpoint(s) of the rotation groups (the references "
                           f"have {len(np.unique(refs.rotation_deg[rot_rows]))})")
        else:
            n_missing = int((~have[rot_rows]).sum())
            if n_missing and not allow_missing:
                notices.append(f"P_k and VRS not computed: predictions missing for {n_missing} "
                               f"of {len(rot_rows)} rotation rows (pass --allow_missing, or "
                               "allow_missing=True, to count "
                               "them wrong)")
            else:
                if n_missing:
                    notices.append(f"rotations: {n_missing} of {len(rot_rows)} rows have no "
                                   "prediction and are counted wrong")
                correct = ok_ref[rot_rows]
                gid, rdeg = refs.question_id[rot_rows], refs.rotation_deg[rot_rows]
                metrics["rotation"] = vrs(correct, gid, rdeg, incomplete="drop", ci=True)
                types = refs.type_code[rot_rows]
                per_type = {}
                for qt, c in sorted((n, c) for c, n in enumerate(refs.type_vocab)):
                    m = types == c
                    if not qt or not m.any():
                        continue
                    v = vrs(correct[m], gid[m], rdeg[m], incomplete="drop")
                    if not v["groups"]:
                        continue
                    n_vp = len(v["viewpoints"])
                    per_type[str(qt)] = {"vrs": v["vrs"], "p_at_least_1": v["p_at_least_1"],
                                         f"p_at_least_{n_vp}": v[f"p_at_least_{n_vp}"],
                                         "groups": v["groups"]}
                metrics["rotation"]["per_type"] = per_type
    if not any(k in metrics for k in ("original", "debiased", "rotation")):
        raise MetricInputError(f"{name}: no figure could be computed: " + "; ".join(notices))
    return metrics, al, em, ref


def score_predictions(
    refs: pd.DataFrame | ReferenceColumns,
    preds: pd.DataFrame | PredictionColumns,
    *,
    name: str | None = None,
    leo_compatible: bool = False,
    allow_missing: bool = False,
) -> ModelScores:
    """EM / EM_R on the whole reference set and its subsets, P_k and VRS on rotations.

    ``refs`` as :func:`load_references` (or :func:`reference_columns`) returns it; ``preds``
    as :func:`hf_real3d.real3dqa.predictions.load_predictions` (or ``read_prediction_columns``)."""
    if isinstance(refs, pd.DataFrame):
        refs = ReferenceColumns.from_frame(refs)
    if isinstance(preds, pd.DataFrame):
        preds = PredictionColumns.from_frame(preds)
    name = name or preds.name
    metrics, al, em, ref = _score(refs, preds, name, leo_compatible, allow_missing)
    rows = pd.DataFrame({
        "question_id": al.question_id, "rotation_deg": al.rotation_deg,
        "prediction": [preds.prediction[i] for i in al.rows.tolist()],
        "log_prob": [preds.log_prob[i] for i in al.rows.tolist()] if preds.log_prob is not None
        else [None] * len(al.rows),
        "answers": [list(refs.answer_vocab[c]) for c in refs.answer_code[al.ref].tolist()],
        "question_type": refs.question_types()[al.ref].tolist(),
        "in_debiased": refs.in_debiased[al.ref], "in_rotation": refs.in_rotation[al.ref],
        "em": em, "em_refined": ref})
    return ModelScores(name, metrics, rows)


@dataclass
class EvaluationReport:
    """What ``hf-real3d evaluate`` produced: one metrics dict per model, the Markdown summary table
    and the files written."""
    results: list[dict[str, Any]]  # one metrics dict per model
    table: str  # the Markdown summary table
    files: dict[str, str]  # what was written


def evaluate_files(dataset: str | os.PathLike, predictions: list[str], out: str | os.PathLike,
                   *, leo_compatible: bool = False, allow_missing: bool = False,
                   pruned: bool = False, exclude_flagged: bool = False,
                   exclude_needs_scene: bool = False) -> EvaluationReport:
    """``hf-real3d evaluate``: score every ``NAME=FILE[,FILE...]`` against ``dataset`` and
    write ``metrics.json``, ``report.md`` and the plots under ``out``. ``pruned``: score on
    the ``real3dqa_tst`` / ``rotations_tst`` configs of ``hf-real3d stress-test --prune``;
    ``exclude_flagged``: P_k and VRS over the rotation groups in which ``check-rotations``
    finds no ``defect``; ``exclude_needs_scene``: and no ``needs_scene`` item either."""
    check_unique_names(predictions)
    refs = reference_columns(dataset, pruned=pruned, exclude_flagged=exclude_flagged,
                             exclude_needs_scene=exclude_needs_scene)
    results = []
    for spec in predictions:
        preds = read_model_prediction_columns(spec)
        results.append(_score(refs, preds, preds.name, leo_compatible, allow_missing)[0])
    notes = []
    if refs.report and "excluded_flagged" in refs.report:
        ex = refs.report["excluded_flagged"]
        what = "a defect or an item that needs the scene" if ex["needs_scene_too"] else \
            "a defect"
        notes.append(f"--exclude-flagged{' --exclude-needs-scene' if ex['needs_scene_too'] else ''}"
                     f": {ex['groups']} of {ex['of']} rotation groups hold {what} by hf-real3d "
                     "check-rotations and are left out of P_k/VRS (their 0-degree questions "
                     f"still count for EM): VRS rests on {ex['of'] - ex['groups']} groups (of "
                     f"{ex['rests_on']['all']} in all, {ex['rests_on']['no defect']} hold no "
                     f"defect and {ex['rests_on']['no defect or needs_scene']} neither a defect "
                     "nor an item that needs the scene)")
    orig = refs.rotation_deg == 0
    if refs.in_debiased.any():
        outside = int((orig & ~refs.in_debiased).sum())
        if outside:
            notes.append(f"EM (orig) is over all {int(orig.sum())} questions at 0 degrees: the "
                         f"{int((orig & refs.in_debiased).sum())} of the de-biased set and "
                         f"{outside} that only the rotation groups hold (they carry no "
                         "question type); EM (de-biased) is over the former")
    if refs.report and "rotations" in refs.report:
        rot = refs.report["rotations"]
        notes.append(f"references: {rot['groups']} rotation groups, {rot['complete_groups']} "
                     f"complete; incomplete groups are left out of P_k/VRS: "
                     f"{rot['incomplete_groups']}")
    repaired = _repaired_items(Path(dataset))
    if repaired:
        notes.append(f"the references are a repaired release: {repaired} turned items carry "
                     "repairs proposed by hf-real3d check-rotations and applied without review "
                     "(source = repaired), so these scores are not the paper's Real-3DQA "
                     "figures and are not comparable with its Table 3")
        for r in results:
            r["repaired_references"] = repaired
    files = write_report(results, out, notes)
    return EvaluationReport(results, results_table(results), files)


def _repaired_items(src: Path) -> int:
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
