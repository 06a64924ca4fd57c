"""A review folder: the queue each annotator is shown, the checker's suggestions beside it,
and the decisions people make (responses), appended and never rewritten.

Files of a review folder ``R``:

* ``R/review.json``: the rotation set it reviews (its path and a fingerprint of its rotated
  items) and the queue's settings (share of items shown twice, how many items later, seed);
* ``R/checks/``: the checker's suggestions, stored once when the folder is made (read from
  ``hf-real3d check-rotations`` output when there is one, else computed):
  ``verdicts.jsonl`` (one line per rotated item: verdict, sense, rules, hits) and
  ``repairs.jsonl`` (the proposed fixes);
* ``R/<annotator>.jsonl``: one line per decision, appended under a lock in one write and
  flushed to disk. A line holds the item (``question_id``, ``rotation_deg``), whether it
  was the unannounced second showing (``repeat``), the ``decision`` (``accept``, ``correct``
  or ``discard``), the ``reason``, a correction's ``situation`` and ``answers``, what the
  checker suggested (``verdict``, ``sense``, ``rules``), ``repair`` when the decision takes
  a proposed fix, and ``revises`` (the number of the line it supersedes) when the annotator
  reopened the item. ``n`` is the line's number among the file's decisions.

A later decision on an item supersedes the earlier one (the history stays in the file);
everything reads the latest. A first decision on an item that the file already holds (a
second tab, a second session) is refused, as is a revision of a decision that another tab
has revised since.
"""

from __future__ import annotations

import csv
import fcntl
import hashlib
import json
import os
import re
import time
import unicodedata
import zlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from hf_real3d._io import FormatError, atomic_dir, read_json, read_jsonl, read_text, write_json
from hf_real3d.real3dqa.format import plain_text

__all__ = ["DECISIONS", "ReviewEntry", "ReviewFolder", "JudgedElsewhere", "check_annotator",
           "MAX_REASON", "MAX_TEXT", "item_label", "import_decisions"]

DECISIONS = ("accept", "correct", "discard")
MAX_REASON = 1000  # characters of a reason
MAX_TEXT = 2000  # characters of a corrected situation, and of all its answers together
MAX_ANSWERS = 20
_META = "review.json"
CHECKS_DIR = "checks"
_NAME_RULE = ("1-64 characters: letters (any alphabet), digits, '_', '.' or '-', starting "
              "with a letter or a digit (it names the annotator's file)")
_VERDICT_RANK = {"defect": 0, "needs_scene": 1, "pass": 2}


class JudgedElsewhere(ValueError):
    """The item was judged (or revised) by the same annotator in another tab or session since
    this one showed it; nothing was written."""


@dataclass(frozen=True)
class ReviewEntry:
    """One showing of a rotated item to an annotator."""

    question_id: Any
    rotation_deg: int
    repeat: bool = False

    @property
    def key(self) -> tuple[Any, int, bool]:
        return (self.question_id, self.rotation_deg, self.repeat)


def check_annotator(name: str) -> str:
    """An annotator's name (NFC), which names their file: letters of any alphabet, digits,
    ``_ . -``, starting with a letter or a digit, at most 64 characters."""
    raw = name if isinstance(name, str) else ""
    name = unicodedata.normalize("NFC", raw.strip())
    bad = None
    if not name:
        bad = "is empty"
    elif len(name) > 64:
        bad = f"has {len(name)} characters"
    elif not name[0].isalnum():
        bad = f"starts with {name[0]!r}"
    else:
        odd = [c for c in name if not (c.isalnum() or c in "_.-")]
        if odd:
            bad = f"contains {odd[0]!r}"
    if bad:
        raise ValueError(f"annotator name {raw!r} {bad}: use {_NAME_RULE}")
    return name


def _plain_answers(answers: Iterable[str]) -> tuple[str, ...]:
    return tuple(sorted(plain_text(a) for a in answers))


def item_label(d: dict[str, Any]) -> str:
    """What agreement compares, as the export does: the decision, and for a correction its
    text up to case and spaces (two different corrections disagree)."""
    if d["decision"] != "correct":
        return d["decision"]
    return "correct: " + plain_text(d["situation"]) + " -> " + " | ".join(
        _plain_answers(d["answers"]))



