"""Rotation augmentation of a training split: each question also asked from its turned
viewpoints, the situation rewritten and the answer recomputed from the scene's geometry
(:func:`hf_real3d.real3dqa.rotation.rotate_records`, the rule the benchmark's rotations
follow). The rows of one question share a ``viewpoint_group`` id, which the viewpoint
objective (``reweighting="viewpoint_dro"``) and its group-aware sampler read.

>>> from hf_real3d.training.augment import AUGMENT_CHOICES
>>> AUGMENT_CHOICES
('all', 'one')
"""

from __future__ import annotations

import collections
import logging
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import datasets
import numpy as np

from hf_real3d.real3dqa.rotation import rotate_records
from hf_real3d.scene import Scene
from hf_real3d.schema import record_from_row, scene_from_row

__all__ = ["AUGMENT_CHOICES", "rotation_augment"]

logger = logging.getLogger("hf_real3d.training")

# all: every viewpoint of every rotated question; one: one seeded viewpoint per question
AUGMENT_CHOICES = ("all", "one")
_ROTATED = ("situation", "answers", "position", "rotation", "rotation_deg")


def _scene_getter(scenes: Mapping[str, Scene] | datasets.Dataset) -> Callable[[str], Scene]:
    if isinstance(scenes, Mapping):
        return scenes.__getitem__
    index = {sid: i for i, sid in enumerate(scenes["scene_id"])}

    def get(scene_id: str) -> Scene:
        return scene_from_row(scenes[index[scene_id]])
    return get


def rotation_augment(dataset: datasets.Dataset, scenes: Mapping[str, Scene] | datasets.Dataset,
                     *, choose: str = "all", viewpoints: int = 4, seed: int = 0,
                     exclude_scenes: Iterable[str] = (), keep_unrotated: bool = True,
                     group_column: str = "viewpoint_group", progress: bool = False
                     ) -> datasets.Dataset:
    """``dataset`` (question rows of this library's schema) with each question expanded into
    its ``viewpoints`` turned viewpoints (``choose="all"``) or one of them, seeded
    (``"one"``). ``scenes``: the rooms by id (a mapping, or a ``scenes`` config).

    A question whose turns geometry cannot answer keeps its original row alone
    (``keep_unrotated``) or is left out. ``exclude_scenes``: the evaluation split's rooms; a
    training question in one of them is an error naming them (augmentation never touches
    test rooms). Every row gets ``group_column``, the id its question's rows share."""
    if choose not in AUGMENT_CHOICES:
        raise ValueError(f"rotation_augment: expected choose in {AUGMENT_CHOICES} but got "
                         f"{choose!r}")
    if group_column in dataset.column_names:
        raise ValueError(f"rotation_augment: the dataset already has a {group_column!r} column "
                         "(is it augmented already?)")
    shared = sorted(set(dataset["scene_id"]) & set(exclude_scenes))
    if shared:
        raise ValueError(f"rotation_augment: the training questions share {len(shared)} "
                         f"room(s) with the evaluation split ({', '.join(shared[:5])}); "
                         "augment a training split whose rooms are not evaluated on")
    rows = dataset.to_list()
    result = rotate_records([record_from_row(r) for r in rows], _scene_getter(scenes),
                            n_viewpoints=viewpoints, progress=progress)
    by_q: dict[Any, list[dict[str, Any]]] = collections.defaultdict(list)
    for r in result.rows:
        by_q[r["question_id"]].append(r)
    if not by_q:
        reasons = collections.Counter(e["reason"] for e in result.excluded).most_common(3)
        raise ValueError(f"rotation_augment: no question could be turned from its scene's "
                         f"geometry (most common reasons: {reasons})")
    rng = np.random.default_rng(seed)
    out = []
    for row in rows:
        turned = by_q.get(row["question_id"])
        if not turned:
            if keep_unrotated:
                out.append({**row, group_column: str(row["question_id"])})
            continue
        if choose == "one":
            turned = [turned[int(rng.integers(len(turned)))]]
        for t in turned:
            out.append({**row, **{k: t[k] for k in _ROTATED},
                        group_column: str(row["question_id"])})
    logger.info("rotation_augment: %d of %d questions turned into %d viewpoints (%d rows); "
                "%d kept unrotated", len(by_q), len(rows), viewpoints, len(out),
                len(rows) - len(by_q) if keep_unrotated else 0)
    features = dataset.features.copy()
    features[group_column] = datasets.Value("string")
    return datasets.Dataset.from_list(out, features=features)
