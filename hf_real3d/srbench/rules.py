"""3DSRBench as the field scores it: the three scorers in use, each by name.

A *rule* is a scorer's answer extraction plus its aggregation. Three are in use, and each
is offered here exactly as that scorer applies it:

``"vlmevalkit"`` (the default)
    VLMEvalKit's ``_3DSRBench.evaluate`` with exact matching. Extraction is its
    ``can_infer``: an option letter standing alone among the last words, "the answer is X",
    or else exactly one option's text inside a short answer; anything else is wrong.
    Aggregation, four settings, each reported Overall and per category (per
    ``l2-category`` first when the table has one), as fractions:

    * ``vanilla``: the mean hit over every row (all circular orders, original and mirrored);
    * ``flip_eval``: each original row times its ``-flip`` twin (``qid.replace('-flip', '')``),
      one pair per circular order, averaged over the original rows;
    * ``circ_eval``: groups ``qid[:8]`` (originals) and ``qid[:13]`` (mirrored), averaged
      over the groups' unshifted rows: a mirrored item is a circular group of its own;
    * ``flip_circ_eval``: groups ``qid[:8]`` (every order of the original and the mirror).

``"authors"``
    The 3DSRBench authors' ``compute_3dsrbench_results.py``, which the paper's tables
    report. It reads VLMEvalKit's result table, so its hits are VLMEvalKit's (its judge's
    when it had one, exact matching otherwise). A trailing ``-N`` is stripped from the qid,
    a group's hits are multiplied, and the overall figure, each type's (height, location,
    orientation, multi_object) and each category's are means over groups, printed as
    percentages rounded to one decimal. Its groups are ``circ_eval``'s: the paper's headline
    is CircularEval over original and mirrored images alike. Its ``random`` row draws a
    fresh guess per row (1/2 with two options, 1/4 with four).

``"lmms_eval"``
    lmms-eval's ``3dsrbench`` / ``3dsrbench_circular`` tasks. Extraction is a chain of
    regular expressions ending in "any standalone A-D". ``vanilla_accuracy``,
    ``flip_accuracy``, ``circular_accuracy`` and ``flip_circular_accuracy`` group as
    VLMEvalKit does but average over groups; ``height_accuracy`` ... and the 12
    ``<category>_accuracy`` are row means (vanilla) over that type's rows; fractions, an
    empty selection scores 0.0.

On qids of the real form (an 8-character base, ``-1..-3`` circular orders, ``-flip``,
``-flip-N``) with every group complete, the three aggregations give the same four
figures; they differ in extraction, in what they report per type, and in units. The
library's own tables (``metrics.json``, reports, the explorer) hold the four settings in
percent under the chosen rule's extraction, and each rule's figures as that scorer prints
them under ``"official"``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from hf_real3d.scoring import MetricInputError, first_rows
from hf_real3d.srbench.format import CATEGORIES, GROUPS, QID_FORM

__all__ = ["RULES", "DEFAULT_RULE", "SETTINGS", "QID_FORM", "check_rule", "check_qids",
           "vlmevalkit_choice", "lmms_eval_choice", "rule_hits", "setting_keys", "setting_codes",
           "settings_table", "vlmevalkit_settings", "lmms_eval_metrics", "authors_results",
           "authors_random", "official_figures"]

RULES = ("vlmevalkit", "authors", "lmms_eval")
DEFAULT_RULE = "vlmevalkit"
#: the library's names of the four settings, with VLMEvalKit's and lmms-eval's
SETTINGS = {"vanilla": ("vanilla", "vanilla_accuracy"),
            "flip": ("flip_eval", "flip_accuracy"),
            "circular": ("circ_eval", "circular_accuracy"),
            "flip_circular": ("flip_circ_eval", "flip_circular_accuracy")}


def check_rule(rule: str) -> str:
    """Return ``rule`` when it is one of :data:`RULES`; a ValueError naming them otherwise."""
    if rule not in RULES:
        raise ValueError(f"Expected a 3DSRBench rule in {list(RULES)} but got {rule!r}")
    return rule


# --- extraction ------------------------------------------------------------------------------

_VLM_REFUSALS = ("Sorry, I can't help with images of people yet.", "I can't process this file.",
                 "I'm sorry, but without the image provided", "Cannot determine the answer")
_VLM_SPACES = str.maketrans({c: " " for c in ".()[],:;!*#{}"})
_VLM_STATED = re.compile(r"(?i)(?:correct\s+)?answer\s+is\s+\**([ABCD])\**")


def _vlm_letter(answer: str, options: Mapping[str, str]) -> str | None:
    if "Failed to obtain answer via API" in answer:
        return None
    if any(err in answer for err in _VLM_REFUSALS):
        return "Z"
    words = answer.translate(_VLM_SPACES).split()
    named = [c for c in options if c in words]
    if len(named) == 1:
        # the one letter counts when it is among the last four words
        if words.index(named[0]) > len(words) - 5:
            return named[0]
    elif not named and "Z" in words:
        return "Z"
    m = _VLM_STATED.search(answer)
    if m and m.group(1).upper() in options:
        return m.group(1).upper()
    return None


def _vlm_text(answer: str, options: Mapping[str, str]) -> str | None:
    low = answer.lower()
    if len(low) > 2 * sum(len(str(v)) for v in options.values()):
        return None
    found = [k for k, v in options.items() if str(v).lower() in low]
    return found[0] if len(found) == 1 else None


def vlmevalkit_choice(prediction: Any, options: Mapping[str, str]) -> str | None:
    """The letter VLMEvalKit's exact matching reads (``"Z"``: a refusal or an explicit Z;
    None: nothing), with ``options`` the row's ``{letter: text}`` for its non-empty options.

    Example:

        >>> opts = {"A": "left", "B": "right"}
        >>> [vlmevalkit_choice(p, opts) for p in ("B", "(A) left", "right", "A or B",
        ...                                       "It is on the right.", "I think B is wrong")]
        ['B', 'A', 'B', None, None, 'B']
    """
    answer = str(prediction)
    return _vlm_letter(answer, options) or _vlm_text(answer, options)


_LMMS_PATTERNS = [re.compile(p) for p in (
    r"^([A-D])[\.\s\)]", r"^([A-D])$", r"[Aa]nswer[:\s]+([A-D])", r"[Tt]he answer is[:\s]+([A-D])",
    r"[Mm]y answer is[:\s]+([A-D])", r"\(([A-D])\)", r"([A-D])\.", r"\b([A-D])\b")]


def lmms_eval_choice(prediction: Any) -> str | None:
    """The letter lmms-eval's 3DSRBench tasks read from a reply (None: nothing); the
    options are not consulted.

    Example:

        >>> [lmms_eval_choice(p) for p in ("B", "B) right", "Answer: C", "I pick (A)",
        ...                                "on the right", "A or B")]
        ['B', 'B', 'C', 'A', None, 'A']
    """
    text = str(prediction).strip() if prediction is not None else ""
    if not text:
        return None
    for pat in _LMMS_PATTERNS:
        m = pat.search(text)
        if m:
            return m.group(1).upper()
    return None


def rule_hits(rule: str, predictions: Sequence[Any], answers: Sequence[str],
              options: Sequence[Sequence[str]] | None) -> tuple[np.ndarray, int]:
    """Per row, 1 when the rule's extraction of the prediction is the answer letter; and
    how many predictions it could not read (VLMEvalKit's ``Z`` counts as unread).
    ``options``: each row's option texts in order (not needed by ``lmms_eval``)."""
    check_rule(rule)
    if len(predictions) != len(answers):
        raise MetricInputError(f"Expected one prediction per row ({len(answers)}) but got "
                               f"{len(predictions)}")
    n = len(predictions)
    # answers repeat heavily ("A", "(B)"): each distinct (answer, options) is read once
    pcodes, puniq = pd.factorize(np.asarray([p if isinstance(p, str) else str(p)
                                             for p in predictions], dtype=object))
    if rule == "lmms_eval":
        codes, uniq = pcodes, [(p, None) for p in puniq]
    else:
        if options is None:
            raise MetricInputError(f"rule {rule!r} reads option texts: give each row's options")
        try:
            joined = ["\x1f".join(o) for o in options]
        except TypeError:  # an option that is not a string (a number read from a table)
            joined = ["\x1f".join(map(str, o)) for o in options]
        ocodes, ouniq = pd.factorize(np.asarray(joined, dtype=object))
        codes, pairs = pd.factorize(pcodes.astype(np.int64) * (len(ouniq) + 1) + ocodes)
        first = first_rows(codes, len(pairs)) if n else np.zeros(0, np.int64)
        uniq = [(puniq[pcodes[i]], options[i]) for i in first.tolist()]
    read = np.array([lmms_eval_choice(p) if rule == "lmms_eval" else vlmevalkit_choice(
        p, {"ABCD"[i]: o for i, o in enumerate(opts) if o not in (None, "")})
        for p, opts in uniq] + [None], dtype=object)
    got = read[codes] if n else read[:0]
    unread = np.array([g is None or g == "Z" for g in read[:-1]] + [False], dtype=bool)[codes] \
        if n else np.zeros(0, bool)
    hits = (got == np.asarray(answers, dtype=object)).astype(np.int64)
    return hits, int(unread.sum())


# --- qids and the four settings ----------------------------------------------------------------

def check_qids(qids: Sequence[str], categories: Sequence[str] | None = None, *,
               where: str = "predictions") -> None:
    """Refuse qids the field's scorers would group wrongly: every qid of the real form, no
    repeats, every flipped row with its original, every group with its unshifted row
    (VLMEvalKit stops on a KeyError otherwise), one category per question."""
    q = [str(x) for x in qids]
    bad = next((i for i, x in enumerate(q) if not QID_FORM.match(x)), None)
    if bad is not None:
        raise MetricInputError(
            f"{where} row {bad}: qid {q[bad]!r} is not of 3DSRBench's form (8 capitals or "
            "digits, then optionally -flip and -1..-3); VLMEvalKit, lmms-eval and the authors' "
            "script group by qid[:8] and a trailing -N, so rename it")
    seen: dict[str, int] = {}
    for i, x in enumerate(q):
        if x in seen:
            raise MetricInputError(f"{where} row {i}: qid {x!r} repeats row {seen[x]}")
        seen[x] = i
    for i, x in enumerate(q):
        if "-flip" in x and x.replace("-flip", "") not in seen:
            raise MetricInputError(f"{where} row {i}: flipped qid {x!r} has no original "
                                   f"{x.replace('-flip', '')!r}; add it or drop the row")
        head = x[:13] if "-flip" in x else x[:8]
        if head not in seen:
            raise MetricInputError(f"{where} row {i}: qid {x!r} has no unshifted row {head!r} "
                                   "in its circular group; add it or drop the group")
    if categories is not None:
        cat = [str(c) for c in categories]
        first: dict[str, int] = {}
        for i, x in enumerate(q):
            j = first.setdefault(x[:8], i)
            if cat[j] != cat[i]:
                raise MetricInputError(f"{where} row {i}: qid {x!r} has category {cat[i]!r} but "
                                       f"row {j} of the same question has {cat[j]!r}")


def setting_keys(qids: Sequence[str]) -> dict[str, np.ndarray]:
    """Each row's group key under each setting (VLMEvalKit's and lmms-eval's keys)."""
    q = np.asarray([str(x) for x in qids], dtype=object)
    flip = np.array(["-flip" in x for x in q], dtype=bool)
    return {"vanilla": q,
            "flip": np.array([x.replace("-flip", "") for x in q], dtype=object),
            "circular": np.array([x[:13] if f else x[:8] for x, f in zip(q, flip)], dtype=object),
            "flip_circular": np.array([x[:8] for x in q], dtype=object)}


def _group_products(keys: np.ndarray, hits: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    codes, uniq = pd.factorize(keys)
    wrong = np.bincount(codes, weights=(hits == 0).astype(float), minlength=len(uniq))
    return (wrong == 0).astype(np.int64), codes


def _binary_hits(hits: Sequence[Any], where: str) -> np.ndarray:
    h = np.asarray(hits, dtype=float)
    bad = np.flatnonzero(~np.isin(h, (0.0, 1.0)))
    if len(bad):
        raise MetricInputError(f"{where} row {int(bad[0])}: hit {h[int(bad[0])]:g} is not 0 or 1 "
                               "(the authors' script asserts it)")
    return h.astype(np.int64)


def setting_codes(qids: Sequence[str]) -> dict[str, np.ndarray]:
    """Group codes per setting for qids of the real form (what :func:`check_qids` admits):
    the base is ``qid[:8]``, ``-flip`` marks the mirror, a trailing ``-N`` the order."""
    q = [str(x) for x in qids]
    base, _ = pd.factorize(np.asarray([x[:8] for x in q], dtype=object))
    base = base.astype(np.int64)
    flip = np.array(["-flip" in x for x in q], dtype=bool)
    pair, _ = pd.factorize(np.asarray([x.replace("-flip", "") for x in q], dtype=object))
    return {"vanilla": np.arange(len(q), dtype=np.int64),
            "flip": pair.astype(np.int64),
            "circular": pd.factorize(base * 2 + flip)[0].astype(np.int64),
            "flip_circular": pd.factorize(base)[0].astype(np.int64)}


def settings_table(qids: Sequence[str], hits: Sequence[int], categories: Sequence[str]
                   ) -> dict[str, dict[str, Any]]:
    """The four settings in percent: overall, per group (height ...) and per category, each
    a mean over the setting's groups (a group is right when all its rows are). On qids that
    :func:`check_qids` admits this equals every rule's four figures x 100."""
    h = _binary_hits(hits, "hits")
    ccodes, cuniq = pd.factorize(np.asarray([str(c) for c in categories], dtype=object))
    cgroup = np.array([CATEGORIES.get(c, "other") for c in cuniq], dtype=object)
    out: dict[str, dict[str, Any]] = {}
    for name, codes in setting_codes(qids).items():
        if not len(codes):
            continue
        n = int(codes.max()) + 1
        ok = np.bincount(codes, weights=(h == 0), minlength=n) == 0
        gc = ccodes[first_rows(codes, n)]
        per_cat = np.bincount(gc, weights=ok, minlength=len(cuniq))
        cnt_cat = np.bincount(gc, minlength=len(cuniq))
        out[name] = {
            "overall": float(ok.mean() * 100),
            "per_group": {g: float(per_cat[cgroup == g].sum() / cnt_cat[cgroup == g].sum() * 100)
                          for g in GROUPS if cnt_cat[cgroup == g].sum()},
            "per_category": {c: float(per_cat[i] / cnt_cat[i] * 100)
                             for i, c in sorted(enumerate(cuniq), key=lambda t: t[1])
                             if cnt_cat[i]},
            "groups": n,
        }
    return out


def vlmevalkit_settings(qids: Sequence[str], hits: Sequence[int], categories: Sequence[str],
                        l2_categories: Sequence[str] | None = None
                        ) -> dict[str, dict[str, float]]:
    """VLMEvalKit's four settings as it prints them: ``{setting: {"Overall": fraction,
    <l2-category>..., <category>...}}``, each a mean over the setting's head rows (the
    original rows for ``flip_eval``, the unshifted rows for the circular settings).

    Example:

        >>> qids = ["AAAAAAAA", "AAAAAAAA-1", "AAAAAAAA-flip", "AAAAAAAA-flip-1"]
        >>> s = vlmevalkit_settings(qids, [1, 1, 1, 0], ["height_higher"] * 4)
        >>> [s[k]["Overall"] for k in ("vanilla", "flip_eval", "circ_eval", "flip_circ_eval")]
        [0.75, 0.5, 0.5, 0.0]
    """
    q = np.asarray([str(x) for x in qids], dtype=object)
    h = _binary_hits(hits, "hits")
    cats = np.asarray([str(c) for c in categories], dtype=object)
    l2 = None if l2_categories is None else np.asarray([str(c) for c in l2_categories], object)
    keys = setting_keys(q)
    qset = set(q.tolist())

    def report(mask: np.ndarray, values: np.ndarray) -> dict[str, float]:
        res = {"Overall": float(np.mean(values[mask]))}
        for col in (l2, cats):
            if col is None:
                continue
            for ab in sorted(set(col[mask].tolist())):
                res[ab] = float(np.mean(values[mask & (col == ab)]))
        return res

    out = {"vanilla": report(np.ones(len(q), bool), h.astype(float))}
    for ours, (theirs, _) in list(SETTINGS.items())[1:]:
        k = keys[ours]
        missing = sorted(set(k.tolist()) - qset)
        if missing:
            raise MetricInputError(f"{theirs}: no row with qid {missing[0]!r}, which VLMEvalKit "
                                   "needs as the group's head (it stops on a KeyError)")
        ok, codes = _group_products(k, h)
        head = np.isin(q, np.asarray(list(set(k.tolist())), dtype=object))
        out[theirs] = report(head, ok[codes].astype(float))
    return out


_LMMS_MAIN = ("height", "location", "orientation", "multi_object")


def lmms_eval_metrics(qids: Sequence[str], scores: Sequence[float], categories: Sequence[str]
                      ) -> dict[str, float]:
    """lmms-eval's 3DSRBench aggregations as it reports them (fractions; 0.0 when a
    selection is empty): the four settings, the 4 types' and the 12 categories' row means.

    Example:

        >>> qids = ["AAAAAAAA", "AAAAAAAA-1", "AAAAAAAA-flip", "AAAAAAAA-flip-1"]
        >>> m = lmms_eval_metrics(qids, [1.0, 1.0, 1.0, 0.0], ["height_higher"] * 4)
        >>> m["circular_accuracy"], m["height_accuracy"], m["location_accuracy"]
        (0.5, 0.75, 0.0)
    """
    s = np.asarray(scores, dtype=float)
    cats = np.asarray([str(c) for c in categories], dtype=object)
    main = np.asarray([CATEGORIES.get(c, "other") for c in cats], dtype=object)
    out: dict[str, float] = {"vanilla_accuracy": float(s.sum() / len(s)) if len(s) else 0.0}
    for ours, (_, theirs) in list(SETTINGS.items())[1:]:
        if not len(s):
            out[theirs] = 0.0
            continue
        codes, uniq = pd.factorize(setting_keys(qids)[ours])
        prod = np.ones(len(uniq))
        np.multiply.at(prod, codes, s)
        out[theirs] = float((prod == 1.0).sum() / len(uniq))
    for g in _LMMS_MAIN:
        sel = s[main == g]
        out[f"{g}_accuracy"] = float(sel.sum() / len(sel)) if len(sel) else 0.0
    for c in CATEGORIES:
        sel = s[cats == c]
        out[f"{c}_accuracy"] = float(sel.sum() / len(sel)) if len(sel) else 0.0
    return out


def _authors_groups(qids: Sequence[str]) -> np.ndarray:
    out = []
    for i, x in enumerate(str(q) for q in qids):
        if len(x) < 2:
            raise MetricInputError(f"row {i}: qid {x!r} is too short for the authors' script")
        out.append(x[:-2] if x[-2] == "-" else x)
    return np.asarray(out, dtype=object)


def _authors_row(ok: np.ndarray, gcat: np.ndarray) -> dict[str, float | None]:
    def pct(v: np.ndarray) -> float | None:
        return float(np.round(np.mean(v) * 100, decimals=1)) if len(v) else None

    row = {"overall": pct(ok)}
    for t, subs in GROUPS.items():
        row[t] = pct(ok[np.isin(gcat, subs)])
    for t in (c for subs in GROUPS.values() for c in subs):
        row[t] = pct(ok[gcat == t])
    return row


def authors_results(qids: Sequence[str], hits: Sequence[int], categories: Sequence[str]
                    ) -> dict[str, float | None]:
    """The authors' results row: overall, the 4 types, the 12 categories, in percent
    rounded to one decimal (None where the script prints nan: a type with no group), in the
    script's column order.

    Example:

        >>> qids = ["AAAAAAAA", "AAAAAAAA-1", "AAAAAAAA-flip", "AAAAAAAA-flip-1"]
        >>> authors_results(qids, [1, 1, 1, 0], ["height_higher"] * 4)["overall"]
        50.0
    """
    h = _binary_hits(hits, "hits")
    cats = np.asarray([str(c) for c in categories], dtype=object)
    ok, codes = _group_products(_authors_groups(qids), h)
    return _authors_row(ok.astype(float), cats[first_rows(codes, len(ok))])


def authors_random(qids: Sequence[str], n_options: Sequence[int], categories: Sequence[str], *,
                   seed: int = 0) -> dict[str, float | None]:
    """The authors' ``random`` row: a fresh uniform guess per row (right with probability
    1/2 for two options, 1/4 otherwise), grouped and rounded as :func:`authors_results`;
    one draw from ``seed``. The script draws from NumPy's global state, unseeded."""
    rng = np.random.default_rng(seed)
    hits = [int(rng.integers(2 if n == 2 else 4) == 0) for n in n_options]
    return authors_results(qids, hits, categories)


def official_figures(rule: str, qids: Sequence[str], hits: Sequence[int],
                     categories: Sequence[str], l2_categories: Sequence[str] | None = None
                     ) -> dict[str, Any]:
    """What the rule's scorer prints for these hits, in its own names and units."""
    check_rule(rule)
    if rule == "vlmevalkit":
        return vlmevalkit_settings(qids, hits, categories, l2_categories)
    if rule == "lmms_eval":
        return lmms_eval_metrics(qids, np.asarray(hits, dtype=float), categories)
    return authors_results(qids, hits, categories)
