"""How far a review's annotators agree, measured on what the export compares.

Each judgement is a label: ``accept``, ``discard``, or ``correct: <situation> -> <answers>``
with the corrected text up to case and spaces, so two different corrections of one item
disagree here as they do in the export (:func:`hf_real3d.real3dqa.review.log.item_label`).
Everything reads each annotator's standing (latest) decision, from the decision files and
the folder's stored checks alone (the rotation set is not read).

* Cohen's kappa for every pair of annotators on the items both judged, with its n and a 95%
  bootstrap interval (items resampled); pooled over pairs as the mean weighted by each pair's
  items, so a pair that shares 7 items weighs 7, not as much as one that shares 700 (the
  pooled n counts item pairs: 27 + 7 + 7 for three pairs).
* Self-consistency: the items of the groups shown a second time, unannounced: the second
  decision against the one standing when the item came back (later edits are not counted),
  per annotator and pooled, with n (items; a group's items are not independent).
* Decisions by checker verdict and rule, and how often the checker and the annotators agree.
"""

from __future__ import annotations

import collections
import os
from collections.abc import Sequence
from typing import Any

import numpy as np

from hf_real3d.tables import markdown_table

from .log import DECISIONS, DecisionLog, check_annotator, item_label
from .queue import ReviewFolder

__all__ = ["kappa", "review_stats", "stats_markdown", "PAPER_KAPPA", "PAPER_SELF_CONSISTENCY",
           "select_annotators"]

PAPER_KAPPA = 92.0  # Real-3DQA App. D.2: Cohen's kappa of the expert review, in percent
PAPER_SELF_CONSISTENCY = 97.0
BOOTSTRAP = 1000


def _kappas(a: np.ndarray, b: np.ndarray, k: int) -> np.ndarray:
    """Cohen's kappa (percent) of each row pair of label codes ``a``, ``b`` (shape (B, n));
    NaN where it is undefined (both annotators gave one and the same label throughout)."""
    n = a.shape[1]
    po = (a == b).mean(axis=1)
    pe = np.zeros(len(a))
    for c in range(k):
        pe += (a == c).sum(axis=1) / n * ((b == c).sum(axis=1) / n)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = (po - pe) / (1 - pe) * 100
    return np.where(np.isclose(pe, 1.0), np.nan, out)


def kappa(a: Sequence[str], b: Sequence[str]) -> float | None:
    """Cohen's kappa in percent of two label lists (scikit-learn's ``cohen_kappa_score``
    times 100); None without items or when every label is one and the same."""
    if not a:
        return None
    codes = {v: i for i, v in enumerate(sorted(set(a) | set(b)))}
    v = _kappas(np.asarray([[codes[x] for x in a]]), np.asarray([[codes[x] for x in b]]),
                len(codes))[0]
    return None if np.isnan(v) else float(v)


def select_annotators(log: DecisionLog, annotators: Sequence[str] | None) -> list[str]:
    """The annotators to count: all of the folder's, or those named (each must be there). A
    name matches in any case: names that differ only in case are one person (the Review tab
    refuses a second queue under such a name)."""
    present = log.annotators()
    if not annotators:
        return present
    def as_in_folder(name: str) -> str:
        same = [p for p in present if p.casefold() == name.casefold()]
        return same[0] if name not in present and len(same) == 1 else name

    names = [as_in_folder(check_annotator(a)) for a in annotators]
    missing = [a for a in names if a not in present]
    if missing:
        raise ValueError(f"`annotators` {', '.join(missing)}: not in {log.folder} (its "
                         f"annotators: {', '.join(present) or 'none'}); name annotators it has")
    return sorted(set(names))


def _interval(values: np.ndarray) -> list[float] | None:
    ok = values[~np.isnan(values)]
    if len(ok) < len(values) / 2:
        return None
    lo, hi = np.percentile(ok, [2.5, 97.5])
    return [float(lo), float(hi)]


def _annotator_figures(log: DecisionLog, made: list[dict[str, Any]],
                       latest: dict[tuple[Any, int], dict[str, Any]]) -> dict[str, Any]:
    reps = log.repeats(made)
    same = sum(item_label(f) == item_label(d) for f, d in reps)
    revised = len({(d["question_id"], d["rotation_deg"]) for d in made
                   if "revises" in d and not d["repeat"]})
    return {"items": len(latest), "of": len(log.checks.verdicts),
            "decisions": dict(collections.Counter(d["decision"] for d in latest.values())),
            "revised": revised, "repeats": len(reps), "same": same,
            "self_consistency": same / len(reps) * 100 if reps else None}


