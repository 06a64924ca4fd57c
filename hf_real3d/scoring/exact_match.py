"""Exact match (EM) and refined EM over answer strings, and the warnings for prediction
sets that score by the letter of the rules.

Answers repeat a lot, so :func:`answer_correctness` normalises each *distinct* string once
and matches each distinct (prediction, reference) pair once, then maps results back with
numpy indexing.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import chain
from typing import Any

import numpy as np
import pandas as pd

from hf_real3d.answers import normalize_answer
from hf_real3d.scoring.arrays import MetricInputError, check_lengths

__all__ = ["answer_correctness", "em_scores", "degenerate_predictions", "degenerate_counts"]


def _bad_item(values: Sequence, what: str) -> MetricInputError:
    for i, v in enumerate(values):
        if isinstance(v, str):
            continue
        if isinstance(v, list | tuple | np.ndarray):
            if len(v) == 0:
                return MetricInputError(f"{what}[{i}] is an empty list; give at least one string")
            if all(isinstance(x, str) for x in v):
                continue
        return MetricInputError(
            f"{what}[{i}] is {type(v).__name__} {v!r}; expected a string or a list of "
            "strings (convert numbers and None to text first)")
    return MetricInputError(f"{what}: unsupported values")


def _flatten(values: Sequence, what: str) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """(item index, position in item, flat strings) of strings or lists of strings."""
    vals = values if isinstance(values, list) else list(values)
    n = len(vals)
    kinds = set(map(type, vals))
    if kinds <= {str}:
        return np.arange(n), np.zeros(n, dtype=np.int64), vals
    if not kinds <= {str, list, tuple, np.ndarray}:
        raise _bad_item(vals, what)
    if str in kinds:  # a mix: wrap the single strings
        vals = [[v] if type(v) is str else v for v in vals]
    sizes = np.fromiter(map(len, vals), np.int64, count=n)
    if n and sizes.min() == 0:
        raise _bad_item(vals, what)
    flat = list(chain.from_iterable(vals))
    if not set(map(type, flat)) <= {str}:
        raise _bad_item(vals, what)
    if len(flat) == n:  # one string per item (the common case)
        return np.arange(n), np.zeros(n, dtype=np.int64), flat
    item = np.repeat(np.arange(n), sizes)
    pos = np.arange(len(item)) - np.repeat(np.cumsum(sizes) - sizes, sizes)
    return item, pos, flat


def answer_correctness(predictions: Sequence[str | Sequence[str]],
                       references: Sequence[str | Sequence[str]], *,
                       leo_compatible: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """Per-item (EM, refined EM) boolean arrays; same rules as :func:`hf_real3d.answers.match`.

    A prediction may be a string or a list of candidate strings (best candidate counts);
    a reference may be a string or a list of acceptable answers.

    >>> em, refined = answer_correctness(["the chair", "two", "white table"],
    ...                                  [["chair"], ["2"], ["table"]])
    >>> em.tolist(), refined.tolist()
    ([True, True, False], [True, True, True])
    """
    n = check_lengths(predictions=predictions, references=references)
    p_item, _, p_text = _flatten(predictions, "predictions")
    r_item, r_pos, r_text = _flatten(references, "references")
    codes, uniques = pd.factorize(np.asarray(p_text + r_text, dtype=object))
    norm = [normalize_answer(u) for u in uniques]
    ncodes, nuniq = pd.factorize(np.asarray(norm, dtype=object))
    squashed = ["".join(s.split()) for s in nuniq]
    codes = ncodes[codes]
    p_code, r_code = codes[: len(p_text)], codes[len(p_text):]
    # all (item, candidate, reference) triples, ordered by item, candidate, reference position
    if len(p_text) == n:  # one candidate per item: pair each reference with its prediction
        item, cand, pc, rc = r_item, r_item, p_code[r_item], r_code
    else:
        pairs = pd.merge(
            pd.DataFrame({"item": p_item, "cand": np.arange(len(p_text)), "pc": p_code}),
            pd.DataFrame({"item": r_item, "pos": r_pos, "rc": r_code}), on="item", how="inner",
        ).sort_values(["item", "cand", "pos"], kind="stable")
        item, cand = pairs["item"].to_numpy(), pairs["cand"].to_numpy()
        pc, rc = pairs["pc"].to_numpy(), pairs["rc"].to_numpy()
    key = pc.astype(np.int64) * (len(nuniq) + 1) + rc
    ukey, inv = np.unique(key, return_inverse=True)
    u_pc, u_rc = ukey // (len(nuniq) + 1), ukey % (len(nuniq) + 1)
    u_sub = np.fromiter(((squashed[a] in squashed[b]) or (squashed[b] in squashed[a])
                         for a, b in zip(u_pc.tolist(), u_rc.tolist())),
                        dtype=bool, count=len(ukey))
    exact = pc == rc
    sub = u_sub[inv]
    em = np.zeros(n, dtype=bool)
    refined = np.zeros(n, dtype=bool)
    if leo_compatible:
        # first reference that is equal or a substring match decides, per candidate
        hit = exact | sub
        starts = np.flatnonzero(np.r_[True, cand[1:] != cand[:-1]])
        order = np.where(hit, np.arange(len(hit)), len(hit))
        first = np.minimum.reduceat(order, starts) if len(starts) else np.zeros(0, int)
        has = first < len(hit)
        c_item = item[starts]
        c_em = np.zeros(len(starts), dtype=bool)
        c_em[has] = exact[first[has]]
        np.logical_or.at(em, c_item, c_em)
        np.logical_or.at(refined, c_item, has)
    else:
        nonempty = np.asarray([len(s) > 0 for s in squashed])
        ok_sub = sub & nonempty[pc] & nonempty[rc]
        np.logical_or.at(em, item, exact)
        np.logical_or.at(refined, item, exact | ok_sub)
    return em, refined


def em_scores(predictions: Sequence[str | Sequence[str]],
              references: Sequence[str | Sequence[str]], *,
              question_types: Sequence[str] | None = None,
              leo_compatible: bool = False) -> dict[str, Any]:
    """``em`` and ``em_refined`` (%), overall and per question type.

    >>> em_scores(["chair", "2"], [["chair"], ["3"]])
    {'em': 50.0, 'em_refined': 50.0, 'n': 2}
    """
    check_lengths(predictions=predictions, references=references, question_types=question_types)
    em, ref = answer_correctness(predictions, references, leo_compatible=leo_compatible)
    out: dict[str, Any] = {
        "em": float(em.mean() * 100) if len(em) else float("nan"),
        "em_refined": float(ref.mean() * 100) if len(ref) else float("nan"),
        "n": int(len(em)),
    }
    if question_types is not None:
        df = pd.DataFrame({"t": list(question_types), "em": em, "ref": ref})
        out["per_type"] = {
            str(t): {"em": float(r.em.mean() * 100), "em_refined": float(r.ref.mean() * 100),
                     "n": int(len(r))}
            for t, r in df.groupby("t", sort=True)}
    return out


def degenerate_predictions(predictions: Sequence, em: Sequence[bool],
                           em_refined: Sequence[bool]) -> list[str]:
    """Warnings for prediction sets that score by the letter of the rules rather than by
    answering: mostly empty (refined EM counts an empty answer right under the LEO rule),
    one answer for nearly everything, or refined EM far above EM with long answers (an
    answer list that contains the reference as a substring)."""
    if not len(predictions):
        return []
    texts = predictions if set(map(type, predictions)) <= {str} else \
        [p if isinstance(p, str) else " ".join(p) for p in predictions]
    codes, uniq = pd.factorize(np.asarray(texts, dtype=object))
    return degenerate_counts(np.bincount(codes, minlength=len(uniq)), list(uniq), em,
                             em_refined)


def degenerate_counts(counts: np.ndarray, texts: Sequence[str], em: Sequence[bool],
                      em_refined: Sequence[bool]) -> list[str]:
    """:func:`degenerate_predictions` from each distinct answer's text and count (every
    figure is computed once per distinct answer, weighted by its count)."""
    counts = np.asarray(counts)
    n = int(counts.sum())
    if not n:
        return []
    out = []
    empty = counts[[not s.strip() for s in texts]].sum() / n
    if empty >= 0.5:
        out.append(f"{empty:.0%} of the predictions are empty (under leo_compatible an empty "
                   "prediction counts as refined-correct)")
    folded = pd.Series(counts).groupby([s.strip().lower() for s in texts]).sum()
    top, count = folded.idxmax(), int(folded.max())
    if n >= 20 and count / n >= 0.9 and top:
        out.append(f"{count / n:.0%} of the predictions are the same answer {top!r}")
    gap = (np.mean(em_refined) - np.mean(em)) * 100
    words = float(np.dot(counts, [len(s.split()) for s in texts]) / n)
    if gap >= 20 and words >= 4:
        out.append(f"refined EM is {gap:.0f} points above EM and predictions average "
                   f"{words:.1f} words: refined EM accepts a reference found inside a longer "
                   "answer, so answer lists score as correct")
    return out
