"""The row schema of the dataset folders: question rows and scene rows, their ``datasets``
features, conversions to and from :class:`~hf_real3d.sqa3d.SQA3DRecord` and
:class:`~hf_real3d.scene.Scene`, and what each column means (:data:`FIELD_DOCS`, quoted on
dataset cards). It knows columns, not what a question asks."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

import datasets
import numpy as np

from hf_real3d._io import FormatError
from hf_real3d.scene import Scene, SceneObject
from hf_real3d.sqa3d import SQA3DRecord

__all__ = ["question_features", "fill_rows", "record_row", "record_from_row",
           "scene_features", "scene_rows", "scene_from_row", "FIELD_DOCS"]


_POS = {k: datasets.Value("float64") for k in ("x", "y", "z")}
_ROT = {k: datasets.Value("float64") for k in ("_x", "_y", "_z", "_w")}
_EXTRA_COLUMNS = {
    "kind": "string", "guessable": "bool", "prior_kind": "string", "quality": ["string"],
    "reasons": ["string"], "dependency": "float64", "source_question_id": "int64",
    "in_debiased": "bool", "semantics": "string", "source": "string", "raw_reply": "string",
}
_EMPTY_DEFAULTS = {"alternative_situation": [], "quality": [], "reasons": [],
                   "question_type": "", "sqa3d_type": "", "kind": "", "prior_kind": "",
                   "situation": "", "semantics": "", "source": "", "raw_reply": ""}


def question_features(*extra: str) -> datasets.Features:
    """Columns shared by every question config, plus the named ``extra`` ones: ``kind``,
    ``guessable``, ``prior_kind``, ``quality``, ``reasons``, ``dependency``, ``source_question_id``,
    ``in_debiased``, ``semantics`` (JSON: how a synthetic question was made), ``source``
    (where a rotated item comes from), ``raw_reply`` (the language model's reply a rotated
    item was read from)."""
    unknown = [n for n in extra if n not in _EXTRA_COLUMNS]
    if unknown:
        raise ValueError(f"Expected extra question columns among {sorted(_EXTRA_COLUMNS)} but "
                         f"got {unknown}")
    f = {
        "question_id": datasets.Value("int64"),
        "scene_id": datasets.Value("string"),
        "situation": datasets.Value("string"),
        "alternative_situation": datasets.Sequence(datasets.Value("string")),
        "question": datasets.Value("string"),
        "answers": datasets.Sequence(datasets.Value("string")),
        "position": _POS,
        "rotation": _ROT,
        "question_type": datasets.Value("string"),
        "sqa3d_type": datasets.Value("string"),
        "rotation_deg": datasets.Value("int32"),
    }
    for n in extra:
        spec = _EXTRA_COLUMNS[n]
        f[n] = datasets.Sequence(datasets.Value(spec[0])) if isinstance(spec, list) \
            else datasets.Value(spec)
    return datasets.Features(f)


def fill_rows(rows: Iterable[dict], features: datasets.Features) -> list[dict]:
    """Rows restricted to ``features``' columns; absent text/list columns become empty."""
    out = []
    for r in rows:
        row = {}
        for c in features:
            v = r.get(c)
            row[c] = _EMPTY_DEFAULTS.get(c) if v is None and c in _EMPTY_DEFAULTS else v
        out.append(row)
    return out


def record_from_row(row: Mapping[str, Any]) -> SQA3DRecord:
    """The :class:`~hf_real3d.sqa3d.SQA3DRecord` a question row describes (inverse of
    :func:`record_row`; ``semantics`` goes back to ``extra["synth"]``)."""
    sem = row.get("semantics") or ""
    return SQA3DRecord(
        question_id=int(row["question_id"]), scene_id=row["scene_id"],
        situation=row["situation"], question=row["question"], answers=list(row["answers"]),
        position=dict(row["position"]), rotation=dict(row["rotation"]),
        alternative_situation=list(row.get("alternative_situation") or []),
        extra={"synth": json.loads(sem)} if sem else {})


def scene_features() -> datasets.Features:
    """One row per scene: objects (box, label, attributes, how many of ``points`` are
    theirs) and the scene's points, object after object, as ``Array2D((None, 6))``."""
    return datasets.Features({
        "scene_id": datasets.Value("string"),
        "origin": datasets.Sequence(datasets.Value("float64"), length=3),
        "objects": [{
            "object_id": datasets.Value("int32"),
            "label": datasets.Value("string"),
            "center": datasets.Sequence(datasets.Value("float64"), length=3),
            "size": datasets.Sequence(datasets.Value("float64"), length=3),
            "yaw": datasets.Value("float64"),
            "attributes": datasets.Value("string"),  # JSON object
            "num_points": datasets.Value("int64"),
        }],
        "points": datasets.Array2D(shape=(None, 6), dtype="float32"),
    })


