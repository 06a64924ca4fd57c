"""Multiple choice: circular option shifts and the left/right swap of a mirrored item.

3DSRBench answers are read with the field's own readers (:mod:`hf_real3d.srbench.rules`:
VLMEvalKit's, lmms-eval's, the authors'), so its figures equal theirs; this module builds
the items those readers score: every circular order of an item's options
(:func:`circular_shifts`) and a mirrored question's words (:func:`swap_left_right`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

__all__ = ["LETTERS", "circular_shifts", "swap_left_right"]

LETTERS = "ABCDEFGH"
_LR = {"left": "right", "right": "left", "leftmost": "rightmost", "rightmost": "leftmost",
       "Left": "Right", "Right": "Left", "LEFT": "RIGHT", "RIGHT": "LEFT"}
_LR_RE = re.compile(r"\b(" + "|".join(sorted(_LR, key=len, reverse=True)) + r")\b")


def _letters(n: int) -> str:
    if not 1 <= n <= len(LETTERS):
        raise ValueError(f"Expected 1 to {len(LETTERS)} options but got {n}")
    return LETTERS[:n]


def circular_shifts(options: Sequence[str], answer: str) -> list[tuple[list[str], str]]:
    """All ``n`` circular shifts of the options with the answer letter moved along.

    Shift ``k`` puts original option ``(i + k) % n`` at position ``i``; shift 0 is the
    original order.
    """
    letters = _letters(len(options))
    if answer not in letters:
        raise ValueError(f"answer letter {answer!r} is not among the options {list(letters)}")
    n, a = len(options), letters.index(answer)
    return [([options[(i + k) % n] for i in range(n)], letters[(a - k) % n]) for k in range(n)]


def swap_left_right(text: str) -> str:
    """Swap the words left <-> right (and leftmost <-> rightmost), keeping case."""
    return _LR_RE.sub(lambda m: _LR[m.group(0)], text)