class ReviewFolder:
    """A review folder and the rotation set it reviews (see the module docstring).

    ``create``: make the folder (``review.json`` and the stored checks) when it has no
    ``review.json``; with ``create=False`` (statistics, exports) a folder without one is an
    error and nothing is written. ``checks``: a ``hf-real3d check-rotations`` output folder to
    take the suggestions from when the folder is made (default: the dataset folder's own
    ``checks/`` when it covers the set, else the checker runs)."""

    def __init__(self, folder: str | os.PathLike, dataset: str | os.PathLike | None = None, *,
                 scenes: str | os.PathLike | None = None,
                 checks: str | os.PathLike | None = None, repeat_share: float | None = None,
                 repeat_gap: int | None = None, seed: int | None = None, create: bool = True):
        # the rotation set's reader; the checker only when no stored checks exist
        from hf_real3d.real3dqa.rotation_set import read_rotation_set

        self.folder = Path(folder)
        meta_path = self.folder / _META
        meta = read_json(meta_path) if meta_path.is_file() else None
        if meta is not None and (not isinstance(meta, dict) or "fingerprint" not in meta
                                 or "dataset" not in meta):
            raise FormatError(f"{meta_path}: not a review folder's review.json (an object with "
                              "the dataset and its fingerprint); move it away or give another "
                              "review folder")
        if meta is None and not create:
            raise FileNotFoundError(
                f"{self.folder}: no review.json, so not a review folder; make one with "
                "hf-real3d review-init `dataset` SET `review` FOLDER (or explore `review`)")
        if dataset is None:
            if meta is None:
                raise FileNotFoundError(f"{self.folder}: no review.json; give the rotation set "
                                        "to review (`dataset`) to start a review folder")
            dataset = meta["dataset"]
            if not Path(dataset).exists():
                raise FileNotFoundError(
                    f"{meta_path}: the rotation set it reviews, {dataset} (the path recorded "
                    "in review.json), is no longer there; give its new place with `dataset`")
        self.rotation_set = read_rotation_set(dataset, scenes)
        rotated = [r for r in self.rotation_set.rows if int(r["rotation_deg"])]
        fp = self.rotation_set.fingerprint()
        asked = {"repeat_share": repeat_share, "repeat_gap": repeat_gap, "seed": seed}
        self.rows = {(r["question_id"], int(r["rotation_deg"])): r
                     for r in self.rotation_set.rows}
        self._ids = {str(q): q for q, _ in self.rows}
        keys = sorted(((r["question_id"], int(r["rotation_deg"])) for r in rotated), key=str)
        if meta is None:
            if self.folder.exists() and (not self.folder.is_dir() or any(self.folder.iterdir())):
                raise FileExistsError(f"{self.folder}: exists and is not a review folder (no "
                                      "review.json); give a new or empty folder")
            settings = {"repeat_share": 0.1, "repeat_gap": 10, "seed": 0}
            settings.update({k: v for k, v in asked.items() if v is not None})
            if not 0 <= settings["repeat_share"] <= 1 or settings["repeat_gap"] < 1:
                raise ValueError(f"repeat share {settings['repeat_share']} must lie in [0, 1] "
                                 f"and repeat gap {settings['repeat_gap']} be at least 1")
            verdicts, proposals, source = self._find_checks(dataset, checks, keys)
            meta = {"dataset": str(Path(dataset).resolve()), "fingerprint": fp,
                    "items": len(rotated), "checks": source,
                    "created": time.strftime("%Y-%m-%dT%H:%M:%S"), **settings}
            self.folder.mkdir(parents=True, exist_ok=True)
            with atomic_dir(self.folder / CHECKS_DIR) as tmp:
                _write_lines(tmp / "verdicts.jsonl", [verdicts[k] for k in keys])
                _write_lines(tmp / "repairs.jsonl", proposals)
            write_json(meta_path, meta, indent=2)  # last: its presence marks a whole folder
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
            if checks is not None:
                raise ValueError(f"{meta_path}: the folder's checks were stored when it was "
                                 "made; leave `checks` out, or start another review folder")
            verdicts, proposals = self._stored_checks(keys, dataset)
        self.meta = meta
        self.dataset = Path(dataset)
        # per annotator file: (bytes parsed, their hash, lines parsed, decisions) of the last read
        self._files: dict[Path, tuple] = {}
        self._queues: dict[str, list[ReviewEntry]] = {}
        self.checks = verdicts  # (question_id, deg) -> verdict line
        self.proposals: dict[tuple[Any, int], list[dict[str, Any]]] = {}
        for p in proposals:
            self.proposals.setdefault((self._ids.get(str(p["question_id"]), p["question_id"]),
                                       int(p["rotation_deg"])), []).append(p)
        self.rules = {k: list(v.get("rules", [])) for k, v in verdicts.items()}
        self.details = {k: [h.get("detail", "") for h in v.get("hits", [])]
                        for k, v in verdicts.items()}
        self._order = self._base_order()

    # --- the checker's suggestions -----------------------------------------------------

    def _find_checks(self, dataset, checks, keys):
        """(verdict lines by item, proposals, where they came from) for a new folder."""
        if checks is not None:
            got = _read_checks(Path(checks), keys, self.rows, strict=True,
                               rs=self.rotation_set)
            return (*got, f"hf-real3d check-rotations output {Path(checks).resolve()}")
        own = Path(dataset) / "checks"
        if (own / "verdicts.jsonl").is_file():
            got = _read_checks(own, keys, self.rows, strict=False, rs=self.rotation_set)
            if got is not None:
                return (*got, f"the dataset folder's stored checks {own.resolve()}")
        return (*self._run_checker(), "the rotation checker, run when the folder was made")

    def _run_checker(self):
        # the checker itself only when no stored checks are there
        from hf_real3d.real3dqa.check_rotations import check_set, repairs

        result = check_set(self.rotation_set)
        verdicts = {(it.question_id, it.rotation_deg): _verdict_line(it.to_dict())
                    for it in result.items}
        return verdicts, repairs(result, self.rotation_set)

    def _stored_checks(self, keys, dataset):
        here = self.folder / CHECKS_DIR
        if (here / "verdicts.jsonl").is_file():
            got = _read_checks(here, keys, self.rows, strict=True)
            return got
        # a folder made before checks were stored: the checker runs (nothing is written)
        return self._run_checker()

    def suggestion(self, key: tuple[Any, int]) -> dict[str, Any]:
        """What the checker says of an item: ``verdict``, ``sense``, ``rules``."""
        v = self.checks.get(key, {})
        return {"verdict": v.get("verdict"), "sense": v.get("sense"),
                "rules": list(v.get("rules", []))}

    # --- the queue -----------------------------------------------------------------------

    @property
    def order(self) -> list[tuple[Any, int]]:
        """Every rotated item once, as ``(question_id, rotation_deg)``: groups with a flagged
        item first (defects, then items that need the scene), each group's viewpoints in turn
        (every annotator's queue before repeats)."""
        return list(self._order)

    def _base_order(self) -> list[tuple[Any, int]]:
        groups: dict[Any, list[int]] = {}
        rank: dict[Any, int] = {}
        for (q, k), v in self.checks.items():
            groups.setdefault(q, []).append(k)
            r = _VERDICT_RANK.get(v.get("verdict"), 2)
            if r == 2 and v.get("rules"):
                r = 1
            rank[q] = min(rank.get(q, 2), r)
        order = sorted(groups, key=lambda q: (rank[q], str(q)))
        return [(q, k) for q in order for k in sorted(groups[q])]

    def queue(self, annotator: str) -> list[ReviewEntry]:
        """What ``annotator`` is shown, in order: every rotated item once, and a share of them
        again ``repeat_gap`` items later (or at the end), chosen by the seed and the name."""
        annotator = check_annotator(annotator)
        if annotator in self._queues:
            return list(self._queues[annotator])
        n = len(self._order)
        rng = np.random.default_rng([int(self.meta["seed"]), zlib.crc32(annotator.encode())])
        k = int(round(float(self.meta["repeat_share"]) * n))
        again = set(rng.choice(n, size=k, replace=False).tolist()) if k else set()
        keyed = [((p, 0), ReviewEntry(q, d)) for p, (q, d) in enumerate(self._order)]
        keyed += [((min(p + int(self.meta["repeat_gap"]), n - 1), 1),
                   ReviewEntry(*self._order[p], repeat=True)) for p in sorted(again)]
        self._queues[annotator] = [e for _, e in sorted(keyed, key=lambda x: x[0])]
        return list(self._queues[annotator])

    def item_id(self, qid: Any) -> Any:
        """The set's own id for ``qid`` written as text (a web page's, a CSV's)."""
        if str(qid) not in self._ids:
            raise ValueError(f"question_id {qid} is not a group of {self.meta['dataset']}")
        return self._ids[str(qid)]

    # --- files ---------------------------------------------------------------------------

    def path(self, annotator: str) -> Path:
        return self.folder / f"{check_annotator(annotator)}.jsonl"

    def annotators(self) -> list[str]:
        return sorted(unicodedata.normalize("NFC", p.stem) for p in self.folder.glob("*.jsonl"))

    def greeting(self, annotator: str) -> str:
        """``new annotator`` or ``resuming, N done``; a name that differs from an existing
        annotator's only in case is refused (it would start a second queue for one person)."""
        annotator = check_annotator(annotator)
        others = [a for a in self.annotators()
                  if a != annotator and a.casefold() == annotator.casefold()]
        if others:
            raise ValueError(f"annotator name {annotator!r}: the folder has {others[0]!r}, which "
                             "differs only in case; type that name to resume its queue, or "
                             "choose a name of your own")
        latest = self.latest(annotator)
        if not latest:
            return f"new annotator {annotator}"
        return f"resuming {annotator}, {len(latest)} of {len(self._order)} items done"

    def check_writable(self) -> None:
        """Refuse a review folder (or an annotator file in it) this process cannot write,
        before anyone types a decision."""
        bad = [p for p in [self.folder, *self.folder.glob("*.jsonl")]
               if not os.access(p, os.W_OK)]
        if bad:
            raise PermissionError(f"{bad[0]}: not writable by this user, so no decision could "
                                  "be saved; fix its permissions or review into another folder")

    def _check_line(self, d: Any, where: str) -> dict[str, Any]:
        """A decision read from a file or an import, checked: the fields it needs, an item of
        this set, and a correction that leaves nothing empty."""
        if not isinstance(d, dict) or d.get("decision") not in DECISIONS or \
                "question_id" not in d or "rotation_deg" not in d:
            raise FormatError(f"{where} is not a review decision (question_id, "
                              f"rotation_deg, decision in {DECISIONS})")
        try:
            key = (self._ids.get(str(d["question_id"]), d["question_id"]), int(d["rotation_deg"]))
        except (TypeError, ValueError):
            raise FormatError(f"{where}: rotation_deg {d['rotation_deg']!r} is not a whole "
                              "number of degrees") from None
        item = f"question_id {key[0]} at {key[1]} degrees"
        if key not in self.checks:
            raise FormatError(f"{where}: {item} is not a rotated item of "
                              f"{self.meta['dataset']}; was this file written for another "
                              "rotation set? Move it out of the folder")
        if d["decision"] == "correct":
            for name in ("situation", "answers"):
                if name not in d:
                    raise FormatError(f"{where}: {item}: a correction without its {name} field; "
                                      "fix the line (a correction carries the whole corrected "
                                      "situation and answers) or delete it")
            sit, ans = d["situation"], d["answers"]
            if not isinstance(sit, str) or not sit.strip():
                raise FormatError(f"{where}: {item}: a correction with an empty situation; "
                                  "write the situation or delete the line")
            if not isinstance(ans, list) or not ans or \
                    not all(isinstance(a, str) and a.strip() for a in ans):
                raise FormatError(f"{where}: {item}: a correction with empty answers "
                                  f"({ans!r}); give at least one answer or delete the line")
        if not isinstance(d.get("reason", ""), str):
            raise FormatError(f"{where}: {item}: reason {d['reason']!r} is not text")
        d = dict(d, question_id=key[0], rotation_deg=key[1], repeat=bool(d.get("repeat")))
        return d

    def _read(self, path: Path, errors: list[str] | None = None) -> list[dict[str, Any]]:
        """The decisions of one file in order (``n`` = their place); bad lines raise one
        :class:`FormatError` naming each, or are appended to ``errors``. Of a file that only
        grew since the last read (its earlier bytes unchanged), only the new lines are
        parsed."""
        if not path.is_file():
            return []
        known = self._files.get(path)
        data = path.read_bytes()
        start, lines_before, out = 0, 0, []
        if known is not None and len(data) >= known[0] and \
                hashlib.sha1(data[:known[0]]).digest() == known[1]:
            start, lines_before, out = known[0], known[2], list(known[3])
        raw = data[start:]
        bad: list[str] = []
        lines = raw.split(b"\n")
        for j, line in enumerate(lines, 1):
            i = lines_before + j
            if not line.strip():
                continue
            cut = j == len(lines) and not raw.endswith(b"\n")
            try:
                d = json.loads(line)
            except ValueError:
                what = re.search(rb'"question_id":\s*"?([0-9A-Za-z_-]+)', line)
                item = f" (question_id {what.group(1).decode()})" if what else ""
                if cut:
                    bad.append(f"{path}: line {i}{item} was cut mid-write (the program stopped "
                               "while writing it); delete that line and judge the item again")
                else:
                    bad.append(f"{path}: line {i}{item} is not JSON; delete or fix it")
                continue
            try:
                d = self._check_line(d, f"{path}: line {i}")
            except FormatError as err:
                bad.append(str(err))
                continue
            d["n"] = len(out) + 1
            out.append(d)
        if bad:
            self._files.pop(path, None)
            if errors is None:
                raise FormatError(_several(bad))
            errors.extend(bad)
            return out
        # the next read parses only what was appended after these bytes, if they are unchanged
        self._files[path] = (len(data), hashlib.sha1(data).digest(),
                             lines_before + len(lines) - 1, tuple(out))
        return list(out)

    def decisions(self, annotator: str) -> list[dict[str, Any]]:
        """Every decision the annotator made, in order, history included (``n``: its place);
        a line cut mid-write, a line that is not a decision, one about an item this set
        lacks or a correction that empties the item is a :class:`FormatError` naming the file,
        each bad line and the item."""
        return self._read(self.path(annotator))

    def all_decisions(self, annotators: Sequence[str] | None = None
                      ) -> dict[str, list[dict[str, Any]]]:
        """:meth:`decisions` of every annotator (or of ``annotators``); the bad lines of every
        file are named in one :class:`FormatError`."""
        names = self.annotators() if annotators is None else list(annotators)
        errors: list[str] = []
        out = {n: self._read(self.path(n), errors) for n in names}
        if errors:
            raise FormatError(_several(errors))
        return out

    def latest(self, annotator: str, decisions: Sequence[dict[str, Any]] | None = None
               ) -> dict[tuple[Any, int], dict[str, Any]]:
        """Each item's standing decision by the annotator: the latest of its first showing
        and the annotator's revisions (the repeats only measure self-consistency)."""
        ds = self.decisions(annotator) if decisions is None else decisions
        out: dict[tuple[Any, int], dict[str, Any]] = {}
        for d in ds:
            if not d["repeat"]:
                out[(d["question_id"], d["rotation_deg"])] = d
        return out

    first_decisions = latest  # the name older callers use

    def repeats(self, decisions: Sequence[dict[str, Any]]
                ) -> list[tuple[dict[str, Any], dict[str, Any]]]:
        """(the decision standing when the item came back, the repeat's latest decision) for
        each item the annotator saw twice: what self-consistency compares (revisions made
        after the repeat are edits, not inconsistency)."""
        first_rep: dict[tuple[Any, int], int] = {}
        last_rep: dict[tuple[Any, int], dict[str, Any]] = {}
        for d in decisions:
            if d["repeat"]:
                key = (d["question_id"], d["rotation_deg"])
                first_rep.setdefault(key, d["n"])
                last_rep[key] = d
        out = []
        for key, rep in last_rep.items():
            before = [d for d in decisions if not d["repeat"] and d["n"] < first_rep[key]
                      and (d["question_id"], d["rotation_deg"]) == key]
            if before:
                out.append((before[-1], rep))
        return out

    def progress(self, annotator: str, decisions: Sequence[dict[str, Any]] | None = None
                 ) -> dict[str, int]:
        """Items judged of the set's items, and second looks done of those queued."""
        ds = self.decisions(annotator) if decisions is None else decisions
        queue = self.queue(annotator)
        reps = {(d["question_id"], d["rotation_deg"]) for d in ds if d["repeat"]}
        return {"items": len(self._order), "judged": len(self.latest(annotator, ds)),
                "repeats": sum(e.repeat for e in queue), "repeats_done": len(reps)}

    def next_entry(self, annotator: str) -> tuple[ReviewEntry | None, int, int]:
        """(the first entry of the queue the annotator has not decided, entries done, entries
        in the queue: every item once plus the repeats)."""
        done = {(d["question_id"], d["rotation_deg"], d["repeat"])
                for d in self.decisions(annotator)}
        queue = self.queue(annotator)
        left = [e for e in queue if e.key not in done]
        return (left[0] if left else None), len(queue) - len(left), len(queue)

    def standing(self, annotator: str, entry: ReviewEntry) -> dict[str, Any] | None:
        """The annotator's latest decision on this showing of the item, or None."""
        found = None
        for d in self.decisions(annotator):
            if (d["question_id"], d["rotation_deg"], d["repeat"]) == entry.key:
                found = d
        return found

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
            raise ValueError(f"{item}: the reason has {len(reason):,} characters; keep it under "
                             f"{MAX_REASON:,} (put long notes in a file of your own)")
        if decision != "accept" and not reason:
            raise ValueError(f"{item}: a decision to {decision} needs a reason")
        row = self.rows[key]
        if situation is not None and not isinstance(situation, str):
            raise ValueError(f"{item}: situation {situation!r} is not text")
        if answers is not None and (isinstance(answers, str) or
                                    not all(isinstance(a, str) for a in answers)):
            raise ValueError(f"{item}: answers {answers!r} is not a list of texts")
        sit = None if situation is None else situation.strip()
        ans = None if answers is None else [a.strip() for a in answers if a.strip()]
        edited_sit = sit is not None and plain_text(sit) != plain_text(row["situation"])
        edited_ans = ans is not None and _plain_answers(ans) != _plain_answers(row["answers"])
        out: dict[str, Any] = {"decision": decision, "reason": reason}
        if decision == "accept" and (edited_sit or edited_ans):
            what = " and ".join(w for w, e in (("situation", edited_sit), ("answers", edited_ans))
                                if e)
            raise ValueError(f"{item}: you edited the {what}, so this is a correction, not an "
                             "accept: press Correct (with a reason) to save the edit, or undo "
                             "the edit to accept the item as it is; nothing was saved")
        if decision == "correct":
            sit = row["situation"].strip() if sit is None else sit
            ans = [a.strip() for a in row["answers"]] if ans is None else ans
            if not sit or not ans:
                raise ValueError(f"{item}: a correction needs a situation and at least one "
                                 "answer")
            if not (edited_sit or edited_ans):
                raise ValueError(f"{item}: a correction must change the situation or the "
                                 "answers beyond case and spaces; accept the item as it is "
                                 "instead")
            if len(sit) > MAX_TEXT or sum(map(len, ans)) > MAX_TEXT or len(ans) > MAX_ANSWERS:
                raise ValueError(f"{item}: the correction is too long (at most {MAX_TEXT:,} "
                                 f"characters of situation and of answers, {MAX_ANSWERS} "
                                 "answers)")
            out["situation"], out["answers"] = sit, ans
        if repair is not None:
            out["repair"] = {k: repair[k] for k in ("rule", "field", "action") if k in repair}
        return out

    def record(self, annotator: str, entry: ReviewEntry, decision: str, reason: str = "", *,
               situation: str | None = None, answers: Sequence[str] | None = None,
               revises: int | None = None, repair: dict[str, Any] | None = None
               ) -> dict[str, Any]:
        """Append one decision to the annotator's file at once (locked, written in one call,
        flushed to disk), checked by :meth:`validate`. ``revises``: the number (``n``) of the
        annotator's decision on this showing that this one supersedes; without it the item
        must not have been judged yet (else :class:`JudgedElsewhere`, nothing written)."""
        annotator = check_annotator(annotator)
        fields = self.validate(entry, decision, reason, situation=situation, answers=answers,
                               repair=repair)
        key = (entry.question_id, entry.rotation_deg)
        path = self.path(annotator)
        fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o666)  # the umask applies
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            sep = b""
            if os.fstat(fd).st_size:  # never append to a line a crash cut short
                os.lseek(fd, -1, os.SEEK_END)
                if os.read(fd, 1) != b"\n":
                    self.decisions(annotator)  # raises the cut line's error
                    sep = b"\n"  # a whole last line written without its newline
            past = self.decisions(annotator)
            mine = [d for d in past
                    if (d["question_id"], d["rotation_deg"], d["repeat"]) == entry.key]
            what = f"question_id {key[0]} at {key[1]} degrees" + \
                (" (second look)" if entry.repeat else "")
            if entry.repeat and revises is None and not any(
                    (d["question_id"], d["rotation_deg"]) == key and not d["repeat"]
                    for d in past):
                raise ValueError(f"{what}: a second look at an item {annotator} has not judged "
                                 "a first time")
            if revises is None and mine:
                d = mine[-1]
                raise JudgedElsewhere(
                    f"{annotator} already judged {what} ({d['decision']} at "
                    f"{d.get('time', '?')}, in another tab or session); nothing was saved. "
                    "To change it, reopen it from your decisions")
            if revises is not None and (not mine or mine[-1]["n"] != revises):
                now = f"now {mine[-1]['decision']} (decision {mine[-1]['n']})" if mine else \
                    "not judged"
                raise JudgedElsewhere(
                    f"{annotator}'s decision on {what} changed since it was reopened ({now}, in "
                    "another tab or session); nothing was saved. Reopen it again")
            line: dict[str, Any] = {
                "annotator": annotator, "n": len(past) + 1,
                "question_id": _plain(entry.question_id), "rotation_deg": entry.rotation_deg,
                "repeat": entry.repeat, **fields, **self.suggestion(key),
                "dataset": self.meta["fingerprint"],
                "time": time.strftime("%Y-%m-%dT%H:%M:%S")}
            if revises is not None:
                line["revises"] = int(revises)
            data = sep + (json.dumps(line, ensure_ascii=False) + "\n").encode()
            os.write(fd, data)
            os.fsync(fd)
        finally:
            os.close(fd)
        return line


