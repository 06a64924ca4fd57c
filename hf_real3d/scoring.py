"""Pure, vectorised metric functions: EM / refined EM, VRS, CircularEval, FlipEval.

All functions take arrays or lists and return plain dicts of floats (percentages, 0-100).
Group keys are always explicit inputs (``group_ids``), never arithmetic on indices.

Speed: answers repeat a lot (SQA3D's 3,519 test answers have 403 distinct values), so
:func:`answer_correctness` normalises each *distinct* string once and matches each distinct
(prediction, reference) pair once, then maps results back with numpy indexing.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from itertools import chain
from typing import Any

import numpy as np
import pandas as pd

from hf_real3d.answers import normalize_answer

__all__ = [
    "expected_p_at_least",
    "degenerate_predictions",
    "degenerate_counts",
    "MetricInputError",
    "answer_correctness",
    "em_scores",
    "ViewpointGroups",
    "viewpoint_groups",
    "vrs_from_counts",
    "vrs",
    "group_all_correct",
    "circular_eval",
    "flip_eval",
    "flip_circular_eval",
    "chance_accuracy",
    "bootstrap_ci",
    "first_rows",
]


class MetricInputError(ValueError):
    """Inputs a metric cannot score (lengths, ids, groups); the message names the item."""


# --- EM / refined EM --------------------------------------------------------------------


def _bad_item(values: Sequence, what: str) -> MetricInputError:
    for i, v in enumerate(values):
        if isinstance(v, str):
            continue
        if isinstance(v, list | tuple | np.ndarray):
            if len(v) == 0:
                return MetricInputError(f"{what}[{i}] is an empty list; give at least one string")
            if all(isinstance(x, str) for x in v):
                continue
        return MetricInputError(
            f"{what}[{i}] is {type(v).__name__} {v!r}; expected a string or a list of "
            "strings (convert numbers and None to text first)")
    return MetricInputError(f"{what}: unsupported values")


def _flatten(values: Sequence, what: str) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """(item index, position in item, flat strings) of strings or lists of strings."""
    vals = values if isinstance(values, list) else list(values)
    n = len(vals)
    kinds = set(map(type, vals))
    if kinds <= {str}:
        return np.arange(n), np.zeros(n, dtype=np.int64), vals
    if not kinds <= {str, list, tuple, np.ndarray}:
        raise _bad_item(vals, what)
    if str in kinds:  # a mix: wrap the single strings
        vals = [[v] if type(v) is str else v for v in vals]
    sizes = np.fromiter(map(len, vals), np.int64, count=n)
    if n and sizes.min() == 0:
        raise _bad_item(vals, what)
    flat = list(chain.from_iterable(vals))
    if not set(map(type, flat)) <= {str}:
        raise _bad_item(vals, what)
    if len(flat) == n:  # one string per item (the common case)
        return np.arange(n), np.zeros(n, dtype=np.int64), flat
    item = np.repeat(np.arange(n), sizes)
    pos = np.arange(len(item)) - np.repeat(np.cumsum(sizes) - sizes, sizes)
    return item, pos, flat


def _check_lengths(**arrays: Any) -> int:
    lens = {k: len(v) for k, v in arrays.items() if v is not None}
    if len(set(lens.values())) > 1:
        detail = ", ".join(f"{k}={n}" for k, n in lens.items())
        raise MetricInputError(f"Expected inputs of equal length but got {detail}")
    return next(iter(lens.values()), 0)


def answer_correctness(
    predictions: Sequence[str | Sequence[str]],
    references: Sequence[str | Sequence[str]],
    *,
    leo_compatible: bool = False,
    normalize: bool = True,
) -> tuple[np.ndarray, np.ndarray]:
    """Per-item (EM, refined EM) boolean arrays; same rules as :func:`hf_real3d.answers.match`.

    A prediction may be a string or a list of candidate strings (best candidate counts);
    a reference may be a string or a list of acceptable answers.

    >>> em, refined = answer_correctness(["the chair", "two", "white table"],
    ...                                  [["chair"], ["2"], ["table"]])
    >>> em.tolist(), refined.tolist()
    ([True, True, False], [True, True, True])
    """
    n = _check_lengths(predictions=predictions, references=references)
    p_item, _, p_text = _flatten(predictions, "predictions")
    r_item, r_pos, r_text = _flatten(references, "references")
    codes, uniques = pd.factorize(np.asarray(p_text + r_text, dtype=object))
    norm = [normalize_answer(u) if normalize else u for u in uniques]
    ncodes, nuniq = pd.factorize(np.asarray(norm, dtype=object))
    squashed = ["".join(s.split()) for s in nuniq]
    codes = ncodes[codes]
    p_code, r_code = codes[: len(p_text)], codes[len(p_text):]
    # all (item, candidate, reference) triples, ordered by item, candidate, reference position
    if len(p_text) == n:  # one candidate per item: pair each reference with its prediction
        item, cand, pc, rc = r_item, r_item, p_code[r_item], r_code
    else:
        pairs = pd.merge(
            pd.DataFrame({"item": p_item, "cand": np.arange(len(p_text)), "pc": p_code}),
            pd.DataFrame({"item": r_item, "pos": r_pos, "rc": r_code}),
            on="item",
            how="inner",
        ).sort_values(["item", "cand", "pos"], kind="stable")
        item, cand = pairs["item"].to_numpy(), pairs["cand"].to_numpy()
        pc, rc = pairs["pc"].to_numpy(), pairs["rc"].to_numpy()
    key = pc.astype(np.int64) * (len(nuniq) + 1) + rc
    ukey, inv = np.unique(key, return_inverse=True)
    u_pc, u_rc = ukey // (len(nuniq) + 1), ukey % (len(nuniq) + 1)
    u_sub = np.fromiter(
        (
            (squashed[a] in squashed[b]) or (squashed[b] in squashed[a])
            for a, b in zip(u_pc.tolist(), u_rc.tolist())
        ),
        dtype=bool,
        count=len(ukey),
    )
    exact = pc == rc
    sub = u_sub[inv]
    em = np.zeros(n, dtype=bool)
    refined = np.zeros(n, dtype=bool)
    if leo_compatible:
        # first reference that is equal or a substring match decides, per candidate
        hit = exact | sub
        starts = np.flatnonzero(np.r_[True, cand[1:] != cand[:-1]])
        order = np.where(hit, np.arange(len(hit)), len(hit))
        first = np.minimum.reduceat(order, starts) if len(starts) else np.zeros(0, int)
        has = first < len(hit)
        c_item = item[starts]
        c_em = np.zeros(len(starts), dtype=bool)
        c_em[has] = exact[first[has]]
        np.logical_or.at(em, c_item, c_em)
        np.logical_or.at(refined, c_item, has)
    else:
        nonempty = np.asarray([len(s) > 0 for s in squashed])
        ok_sub = sub & nonempty[pc] & nonempty[rc]
        np.logical_or.at(em, item, exact)
        np.logical_or.at(refined, item, exact | ok_sub)
    return em, refined


def em_scores(
    predictions: Sequence[str | Sequence[str]],
    references: Sequence[str | Sequence[str]],
    *,
    question_types: Sequence[str] | None = None,
    leo_compatible: bool = False,
) -> dict[str, Any]:
    """``em`` and ``em_refined`` (%), overall and per question type.

    >>> em_scores(["chair", "2"], [["chair"], ["3"]])
    {'em': 50.0, 'em_refined': 50.0, 'n': 2}
    """
    _check_lengths(predictions=predictions, references=references, question_types=question_types)
    em, ref = answer_correctness(predictions, references, leo_compatible=leo_compatible)
    out: dict[str, Any] = {
        "em": float(em.mean() * 100) if len(em) else float("nan"),
        "em_refined": float(ref.mean() * 100) if len(ref) else float("nan"),
        "n": int(len(em)),
    }
    if question_types is not None:
        df = pd.DataFrame({"t": list(question_types), "em": em, "ref": ref})
        g = df.groupby("t", sort=True)
        out["per_type"] = {
            str(t): {"em": float(r.em.mean() * 100), "em_refined": float(r.ref.mean() * 100),
                     "n": int(len(r))}
            for t, r in g
        }
    return out


# --- VRS ----------------------------------------------------------------------------------


@dataclass
class ViewpointGroups:
    """Rows grouped into viewpoint groups: ``codes[i]`` is row i's group, -1 if dropped."""

    codes: np.ndarray
    keys: list
    viewpoints: list[int]
    incomplete: list = field(default_factory=list)  # group keys dropped as incomplete
    vcodes: np.ndarray | None = None  # row i's viewpoint index into ``viewpoints``

    @property
    def n_groups(self) -> int:
        return len(self.keys)


