"""The Viewpoint Rotation Score: P_k (a question counts at k when at least k of its
viewpoints are right), VRS (their mean), the independence baseline, and viewpoint groups."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from hf_real3d.scoring.arrays import MetricInputError, check_lengths, factorize
from hf_real3d.scoring.intervals import bootstrap_ci

__all__ = ["ViewpointGroups", "viewpoint_groups", "vrs_from_counts", "expected_p_at_least",
           "vrs"]


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


def viewpoint_groups(group_ids: Sequence, rotations: Sequence[int], *,
                     viewpoints: Sequence[int] | None = None, incomplete: str = "error"
                     ) -> ViewpointGroups:
    """Validate and index rotation groups.

    Every group must hold each of ``viewpoints`` (default: all rotations seen) exactly once.
    ``incomplete="error"`` raises on a group with missing viewpoints, naming it;
    ``"drop"`` leaves such groups out and lists them in ``.incomplete``.

    >>> g = viewpoint_groups(["q", "q", "r"], [0, 90, 0], incomplete="drop")
    >>> g.keys, g.incomplete
    (['q'], ['r'])
    """
    check_lengths(group_ids=group_ids, rotations=rotations)
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


def vrs(correct: Sequence[bool], group_ids: Sequence, rotations: Sequence[int], *,
        viewpoints: Sequence[int] | None = None, incomplete: str = "error", ci: bool = False,
        n_resamples: int = 1000, seed: int = 0) -> dict[str, Any]:
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
    check_lengths(correct=correct, group_ids=group_ids)
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
