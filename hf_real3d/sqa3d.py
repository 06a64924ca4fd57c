"""SQA3D's questions + annotations JSON pair: typed records, validation, writing.

A split is two files joined on ``question_id``::

    v1_balanced_questions_<split>_scannetv2.json      {"questions": [{scene_id, situation,
                                                      alternative_situation, question,
                                                      question_id}, ...]}
    v1_balanced_sqa_annotations_<split>_scannetv2.json {"annotations": [{scene_id,
                                                      question_type, answer_type, question_id,
                                                      answers: [{answer, answer_confidence,
                                                      answer_id}], rotation: {_x,_y,_z,_w},
                                                      position: {x,y,z}}, ...]}

Keys beyond these (our synthetic generator adds ``synth`` to each annotation) are kept in
``SQA3DRecord.extra`` and written back unchanged.
"""

from __future__ import annotations

import collections
import json
import math
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hf_real3d._io import FormatError, atomic_path, read_json
from hf_real3d.geometry import Pose, PoseError, yaw_from_quaternion
from hf_real3d.scene import check_scene_id

__all__ = ["SQA3D_BIBTEX", "QUESTION_TYPES", "SQA3DRecord", "question_type", "read_sqa3d",
           "read_split", "write_sqa3d", "write_split", "split_paths", "summarize", "check_item",
           "item_id"]

SQA3D_BIBTEX = """@inproceedings{ma2023sqa3d,
  title={SQA3D: Situated Question Answering in 3D Scenes},
  author={Ma, Xiaojian and Yong, Silong and Zheng, Zilong and Li, Qing and Liang, Yitao and
          Zhu, Song-Chun and Huang, Siyuan},
  booktitle={ICLR},
  year={2023}
}"""
QUESTION_TYPES = ("what", "is", "how", "can", "which", "other")
_WORD = re.compile(r"[a-z]+")
_QUESTION_KEYS = ("scene_id", "situation", "question", "question_id")
_ANNOTATION_KEYS = ("scene_id", "question_id", "answers", "rotation", "position")


def question_type(question: str) -> str:
    """SQA3D's question type: the first word (letters only, case-folded) if it is one of
    what/is/how/can/which, else ``other``. ``"What's"`` counts as ``what``."""
    m = _WORD.search(question.lower())
    word = m.group(0) if m else ""
    return word if word in QUESTION_TYPES[:-1] else "other"


@dataclass
class SQA3DRecord:
    """One situated question joined with its annotation."""

    question_id: int
    scene_id: str
    situation: str
    question: str
    answers: list[str]
    position: dict[str, float]
    rotation: dict[str, float]
    alternative_situation: list[str] = field(default_factory=list)
    question_type: str = "N/A"  # the annotation's own field (SQA3D leaves it "N/A")
    answer_type: str = "other"
    answer_confidence: list[str] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def qtype(self) -> str:
        """what/is/how/can/which/other from the question's first word."""
        return question_type(self.question)

    def pose(self, origin: Sequence[float] = (0.0, 0.0, 0.0)) -> Pose:
        """World pose given the scene's mesh box centre ``origin``."""
        return Pose.from_sqa3d(self.position, self.rotation, origin,
                               item=f"question_id {self.question_id}")

    def question_json(self) -> dict[str, Any]:
        return {
            "scene_id": self.scene_id,
            "situation": self.situation,
            "alternative_situation": list(self.alternative_situation),
            "question": self.question,
            "question_id": self.question_id,
        }

    def annotation_json(self) -> dict[str, Any]:
        conf = self.answer_confidence or ["yes"] * len(self.answers)
        out = {
            "scene_id": self.scene_id,
            "question_type": self.question_type,
            "answer_type": self.answer_type,
            "question_id": self.question_id,
            "answers": [
                {"answer": a, "answer_confidence": c, "answer_id": i + 1}
                for i, (a, c) in enumerate(zip(self.answers, conf))
            ],
            "rotation": dict(self.rotation),
            "position": dict(self.position),
        }
        out.update(self.extra)
        return out


def split_paths(folder: str | os.PathLike, split: str) -> tuple[Path, Path]:
    """SQA3D's file names for ``split`` (train/val/test) in ``folder``."""
    folder = Path(folder)
    return (folder / f"v1_balanced_questions_{split}_scannetv2.json",
            folder / f"v1_balanced_sqa_annotations_{split}_scannetv2.json")


