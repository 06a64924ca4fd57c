"""The text-only baseline of a scored multiple-choice set: each question answered by the
stress test's diagnostic that never saw its fold (grouped k-fold on the set's own unshifted,
unmirrored questions), the same answer text carried to its circular shifts and its mirror.

This is what ``hf-real3d evaluate-3dsrbench`` reports as its text-only row: the set's own
non-visual solvability, measured on the set being scored.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from hf_real3d.answers import normalize_answer
from hf_real3d.debias.items import srbench_items
from hf_real3d.debias.stress import stress_test

__all__ = ["text_only_answers"]


def text_only_answers(rows: Sequence[dict[str, Any]], *, diagnostic: str = "rf",
                      folds: int = 5, seed: int = 0) -> list[str]:
    """The option letter the held-out text-only ``diagnostic`` picks for every row of an
    expanded 3DSRBench set (rows with ``base_qid``, ``flipped``, ``shift``, ``options``,
    ``answer``, ``category``, ``question``). A row whose options lack the picked text gets
    ``""`` (wrong). A set too small for ``folds`` groups raises a ValueError naming it."""
    items = srbench_items([dict(r) for r in rows], "the scored 3DSRBench rows", None)
    groups = len(set(items.groups))
    if groups < folds:
        raise ValueError(f"the scored set has {groups} questions for {folds} folds (a "
                         f"question stays on one side): use {groups} folds or fewer")
    res = stress_test(items, diagnostic=diagnostic, folds=folds, seed=seed)
    picked = {str(i): p for i, p in zip(items.ids, res.predicted)}
    letters = []
    for r in rows:
        text = picked.get(str(r["base_qid"]))
        opts = [normalize_answer(str(o)) for o in r["options"]]
        letters.append("ABCD"[opts.index(text)] if text in opts else "")
    return letters
