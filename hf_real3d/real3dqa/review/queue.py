"""A review in progress: the rotation set's items, the queue each annotator is shown, and the
checked decisions written to their log.

:meth:`ReviewFolder.create` makes a folder (``review.json`` and the stored checks, see
:mod:`~hf_real3d.real3dqa.review.folder`); :meth:`ReviewFolder.open` opens one for judging
or exporting, with the rotation set it reviews. Statistics need neither: they read
:meth:`ReviewFolder.read_log` (the decisions and the stored checks only).

Each annotator's queue holds every rotated item once, group by group (groups with a defect
first, then those that need the scene, in an order drawn by the seed), and a share of the
groups again, whole and unannounced (:func:`place_second_looks`): a second look comes as a
group between two groups, at least ``repeat_gap`` showings after its first look and after
the next two groups, at a distance drawn by the seed, among groups of its own verdict. A
first decision on a showing that the file already holds (a second tab, a second session) is
refused, as is a revision of a decision another tab has revised since.
"""

from __future__ import annotations

import bisect
import os
import zlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from hf_real3d._io import FormatError
from hf_real3d.real3dqa.format import plain_text

from .folder import (
    CHECKS_DIR,
    QUEUE_DEFAULTS,
    StoredChecks,
    create_folder,
    read_meta,
    run_checker,
    set_items,
)
from .log import DECISIONS, DecisionLog, ReviewEntry, check_annotator, plain_answers

__all__ = ["ReviewFolder", "Refused", "place_second_looks", "gap_cost", "MAX_REASON",
           "MAX_TEXT", "MAX_ANSWERS", "LISTED"]

MAX_REASON = 1000  # characters of a reason
MAX_TEXT = 2000  # characters of a corrected situation, and of all its answers together
MAX_ANSWERS = 20
LISTED = 40  # decisions the Review tab lists: fewer than the default gap (see gap_cost)
_VERDICT_RANK = {"defect": 0, "needs_scene": 1, "pass": 2}


class Refused(ValueError):
    """A decision refused for what a box holds: ``box`` names the box to fix (``situation``,
    ``answers`` or ``reason``)."""

    def __init__(self, message: str, box: str):
        super().__init__(message)
        self.box = box


def _groups(verdicts: dict[tuple[Any, int], dict[str, Any]], seed: int
            ) -> list[tuple[int, list[tuple[Any, int]]]]:
    """Every group as (tier, its items in turn): groups with a defect (tier 0), then those
    with an item that needs the scene (1), then the rest (2), each tier in an order drawn by
    the seed (so an id or a scene that comes back out of order tells nothing)."""
    groups: dict[Any, list[int]] = {}
    rank: dict[Any, int] = {}
    for (q, k), v in verdicts.items():
        groups.setdefault(q, []).append(k)
        r = _VERDICT_RANK.get(v.get("verdict"), 2)
        if r == 2 and v.get("rules"):
            r = 1
        rank[q] = min(rank.get(q, 2), r)
    ids = sorted(groups, key=str)
    draw = np.random.default_rng(seed).random(len(ids))
    order = sorted(range(len(ids)), key=lambda i: (rank[ids[i]], draw[i]))
    return [(rank[ids[i]], [(ids[i], k) for k in sorted(groups[ids[i]])]) for i in order]


def place_second_looks(groups: Sequence[tuple[int, Sequence[tuple[Any, int]]]], share: float,
                       gap: int, rng: np.random.Generator) -> list[ReviewEntry]:
    """The queue: each group's items in turn (first looks), and ``round(share * groups)``
    groups shown again whole (second looks, ``repeat=True``) between two groups of the same
    tier, at least ``gap`` showings after their first look and after the next two groups.
    The distance beyond that is drawn from an exponential law of mean ``gap`` (memoryless:
    the time since a group was seen says nothing of whether it comes back now); a group whose
    draw would leave its tier is not shown again, another one is drawn (each tier's order is
    drawn too, so which groups come back stays a random share)."""
    starts = [0]
    for _, items in groups:
        starts.append(starts[-1] + len(items))
    tier_end, eligible = {}, []
    for j in reversed(range(len(groups))):
        last = j + 1 == len(groups) or groups[j + 1][0] != groups[j][0]
        tier_end[j] = starts[j + 1] if last else tier_end[j + 1]
    for j in range(len(groups)):
        lo = max(starts[j] + gap, starts[min(j + 3, len(groups))])
        if lo <= tier_end[j]:
            eligible.append((j, lo, tier_end[j]))
    k = int(round(share * len(groups)))
    at: dict[int, list[tuple[float, int]]] = {}
    for i in rng.permutation(len(eligible)).tolist():
        j, lo, hi = eligible[i]
        x = rng.exponential(gap)
        if k and lo + x <= hi:  # else the draw would leave the tier: another group is drawn
            at.setdefault(bisect.bisect_left(starts, lo + x), []).append((x, j))
            k -= 1
    out: list[ReviewEntry] = []
    for b in range(len(groups) + 1):
        for _, j in sorted(at.get(b, [])):
            out += [ReviewEntry(q, d, repeat=True) for q, d in groups[j][1]]
        if b < len(groups):
            out += [ReviewEntry(q, d) for q, d in groups[b][1]]
    return out


