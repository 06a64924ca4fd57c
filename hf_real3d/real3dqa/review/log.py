"""The decisions people make: one append-only file per annotator in a review folder, read and
written here and nowhere else.

``R/<annotator>.jsonl`` holds one line per decision, appended under a lock in one write and
flushed to disk, so a decision once saved is never lost (a killed server, two tabs, a second
session). A line holds the item (``question_id``, ``rotation_deg``), whether it was the
unannounced second showing (``repeat``), the ``decision`` (``accept``, ``correct`` or
``discard``), the ``reason``, a correction's ``situation`` and ``answers``, what the checker
suggested (``verdict``, ``sense``, ``rules``), ``repair`` when the decision takes a proposed
fix, and ``revises`` (the number of the line it supersedes) when the annotator reopened the
item. ``n`` is the line's number among the file's decisions.

A later decision on an item supersedes the earlier one (the history stays in the file);
everything reads the latest. Reading needs only the folder's stored checks (which items the
set has), never the rotation set itself.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import time
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from filelock import FileLock

from hf_real3d._io import FormatError, plain_value
from hf_real3d.real3dqa.format import plain_text

from .folder import StoredChecks

__all__ = ["DECISIONS", "DecisionLog", "ReviewEntry", "JudgedElsewhere", "check_annotator",
           "item_label", "plain_answers"]

DECISIONS = ("accept", "correct", "discard")
_NAME_RULE = ("1-64 characters: letters (any alphabet), digits, '_', '.' or '-', starting "
              "with a letter or a digit (it names the annotator's file)")


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


def plain_answers(answers: Sequence[str]) -> tuple[str, ...]:
    """Answers up to case, spaces and order: what tells a correction from the item's own."""
    return tuple(sorted(plain_text(a) for a in answers))


def item_label(d: dict[str, Any]) -> str:
    """What agreement compares, as the export does: the decision, and for a correction its
    text up to case and spaces (two different corrections disagree)."""
    if d["decision"] != "correct":
        return d["decision"]
    return "correct: " + plain_text(d["situation"]) + " -> " + " | ".join(
        plain_answers(d["answers"]))


def several(errors: list[str], most: int = 12) -> str:
    """Bad lines of several files in one message."""
    if len(errors) == 1:
        return errors[0]
    files = len({e.split(": line")[0] for e in errors})
    shown = "; ".join(errors[:most])
    more = f"; and {len(errors) - most} more" if len(errors) > most else ""
    return f"{len(errors)} bad lines in {files} file(s): {shown}{more}"


def _cut_or_not_json(path: Path, i: int, line: bytes, cut: bool) -> str:
    what = re.search(rb'"question_id":\s*"?([0-9A-Za-z_-]+)', line)
    item = f" (question_id {what.group(1).decode()})" if what else ""
    if cut:
        return (f"{path}: line {i}{item} was cut mid-write (the program stopped while writing "
                "it); delete that line and judge the item again")
    return f"{path}: line {i}{item} is not JSON; delete or fix it"