def _plain(v: Any) -> Any:
    return v.item() if isinstance(v, np.generic) else v


def _several(errors: list[str], most: int = 12) -> str:
    if len(errors) == 1:
        return errors[0]
    files = len({e.split(": line")[0] for e in errors})
    shown = "; ".join(errors[:most])
    more = f"; and {len(errors) - most} more" if len(errors) > most else ""
    return f"{len(errors)} bad lines in {files} file(s): {shown}{more}"


def _verdict_line(d: dict[str, Any]) -> dict[str, Any]:
    keep = ("question_id", "rotation_deg", "verdict", "sense", "turn", "turn_source", "rules",
            "why")
    out = {k: d[k] for k in keep if k in d}
    out["hits"] = [{k: h[k] for k in ("rule", "detail", "needs_scene") if k in h}
                   for h in d.get("hits", [])]
    out.setdefault("rules", [h["rule"] for h in out["hits"]])
    return out


def _write_lines(path: Path, rows: Iterable[dict[str, Any]]) -> None:
    with open(path, "w", encoding="utf-8") as f:
        for r in rows:
            f.write(json.dumps(r, ensure_ascii=False) + "\n")


def _read_checks(folder: Path, keys: list[tuple[Any, int]], rows: dict[tuple[Any, int], dict],
                 *, strict: bool, rs=None):
    """(verdict lines by item, proposals) from a check-rotations output (of the set ``rs``:
    its fingerprint is compared) or a review folder's checks; lines that do not cover the
    set's rotated items, or checked another text, are an error (``strict``) or make this
    return None."""
    # the check-folder reader checks each verdict and repair (and the fingerprint)
    from hf_real3d.real3dqa.check_rotations import read_check_folder

    ids = {str(q): q for q, _ in keys}
    path = folder / "verdicts.jsonl"
    try:
        lines, proposed = read_check_folder(folder, rs)
        verdicts: dict[tuple[Any, int], dict[str, Any]] = {}
        for n, d in lines:
            if "question_id" not in d or "rotation_deg" not in d or "verdict" not in d:
                raise FormatError(f"{path}: line {n} lacks question_id, rotation_deg or "
                                  "verdict; is this check-rotations output?")
            key = (ids.get(str(d["question_id"]), d["question_id"]), int(d["rotation_deg"]))
            row = rows.get(key)
            if row is None or ("situation" in d and d["situation"] != row["situation"]) or \
                    ("answers" in d and list(d["answers"]) != list(row["answers"])):
                raise FormatError(f"{path}: line {n}: question_id {key[0]} at {key[1]} degrees "
                                  "was checked with another text than the set has (or is not "
                                  "in it); run hf-real3d check-rotations on this set again")
            verdicts[key] = _verdict_line(dict(d, question_id=key[0]))
        missing = [k for k in keys if k not in verdicts]
        if missing:
            raise FormatError(f"{path}: covers {len(verdicts)} of the set's {len(keys)} rotated "
                              f"items (question_id {missing[0][0]} at {missing[0][1]} degrees is "
                              "missing); run hf-real3d check-rotations on this set again")
        proposals = [d for _, d in proposed]
        for p in proposals:
            key = (ids.get(str(p.get("question_id")), p.get("question_id")),
                   int(p.get("rotation_deg", -1)))
            if key not in verdicts or p.get("action") not in ("replace", "rewrite"):
                raise FormatError(f"{folder / 'repairs.jsonl'}: a proposal for question_id "
                                  f"{key[0]} at {key[1]} degrees, which the set lacks, or "
                                  f"with action {p.get('action')!r}; run check-rotations again")
    except (FormatError, FileNotFoundError):
        if strict:
            raise
        return None
    return verdicts, proposals


