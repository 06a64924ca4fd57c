"""Blind-vs-full filtering: drop questions a model answers without the 3D input.

Given predictions of several (full, blind) model pairs, a question is removed when some
pair answers it correctly **both** with and without 3D (refined EM), and when a
text-only judge answers it. Every removed question keeps its reasons (``pair:NAME``,
``judge:NAME``). Beyond the paper's yes/no filter, each question gets a 3D-dependency
score: the full model's answer log-prob minus the blind model's, averaged over the pairs
whose prediction files carry ``log_prob``; sort or slice by it.

The same filter builds Real-ScanQA from ScanQA-format data (:func:`read_scanqa`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from hf_real3d._io import FormatError
from hf_real3d.scanqa import read_scanqa
from hf_real3d.scoring import MetricInputError, answer_correctness
from hf_real3d.tables import markdown_table

__all__ = ["FilterResult", "filter_questions", "read_scanqa"]


@dataclass
class FilterResult:
    """Outcome per question: kept or removed (with reasons) and the 3D-dependency score."""

    table: pd.DataFrame  # question_id, kept, reasons, dependency, correct_<filter> columns
    filters: list[str] = field(default_factory=list)

    @property
    def kept_ids(self) -> list:
        return self.table.loc[self.table.kept, "question_id"].tolist()

    @property
    def removed(self) -> pd.DataFrame:
        return self.table.loc[~self.table.kept, ["question_id", "reasons", "dependency"]]

    def stats(self) -> list[dict[str, Any]]:
        """Rows like the paper's Table 7: original, removed per filter, remaining."""
        t = self.table
        rows = [{"step": "original", "questions": len(t)}]
        removed_so_far = np.zeros(len(t), dtype=bool)
        for f in self.filters:
            hit = t.reasons.apply(lambda rs, f=f: f in rs).to_numpy()
            new = hit & ~removed_so_far
            removed_so_far |= hit
            rows.append({"step": f"removed by {f}", "questions": int(hit.sum()),
                         "newly_removed": int(new.sum()),
                         "remaining": int((~removed_so_far).sum())})
        rows.append({"step": "remaining", "questions": int(t.kept.sum())})
        return rows

    def removed_by(self) -> dict[str, int]:
        """Questions each filter removed (``pair:NAME``, ``judge:NAME``), overlaps counted in
        each."""
        return {r["step"].removeprefix("removed by "): r["questions"] for r in self.stats()
                if r["step"].startswith("removed by ")}

    def stats_markdown(self) -> str:
        return markdown_table(["step", "questions", "newly removed", "remaining"],
                              [[r["step"], r["questions"], r.get("newly_removed", ""),
                                r.get("remaining", "")] for r in self.stats()])


def _check_cover(ids: pd.Index, preds: pd.DataFrame, what: str) -> pd.DataFrame:
    if "question_id" not in preds or "prediction" not in preds:
        raise FormatError(f"{what}: predictions need question_id and prediction columns")
    dup = preds.question_id.duplicated()
    if dup.any():
        raise MetricInputError(f"{what}: duplicate prediction for question_id "
                               f"{preds.question_id[dup].iloc[0]}")
    p = preds.set_index("question_id")
    missing = ids.difference(p.index)
    if len(missing):
        raise MetricInputError(
            f"{what}: predictions missing for {len(missing)} of {len(ids)} questions, e.g. "
            f"question_id {missing[0]}; every question needs a prediction from every model")
    extra = p.index.difference(ids)
    if len(extra):
        raise MetricInputError(f"{what}: prediction for unknown question_id {extra[0]}")
    return p.loc[ids]


def filter_questions(references: pd.DataFrame,
                     pairs: Sequence[tuple[str, pd.DataFrame, pd.DataFrame]],
                     judges: Sequence[tuple[str, pd.DataFrame]] = (), *,
                     leo_compatible: bool = False) -> FilterResult:
    """Filter ``references`` (question_id, answers) with (name, full, blind) prediction pairs
    and (name, predictions) judges. Prediction frames: question_id, prediction[, log_prob]."""
    if not pairs and not judges:
        raise ValueError("Expected at least one (full, blind) pair or judge to filter with")
    ids = pd.Index(references.question_id)
    if ids.has_duplicates:
        raise MetricInputError(f"references: duplicate question_id {ids[ids.duplicated()][0]}")
    answers = references.answers.tolist()
    out = pd.DataFrame({"question_id": references.question_id.to_numpy()})
    reasons: list[list[str]] = [[] for _ in range(len(out))]
    deps = []
    filters = []
    for name, full, blind in pairs:
        f = _check_cover(ids, full, f"pair {name!r} (full)")
        b = _check_cover(ids, blind, f"pair {name!r} (blind)")
        _, ok_f = answer_correctness(f.prediction.tolist(), answers, leo_compatible=leo_compatible)
        _, ok_b = answer_correctness(b.prediction.tolist(), answers, leo_compatible=leo_compatible)
        both = ok_f & ok_b
        tag = f"pair:{name}"
        filters.append(tag)
        out[f"correct_full_{name}"] = ok_f
        out[f"correct_blind_{name}"] = ok_b
        for i in np.flatnonzero(both):
            reasons[i].append(tag)
        if "log_prob" in f and "log_prob" in b:
            lf = pd.to_numeric(f.log_prob, errors="coerce").to_numpy(dtype=float)
            lb = pd.to_numeric(b.log_prob, errors="coerce").to_numpy(dtype=float)
            deps.append(lf - lb)
    for name, preds in judges:
        p = _check_cover(ids, preds, f"judge {name!r}")
        _, ok = answer_correctness(p.prediction.tolist(), answers, leo_compatible=leo_compatible)
        tag = f"judge:{name}"
        filters.append(tag)
        out[f"correct_judge_{name}"] = ok
        for i in np.flatnonzero(ok):
            reasons[i].append(tag)
    out["reasons"] = reasons
    out["kept"] = [not r for r in reasons]
    if deps:
        stack = np.vstack(deps)
        with np.errstate(all="ignore"):
            valid = ~np.isnan(stack)
            out["dependency"] = np.where(valid.any(0), np.nansum(stack, 0) /
                                         np.maximum(valid.sum(0), 1), np.nan)
    else:
        out["dependency"] = np.nan
    return FilterResult(out, filters)
