"""Answer normalisation and exact-match (EM) / refined-EM matching.

Normalisation follows LEO's ``clean_answer`` (also used by the Real-3DQA scripts), step by
step: lower-case; trim and squeeze spaces; drop characters outside ``[a-zA-Z0-9,'\\s\\-:]``;
fix typos (``letf``/``let`` -> left, ``rigth``/``rght`` -> right, ``tehre`` -> there,
``behine`` -> behind, ``chai`` -> chair, ``wasing`` -> washing, ``waslked`` -> walked,
``oclock`` -> o'clock, ``tv`` -> ``TV``); digits 0-20 and 23 -> words and ``none`` -> ``zero``;
strip a digit glued to a word (``mat2`` -> ``mat``); drop the articles a/an/the before a word;
``backwards`` -> ``backward``.

Matching, for a normalised prediction ``p`` and references ``g_1..g_m``:

* **EM**: ``p`` equals some ``g_i``.
* **refined EM** (default, corrected rule): EM, or ``p`` non-empty and, with spaces removed,
  ``p`` is contained in some ``g_i`` or some ``g_i`` is contained in ``p``.
* ``leo_compatible=True`` reproduces the published scripts exactly: references are scanned
  in order and the first one that is equal *or* a substring match decides, so an exact
  match to a later reference can be scored as refined-only; and an empty prediction is a
  substring of every reference, so it counts as refined-correct.

A list of candidate predictions scores as the best candidate (EM first, then refined), as
the official scripts do for beam/best-of-n outputs.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

__all__ = ["normalize_answer", "match", "match_one"]

_RULES: list[tuple[re.Pattern, str]] = [
    (re.compile(p), r)
    for p, r in [
        (r"[ ]+$", ""),
        (r"^[ ]+", ""),
        (r" {2,}", " "),
        (r"\.[ ]{2,}", ". "),
        (r"[^a-zA-Z0-9,'\s\-:]+", ""),
        (r"ç", "c"),
        ("\u2019", "'"),
        (r"\bletf\b", "left"),
        (r"\blet\b", "left"),
        (r"\btehre\b", "there"),
        (r"\brigth\b", "right"),
        (r"\brght\b", "right"),
        (r"\bbehine\b", "behind"),
        (r"\btv\b", "TV"),
        (r"\bchai\b", "chair"),
        (r"\bwasing\b", "washing"),
        (r"\bwaslked\b", "walked"),
        (r"\boclock\b", "o'clock"),
        (r"\bo'[ ]+clock\b", "o'clock"),
        (r"\b0\b", "zero"),
        (r"\bnone\b", "zero"),
    ]
    + [
        (rf"\b{i}\b", w)
        for i, w in enumerate(
            "zero one two three four five six seven eight nine ten eleven twelve thirteen "
            "fourteen fifteen sixteen seventeen eighteen nineteen twenty".split()
        )
        if i > 0
    ]
    + [
        (r"\b23\b", "twenty-three"),
        (r"\b([a-zA-Z]+)([0-9])\b", r"\g<1>"),
        (r"\ba\b ([a-zA-Z]+)", r"\g<1>"),
        (r"\ban\b ([a-zA-Z]+)", r"\g<1>"),
        (r"\bthe\b ([a-zA-Z]+)", r"\g<1>"),
        (r"\bbackwards\b", "backward"),
    ]
]


def normalize_answer(text: str) -> str:
    """LEO / Real-3DQA answer normalisation (see the module docstring).

    >>> normalize_answer("The Chair.")
    'chair'
    """
    if not isinstance(text, str):
        raise TypeError(f"Expected a string answer but got {type(text).__name__}: {text!r}")
    text = text.lower()
    for pat, rep in _RULES:
        text = pat.sub(rep, text)
    return text


def _squash(s: str) -> str:
    return "".join(s.split())


def match_one(pred: str, refs: Sequence[str], *, leo_compatible: bool = False) -> tuple[bool, bool]:
    """(EM, refined EM) of one *normalised* prediction against normalised references."""
    if leo_compatible:
        p = _squash(pred)
        for g in refs:
            if pred == g:
                return True, True
            gs = _squash(g)
            if p in gs or gs in p:
                return False, True
        return False, False
    if pred in refs:
        return True, True
    if not pred:
        return False, False
    p = _squash(pred)
    return False, any(p in (gs := _squash(g)) or (gs and gs in p) for g in refs)


def match(prediction: str | Sequence[str], references: Sequence[str], *,
          leo_compatible: bool = False) -> tuple[bool, bool]:
    """(EM, refined EM) of a raw prediction (or list of candidates) against references."""
    cands = [prediction] if isinstance(prediction, str) else list(prediction)
    refs = [normalize_answer(r) for r in references]
    best = (False, False)
    for c in cands:
        em, ref = match_one(normalize_answer(c), refs, leo_compatible=leo_compatible)
        if (em, ref) > best:
            best = (em, ref)
    return best
