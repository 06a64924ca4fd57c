"""Rotation augmentation of a training split: each question also asked from its turned
viewpoints, the situation rewritten and the answer recomputed from the scene's geometry
(:func:`hf_real3d.real3dqa.rotation.rotate_records`, the rule the benchmark's rotations
follow), or taken from a rotation set (the release's ``rotation_{k}.json`` files, or a
folder ``rotate`` / ``export-rotations`` wrote). The rows of one question share a
``viewpoint_group`` id, which the viewpoint objective (``reweighting="viewpoint_dro"``) and
its group-aware sampler read.

>>> from hf_real3d.training.augment import AUGMENT_CHOICES
>>> AUGMENT_CHOICES
('all', 'one')
"""

from __future__ import annotations

import collections
import logging
import os
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import datasets
import numpy as np

from hf_real3d.errors import InputError
from hf_real3d.real3dqa.rotation import rotate_records
from hf_real3d.scene import Scene
from hf_real3d.schema import record_from_row
from hf_real3d.sources import SceneRows

__all__ = ["AUGMENT_CHOICES", "rotation_augment", "rotation_set_rows"]

logger = logging.getLogger("hf_real3d.training")

# all: every viewpoint of every rotated question; one: one seeded viewpoint per question
AUGMENT_CHOICES = ("all", "one")
_ROTATED = ("situation", "answers", "position", "rotation", "rotation_deg")
_GROUP = "viewpoint_group"  # the column a question's rows share (the trainer's default)


def rotation_set_rows(source: str | os.PathLike | Sequence[dict[str, Any]], *,
                      viewpoints: int = 4, exclude_ids: Iterable[Any] = ()
                      ) -> dict[int, list[dict[str, Any]]]:
    """A rotation set's turned rows by base question id: ``source`` is a release folder, a
    folder of ``rotation_{k}.json`` files, a dataset folder with a ``rotations`` config
    (:func:`hf_real3d.real3dqa.rotation_set.read_rotation_set`), or the rows themselves.

    Refused, naming the ids and the fix: a question with fewer than ``viewpoints``
    viewpoints (an incomplete group), and a question of ``exclude_ids`` (the evaluation
    split's: training on its rotations would score the model on what it saw)."""
    where = "the rotation set"
    if isinstance(source, (str, os.PathLike)):
        # the release readers only when a rotation set is read from files
        from hf_real3d.real3dqa.rotation_set import read_rotation_set

        where = str(source)
        rows = read_rotation_set(source).rows
    else:
        rows = list(source)
    by_q: dict[int, dict[int, dict[str, Any]]] = collections.defaultdict(dict)
    for r in rows:
        by_q[int(r["question_id"])][int(r["rotation_deg"]) % 360] = r
    want = {round(k * 360 / viewpoints) for k in range(viewpoints)}
    short = {q: sorted(want - set(v)) for q, v in by_q.items() if not want <= set(v)}
    if short:
        ids = sorted(short)
        raise InputError(
            f"{where}: {len(ids)} question(s) lack viewpoints of {sorted(want)} (question_id "
            f"{ids[0]} lacks {short[ids[0]]}; also {ids[1:6]}); complete their "
            "rotation_{k}.json items, drop those questions from the set, or set "
            "rotation_viewpoints to the viewpoints the set has")
    shared = sorted(set(by_q) & {int(q) for q in exclude_ids})
    if shared:
        raise InputError(
            f"{where}: {len(shared)} question id(s) of the rotation set are in the evaluation "
            f"split ({', '.join(map(str, shared[:8]))}); augmenting with them would train on "
            "what is scored: give a rotation set of training questions only")
    return {q: [v[k] for k in sorted(want)] for q, v in by_q.items()}


