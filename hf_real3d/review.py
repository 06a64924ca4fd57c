"""People reviewing rotated items: the queue, their decisions, agreement, and the export.

A review folder (``OUT_REVIEW``) belongs to one rotation set (any that
:func:`hf_real3d.real3dqa.check_run.read_rotation_set` reads):

* ``review.json``: the set it reviews (path and a fingerprint of its rotated items) and the
  queue's settings (share of items shown twice, how many items later, seed);
* ``<annotator>.jsonl``: one line per decision, appended at once and flushed to disk, never
  rewritten. A line holds the item (``question_id``, ``rotation_deg``), whether it was the
  unannounced second showing (``repeat``), the ``decision`` (``accept``, ``correct`` or
  ``discard``), the ``reason``, a correction's ``situation`` and ``answers``, and what the
  rotation checker suggested (``rules``, after Argilla's suggestions beside responses).

Each annotator sees every rotated item once, groups with a flagged item first, plus a share of
items a second time some items later (self-consistency). Restarting resumes at the first item
the annotator's file does not hold; two annotators write two files.

Agreement (:func:`review_stats`): Cohen's kappa (scikit-learn) for every pair of annotators on
the items both judged, each annotator's self-consistency on the items shown twice, decisions
by checker rule, and how often the checker and the annotators agree (flagged vs corrected or
discarded).

Export (:func:`export_rotations`), the rule for disagreements:

1. an item is kept when every annotator who judged it (at least ``min_annotators``) accepted
   or corrected it: one discard drops it;
2. its text is the original when nobody corrected it; the correction when every annotator
   who corrected it wrote the same situation and answers (case and spaces aside); else it is
   disputed and dropped;
3. a group is exported when every turned viewpoint is kept; its first judgement counts for
   each annotator (the repeat only measures self-consistency).
"""

from __future__ import annotations

import collections
import fcntl
import hashlib
import json
import os
import re
import time
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from hf_real3d._io import FormatError, atomic_dir, read_json, write_json
from hf_real3d.real3dqa.format import DEBIASED_FILE, RELEASE_VIEWPOINTS, plain_text
from hf_real3d.tables import markdown_table

__all__ = ["DECISIONS", "ReviewEntry", "ReviewFolder", "review_stats", "stats_markdown",
           "export_rotations", "PAPER_KAPPA", "PAPER_SELF_CONSISTENCY"]

DECISIONS = ("accept", "correct", "discard")
PAPER_KAPPA = 92.0  # Real-3DQA App. D.2: Cohen's kappa of the expert review, in percent
PAPER_SELF_CONSISTENCY = 97.0
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
_META = "review.json"


@dataclass(frozen=True)
class ReviewEntry:
    """One showing of a rotated item to an annotator."""

    question_id: Any
    rotation_deg: int
    repeat: bool = False

    @property
    def key(self) -> tuple[Any, int, bool]:
        return (self.question_id, self.rotation_deg, self.repeat)


def _fingerprint(rows: Sequence[dict[str, Any]]) -> str:
    items = sorted((str(r["question_id"]), int(r["rotation_deg"]), r["situation"],
                    sorted(r["answers"])) for r in rows)
    return hashlib.sha256(json.dumps(items).encode()).hexdigest()[:16]


def check_annotator(name: str) -> str:
    """An annotator's name (it names their file): letters, digits, ``_ . -``."""
    name = (name or "").strip()
    if not _NAME.fullmatch(name):
        raise ValueError(f"annotator name {name!r}: use 1-64 letters, digits, '_', '.' or '-' "
                         "(it names the annotator's file)")
    return name


