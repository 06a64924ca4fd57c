"""Array helpers every metric family shares: the input error, length checks, integer
group codes, each group's first row, all-correct groups and per-category means."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

__all__ = ["MetricInputError", "check_lengths", "factorize", "first_rows", "all_correct",
           "per_category", "group_category"]


class MetricInputError(ValueError):
    """Inputs a metric cannot score (lengths, ids, groups); the message names the item."""


def check_lengths(**arrays: Any) -> int:
    """The common length of the given arrays (None entries skipped); a MetricInputError
    naming each length when they differ."""
    lens = {k: len(v) for k, v in arrays.items() if v is not None}
    if len(set(lens.values())) > 1:
        detail = ", ".join(f"{k}={n}" for k, n in lens.items())
        raise MetricInputError(f"Expected inputs of equal length but got {detail}")
    return next(iter(lens.values()), 0)


def factorize(values: Sequence) -> tuple[np.ndarray, list]:
    """Integer codes (first-seen order) and keys of group ids."""
    arr = values if isinstance(values, np.ndarray) else np.asarray(values, dtype=object)
    if arr.dtype.kind in "iu":
        codes, keys = pd.factorize(arr)
    else:
        codes, keys = pd.factorize(arr.astype(object, copy=False))
    return codes.astype(np.int64, copy=False), list(keys)


def first_rows(codes: np.ndarray, n: int) -> np.ndarray:
    """For integer codes 0..n-1 (each present): the first row holding each code."""
    first = np.empty(n, dtype=np.int64)
    first[codes[::-1]] = np.arange(len(codes) - 1, -1, -1)
    return first


def all_correct(ok: np.ndarray, codes: np.ndarray, n_groups: int) -> np.ndarray:
    """Per group code: True when every row of the group is ``ok``."""
    return np.bincount(codes, weights=~ok, minlength=n_groups) == 0


def per_category(values: np.ndarray, cats: Sequence | None) -> dict[str, float] | None:
    """Mean x 100 of ``values`` per category (None without categories)."""
    if cats is None:
        return None
    df = pd.DataFrame({"c": list(cats), "v": values})
    return {str(c): float(v.mean() * 100) for c, v in df.groupby("c", sort=True)["v"]}


def group_category(group_codes: np.ndarray, n: int, cats: Sequence | None, what: str):
    """Each group's category (None without categories); a group mixing categories raises."""
    if cats is None:
        return None
    cats = np.asarray(list(cats), dtype=object)
    gc = cats[first_rows(group_codes, n)]
    bad = gc[group_codes] != cats
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise MetricInputError(f"{what} group of row {i} mixes categories {gc[group_codes[i]]!r} "
                               f"and {cats[i]!r}")
    return gc