def rotation_augment(dataset: datasets.Dataset,
                     scenes: Mapping[str, Scene] | datasets.Dataset | None = None,
                     *, rotations: str | os.PathLike | Sequence[dict[str, Any]] | None = None,
                     choose: str = "all", viewpoints: int = 4, seed: int = 0,
                     exclude_scenes: Iterable[str] = (), exclude_ids: Iterable[Any] = (),
                     kinds: Iterable[str] | None = None, kind_column: str = "kind",
                     progress: bool = False) -> datasets.Dataset:
    """``dataset`` (question rows of this library's schema) with each question expanded into
    its ``viewpoints`` turned viewpoints (``choose="all"``) or one of them, seeded
    (``"one"``).

    The turned viewpoints come from ``rotations`` when given (a rotation set:
    :func:`rotation_set_rows`, matched on ``question_id``), else from ``scenes`` (the rooms by
    id, a mapping or a ``scenes`` config), rewritten from geometry. ``kinds``: only questions
    whose ``kind_column`` is one of these are turned (the rest keep their row alone: the
    transfer test's split of kinds). A question that cannot be turned keeps its original row
    alone. ``exclude_scenes``: the evaluation split's rooms; a training question in one of
    them is an error naming them (augmentation never touches test rooms); ``exclude_ids``:
    the evaluation split's question ids, refused in a rotation set. Every row gets
    ``viewpoint_group``, the id its question's rows share."""
    if choose not in AUGMENT_CHOICES:
        raise InputError(f"rotation_augment: expected choose in {AUGMENT_CHOICES} but got "
                         f"{choose!r}")
    if viewpoints < 2:
        raise InputError(f"rotation_augment: viewpoints={viewpoints}; expected at least 2 "
                         "(the unturned one and a turn)")
    if _GROUP in dataset.column_names:
        raise InputError(f"rotation_augment: the dataset already has a {_GROUP!r} column "
                         "(is it augmented already?)")
    if scenes is None and rotations is None:
        raise InputError("rotation_augment: no geometry and no rotation set to turn questions "
                         "from; give the rooms (scenes=, a dataset's scenes config) or a "
                         "rotation set (rotations=, `rotation_set`)")
    shared = sorted(set(dataset["scene_id"]) & set(exclude_scenes))
    if shared:
        raise InputError(f"rotation_augment: the training questions share {len(shared)} "
                         f"room(s) with the evaluation split ({', '.join(shared[:5])}); "
                         "augment a training split whose rooms are not evaluated on")
    rows = dataset.to_list()
    turnable = rows if kinds is None else _of_kinds(dataset, rows, set(kinds), kind_column)
    if rotations is not None:
        from_set = rotation_set_rows(rotations, viewpoints=viewpoints, exclude_ids=exclude_ids)
        wanted = {int(r["question_id"]) for r in turnable}
        by_q = {q: v for q, v in from_set.items() if q in wanted}
        if not by_q:
            raise InputError(f"rotation_augment: none of the {len(from_set)} questions of the "
                             "rotation set is a training question (matched on question_id); "
                             "give the rotation set of this training split")
        source = "the rotation set"
    else:
        by_q = _turned_by_geometry(turnable, scenes, viewpoints, progress)
        source = "geometry"
    rng = np.random.default_rng(seed)
    out = []
    for row in rows:
        turned = by_q.get(int(row["question_id"]))
        if not turned:
            out.append({**row, _GROUP: str(row["question_id"])})
            continue
        if choose == "one":
            turned = [turned[int(rng.integers(len(turned)))]]
        for t in turned:
            out.append({**row, **{k: t[k] for k in _ROTATED if k in t},
                        "rotation_deg": int(t["rotation_deg"]), _GROUP: str(row["question_id"])})
    logger.info("rotation_augment: %d of %d questions turned into %d viewpoints from %s (%d "
                "rows); %d kept unrotated", len(by_q), len(rows), viewpoints, source, len(out),
                len(rows) - len(by_q))
    features = dataset.features.copy()
    features[_GROUP] = datasets.Value("string")
    return datasets.Dataset.from_list(out, features=features)


def _of_kinds(dataset: datasets.Dataset, rows: list[dict[str, Any]], kinds: set[str],
              kind_column: str) -> list[dict[str, Any]]:
    """The rows whose ``kind_column`` is one of ``kinds``; a missing column or a kind no row
    has is an error naming the column and the kinds there are."""
    if kind_column not in dataset.column_names:
        raise InputError(f"rotation_augment: kinds= given but the dataset has no "
                         f"{kind_column!r} column (it has {dataset.column_names}); set "
                         "kind_column to the column naming each question's kind")
    unknown = sorted(kinds - set(dataset[kind_column]))
    if unknown:
        raise InputError(f"rotation_augment: no question of kind {unknown} in column "
                         f"{kind_column!r} (its kinds: {sorted(set(dataset[kind_column]))})")
    return [r for r in rows if r[kind_column] in kinds]


def _turned_by_geometry(rows: list[dict[str, Any]], scenes: Mapping[str, Scene] | datasets.Dataset,
                        viewpoints: int, progress: bool) -> dict[int, list[dict[str, Any]]]:
    """The turned rows of ``rows`` by question id, rewritten from their rooms' geometry."""
    rooms = scenes if isinstance(scenes, Mapping) else SceneRows(scenes)
    result = rotate_records([record_from_row(r) for r in rows], rooms, n_viewpoints=viewpoints,
                            progress=progress)
    by_q = collections.defaultdict(list)
    for r in result.rows:
        by_q[int(r["question_id"])].append(r)
    if not by_q:
        reasons = collections.Counter(e["reason"] for e in result.excluded).most_common(3)
        raise InputError(f"rotation_augment: no question could be turned from its scene's "
                         f"geometry (most common reasons: {reasons}); give a rotation set "
                         "instead (`rotation_set`)")
    return by_q