def viewpoint_groups(
    group_ids: Sequence,
    rotations: Sequence[int],
    *,
    viewpoints: Sequence[int] | None = None,
    incomplete: str = "error",
) -> ViewpointGroups:
    """Validate and index rotation groups.

    Every group must hold each of ``viewpoints`` (default: all rotations seen) exactly once.
    ``incomplete="error"`` raises on a group with missing viewpoints, naming it;
    ``"drop"`` leaves such groups out and lists them in ``.incomplete``.
    """
    _check_lengths(group_ids=group_ids, rotations=rotations)
    if incomplete not in ("error", "drop"):
        raise ValueError(f"Expected incomplete in ('error', 'drop') but got {incomplete!r}")
    rot = np.asarray(rotations)
    if rot.dtype.kind not in "iu":
        try:
            rot = rot.astype(np.int64)
        except (TypeError, ValueError):
            raise MetricInputError(
                f"rotations must be integers (degrees) but got {rot[:3].tolist()}") from None
    vps = sorted({int(v) for v in np.unique(rot)}) if viewpoints is None else \
        [int(v) for v in viewpoints]
    if len(set(vps)) != len(vps):
        raise MetricInputError(f"viewpoints {vps} repeat a value")
    vp_index = {v: i for i, v in enumerate(vps)}
    codes, keys = factorize(group_ids)
    bad = ~np.isin(rot, vps)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise MetricInputError(
            f"question_id {keys[codes[i]]}: rotation {int(rot[i])} is not one of the "
            f"viewpoints {vps}")
    lut = np.array(sorted(vp_index)), np.array([vp_index[v] for v in sorted(vp_index)])
    vcode = lut[1][np.searchsorted(lut[0], rot)] if len(rot) else np.zeros(0, np.int64)
    flat = codes.astype(np.int64) * len(vps) + vcode
    uniq, counts = np.unique(flat, return_counts=True)
    if (counts > 1).any():
        dup = int(uniq[np.argmax(counts > 1)])
        raise MetricInputError(
            f"question_id {keys[dup // len(vps)]}: viewpoint {vps[dup % len(vps)]} appears "
            f"{int(counts.max())} times; each group needs each viewpoint once")
    per_group = np.bincount(codes, minlength=len(keys))
    missing_groups = np.flatnonzero(per_group < len(vps))
    dropped: list = []
    if len(missing_groups):
        if incomplete == "error":
            g = int(missing_groups[0])
            have = {vps[int(v)] for v in vcode[codes == g]}
            miss = [v for v in vps if v not in have]
            raise MetricInputError(
                f"question_id {keys[g]}: rotation has {len(have)} of {len(vps)} viewpoints "
                f"(missing {', '.join(map(str, miss))}); pass incomplete='drop' to leave "
                f"such groups out ({len(missing_groups)} group(s) affected)")
        dropped = [keys[g] for g in missing_groups]
        keep = np.ones(len(keys), dtype=bool)
        keep[missing_groups] = False
        remap = np.cumsum(keep) - 1
        new_codes = np.where(keep[codes], remap[codes], -1)
        return ViewpointGroups(new_codes, [k for k, m in zip(keys, keep) if m], vps, dropped,
                               vcode)
    return ViewpointGroups(codes.astype(np.int64), list(keys), vps, dropped, vcode)