class ReviewFolder:
    """A review folder and the rotation set it reviews (see the module docstring)."""

    def __init__(self, folder: str | os.PathLike, dataset: str | os.PathLike | None = None, *,
                 scenes: str | os.PathLike | None = None, repeat_share: float | None = None,
                 repeat_gap: int | None = None, seed: int | None = None):
        # the rotation set's reader and checker: the review's suggestions are its rules
        from hf_real3d.real3dqa.check_run import check_set, read_rotation_set

        self.folder = Path(folder)
        meta_path = self.folder / _META
        meta = read_json(meta_path) if meta_path.is_file() else None
        if meta is not None and not isinstance(meta, dict):
            raise FormatError(f"{meta_path}: not a review folder's review.json (an object)")
        if dataset is None:
            if meta is None:
                raise FileNotFoundError(f"{self.folder}: no review.json; give the rotation set "
                                        "to review (--dataset) to start a review folder")
            dataset = meta["dataset"]
        self.rotation_set = read_rotation_set(dataset, scenes)
        rotated = [r for r in self.rotation_set.rows if int(r["rotation_deg"])]
        fp = _fingerprint(rotated)
        asked = {"repeat_share": repeat_share, "repeat_gap": repeat_gap, "seed": seed}
        if meta is None:
            if self.folder.exists() and (not self.folder.is_dir() or any(self.folder.iterdir())):
                raise FileExistsError(f"{self.folder}: exists and is not a review folder (no "
                                      "review.json); give a new or empty folder")
            settings = {"repeat_share": 0.1, "repeat_gap": 10, "seed": 0}
            settings.update({k: v for k, v in asked.items() if v is not None})
            if not 0 <= settings["repeat_share"] <= 1 or settings["repeat_gap"] < 1:
                raise ValueError(f"repeat share {settings['repeat_share']} must lie in [0, 1] "
                                 f"and repeat gap {settings['repeat_gap']} be at least 1")
            meta = {"dataset": str(Path(dataset).resolve()), "fingerprint": fp,
                    "items": len(rotated),
                    "created": time.strftime("%Y-%m-%dT%H:%M:%S"), **settings}
            self.folder.mkdir(parents=True, exist_ok=True)
            write_json(meta_path, meta, indent=2)
        elif meta.get("fingerprint") != fp:
            raise FormatError(f"{self.folder}: this review folder was written for the rotation "
                              f"set {meta.get('dataset')!r} (fingerprint "
                              f"{meta.get('fingerprint')}), not {str(dataset)!r} (fingerprint "
                              f"{fp}); give the set it reviews, or another review folder")
        else:
            clash = {k: v for k, v in asked.items() if v is not None and meta.get(k) != v}
            if clash:
                raise ValueError(f"{meta_path}: this folder's queue was made with "
                                 + ", ".join(f"{k} {meta.get(k)}" for k in clash)
                                 + "; leave those options out or start another review folder")
        self.meta = meta
        self.rows = {(r["question_id"], int(r["rotation_deg"])): r
                     for r in self.rotation_set.rows}
        checked = check_set(self.rotation_set)
        self.rules = {(it.question_id, it.rotation_deg): [h.rule for h in it.hits]
                      for it in checked.items}
        self.details = {(it.question_id, it.rotation_deg): [h.detail for h in it.hits]
                        for it in checked.items}
        self._order = self._base_order()

    # --- the queue -----------------------------------------------------------------------

    @property
    def order(self) -> list[tuple[Any, int]]:
        """Every rotated item once, as ``(question_id, rotation_deg)``: groups with a flagged
        item first, each group's viewpoints in turn (every annotator's queue before
        repeats)."""
        return list(self._order)

    def _base_order(self) -> list[tuple[Any, int]]:
        groups: dict[Any, list[int]] = {}
        for q, k in self.rules:
            groups.setdefault(q, []).append(k)
        flagged = {q for (q, _), r in self.rules.items() if r}
        order = sorted(groups, key=lambda q: (q not in flagged, str(q)))
        return [(q, k) for q in order for k in sorted(groups[q])]

    def queue(self, annotator: str) -> list[ReviewEntry]:
        """What ``annotator`` is shown, in order: every rotated item once, and a share of them
        again ``repeat_gap`` items later (or at the end), chosen by the seed and the name."""
        check_annotator(annotator)
        n = len(self._order)
        rng = np.random.default_rng([int(self.meta["seed"]), zlib.crc32(annotator.encode())])
        k = int(round(float(self.meta["repeat_share"]) * n))
        again = set(rng.choice(n, size=k, replace=False).tolist()) if k else set()
        keyed = [((p, 0), ReviewEntry(q, d)) for p, (q, d) in enumerate(self._order)]
        keyed += [((min(p + int(self.meta["repeat_gap"]), n - 1), 1),
                   ReviewEntry(*self._order[p], repeat=True)) for p in sorted(again)]
        return [e for _, e in sorted(keyed, key=lambda x: x[0])]

    def path(self, annotator: str) -> Path:
        return self.folder / f"{check_annotator(annotator)}.jsonl"

    def annotators(self) -> list[str]:
        return sorted(p.stem for p in self.folder.glob("*.jsonl"))

    def decisions(self, annotator: str) -> list[dict[str, Any]]:
        """The annotator's decisions in the order made; a line cut mid-write, a line that is
        not a decision or one about an item this set lacks is a :class:`FormatError` naming
        the file and the line."""
        path = self.path(annotator)
        if not path.is_file():
            return []
        raw = path.read_bytes()
        out = []
        lines = raw.split(b"\n")
        for i, line in enumerate(lines, 1):
            if not line.strip():
                continue
            cut = i == len(lines) and not raw.endswith(b"\n")
            try:
                d = json.loads(line)
            except ValueError:
                what = re.search(rb'"question_id":\s*"?([0-9A-Za-z_-]+)', line)
                item = f" (question_id {what.group(1).decode()})" if what else ""
                if cut:
                    raise FormatError(f"{path}: line {i}{item} was cut mid-write (the program "
                                      "stopped while writing it); delete that line and judge "
                                      "the item again") from None
                raise FormatError(f"{path}: line {i}{item} is not JSON; delete or fix it") \
                    from None
            self._check_line(d, path, i)
            out.append(d)
        return out

    def _check_line(self, d: Any, path: Path, i: int) -> None:
        if not isinstance(d, dict) or d.get("decision") not in DECISIONS or \
                "question_id" not in d or "rotation_deg" not in d:
            raise FormatError(f"{path}: line {i} is not a review decision (question_id, "
                              f"rotation_deg, decision in {DECISIONS})")
        key = (d["question_id"], int(d["rotation_deg"]))
        if key not in self.rules:
            raise FormatError(f"{path}: line {i}: question_id {key[0]} at {key[1]} degrees is "
                              f"not a rotated item of {self.meta['dataset']}; was this file "
                              "written for another rotation set? Move it out of the folder")

    def next_entry(self, annotator: str) -> tuple[ReviewEntry | None, int, int]:
        """(the first entry of the queue the annotator has not decided, done, total)."""
        done = {(d["question_id"], int(d["rotation_deg"]), bool(d.get("repeat")))
                for d in self.decisions(annotator)}
        queue = self.queue(annotator)
        left = [e for e in queue if e.key not in done]
        return (left[0] if left else None), len(queue) - len(left), len(queue)

    def record(self, annotator: str, entry: ReviewEntry, decision: str, reason: str = "", *,
               situation: str | None = None, answers: Sequence[str] | None = None
               ) -> dict[str, Any]:
        """Append one decision to the annotator's file at once (locked, written in one call,
        flushed to disk). A correction needs a changed situation or answers; a correction or
        a discard needs a reason."""
        if decision not in DECISIONS:
            raise ValueError(f"decision {decision!r}: expected one of {DECISIONS}")
        key = (entry.question_id, entry.rotation_deg)
        if key not in self.rules:
            raise ValueError(f"question_id {key[0]} at {key[1]} degrees is not a rotated item "
                             "of this review's set")
        reason = (reason or "").strip()
        if decision != "accept" and not reason:
            raise ValueError(f"a decision to {decision} needs a reason")
        line: dict[str, Any] = {
            "annotator": check_annotator(annotator), "question_id": entry.question_id,
            "rotation_deg": entry.rotation_deg, "repeat": entry.repeat, "decision": decision,
            "reason": reason, "rules": self.rules[key],
            "dataset": self.meta["fingerprint"], "time": time.strftime("%Y-%m-%dT%H:%M:%S")}
        if decision == "correct":
            row = self.rows[key]
            situation = row["situation"] if situation is None else situation.strip()
            answers = list(row["answers"]) if answers is None else \
                [a.strip() for a in answers if a.strip()]
            if not situation or not answers:
                raise ValueError("a correction needs a situation and at least one answer")
            if situation == row["situation"] and answers == list(row["answers"]):
                raise ValueError("a correction must change the situation or the answers (or "
                                 "accept the item as it is)")
            line["situation"], line["answers"] = situation, answers
        data = (json.dumps(line, ensure_ascii=False) + "\n").encode()
        path = self.path(annotator)
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            if os.fstat(fd).st_size:  # never append to a line a crash cut short
                with open(path, "rb") as f:
                    f.seek(-1, os.SEEK_END)
                    if f.read(1) != b"\n":
                        self.decisions(annotator)  # raises the cut line's error
            os.write(fd, data)
            os.fsync(fd)
        finally:
            os.close(fd)
        return line

    def first_decisions(self, annotator: str) -> dict[tuple[Any, int], dict[str, Any]]:
        """Each item's first (not repeated) decision by the annotator."""
        out: dict[tuple[Any, int], dict[str, Any]] = {}
        for d in self.decisions(annotator):
            if not d.get("repeat"):
                out.setdefault((d["question_id"], int(d["rotation_deg"])), d)
        return out