def gap_cost(gap: int) -> str:
    """What a ``repeat_gap`` below the default costs, in one line ("" at or above it)."""
    default = QUEUE_DEFAULTS["repeat_gap"]
    if gap >= default:
        return ""
    listed = (f", and while its first look is still among the {LISTED} decisions the Review "
              "tab lists" if gap < LISTED + 3 else "")
    return (f"note: a gap of {gap} is below the default {default}: a second look may come "
            f"{gap} showings after its first, soon enough to remember the item{listed}; "
            "self-consistency then measures memory more than agreement")


def _open_log(folder: Path, meta: dict[str, Any], checks: StoredChecks) -> DecisionLog:
    return DecisionLog(folder, checks, meta["dataset"], meta["fingerprint"])


class ReviewFolder:
    """A review folder opened with the rotation set it reviews: ``rows`` (every viewpoint by
    ``(question_id, rotation_deg)``), ``checks`` and ``proposals`` (the stored suggestions by
    item), ``log`` (the decisions) and ``meta`` (``review.json``). Made by :meth:`create` or
    :meth:`open`."""

    def __init__(self, folder: Path, meta: dict[str, Any], rotation_set, checks: StoredChecks):
        self.folder = folder
        self.meta = meta
        self.rotation_set = rotation_set
        self.dataset = Path(rotation_set.path)
        self.rows = set_items(rotation_set)[0]
        self.checks = checks.verdicts  # (question_id, deg) -> the checker's verdict line
        self.proposals = checks.proposals  # (question_id, deg) -> proposed repairs
        self.log = _open_log(folder, meta, checks)
        self._ids = {str(q): q for q, _ in self.rows}
        self._groups = _groups(self.checks, int(meta["seed"]))
        self._order = [key for _, items in self._groups for key in items]
        self._queues: dict[str, list[ReviewEntry]] = {}

    @classmethod
    def create(cls, folder: str | os.PathLike, dataset: str | os.PathLike, *,
               scenes: str | os.PathLike | None = None,
               checks: str | os.PathLike | None = None, repeat_share: float | None = None,
               repeat_gap: int | None = None, seed: int | None = None) -> ReviewFolder:
        """Make a review folder for the rotation set ``dataset`` (``folder`` new or empty):
        ``checks``: a ``hf-real3d check-rotations`` output folder to take the suggestions from
        (default: the dataset folder's own ``checks/`` when it covers the set, else the
        checker runs); the queue's settings default to 0.1 of the groups shown again at least
        50 showings later (:func:`place_second_looks`), seed 0."""
        from hf_real3d.real3dqa.rotation_set import read_rotation_set  # the set's reader

        rs = read_rotation_set(dataset, scenes)
        meta, stored = create_folder(Path(folder), rs, dataset, checks=checks, settings={
            "repeat_share": repeat_share, "repeat_gap": repeat_gap, "seed": seed})
        return cls(Path(folder), meta, rs, stored)

    @classmethod
    def open(cls, folder: str | os.PathLike, dataset: str | os.PathLike | None = None, *,
             scenes: str | os.PathLike | None = None, repeat_share: float | None = None,
             repeat_gap: int | None = None, seed: int | None = None) -> ReviewFolder:
        """Open a review folder with its rotation set (``dataset``, default: the path in
        ``review.json``), which must be the set the folder was made for. The queue's settings,
        when given, must be the folder's own."""
        from hf_real3d.real3dqa.rotation_set import read_rotation_set  # the set's reader

        folder = Path(folder)
        meta = read_meta(folder)
        asked = {"repeat_share": repeat_share, "repeat_gap": repeat_gap, "seed": seed}
        clash = {k: v for k, v in asked.items() if v is not None and meta.get(k) != v}
        if clash:
            raise ValueError(f"{folder / 'review.json'}: this folder's queue was made with "
                             + ", ".join(f"{k} {meta.get(k)}" for k in clash)
                             + "; leave those options out or start another review folder")
        if dataset is None:
            dataset = meta["dataset"]
            if not Path(dataset).exists():
                raise FileNotFoundError(
                    f"{folder / 'review.json'}: the rotation set it reviews, {dataset} (the "
                    "path recorded in review.json), is no longer there; give its new place "
                    "with `dataset`")
        rs = read_rotation_set(dataset, scenes)
        fp = rs.fingerprint()
        if meta["fingerprint"] != fp:
            raise FormatError(f"{folder}: this review folder was written for the rotation set "
                              f"{meta['dataset']!r} (fingerprint {meta['fingerprint']}), not "
                              f"{str(dataset)!r} (fingerprint {fp}); give the set it reviews, or "
                              "another review folder")
        if (folder / CHECKS_DIR / "verdicts.jsonl").is_file():
            stored = StoredChecks.read(folder / CHECKS_DIR, *set_items(rs))
        else:  # a folder made before checks were stored: the checker runs (nothing written)
            stored = run_checker(rs)
        return cls(folder, meta, rs, stored)

    @staticmethod
    def read_log(folder: str | os.PathLike) -> DecisionLog:
        """The decisions of a review folder and its stored checks, without reading the
        rotation set (what statistics need)."""
        folder = Path(folder)
        meta = read_meta(folder)
        if not (folder / CHECKS_DIR / "verdicts.jsonl").is_file():
            return ReviewFolder.open(folder).log  # made before checks were stored
        return _open_log(folder, meta, StoredChecks.read(folder / CHECKS_DIR))

    # --- the queue -----------------------------------------------------------------------

    @property
    def order(self) -> list[tuple[Any, int]]:
        """Every rotated item once, as ``(question_id, rotation_deg)``: groups with a defect
        first, then those that need the scene, each tier in an order drawn by the seed, each
        group's viewpoints in turn (every annotator's first looks, in order)."""
        return list(self._order)

    def queue(self, annotator: str) -> list[ReviewEntry]:
        """What ``annotator`` is shown, in order: every rotated item once, and a share of the
        groups again (:func:`place_second_looks`), chosen by the seed and the name."""
        annotator = check_annotator(annotator)
        if annotator not in self._queues:
            rng = np.random.default_rng([int(self.meta["seed"]),
                                         zlib.crc32(annotator.encode())])
            self._queues[annotator] = place_second_looks(
                self._groups, float(self.meta["repeat_share"]), int(self.meta["repeat_gap"]),
                rng)
        return list(self._queues[annotator])

    def item_id(self, qid: Any) -> Any:
        """The set's own id for ``qid`` written as text (a web page's, a CSV's)."""
        if str(qid) not in self._ids:
            raise ValueError(f"question_id {qid} is not a group of {self.meta['dataset']}")
        return self._ids[str(qid)]

    def greeting(self, annotator: str) -> str:
        """``new annotator`` or ``resuming, N of M done`` (showings of the queue, repeats
        included, so nothing tells a repeat apart); a name that differs from an existing
        annotator's only in case is refused (it would start a second queue for one
        person)."""
        annotator = check_annotator(annotator)
        others = self.log.same_but_case(annotator)
        if others:
            raise ValueError(f"annotator name {annotator!r}: the folder has {others[0]!r}, which "
                             "differs only in case; type that name to resume its queue, or "
                             "choose a name of your own")
        _, done, total = self.next_entry(annotator)
        if not self.decisions(annotator):
            return f"new annotator {annotator}"
        return f"resuming {annotator}, {done:,} of {total:,} done"

    def next_entry(self, annotator: str) -> tuple[ReviewEntry | None, int, int]:
        """(the first entry of the queue the annotator has not decided, entries done, entries
        in the queue: every item once plus the repeats)."""
        done = {(d["question_id"], d["rotation_deg"], d["repeat"])
                for d in self.decisions(annotator)}
        queue = self.queue(annotator)
        left = [e for e in queue if e.key not in done]
        return (left[0] if left else None), len(queue) - len(left), len(queue)

    # --- the annotators' decisions (the log) ---------------------------------------------

    def decisions(self, annotator: str) -> list[dict[str, Any]]:
        """Every decision of the annotator, history included (:meth:`DecisionLog.decisions`)."""
        return self.log.decisions(annotator)

    def standing(self, annotator: str, entry: ReviewEntry) -> dict[str, Any] | None:
        """The annotator's latest decision on this showing of the item, or None."""
        return next((d for d in reversed(self.decisions(annotator))
                     if (d["question_id"], d["rotation_deg"], d["repeat"]) == entry.key), None)

    # --- writing a decision ----------------------------------------------------------------

    def validate(self, entry: ReviewEntry, decision: str, reason: str = "", *,
                 situation: str | None = None, answers: Sequence[str] | None = None,
                 repair: dict[str, Any] | None = None) -> dict[str, Any]:
        """The fields of a decision on ``entry``, checked as the Review tab and review-import
        check them (no file is touched): an accept must not carry edited text (that is a
        correction), a correction must change the text beyond case and spaces, a correction
        or a discard needs a reason, and texts have a length limit."""
        if decision not in DECISIONS:
            raise ValueError(f"decision {decision!r}: expected one of {DECISIONS}")
        key = (entry.question_id, entry.rotation_deg)
        if key not in self.checks:
            raise ValueError(f"question_id {key[0]} at {key[1]} degrees is not a rotated item "
                             "of this review's set")
        item = f"question_id {key[0]} at {key[1]} degrees"
        reason = (reason or "").strip()
        if len(reason) > MAX_REASON:
            raise Refused(f"{item}: the reason has {len(reason):,} characters; keep it under "
                          f"{MAX_REASON:,} (put long notes in a file of your own)", "reason")
        sit, ans = _texts(item, situation, answers)
        out: dict[str, Any] = {"decision": decision, "reason": reason}
        edited = _edited(self.rows[key], sit, ans)
        unedited = decision == "correct" and not edited
        if unedited or (decision != "accept" and not reason):
            raise Refused(_lacks(item, decision, unedited, reason),
                          "situation" if unedited else "reason")
        if decision == "accept" and edited:
            raise ValueError(f"{item}: you edited the {' and '.join(edited)}, so this is a "
                             "correction, not an accept: press Correct (with a reason) to save "
                             "the edit, or press Reset text to put the item's own text back "
                             "and accept it; nothing was saved")
        if decision == "correct":
            out.update(_correction(item, self.rows[key], sit, ans))
        if repair is not None:
            out["repair"] = {k: repair[k] for k in ("rule", "field", "action") if k in repair}
        return out

    def record(self, annotator: str, entry: ReviewEntry, decision: str, reason: str = "", *,
               situation: str | None = None, answers: Sequence[str] | None = None,
               revises: int | None = None, repair: dict[str, Any] | None = None
               ) -> dict[str, Any]:
        """Check a decision (:meth:`validate`) and append it to the annotator's file at once
        (:meth:`DecisionLog.append`). ``revises``: the number (``n``) of the annotator's
        decision on this showing that this one supersedes; without it the item must not have
        been judged yet (else :class:`JudgedElsewhere`, nothing written)."""
        annotator = check_annotator(annotator)
        fields = self.validate(entry, decision, reason, situation=situation, answers=answers,
                               repair=repair)
        return self.log.append(annotator, entry, fields, revises)


