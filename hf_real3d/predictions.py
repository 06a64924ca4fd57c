"""Reading prediction files, for both benchmarks, in one place.

**Real-3DQA** (:func:`load_predictions`): JSONL/JSON rows with ``question_id``,
``prediction`` and optionally ``rotation_deg`` (or ``rotation``; degrees, default 0) and
``log_prob``; or the official Real-3DQA format (a JSON list with ``question_id``,
``response_pred``, ``response_gt``; the viewpoint is read from the file name,
``..._90.json`` / ``rot90`` / ``rotation_90``, or from a ``01``/``02``/``03`` id suffix).

**3DSRBench** (:func:`read_srbench_answers`): JSONL rows ``{config?, qid,
prediction}``, VLMEvalKit's prediction and result tables, lmms-eval's logged samples.

On the command line every prediction input is written ``NAME=FILE[,FILE...]``
(:func:`parse_prediction_spec`): one model, its files joined by commas.
"""

from __future__ import annotations

import json
import os
import re
import zipfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import repeat
from operator import attrgetter, itemgetter
from pathlib import Path

import numpy as np
import pandas as pd

from hf_real3d._io import UTF8_BOM, FormatError, first_repeat, read_json, read_text

__all__ = [
    "parse_prediction_spec",
    "check_unique_names",
    "named_files",
    "prediction_pairs",
    "load_predictions",
    "load_model_predictions",
    "PredictionColumns",
    "read_prediction_columns",
    "read_model_prediction_columns",
    "load_srbench_predictions",
    "read_srbench_answers",
    "SRBenchAnswers",
]

def parse_prediction_spec(spec: str) -> tuple[str, list[str]]:
    """``NAME=FILE[,FILE...]`` (or ``FILE[,FILE...]``) -> (name or "", [files])."""
    name, sep, files = spec.partition("=")
    if not sep:
        name, files = "", spec
    paths = [f for f in files.split(",") if f]
    if not paths:
        raise ValueError(f"prediction input {spec!r} names no file; write NAME=FILE[,FILE...]")
    return name, paths


def check_unique_names(specs: Sequence[str], what: str = "--predictions") -> list[str]:
    """The model names of ``[NAME=]FILE[,FILE...]`` specs (default: the first file's
    stem); a name given twice is an error naming both entries."""
    seen: dict[str, str] = {}
    names = []
    for spec in specs:
        name, files = parse_prediction_spec(spec)
        name = name or Path(files[0]).stem
        if name in seen:
            raise ValueError(f"{what}: model name {name!r} is given twice ({seen[name]!r} and "
                             f"{spec!r}); give each model its own NAME=")
        seen[name] = spec
        names.append(name)
    return names


def _deg_from_name(path: Path) -> int | None:
    m = re.search(r"(?:rotation|rot)[_-]?(\d{1,3})(?!\d)", path.stem) or \
        re.search(r"_(0|90|180|270)$", path.stem)
    return int(m.group(1)) if m else None


def named_files(specs: list[str]) -> list[tuple[str, str]]:
    """``["NAME=FILE", ...]`` -> ``[(NAME, FILE), ...]``, one file per model."""
    out = []
    for spec in specs:
        name, files = parse_prediction_spec(spec)
        if not name or len(files) != 1:
            raise ValueError(f"prediction input {spec!r}: expected NAME=FILE (one file)")
        out.append((name, files[0]))
    names = [n for n, _ in out]
    if len(set(names)) != len(names):
        raise ValueError(f"prediction inputs name a model twice: {sorted(names)}")
    return out


def prediction_pairs(full: list[str], blind: list[str]) -> list[tuple[str, str, str]]:
    """(NAME, full file, blind file) from ``--full NAME=FILE`` and ``--blind NAME=FILE``."""
    f, b = dict(named_files(full)), dict(named_files(blind))
    if set(f) != set(b):
        raise ValueError(f"every --full NAME=FILE needs a --blind NAME=FILE of the same NAME; "
                         f"full: {sorted(f)}, blind: {sorted(b)}")
    return [(name, f[name], b[name]) for name in f]


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
        rows, where = [], []
        for n, line in enumerate(read_text(path).splitlines(), 1):
            if not line.strip():
                continue
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError as err:
                raise FormatError(f"{path}: line {n}, column {err.colno}: malformed JSON "
                                  f"({err.msg})") from None
            where.append(f"line {n}")
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
    """Record the file and the viewpoint its name gives (checked against id suffixes)."""
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
            raise FormatError(f"{path}: {at}: question_id {r['question_id']} lacks {key!r} "
                              f"(the answer key this file's first row uses)")
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