def _items(path: Path, key: str) -> list[dict]:
    data = read_json(path)
    if not isinstance(data, dict) or not isinstance(data.get(key), list):
        raise FormatError(f"{path}: expected a JSON object with a {key!r} list")
    for i, it in enumerate(data[key]):
        if not isinstance(it, dict):
            raise FormatError(f"{path}: {key}[{i}] is {type(it).__name__}, expected an object")
    return data[key]


_TEXT_KEYS = ("situation", "question", "scene_id", "question_type")
_POSITION = ("x", "y", "z")
_QUATERNION = ("_x", "_y", "_z", "_w")


def item_id(value: Any, where: str) -> int:
    """A question id: an integer, or a string of digits (as some SQA3D tools write it)."""
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise FormatError(f"{where}: question_id {value!r} is not an integer")
    try:
        return int(value)
    except ValueError:
        raise FormatError(f"{where}: question_id {value!r} is not an integer") from None


def check_item(item: Any, path: str | os.PathLike, index: int, keys: Sequence[str], *,
               what: str = "question") -> int:
    """Validate one SQA3D-style item and return its question id: a question, an
    annotation, or a Real-3DQA release item (question and annotation fields merged).

    Every key of ``keys`` must be present; the texts (``situation``, ``question``,
    ``scene_id``, ``question_type``) must be strings; ``question_id`` an integer;
    ``position`` three finite numbers ``x, y, z``; ``rotation`` four finite numbers
    ``_x, _y, _z, _w``; ``answers`` a non-empty list of ``{"answer": str}``, none empty;
    the scene id safe as a folder name. A failure raises :class:`FormatError` naming the
    file, the item (``what #index``, with its id when it has one), the field and what to fix. One
    validator serves :func:`read_sqa3d` and :func:`hf_real3d.real3dqa.format.read_release`.
    """
    if not isinstance(item, dict):
        raise FormatError(f"{path}: {what} #{index} is {type(item).__name__}, expected an "
                          "object")
    who = f"question_id {item['question_id']}" if "question_id" in item else "(no id)"
    where = f"{path}: {what} #{index} {who}"
    missing = [k for k in keys if k not in item]
    if missing:
        raise FormatError(f"{where} lacks {missing}")
    for key in _TEXT_KEYS:
        if key in item and not isinstance(item[key], str):
            raise FormatError(f"{where}: {key} is {item[key]!r}, expected a string")
    qid = item_id(item["question_id"], f"{path}: {what} #{index}")
    for key, names in (("position", _POSITION), ("rotation", _QUATERNION)):
        if key not in keys:
            continue
        v = item[key]
        if not isinstance(v, dict) or not all(k in v for k in names):
            raise FormatError(f"{where}: {key} {v!r} needs the keys {list(names)}")
        if not all(isinstance(v[k], int | float) and not isinstance(v[k], bool)
                   and math.isfinite(v[k]) for k in names):
            raise FormatError(f"{where}: {key} {v!r} has a NaN, an infinity or a non-number; "
                              "fix or drop the item")
    if "answers" in keys:
        answers = item["answers"]
        if not isinstance(answers, list) or not answers or not all(
                isinstance(a, dict) and isinstance(a.get("answer"), str) for a in answers):
            raise FormatError(f"{where}: answers must be a non-empty list of "
                              "{'answer': str, ...}")
        empty = next((j for j, a in enumerate(answers, 1) if not a["answer"].strip()), None)
        if empty is not None:
            raise FormatError(f"{where}: answer {empty} of {len(answers)} is empty; give it "
                              "its text or drop it (an item needs at least one answer)")
    if "scene_id" in keys:
        try:
            check_scene_id(item["scene_id"])
        except ValueError as err:
            raise FormatError(f"{where}: {err}") from None
    return qid


