"""Viewpoint-rotation augmentation, verified against scene geometry.

For each question the agent is turned in place by ``k * 360 / n`` degrees clockwise
(``n = 4`` by default: 0/90/180/270; 8 and 12 work too). For every viewpoint the
situation is rewritten from the geometry (what the agent now faces, where its anchor
object is) and the answer is recomputed from the scene graph with
:func:`hf_real3d.synth.questions.answer_from_geometry`. A question is kept only if every
viewpoint has an unambiguous answer and its original answer is reproduced at 0 degrees;
otherwise it is excluded with the reason, never guessed.

* Synthetic questions carry their semantics (``annotation["synth"]``): every kind rotates.
* Real SQA3D questions are parsed against common directional templates
  (:func:`parse_question`); anything else is excluded as ``template not recognised``.
"""

from __future__ import annotations

import collections
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from tqdm.auto import tqdm

from hf_real3d.geometry import DIRECTION_PHRASES
from hf_real3d.scene import Scene
from hf_real3d.sqa3d import SQA3DRecord
from hf_real3d.synth.questions import Unanswerable, View, answer_from_geometry, describe_situation

__all__ = [
    "viewpoint_angles",
    "RotationResult",
    "rotate_record",
    "rotate_records",
    "parse_question",
    "describe_pose",
]

_PHRASE_TO_DIR = {v: k for k, v in DIRECTION_PHRASES.items()}
_DIR_RE = "(" + "|".join(re.escape(p) for p in DIRECTION_PHRASES.values()) + ")"


