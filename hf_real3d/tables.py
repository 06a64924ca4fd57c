"""The one Markdown table writer (every report, card and README table goes through it) and the
one figure writer (every report's PNG)."""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from typing import Any

from hf_real3d._io import atomic_path

__all__ = ["fmt", "markdown_table", "save_png"]


def fmt(v: Any, digits: int = 1, missing: str = "-") -> str:
    """A cell: floats with ``digits`` decimals, ``missing`` for None and NaN, else ``str``.

    >>> fmt(3.14159), fmt(None), fmt(float("nan"), missing=""), fmt("a|b")
    ('3.1', '-', '', 'a|b')
    """
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return missing
    if isinstance(v, float):
        return f"{v:.{digits}f}"
    return str(v)


def markdown_table(header: Sequence[str], rows: Sequence[Sequence[Any]], *, digits: int = 1,
                   missing: str = "-", right: Sequence[int] = ()) -> str:
    """A GitHub Markdown table. Cells go through :func:`fmt` (strings stay as they are);
    the columns whose index is in ``right`` are right-aligned.

    >>> print(markdown_table(["model", "EM"], [["a", 41.26], ["b", None]], right=[1]))
    | model | EM |
    |---|---:|
    | a | 41.3 |
    | b | - |
    """
    header = list(header)
    bad = [i for i, r in enumerate(rows) if len(r) != len(header)]
    if bad:
        raise ValueError(f"markdown_table: row {bad[0]} has {len(rows[bad[0]])} cells for "
                         f"{len(header)} columns ({header})")
    lines = ["| " + " | ".join(header) + " |",
             "|" + "|".join("---:" if i in right else "---" for i in range(len(header))) + "|"]
    lines += ["| " + " | ".join(fmt(c, digits, missing) for c in r) + " |" for r in rows]
    return "\n".join(lines)


def save_png(fig, path: str | os.PathLike, dpi: int = 110) -> None:
    """Write a matplotlib figure as PNG, atomically (a reader never sees half a file)."""
    with atomic_path(path) as tmp:
        fig.savefig(tmp, format="png", dpi=dpi, bbox_inches="tight")