def read_sqa3d(questions_path: str | os.PathLike, annotations_path: str | os.PathLike, *,
               validate_poses: bool = True) -> list[SQA3DRecord]:
    """Read and join a questions file and an annotations file.

    Raises :class:`FormatError` naming the file and ``question_id`` for malformed JSON,
    missing keys, duplicate ids, a question without annotation (or the reverse), a scene id
    that disagrees between the two files or is unsafe, a non-unit or non-yaw quaternion,
    and a NaN position.
    """
    qpath, apath = Path(questions_path), Path(annotations_path)
    questions = _items(qpath, "questions")
    annotations = _items(apath, "annotations")
    anns: dict[int, dict] = {}
    for i, ann in enumerate(annotations):
        qid = check_item(ann, apath, i, _ANNOTATION_KEYS, what="annotation")
        if qid in anns:
            raise FormatError(f"{apath}: duplicate question_id {qid}; ids must be unique")
        anns[qid] = ann
    records: list[SQA3DRecord] = []
    seen: set[int] = set()
    for i, q in enumerate(questions):
        qid = check_item(q, qpath, i, _QUESTION_KEYS, what="question")
        if qid in seen:
            raise FormatError(f"{qpath}: duplicate question_id {qid}; ids must be unique")
        seen.add(qid)
        ann = anns.get(qid)
        if ann is None:
            raise FormatError(f"{qpath}: question_id {qid} has no annotation in {apath.name}; "
                              "add it or remove the question")
        if ann["scene_id"] != q["scene_id"]:
            raise FormatError(f"question_id {qid}: scene_id {q['scene_id']!r} in {qpath.name} "
                              f"but {ann['scene_id']!r} in {apath.name}")
        if validate_poses:
            try:
                yaw_from_quaternion(ann["rotation"], item=f"question_id {qid}")
            except PoseError as err:
                raise FormatError(f"{apath}: {err}") from None
        answers = ann["answers"]
        extra = {k: v for k, v in ann.items() if k not in _ANNOTATION_KEYS
                 and k not in ("question_type", "answer_type")}
        records.append(SQA3DRecord(
            question_id=qid,
            scene_id=q["scene_id"],
            situation=str(q["situation"]),
            question=str(q["question"]),
            answers=[a["answer"] for a in answers],
            answer_confidence=[str(a.get("answer_confidence", "yes")) for a in answers],
            position={k: float(ann["position"][k]) for k in _POSITION},
            rotation={k: float(ann["rotation"][k]) for k in _QUATERNION},
            alternative_situation=list(q.get("alternative_situation", [])),
            question_type=str(ann.get("question_type", "N/A")),
            answer_type=str(ann.get("answer_type", "other")),
            extra=extra,
        ))
    orphans = sorted(set(anns) - seen)
    if orphans:
        raise FormatError(
            f"{apath}: {len(orphans)} annotation(s) without a question, e.g. question_id "
            f"{orphans[0]}; the two files must hold the same ids")
    return records


def read_split(folder: str | os.PathLike, split: str, **kwargs: Any) -> list[SQA3DRecord]:
    """Read ``split`` from a folder holding SQA3D's standard file names."""
    return read_sqa3d(*split_paths(folder, split), **kwargs)


def write_sqa3d(records: Sequence[SQA3DRecord], questions_path: str | os.PathLike,
                annotations_path: str | os.PathLike, *, info: dict | None = None) -> None:
    """Write the pair of files; both appear together or not at all."""
    ids = [r.question_id for r in records]
    if len(set(ids)) != len(ids):
        dup = next(i for i, c in collections.Counter(ids).items() if c > 1)
        raise FormatError(f"duplicate question_id {dup}; ids must be unique")
    head = {"info": info or {"description": "written by hf_real3d"}, "license": "see dataset card"}
    with atomic_path(questions_path) as qtmp, atomic_path(annotations_path) as atmp:
        with open(qtmp, "w", encoding="utf-8") as f:
            f.write(json.dumps({**head, "questions": [r.question_json() for r in records]},
                               allow_nan=False))
        with open(atmp, "w", encoding="utf-8") as f:
            f.write(json.dumps({**head, "annotations": [r.annotation_json() for r in records]},
                               allow_nan=False))


def write_split(records: Sequence[SQA3DRecord], folder: str | os.PathLike, split: str,
                **kwargs: Any) -> None:
    """Write ``records`` as one split's question and annotation files in ``folder`` (SQA3D's
    names)."""
    write_sqa3d(records, *split_paths(folder, split), **kwargs)


def summarize(records: Sequence[SQA3DRecord]) -> dict[str, Any]:
    """Counts: questions, scenes, question types, distinct answers."""
    types = collections.Counter(r.qtype for r in records)
    return {
        "questions": len(records),
        "scenes": len({r.scene_id for r in records}),
        "question_types": {t: types.get(t, 0) for t in QUESTION_TYPES},
        "distinct_answers": len({a for r in records for a in r.answers[:1]}),
    }
