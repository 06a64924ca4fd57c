"""Reading 3DSRBench answers: JSONL rows ``{config?, qid, prediction}``, VLMEvalKit's
prediction and result tables, and lmms-eval's logged samples."""

from __future__ import annotations

import zipfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from hf_real3d._io import FormatError, first_repeat, read_jsonl
from hf_real3d.specs import parse_prediction_spec

__all__ = ["SRBenchAnswers", "read_srbench_answers", "load_srbench_predictions"]


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
        lines = read_jsonl(path)
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


def _jsonl_answers(path: Path, lines: list[tuple[int, dict]]) -> pd.DataFrame:
    rows = []
    for n, r in lines:
        if "qid" not in r or not isinstance(r.get("prediction"), str):
            if {"doc_id", "doc", "resps", "target"} & set(r):
                raise FormatError(f"{path}: line {n} looks like an lmms-eval sample "
                                  "(`log_samples`) but has no filtered_resps; write the samples "
                                  "with a current lmms-eval, or give JSONL rows {qid, "
                                  "prediction}")
            raise FormatError(f"{path}: line {n} needs qid and a string prediction (has "
                              f"{'no qid' if 'qid' not in r else repr(r.get('prediction'))}); "
                              "write the model's reply as text (\"\" when it gave none)")
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
            df = pd.read_excel(path, dtype={"qid": str})
        else:
            df = pd.read_csv(path, sep="\t" if path.suffix.lower() == ".tsv" else ",",
                             encoding="utf-8-sig", dtype={"qid": str})
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
