"""Statistics over seeds: the one place that decides what a finding over seeds is.

Every finding, table and README figure over seeds goes through :func:`seed_stats`. The rule
for "holds": at least 2 seeds, and the mean beyond twice the seed standard deviation (and
beyond the claim's target, when it has one). A single seed never holds: its std is 0.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property

import numpy as np

__all__ = ["SeedStats", "seed_stats", "mean_std", "summary_text", "MIN_SEEDS"]

MIN_SEEDS = 2  # one seed has no spread, so nothing measured on it can hold


@dataclass(frozen=True)
class SeedStats:
    """Per-seed values (``None`` where a seed has none) and their mean and population std
    over the seeds that have a value (numpy's default, ``ddof=0``)."""

    values: tuple[float | None, ...]

    @cached_property
    def present(self) -> np.ndarray:
        return np.asarray([v for v in self.values if v is not None], float)

    @property
    def n(self) -> int:
        return int(len(self.present))

    @property
    def mean(self) -> float:
        return float(self.present.mean()) if self.n else float("nan")

    @property
    def std(self) -> float:
        return float(self.present.std()) if self.n else float("nan")

    def holds(self, target: float = 0.0, *, above: bool = True) -> bool:
        """The claim "the value is above ``target``" (``above=False``: below) holds over
        these seeds: at least :data:`MIN_SEEDS` seeds, every seed measured, and the mean
        beyond ``target`` by more than twice the seed std.

        >>> seed_stats([4.0, 5.0, 6.0]).holds(3.0)
        True
        >>> seed_stats([4.0, 5.0, 6.0]).holds(4.0)  # 1.0 over the target, std 0.82
        False
        >>> seed_stats([9.0]).holds()  # one seed never holds
        False
        >>> seed_stats([-2.0, -3.0]).holds(above=False)
        True
        """
        if self.n < MIN_SEEDS or self.n != len(self.values):
            return False
        margin = self.mean - target if above else target - self.mean
        return bool(margin > 2 * self.std)

    def text(self, digits: int = 1, *, sign: bool = False) -> str:
        """``mean`` for one seed, ``mean ± std`` for several, ``-`` for none.

        >>> seed_stats([1.0, 2.0]).text(), seed_stats([1.0]).text(sign=True), seed_stats([]).text()
        ('1.5 ± 0.5', '+1.0', '-')
        """
        return summary_text(self.mean, self.std, self.n, digits, sign=sign) if self.n else "-"

    def per_seed(self, digits: int = 1, *, sign: bool = True) -> str:
        """The per-seed values, e.g. ``+1.2, -0.4``.

        >>> seed_stats([1.25, -0.4]).per_seed()
        '+1.2, -0.4'
        """
        f = f"{{:+.{digits}f}}" if sign else f"{{:.{digits}f}}"
        return ", ".join("-" if v is None else f.format(v) for v in self.values)


def summary_text(mean: float, std: float, n: int, digits: int = 1, *, sign: bool = False
                 ) -> str:
    """``mean`` when ``n`` is 1, else ``mean ± std`` (a summary already computed over ``n``
    seeds, as ``results.json`` keeps it).

    >>> summary_text(61.84, 1.27, 3), summary_text(61.84, 0.0, 1)
    ('61.8 ± 1.3', '61.8')
    """
    m = f"{mean:+.{digits}f}" if sign else f"{mean:.{digits}f}"
    return m if n == 1 else f"{m} ± {std:.{digits}f}"


def seed_stats(values: Sequence[float | None] | np.ndarray) -> SeedStats:
    """:class:`SeedStats` of one quantity measured at each seed."""
    return SeedStats(tuple(None if v is None else float(v) for v in values))


def mean_std(values: Sequence[float | None], digits: int = 1, *, sign: bool = False) -> str:
    """:meth:`SeedStats.text` of ``values``: ``mean``, ``mean ± std`` or ``-``."""
    return seed_stats(values).text(digits, sign=sign)
