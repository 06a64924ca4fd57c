"""Group scores for multiple choice: all-correct groups, CircularEval, FlipEval,
flip+circular, and the chance level of random guessing under them."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from hf_real3d.scoring.arrays import (
    MetricInputError,
    all_correct,
    check_lengths,
    factorize,
    group_category,
    per_category,
)

__all__ = ["group_all_correct", "check_circular_groups", "check_flip_groups", "circular_eval",
           "flip_eval", "flip_circular_eval", "chance_accuracy"]


def group_all_correct(correct: Sequence[bool], group_ids: Sequence) -> tuple[np.ndarray, list]:
    """Per group: True only if every member row is correct.

    >>> ok, keys = group_all_correct([1, 1, 0, 1], ["q", "q", "r", "r"])
    >>> ok.tolist(), keys
    ([True, False], ['q', 'r'])
    """
    check_lengths(correct=correct, group_ids=group_ids)
    codes, keys = factorize(group_ids)
    return all_correct(np.asarray(correct, dtype=bool), codes, len(keys)), keys


def check_circular_groups(codes: np.ndarray, keys: Sequence, options: Sequence[Sequence[str]]
                          ) -> None:
    """Every row of a circular group must permute the same option texts (the one rule the
    evaluate modules and the 3DSRBench evaluator share)."""
    sets = [tuple(sorted(o)) for o in options]
    first: dict[int, tuple] = {}
    for i, (c, s) in enumerate(zip(np.asarray(codes).tolist(), sets)):
        if first.setdefault(c, s) != s:
            raise MetricInputError(
                f"circular group {keys[c]!r}: row {i} has options {list(s)} but the group "
                f"started with {list(first[c])}; every shift must permute the same options")


def check_flip_groups(codes: np.ndarray, keys: Sequence, flipped: Sequence[bool], *,
                      circular: bool = False) -> None:
    """A flip group is one original and one flipped row (``circular``: at least one of
    each, over all shifts)."""
    fl = np.asarray(flipped, dtype=bool)
    n_flip = np.bincount(codes, weights=fl, minlength=len(keys))
    n_orig = np.bincount(codes, weights=~fl, minlength=len(keys))
    bad = ((n_flip == 0) | (n_orig == 0)) if circular else ((n_flip != 1) | (n_orig != 1))
    if bad.any():
        g = int(np.flatnonzero(bad)[0])
        raise MetricInputError(
            f"flip group {keys[g]!r} has {int(n_orig[g])} original and {int(n_flip[g])} flipped "
            f"row(s); expected {'at least one of each' if circular else 'exactly one of each'} "
            "(an unpaired flip item: add its partner or drop it)")


def circular_eval(correct: Sequence[bool], group_ids: Sequence, *,
                  options: Sequence[Sequence[str]] | None = None,
                  shifts: Sequence[int] | None = None,
                  categories: Sequence[str] | None = None) -> dict[str, Any]:
    """CircularEval: a question asked once per circular shift of its options counts only
    if every shift is answered correctly.

    ``options`` (each row's option texts) must hold the same set within a group. Two
    plain accuracies come with it, under two names:

    * ``vanilla``: the mean over every row, every shift (what VLMEvalKit's 3DSRBench
      evaluation, lmms-eval's ``3dsrbench`` task and the authors' script call vanilla);
    * ``vanilla_unshifted`` (with ``shifts``, 0 = the original order): the mean over the
      rows in their original order, one pass of the benchmark as a single-pass scorer
      sees it.

    >>> out = circular_eval([1, 1, 1, 1, 0, 1], ["q"] * 3 + ["r"] * 3, shifts=[0, 1, 2] * 2)
    >>> out["circular"], round(out["vanilla"], 2), out["vanilla_unshifted"]
    (50.0, 83.33, 100.0)
    """
    n = check_lengths(correct=correct, group_ids=group_ids, options=options, shifts=shifts,
                      categories=categories)
    ok = np.asarray(correct, dtype=bool)
    codes, keys = factorize(group_ids)
    if options is not None:
        check_circular_groups(codes, keys, options)
    allok = all_correct(ok, codes, len(keys))
    out: dict[str, Any] = {"circular": float(allok.mean() * 100) if len(allok) else float("nan"),
                           "groups": len(keys), "n": n,
                           "vanilla": float(ok.mean() * 100) if n else float("nan")}
    gcat = group_category(codes, len(keys), categories, "circular")
    if gcat is not None:
        out["per_category"] = per_category(allok, gcat)
        out["vanilla_per_category"] = per_category(ok, categories)
    if shifts is not None:
        base = np.asarray(shifts) == 0
        out["vanilla_unshifted"] = float(ok[base].mean() * 100) if base.any() else float("nan")
        if categories is not None:
            out["vanilla_unshifted_per_category"] = per_category(
                ok[base], np.asarray(list(categories))[base])
    return out


def flip_eval(correct: Sequence[bool], group_ids: Sequence, flipped: Sequence[bool], *,
              categories: Sequence[str] | None = None, circular: bool = False
              ) -> dict[str, Any]:
    """FlipEval: an (original, horizontally flipped) pair counts only if both are right.

    With ``circular=False`` every group must be exactly one original and one flipped row;
    with ``circular=True`` (flip+circular) a group is all shifts of both and needs at least
    one of each.

    >>> flip_eval([1, 1, 1, 0], ["q", "q", "r", "r"], [False, True, False, True])
    {'flip': 50.0, 'groups': 2, 'n': 4}
    """
    n = check_lengths(correct=correct, group_ids=group_ids, flipped=flipped,
                       categories=categories)
    codes, keys = factorize(group_ids)
    check_flip_groups(codes, keys, flipped, circular=circular)
    allok = all_correct(np.asarray(correct, dtype=bool), codes, len(keys))
    name = "flip_circular" if circular else "flip"
    out: dict[str, Any] = {name: float(allok.mean() * 100) if len(allok) else float("nan"),
                           "groups": len(keys), "n": n}
    gcat = group_category(codes, len(keys), categories, "flip")
    if gcat is not None:
        out["per_category"] = per_category(allok, gcat)
    return out


def flip_circular_eval(correct, group_ids, flipped, *, categories=None) -> dict[str, Any]:
    """Flip+circular: every shift of the original and the flipped question must be right.

    >>> flip_circular_eval([1, 1, 1, 0], ["q"] * 4, [False, False, True, True])
    {'flip_circular': 0.0, 'groups': 1, 'n': 4}
    """
    return flip_eval(correct, group_ids, flipped, categories=categories, circular=True)


def chance_accuracy(n_options: Sequence[int], *, passes: Sequence[int] | None = None,
                    consistent: bool = False) -> float:
    """Expected accuracy (%) of random guessing over groups with ``n_options`` choices each.

    A group of ``passes`` questions (default: ``n`` circular shifts) is right only if all
    are. ``random``: independent uniform guesses, ``prod 1/n`` over the passes.
    ``random++`` (``consistent=True``): one guess reused across the shifts of a question,
    ``1/n`` per distinct question (``passes // n`` of them).

    >>> chance_accuracy([4, 2]), chance_accuracy([4, 2], consistent=True)
    (12.6953125, 37.5)
    """
    n = np.asarray(n_options, dtype=float)
    if (n < 1).any():
        raise MetricInputError(f"option counts must be >= 1 but got {n.min()}")
    k = n if passes is None else np.asarray(passes, dtype=float)
    distinct = np.maximum(1, k // n) if consistent else k
    return float(np.mean((1.0 / n) ** distinct) * 100) if len(n) else float("nan")