def viewpoint_angles(n: int = 4) -> list[int]:
    """``[0, 360/n, ...]``; ``n`` must divide 360 into whole degrees."""
    if not isinstance(n, int) or n < 1 or 360 % n:
        raise ValueError(f"{n} viewpoints need a rotation angle of 360/{n} degrees, which does "
                         "not divide 360 into whole degrees; use 2, 3, 4, 6, 8, 12, ...")
    return [k * 360 // n for k in range(n)]


def _singular(word: str) -> str:
    if word.endswith("shelves"):
        return word[:-3] + "f"
    for suf in ("ches", "shes", "xes", "ses"):
        if word.endswith(suf):
            return word[:-2]
    return word[:-1] if word.endswith("s") else word


def parse_question(question: str, scene: Scene | None = None) -> tuple[str, dict] | None:
    """Map a real SQA3D question to (kind, params) for common directional templates.

    Templates: "What is (the closest object) on my left?", "Which direction should I go
    to reach the X?", "How many Xs are on my left?", "Is there a X on my right?",
    "Is the X behind me?", "Can I reach the X by walking straight ahead?". Object names
    must match a unique scene label when a ``scene`` is given.
    """
    q = " ".join(question.lower().strip().rstrip("?").split())

    def unique(label: str) -> int | None:
        if scene is None:
            return -1
        objs = scene.by_label(label)
        return objs[0].object_id if len(objs) == 1 else None

    m = re.fullmatch(rf"what(?: is|'s) (?:the (?:closest|nearest) (?:object|thing) )?{_DIR_RE}", q)
    if m:
        return "nearest_in_direction", {"direction": _PHRASE_TO_DIR[m.group(1)]}
    m = re.fullmatch(r"which (?:direction|way) (?:should|do) i (?:go|walk|turn|need to go)"
                     r"(?: if i want)? to (?:reach|get to|go to) the ([a-z ]+)", q)
    if m and (oid := unique(m.group(1))) is not None:
        return "navigate", {"object": oid}
    m = re.fullmatch(rf"how many ([a-z ]+) are (?:there )?{_DIR_RE}", q)
    if m:
        return "count_direction", {"label": _singular(m.group(1)),
                                   "direction": _PHRASE_TO_DIR[m.group(2)]}
    m = re.fullmatch(rf"is there an? ([a-z ]+) {_DIR_RE}", q)
    if m:
        return "exists_direction", {"label": m.group(1), "direction": _PHRASE_TO_DIR[m.group(2)]}
    m = re.fullmatch(rf"is the ([a-z ]+) {_DIR_RE}", q)
    if m and (oid := unique(m.group(1))) is not None:
        return "relation_direction", {"object": oid, "direction": _PHRASE_TO_DIR[m.group(2)]}
    m = re.fullmatch(r"can i reach the ([a-z ]+) by walking (?:straight ahead|forward)", q)
    if m and (oid := unique(m.group(1))) is not None:
        return "can_reach", {"object": oid}
    return None


def describe_pose(scene: Scene, view: View) -> tuple[str, int | None]:
    """Situation text for a pose with no anchor object: what is ahead and beside."""
    ahead = [(abs(a), i) for i, (a, d) in enumerate(zip(view.angle, view.dist))
             if abs(a) <= 25 and d >= 0.6]
    facing = view.objs[min(ahead)[1]] if ahead else None
    side = [(view.dist[i], i) for i in range(len(view.objs))
            if view.clear[i] and view.direction(i) in ("left", "right")]
    text = f"I am facing the {facing.label}" if facing else "I am facing the wall"
    if side:
        i = min(side)[1]
        text += f" and the {view.objs[i].label} is {DIRECTION_PHRASES[view.direction(i)]}"
    return text + ".", facing.object_id if facing else None


@dataclass
class RotationResult:
    rows: list[dict[str, Any]] = field(default_factory=list)
    excluded: list[dict[str, Any]] = field(default_factory=list)

    def stats(self) -> dict[str, Any]:
        kept = len({r["question_id"] for r in self.rows})
        reasons = collections.Counter(re.sub(r"^viewpoint \d+: ", "", e["reason"])
                                      for e in self.excluded)
        return {"kept": kept, "excluded": len(self.excluded),
                "reasons": dict(reasons.most_common())}


def _template_index(text: str) -> int:
    if text.startswith("The "):
        return 1
    if text.startswith("I am next to"):
        return 2
    return 0


def rotate_record(
    rec: SQA3DRecord,
    scene: Scene,
    angles: Sequence[int],
    *,
    margin_deg: float = 15.0,
    rewriter: Callable[[str, dict], str | None] | None = None,
) -> list[dict[str, Any]]:
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
            facing = meta["facing"] if meta else describe_pose(scene, view)[1]
        elif anchor is not None:
            if not view.clear[view.index(anchor)]:
                raise Unanswerable(f"viewpoint {k}: the {anchor.label} the situation names is "
                                   "near a direction boundary")
            situation, _, facing = describe_situation(scene, pose, anchor,
                                                      template=_template_index(rec.situation))
            if rewriter is not None:
                facts = {"facing": scene.object(facing).label if facing is not None else None,
                         "anchor": anchor.label,
                         "anchor_direction": view.direction(view.index(anchor)),
                         "original": rec.situation, "degrees": k}
                proposal = rewriter(rec.situation, facts)
                if proposal and _agrees(proposal, facts):
                    situation = proposal
        else:
            situation, facing = describe_pose(scene, view)
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


def _agrees(text: str, facts: Mapping[str, Any]) -> bool:
    """A proposed situation is accepted only if it names what geometry says."""
    low = text.lower()
    if facts["facing"] and facts["facing"] not in low:
        return False
    if facts["anchor"] in low:
        said = [d for d, p in DIRECTION_PHRASES.items() if p in low]
        return said == [facts["anchor_direction"]]
    return True


def rotate_records(
    records: Sequence[SQA3DRecord],
    scenes: Mapping[str, Scene] | Callable[[str], Scene],
    *,
    n_viewpoints: int = 4,
    margin_deg: float = 15.0,
    rewriter: Callable[[str, dict], str | None] | None = None,
    progress: bool = False,
) -> RotationResult:
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
                                          margin_deg=margin_deg, rewriter=rewriter))
        except Unanswerable as err:
            out.excluded.append({"question_id": rec.question_id, "reason": str(err)})
    return out