_IMPORT_FIELDS = ("question_id", "rotation_deg", "decision", "reason", "situation", "answers",
                  "repeat")


def _import_rows(path: Path) -> list[tuple[int, dict[str, Any]]]:
    """(line, record) of a CSV (header row; ``answers`` separated by ``|``) or JSONL file."""
    if path.suffix.lower() == ".csv":
        text = read_text(path)
        reader = csv.DictReader(text.splitlines())
        need = {"question_id", "rotation_deg", "decision"}
        if not reader.fieldnames or not need <= set(reader.fieldnames):
            raise FormatError(f"{path}: the header row must name question_id, rotation_deg and "
                              f"decision (and may name {', '.join(_IMPORT_FIELDS[3:])}); it has "
                              f"{reader.fieldnames}")
        out = []
        for r in reader:
            d: dict[str, Any] = {k: (v or "") for k, v in r.items() if k in _IMPORT_FIELDS}
            if d.get("answers", "") != "":
                d["answers"] = d["answers"].split("|")
            else:
                d.pop("answers", None)
            if d.get("situation", None) == "":
                d.pop("situation")
            d["repeat"] = str(d.get("repeat", "")).strip().lower() in ("1", "true", "yes")
            out.append((reader.line_num, d))
        return out
    if path.suffix.lower() in (".jsonl", ".json"):
        rows = read_jsonl(path)
        for _, d in rows:
            if isinstance(d.get("answers"), str):
                d["answers"] = d["answers"].split("|")
        return rows
    raise ValueError(f"{path}: give a .csv or .jsonl file of decisions")