def _pair(la: list[str], lb: list[str], rng, bootstrap: int
          ) -> tuple[dict[str, Any], np.ndarray | None]:
    """One pair's figures on the items both judged, and its bootstrap kappas."""
    fixes = sum(x.startswith("correct") and y.startswith("correct") and x != y
                for x, y in zip(la, lb))
    entry = {"items": len(la), "kappa": kappa(la, lb), "ci": None,
             "agreement": float(np.mean([x == y for x, y in zip(la, lb)])) * 100
             if la else None, "corrections_differ": fixes}
    if not la or entry["kappa"] is None or not bootstrap:
        return entry, None
    codes = {v: j for j, v in enumerate(sorted(set(la) | set(lb)))}
    ca = np.asarray([codes[x] for x in la])
    cb = np.asarray([codes[x] for x in lb])
    idx = rng.integers(0, len(la), size=(bootstrap, len(la)))
    boots = _kappas(ca[idx], cb[idx], len(codes))
    entry["ci"] = _interval(boots)
    return entry, boots


def _pooled(pairs: dict[str, dict[str, Any]], draws: list[tuple[int, np.ndarray]]
            ) -> dict[str, Any]:
    """The pairs' kappas weighted by the item pairs each holds, with a bootstrap interval."""
    defined = [(p["items"], p["kappa"]) for p in pairs.values() if p["kappa"] is not None]
    pooled = {"kappa": None, "ci": None, "items": sum(n for n, _ in defined),
              "pairs": len(defined),
              "rule": "mean of the pairs' kappas weighted by the items each pair shares"}
    if defined:
        pooled["kappa"] = float(sum(n * k for n, k in defined) / pooled["items"])
        if draws:
            w = np.asarray([n for n, _ in draws], float)[:, None]
            m = np.stack([d for _, d in draws])
            ok = ~np.isnan(m)
            with np.errstate(invalid="ignore", divide="ignore"):
                per_draw = (np.where(ok, m, 0) * w).sum(0) / (ok * w).sum(0)
            pooled["ci"] = _interval(per_draw)
    return pooled


def _by_checker(log: DecisionLog, latest: dict[str, dict]) -> dict[str, Any]:
    """Decisions by checker verdict and by rule, and how often checker and people agree."""
    by_rule: dict[str, collections.Counter] = {}
    by_verdict: dict[str, collections.Counter] = {}
    flagged, changed = [], []
    for first in latest.values():
        for key, d in first.items():
            rules = log.checks.rules(key)
            verdict = log.checks.verdicts.get(key, {}).get("verdict") or "?"
            for r in rules or ["(none)"]:
                by_rule.setdefault(r, collections.Counter())[d["decision"]] += 1
            by_verdict.setdefault(verdict, collections.Counter())[d["decision"]] += 1
            flagged.append("flagged" if verdict != "pass" or rules else "passed")
            changed.append("flagged" if d["decision"] != "accept" else "passed")
    both = collections.Counter(zip(flagged, changed))
    checker = {"judgements": len(flagged),
               "flagged_and_changed": both[("flagged", "flagged")],
               "flagged_but_accepted": both[("flagged", "passed")],
               "passed_but_changed": both[("passed", "flagged")],
               "passed_and_accepted": both[("passed", "passed")],
               "agreement": (both[("flagged", "flagged")] + both[("passed", "passed")])
               / len(flagged) * 100 if flagged else None}
    return {"by_verdict": {v: {d: c.get(d, 0) for d in DECISIONS}
                           for v, c in sorted(by_verdict.items())},
            "by_rule": {r: {d: c.get(d, 0) for d in DECISIONS}
                        for r, c in sorted(by_rule.items())},
            "checker": checker}