class DecisionLog:
    """The annotators' decision files of a review folder. ``checks``: the folder's stored
    checks (which items the set has, and what the checker suggests of each); ``dataset``
    and ``fingerprint``: the set's path and fingerprint from ``review.json``."""

    def __init__(self, folder: str | os.PathLike, checks: StoredChecks, dataset: str,
                 fingerprint: str):
        self.folder = Path(folder)
        self.checks = checks
        self.dataset = dataset
        self.fingerprint = fingerprint
        # per file: (bytes parsed, their hash, lines parsed, decisions) of the last read
        self._files: dict[Path, tuple] = {}

    def path(self, annotator: str) -> Path:
        return self.folder / f"{check_annotator(annotator)}.jsonl"

    def annotators(self) -> list[str]:
        return sorted(unicodedata.normalize("NFC", p.stem) for p in self.folder.glob("*.jsonl"))

    def same_but_case(self, annotator: str) -> list[str]:
        """The folder's annotators whose name differs from ``annotator`` only in case."""
        return [a for a in self.annotators()
                if a != annotator and a.casefold() == annotator.casefold()]

    def check_writable(self) -> None:
        """Refuse a review folder (or an annotator file in it) this process cannot write,
        before anyone types a decision."""
        bad = [p for p in [self.folder, *self.folder.glob("*.jsonl")]
               if not os.access(p, os.W_OK)]
        if bad:
            raise PermissionError(f"{bad[0]}: not writable by this user, so no decision could "
                                  "be saved; fix its permissions or review into another folder")

    # --- reading -----------------------------------------------------------------------------

    def check_line(self, d: Any, where: str) -> dict[str, Any]:
        """A decision read from a file or an import, checked: the fields it needs, an item of
        this set, and a correction that leaves nothing empty."""
        if not isinstance(d, dict) or d.get("decision") not in DECISIONS or \
                "question_id" not in d or "rotation_deg" not in d:
            raise FormatError(f"{where} is not a review decision (question_id, "
                              f"rotation_deg, decision in {DECISIONS})")
        try:
            key = (self.checks.ids.get(str(d["question_id"]), d["question_id"]),
                   int(d["rotation_deg"]))
        except (TypeError, ValueError):
            raise FormatError(f"{where}: rotation_deg {d['rotation_deg']!r} is not a whole "
                              "number of degrees") from None
        item = f"question_id {key[0]} at {key[1]} degrees"
        if key not in self.checks.verdicts:
            raise FormatError(f"{where}: {item} is not a rotated item of {self.dataset}; was "
                              "this file written for another rotation set? Move it out of the "
                              "folder")
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
        return dict(d, question_id=key[0], rotation_deg=key[1], repeat=bool(d.get("repeat")))

    def _parse(self, path: Path, raw: bytes, lines_before: int, out: list, bad: list) -> int:
        """Parse ``raw`` (the bytes after ``lines_before`` lines) into ``out``; the bad lines'
        messages go to ``bad``. Returns how many lines it held."""
        lines = raw.split(b"\n")
        for j, line in enumerate(lines, 1):
            i = lines_before + j
            if not line.strip():
                continue
            try:
                d = json.loads(line)
            except ValueError:
                bad.append(_cut_or_not_json(path, i, line,
                                            j == len(lines) and not raw.endswith(b"\n")))
                continue
            try:
                d = self.check_line(d, f"{path}: line {i}")
            except FormatError as err:
                bad.append(str(err))
                continue
            d["n"] = len(out) + 1
            out.append(d)
        return len(lines) - 1

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
        bad: list[str] = []
        n_lines = self._parse(path, data[start:], lines_before, out, bad)
        if bad:
            self._files.pop(path, None)
            if errors is None:
                raise FormatError(several(bad))
            errors.extend(bad)
            return out
        self._files[path] = (len(data), hashlib.sha1(data).digest(), lines_before + n_lines,
                             tuple(out))
        return list(out)

    def decisions(self, annotator: str) -> list[dict[str, Any]]:
        """Every decision the annotator made, in order, history included (``n``: its place);
        a line cut mid-write, a line that is not a decision, one about an item this set
        lacks or a correction that empties the item is a :class:`FormatError` naming the file,
        each bad line and the item."""
        return self._read(self.path(annotator))

    def all_decisions(self, annotators: Sequence[str] | None = None,
                      errors: list[str] | None = None) -> dict[str, list[dict[str, Any]]]:
        """:meth:`decisions` of every annotator (or of ``annotators``); the bad lines of every
        file are named in one :class:`FormatError`, or, given ``errors``, appended to it
        (and the good lines returned)."""
        names = self.annotators() if annotators is None else list(annotators)
        bad: list[str] = []
        out = {n: self._read(self.path(n), bad) for n in names}
        if bad and errors is None:
            raise FormatError(several(bad))
        if errors is not None:
            errors.extend(bad)
        return out

    @staticmethod
    def latest(decisions: Sequence[dict[str, Any]]) -> dict[tuple[Any, int], dict[str, Any]]:
        """Each item's standing decision: the latest of its first showing and the annotator's
        revisions (the repeats only measure self-consistency)."""
        return {(d["question_id"], d["rotation_deg"]): d for d in decisions if not d["repeat"]}

    @staticmethod
    def repeats(decisions: Sequence[dict[str, Any]]
                ) -> list[tuple[dict[str, Any], dict[str, Any]]]:
        """(the decision standing when the item came back, the repeat's latest decision) for
        each item the annotator saw twice: what self-consistency compares (revisions made
        after the repeat are edits, not inconsistency)."""
        standing: dict[tuple[Any, int], dict[str, Any]] = {}
        pairs: dict[tuple[Any, int], tuple[dict[str, Any], dict[str, Any]]] = {}
        for d in decisions:
            key = (d["question_id"], d["rotation_deg"])
            if not d["repeat"]:
                standing[key] = d
            elif key in standing:  # the first look as it stood at the repeat's first line
                pairs[key] = (pairs[key][0] if key in pairs else standing[key], d)
        return list(pairs.values())

    # --- writing -----------------------------------------------------------------------------

    def append(self, annotator: str, entry: ReviewEntry, fields: dict[str, Any],
               revises: int | None = None) -> dict[str, Any]:
        """Append one checked decision (``fields``: decision, reason, texts, repair) to the
        annotator's file at once: locked, written in one call, flushed to disk. ``revises``:
        the number of the annotator's decision on this showing that this one supersedes;
        without it the showing must not have been judged yet (else :class:`JudgedElsewhere`,
        nothing written)."""
        annotator = check_annotator(annotator)
        path = self.path(annotator)
        # the lock beside the file (filelock: its mode, like the file's, follows the umask)
        with FileLock(f"{path}.lock"), open(path, "ab+") as f:
            fd = f.fileno()
            sep = b""
            if os.fstat(fd).st_size:  # never append to a line a crash cut short
                os.lseek(fd, -1, os.SEEK_END)
                if os.read(fd, 1) != b"\n":
                    self.decisions(annotator)  # raises the cut line's error
                    sep = b"\n"  # a whole last line written without its newline
            past = self.decisions(annotator)
            self._refuse_stale(annotator, entry, past, revises)
            key = (entry.question_id, entry.rotation_deg)
            line: dict[str, Any] = {
                "annotator": annotator, "n": len(past) + 1,
                "question_id": plain_value(entry.question_id), "rotation_deg": entry.rotation_deg,
                "repeat": entry.repeat, **fields, **self.checks.suggestion(key),
                "dataset": self.fingerprint, "time": time.strftime("%Y-%m-%dT%H:%M:%S")}
            if revises is not None:
                line["revises"] = int(revises)
            os.write(fd, sep + (json.dumps(line, ensure_ascii=False) + "\n").encode())
            os.fsync(fd)
        return line

    @staticmethod
    def _refuse_stale(annotator: str, entry: ReviewEntry, past: list[dict[str, Any]],
                      revises: int | None) -> None:
        key = (entry.question_id, entry.rotation_deg)
        mine = [d for d in past if (d["question_id"], d["rotation_deg"], d["repeat"]) ==
                entry.key]
        what = f"question_id {key[0]} at {key[1]} degrees"
        if entry.repeat and revises is None and not any(
                (d["question_id"], d["rotation_deg"]) == key and not d["repeat"] for d in past):
            raise ValueError(f"{what}: a second look at an item {annotator} has not judged a "
                             "first time")
        if revises is None and mine:
            d = mine[-1]
            raise JudgedElsewhere(
                f"{annotator} already judged {what} ({d['decision']} at {d.get('time', '?')}, "
                "in another tab or session); nothing was saved. To change it, reopen it from "
                "your decisions")
        if revises is not None and (not mine or mine[-1]["n"] != revises):
            now = f"now {mine[-1]['decision']} (decision {mine[-1]['n']})" if mine else \
                "not judged"
            raise JudgedElsewhere(
                f"{annotator}'s decision on {what} changed since it was reopened ({now}, in "
                "another tab or session); nothing was saved. Reopen it again")
