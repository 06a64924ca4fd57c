"""Score prediction files against Real-3DQA-style references (``hf-real3d evaluate``).

The references (a release folder, a built dataset folder, an SQA3D folder, and their
subsets) are :mod:`hf_real3d.real3dqa.references`' tables.

Predictions are JSONL/JSON rows with ``question_id``, ``prediction`` and optionally
``rotation`` / ``rotation_deg`` (degrees, default 0), or the official Real-3DQA format
(a JSON list with ``question_id``, ``response_pred``, ``response_gt``; the viewpoint is
read from the file name, ``..._90.json`` / ``rot90`` / ``rotation_90``, or from a
``01``/``02``/``03`` id suffix).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from hf_real3d.answers import normalize_answer
from hf_real3d.real3dqa.format import SUFFIX_DEG, suffixed_ids
from hf_real3d.real3dqa.predictions import PredictionColumns, read_model_prediction_columns
from hf_real3d.real3dqa.references import (
    ReferenceColumns,
    corrected_from,
    reference_columns,
    repaired_items,
)
from hf_real3d.real3dqa.report import results_table, write_report
from hf_real3d.scoring import (
    MetricInputError,
    answer_correctness,
    bootstrap_ci,
    degenerate_counts,
    first_rows,
    vrs,
)
from hf_real3d.specs import check_unique_names

__all__ = ["score_predictions", "ModelScores", "EvaluationReport", "evaluate_files",
           "FEW_GROUPS"]

#: fewer complete rotation groups than this under P_k / VRS of a subset: a warning says so
FEW_GROUPS = 30


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


def _answer_changes(refs: ReferenceColumns, rows: np.ndarray) -> np.ndarray:
    """Per row of ``rows``: whether its rotation group's reference answer differs between
    viewpoints (a group with one answer at every viewpoint is scored consistent for a model
    that ignores the turn)."""
    first = np.asarray([normalize_answer(str(a[0])) if len(a) else "" for a in refs.answer_vocab],
                       dtype=object)[refs.answer_code[rows]]
    return pd.Series(first).groupby(refs.question_id[rows]).transform("nunique").to_numpy() > 1


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
                changes = _answer_changes(refs, rot_rows)
                if changes.any() and not changes.all():
                    v = vrs(correct[changes], gid[changes], rdeg[changes], incomplete="drop")
                    n_vp = len(v["viewpoints"])
                    metrics["rotation"]["answer_changes"] = {
                        "vrs": v["vrs"], f"p_at_least_{n_vp}": v[f"p_at_least_{n_vp}"],
                        "groups": v["groups"]}
    if not any(k in metrics for k in ("original", "debiased", "rotation")):
        raise MetricInputError(f"{name}: no figure could be computed: " + "; ".join(notices))
    return metrics, al, em, ref


def score_predictions(refs: pd.DataFrame | ReferenceColumns,
                      preds: pd.DataFrame | PredictionColumns, *, name: str | None = None,
                      leo_compatible: bool = False, allow_missing: bool = False) -> ModelScores:
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
    if refs.subset:
        _say_what_a_subset_rests_on(refs, results)
    notes = _reference_notes(refs)
    repaired = repaired_items(Path(dataset))
    if repaired:
        notes.append(f"the references are a repaired release: {repaired} turned items carry "
                     "repairs proposed by hf-real3d check-rotations and applied without review "
                     "(source = repaired), so these scores are not the paper's Real-3DQA "
                     "figures and are not comparable with its Table 3")
        for r in results:
            r["repaired_references"] = repaired
    derived = corrected_from(Path(dataset))
    if derived:
        notes.append(f"the references are a corrected rotation set derived by "
                     f"{derived.get('derived_by')} from {derived.get('from')} (turned items kept "
                     "where the checker passes them, else derived from viewpoint 0 by their "
                     "turn): not the paper's set, so these scores are not the paper's Real-3DQA "
                     "figures and are not comparable with its Table 3; its derived items say "
                     "other situations than the release's, so predictions must be made on this "
                     "set's own texts")
        for r in results:
            r["derived_references"] = derived
    files = write_report(results, out, notes)
    return EvaluationReport(results, results_table(results), files)


def _subset_flags(refs: ReferenceColumns) -> str:
    ex = (refs.report or {}).get("excluded_flagged")
    if ex is None:
        return "--pruned"
    return "--exclude-flagged" + (" --exclude-needs-scene" if ex["needs_scene_too"] else "")


def _say_what_a_subset_rests_on(refs: ReferenceColumns, results: list[dict[str, Any]]) -> None:
    """Each model's P_k / VRS on a subset, said loudly: a notice of the complete groups they
    rest on and VRS's bootstrap interval, and a warning under :data:`FEW_GROUPS` groups."""
    flags = _subset_flags(refs)
    needs_scene_too = ((refs.report or {}).get("excluded_flagged") or {}).get("needs_scene_too")
    for r in results:
        rot = r.get("rotation")
        if not rot:
            r["warnings"].append(f"{flags} leaves no complete rotation group: P_k and VRS are "
                                 "not computed" + ("; --exclude-flagged alone keeps the groups "
                                                   "with no defect" if needs_scene_too else ""))
            continue
        n = rot["groups"]
        ci = rot.get("vrs_ci")
        interval = f", 95% bootstrap interval [{ci[0]:.1f}, {ci[1]:.1f}]" if ci else ""
        r["notices"].append(f"{flags}: P_k and VRS rest on {n} complete rotation groups "
                            f"(VRS {rot['vrs']:.2f}{interval})")
        if n < FEW_GROUPS:
            r["warnings"].append(f"{flags} leaves P_k and VRS resting on {n} complete rotation "
                                 f"groups, fewer than {FEW_GROUPS}: too few to compare models "
                                 f"by (VRS {rot['vrs']:.2f}{interval}); report the number of "
                                 "groups with the figure")


def _reference_notes(refs: ReferenceColumns) -> list[str]:
    """The report's notes on the references: groups left out by the checks, what EM (orig)
    is over, incomplete rotation groups."""
    notes = []
    if refs.report and "excluded_flagged" in refs.report:
        ex = refs.report["excluded_flagged"]
        what = "a defect or an item that needs the scene" if ex["needs_scene_too"] else \
            "a defect"
        notes.append(f"{_subset_flags(refs)}: {ex['groups']} of {ex['of']} rotation groups hold "
                     f"{what} by hf-real3d check-rotations and are left out of P_k/VRS (their "
                     "0-degree questions still count for EM): VRS rests on "
                     f"{ex['of'] - ex['groups']} groups (of {ex['rests_on']['all']} in all, "
                     f"{ex['rests_on']['no defect']} hold no defect and "
                     f"{ex['rests_on']['no defect or needs_scene']} neither a defect nor an item "
                     "that needs the scene)")
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
    return notes
