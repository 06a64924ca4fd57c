"""Reading Real-3DQA prediction files.

JSONL/JSON rows with ``question_id``, ``prediction`` and optionally ``rotation_deg`` (or
``rotation``; degrees, default 0) and ``log_prob``; or the official Real-3DQA format (a JSON
list with ``question_id``, ``response_pred``, ``response_gt``; the viewpoint is read from the
file name, ``..._90.json`` / ``rotation_90``, or from a ``01``/``02``/``03`` id suffix).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from itertools import repeat
from operator import attrgetter, itemgetter
from pathlib import Path

import numpy as np
import pandas as pd

from hf_real3d._io import UTF8_BOM, FormatError, read_json, read_jsonl
from hf_real3d.specs import parse_prediction_spec

__all__ = ["PREDICTION_KEYS", "PredictionColumns", "read_prediction_columns", "load_predictions",
           "read_model_prediction_columns"]


def _deg_from_name(path: Path) -> int | None:
    m = re.search(r"(?:rotation|rot)[_-]?(\d{1,3})(?!\d)", path.stem) or \
        re.search(r"_(0|90|180|270)$", path.stem)
    return int(m.group(1)) if m else None


# answer keys, in the order they are looked for in a file's first row: ours, the official
# Real-3DQA files', then the shapes 3D-LLM evaluation scripts (LEO, Chat-Scene, GPT4Scene
# style) dump; a file uses one key throughout
PREDICTION_KEYS = ("prediction", "response_pred", "pred", "pred_answer", "output", "answer")


def _int_id(qid: object) -> object:
    """Question ids as written (int, or a decimal string as JSON object keys are)."""
    if isinstance(qid, str) and qid.strip().lstrip("-").isdigit():
        return int(qid)
    return qid


@dataclass
class PredictionColumns:
    """One model's Real-3DQA predictions as columns (what :func:`load_predictions` returns
    as a DataFrame): ids (int64, or object when some id is not a whole number), viewpoints
    in degrees (int64), the answers (a string or a list of candidate strings per row) and
    the optional ``log_prob`` column (None when no row has one)."""

    question_id: np.ndarray
    rotation_deg: np.ndarray
    prediction: list
    log_prob: list | None
    name: str
    official: bool = False
    # where the rows came from, for errors: (file, rows, the viewpoint its name gives or
    # -1), in row order
    files: list[tuple[str, int, int]] | None = None

    def __post_init__(self) -> None:
        # a log_prob column with no value (None or NaN in every row) is no column
        if self.log_prob is not None and all(v is None or v != v for v in self.log_prob):
            self.log_prob = None

    def __len__(self) -> int:
        return len(self.prediction)

    def file_of(self, row: int) -> str:
        """The file that row ``row`` was read from ("predictions" when unknown)."""
        start = 0
        for path, n, _ in self.files or []:
            if row < start + n:
                return path
            start += n
        return "predictions"

    def name_degrees(self) -> np.ndarray | None:
        """Per row, the viewpoint its file's name gives (-1: none); None when unknown."""
        if not self.files or sum(n for _, n, _ in self.files) != len(self):
            return None
        return np.repeat([d for _, _, d in self.files], [n for _, n, _ in self.files])

    def to_frame(self) -> pd.DataFrame:
        df = pd.DataFrame({"question_id": self.question_id, "rotation_deg": self.rotation_deg,
                           "prediction": self.prediction,
                           "log_prob": self.log_prob if self.log_prob is not None
                           else [None] * len(self)})
        df.attrs["name"] = self.name
        df.attrs["official"] = self.official
        if self.files:  # where rows came from, for errors naming the file
            df.attrs["files"] = list(self.files)
        return df

    @classmethod
    def from_frame(cls, df: pd.DataFrame, name: str | None = None) -> PredictionColumns:
        """Columns of a predictions DataFrame (``question_id``, ``prediction``, optional
        ``rotation_deg`` and ``log_prob``)."""
        missing = [c for c in ("question_id", "prediction") if c not in df.columns]
        if missing:
            raise ValueError(f"predictions table lacks column(s) {missing}; expected "
                             "question_id, prediction and optionally rotation_deg, log_prob")
        qid = df.question_id.to_numpy()
        if qid.dtype.kind not in "iu":
            qid = np.asarray(qid, dtype=object)
        deg = df.rotation_deg.to_numpy() if "rotation_deg" in df.columns else \
            np.zeros(len(df), np.int64)
        log_prob = df.log_prob.tolist() if "log_prob" in df.columns else None
        files = df.attrs.get("files")
        if files and sum(n for _, n, _ in files) != len(df):  # rows were added or dropped
            files = None
        return cls(qid, np.asarray(deg, dtype=np.int64), df.prediction.tolist(), log_prob,
                   name or df.attrs.get("name", "model"), bool(df.attrs.get("official")),
                   files)

    @classmethod
    def concat(cls, parts: list[PredictionColumns], name: str) -> PredictionColumns:
        ids = [p.question_id for p in parts]
        if not all(i.dtype.kind in "iu" for i in ids):
            ids = [i.astype(object) for i in ids]
        log_prob = None
        if any(p.log_prob is not None for p in parts):
            log_prob = [v for p in parts for v in (p.log_prob or [None] * len(p))]
        files = [f for p in parts for f in (p.files or [("predictions", len(p), -1)])]
        return cls(np.concatenate(ids), np.concatenate([p.rotation_deg for p in parts]),
                   [v for p in parts for v in p.prediction], log_prob, name,
                   any(p.official for p in parts), files)


