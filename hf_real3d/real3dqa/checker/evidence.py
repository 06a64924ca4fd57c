"""What SQA3D's own texts say beside a rotated item: the other questions asked at its pose,
and the names its scene's texts name several of. The checker reads them as evidence of where
things are (round 4's pose rules, round 5's ``answer_of_object``).

One place decides where the texts come from (:func:`find_evidence`), for ``check-rotations``,
``rotate`` and ``evaluate --exclude-flagged`` alike: ``sqa3d`` when given; else the dataset
folder's own texts (the ``sqa3d_texts`` config ``import-real3dqa`` and ``rotate`` keep, or
the ``sqa3d`` config of ``build-real3dqa``); else an ``sqa3d`` folder beside the set (the
layout of ``../shared/real``).
Without any, the rules in :data:`EVIDENCE_RULES` are off, and the checker says so.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hf_real3d.english.mentions import normal_text, singular, tokens
from hf_real3d.errors import InputError
from hf_real3d.sources import DatasetFolder, SQA3DFolder, resolve
from hf_real3d.sqa3d import SQA3DRecord, read_split

__all__ = ["EVIDENCE_RULES", "TEXTS_CONFIG", "PoseEvidence", "PoseQuestions", "evidence_of",
           "find_evidence", "missing_evidence", "names_several", "pose_questions", "scene_several",
           "sqa3d_beside", "sqa3d_texts"]

#: what goes without SQA3D's texts: rules that read them, and the evidence they give others
EVIDENCE_RULES = ("answer_pose", "answer_of_object")

PoseQuestions = dict[Any, list[tuple[Any, str, list[str]]]]


def pose_questions(records: Iterable[SQA3DRecord]) -> PoseQuestions:
    """For each question, the other questions asked at its pose (the same scene, position and
    rotation): SQA3D asks about five at each (719 poses for the 3,519 test questions)."""
    by: dict[tuple, list[SQA3DRecord]] = {}
    for r in records:
        key = (r.scene_id, *(round(r.position[k], 4) for k in "xyz"),
               *(round(r.rotation[k], 4) for k in ("_x", "_y", "_z", "_w")))
        by.setdefault(key, []).append(r)
    return {r.question_id: [(s.question_id, s.question, list(s.answers)) for s in group
                            if s.question_id != r.question_id]
            for group in by.values() for r in group}


# "another chair", "two chairs", "both beds": several
_MANY_WORDS = frozenset("another other second third both two three four five six seven eight "
                        "nine ten several many multiple some all".split())


def names_several(texts: Iterable[str]) -> frozenset[str]:
    """The heads any of ``texts`` names as several: a plural ("the chairs"), or after
    "another", "two", "both", "several" and the like. Read over every SQA3D text of a scene,
    it tells which names the scene holds more than one of; where it errs, it errs towards
    several."""
    out: set[str] = set()
    for text in texts:
        words = [t[0] for t in tokens(normal_text(text))]
        for i, w in enumerate(words):
            sing = singular(w)
            if sing != w or (i and words[i - 1] in _MANY_WORDS):
                out.add(sing)
    return frozenset(out)


def scene_several(records: Iterable[SQA3DRecord]) -> dict[Any, frozenset[str]]:
    """For each question, the names that any SQA3D text of its scene (about 50: situations,
    alternatives, questions and answers) names as several (:func:`names_several`)."""
    texts: dict[str, list[str]] = {}
    ids: dict[str, list[Any]] = {}
    for r in records:
        texts.setdefault(r.scene_id, []).extend([r.situation, *r.alternative_situation,
                                                 r.question, *r.answers])
        ids.setdefault(r.scene_id, []).append(r.question_id)
    out = {}
    for sid, qs in ids.items():
        names = names_several(texts[sid])
        out.update({q: names for q in qs})
    return out


@dataclass(frozen=True)
class PoseEvidence:
    """SQA3D's texts as evidence: the other questions at each pose and the names each scene's
    texts name several of, by question id; ``source`` says where they were read."""

    questions: PoseQuestions
    several: dict[Any, frozenset[str]]
    source: str


def evidence_of(records: Iterable[SQA3DRecord], source: str) -> PoseEvidence:
    """The evidence ``records`` (SQA3D records, every question of their scenes) give."""
    records = list(records)
    return PoseEvidence(pose_questions(records), scene_several(records), source)


def sqa3d_beside(dataset: str | os.PathLike) -> Path | None:
    """An ``sqa3d`` folder with SQA3D's test files beside ``dataset`` (the layout of
    ``../shared/real``: ``real3dqa/`` and ``sqa3d/``), or None."""
    near = Path(dataset).resolve().parent / "sqa3d"
    if not near.is_dir():
        return None
    try:
        found = resolve(near, SQA3DFolder)
    except (OSError, ValueError):
        return None
    return near if "test" in found.splits() else None


#: the config ``import-real3dqa`` and ``rotate`` keep SQA3D's texts of the set's scenes in: the
#: checker's evidence and nothing else (never the questions a scorer or a trainer reads)
TEXTS_CONFIG = "sqa3d_texts"


def _folder_records(folder: Path, split: str) -> list[SQA3DRecord] | None:
    """The SQA3D records a dataset folder keeps of its scenes (``split``): its
    :data:`TEXTS_CONFIG`, else the ``sqa3d`` config ``build-real3dqa`` writes (all its input
    questions), never a filtered set; None when it has neither."""
    src = resolve(folder, DatasetFolder)
    config = next((c for c in (TEXTS_CONFIG, "sqa3d") if c in src.configs()), None)
    if config is None:
        return None
    try:
        split = src.pick_split(config, split)
    except InputError:  # its questions of another split are no evidence for this one
        return None
    # schema brings datasets: only for a dataset folder
    from hf_real3d.schema import record_from_row

    return [record_from_row(r) for r in src.rows(config, split)[0]]


def find_evidence(dataset: str | os.PathLike, *, sqa3d: str | os.PathLike | None = None,
                  folder: bool = False, split: str = "test") -> PoseEvidence | None:
    """The evidence for the rotation set at ``dataset``: from ``sqa3d`` (SQA3D's folder)
    when given; else, for a dataset folder (``folder``), its own texts (``split``);
    else an ``sqa3d`` folder beside ``dataset``; None without any."""
    if sqa3d is None and folder:
        records = _folder_records(Path(dataset), split)
        if records is not None:
            return evidence_of(records, f"{dataset} (its own SQA3D texts)")
    where = Path(sqa3d) if sqa3d is not None else sqa3d_beside(dataset)
    if where is None:
        return None
    return evidence_of(sqa3d_texts(where), str(where))


def sqa3d_texts(folder: str | os.PathLike) -> list[SQA3DRecord]:
    """SQA3D's test records in ``folder`` (``sqa3d``; an error names it when it holds none)."""
    test = resolve(folder, SQA3DFolder, what="`sqa3d`").check_split("test")
    return read_split(folder, test, validate_poses=False)


def missing_evidence(dataset: str | os.PathLike, off: bool = False) -> str:
    """The one line a check without SQA3D's texts says: what was not found, the rules it
    turns off, and the fix."""
    why = ("the pose evidence was turned off" if off else
           f"no `sqa3d` given, no SQA3D texts in {dataset}, no sqa3d folder beside it")
    return (f"checked without SQA3D's texts ({why}): {', '.join(EVIDENCE_RULES)} and the "
            "evidence of the other questions at each pose are off, so the verdicts differ from "
            "a check with them; give `sqa3d` SQA3D's folder (v1_balanced_*_test_scannetv2.json)")
