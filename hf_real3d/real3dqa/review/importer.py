"""``hf-real3d review-import``: decisions made in another tool (a spreadsheet, Label Studio,
Argilla) appended to an annotator's file, each line checked as the Review tab checks it."""

from __future__ import annotations

import csv
import os
from collections import Counter
from pathlib import Path
from typing import Any

from hf_real3d._io import FormatError, read_jsonl, read_text

from .log import ReviewEntry, check_annotator, several
from .queue import ReviewFolder

__all__ = ["import_decisions"]

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


def _checked(rf: ReviewFolder, d: dict[str, Any], where: str
             ) -> tuple[ReviewEntry, dict[str, Any]]:
    """One imported line as (the showing, the decision's checked fields)."""
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
    c = rf.log.check_line(line_d, where)
    entry = ReviewEntry(c["question_id"], c["rotation_deg"], c["repeat"])
    try:
        fields = rf.validate(entry, c["decision"], c.get("reason", ""),
                             situation=d.get("situation"), answers=d.get("answers"))
    except ValueError as err:
        raise FormatError(f"{where}: {err}") from None
    return entry, fields


def import_decisions(folder: str | os.PathLike, annotator: str, from_file: str | os.PathLike,
                     *, revise: bool = False) -> dict[str, Any]:
    """``hf-real3d review-import``: append the decisions of a CSV or JSONL file (made in
    another tool) to ``annotator``'s file, each checked as the Review tab checks it (a
    correction that leaves out its situation or its answers keeps the item's own). Every line
    is checked before the first is written; a bad line is a :class:`FormatError` naming the
    file, the line and the item. An item the annotator already judged is refused unless
    ``revise`` (then the line supersedes the standing decision, history kept)."""
    rf = ReviewFolder.open(folder)
    annotator = check_annotator(annotator)
    rf.greeting(annotator)  # refuses a name that differs from another only in case
    rf.log.check_writable()
    path = Path(from_file)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such file of decisions (`from`)")
    rows = _import_rows(path)
    if not rows:
        raise ValueError(f"{path}: no decisions in it; nothing to import")
    past = rf.decisions(annotator)
    standing = {(d["question_id"], d["rotation_deg"], d["repeat"]): d["n"] for d in past}
    planned, errors = [], []
    for line, d in rows:
        where = f"{path}: line {line}"
        try:
            entry, fields = _checked(rf, d, where)
            item = f"question_id {entry.question_id} at {entry.rotation_deg} degrees"
            if entry.repeat and (entry.question_id, entry.rotation_deg, False) not in standing:
                raise FormatError(f"{where}: {item}: a second look (repeat) before any first "
                                  "decision on it")
            prior = standing.get(entry.key)
            if prior is not None and not revise:
                raise FormatError(f"{where}: {item} is already judged by {annotator} (decision "
                                  f"{prior}); pass `revise` to record this line as a new "
                                  "decision that supersedes it (the history stays)")
            planned.append((entry, fields, prior))
            standing[entry.key] = len(past) + len(planned)
        except FormatError as err:
            errors.append(str(err))
    if errors:
        raise FormatError(several(errors))
    for entry, fields, prior in planned:
        rf.log.append(annotator, entry, fields, prior)
    counts = dict(Counter(f["decision"] for _, f, _ in planned))
    return {"annotator": annotator, "imported": len(planned), "decisions": counts,
            "revisions": sum(p is not None for _, _, p in planned),
            "file": str(rf.log.path(annotator))}
