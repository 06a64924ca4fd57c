"""Real-ScanQA's dataset format: the citation, the captioning metric names and the row
schema of its configs (ScanQA's records, :mod:`hf_real3d.scanqa`, plus the question type)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import datasets
import pandas as pd

from hf_real3d.real3dqa.format import REAL3DQA_BIBTEX

__all__ = ["CITATION", "CAPTION_METRICS", "features", "rows"]


CITATION = REAL3DQA_BIBTEX + """@inproceedings{azuma2022scanqa,
  title={ScanQA: 3D Question Answering for Spatial Scene Understanding},
  author={Azuma, Daichi and Miyanishi, Taiki and Kurita, Shuhei and Kawanabe, Motoaki},
  booktitle={CVPR},
  year={2022}
}"""
CAPTION_METRICS = ("bleu_1", "bleu_2", "bleu_3", "bleu_4", "rouge_l", "meteor", "cider")


def features() -> datasets.Features:
    """The features of the ``scanqa`` and ``real_scanqa`` configs."""
    return datasets.Features({
        "question_id": datasets.Value("string"), "scene_id": datasets.Value("string"),
        "question": datasets.Value("string"), "answers": [datasets.Value("string")],
        "object_ids": [datasets.Value("int64")], "object_names": [datasets.Value("string")],
        "question_type": datasets.Value("string")})


def rows(df: pd.DataFrame, **extra: Sequence) -> list[dict[str, Any]]:
    """The config rows of a ScanQA table, with ``extra`` columns (one value per row)."""
    cols = ["question_id", "scene_id", "question", "answers", "object_ids", "object_names",
            "question_type"]
    rows = df[cols].to_dict("records")
    for k, vals in extra.items():
        for r, v in zip(rows, vals):
            r[k] = v
    return rows