def import_decisions(folder: str | os.PathLike, annotator: str, source: str | os.PathLike, *,
                     revise: bool = False) -> dict[str, Any]:
    """``hf-real3d review-import``: append the decisions of a CSV or JSONL file (made in
    another tool) to ``annotator``'s file, each checked as the Review tab checks it (a
    correction that leaves out its situation or its answers keeps the item's own). Every line
    is checked before the first is written; a bad line is a :class:`FormatError` naming the
    file, the line and the item. An item the annotator already judged is refused unless
    ``revise`` (then the line supersedes the standing decision, history kept)."""
    rf = ReviewFolder(folder, create=False)
    annotator = check_annotator(annotator)
    rf.greeting(annotator)  # refuses a name that differs from another only in case
    rf.check_writable()
    path = Path(source)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such file of decisions (`from`)")
    rows = _import_rows(path)
    if not rows:
        raise ValueError(f"{path}: no decisions in it; nothing to import")
    past = rf.decisions(annotator)
    standing = {(d["question_id"], d["rotation_deg"], d["repeat"]): d["n"] for d in past}
    planned = []
    errors = []
    n_next = len(past) + 1
    for line, d in rows:
        where = f"{path}: line {line}"
        try:
            extra = set(d) - set(_IMPORT_FIELDS)
            if extra:
                raise FormatError(f"{where}: unknown field(s) {sorted(extra)}; expected "
                                  f"{list(_IMPORT_FIELDS)}")
            line_d = dict(d, reason=d.get("reason") or "")
            if line_d.get("decision") == "correct":  # a field left out keeps the item's own
                try:
                    key = (rf.item_id(d.get("question_id")), int(d.get("rotation_deg")))
                except (ValueError, TypeError):
                    key = None
                if key in rf.rows:
                    line_d.setdefault("situation", rf.rows[key]["situation"])
                    line_d.setdefault("answers", list(rf.rows[key]["answers"]))
            c = rf._check_line(line_d, where)
            entry = ReviewEntry(c["question_id"], c["rotation_deg"], c["repeat"])
            item = f"question_id {entry.question_id} at {entry.rotation_deg} degrees"
            try:
                fields = rf.validate(entry, c["decision"], c.get("reason", ""),
                                     situation=d.get("situation"), answers=d.get("answers"))
            except ValueError as err:
                raise FormatError(f"{where}: {err}") from None
            if entry.repeat and (entry.question_id, entry.rotation_deg, False) not in standing:
                raise FormatError(f"{where}: {item}: a second look (repeat) before any first "
                                  "decision on it")
            prior = standing.get(entry.key)
            if prior is not None and not revise:
                raise FormatError(f"{where}: {item} is already judged by {annotator} (decision "
                                  f"{prior}); pass `revise` to record this line as a new "
                                  "decision that supersedes it (the history stays)")
            planned.append((entry, fields, prior))
            standing[entry.key] = n_next
            n_next += 1
        except FormatError as err:
            errors.append(str(err))
    if errors:
        raise FormatError(_several(errors))
    for entry, fields, prior in planned:
        rf.record(annotator, entry, fields["decision"], fields["reason"],
                  situation=fields.get("situation"), answers=fields.get("answers"),
                  revises=prior)
    counts: dict[str, int] = {}
    for _, f, _ in planned:
        counts[f["decision"]] = counts.get(f["decision"], 0) + 1
    return {"annotator": annotator, "imported": len(planned), "decisions": counts,
            "revisions": sum(p is not None for _, _, p in planned),
            "file": str(rf.path(annotator))}
