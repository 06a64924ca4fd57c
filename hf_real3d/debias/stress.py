"""Test-set stress test (TsT) and iterative bias pruning (IBP), after Brown et al. 2025.

A text-only diagnostic is trained by grouped k-fold cross-validation on the test set's own
non-visual inputs (:mod:`hf_real3d.debias.items`): a group (a scene) never sits on both
sides. Each item is predicted by the model that did not see its fold, which gives

* **non-visual solvability**: the held-out accuracy, overall and per question type, with a
  bootstrap interval over groups; beside it the held-out majority-answer baseline (the
  training folds' most frequent answer, among the item's options for multiple choice) and
  chance (1 / options, or 1 / the training folds' distinct answers);
* the per-item **bias score** s(x): the held-out probability of the right answer (0 when
  the training folds never gave that answer).

Diagnostics: scikit-learn estimators over word and word-pair counts of the text, plus the
question type as a token: ``rf`` (a random forest, whose impurity importances name the
words that carry the score) and ``logreg`` (a logistic regression over TF-IDF); and ``lm``,
a causal language model fine-tuned per fold through the library's trainer
(:mod:`hf_real3d.debias.lm`), whose "features" are the items it is surest of.

:func:`prune` removes the items of highest s(x) in rounds, re-fitting after each, until
solvability is within ``margin`` points of the majority baseline or the removal budget is
spent.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from hf_real3d._extras import require
from hf_real3d.debias.config import PruneConfig
from hf_real3d.debias.items import Items
from hf_real3d.scoring import bootstrap_ci

__all__ = ["DIAGNOSTICS", "StressResult", "stress_test", "prune", "check_items"]

DIAGNOSTICS = ("rf", "logreg", "lm")


@dataclass
class StressResult:
    """Held-out predictions of one k-fold pass, and the figures they give (percent)."""

    score: np.ndarray          # s(x): held-out probability of the right answer
    correct: np.ndarray        # held-out prediction right
    predicted: list[str]
    majority_correct: np.ndarray
    chance: np.ndarray         # per item, the chance of a uniform guess
    types: list[str]
    groups: list[str]
    diagnostic: str
    folds: int
    features: list[tuple[str, float]] = field(default_factory=list)
    # within each question type: its own training items' majority answer, and the chance of
    # a uniform guess among its own answers (the per-type columns)
    type_majority_correct: np.ndarray | None = None
    type_chance: np.ndarray | None = None
    type_as_feature: bool = False

    @property
    def solvability(self) -> float:
        return float(self.correct.mean() * 100)

    @property
    def majority(self) -> float:
        return float(self.majority_correct.mean() * 100)

    def summary(self, *, n_resamples: int = 1000, seed: int = 0) -> dict[str, Any]:
        """``{"n", "solvability": {"overall", "ci", "per_type"}, "majority", "chance",
        "diagnostic", "folds"}`` in percent; intervals resample groups."""
        def ci(mask: np.ndarray) -> list[float]:
            # resample groups: each group's right answers and items, summed per resample
            _, codes = np.unique(np.asarray(self.groups, dtype=object)[mask],
                                 return_inverse=True)
            right = np.bincount(codes, weights=self.correct[mask].astype(float))
            items = np.bincount(codes)
            lo, hi = bootstrap_ci(np.arange(len(items)),
                                  lambda idx: right[idx].sum(1) / items[idx].sum(1) * 100,
                                  n_resamples=n_resamples, seed=seed)
            return [lo, hi]

        types = np.asarray(self.types, dtype=object)
        tmaj = self.majority_correct if self.type_majority_correct is None \
            else self.type_majority_correct
        tchance = self.chance if self.type_chance is None else self.type_chance
        per_type = {}
        for t in sorted(set(self.types)):
            m = types == t
            per_type[t] = {"n": int(m.sum()), "solvability": float(self.correct[m].mean() * 100),
                           "majority": float(tmaj[m].mean() * 100),
                           "chance": float(tchance[m].mean() * 100), "ci": ci(m)}
        everything = np.ones(len(self.correct), bool)
        return {"n": int(len(self.correct)),
                "solvability": {"overall": self.solvability, "ci": ci(everything),
                                "per_type": per_type},
                "majority": self.majority, "chance": float(self.chance.mean() * 100),
                "diagnostic": self.diagnostic, "folds": self.folds,
                "type_as_feature": self.type_as_feature}


def check_items(items: Items, folds: int) -> None:
    """Refuse what k-fold cannot do: fewer groups than folds, fewer than 2 folds."""
    if folds < 2:
        raise ValueError(f"Expected `folds` >= 2 but got {folds}")
    n_groups = len(set(items.groups))
    if n_groups < folds:
        raise ValueError(f"{items.source}: {n_groups} groups ({items.group_by}) for {folds} "
                         f"folds; a group must stay on one side, so use `folds` {n_groups} or "
                         "fewer, or another `group_by`")


def _vectorizer(diagnostic: str):
    # scikit-learn (~1 s to import) only when a diagnostic runs
    from sklearn.feature_extraction.text import CountVectorizer, TfidfVectorizer

    kind = TfidfVectorizer if diagnostic == "logreg" else CountVectorizer
    return kind(ngram_range=(1, 2), min_df=2, max_features=4000, token_pattern=r"[\w']+",
                binary=diagnostic == "rf")


def _estimator(diagnostic: str, seed: int):
    if diagnostic == "lm":
        return None  # no scikit-learn estimator: hf_real3d.debias.lm
    if diagnostic == "rf":
        # each estimator imported when it is asked for
        from sklearn.ensemble import RandomForestClassifier

        return RandomForestClassifier(n_estimators=200, random_state=seed, n_jobs=-1)
    if diagnostic == "logreg":
        # likewise
        from sklearn.linear_model import LogisticRegression

        return LogisticRegression(max_iter=2000, C=2.0)
    raise ValueError(f"Expected a diagnostic in {list(DIAGNOSTICS)} but got {diagnostic!r}")


def _texts(items: Items, type_as_feature: bool = False) -> list[str]:
    """What the diagnostic reads: each item's text, and its type as a token when asked."""
    if not type_as_feature:
        return list(items.text)
    return [f"{t} qtype_{ty.replace(' ', '_')}" for t, ty in zip(items.text, items.types)]