def vrs_from_counts(counts: np.ndarray, n: int) -> dict[str, float]:
    """P_1..P_n (%) and VRS from per-group numbers of correct viewpoints.

    >>> r = vrs_from_counts(np.array([4, 2, 0]), 4)
    >>> [round(r[f"p_at_least_{k}"], 1) for k in (1, 2, 3, 4)], round(r["vrs"], 1)
    ([66.7, 66.7, 33.3, 33.3], 50.0)
    """
    c = np.asarray(counts)
    ks = np.arange(1, n + 1)
    p = (c[:, None] >= ks[None, :]).mean(0) * 100 if len(c) else np.full(n, np.nan)
    out = {f"p_at_least_{k}": float(v) for k, v in zip(ks, p)}
    out["vrs"] = float(p.mean())
    return out


def expected_p_at_least(accuracy: Sequence[float]) -> np.ndarray:
    """P(at least k of n viewpoints correct), k = 1..n, if each viewpoint v were answered
    independently with probability ``accuracy[v]`` (a Poisson-binomial tail), in %.

    >>> expected_p_at_least([0.5, 0.5]).tolist()  # P(at least 1), P(both)
    [75.0, 25.0]
    """
    dist = np.ones(1)
    for a in np.asarray(accuracy, dtype=float):
        dist = np.convolve(dist, [1.0 - a, a])
    return np.cumsum(dist[::-1])[::-1][1:] * 100


