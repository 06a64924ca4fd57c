"""ScanQA JSON as ScanQA releases it: a list of questions about a ScanNet room.

Each item: ``question_id`` (``"val-scene0011_00-0"``), ``scene_id``, ``question``,
``answers`` (a list of strings; absent from the test split ScanQA withholds), and
``object_ids`` / ``object_names`` (the objects the answer refers to; absent from the
``test_wo_obj`` file). There is no situation and no agent pose, so Real-ScanQA has no
rotation. Question type = the first word, lower-cased (what / where / how / which / is ...).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from hf_real3d._io import FormatError, atomic_path, first_repeat, read_json

__all__ = ["read_scanqa", "write_scanqa", "scanqa_type", "scanqa_records", "require_answers",
           "SCANQA_COLUMNS", "ROOM_KINDS"]

# synthetic question kinds that need no situation (room-level): what ScanQA asks
ROOM_KINDS = ("count_room", "exists_room", "prior_color", "prior_function")
SCANQA_COLUMNS = ("question_id", "scene_id", "question", "answers", "object_ids",
                  "object_names")


def scanqa_type(question: str) -> str:
    """ScanQA's question type: the first word, lower-cased ("other" for none)."""
    words = str(question).strip().split()
    return words[0].lower().strip("?,.") if words else "other"


def _check_item(it: Any, i: int, path: Path) -> None:
    if not isinstance(it, dict):
        raise FormatError(f"{path}: item {i} is {type(it).__name__}, expected an object with "
                          f"{list(SCANQA_COLUMNS[:3])}")
    qid = it.get("question_id", "(no id)")
    where = f"{path}: item {i} (question_id {qid})"
    for key in ("question_id", "scene_id", "question"):
        if not isinstance(it.get(key), str) or not it[key].strip():
            raise FormatError(f"{where}: {key} is {it.get(key)!r}, expected a non-empty string")
    if "answers" in it:
        ans = it["answers"]
        if not isinstance(ans, list) or not ans or \
                not all(isinstance(a, str) for a in ans):
            raise FormatError(f"{where}: answers is {ans!r}, expected a non-empty list of "
                              "strings")
    for key, kind in (("object_ids", int), ("object_names", str)):
        if key in it and (not isinstance(it[key], list) or
                          not all(isinstance(v, kind) and not isinstance(v, bool)
                                  for v in it[key])):
            raise FormatError(f"{where}: {key} is {it[key]!r}, expected a list of "
                              f"{kind.__name__}")


def read_scanqa(path: str | os.PathLike) -> pd.DataFrame:
    """A ScanQA JSON file as a table (columns :data:`SCANQA_COLUMNS` plus
    ``question_type``). The test split without answers loads too (``answers`` None: the
    table's ``attrs["has_answers"]`` is False); a file mixing items with and without answers
    is an error. Bad items raise :class:`FormatError` naming the item and the field."""
    path = Path(path)
    data = read_json(path)
    if not isinstance(data, list) or not data:
        raise FormatError(f"{path}: expected a non-empty JSON list of ScanQA questions")
    for i, it in enumerate(data):
        _check_item(it, i, path)
    with_ans = [("answers" in it) for it in data]
    if any(with_ans) and not all(with_ans):
        i = with_ans.index(False)
        raise FormatError(f"{path}: item {i} (question_id {data[i]['question_id']}) has no "
                          "answers but others do; a split has answers everywhere or nowhere")
    rep = first_repeat(it["question_id"] for it in data)
    if rep:
        raise FormatError(f"{path}: question_id {data[rep[1]]['question_id']!r} repeats item "
                          f"{rep[0]} at item {rep[1]}")
    df = pd.DataFrame({
        "question_id": [it["question_id"] for it in data],
        "scene_id": [it["scene_id"] for it in data],
        "question": [it["question"] for it in data],
        "answers": [list(it["answers"]) if "answers" in it else None for it in data],
        "object_ids": [list(it.get("object_ids", [])) for it in data],
        "object_names": [list(it.get("object_names", [])) for it in data],
    })
    df["question_type"] = [scanqa_type(q) for q in df.question]
    df.attrs["has_answers"] = bool(all(with_ans))
    df.attrs["path"] = str(path)
    return df


def require_answers(df: pd.DataFrame, what: str) -> None:
    """Filtering and scoring need answers: the withheld test split is refused by name."""
    if not df.attrs.get("has_answers", df.answers.notna().all()):
        raise FormatError(f"{df.attrs.get('path', 'ScanQA questions')}: this split has no "
                          f"answers (ScanQA withholds the test answers), so it cannot be "
                          f"{what}; use a split with answers (val)")


def write_scanqa(path: str | os.PathLike, items: Iterable[dict[str, Any]]) -> Path:
    """Write ScanQA JSON (atomic), fields in ScanQA's order."""
    rows = [{k: it[k] for k in SCANQA_COLUMNS if k in it} for it in items]
    with atomic_path(path) as tmp:
        tmp.write_text(json.dumps(rows, indent=1), encoding="utf-8")
    return Path(path)


def scanqa_records(records: Sequence[Any], split: str, kinds: Sequence[str]) -> list[dict]:
    """ScanQA items from situated question records whose question needs no situation
    (``kinds``, and no egocentric direction in their semantics), one per distinct
    (scene, question): ids ``<split>-<scene_id>-<k>``."""
    out, seen, count = [], set(), {}
    for r in records:
        syn = r.extra.get("synth", {})
        if syn.get("kind") not in kinds or syn.get("direction") is not None:
            continue
        key = (r.scene_id, r.question)
        if key in seen:
            continue
        seen.add(key)
        k = count.get(r.scene_id, 0)
        count[r.scene_id] = k + 1
        out.append({"question_id": f"{split}-{r.scene_id}-{k}", "scene_id": r.scene_id,
                    "question": r.question, "answers": list(r.answers),
                    "object_ids": [int(o) for o in syn.get("objects", [])],
                    "object_names": [str(syn.get("params", {}).get("label", ""))]
                    * len(syn.get("objects", []))})
    return out
