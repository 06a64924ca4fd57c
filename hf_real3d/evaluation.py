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

import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from hf_real3d._io import FormatError, read_json
from hf_real3d.scoring import MetricInputError, answer_correctness, bootstrap_ci, vrs

__all__ = ["load_references", "load_predictions", "score_predictions", "ModelScores"]

_SUFFIX_DEG = {1: 90, 2: 180, 3: 270}


def load_references(source: str | os.PathLike, split: str = "test") -> pd.DataFrame:
    """A reference table: question_id, rotation_deg, answers, question_type, in_debiased,
    in_rotation (one row per question and viewpoint)."""
    src = Path(source)
    if (src / "rotation_0.json").is_file():
        from hf_real3d.real3dqa import read_release

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
        from hf_real3d.hub import load_folder_references

        return load_folder_references(src)
    from hf_real3d.sqa3d import read_split, split_paths

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


def _deg_from_name(path: Path) -> int | None:
    m = re.search(r"(?:rotation|rot)[_-]?(\d{1,3})(?!\d)", path.stem) or \
        re.search(r"_(0|90|180|270)$", path.stem)
    return int(m.group(1)) if m else None


def load_predictions(path: str | os.PathLike) -> pd.DataFrame:
    """Rows ``question_id``, ``rotation_deg``, ``prediction`` (+ ``suffix_id`` when the
    file used the id x 100 + suffix scheme, resolved later against the references)."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such predictions file")
    text = path.read_text(encoding="utf-8")
    try:
        if path.suffix == ".jsonl":
            rows = [json.loads(line) for line in text.splitlines() if line.strip()]
        else:
            rows = read_json(path)
    except json.JSONDecodeError as err:
        raise FormatError(f"{path}: malformed JSON(L) at line {err.lineno}: {err.msg}") from None
    if isinstance(rows, dict) and "predictions" in rows:
        rows = rows["predictions"]
    if not isinstance(rows, list) or not rows:
        raise FormatError(f"{path}: expected a non-empty list of prediction rows")
    official = "response_pred" in rows[0]
    file_deg = _deg_from_name(path)
    out = []
    for i, r in enumerate(rows):
        if not isinstance(r, dict) or "question_id" not in r:
            raise FormatError(f"{path}: row {i} lacks question_id")
        pred = r.get("response_pred" if official else "prediction")
        if pred is None:
            raise FormatError(f"{path}: question_id {r['question_id']} lacks "
                              f"{'response_pred' if official else 'prediction'}")
        if not isinstance(pred, str) and not (isinstance(pred, list) and
                                              all(isinstance(p, str) for p in pred)):
            raise FormatError(f"{path}: question_id {r['question_id']}: prediction "
                              f"{pred!r} is not a string or list of strings")
        deg = r.get("rotation_deg", r.get("rotation"))
        if deg is None:
            deg = file_deg if file_deg is not None else 0
        out.append({"question_id": r["question_id"], "rotation_deg": int(deg), "prediction": pred,
                    "log_prob": r.get("log_prob")})
    df = pd.DataFrame(out)
    df.attrs["name"] = path.stem
    df.attrs["official"] = official
    return df


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
        if q not in ids and isinstance(q, int | np.integer) and q // 100 in ids and \
                q % 100 in _SUFFIX_DEG:
            fixed_q.append(int(q // 100))
            fixed_d.append(_SUFFIX_DEG[int(q % 100)])
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
    metrics: dict[str, Any] = {"model": name, "predictions": len(df)}
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