def load_model_predictions(spec: str) -> pd.DataFrame:
    """``[NAME=]FILE[,FILE...]`` -> one Real-3DQA predictions table named NAME (default:
    the first file's stem)."""
    return read_model_prediction_columns(spec).to_frame()


@dataclass
class SRBenchAnswers:
    """One model's 3DSRBench answers from its files, with what the files hold besides.

    ``table`` has one row per answer: ``config`` (None: any config), ``qid``,
    ``prediction`` (str, or None where a file holds only hits), ``hit`` (NaN unless the
    file gives it: a VLMEvalKit ``*_result.xlsx`` column, possibly its LLM judge's; an
    lmms-eval sample's ``score``) and, when the file carries its items (VLMEvalKit tables,
    lmms-eval samples), ``question``, ``A``..``D``, ``answer``, ``category`` and
    ``l2-category``. ``kind``: ``"jsonl"``, ``"vlmevalkit"`` or ``"lmms_eval"`` (the
    scorer whose hits ``hit`` holds)."""

    name: str
    kind: str
    table: pd.DataFrame

    def as_dict(self) -> dict[tuple[str | None, str], str | None]:
        return {(c, q): p for c, q, p in zip(self.table.config, self.table.qid,
                                             self.table.prediction)}

    def has_items(self) -> bool:
        return {"answer", "category"} <= set(self.table.columns)


def read_srbench_answers(spec: str) -> SRBenchAnswers:
    """``NAME=FILE[,FILE...]`` -> :class:`SRBenchAnswers`. A file is one of:

    * JSONL rows ``{config?, qid, prediction}`` (a row without ``config`` applies to every
      config);
    * a VLMEvalKit table (``.xlsx``, ``.tsv``, ``.csv``): its prediction file
      (``{model}_3DSRBench.xlsx``: the TSV's columns without the image, plus
      ``prediction``) or its result file (``*_result.xlsx``, with ``hit``), read as
      VLMEvalKit reads it (pandas' defaults: an empty or ``"None"`` cell is missing, a
      missing prediction reads ``"nan"``);
    * lmms-eval's ``--log_samples`` output of a 3DSRBench task (``*_samples_*.jsonl``: lines
      with ``filtered_resps``, ``target`` and the per-metric entries holding ``qid``,
      ``score`` and ``category``).
    """
    name, files = parse_prediction_spec(spec)
    parts, kinds = [], set()
    for path in map(Path, files):
        if not path.is_file():
            raise FileNotFoundError(f"{path}: no such predictions file")
        if path.suffix.lower() in (".xlsx", ".tsv", ".csv"):
            parts.append(_vlmevalkit_table(path))
            kinds.add("vlmevalkit")
            continue
        lines = _jsonl_objects(path)
        if lines and "filtered_resps" in lines[0][1]:
            parts.append(_lmms_samples(path, lines))
            kinds.add("lmms_eval")
        else:
            parts.append(_jsonl_answers(path, lines))
            kinds.add("jsonl")
    if len(kinds) > 1:
        raise FormatError(f"{spec}: one model's files are of different kinds ({sorted(kinds)}); "
                          "give each kind its own NAME=")
    table = pd.concat(parts, ignore_index=True)
    key = list(zip(table.config, table.qid))
    rep = first_repeat(key)
    if rep:
        raise FormatError(f"{spec}: qid {key[rep[1]][1]!r} is answered twice (rows {rep[0]} "
                          f"and {rep[1]} of the files read in order); keep one answer")
    return SRBenchAnswers(name or Path(files[0]).stem, kinds.pop(), table)


def load_srbench_predictions(spec: str) -> tuple[str, dict[tuple[str | None, str], str]]:
    """``NAME=FILE[,FILE...]`` -> (name, {(config, qid): prediction}), from any file
    :func:`read_srbench_answers` reads."""
    answers = read_srbench_answers(spec)
    return answers.name, answers.as_dict()


def _jsonl_objects(path: Path) -> list[tuple[int, dict]]:
    text = read_text(path)
    out = []
    for i, line in enumerate(text.splitlines()):
        if not line.strip():
            continue
        try:
            r = json.loads(line)
        except json.JSONDecodeError as err:
            raise FormatError(f"{path}: line {i + 1}: malformed JSON ({err.msg})") from None
        if not isinstance(r, dict):
            raise FormatError(f"{path}: line {i + 1} is not a JSON object")
        out.append((i + 1, r))
    return out


