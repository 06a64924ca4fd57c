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

from hf_real3d._io import atomic_path, write_json
from hf_real3d.predictions import load_model_predictions
from hf_real3d.real3dqa.release import (
    DEBIASED_FILE,
    RELEASE_VIEWPOINTS,
    SUFFIX_DEG,
    read_release,
    suffixed_ids,
)
from hf_real3d.report import results_table, write_report
from hf_real3d.scoring import (
    MetricInputError,
    answer_correctness,
    bootstrap_ci,
    degenerate_predictions,
    vrs,
)
from hf_real3d.sqa3d import read_split, split_paths

logger = logging.getLogger(__name__)

__all__ = ["load_references", "reference_cache_dir", "load_folder_references",
           "score_predictions", "ModelScores", "EvaluationReport", "evaluate_files"]


def load_folder_references(folder: str | os.PathLike) -> pd.DataFrame:
    """Reference table from a built dataset folder: the
    ``sqa3d`` config (all questions, rotation 0) when present, else ``real3dqa``, plus the
    ``rotations`` config; ``in_debiased`` marks the questions ``real3dqa`` kept."""
    folder = Path(folder)

    # the datasets library (through hub) only for built folders: scoring against a release
    # folder does not pay for importing it
    from hf_real3d.hub import load_local

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


REF_COLUMNS = ["question_id", "rotation_deg", "answers", "question_type", "in_debiased",
               "in_rotation"]
_CACHE_FORMAT = 1  # bump when the reference table or the release reader changes


def reference_cache_dir() -> Path:
    """Where parsed release references are kept: ``$HF_REAL3D_CACHE``, else
    ``$HF_HOME/hf_real3d`` (``~/.cache/huggingface/hf_real3d``)."""
    if os.environ.get("HF_REAL3D_CACHE"):
        return Path(os.environ["HF_REAL3D_CACHE"])
    hf_home = os.environ.get("HF_HOME") or Path(os.environ.get("XDG_CACHE_HOME") or
                                                Path.home() / ".cache") / "huggingface"
    return Path(hf_home) / "hf_real3d"


def _release_key(src: Path) -> str:
    """Fingerprint of the five release files: resolved path, size and modification and
    change times (as ``make`` and ``ccache`` do), plus the cache format; any edit, copy or
    replacement of a file gives another key."""
    parts = [_CACHE_FORMAT]
    for name in [DEBIASED_FILE, *(f"rotation_{k}.json" for k in RELEASE_VIEWPOINTS)]:
        st = (src / name).stat()
        parts.append([str((src / name).resolve()), st.st_size, st.st_mtime_ns, st.st_ctime_ns])
    return hashlib.sha256(json.dumps(parts).encode()).hexdigest()[:24]


def _release_references(src: Path, cache: bool) -> pd.DataFrame:
    key = _release_key(src)
    table = reference_cache_dir() / f"real3dqa-references-{key}.parquet"
    meta = table.with_suffix(".json")
    if cache and table.is_file() and meta.is_file():
        try:
            df = pd.read_parquet(table)
            df.attrs["report"] = json.loads(meta.read_text())
            return df
        except (OSError, ValueError) as err:  # unreadable cache: rebuild it
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
    if cache:
        try:  # the table last: its presence means both files are complete
            table.parent.mkdir(parents=True, exist_ok=True)
            write_json(meta, data.report)
            with atomic_path(table) as tmp:
                df.to_parquet(tmp, index=False)
        except OSError as err:  # a read-only cache is not an error: the next run re-reads
            logger.warning("could not cache the parsed references in %s (%s)", table.parent,
                           err)
    return df


def load_references(source: str | os.PathLike, split: str = "test", *,
                    cache: bool = True) -> pd.DataFrame:
    """A reference table: question_id, rotation_deg, answers, question_type, in_debiased,
    in_rotation (one row per question and viewpoint).

    A release folder is parsed and validated once; the table is then kept under
    :func:`reference_cache_dir`, keyed by each file's path, size and times, so later
    evaluations against the same files skip the JSON (``cache=False`` always re-reads)."""
    src = Path(source)
    if (src / "rotation_0.json").is_file():
        return _release_references(src, cache)
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


