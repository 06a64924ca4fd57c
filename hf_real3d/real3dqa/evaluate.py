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

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from hf_real3d.hub import load_local
from hf_real3d.predictions import load_model_predictions
from hf_real3d.real3dqa.release import SUFFIX_DEG, read_release, suffixed_id
from hf_real3d.report import results_table, write_report
from hf_real3d.scoring import (
    MetricInputError,
    answer_correctness,
    bootstrap_ci,
    degenerate_predictions,
    vrs,
)
from hf_real3d.sqa3d import read_split, split_paths

__all__ = ["load_references", "load_folder_references", "score_predictions", "ModelScores",
           "EvaluationReport", "evaluate_files"]


def load_folder_references(folder: str | os.PathLike) -> pd.DataFrame:
    """Reference table from a built dataset folder: the
    ``sqa3d`` config (all questions, rotation 0) when present, else ``real3dqa``, plus the
    ``rotations`` config; ``in_debiased`` marks the questions ``real3dqa`` kept."""
    folder = Path(folder)

    def load(config: str) -> pd.DataFrame | None:
        if not (folder / config).is_dir():
            return None
        return load_local(folder, config).to_pandas()

    kept, base, rot = load("real3dqa"), load("sqa3d"), load("rotations")
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


def load_references(source: str | os.PathLike, split: str = "test") -> pd.DataFrame:
    """A reference table: question_id, rotation_deg, answers, question_type, in_debiased,
    in_rotation (one row per question and viewpoint)."""
    src = Path(source)
    if (src / "rotation_0.json").is_file():
        data = read_release(src)
        rot = pd.DataFrame(data.rotations)
        rot["in_rotation"] = True
        deb = pd.DataFrame(data.debiased)
        deb["rotation_deg"] = 0
        deb["in_debiased"] = True
        deb["in_rotation"] = False
        merged = pd.concat([rot, deb[~deb.question_id.isin(rot.question_id)]], ignore_index=True)
        merged["in_debiased"] = merged.question_id.isin(set(deb.question_id))
        merged.attrs["report"] = data.report
        return merged[["question_id", "rotation_deg", "answers", "question_type",
                       "in_debiased", "in_rotation"]]
    if (src / "README.md").is_file() and any(src.glob("**/*.parquet")):
        return load_folder_references(src)
    if split_paths(src, split)[0].is_file():
        recs = read_split(src, split)
        return pd.DataFrame({
            "question_id": [r.question_id for r in recs], "rotation_deg": 0,
            "answers": [r.answers for r in recs],
            "question_type": [r.qtype for r in recs],
            "in_debiased": False, "in_rotation": False,
        })
    raise FileNotFoundError(
        f"{src}: not a Real-3DQA release folder (rotation_0.json), a built dataset folder "
        f"(README.md + parquet) or an SQA3D folder (v1_balanced_questions_{split}_...json)")


def _align(refs: pd.DataFrame, preds: pd.DataFrame, name: str) -> pd.DataFrame:
    ids = set(refs.question_id.tolist())
    qid = preds.question_id.to_numpy()
    if preds.question_id.dtype == object and all(isinstance(q, str) for q in qid[:50]):
        try:
            preds = preds.assign(question_id=preds.question_id.astype(np.int64))
        except ValueError:
            pass
    # id x 100 + suffix scheme: map back to the base id and viewpoint
    fixed_q, fixed_d = [], []
    for q, d in zip(preds.question_id.tolist(), preds.rotation_deg.tolist()):
        split = suffixed_id(q, ids)
        if split is not None and split[1] in SUFFIX_DEG:
            fixed_q.append(split[0])
            fixed_d.append(SUFFIX_DEG[split[1]])
        else:
            fixed_q.append(q)
            fixed_d.append(d)
    preds = preds.assign(question_id=fixed_q, rotation_deg=fixed_d)
    dup = preds.duplicated(["question_id", "rotation_deg"])
    if dup.any():
        r = preds[dup].iloc[0]
        raise MetricInputError(f"{name}: duplicate prediction for question_id {r.question_id} "
                               f"at rotation {r.rotation_deg}")
    merged = preds.merge(refs, on=["question_id", "rotation_deg"], how="left", indicator=True)
    unknown = merged[merged["_merge"] == "left_only"]
    if len(unknown):
        r = unknown.iloc[0]
        raise MetricInputError(
            f"{name}: {len(unknown)} prediction(s) match no reference, e.g. question_id "
            f"{r.question_id} at rotation {r.rotation_deg}; check the ids and viewpoints")
    return merged.drop(columns="_merge")


@dataclass
class ModelScores:
    name: str
    metrics: dict[str, Any]
    rows: pd.DataFrame  # aligned rows with em / em_refined columns