def _pattern_stats(weights: np.ndarray, bits: np.ndarray) -> dict[str, np.ndarray]:
    """P_k, VRS, per-viewpoint accuracy, expected P_n and consistency from pattern counts
    ``weights`` (B, 2^n) over the correctness patterns ``bits`` (2^n, n)."""
    n = bits.shape[1]
    total = weights.sum(-1, keepdims=True)
    share = weights / np.where(total == 0, 1, total)
    correct = bits.sum(1)
    pk = np.stack([share @ (correct >= k) for k in range(1, n + 1)], -1) * 100
    acc = share @ bits  # (B, n)
    expected_n = np.prod(acc, -1) * 100
    with np.errstate(divide="ignore", invalid="ignore"):
        consistency = np.where(expected_n > 0, pk[..., -1] / expected_n, np.nan)
    return {"pk": pk, "vrs": pk.mean(-1), "consistency": consistency}


def vrs(
    correct: Sequence[bool],
    group_ids: Sequence,
    rotations: Sequence[int],
    *,
    viewpoints: Sequence[int] | None = None,
    incomplete: str = "error",
    ci: bool = False,
    n_resamples: int = 1000,
    seed: int = 0,
) -> dict[str, Any]:
    """Viewpoint Rotation Score: P_k = % of groups correct in at least k viewpoints.

    ``correct`` is per row (refined EM by default upstream). Returns ``p_at_least_k``,
    ``vrs`` (mean of P_k, which equals ``accuracy``: the accuracy over the rows of complete
    groups, since sum_k 1[c >= k] = c), ``accuracy_per_viewpoint``,
    ``expected_p_at_least_k`` (P_k if every viewpoint were answered independently at its
    own accuracy), ``consistency`` (observed P_n / expected P_n: above 1, the model is
    right or wrong across viewpoints together), ``groups``, ``incomplete_groups`` and,
    with ``ci=True``, 95% bootstrap intervals over groups (``vrs_ci``, ``consistency_ci``,
    ``p_at_least_ci``). The bootstrap resamples groups through the counts of their 2^n
    correctness patterns, so its cost does not grow with the number of groups.

    >>> r = vrs([1, 1, 1, 0, 1, 0, 0, 0], ["a"] * 4 + ["b"] * 4, [0, 90, 180, 270] * 2)
    >>> r["p_at_least_1"], r["p_at_least_4"], r["vrs"]
    (100.0, 0.0, 50.0)
    """
    _check_lengths(correct=correct, group_ids=group_ids)
    g = viewpoint_groups(group_ids, rotations, viewpoints=viewpoints, incomplete=incomplete)
    ok = np.asarray(correct, dtype=bool)
    keep = g.codes >= 0
    n = len(g.viewpoints)
    counts = np.bincount(g.codes[keep], weights=ok[keep], minlength=g.n_groups).astype(int)
    out: dict[str, Any] = vrs_from_counts(counts, n)
    out.update({"groups": g.n_groups, "viewpoints": g.viewpoints,
                "incomplete_groups": len(g.incomplete),
                "incomplete_handling": incomplete if g.incomplete else "none",
                "incomplete_ids": [str(k) for k in g.incomplete[:20]]})
    if n > 16 or not g.n_groups:
        if ci:
            ks = np.arange(1, n + 1)
            out["vrs_ci"] = bootstrap_ci(
                counts, lambda c: (c[..., None] >= ks).mean(-2).mean(-1) * 100,
                n_resamples=n_resamples, seed=seed)
        return out
    # each group's correctness pattern over the viewpoints, as an n-bit code
    pattern = np.bincount(g.codes[keep], weights=(ok[keep] << g.vcodes[keep]).astype(float),
                          minlength=g.n_groups).astype(np.int64)
    freq = np.bincount(pattern, minlength=2 ** n).astype(float)
    bits = (np.arange(2 ** n)[:, None] >> np.arange(n)) & 1
    acc = freq @ bits / g.n_groups
    expected = expected_p_at_least(acc)
    obs = _pattern_stats(freq[None], bits)
    out["accuracy"] = float(acc.mean() * 100)
    out["accuracy_per_viewpoint"] = {str(v): float(a * 100) for v, a in zip(g.viewpoints, acc)}
    out.update({f"expected_p_at_least_{k}": float(e) for k, e in enumerate(expected, 1)})
    c = float(obs["consistency"][0])
    out["consistency"] = c if np.isfinite(c) else None  # undefined when E[P_n] is 0
    if ci:
        rng = np.random.default_rng(seed)
        boot = _pattern_stats(rng.multinomial(g.n_groups, freq / freq.sum(),
                                              size=n_resamples).astype(float), bits)
        q = [2.5, 97.5]
        out["vrs_ci"] = tuple(float(x) for x in np.percentile(boot["vrs"], q))
        finite = boot["consistency"][np.isfinite(boot["consistency"])]
        out["consistency_ci"] = tuple(float(x) for x in np.percentile(finite, q)) \
            if out["consistency"] is not None and len(finite) else None
        out["p_at_least_ci"] = [[float(x) for x in np.percentile(boot["pk"][:, k], q)]
                                for k in range(n)]
    return out