def _importances(vec, clf, diagnostic: str, top: int = 20) -> list[tuple[str, float]]:
    names = vec.get_feature_names_out()
    if diagnostic == "rf":
        imp = clf.feature_importances_
    else:
        imp = np.abs(clf.coef_).mean(axis=0)
    order = np.argsort(-imp)[:top]
    return [(str(names[i]), float(imp[i])) for i in order]


def _sklearn_fold(diagnostic: str, seed: int, texts: list[str], y: np.ndarray,
                  train: np.ndarray, test: np.ndarray, options, counts: Counter
                  ) -> tuple[list, list]:
    """Per held-out item (probabilities, candidates) from a scikit-learn diagnostic
    (``counts``: the training folds' answers)."""
    if len(counts) == 1:  # one answer only: every model predicts it
        proba, classes = np.ones((len(test), 1)), list(counts)
    else:
        vec = _vectorizer(diagnostic)
        clf = _estimator(diagnostic, seed).fit(vec.fit_transform([texts[i] for i in train]),
                                               y[train])
        proba = clf.predict_proba(vec.transform([texts[i] for i in test]))
        classes = clf.classes_.tolist()
    col = {c: j for j, c in enumerate(classes)}
    out, cands = [], []
    for row, i in zip(proba, test.tolist()):
        if options is not None:  # multiple choice: among this item's options
            opts = list(options[i])
            p = np.array([row[col[o]] if o in col else 0.0 for o in opts])
            out.append(p / p.sum() if p.sum() > 0 else np.full(len(opts), 1 / len(opts)))
            cands.append(opts)
        else:
            out.append(np.asarray(row, float))
            cands.append(classes)
    return out, cands