def _kappa(a: Sequence[str], b: Sequence[str]) -> float | None:
    # scikit-learn only for the agreement figures
    from sklearn.metrics import cohen_kappa_score

    if not a:
        return None
    if len(set(a) | set(b)) == 1:  # every judgement the same label: kappa is undefined
        return None
    return float(cohen_kappa_score(a, b, labels=list(DECISIONS)) * 100)


def review_stats(folder: str | os.PathLike | ReviewFolder) -> dict[str, Any]:
    """Agreement figures of a review folder (see the module docstring)."""
    rf = folder if isinstance(folder, ReviewFolder) else ReviewFolder(folder)
    names = rf.annotators()
    firsts = {n: rf.first_decisions(n) for n in names}
    per_annotator = {}
    for n in names:
        decided = rf.decisions(n)
        first = firsts[n]
        repeats = [(first.get((d["question_id"], int(d["rotation_deg"]))), d)
                   for d in decided if d.get("repeat")]
        repeats = [(f, d) for f, d in repeats if f is not None]
        same = sum(f["decision"] == d["decision"] for f, d in repeats)
        per_annotator[n] = {
            "items": len(first), "of": len(rf.rules),
            "decisions": dict(collections.Counter(d["decision"] for d in first.values())),
            "repeats": len(repeats),
            "self_consistency": same / len(repeats) * 100 if repeats else None}
    pairs = {}
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            both = sorted(set(firsts[a]) & set(firsts[b]), key=str)
            la = [firsts[a][k]["decision"] for k in both]
            lb = [firsts[b][k]["decision"] for k in both]
            pairs[f"{a} / {b}"] = {"items": len(both), "kappa": _kappa(la, lb),
                                   "agreement": (float(np.mean([x == y for x, y in zip(la, lb)]))
                                                 * 100 if both else None)}
    by_rule: dict[str, collections.Counter] = {}
    flagged, changed = [], []
    for first in firsts.values():
        for key, d in first.items():
            rules = rf.rules[key]
            for r in rules or ["(none)"]:
                by_rule.setdefault(r, collections.Counter())[d["decision"]] += 1
            flagged.append("flagged" if rules else "passed")
            changed.append("flagged" if d["decision"] != "accept" else "passed")
    both = collections.Counter(zip(flagged, changed))
    checker = {"judgements": len(flagged),
               "flagged_and_changed": both[("flagged", "flagged")],
               "flagged_but_accepted": both[("flagged", "passed")],
               "passed_but_changed": both[("passed", "flagged")],
               "passed_and_accepted": both[("passed", "passed")],
               "agreement": (both[("flagged", "flagged")] + both[("passed", "passed")])
               / len(flagged) * 100 if flagged else None}
    kappas = [p["kappa"] for p in pairs.values() if p["kappa"] is not None]
    consist = [a["self_consistency"] for a in per_annotator.values()
               if a["self_consistency"] is not None]
    return {"dataset": rf.meta["dataset"], "annotators": per_annotator, "pairs": pairs,
            "kappa_mean": float(np.mean(kappas)) if kappas else None,
            "self_consistency_mean": float(np.mean(consist)) if consist else None,
            "by_rule": {r: {d: c.get(d, 0) for d in DECISIONS} for r, c in sorted(by_rule.items())},
            "checker": checker,
            "paper": {"kappa": PAPER_KAPPA, "self_consistency": PAPER_SELF_CONSISTENCY}}