# --- CircularEval / FlipEval --------------------------------------------------------------


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


def _all_correct(ok: np.ndarray, codes: np.ndarray, n_groups: int) -> np.ndarray:
    return np.bincount(codes, weights=~ok, minlength=n_groups) == 0


def group_all_correct(correct: Sequence[bool], group_ids: Sequence) -> tuple[np.ndarray, list]:
    """Per group: True only if every member row is correct.

    >>> ok, keys = group_all_correct([1, 1, 0, 1], ["q", "q", "r", "r"])
    >>> ok.tolist(), keys
    ([True, False], ['q', 'r'])
    """
    _check_lengths(correct=correct, group_ids=group_ids)
    codes, keys = factorize(group_ids)
    return _all_correct(np.asarray(correct, dtype=bool), codes, len(keys)), keys


def _per_category(values: np.ndarray, cats: Sequence | None) -> dict[str, float] | None:
    if cats is None:
        return None
    df = pd.DataFrame({"c": list(cats), "v": values})
    return {str(c): float(v.mean() * 100) for c, v in df.groupby("c", sort=True)["v"]}


def _group_category(group_codes: np.ndarray, n: int, cats: Sequence | None, what: str):
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


def circular_eval(
    correct: Sequence[bool],
    group_ids: Sequence,
    *,
    options: Sequence[Sequence[str]] | None = None,
    shifts: Sequence[int] | None = None,
    categories: Sequence[str] | None = None,
) -> dict[str, Any]:
    """CircularEval: a question asked once per circular shift of its options counts only
    if every shift is answered correctly.

    ``options`` (each row's option texts) must hold the same set within a group; ``shifts``
    (0 = original order) gives ``vanilla`` accuracy over the unshifted rows.

    >>> circular_eval([1, 1, 1, 1, 0, 1], ["q"] * 3 + ["r"] * 3, shifts=[0, 1, 2] * 2)
    {'circular': 50.0, 'groups': 2, 'n': 6, 'vanilla': 100.0}
    """
    n = _check_lengths(correct=correct, group_ids=group_ids, options=options, shifts=shifts,
                       categories=categories)
    ok = np.asarray(correct, dtype=bool)
    codes, keys = factorize(group_ids)
    if options is not None:
        check_circular_groups(codes, keys, options)
    allok = _all_correct(ok, codes, len(keys))
    out: dict[str, Any] = {"circular": float(allok.mean() * 100) if len(allok) else float("nan"),
                           "groups": len(keys), "n": n}
    gcat = _group_category(codes, len(keys), categories, "circular")
    if gcat is not None:
        out["per_category"] = _per_category(allok, gcat)
    if shifts is not None:
        base = np.asarray(shifts) == 0
        out["vanilla"] = float(ok[base].mean() * 100) if base.any() else float("nan")
        if categories is not None:
            out["vanilla_per_category"] = _per_category(ok[base],
                                                        np.asarray(list(categories))[base])
    return out


