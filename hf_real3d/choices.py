"""Multiple choice: free-form answer -> option letter, circular option shifts, flips.

:func:`extract_choice` applies rules in order and stops at the first that decides:

1. the whole answer is one option letter (``"B"``, ``"(B)"``, ``"B."``, ``"Option B"``);
2. an explicit statement: ``"the answer is B"``, ``"Answer: (B)"``;
3. exactly one distinct option letter standing alone in the last 40 characters;
4. exactly one option whose text appears in the answer (whole words, case-folded);
   when one option's text contains another's (``"left"`` in ``"left of the chair"``),
   the longer wins.

If no rule decides, an optional ``judge`` (any local ``transformers`` text-generation
pipeline or a callable ``str -> str``) is asked, and its reply goes through rules 1-3.
An answer nothing can parse is returned as ``None``: it scores as wrong and is counted as
unparsed, never replaced by a random pick. 3DSRBench is scored with the field's own readers
instead (:mod:`hf_real3d.srbench.rules`: VLMEvalKit's, lmms-eval's), so its figures equal
theirs; this reader (with its optional judge) is for answers those rules cannot read.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from hf_real3d.scoring import first_rows

__all__ = [
    "LETTERS",
    "extract_choice",
    "extract_choices",
    "ChoiceResult",
    "circular_shifts",
    "swap_left_right",
    "judge_prompt",
]

LETTERS = "ABCDEFGH"
_LR = {"left": "right", "right": "left", "leftmost": "rightmost", "rightmost": "leftmost",
       "Left": "Right", "Right": "Left", "LEFT": "RIGHT", "RIGHT": "LEFT"}
_LR_RE = re.compile(r"\b(" + "|".join(sorted(_LR, key=len, reverse=True)) + r")\b")


def _letters(n: int) -> str:
    if not 1 <= n <= len(LETTERS):
        raise ValueError(f"Expected 1 to {len(LETTERS)} options but got {n}")
    return LETTERS[:n]


def _rule_letter(text: str, letters: str) -> str | None:
    t = text.strip()
    m = re.fullmatch(rf"(?:option\s*)?[\(\[]?([{letters}])[\)\]]?[\.:]?", t, flags=re.I)
    if m and (len(t) <= 2 or t[:1] in "([" or t.lower().startswith("option")
              or m.group(1).isupper()):
        return m.group(1).upper()
    m = re.search(rf"answer\s*(?:is|:)?\s*:?\s*(?:option\s*)?[\(\[]?([{letters}])\b[\)\]]?",
                  t, flags=re.I)
    if m and (m.group(1).isupper() or t[m.start(1) - 1: m.start(1)] in "(["):
        return m.group(1).upper()
    tail = t[-40:]
    found = set(re.findall(rf"(?<![A-Za-z'])([{letters}])(?![A-Za-z'])", tail))
    if len(found) == 1:
        return found.pop()
    return None


def _rule_text(text: str, options: Sequence[str], letters: str) -> str | None:
    low = text.lower()
    hits = [i for i, o in enumerate(options)
            if o.strip() and re.search(rf"(?<!\w){re.escape(o.strip().lower())}(?!\w)", low)]
    if len(hits) > 1:  # drop options contained in a longer hit
        hits = [i for i in hits if not any(
            j != i and options[i].strip().lower() in options[j].strip().lower() for j in hits)]
    return letters[hits[0]] if len(hits) == 1 else None


def judge_prompt(question: str, options: Sequence[str], answer: str) -> str:
    """The prompt given to a judge model."""
    opts = "\n".join(f"{letter}. {o}" for letter, o in zip(_letters(len(options)), options))
    return (
        "Which option does the answer choose? Reply with the option letter only, or Z if it "
        f"chooses none.\nQuestion: {question}\nOptions:\n{opts}\nAnswer: {answer}\nLetter:"
    )


def _call_judge(judge: Any, prompt: str) -> str:
    if callable(judge) and not hasattr(judge, "task"):
        return str(judge(prompt))
    out = judge(prompt, max_new_tokens=4, do_sample=False, return_full_text=False)
    return str(out[0]["generated_text"]) if out else ""


@dataclass
class ChoiceResult:
    """The option letter read from an answer (None: unreadable) and the rule that read it:
    ``letter``, ``text``, ``judge`` or ``unparsed``."""
    letter: str | None
    rule: str  # "letter", "text", "judge" or "unparsed"


def extract_choice(
    answer: str,
    options: Sequence[str],
    *,
    question: str = "",
    judge: Callable[[str], str] | Any | None = None,
) -> ChoiceResult:
    """The option letter an answer chooses, and which rule decided (see module doc)."""
    if not isinstance(answer, str):
        raise TypeError(f"Expected a string answer but got {type(answer).__name__}: {answer!r}")
    letters = _letters(len(options))
    got = _rule_letter(answer, letters)
    if got:
        return ChoiceResult(got, "letter")
    got = _rule_text(answer, options, letters)
    if got:
        return ChoiceResult(got, "text")
    if judge is not None:
        reply = _call_judge(judge, judge_prompt(question, options, answer))
        got = _rule_letter(reply, letters)
        if got:
            return ChoiceResult(got, "judge")
    return ChoiceResult(None, "unparsed")


def extract_choices(
    answers: Sequence[str],
    options: Sequence[Sequence[str]],
    *,
    questions: Sequence[str] | None = None,
    judge: Any | None = None,
) -> tuple[list[str | None], dict[str, int]]:
    """Vector form: letters (None = unparsed) and how many each rule decided.

    Answers repeat heavily (``"A"``, ``"(B)"``), so each distinct (answer, option count) is
    parsed by the letter rules once; only answers those rules cannot decide are matched
    against their row's option texts (and then the judge).
    """
    if len(answers) != len(options):
        raise ValueError(f"Expected as many option lists as answers but got {len(options)} "
                         f"for {len(answers)}")
    n = len(answers)
    arr = np.asarray(answers, dtype=object) if n else np.zeros(0, dtype=object)
    if n and pd.api.types.infer_dtype(arr, skipna=False) != "string":
        i = next(i for i, a in enumerate(answers) if not isinstance(a, str))
        raise TypeError(f"answers[{i}] is {type(answers[i]).__name__} {answers[i]!r}; "
                        "expected a string")
    n_opts = np.fromiter(map(len, options), np.int64, count=n)
    a_codes, a_uniq = pd.factorize(arr)
    key = a_codes.astype(np.int64) * (len(LETTERS) + 1) + n_opts
    kcodes, ukey = pd.factorize(key)  # hashing, not sorting: first-seen order
    u_letter = np.array([_rule_letter(a_uniq[k // (len(LETTERS) + 1)],
                                      _letters(int(k % (len(LETTERS) + 1))))
                         for k in ukey.tolist()], dtype=object)
    letters = u_letter[kcodes] if n else np.zeros(0, dtype=object)
    rest = np.flatnonzero(pd.isna(letters))
    stats = {"letter": n - len(rest), "text": 0, "judge": 0, "unparsed": 0}
    if judge is not None:  # the judge sees each row's own question
        for i in rest.tolist():
            r = extract_choice(answers[i], tuple(options[i]),
                               question=questions[i] if questions else "", judge=judge)
            letters[i] = r.letter
            stats[r.rule] += 1
    elif len(rest):
        # the option-text rule once per distinct (answer, options) among the undecided rows
        opt_codes, opt_uniq = pd.factorize(np.asarray(
            ["\x1f".join(options[i]) for i in rest.tolist()], dtype=object))
        pair = a_codes[rest].astype(np.int64) * (len(opt_uniq) + 1) + opt_codes
        pcodes, upair = pd.factorize(pair)
        res = [extract_choice(a_uniq[p // (len(opt_uniq) + 1)],
                              tuple(options[int(rest[f])]))
               for p, f in zip(upair.tolist(), first_rows(pcodes, len(upair)).tolist())]
        letters[rest] = np.array([r.letter for r in res], dtype=object)[pcodes]
        per_pair = np.bincount(pcodes, minlength=len(upair))
        for r, c in zip(res, per_pair.tolist()):
            stats[r.rule] += c
    return letters.tolist(), stats


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
