"""The checker's scene rules (Real-3DQA App. D.2): is a turned item consistent with the
scene, seen from its turned pose? Each object the turned situation names with a direction
has an instance there, an object the answer names for an asked direction too, and where the
scene answers the question unambiguously (:func:`hf_real3d.spatial.answer_from_geometry`),
the item's answer is that one. The rules' texts are :data:`hf_real3d.real3dqa.checker.rules.
SCENE_RULES`; what they find feeds :func:`hf_real3d.real3dqa.checker.text.verdict_for`.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from hf_real3d.answers import normalize_answer
from hf_real3d.english.asks import parse_question, question_kind
from hf_real3d.english.mentions import bearing_name, mentions, singular
from hf_real3d.geometry import DIRECTION_MIN_DISTANCE, MARGIN_DEG, Pose, wrap_degrees
from hf_real3d.real3dqa.checker.rules import Hit
from hf_real3d.real3dqa.checker.text import placed_once
from hf_real3d.scene import STRUCTURAL_LABELS, Scene
from hf_real3d.spatial import Unanswerable, View, answer_from_geometry

__all__ = ["SceneCheck", "SceneFindings", "check_scene", "several_named"]


@dataclass
class SceneCheck:
    """What the scene rules need of one turned item."""

    situation: str
    question: str
    answers: Sequence[str]
    pose: Pose
    semantics: Mapping[str, Any] | None = None  # a synthetic question's kind and params
    margin_deg: float = MARGIN_DEG


@dataclass
class SceneFindings:
    """What the scene rules found of one turned item."""

    hits: list[Hit] = field(default_factory=list)
    unmatched: list[str] = field(default_factory=list)  # names no scene object carries
    confirmed: bool = False  # the scene gives the item's answer


def _label_words(scene: Scene) -> dict[str, tuple[str, ...]]:
    return {o.label: tuple(singular(w) for w in o.label.lower().split()) for o in scene.objects}


def _objects_named(scene: Scene, words: tuple[str, ...],
                   labels: dict[str, tuple[str, ...]] | None = None) -> list[int]:
    """Indices into ``scene.objects`` whose label is the phrase's tail ("trash can" for
    "blue trash can"), the longest such label winning."""
    labels = labels if labels is not None else _label_words(scene)
    best = 0
    for lw in labels.values():
        if len(lw) <= len(words) and words[len(words) - len(lw):] == lw:
            best = max(best, len(lw))
    if not best:
        return []
    return [i for i, o in enumerate(scene.objects)
            if len(labels[o.label]) == best and words[len(words) - best:] == labels[o.label]]


def _placed(scene: Scene, pose: Pose, idx: list[int], bearing: float, width: float,
            margin: float) -> bool | None:
    """Whether some object of ``idx`` lies within the direction (None: none far enough
    from the agent to have a direction)."""
    centers = np.asarray([scene.objects[i].center for i in idx], dtype=float)
    far = np.asarray(pose.distance(centers)) >= DIRECTION_MIN_DISTANCE
    if not far.any():
        return None
    said = -bearing  # egocentric angles are counter-clockwise
    gaps = np.abs(wrap_degrees(np.asarray(pose.ego_angle(centers[far])) - said))
    return bool((gaps <= width / 2 + margin).any())


def several_named(scene: Scene) -> frozenset[str]:
    """Head nouns that name more than one object of ``scene``."""
    labels = _label_words(scene)
    counts = Counter(labels[o.label][-1] for o in scene.objects)
    return frozenset(h for h, n in counts.items() if n > 1)


def check_scene(item: SceneCheck, scene: Scene) -> SceneFindings:
    """The scene rules a turned item breaks, seen from its turned pose, the names no scene
    object carries, and whether the scene gives the item's answer."""
    out = SceneFindings()
    hits = out.hits
    bad = []
    labels = _label_words(scene)
    for m in placed_once(mentions(item.situation)):
        if m.head in STRUCTURAL_LABELS:  # a wall's box centre says nothing of its direction
            continue
        idx = _objects_named(scene, m.words, labels)
        if not idx:
            out.unmatched.append(" ".join(m.words))
            continue
        if _placed(scene, item.pose, idx, m.bearing, m.width, item.margin_deg) is False:
            bad.append(m)
    if bad:
        hits.append(Hit("quadrant_situation", tuple(m.phrase for m in bad),
                        "; ".join(f"no {m.head} {bearing_name(m.bearing, m.width)} of the "
                                  "turned pose" for m in bad)))
    kind, what = question_kind(item.question)
    if kind == "at":
        bearing, width, phrase = what
        named = [(a, idx) for a in item.answers
                 if (idx := _objects_named(scene, tuple(singular(w) for w in
                                                        normalize_answer(a).split()), labels))]
        if named and not any(_placed(scene, item.pose, idx, bearing, width, item.margin_deg)
                             is not False for _, idx in named):
            hits.append(Hit("quadrant_answer", (phrase, named[0][0]),
                            f"no {named[0][0]} {bearing_name(bearing, width)} of the turned "
                            "pose"))
    expected = _geometry_answer(item, scene)
    if expected is not None:
        norm = {normalize_answer(a) for a in item.answers}
        if normalize_answer(expected) not in norm:
            hits.append(Hit("answer_geometry", (item.question, ", ".join(item.answers)),
                            f"the scene gives {expected!r} from the turned pose"))
        else:
            out.confirmed = True
    return out


def _geometry_answer(item: SceneCheck, scene: Scene) -> str | None:
    """The scene's answer from the turned pose, when the question's meaning is known and the
    scene decides it; None otherwise."""
    sem = json.loads(item.semantics) if isinstance(item.semantics, str) else item.semantics
    if sem and sem.get("kind"):
        kind, params = sem["kind"], sem.get("params", {})
    else:
        parsed = parse_question(item.question, scene)
        if parsed is None:
            return None
        kind, params = parsed
    facing = None
    if kind == "prior_situation":  # its answer follows the object the situation faces
        faced = next((m for m in mentions(item.situation) if m.facing), None)
        idx = _objects_named(scene, faced.words) if faced is not None else []
        if not idx:
            return None
        centers = np.asarray([scene.objects[i].center for i in idx], dtype=float)
        ahead = np.abs(np.asarray(item.pose.ego_angle(centers), dtype=float).reshape(-1))
        facing = scene.objects[idx[int(np.argmin(ahead))]].object_id
    try:
        return answer_from_geometry(View(scene, item.pose, item.margin_deg), kind, params,
                                    facing)
    except (Unanswerable, KeyError, IndexError, ValueError):
        return None