def flip_eval(
    correct: Sequence[bool],
    group_ids: Sequence,
    flipped: Sequence[bool],
    *,
    categories: Sequence[str] | None = None,
    circular: bool = False,
) -> dict[str, Any]:
    """FlipEval: an (original, horizontally flipped) pair counts only if both are right.

    With ``circular=False`` every group must be exactly one original and one flipped row;
    with ``circular=True`` (flip+circular) a group is all shifts of both and needs at least
    one of each.

    >>> flip_eval([1, 1, 1, 0], ["q", "q", "r", "r"], [False, True, False, True])
    {'flip': 50.0, 'groups': 2, 'n': 4}
    """
    n = _check_lengths(correct=correct, group_ids=group_ids, flipped=flipped,
                       categories=categories)
    codes, keys = factorize(group_ids)
    check_flip_groups(codes, keys, flipped, circular=circular)
    allok = _all_correct(np.asarray(correct, dtype=bool), codes, len(keys))
    name = "flip_circular" if circular else "flip"
    out: dict[str, Any] = {name: float(allok.mean() * 100) if len(allok) else float("nan"),
                           "groups": len(keys), "n": n}
    gcat = _group_category(codes, len(keys), categories, "flip")
    if gcat is not None:
        out["per_category"] = _per_category(allok, gcat)
    return out


def flip_circular_eval(correct, group_ids, flipped, *, categories=None) -> dict[str, Any]:
    """Flip+circular: every shift of the original and the flipped question must be right."""
    return flip_eval(correct, group_ids, flipped, categories=categories, circular=True)


def chance_accuracy(
    n_options: Sequence[int], *, passes: Sequence[int] | None = None, consistent: bool = False
) -> float:
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


def bootstrap_ci(
    group_values: np.ndarray,
    statistic: Callable[[np.ndarray], np.ndarray] | None = None,
    *,
    n_resamples: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
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


def degenerate_predictions(predictions: Sequence, em: Sequence[bool],
                           em_refined: Sequence[bool]) -> list[str]:
    """Warnings for prediction sets that score by the letter of the rules rather than by
    answering: mostly empty (refined EM counts an empty answer right under the LEO rule),
    one answer for nearly everything, or refined EM far above EM with long answers (an
    answer list that contains the reference as a substring)."""
    if not len(predictions):
        return []
    texts = predictions if set(map(type, predictions)) <= {str} else \
        [p if isinstance(p, str) else " ".join(p) for p in predictions]
    codes, uniq = pd.factorize(np.asarray(texts, dtype=object))
    return degenerate_counts(np.bincount(codes, minlength=len(uniq)), list(uniq), em,
                             em_refined)


def degenerate_counts(counts: np.ndarray, texts: Sequence[str], em: Sequence[bool],
                      em_refined: Sequence[bool]) -> list[str]:
    """:func:`degenerate_predictions` from each distinct answer's text and count (every
    figure is computed once per distinct answer, weighted by its count)."""
    counts = np.asarray(counts)
    n = int(counts.sum())
    if not n:
        return []
    out = []
    empty = counts[[not s.strip() for s in texts]].sum() / n
    if empty >= 0.5:
        out.append(f"{empty:.0%} of the predictions are empty (under leo_compatible an empty "
                   "prediction counts as refined-correct)")
    folded = pd.Series(counts).groupby([s.strip().lower() for s in texts]).sum()
    top, count = folded.idxmax(), int(folded.max())
    if n >= 20 and count / n >= 0.9 and top:
        out.append(f"{count / n:.0%} of the predictions are the same answer {top!r}")
    gap = (np.mean(em_refined) - np.mean(em)) * 100
    words = float(np.dot(counts, [len(s.split()) for s in texts]) / n)
    if gap >= 20 and words >= 4:
        out.append(f"refined EM is {gap:.0f} points above EM and predictions average "
                   f"{words:.1f} words: refined EM accepts a reference found inside a longer "
                   "answer, so answer lists score as correct")
    return out
