"""Reading Real-ScanQA predictions: the Real-3DQA readers' files, ids kept as strings."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from hf_real3d._io import FormatError
from hf_real3d.real3dqa.predictions import read_prediction_columns

__all__ = ["read_predictions"]


def read_predictions(p: Any, what: str) -> pd.DataFrame:
    """A (question_id, prediction[, log_prob]) table from a table or a predictions file (read
    by :func:`~hf_real3d.real3dqa.predictions.read_prediction_columns`: JSONL, JSON rows with
    any of its answer keys, or a ``{question_id: answer}`` object); ScanQA ids stay strings.
    ``what`` names the input in errors."""
    if isinstance(p, pd.DataFrame):
        df = p.copy()
    else:
        path = Path(p)
        if not path.is_file():
            raise FileNotFoundError(f"{path}: no such predictions file ({what})")
        df = read_prediction_columns(path).to_frame()
    if "question_id" not in df or "prediction" not in df:
        raise FormatError(f"{what}: predictions need question_id and prediction")
    df["question_id"] = df.question_id.astype(str)
    df["prediction"] = [p[0] if isinstance(p, list) and p else p for p in df.prediction]
    return df
