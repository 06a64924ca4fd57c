"""Training data from built datasets: question configs and the ``scenes`` config.

A dataset is a local folder written by this library (``hf-real3d synth``,
``hf-real3d build-real3dqa``) or a Hub id. Questions are tokenized once with
``Dataset.map`` (fingerprint-cached, ``num_proc`` workers); scenes become a
:class:`~hf_real3d.modeling.SceneBank` the collator reads.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import datasets
from datasets.fingerprint import Hasher
from transformers import AutoTokenizer

from hf_real3d._io import looks_local
from hf_real3d.errors import InputError
from hf_real3d.hub import load_local
from hf_real3d.modeling import SceneBank, SceneQACollator, train_tokenizer
from hf_real3d.modeling.data import default_tokenizer_corpus
from hf_real3d.schema import scene_from_row
from hf_real3d.sources import DatasetFolder, resolve

__all__ = ["TrainingData", "load_split", "load_scene_bank", "tokenizer_corpus",
           "build_tokenizer", "tokenize_dataset", "data_fingerprint"]


def _offline() -> bool:
    return any(os.environ.get(v, "").upper() in ("1", "TRUE", "YES", "ON")
               for v in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE"))


def _from_hub(name: str, config: str, **kw) -> Any:
    """``load_dataset`` of a Hub id, with one line naming it when it cannot be had."""
    hint = (f"build one with `hf-real3d synth --out {name}` or pass --dataset_name with a "
            "folder built by hf-real3d")
    if _offline():
        raise FileNotFoundError(f"dataset_name {name!r}: no such folder here, and the Hub is "
                                f"offline (HF_HUB_OFFLINE / HF_DATASETS_OFFLINE); {hint}")
    try:
        return datasets.load_dataset(name, config, **kw)
    except (ConnectionError, OSError) as err:
        raise FileNotFoundError(f"dataset_name {name!r}: no such folder here, and the Hub "
                                f"could not give it ({type(err).__name__}); {hint}") from None


def load_split(name: str, config: str, split: str) -> datasets.Dataset:
    """One split of a question config, from a local folder (never a stale cached build) or
    a Hub dataset id."""
    if looks_local(name):
        folder = Path(name).expanduser()
        hint = f"build one with `hf-real3d synth --out {folder}` or `hf-real3d build-real3dqa`"
        try:
            have = resolve(folder, DatasetFolder, what="a training dataset").configs()
        except (InputError, FileNotFoundError) as err:
            raise type(err)(f"{err}; {hint}") from None
        if config not in have:
            raise InputError(f"`dataset_name` {folder}: no {config!r} config (it holds "
                             f"{', '.join(have) or 'none'}); name one it holds, or {hint}")
        return load_local(folder, config, split)
    return _from_hub(name, config, split=split)


def load_scene_bank(name: str, config: str = "scenes", *, max_objects: int = 24,
                    points_per_object: int = 16) -> SceneBank:
    """A :class:`SceneBank` of every scene in every split of the ``scenes`` config."""
    if looks_local(name):
        ds = load_local(Path(name).expanduser(), config, split=None)
    else:
        ds = _from_hub(name, config)
    bank = SceneBank(max_objects=max_objects, points_per_object=points_per_object)
    for split in ds.values():
        for row in split.with_format("numpy", columns=["points"], output_all_columns=True):
            if row["scene_id"] not in bank.points:
                bank.add(scene_from_row(row))
    return bank


def tokenizer_corpus(dataset: datasets.Dataset) -> list[str]:
    """The texts a word-level tokenizer is trained on (situations, questions, answers)."""
    return default_tokenizer_corpus(dataset.select_columns(
        ["situation", "question", "answers", "alternative_situation"]))


def build_tokenizer(train: datasets.Dataset, path: str | os.PathLike | None = None):
    """The tokenizer saved at ``path``, or one trained on ``train``."""
    if path is not None:
        return AutoTokenizer.from_pretrained(str(path))
    return train_tokenizer(tokenizer_corpus(train))


def data_fingerprint(dataset: datasets.Dataset, bank: SceneBank) -> str:
    """A hash of everything the model sees: the question rows and the scene tensors."""
    h = hashlib.sha256()
    cols = ["question_id", "scene_id", "situation", "question", "answers", "position",
            "rotation"]
    for r in dataset.select_columns(cols):
        h.update(json.dumps(r, sort_keys=True).encode())
    for sid in sorted(bank.points):
        h.update(sid.encode())
        h.update(bank.label_ids[sid].tobytes() if sid in bank.label_ids else b"")
        h.update(bank.points[sid].tobytes())
        h.update(bank.boxes[sid].tobytes())
        h.update(bank.origin[sid].tobytes())
    return h.hexdigest()[:16]


def tokenize_dataset(dataset: datasets.Dataset, collator: SceneQACollator, *,
                     num_proc: int | None = None, fingerprint: str | None = None
                     ) -> datasets.Dataset:
    """Add ``input_ids`` and ``labels`` (prompt then answer, labels on the answer only)."""
    vocab = sorted(collator.tok.get_vocab().items())
    fp = Hasher.hash([fingerprint or dataset._fingerprint, vocab, collator.max_length,
                      "tokenize-v1"])

    def fn(row: dict[str, Any]) -> dict[str, Any]:
        ids, labels = collator.encode(row)
        return {"input_ids": ids, "labels": labels}

    return dataset.map(fn, num_proc=num_proc, new_fingerprint=fp, desc="tokenize")


@dataclass
class TrainingData:
    """What the trainer needs: tokenized splits, the scene bank, the tokenizer, and a
    fingerprint of the data (recorded with every trained model)."""

    train: datasets.Dataset
    eval: datasets.Dataset | None
    bank: SceneBank
    tokenizer: Any
    fingerprint: str
    source: dict[str, Any]