def _pct(v: float | None, unit: str = "") -> str:
    return "n/a" if v is None else f"{v:.1f}{unit}"


def stats_markdown(s: dict[str, Any]) -> str:
    """The review figures as Markdown tables, beside the paper's."""
    lines = [markdown_table(
        ["annotator", "items judged", "accept", "correct", "discard", "repeats",
         "self-consistency %"],
        [[n, f"{a['items']} of {a['of']}", *(a["decisions"].get(d, 0) for d in DECISIONS),
          a["repeats"], _pct(a["self_consistency"])] for n, a in s["annotators"].items()])]
    if s["pairs"]:
        lines += ["", markdown_table(["pair", "items both judged", "Cohen's kappa %",
                                      "raw agreement %"],
                                     [[p, v["items"], _pct(v["kappa"]), _pct(v["agreement"])]
                                      for p, v in s["pairs"].items()])]
    lines += ["", f"Mean kappa {_pct(s['kappa_mean'], '%')} and self-consistency "
              f"{_pct(s['self_consistency_mean'], '%')} (the paper's expert review: kappa "
              f"{PAPER_KAPPA:g}%, self-consistency {PAPER_SELF_CONSISTENCY:g}%)."]
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


def _verdict(judged: list[dict[str, Any]], min_annotators: int) -> tuple[str, dict | None]:
    """(kept / discarded / disputed / unreviewed, the correction to use or None)."""
    if len(judged) < min_annotators:
        return "unreviewed", None
    if any(d["decision"] == "discard" for d in judged):
        return "discarded", None
    fixes = [d for d in judged if d["decision"] == "correct"]
    if not fixes:
        return "kept", None
    texts = {(plain_text(d["situation"]), tuple(sorted(plain_text(a) for a in d["answers"])))
             for d in fixes}
    return ("kept", fixes[0]) if len(texts) == 1 else ("disputed", None)