def scene_rows(scenes: Iterable[Scene]) -> Iterable[dict[str, Any]]:
    """Rows of the ``scenes`` config from :class:`hf_real3d.scene.Scene` objects."""
    for s in scenes:
        yield {
            "scene_id": s.scene_id,
            "origin": [float(v) for v in s.origin],
            "objects": [{"object_id": int(o.object_id), "label": o.label,
                         "center": [float(v) for v in o.center],
                         "size": [float(v) for v in o.size], "yaw": float(o.yaw),
                         "attributes": json.dumps(o.attributes, sort_keys=True),
                         "num_points": 0 if o.points is None else len(o.points)}
                        for o in s.objects],
            "points": s.point_cloud(),
        }


def scene_from_row(row: Mapping[str, Any]) -> Scene:
    """The :class:`~hf_real3d.scene.Scene` a ``scenes`` row describes (inverse of
    :func:`scene_rows`)."""
    points = np.asarray(row["points"], dtype=np.float32).reshape(-1, 6)
    objs = row["objects"]
    if isinstance(objs, Mapping):  # columnar (as some datasets formats return lists)
        objs = [dict(zip(objs, vals)) for vals in zip(*objs.values())]
    counts = [int(o.get("num_points", 0)) for o in objs]
    if sum(counts) != len(points):
        raise FormatError(f"scene {row['scene_id']}: objects own {sum(counts)} points but the "
                          f"row has {len(points)}; rebuild the scenes config")
    starts = np.cumsum([0, *counts])
    objects = [SceneObject(int(o["object_id"]), o["label"], o["center"], o["size"],
                           float(o["yaw"]), json.loads(o["attributes"] or "{}"),
                           points[starts[i]:starts[i + 1]] if counts[i] else None)
               for i, o in enumerate(objs)]
    return Scene(row["scene_id"], objects, origin=row["origin"])


def record_row(rec, *, question_type: str = "", **extra) -> dict[str, Any]:
    """A question row from an :class:`~hf_real3d.sqa3d.SQA3DRecord` (0-degree view) with
    ``question_type`` (the category: what the question asks is the caller's business); a
    synthetic record's semantics go to ``kind``, ``guessable``, ``prior_kind`` and
    ``semantics``."""
    meta = rec.extra.get("synth") or {}
    return {
        "question_id": rec.question_id, "scene_id": rec.scene_id, "situation": rec.situation,
        "alternative_situation": list(rec.alternative_situation), "question": rec.question,
        "answers": list(rec.answers), "position": dict(rec.position),
        "rotation": dict(rec.rotation),
        "question_type": question_type, "sqa3d_type": rec.qtype,
        "rotation_deg": 0, "kind": meta.get("kind", ""), "guessable": meta.get("guessable"),
        "prior_kind": meta.get("prior_kind") or (
            ("prior" if meta.get("guessable") else "scene") if meta else ""),
        "semantics": json.dumps(meta, sort_keys=True) if meta else "",
        **extra,
    }


FIELD_DOCS = {
    "question_id": "question id (SQA3D's; rotation groups share it)",
    "scene_id": "ScanNet scene id",
    "situation": "the agent's situation, as text",
    "alternative_situation": "other wordings of the situation",
    "question": "the question",
    "answers": "accepted answers",
    "position": "agent position (m, relative to the mesh box centre)",
    "rotation": "agent orientation, yaw-only quaternion (x, y, z, w); it faces R(q)(-1, 0, 0)",
    "question_type": "Real-3DQA question category",
    "sqa3d_type": "what/is/how/can/which/other (first word)",
    "rotation_deg": "degrees the agent turned clockwise (0 = original view)",
    "kind": "question template (synthetic or parsed real questions)",
    "guessable": "synthetic: answerable from language priors alone",
    "prior_kind": "synthetic: prior (the language prior gives the answer), scene (no prior "
                  "decides it) or counter_prior (the prior points to another answer)",
    "quality": "importer flags (see below)",
    "reasons": "why the filter removed the question",
    "dependency": "3D dependency: full minus blind answer log-prob, mean over pairs",
    "source_question_id": "the id as written in the release file",
    "in_debiased": "the question is in the de-biased set",
    "semantics": "JSON: how a synthetic question was made (kind, params, anchor, facing)",
    "source": "where a rotated item comes from: geometry (turned in its scene), lm (rewritten "
              "by a language model), release (the authors' files) or reviewed (accepted or "
              "corrected by a person)",
    "raw_reply": "the language model's whole reply this item was read from (source lm; empty "
                 "otherwise)",
    "origin": "centre of the mesh's axis-aligned box (SQA3D positions are relative to it)",
    "objects": "objects: id, label, box (centre, size, yaw), attributes (JSON), num_points",
    "points": "the scene's points, object after object: x, y, z, r, g, b (rgb in [0, 1])",
    "index": "row index", "qid": "3DSRBench question id (-1..-3: shifts, -flip: mirrored)",
    "options": "option texts (A..D)", "answer": "the correct option's letter",
    "category": "one of the 12 3DSRBench categories", "group": "height / location / "
    "orientation / multi_object", "image": "the image", "circular_group": "rows that are "
    "circular shifts of one question", "flip_group": "original and mirrored, all shifts",
    "shift": "circular shift of the options (0 = original)", "flipped": "mirrored image",
    "pair_id": "the same question in synthetic_common and synthetic_uncommon",
    "camera": "JSON: camera pose and measured roll/pitch/height",
}