def _texts(item: str, situation: Any, answers: Any) -> tuple[str | None, list[str] | None]:
    if situation is not None and not isinstance(situation, str):
        raise ValueError(f"{item}: situation {situation!r} is not text")
    if answers is not None and (isinstance(answers, str) or
                                not all(isinstance(a, str) for a in answers)):
        raise ValueError(f"{item}: answers {answers!r} is not a list of texts")
    sit = None if situation is None else situation.strip()
    ans = None if answers is None else [a.strip() for a in answers if a.strip()]
    return sit, ans


def _edited(row: dict[str, Any], sit: str | None, ans: list[str] | None) -> list[str]:
    """Which of the item's texts the typed ones change beyond case and spaces."""
    out = []
    if sit is not None and plain_text(sit) != plain_text(row["situation"]):
        out.append("situation")
    if ans is not None and plain_answers(ans) != plain_answers(row["answers"]):
        out.append("answers")
    return out


def _lacks(item: str, decision: str, unedited: bool, reason: str) -> str:
    """Everything a correction or a discard lacks, in one message."""
    lacks = ["must change the situation or the answers beyond case and spaces"] * unedited
    lacks += ["needs a reason"] * (not reason)
    noun = "a correction" if decision == "correct" else f"a decision to {decision}"
    fix = ("" if not unedited else "; accept the item as it is instead" if reason else
           "; edit the text and type a reason, or accept the item as it is")
    return f"{item}: {noun} {' and '.join(lacks)}{fix}"


def _correction(item: str, row: dict[str, Any], sit: str | None, ans: list[str] | None
                ) -> dict[str, Any]:
    sit = row["situation"].strip() if sit is None else sit
    ans = [a.strip() for a in row["answers"]] if ans is None else ans
    if not sit or not ans:
        raise Refused(f"{item}: a correction needs a situation and at least one answer",
                      "answers" if sit else "situation")
    if len(sit) > MAX_TEXT or sum(map(len, ans)) > MAX_TEXT or len(ans) > MAX_ANSWERS:
        raise ValueError(f"{item}: the correction is too long (at most {MAX_TEXT:,} characters "
                         f"of situation and of answers, {MAX_ANSWERS} answers)")
    return {"situation": sit, "answers": ans}
