"""Predictions of a saved SceneLM on a built dataset, every viewpoint of its questions (the
predict recipe, :mod:`hf_real3d.recipes.predict`)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from transformers import AutoTokenizer

from hf_real3d._io import atomic_dir, check_out, write_json, write_jsonl
from hf_real3d.errors import InputError
from hf_real3d.modeling import ABLATIONS, SceneLM, attention_to_3d, predict_rows
from hf_real3d.real3dqa.rotation import rotate_records
from hf_real3d.schema import record_from_row
from hf_real3d.sources import DatasetFolder, SceneRows, resolve
from hf_real3d.training.data import load_scene_bank, load_split
from hf_real3d.training.inputs import saved_model

__all__ = ["predict_dataset"]


def predict_dataset(model_path: str | os.PathLike, dataset_name: str, out: str | os.PathLike, *,
                    config: str = "sqa3d", split: str = "test", scenes_config: str = "scenes",
                    viewpoints: int = 4, ablations: Sequence[str] = (), attention: bool = False,
                    batch_size: int = 128) -> dict[str, Any]:
    """The predict recipe's work: predictions of a saved SceneLM on a built dataset, in the
    format the metrics read (JSONL ``question_id, rotation_deg, prediction, log_prob``):
    ``original.jsonl``; ``rotations.jsonl`` (every viewpoint: the dataset's ``rotations``
    config when it has one, else the questions rotated from their recorded semantics and
    the ``scenes`` config); one file per input ablation; ``summary.json``. Every argument is
    checked before the model is loaded, and ``out`` is written whole or not at all."""
    _check(model_path, dataset_name, out, viewpoints, ablations, batch_size)
    model = SceneLM.from_pretrained(model_path)
    tok = AutoTokenizer.from_pretrained(model_path)
    ds = load_split(dataset_name, config, split)
    bank = load_scene_bank(dataset_name, scenes_config, max_objects=model.config.max_objects,
                           points_per_object=model.config.points_per_object)
    bank.tokenize_labels(tok)
    rows = list(ds)
    out = Path(out)
    summary: dict[str, Any] = {"model": str(model_path), "dataset": dataset_name, "files": {}}
    files: dict[str, list[dict]] = {"original": predict_rows(model, tok, bank, rows,
                                                             batch_size=batch_size)}
    if viewpoints > 1:
        if _has_rotations(dataset_name):
            rot_rows = list(load_split(dataset_name, "rotations", split))
        else:
            scenes = SceneRows(load_split(dataset_name, scenes_config, split), dataset_name)
            rot = rotate_records([record_from_row(r) for r in rows], scenes,
                                 n_viewpoints=viewpoints)
            rot_rows = rot.rows
            summary["rotation"] = rot.stats()
            if not rot_rows:
                raise InputError(f"`viewpoints` {viewpoints}: none of the {len(rows)} questions "
                                 f"of {dataset_name} could be asked from the turned viewpoints "
                                 f"(e.g. {rot.excluded[0]['reason']!r}); use 4 (the metrics' "
                                 "turns of 90 degrees) or 1")
        files["rotations"] = predict_rows(model, tok, bank, rot_rows, batch_size=batch_size)
    for ab in ablations:
        files[f"ablation_{ab}"] = predict_rows(model, tok, bank, rows, ablation=ab,
                                               batch_size=batch_size)
    if attention:
        summary["attention_to_3d"] = attention_to_3d(model, tok, bank, rows)
    summary["files"] = {name: str(out / f"{name}.jsonl") for name in files}
    with atomic_dir(out) as tmp:
        for name, preds in files.items():
            write_jsonl(tmp / f"{name}.jsonl", preds)
        write_json(tmp / "summary.json", summary, indent=2)
    return summary


def _check(model_path, dataset_name, out, viewpoints, ablations, batch_size) -> None:
    saved_model(model_path, "model", "scene_lm", tokenizer=True)
    bad = [a for a in ablations if a not in ABLATIONS[1:]]
    if bad:
        raise InputError(f"`ablations` {bad[0]!r}: expected some of {list(ABLATIONS[1:])}")
    if batch_size < 1:
        raise InputError(f"`batch_size` {batch_size}: expected at least 1 row per pass")
    if viewpoints < 0:
        raise InputError(f"`viewpoints` {viewpoints}: expected 4 (turns of 90 degrees), or 0 "
                         "or 1 for the original view only")
    if Path(out).exists() and not Path(out).is_dir():
        raise InputError(f"`out` {out}: a file; give a folder")
    check_out(out, prefix="--", model=model_path,
              **({"dataset_name": dataset_name} if Path(dataset_name).exists() else {}))


def _has_rotations(dataset_name: str) -> bool:
    """Whether the dataset folder ``dataset_name`` has a ``rotations`` config (a Hub id: no,
    its questions are rotated from their scenes)."""
    if not Path(dataset_name).exists():
        return False
    folder = resolve(dataset_name, DatasetFolder, what="`dataset_name`")
    return "rotations" in folder.configs()