def _jsonl_answers(path: Path, lines: list[tuple[int, dict]]) -> pd.DataFrame:
    rows = []
    for n, r in lines:
        if "qid" not in r or not isinstance(r.get("prediction"), str):
            if {"doc_id", "doc", "resps", "target"} & set(r):
                raise FormatError(f"{path}: line {n} looks like an lmms-eval sample "
                                  "(--log_samples) but has no filtered_resps; write the samples "
                                  "with a current lmms-eval, or give JSONL rows {qid, "
                                  "prediction}")
            raise FormatError(f"{path}: line {n} needs qid and a string prediction")
        rows.append({"config": r.get("config"), "qid": str(r["qid"]),
                     "prediction": r["prediction"], "hit": float("nan")})
    if not rows:
        raise FormatError(f"{path}: no prediction rows")
    return pd.DataFrame(rows, columns=["config", "qid", "prediction", "hit"])


def _lmms_samples(path: Path, lines: list[tuple[int, dict]]) -> pd.DataFrame:
    rows = []
    for n, r in lines:
        entry = next((v for v in r.values() if isinstance(v, dict) and "qid" in v
                      and "score" in v), None)
        if entry is None:
            raise FormatError(f"{path}: line {n} is an lmms-eval sample without a 3DSRBench "
                              "metric entry (qid, score); was it written by a 3dsrbench task?")
        resp = r.get("filtered_resps")
        while isinstance(resp, list):
            resp = resp[0] if resp else ""
        doc = r.get("doc") or {}
        score = entry["score"]
        if isinstance(score, bool) or not isinstance(score, int | float) or score not in (0, 1):
            raise FormatError(f"{path}: line {n} (qid {entry['qid']}): score {score!r} is not 0 "
                              "or 1 (lmms-eval's 3dsrbench tasks score each sample 0 or 1); "
                              "fix the sample or score its filtered_resps again")
        row = {"config": None, "qid": str(entry["qid"]), "prediction": str(resp),
               "hit": float(score), "answer": str(r.get("target", doc.get("answer"))),
               "category": str(entry.get("category", doc.get("category", "")))}
        for k in ("question", "A", "B", "C", "D"):
            if k in doc:
                row[k] = doc[k]
        rows.append(row)
    return pd.DataFrame(rows)


def _vlmevalkit_table(path: Path) -> pd.DataFrame:
    kind = {".xlsx": "an Excel workbook", ".tsv": "a tab-separated table"}.get(
        path.suffix.lower(), "a comma-separated table")
    try:  # as VLMEvalKit's own `load` reads it: pandas' defaults
        if path.suffix.lower() == ".xlsx":
            df = pd.read_excel(path)
        else:
            df = pd.read_csv(path, sep="\t" if path.suffix.lower() == ".tsv" else ",",
                             encoding="utf-8-sig")
    except UnicodeDecodeError as err:
        raise FormatError(f"{path}: byte {err.start} is not UTF-8; re-save the table as UTF-8")\
            from None
    except (ValueError, OSError, KeyError, zipfile.BadZipFile) as err:
        # pandas' own messages name no file: "No columns to parse from file", "Excel file
        # format cannot be determined"
        raise FormatError(f"{path}: not readable as {kind} of VLMEvalKit results "
                          f"({str(err).splitlines()[0] or type(err).__name__}); expected "
                          "columns qid and prediction") from None
    df.columns = [c if len(str(c)) == 1 and str(c).isupper() else str(c).lower()
                  for c in df.columns]
    missing = [c for c in ("qid", "prediction") if c not in df.columns]
    if missing:
        raise FormatError(f"{path}: a VLMEvalKit table needs columns {missing} (has "
                          f"{list(df.columns)[:12]})")
    if "index" in df.columns:
        df = df.sort_values("index", kind="stable").reset_index(drop=True)
    out = pd.DataFrame({"config": [None] * len(df), "qid": df.qid.astype(str).tolist(),
                        "prediction": [str(x) for x in df.prediction]})
    if "hit" in df.columns:
        hits = pd.to_numeric(df.hit, errors="coerce")
        bad = np.flatnonzero(hits.isna().to_numpy())
        if len(bad):
            raise FormatError(f"{path}: row {int(bad[0])} (qid {out.qid[int(bad[0])]}): hit "
                              f"{df.hit.iloc[int(bad[0])]!r} is not a number")
        out["hit"] = hits.astype(float).to_numpy()
    else:
        out["hit"] = float("nan")
    for k in ("question", "A", "B", "C", "D", "answer", "category", "l2-category"):
        if k in df.columns:
            out[k] = ["" if pd.isna(v) else str(v) for v in df[k]]
    return out