def _align(refs: pd.DataFrame, preds: pd.DataFrame, name: str) -> tuple[pd.DataFrame, int]:
    qid = preds.question_id.to_numpy()
    if preds.question_id.dtype == object and all(isinstance(q, str) for q in qid[:50]):
        try:
            preds = preds.assign(question_id=preds.question_id.astype(np.int64))
        except ValueError:
            pass
    # id x 100 + suffix scheme (the official rotated files): map back to the base id and
    # viewpoint, for ids that are not base ids themselves but id // 100 is one
    qid = preds.question_id.to_numpy()
    ref_ids = refs.question_id.to_numpy()
    if qid.dtype.kind in "iu" and ref_ids.dtype.kind in "iu":
        sfx, head, tail = suffixed_ids(qid, np.unique(ref_ids))
        sfx &= np.isin(tail, list(SUFFIX_DEG))
        if sfx.any():
            deg = preds.rotation_deg.to_numpy().copy()
            deg[sfx] = [SUFFIX_DEG[t] for t in tail[sfx].tolist()]
            preds = preds.assign(question_id=np.where(sfx, head, qid), rotation_deg=deg)
    # the official de-biased and rotation_0 files both answer the shared questions at 0
    # degrees: the same answer twice is one prediction; two different ones are an error
    key = preds.prediction
    if pd.api.types.infer_dtype(key, skipna=False) != "string":  # lists of candidates
        key = key.map(lambda p: p if isinstance(p, str) else "\x1f".join(p))
    same = preds.assign(_key=key).duplicated(["question_id", "rotation_deg", "_key"])
    preds = preds[~same.to_numpy()]
    dup = preds.duplicated(["question_id", "rotation_deg"])
    if dup.any():
        r = preds[dup].iloc[0]
        raise MetricInputError(f"{name}: duplicate prediction for question_id {r.question_id} "
                               f"at rotation {r.rotation_deg} with different answers; keep one "
                               "row per (question_id, rotation_deg)")
    merged = preds.merge(refs, on=["question_id", "rotation_deg"], how="left", indicator=True)
    unknown = merged[merged["_merge"] == "left_only"]
    if len(unknown):
        r = unknown.iloc[0]
        raise MetricInputError(
            f"{name}: {len(unknown)} prediction(s) match no reference, e.g. question_id "
            f"{r.question_id} at rotation {r.rotation_deg}; check the ids and viewpoints")
    return merged.drop(columns="_merge"), int(same.sum())


@dataclass
class ModelScores:
    name: str
    metrics: dict[str, Any]
    rows: pd.DataFrame  # aligned rows with em / em_refined columns


