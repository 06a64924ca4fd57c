"""Confidence intervals: the percentile bootstrap over groups."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

__all__ = ["bootstrap_ci"]


def bootstrap_ci(group_values: np.ndarray,
                 statistic: Callable[[np.ndarray], np.ndarray] | None = None, *,
                 n_resamples: int = 1000, confidence: float = 0.95, seed: int = 0
                 ) -> tuple[float, float]:
    """Percentile bootstrap interval, resampling groups (rows of ``group_values``).

    ``statistic`` maps an array of shape (B, G, ...) to (B,); default: mean x 100.
    """
    v = np.asarray(group_values)
    if len(v) == 0:
        return float("nan"), float("nan")
    rng = np.random.default_rng(seed)
    q = [(1 - confidence) / 2 * 100, (1 + confidence) / 2 * 100]
    if statistic is None and v.ndim == 1:
        values, counts = np.unique(v, return_counts=True)
        if len(values) <= 64:
            # a resample of n items from k distinct values is a multinomial draw of their
            # counts: the same bootstrap distribution of the mean, in O(B k) not O(B n)
            draws = rng.multinomial(len(v), counts / len(v), size=n_resamples)
            s = draws @ values.astype(float) / len(v) * 100
            lo, hi = np.percentile(s, q)
            return float(lo), float(hi)
    stat = statistic or (lambda x: x.mean(axis=1) * 100)
    stats = []
    for start in range(0, n_resamples, 200):  # bounded memory
        b = min(200, n_resamples - start)
        idx = rng.integers(0, len(v), size=(b, len(v)))
        stats.append(np.asarray(stat(v[idx]), dtype=float).reshape(b))
    s = np.concatenate(stats)
    lo, hi = np.percentile(s, q)
    return float(lo), float(hi)