def review_stats(folder: str | os.PathLike | ReviewFolder | DecisionLog,
                 annotators: Sequence[str] | None = None, *, bootstrap: int = BOOTSTRAP,
                 seed: int = 0) -> dict[str, Any]:
    """Agreement figures of a review folder (see the module docstring), read from its
    decisions and stored checks alone (the rotation set is not read); ``annotators``: whom
    to count (default: everyone with a file)."""
    if isinstance(folder, ReviewFolder):
        log = folder.log
    else:
        log = folder if isinstance(folder, DecisionLog) else ReviewFolder.read_log(folder)
    names = select_annotators(log, annotators)
    made = log.all_decisions(names)
    latest = {n: log.latest(made[n]) for n in names}
    per_annotator = {n: _annotator_figures(log, made[n], latest[n]) for n in names}
    pooled_same = sum(a["same"] for a in per_annotator.values())
    pooled_rep = sum(a["repeats"] for a in per_annotator.values())
    rng = np.random.default_rng(seed)
    pairs, draws = {}, []
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            both = sorted(set(latest[a]) & set(latest[b]), key=str)
            pairs[f"{a} / {b}"], boots = _pair([item_label(latest[a][k]) for k in both],
                                               [item_label(latest[b][k]) for k in both],
                                               rng, bootstrap)
            if boots is not None:
                draws.append((len(both), boots))
    return {"dataset": log.dataset, "counted": names,
            "not_counted": [n for n in log.annotators() if n not in names],
            "annotators": per_annotator, "pairs": pairs, "kappa": _pooled(pairs, draws),
            "self_consistency": {"value": pooled_same / pooled_rep * 100 if pooled_rep else None,
                                 "same": pooled_same, "repeats": pooled_rep},
            "bootstrap": bootstrap, **_by_checker(log, latest),
            "paper": {"kappa": PAPER_KAPPA, "self_consistency": PAPER_SELF_CONSISTENCY}}


def _pct(v: float | None, unit: str = "") -> str:
    return "n/a" if v is None else f"{v:.1f}{unit}"


def _ci(ci: list[float] | None) -> str:
    return "n/a" if not ci else f"[{ci[0]:.1f}, {ci[1]:.1f}]"


def _item_pairs(s: dict[str, Any]) -> str:
    """``n = 41 item pairs (27 + 7 + 7)``: the pooled kappa's n, summed over the pairs."""
    k = s["kappa"]
    parts = [str(p["items"]) for p in s["pairs"].values() if p["kappa"] is not None]
    terms = f" ({' + '.join(parts)})" if len(parts) > 1 else ""
    return f"n = {k['items']} item pairs{terms}"


def headline(s: dict[str, Any]) -> str:
    """The pooled kappa and self-consistency with their n, beside the paper's."""
    k, c = s["kappa"], s["self_consistency"]
    return (f"Cohen's kappa {_pct(k['kappa'], '%')} (95% CI {_ci(k['ci'])}; pooled over "
            f"{k['pairs']} pair(s) of annotators, each weighted by the items both of its "
            f"annotators judged: {_item_pairs(s)}), self-consistency {_pct(c['value'], '%')} "
            f"(n = {c['repeats']} items shown twice, unannounced); the paper's expert review: "
            f"kappa {PAPER_KAPPA:g}%, self-consistency {PAPER_SELF_CONSISTENCY:g}%.")


def stats_markdown(s: dict[str, Any]) -> str:
    """The review figures as Markdown tables, beside the paper's."""
    lines = [markdown_table(
        ["annotator", "items judged", "accept", "correct", "discard", "revised", "repeats",
         "self-consistency %"],
        [[n, f"{a['items']} of {a['of']}", *(a["decisions"].get(d, 0) for d in DECISIONS),
          a["revised"], a["repeats"], _pct(a["self_consistency"])]
         for n, a in s["annotators"].items()])]
    if s.get("not_counted"):
        lines += ["", f"Not counted (--annotators): {', '.join(s['not_counted'])}."]
    if s["pairs"]:
        lines += ["", markdown_table(
            ["pair", "n (items both judged)", "Cohen's kappa %", "95% CI", "raw agreement %",
             "both corrected, differently"],
            [[p, v["items"], _pct(v["kappa"]), _ci(v["ci"]), _pct(v["agreement"]),
              v["corrections_differ"]] for p, v in s["pairs"].items()])]
    lines += ["", headline(s), "",
              "Agreement compares what the export compares: the decision, and for a "
              "correction its text up to case and spaces."]
    lines += ["", markdown_table(["checker verdict", *DECISIONS],
                                 [[f"`{v}`", *(c[d] for d in DECISIONS)]
                                  for v, c in s["by_verdict"].items()])]
    lines += ["", markdown_table(["checker rule", *DECISIONS],
                                 [[f"`{r}`", *(c[d] for d in DECISIONS)]
                                  for r, c in s["by_rule"].items()])]
    c = s["checker"]
    lines += ["", f"Checker and annotators agree on {_pct(c['agreement'], '%')} of "
              f"{c['judgements']} judgements (flagged and corrected or discarded "
              f"{c['flagged_and_changed']}, flagged but accepted {c['flagged_but_accepted']}, "
              f"passed but changed {c['passed_but_changed']}, passed and accepted "
              f"{c['passed_and_accepted']})."]
    return "\n".join(lines)