def _subset_scores(df: pd.DataFrame, refs_subset: pd.DataFrame, what: str,
                   allow_missing: bool, notices: list[str]) -> dict[str, Any] | None:
    """EM / refined EM over every reference row of a subset; rows without a prediction are
    counted wrong when ``allow_missing``, else the figure is not computed (a notice says
    why)."""
    if not len(refs_subset):
        return None
    keys = ["question_id", "rotation_deg"]
    full = refs_subset[[*keys, "question_type"]].merge(
        df[[*keys, "em", "em_refined"]], how="left", on=keys)
    present = full.em.notna().to_numpy()
    n_missing = int((~present).sum())
    if n_missing and (not allow_missing or not present.any()):
        q, d = full.loc[~present, keys].iloc[0]
        notices.append(f"{what} EM / refined EM not computed: predictions missing for "
                       f"{n_missing} of {len(full)} rows, e.g. question_id {q} at rotation {d}"
                       + ("" if present.any() and allow_missing else
                          " (pass allow_missing to count missing rows as wrong)"))
        return None
    if n_missing:
        notices.append(f"{what}: {n_missing} of {len(full)} rows have no prediction and are "
                       "counted wrong")
    full = full.assign(em=full.em.fillna(False).astype(bool),
                       em_refined=full.em_refined.fillna(False).astype(bool))
    out = {"em": float(full.em.mean() * 100), "em_refined": float(full.em_refined.mean() * 100),
           "n": len(full), "missing": n_missing,
           "em_refined_ci": bootstrap_ci(full.em_refined.to_numpy())}
    grouped = full.groupby("question_type")[["em", "em_refined"]]
    per, sizes = grouped.mean() * 100, grouped.size()
    out["per_type"] = {str(t): {"em": float(r.em), "em_refined": float(r.em_refined),
                                "n": int(sizes[t])}
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
    df, n_merged = _align(refs, preds, name)
    em, ref = answer_correctness(df.prediction.tolist(), df.answers.tolist(),
                                 leo_compatible=leo_compatible)
    df = df.assign(em=em, em_refined=ref)
    notices: list[str] = []
    if n_merged:
        notices.append(f"{n_merged} repeated predictions (same question, "
                       "viewpoint and answer, e.g. in both the de-biased and rotation_0 files) "
                       "counted once")
    metrics: dict[str, Any] = {"model": name, "predictions": len(df),
                               "warnings": degenerate_predictions(df.prediction.tolist(), em,
                                                                  ref), "notices": notices}
    orig_refs = refs[refs.rotation_deg == 0]
    orig = df[df.rotation_deg == 0]
    for key, mask in (("original", None), ("debiased", "in_debiased")):
        if mask and not refs[mask].any():
            continue
        sub_refs = orig_refs if mask is None else orig_refs[orig_refs[mask]]
        what = "original-view" if mask is None else "de-biased"
        s = _subset_scores(orig, sub_refs, what, allow_missing, notices)
        if s:
            metrics[key] = s
    rot_refs = refs[refs.in_rotation]
    rot = df[df.in_rotation]
    if len(rot_refs):
        if rot.rotation_deg.nunique() < 2:
            notices.append("P_k and VRS not computed: the predictions cover "
                           f"{rot.rotation_deg.nunique()} viewpoint(s) of the rotation groups "
                           f"(the references have {rot_refs.rotation_deg.nunique()})")
        else:
            keys = ["question_id", "rotation_deg"]
            full = rot_refs[keys].merge(rot[[*keys, "em_refined"]], how="left", on=keys)
            n_missing = int(full.em_refined.isna().sum())
            if n_missing and not allow_missing:
                notices.append(f"P_k and VRS not computed: predictions missing for {n_missing} "
                               f"of {len(full)} rotation rows (pass allow_missing to count "
                               "them wrong)")
            else:
                if n_missing:
                    notices.append(f"rotations: {n_missing} of {len(full)} rows have no "
                                   "prediction and are counted wrong")
                correct = full.em_refined.fillna(False).astype(bool).to_numpy()
                metrics["rotation"] = vrs(correct, full.question_id.tolist(),
                                          full.rotation_deg.tolist(), incomplete="drop",
                                          ci=True)
                types = rot_refs.question_type.to_numpy()
                per_type = {}
                for qt in sorted(set(types.tolist()) - {""}):
                    m = types == qt
                    v = vrs(correct[m], full.question_id[m].tolist(),
                            full.rotation_deg[m].tolist(), incomplete="drop")
                    if not v["groups"]:
                        continue
                    per_type[str(qt)] = {"vrs": v["vrs"], "p_at_least_1": v["p_at_least_1"],
                                         f"p_at_least_{len(v['viewpoints'])}":
                                         v[f"p_at_least_{len(v['viewpoints'])}"],
                                         "groups": v["groups"]}
                metrics["rotation"]["per_type"] = per_type
    if not any(k in metrics for k in ("original", "debiased", "rotation")):
        raise MetricInputError(f"{name}: no figure could be computed: " + "; ".join(notices))
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