def read_prediction_columns(path: str | os.PathLike) -> PredictionColumns:
    """:func:`load_predictions` as columns (no DataFrame: what ``hf-real3d evaluate`` uses)."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such predictions file")
    if path.suffix == ".jsonl":
        lines = read_jsonl(path, objects=False)
        rows = [v for _, v in lines]
        where = [f"line {n}" for n, _ in lines]
    else:
        typed = _typed_rows(path)
        if typed is not None:
            return _with_origin(typed, path)
        rows = read_json(path)
        where = None
    if isinstance(rows, dict) and "predictions" in rows:
        rows = rows["predictions"]
    elif isinstance(rows, dict) and any(isinstance(v, str) for v in rows.values()):
        # {question_id: answer}: every value must be the answer text
        bad = next((k for k, v in rows.items() if not isinstance(v, str)), None)
        if bad is not None:
            raise FormatError(f"{path}: question_id {bad}: the answer is "
                              f"{type(rows[bad]).__name__} {rows[bad]!r}; a {{question_id: "
                              "answer}} file needs a string answer for every id (quote it)")
        # a mapping {question_id: answer} (the shape several 3D-LLM eval scripts dump); JSON
        # parsers keep the last of two equal keys, so a repeated id is looked for first
        _no_repeated_keys(path)
        rows = [{"question_id": _int_id(k), "prediction": v} for k, v in rows.items()]
    if not isinstance(rows, list) or not rows:
        raise FormatError(f"{path}: expected a non-empty list of prediction rows")
    first = rows[0] if isinstance(rows[0], dict) else {}
    key = next((k for k in PREDICTION_KEYS if k in first), "prediction")
    file_deg = _deg_from_name(path)
    cols = _fast_rows(rows, key, file_deg)
    if cols is None:  # something is off: the row-by-row pass names the first bad row
        cols = _checked_rows(rows, key, file_deg, path, where)
    return _with_origin(PredictionColumns(*cols, path.stem, key == "response_pred"), path)


def _with_origin(cols: PredictionColumns, path: Path) -> PredictionColumns:
    """Record the file and the viewpoint its name gives (checked against id suffixes), and
    trim each answer: the whitespace around it (a model's trailing newline or tab) is no part
    of it."""
    preds = cols.prediction
    cols.prediction = list(map(str.strip, preds)) if set(map(type, preds)) <= {str} else \
        [p.strip() if isinstance(p, str) else [x.strip() for x in p] for p in preds]
    deg = _deg_from_name(path)
    cols.files = [(str(path), len(cols), -1 if deg is None else deg)]
    return cols


def _no_repeated_keys(path: Path) -> None:
    """A JSON object giving one key twice is an error naming the key (both values kept by
    no parser: the last silently wins)."""
    def hook(pairs):
        seen = {}
        for k, v in pairs:
            if k in seen:
                raise FormatError(f"{path}: question_id {k} is given twice ({seen[k]!r} and "
                                  f"{v!r}); keep one answer per question")
            seen[k] = v
        return seen

    json.loads(path.read_text(encoding="utf-8-sig"), object_pairs_hook=hook)


_DECODER = None


def _decoder():
    """A msgspec decoder for a JSON list of prediction rows that keeps only the fields read
    (skipping ``response_gt`` and the rest without building them); None without msgspec."""
    global _DECODER
    if _DECODER is None:
        try:
            # optional speed-up: 3x faster than parsing every row into a dict
            import msgspec
        except ImportError:  # pragma: no cover - a dependency; read_json gives the same rows
            _DECODER = False
            return None
        Answer = str | list[str] | msgspec.UnsetType  # noqa: N806
        fields = [("question_id", int | str), *((k, Answer, msgspec.UNSET) for k in
                                                PREDICTION_KEYS),
                  ("rotation_deg", int | None, None), ("rotation", int | None, None),
                  ("log_prob", float | None, None)]
        row = msgspec.defstruct("PredictionRow", fields, array_like=False)
        _DECODER = (msgspec, msgspec.json.Decoder(list[row]))
    return _DECODER or None


def _typed_rows(path: Path) -> PredictionColumns | None:
    """The columns of a well-formed JSON list of rows, decoded by type; None when the file
    is anything else (a mapping, a wrapper object, a bad row: the general reader then
    parses it and names what is wrong)."""
    dec = _decoder()
    if dec is None:
        return None
    msgspec, decoder = dec
    try:
        data = path.read_bytes()
        rows = decoder.decode(data[3:] if data.startswith(UTF8_BOM) else data)
    except (msgspec.DecodeError, msgspec.ValidationError):
        return None
    if not rows:
        return None
    unset = msgspec.UNSET
    key = next((k for k in PREDICTION_KEYS if getattr(rows[0], k) is not unset), None)
    if key is None:
        return None
    preds = list(map(attrgetter(key), rows))
    if not set(map(type, preds)) <= {str, list}:  # a row without the first row's key
        return None
    deg = _degrees(list(map(attrgetter("rotation_deg"), rows)),
                   lambda: list(map(attrgetter("rotation"), rows)), _deg_from_name(path))
    return PredictionColumns(_ids(list(map(attrgetter("question_id"), rows))), deg, preds,
                             list(map(attrgetter("log_prob"), rows)), path.stem,
                             key == "response_pred")


def load_predictions(path: str | os.PathLike) -> pd.DataFrame:
    """Rows ``question_id``, ``rotation_deg``, ``prediction`` from one Real-3DQA predictions
    file: JSONL or JSON rows with ``question_id`` and one answer key of
    :data:`PREDICTION_KEYS` (``prediction``; the official ``response_pred``; ``pred``,
    ``pred_answer``, ``output`` or ``answer`` as 3D-LLM eval scripts write them), or a JSON
    object ``{question_id: answer}``. The viewpoint: ``rotation_deg`` / ``rotation`` in the
    row, else the file name (``rotation_90``, ``_90``), else 0; ids of the id x 100 + suffix
    scheme are resolved later against the references."""
    return read_prediction_columns(path).to_frame()


def _ids(qids: list) -> np.ndarray:
    if set(map(type, qids)) <= {int}:
        try:
            return np.array(qids, dtype=np.int64)
        except OverflowError:
            pass
    return np.array([_int_id(q) for q in qids], dtype=object)


def _fast_rows(rows: list, key: str, file_deg: int | None) -> tuple | None:
    """Columns pulled out of well-formed rows in a few C-level passes (1M rows in a few
    tenths of a second); None when any row needs the row-by-row checks."""
    try:
        qids = list(map(itemgetter("question_id"), rows))
        preds = list(map(itemgetter(key), rows))
        degs = list(map(dict.get, rows, repeat("rotation_deg")))
        log_prob = list(map(dict.get, rows, repeat("log_prob")))
    except (KeyError, TypeError):
        return None
    if not set(map(type, preds)) <= {str}:
        return None
    deg = _degrees(degs, lambda: list(map(dict.get, rows, repeat("rotation"))), file_deg)
    return None if deg is None else (_ids(qids), deg, preds, log_prob)


def _degrees(degs: list, rotations: Callable[[], list], file_deg: int | None) -> \
        np.ndarray | None:
    """The viewpoint column: each row's ``rotation_deg``, else its ``rotation`` (asked for
    only when some row lacks ``rotation_deg``), else the file name's, else 0; None when a
    value is not an integer (the row-by-row reader then says which)."""
    if None in degs:
        degs = [r if d is None else d for d, r in zip(degs, rotations())]
    default = file_deg if file_deg is not None else 0
    kinds = set(map(type, degs))
    if kinds <= {type(None)}:
        return np.full(len(degs), default, dtype=np.int64)
    if kinds <= {int, type(None)}:
        return np.array([default if d is None else d for d in degs], dtype=np.int64)
    return None


def _checked_rows(rows: list, key: str, file_deg: int | None, path: Path,
                  where: list[str] | None) -> tuple:
    qids, degs, preds, log_prob = [], [], [], []
    for i, r in enumerate(rows):
        at = where[i] if where else f"row {i}"
        if not isinstance(r, dict) or "question_id" not in r:
            raise FormatError(f"{path}: {at} lacks question_id (expected an object with "
                              "question_id and prediction)")
        pred = r.get(key)
        if pred is None:
            raise FormatError(f"{path}: {at}: question_id {r['question_id']} " + (
                f"has a null {key!r}; write the model's answer (\"\" when it gave none)"
                if key in r else f"lacks {key!r} (the answer key this file's first row uses)"))
        if not isinstance(pred, str) and not (isinstance(pred, list) and
                                              all(isinstance(p, str) for p in pred)):
            raise FormatError(f"{path}: {at}: question_id {r['question_id']}: prediction "
                              f"{pred!r} is not a string or list of strings")
        deg = r.get("rotation_deg", r.get("rotation"))
        if deg is None:
            deg = file_deg if file_deg is not None else 0
        try:
            whole = int(deg) if not isinstance(deg, bool) and float(deg) == int(deg) else None
        except (TypeError, ValueError):
            whole = None
        if whole is None:
            raise FormatError(f"{path}: {at}: question_id {r['question_id']}: rotation_deg "
                              f"{deg!r} is not a whole number of degrees")
        qids.append(r["question_id"])
        degs.append(whole)
        preds.append(pred)
        log_prob.append(r.get("log_prob"))
    return _ids(qids), np.array(degs, dtype=np.int64), preds, log_prob


def read_model_prediction_columns(spec: str) -> PredictionColumns:
    """``[NAME=]FILE[,FILE...]`` -> one model's predictions as columns, named NAME (default:
    the first file's stem)."""
    name, files = parse_prediction_spec(spec)
    parts = [read_prediction_columns(f) for f in files]
    return PredictionColumns.concat(parts, name or parts[0].name)
