"""The non-visual inputs of a test set: what a text-only diagnostic may read.

:func:`load_items` reads any dataset this library builds or imports, an SQA3D folder, a
3DSRBench TSV, or any ``datasets`` dataset given its column names, into :class:`Items`:
one row per question, its text (situation + question, or question + options), its answer
(normalised as EM normalises it), the group that k-fold keeps on one side (the scene), and
its question type. 3DSRBench items are the unshifted, unmirrored questions: their mirrored
and shifted copies carry the same text, so a text-only model sees each question once.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hf_real3d._io import FormatError, first_repeat
from hf_real3d.answers import normalize_answer
from hf_real3d.sources import (
    DatasetFolder,
    Source,
    SQA3DFolder,
    SRBenchTSV,
    read_questions,
    resolve,
)
from hf_real3d.sqa3d import question_type

__all__ = ["Items", "load_items", "srbench_items", "KINDS"]

KINDS = ("real3dqa", "sqa3d", "scanqa", "srbench", "columns")


@dataclass
class Items:
    """One row per question: ``ids``, ``text``, ``labels`` (normalised answers),
    ``groups`` and ``types``; ``options`` (normalised) for multiple choice."""

    ids: list[str]
    text: list[str]
    labels: list[str]
    groups: list[str]
    types: list[str]
    kind: str  # one of KINDS
    source: str
    group_by: str
    options: list[list[str]] | None = None
    rows: list[dict[str, Any]] = field(default_factory=list, repr=False)

    def __len__(self) -> int:
        return len(self.ids)

    def subset(self, keep: Sequence[int]) -> Items:
        keep = list(keep)
        pick = lambda xs: [xs[i] for i in keep]  # noqa: E731
        return Items(pick(self.ids), pick(self.text), pick(self.labels), pick(self.groups),
                     pick(self.types), self.kind, self.source, self.group_by,
                     pick(self.options) if self.options is not None else None,
                     pick(self.rows) if self.rows else [])


def _first_answer(value: Any, where: str) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, Sequence) and value and isinstance(value[0], str):
        return value[0]
    if isinstance(value, Sequence) and value and isinstance(value[0], dict) and \
            isinstance(value[0].get("answer"), str):
        return value[0]["answer"]
    raise FormatError(f"{where}: no answer ({value!r}); a stress test needs each item's answer "
                      "(a test split released without answers, such as ScanQA's, cannot be "
                      "stress-tested)")


def _column(rows: list[dict], name: str, source: str, what: str) -> None:
    if rows and name not in rows[0]:
        raise FormatError(f"{source}: no column {name!r} for {what} (columns: "
                          f"{sorted(rows[0])[:20]}); name it with the matching --*-column option")


def _from_rows(rows: list[dict[str, Any]], source: str, *, kind: str, question: Sequence[str],
               answer: str, group: str, qtype: str | None, id_col: str) -> Items:
    if not rows:
        raise FormatError(f"{source}: no items")
    for c in question:
        _column(rows, c, source, "the question text")
    _column(rows, answer, source, "the answer")
    _column(rows, group, source, "the groups (--group-by)")
    if qtype:
        _column(rows, qtype, source, "the question type")
    ids, text, labels, groups, types = [], [], [], [], []
    for i, r in enumerate(rows):
        where = f"{source} item {i} ({id_col} {r.get(id_col, i)})"
        empty = [c for c in question if r[c] is None]
        if empty:
            raise FormatError(f"{where}: {empty[0]!r} is empty (null); fill it or drop the item")
        ids.append(str(r.get(id_col, i)))
        text.append(" ".join(str(r[c]) for c in question))
        labels.append(normalize_answer(_first_answer(r[answer], where)))
        groups.append(str(r[group]))
        types.append(str(r[qtype]) if qtype else question_type(str(r[question[-1]])))
    return Items(ids, text, labels, groups, types, kind, source, group, rows=rows)


def srbench_items(rows: list[dict[str, Any]], source: str, group: str | None) -> Items:
    """Items of 3DSRBench rows: the unshifted, unmirrored questions, their text with the
    options, the answer text, grouped by ``group`` (default: the base qid), typed by
    category. ``rows`` gain ``question_text`` and ``answer_text``."""
    rows = [r for r in rows if not r.get("flipped") and not int(r.get("shift", 0))]
    if not rows:
        raise FormatError(f"{source}: no unshifted, unmirrored 3DSRBench rows")
    opts = [[str(o) for o in r["options"]] for r in rows]
    for r, o in zip(rows, opts):
        r["question_text"] = r["question"] + " Options: " + " | ".join(o)
        r["answer_text"] = o["ABCD".index(r["answer"])]
        r.setdefault("base_qid", str(r["qid"])[:8])
    items = _from_rows(rows, source, kind="srbench", question=["question_text"],
                       answer="answer_text", group=group or "base_qid", qtype="category",
                       id_col="qid")
    items.options = [[normalize_answer(x) for x in o] for o in opts]
    return items


def load_items(dataset: str | os.PathLike, *, config: str | None = None, split: str = "test",
               question_columns: Sequence[str] | None = None, answer_column: str | None = None,
               group_by: str | None = None, type_column: str | None = None,
               id_column: str | None = None) -> Items:
    """Items of ``dataset``: a folder built by this library (its ``config``; by default the
    de-biased ``real3dqa``, ``real_scanqa`` or the 3DSRBench ``real`` / ``synthetic_common``
    config), an SQA3D folder (``*_questions_*.json`` + annotations, read with ``split``), a
    3DSRBench ``.tsv``, or a ``datasets`` dataset on the Hub (offline: from the cache) whose
    columns the ``*_column`` arguments name."""
    path = Path(dataset)
    src = str(dataset)
    kind = None
    if path.exists():
        kind = resolve(path, SRBenchTSV, SQA3DFolder, DatasetFolder, what="a dataset to "
                       "stress-test")
    elif src.startswith((".", "/", "~")) or os.sep in src and src.count("/") != 1:
        raise FileNotFoundError(f"{src}: no such dataset folder or file")
    if isinstance(kind, SRBenchTSV):
        # each reader imported for its kind of input
        from hf_real3d.srbench.format import read_tsv

        return srbench_items(read_tsv(path, decode_images=False), src, group_by)
    if isinstance(kind, SQA3DFolder):
        return _sqa3d_items(kind, src, split, group_by, type_column)
    if isinstance(kind, DatasetFolder) and not kind.saved:
        rows, src = _built_rows(kind, src, config, split)
        items = _built_items(rows, src, guess=question_columns is None,
                             answer_column=answer_column, group_by=group_by,
                             type_column=type_column)
        if items is not None:
            return items
    if question_columns is None or answer_column is None or group_by is None:
        raise FormatError(f"{src}: name the columns: `question_column`, `answer_column` and "
                          "`group_by`")
    rows = _dataset_rows(kind, src, config, split)
    id_col = id_column or ("question_id" if "question_id" in rows[0] else "id")
    if id_column:
        _column(rows, id_column, src, "the item ids (--id-column)")
    items = _from_rows(rows, src, kind="columns", question=tuple(question_columns),
                       answer=answer_column, group=group_by, qtype=type_column, id_col=id_col)
    rep = first_repeat(items.ids) if id_column else None
    if rep:
        raise FormatError(f"{src}: item {rep[1]} repeats the id {items.ids[rep[1]]!r} of item "
                          f"{rep[0]} (`id_column` {id_column}); ids must be unique")
    return items


def _sqa3d_items(src: SQA3DFolder, name: str, split: str, group_by: str | None,
                 type_column: str | None) -> Items:
    rows = [{"question_id": r.question_id, "scene_id": r.scene_id,
             "situation": r.situation, "question": r.question, "answers": r.answers,
             "question_type": r.qtype}
            for r in read_questions(src, split, validate_poses=False)]
    return _from_rows(rows, name, kind="sqa3d", question=("situation", "question"),
                      answer="answers", group=group_by or "scene_id",
                      qtype=type_column or "question_type", id_col="question_id")


def _built_rows(src: DatasetFolder, name: str, config: str | None,
                split: str) -> tuple[list[dict[str, Any]], str]:
    """The rows of a built folder's ``config`` (by default the one holding its questions, else
    its first) and the source name that says which."""
    configs = src.configs()
    config = config or src.question_config() or (configs[0] if configs else None)
    if config not in configs:
        raise FormatError(f"{name}: no config {config!r} (has {configs}); pick one with "
                          "`config`")
    return src.rows(config, split)[0], f"{name} ({config})"


def _built_items(rows: list[dict[str, Any]], src: str, *, guess: bool,
                 answer_column: str | None, group_by: str | None,
                 type_column: str | None) -> Items | None:
    """Items of rows whose columns say what they are; None when the caller must name them."""
    if rows and "qid" in rows[0] and "options" in rows[0]:
        return srbench_items(rows, src, group_by)
    if guess and rows and "situation" in rows[0]:
        return _from_rows(rows, src, kind="real3dqa", question=("situation", "question"),
                          answer=answer_column or "answers", group=group_by or "scene_id",
                          qtype=type_column or ("question_type" if "question_type"
                                                in rows[0] else None),
                          id_col="question_id")
    if guess and rows and "question" in rows[0] and "scene_id" in rows[0]:
        return _from_rows(rows, src, kind="scanqa", question=("question",),
                          answer=answer_column or "answers", group=group_by or "scene_id",
                          qtype=type_column, id_col="question_id")
    return None


def _dataset_rows(kind: Source | None, src: str, config: str | None,
                  split: str) -> list[dict[str, Any]]:
    """The rows of a Hub dataset (offline: from the cache) or a saved dataset's folder."""
    # the datasets stack loads only here, so that importing the items is light
    import datasets

    if isinstance(kind, DatasetFolder):  # saved with save_to_disk
        try:
            ds = datasets.load_from_disk(str(kind.path))
        except IndexError:  # datasets cannot read back an empty saved dataset
            raise FormatError(f"{src}: the saved dataset holds no items") from None
        if isinstance(ds, datasets.DatasetDict):
            if split not in ds:
                raise FormatError(f"{src}: no split {split!r} (it has {sorted(ds)}); pick one "
                                  "with `split`")
            ds = ds[split]
    else:
        ds = datasets.load_dataset(src, config, split=split)
    if not len(ds):
        raise FormatError(f"{src}: split {split!r} holds no items")
    return [dict(r) for r in ds]
