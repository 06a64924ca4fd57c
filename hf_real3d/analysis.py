"""Analyses of scored models: right-to-wrong flips (the paper's Figure 6) and the demo's
findings, each stated with the models it concerns and whether it holds as measured."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from hf_real3d.scoring import answer_correctness

__all__ = ["flips", "Finding", "findings", "mean_metric"]


def flips(refs: pd.DataFrame, preds: Mapping[str, pd.DataFrame], kept: set[int], *,
          base: str, others: Sequence[str]) -> dict[str, dict[str, int]]:
    """Original-view questions right under ``base`` and wrong under each of ``others`` (and
    the reverse), split by whether the filter kept them (Figure 6 of the paper).

    ``refs``: reference rows (question_id, rotation_deg, answers); ``preds``: prediction
    tables by model name, each covering every original-view question.
    """
    orig = refs[refs.rotation_deg == 0].set_index("question_id")

    def correct(name: str) -> np.ndarray:
        p = preds[name]
        p = p[p.rotation_deg == 0].set_index("question_id").loc[orig.index]
        return answer_correctness(p.prediction.tolist(), orig.answers.tolist())[1]

    ref_ok = correct(base)
    in_kept = np.array([q in kept for q in orig.index])
    out = {}
    for name in others:
        new = correct(name)
        r2w, w2r = ref_ok & ~new, ~ref_ok & new
        out[name] = {"right_to_wrong": int(r2w.sum()),
                     "right_to_wrong_filtered_out": int((r2w & ~in_kept).sum()),
                     "wrong_to_right": int(w2r.sum()),
                     "wrong_to_right_kept": int((w2r & in_kept).sum())}
    return out


def mean_metric(per_seed: Sequence[Sequence[Mapping[str, Any]]], model: str,
                *path: str) -> float:
    """Mean over seeds of one metric of one model (``path`` into its metrics dict)."""
    vals = []
    for results in per_seed:
        cur: Any = next(r for r in results if r["model"] == model)
        for k in path:
            cur = cur[k]
        vals.append(cur)
    return float(np.mean(vals))


@dataclass
class Finding:
    key: str
    statement: str  # what is claimed, with the models and figures it concerns
    holds: bool


def findings(per_seed: Sequence[Sequence[Mapping[str, Any]]]) -> list[Finding]:
    """The Real-3DQA paper's four claims, measured on the demo's models (means over seeds
    of refined EM): (a) blind ~ full on the unfiltered set, (b) filtering drops the full
    model, (c) P_4 collapses against P_1, (d) 3DR-FT beats SFT on the filtered set."""
    def m(name: str, *path: str) -> float:
        return mean_metric(per_seed, name, *path)

    a = (m("Blind", "original", "em_refined"), m("SFT", "original", "em_refined"))
    b = (m("SFT", "original", "em_refined"), m("SFT", "debiased", "em_refined"))
    c = (m("SFT", "rotation", "p_at_least_1"), m("SFT", "rotation", "p_at_least_4"))
    d = (m("SFT", "debiased", "em_refined"), m("3DR-FT (paper)", "debiased", "em_refined"),
         m("3DR-FT (official)", "debiased", "em_refined"))
    return [
        Finding("a", f"blind vs full (SFT) on the unfiltered test set: {a[0]:.1f} vs {a[1]:.1f} "
                     f"EM_R (the blind model reaches {a[0] / max(a[1], 1e-9):.0%} of SFT)",
                abs(a[1] - a[0]) < 0.5 * a[1]),
        Finding("b", f"filtering drops SFT's EM_R from {b[0]:.1f} to {b[1]:.1f}", b[1] < b[0] - 5),
        Finding("c", f"P_4 vs P_1 for SFT: {c[1]:.1f} vs {c[0]:.1f}", c[1] < 0.6 * c[0]),
        Finding("d", f"3DR-FT vs SFT on the filtered set: paper {d[1]:.1f}, official "
                     f"{d[2]:.1f}, SFT {d[0]:.1f}", max(d[1], d[2]) > d[0]),
    ]
