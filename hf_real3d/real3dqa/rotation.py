"""Viewpoint-rotation augmentation, verified against scene geometry.

For each question the agent is turned in place by ``k * 360 / n`` degrees clockwise
(``n = 4`` by default: 0/90/180/270; 8 and 12 work too). For every viewpoint the
situation is rewritten from the geometry (what the agent now faces, where its anchor
object is) and the answer is recomputed from the scene graph with
:func:`hf_real3d.spatial.answer_from_geometry`. A question is kept only if every
viewpoint has an unambiguous answer and its original answer is reproduced at 0 degrees;
otherwise it is excluded with the reason, never guessed.

* Synthetic questions carry their semantics (``annotation["synth"]``): every kind rotates.
* Real SQA3D questions are parsed against common directional templates
  (:func:`hf_real3d.english.asks.parse_question`); anything else is excluded as
  ``template not recognised``.
"""

from __future__ import annotations

import collections
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from tqdm.auto import tqdm

from hf_real3d.english.asks import parse_question
from hf_real3d.geometry import MARGIN_DEG
from hf_real3d.scene import Scene
from hf_real3d.spatial import (
    Unanswerable,
    View,
    answer_from_geometry,
    describe_pose,
    describe_situation,
    situation_template,
)
from hf_real3d.sqa3d import SQA3DRecord

__all__ = ["viewpoint_angles", "RotationResult", "rotate_record", "rotate_records"]

def viewpoint_angles(n: int = 4) -> list[int]:
    """``[0, 360/n, ...]``; ``n`` must divide 360 into whole degrees."""
    if not isinstance(n, int) or n < 1 or 360 % n:
        raise ValueError(f"{n} viewpoints need a rotation angle of 360/{n} degrees, which does "
                         "not divide 360 into whole degrees; use 2, 3, 4, 6, 8, 12, ...")
    return [k * 360 // n for k in range(n)]


@dataclass
class RotationResult:
    """The rotated rows (every viewpoint of every kept question) and the questions excluded, each
    with its reason."""
    rows: list[dict[str, Any]] = field(default_factory=list)
    excluded: list[dict[str, Any]] = field(default_factory=list)

    def stats(self) -> dict[str, Any]:
        kept = len({r["question_id"] for r in self.rows})
        reasons = collections.Counter(re.sub(r"^viewpoint \d+: ", "", e["reason"])
                                      for e in self.excluded)
        return {"kept": kept, "excluded": len(self.excluded),
                "reasons": dict(reasons.most_common())}


def rotate_record(rec: SQA3DRecord, scene: Scene, angles: Sequence[int], *,
                  margin_deg: float = MARGIN_DEG) -> list[dict[str, Any]]:
    """All viewpoints of one question, or :class:`Unanswerable` with the reason."""
    pose0 = rec.pose(scene.origin)
    meta = rec.extra.get("synth")
    if meta:
        kind, params = meta["kind"], meta["params"]
        anchor = scene.object(meta["anchor"])
    else:
        parsed = parse_question(rec.question, scene)
        if parsed is None:
            raise Unanswerable("template not recognised")
        (kind, params), anchor = parsed, None
    rows = []
    for k in angles:
        pose = pose0.turned(k)
        view = View(scene, pose, margin_deg)
        if k % 360 == 0:
            situation = rec.situation
            facing = meta["facing"] if meta else describe_pose(view)[1]
        elif anchor is not None:
            if not view.clear[view.index(anchor)]:
                raise Unanswerable(f"viewpoint {k}: the {anchor.label} the situation names is "
                                   "near a direction boundary")
            situation, _, facing = describe_situation(scene, pose, anchor,
                                                      template=situation_template(rec.situation))
        else:
            situation, facing = describe_pose(view)
        try:
            answer = answer_from_geometry(view, kind, params, facing)
        except Unanswerable as err:
            raise Unanswerable(f"viewpoint {k}: {err}") from None
        if k % 360 == 0 and answer not in rec.answers:
            raise Unanswerable(f"original answer {rec.answers[0]!r} does not follow from the "
                               f"geometry (got {answer!r})")
        position, rotation = pose.to_sqa3d(scene.origin)
        rows.append({
            "question_id": rec.question_id, "rotation_deg": int(k), "scene_id": rec.scene_id,
            "situation": situation, "question": rec.question, "answers": [answer],
            "position": position, "rotation": rotation, "kind": kind,
            "sqa3d_type": rec.qtype,
        })
    return rows


def rotate_records(records: Sequence[SQA3DRecord],
                   scenes: Mapping[str, Scene] | Callable[[str], Scene], *,
                   n_viewpoints: int = 4, margin_deg: float = MARGIN_DEG,
                   progress: bool = False) -> RotationResult:
    """Rotate many questions; scenes by id (a mapping or a loader)."""
    angles = viewpoint_angles(n_viewpoints)
    get = scenes.__getitem__ if isinstance(scenes, Mapping) else scenes
    cache: dict[str, Scene] = {}
    out = RotationResult()
    for rec in tqdm(records, desc="rotating", unit="q", disable=not progress):
        if rec.scene_id not in cache:
            try:
                cache[rec.scene_id] = get(rec.scene_id)
            except KeyError:
                raise KeyError(f"question_id {rec.question_id}: scene {rec.scene_id!r} is "
                               "referenced but absent from the scenes given") from None
        try:
            out.rows.extend(rotate_record(rec, cache[rec.scene_id], angles,
                                          margin_deg=margin_deg))
        except Unanswerable as err:
            out.excluded.append({"question_id": rec.question_id, "reason": str(err)})
    return out
