"""Analyses of scored models: right-to-wrong flips (the paper's Figure 6) and accuracy per
group of questions (by prior kind, by question type)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from hf_real3d.scoring import answer_correctness

__all__ = ["flips", "accuracy_by", "original_correct"]


def original_correct(refs: pd.DataFrame, pred: pd.DataFrame, ids: Sequence[int] | None = None
                     ) -> tuple[list[int], np.ndarray]:
    """(question ids, refined-EM correctness) of one model's original-view answers, for
    ``ids`` (default: every original-view reference); a missing prediction is an error."""
    orig = refs[refs.rotation_deg == 0].drop_duplicates("question_id").set_index("question_id")
    ids = list(orig.index) if ids is None else list(ids)
    p = pred[pred.rotation_deg == 0].drop_duplicates("question_id").set_index("question_id")
    missing = [q for q in ids if q not in p.index]
    if missing:
        raise ValueError(f"no original-view prediction for question {missing[0]} "
                         f"(and {len(missing) - 1} more)")
    ok = answer_correctness(p.prediction.loc[ids].tolist(), orig.answers.loc[ids].tolist())[1]
    return ids, ok


def flips(refs: pd.DataFrame, preds: Mapping[str, pd.DataFrame], kept: set[int], *,
          base: str, others: Sequence[str]) -> dict[str, dict[str, int]]:
    """Original-view questions right under ``base`` and wrong under each of ``others`` (and
    the reverse), split by whether the filter kept them (Figure 6 of the paper).

    ``refs``: reference rows (question_id, rotation_deg, answers); ``preds``: prediction
    tables by model name, each covering every original-view question.
    """
    ids, ref_ok = original_correct(refs, preds[base])
    in_kept = np.array([q in kept for q in ids])
    out = {}
    for name in others:
        new = original_correct(refs, preds[name], ids)[1]
        r2w, w2r = ref_ok & ~new, ~ref_ok & new
        out[name] = {"right_to_wrong": int(r2w.sum()),
                     "right_to_wrong_filtered_out": int((r2w & ~in_kept).sum()),
                     "wrong_to_right": int(w2r.sum()),
                     "wrong_to_right_kept": int((w2r & in_kept).sum())}
    return out


def accuracy_by(refs: pd.DataFrame, pred: pd.DataFrame, groups: Mapping[int, str], *,
                keep: set[int] | None = None) -> dict[str, dict[str, float]]:
    """Refined EM of one model's original-view answers per group: ``groups`` maps question
    id to a label (e.g. ``prior_kind`` or the question type); ``keep`` limits to a subset
    (e.g. the filtered set). Returns ``{label: {"n": count, "em_refined": percent}}``."""
    orig = refs.loc[refs.rotation_deg == 0, "question_id"].drop_duplicates()
    ids = [q for q in orig if q in groups and (keep is None or q in keep)]
    if not ids:
        return {}
    ids, ok = original_correct(refs, pred, ids)
    labels = np.array([groups[q] for q in ids], dtype=object)
    return {str(g): {"n": int((labels == g).sum()),
                     "em_refined": float(ok[labels == g].mean() * 100)}
            for g in sorted(set(labels))}