def stress_test(items: Items, *, diagnostic: str = "rf", folds: int = 5, seed: int = 0,
                progress: Callable[[str], None] | None = None, lm: Any = None,
                type_as_feature: bool = False) -> StressResult:
    """One grouped k-fold pass of the text-only ``diagnostic`` over ``items`` (``lm``: the
    :class:`~hf_real3d.debias.lm.LMDiagnostic` settings of ``diagnostic="lm"``).
    ``type_as_feature``: the diagnostic also reads each item's question type (a token)."""
    # scikit-learn only when a pass runs
    from sklearn.model_selection import GroupKFold

    check_items(items, folds)
    if diagnostic not in DIAGNOSTICS:
        raise ValueError(f"Expected a diagnostic in {list(DIAGNOSTICS)} but got {diagnostic!r}")
    if diagnostic == "lm" and lm is None:
        require("torch", "transformers", what="the language-model diagnostic (diagnostic='lm')")
        # the LM diagnostic's module needs torch (the [train] extra): imported when it is
        # asked for
        from hf_real3d.debias.lm import LMDiagnostic

        lm = LMDiagnostic(seed=seed)
    texts = _texts(items, type_as_feature)
    y = np.asarray(items.labels, dtype=object)
    types = np.asarray(items.types, dtype=object)
    n = len(items)
    score, correct = np.zeros(n), np.zeros(n, bool)
    maj, chance = np.zeros(n, bool), np.zeros(n)
    tmaj, tchance = np.zeros(n, bool), np.zeros(n)
    predicted: list[str] = [""] * n
    splitter = GroupKFold(n_splits=folds, shuffle=True, random_state=seed)
    for k, (train, test) in enumerate(splitter.split(texts, y, items.groups)):
        if progress:
            progress(f"fold {k + 1}/{folds}: {len(train)} training items")
        counts = Counter(y[train].tolist())
        top = counts.most_common(1)[0][0]  # the training folds' majority answer
        by_type: dict[str, Counter] = {}
        for i in train.tolist():
            by_type.setdefault(types[i], Counter())[y[i]] += 1
        if diagnostic == "lm":
            probs, cands = lm.fit_predict([texts[i] for i in train], y[train].tolist(),
                                          [texts[i] for i in test],
                                          None if items.options is None
                                          else [items.options[i] for i in test])
        else:
            probs, cands = _sklearn_fold(diagnostic, seed, texts, y, train, test,
                                         items.options, counts)
        for p, opts, i in zip(probs, cands, test.tolist()):
            pick = str(opts[int(np.argmax(p))]) if len(opts) else ""
            s = float(p[opts.index(y[i])]) if y[i] in opts else 0.0
            own = by_type.get(types[i], counts)  # a type absent from training: all of it
            if items.options is not None:
                best = max(opts, key=lambda o: (counts.get(o, 0), -opts.index(o)))
                tbest = max(opts, key=lambda o: (own.get(o, 0), -opts.index(o)))
                chance[i] = tchance[i] = 1 / len(opts)
            else:
                best, tbest = top, own.most_common(1)[0][0]
                chance[i], tchance[i] = 1 / len(counts), 1 / len(own)
            predicted[i], score[i] = pick, s
            correct[i], maj[i], tmaj[i] = pick == y[i], best == y[i], tbest == y[i]
    res = StressResult(score, correct, predicted, maj, chance, list(items.types),
                       list(items.groups), diagnostic, folds, type_majority_correct=tmaj,
                       type_chance=tchance, type_as_feature=type_as_feature)
    if diagnostic == "lm":  # what drives the score: the items it is surest of
        order = np.lexsort((np.arange(n), -score))[:20]
        res.features = [(items.text[i], float(score[i])) for i in order]
    elif len(set(items.labels)) > 1:  # the diagnostic refitted on every item
        vec = _vectorizer(diagnostic)
        clf = _estimator(diagnostic, seed).fit(vec.fit_transform(texts), y)
        res.features = _importances(vec, clf, diagnostic)
    return res


def prune(items: Items, config: PruneConfig | None = None, *,
          progress: Callable[[str], None] | None = None, lm: Any = None,
          first: StressResult | None = None
          ) -> tuple[list[int], list[dict[str, Any]], StressResult]:
    """Iterative bias pruning with ``config``'s settings (default: :class:`PruneConfig`'s):
    fit, stop when solvability <= majority + ``margin`` (points) or when the removals reach
    ``budget`` (a fraction of the set if < 1, else a count), else remove the
    ``round_fraction`` of the original set with the highest s(x) (ties: the earlier item
    first) and fit again.

    ``first``: a :func:`stress_test` of all of ``items`` with the same settings, reused as
    round 0 instead of fitting it again.

    Returns the kept item indices, one record per fit ``{"round", "removed" (so far),
    "kept", "solvability", "majority"}`` and the last fit."""
    c = config or PruneConfig()
    n = len(items)
    per_round = max(1, int(round(c.round_fraction * n)))
    limit = None if c.budget is None else int(c.budget * n if c.budget < 1 else c.budget)
    keep = list(range(n))
    rounds: list[dict[str, Any]] = []
    while True:
        if first is not None and len(keep) == n:  # round 0: the caller's fit of every item
            res = first
        else:
            res = stress_test(items.subset(keep), diagnostic=c.diagnostic, folds=c.folds,
                              seed=c.seed, lm=lm, type_as_feature=c.type_as_feature)
        rounds.append({"round": len(rounds), "removed": n - len(keep), "kept": len(keep),
                       "solvability": res.solvability, "majority": res.majority})
        if progress:
            progress(f"round {len(rounds) - 1}: {len(keep)} kept, solvability "
                     f"{res.solvability:.1f} (majority {res.majority:.1f})")
        if res.solvability <= res.majority + c.margin:
            rounds[-1]["stop"] = f"solvability within {c.margin:g} points of the majority answer"
            break
        room = per_round if limit is None else min(per_round, limit - (n - len(keep)))
        if room <= 0:
            rounds[-1]["stop"] = f"removal budget of {limit} items spent"
            break
        try:
            check_items(items.subset(keep[:-room] if room < len(keep) else []), c.folds)
        except ValueError:
            rounds[-1]["stop"] = "too few groups left for another round"
            break
        order = np.lexsort((np.arange(len(keep)), -res.score))
        drop = set(order[:room].tolist())
        keep = [k for j, k in enumerate(keep) if j not in drop]
    return keep, rounds, res