def _subset_scores(df: pd.DataFrame, refs_subset: pd.DataFrame, name: str, what: str,
                   allow_missing: bool) -> dict[str, Any] | None:
    if not len(df):
        return None
    have = set(zip(df.question_id, df.rotation_deg))
    missing = [(q, d) for q, d in zip(refs_subset.question_id, refs_subset.rotation_deg)
               if (q, d) not in have]
    if missing and not allow_missing:
        q, d = missing[0]
        raise MetricInputError(
            f"{name}: predictions missing for {len(missing)} of {len(refs_subset)} {what} "
            f"rows, e.g. question_id {q} at rotation {d} (pass allow_missing to score them "
            "as wrong)")
    n_total = len(refs_subset)
    em = df.em.sum() / n_total * 100
    ref = df.em_refined.sum() / n_total * 100
    vals = np.r_[df.em_refined.to_numpy(), np.zeros(len(missing), bool)]
    out = {"em": float(em), "em_refined": float(ref), "n": n_total, "missing": len(missing),
           "em_refined_ci": bootstrap_ci(vals)}
    per = df.groupby("question_type")[["em", "em_refined"]].mean() * 100
    out["per_type"] = {str(t): {"em": float(r.em), "em_refined": float(r.em_refined)}
                       for t, r in per.iterrows() if str(t)}
    return out


def score_predictions(
    refs: pd.DataFrame,
    preds: pd.DataFrame,
    *,
    name: str | None = None,
    leo_compatible: bool = False,
    allow_missing: bool = False,
) -> ModelScores:
    """EM / EM_R on the whole reference set and its subsets, P_k and VRS on rotations."""
    name = name or preds.attrs.get("name", "model")
    df = _align(refs, preds, name)
    em, ref = answer_correctness(df.prediction.tolist(), df.answers.tolist(),
                                 leo_compatible=leo_compatible)
    df = df.assign(em=em, em_refined=ref)
    metrics: dict[str, Any] = {"model": name, "predictions": len(df),
                               "warnings": degenerate_predictions(df.prediction.tolist(), em,
                                                                  ref)}
    orig_refs = refs[refs.rotation_deg == 0]
    orig = df[df.rotation_deg == 0]
    all_scores = _subset_scores(orig, orig_refs, name, "original-view", allow_missing)
    if all_scores:
        metrics["original"] = all_scores
    if refs.in_debiased.any():
        s = _subset_scores(orig[orig.in_debiased], orig_refs[orig_refs.in_debiased], name,
                           "de-biased", allow_missing)
        if s:
            metrics["debiased"] = s
    rot = df[df.in_rotation]
    if len(rot) and rot.rotation_deg.nunique() > 1:
        rot_refs = refs[refs.in_rotation]
        have = set(zip(rot.question_id, rot.rotation_deg))
        n_missing = sum((q, d) not in have for q, d in
                        zip(rot_refs.question_id, rot_refs.rotation_deg))
        if n_missing and not allow_missing:
            raise MetricInputError(f"{name}: predictions missing for {n_missing} rotation rows")
        full = rot_refs[["question_id", "rotation_deg"]].merge(
            rot[["question_id", "rotation_deg", "em_refined"]], how="left",
            on=["question_id", "rotation_deg"])
        correct = full.em_refined.fillna(False).astype(bool).to_numpy()
        v = vrs(correct, full.question_id.tolist(), full.rotation_deg.tolist(),
                incomplete="drop", ci=True)
        metrics["rotation"] = v
    return ModelScores(name, metrics, df)


@dataclass
class EvaluationReport:
    results: list[dict[str, Any]]  # one metrics dict per model
    table: str  # the Markdown summary table
    files: dict[str, str]  # what was written


def evaluate_files(dataset: str | os.PathLike, predictions: list[str], out: str | os.PathLike,
                   *, leo_compatible: bool = False,
                   allow_missing: bool = False) -> EvaluationReport:
    """``hf-real3d evaluate``: score every ``NAME=FILE[,FILE...]`` against ``dataset`` and
    write ``metrics.json``, ``report.md`` and the plots under ``out``."""
    refs = load_references(dataset)
    results = [score_predictions(refs, load_model_predictions(spec),
                                 leo_compatible=leo_compatible,
                                 allow_missing=allow_missing).metrics
               for spec in predictions]
    notes = []
    if "report" in refs.attrs:
        rot = refs.attrs["report"]["rotations"]
        notes.append(f"references: {rot['groups']} rotation groups, {rot['complete_groups']} "
                     f"complete; incomplete groups are left out of P_k/VRS: "
                     f"{rot['incomplete_groups']}")
    files = write_report(results, out, notes)
    return EvaluationReport(results, results_table(results), files)