_VIEW_SUFFIX = {90: 1, 270: 3}  # the release's id scheme: 0 and 180 keep the base id


def _item(row: dict[str, Any], qid: Any, deg: int, fix: dict | None) -> dict[str, Any]:
    answers = list(fix["answers"]) if fix else list(row["answers"])
    file_id = int(qid) * 100 + _VIEW_SUFFIX[deg] if deg in _VIEW_SUFFIX else int(qid)
    return {"scene_id": row["scene_id"],
            "situation": fix["situation"] if fix else row["situation"],
            "alternative_situation": list(row.get("alternative_situation") or []) if not deg
            else [],
            "question": row["question"], "question_id": file_id,
            "answers": [{"answer": a, "answer_confidence": "yes", "answer_id": i + 1}
                        for i, a in enumerate(answers)],
            "rotation": {k: float(row["rotation"][k]) for k in ("_x", "_y", "_z", "_w")},
            "position": {k: float(row["position"][k]) for k in "xyz"}}


def export_rotations(dataset: str | os.PathLike, reviews: str | os.PathLike,
                     out: str | os.PathLike, *, min_annotators: int = 1) -> dict[str, Any]:
    """The reviewed set in the release's format (``rotation_{0,90,180,270}.json``, the
    release's id scheme, and the de-biased file), with ``review.json`` (the review's figures
    and what was dropped), written atomically. Returns that summary."""

    if min_annotators < 1:
        raise ValueError(f"min_annotators {min_annotators}: expected at least 1")
    rf = ReviewFolder(reviews, dataset)
    views = sorted({k for _, k in rf.rows})
    if tuple(views) != RELEASE_VIEWPOINTS:
        raise ValueError(f"{dataset}: viewpoints {views}; the release's format holds "
                         f"{list(RELEASE_VIEWPOINTS)}")
    firsts = {n: rf.first_decisions(n) for n in rf.annotators()}
    groups: dict[Any, dict[int, dict[str, Any]]] = {}
    for (q, k), row in rf.rows.items():
        groups.setdefault(q, {})[k] = row
    verdicts = collections.Counter()
    kept_groups = {}
    for q, g in groups.items():
        fixes, ok = {}, len(g) == len(views)
        for k in sorted(g):
            if not k:
                continue
            v, fix = _verdict([f[(q, k)] for f in firsts.values() if (q, k) in f],
                              min_annotators)
            verdicts[v] += 1
            ok &= v == "kept"
            fixes[k] = fix
        if ok:
            kept_groups[q] = fixes
    src = Path(dataset)
    head = {}
    if (src / "rotation_0.json").is_file():
        data = read_json(src / "rotation_0.json")
        head = {k: v for k, v in data.items() if k != "questions"}
    head = head or {"info": {"description": "Real-3DQA rotations reviewed with hf_real3d"},
                    "license": None}
    stats = review_stats(rf)
    summary = {"dataset": str(dataset), "groups": len(groups), "exported": len(kept_groups),
               "items": dict(verdicts), "min_annotators": min_annotators,
               "rule": "kept when no annotator discards it and every correction agrees; a "
                       "group when every turned viewpoint is kept", "stats": stats}
    with atomic_dir(out) as tmp:
        for k in views:
            items = [_item(groups[q][k], q, k, kept_groups[q].get(k)) for q in
                     sorted(kept_groups, key=str)]
            write_json(tmp / f"rotation_{k}.json", {**head, "questions": items}, indent=2)
        if (src / DEBIASED_FILE).is_file():
            (tmp / DEBIASED_FILE).write_bytes((src / DEBIASED_FILE).read_bytes())
        else:
            rows0 = [groups[q][0] for q in sorted(kept_groups, key=str)]
            write_json(tmp / DEBIASED_FILE, {**head, "questions": [
                {**_item(r, r["question_id"], 0, None),
                 "question_type": str(r.get("question_type") or "")} for r in rows0]},
                indent=2)
        write_json(tmp / "review.json", summary, indent=2)
    return summary
