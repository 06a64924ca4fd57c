"""What a situated question means in a scene, and its answer from the scene graph.

One home for the spatial semantics that both real-data rotation
(:mod:`hf_real3d.real3dqa.rotation`) and the synthetic generator (:mod:`hf_real3d.synth`)
use: what the agent sees from a pose (:class:`View`: egocentric angle, direction bin,
distance, whether an object sits clearly inside its bin), which object it faces, how a
situation is described, the question kinds (nearest in a direction, navigation, counting,
existence, relations, attributes, distances, ...) and their answers computed from geometry
(:func:`answer_from_geometry`). Reading a real SQA3D question into those kinds is the English
reader's (:func:`hf_real3d.english.asks.parse_question`).

Direction words follow :mod:`hf_real3d.geometry`; objects within ``margin_deg`` of a bin
boundary never decide a direction-dependent answer (:class:`Unanswerable` says why).
"""

from __future__ import annotations

import numpy as np

from hf_real3d.geometry import (
    CLEARLY_NEARER,
    DIRECTION_MIN_DISTANCE,
    DIRECTION_PHRASES,
    DIRECTION_WORDS,
    DIRECTIONS_4,
    EQUALLY_NEAR,
    FACING_HALF_ANGLE,
    FACING_MIN_DISTANCE,
    MARGIN_DEG,
    Pose,
)
from hf_real3d.scene import Scene, SceneObject

__all__ = ["View", "Unanswerable", "CATEGORY", "number_word", "facing_object", "describe_situation",
           "describe_pose", "situation_template", "SITUATION_TEMPLATES", "nearest_in",
           "answer_from_geometry"]

_NUMBER_WORDS = ("zero one two three four five six seven eight nine ten eleven twelve thirteen "
                 "fourteen fifteen sixteen seventeen eighteen nineteen twenty").split()


def number_word(n: int) -> str:
    """A count as a word ("zero" .. "ten"), or its digits beyond."""
    return _NUMBER_WORDS[n] if 0 <= n < len(_NUMBER_WORDS) else str(n)


class View:
    """Everything about the scene's non-structural objects as seen from one pose."""

    def __init__(self, scene: Scene, pose: Pose, margin_deg: float = MARGIN_DEG):
        self.scene, self.pose, self.margin_deg = scene, pose, margin_deg
        self.objs: list[SceneObject] = scene.non_structural()
        ego = scene.egocentric(pose, self.objs, 4)
        self.angle, self.bin = ego["angle"], ego["bin"]
        self.margin, self.dist = ego["margin"], ego["distance"]
        self.clear = (self.margin >= margin_deg) & (self.dist >= DIRECTION_MIN_DISTANCE)
        self.labels = np.array([o.label for o in self.objs])
        self.counts = scene.counts()

    def direction(self, i: int) -> str:
        return DIRECTIONS_4[int(self.bin[i])]

    def label_clear(self, label: str) -> bool:
        """All instances of ``label`` sit clearly inside one bin each."""
        m = self.labels == label
        return bool(m.any() and self.clear[m].all())

    def index(self, obj: SceneObject) -> int:
        return self.objs.index(obj)


def facing_object(view: View, exclude_label: str | None = None) -> SceneObject | None:
    """The object the agent faces: the most central one within ``FACING_HALF_ANGLE``
    degrees of straight ahead and at least ``FACING_MIN_DISTANCE`` away (``exclude_label``:
    never this label)."""
    ahead = [(abs(a), i) for i, (a, d) in enumerate(zip(view.angle, view.dist))
             if abs(a) <= FACING_HALF_ANGLE and d >= FACING_MIN_DISTANCE
             and view.objs[i].label != exclude_label]
    return view.objs[min(ahead)[1]] if ahead else None


SITUATION_TEMPLATES = (
    "I am standing by the {anchor} {side} facing {face}.",
    "The {anchor} is {side} and I am facing {face}.",
    "I am next to the {anchor}, which is {side}, looking at {face}.",
)


def situation_template(text: str) -> int:
    """Which of :data:`SITUATION_TEMPLATES` a situation text was written with."""
    if text.startswith("The "):
        return 1
    if text.startswith("I am next to"):
        return 2
    return 0


def describe_situation(
    scene: Scene, pose: Pose, anchor: SceneObject, rng: np.random.Generator | None = None,
    *, template: int | None = None,
) -> tuple[str, list[str], int | None]:
    """Situation text for ``pose`` next to ``anchor``, derived from the geometry.

    Returns ``(text, alternatives, facing_object_id)``. The faced object comes from
    :func:`facing_object` (never the anchor's label); the anchor's side from its bin.
    """
    view = View(scene, pose, margin_deg=0.0)
    facing = facing_object(view, exclude_label=anchor.label)
    words = {"anchor": anchor.label,
             "side": DIRECTION_PHRASES[view.direction(view.index(anchor))],
             "face": f"the {facing.label}" if facing else "the wall"}
    templates = [t.format(**words) for t in SITUATION_TEMPLATES]
    k = template if template is not None else int(rng.integers(len(templates))) if rng else 0
    text = templates[k % len(templates)]
    alts = [t for j, t in enumerate(templates) if j != k % len(templates)]
    return text, alts, facing.object_id if facing else None


def describe_pose(view: View) -> tuple[str, int | None]:
    """Situation text for a pose with no anchor object: what is ahead and beside."""
    facing = facing_object(view)
    side = [(view.dist[i], i) for i in range(len(view.objs))
            if view.clear[i] and view.direction(i) in ("left", "right")]
    text = f"I am facing the {facing.label}" if facing else "I am facing the wall"
    if side:
        i = min(side)[1]
        text += f" and the {view.objs[i].label} is {DIRECTION_PHRASES[view.direction(i)]}"
    return text + ".", facing.object_id if facing else None


class Unanswerable(ValueError):
    """The scene cannot answer a question unambiguously from this pose (reason inside)."""


def nearest_in(view: View, d: str) -> int:
    """Index of the nearest object in direction ``d``; raises :class:`Unanswerable`."""
    b = DIRECTIONS_4.index(d)
    idx = [i for i in range(len(view.objs)) if view.bin[i] == b]
    if not idx:
        raise Unanswerable(f"nothing {DIRECTION_PHRASES[d]}")
    idx.sort(key=lambda i: view.dist[i])
    best = idx[0]
    if not view.clear[best]:
        raise Unanswerable(f"the nearest object {DIRECTION_PHRASES[d]} is near a direction "
                           "boundary")
    if len(idx) > 1 and view.dist[idx[1]] - view.dist[best] < EQUALLY_NEAR and \
            view.labels[idx[1]] != view.labels[best]:
        raise Unanswerable(f"two objects {DIRECTION_PHRASES[d]} are almost equally near")
    # an object near the bin boundary and nearer than the answer makes it ambiguous
    if any(view.margin[i] < view.margin_deg and view.dist[i] < view.dist[best]
           for i in range(len(view.objs)) if i != best):
        raise Unanswerable("a nearer object sits on a direction boundary")
    return best


def _clear_object(view: View, object_id: int) -> int:
    i = view.index(view.scene.object(object_id))
    if not view.clear[i]:
        raise Unanswerable(f"the {view.objs[i].label} is near a direction boundary")
    return i


def _clear_label(view: View, label: str) -> None:
    if not view.label_clear(label):
        raise Unanswerable(f"a {label} is near a direction boundary")


def _unique_in(view: View, label: str, d: str) -> int:
    m = np.flatnonzero((view.labels == label) & (view.bin == DIRECTIONS_4.index(d)))
    if len(m) != 1:
        raise Unanswerable(f"{len(m)} objects labelled {label} {DIRECTION_PHRASES[d]}, need "
                          "exactly one")
    if not view.clear[m[0]]:
        raise Unanswerable(f"the {label} {DIRECTION_PHRASES[d]} is near a direction boundary")
    return int(m[0])


def answer_from_geometry(view: View, kind: str, params: dict, facing: int | None = None) -> str:
    """The answer of a question of ``kind`` with ``params`` seen from ``view``'s pose,
    read from the scene graph alone (labels, positions, recorded attributes).

    ``facing`` is the object the situation says the agent faces (for ``prior_situation``).
    Raises :class:`Unanswerable` with a reason when geometry cannot decide unambiguously.
    """
    p = params
    if kind in ("nearest_in_direction", "turn_nearest"):
        return view.objs[nearest_in(view, p["direction"])].label
    if kind == "navigate":
        return DIRECTION_WORDS["go"][view.direction(_clear_object(view, p["object"]))]
    if kind == "count_direction":
        _clear_label(view, p["label"])
        b = DIRECTIONS_4.index(p["direction"])
        return number_word(int(((view.labels == p["label"]) & (view.bin == b)).sum()))
    if kind == "exists_direction":
        _clear_label(view, p["label"])
        b = DIRECTIONS_4.index(p["direction"])
        return "yes" if ((view.labels == p["label"]) & (view.bin == b)).any() else "no"
    if kind == "relation_direction":
        return "yes" if view.direction(_clear_object(view, p["object"])) == p["direction"] \
            else "no"
    if kind == "can_reach":
        return "yes" if view.direction(_clear_object(view, p["object"])) == "front" else "no"
    if kind.startswith("attribute_"):
        return view.objs[_unique_in(view, p["label"], p["direction"])].attributes[p["attr"]]
    if kind in ("closer", "farther"):
        a, b = (view.scene.object(i) for i in p["objects"])
        da, db = view.pose.distance(a.center), view.pose.distance(b.center)
        if abs(da - db) < CLEARLY_NEARER:
            raise Unanswerable(f"the {a.label} and the {b.label} are almost equally far")
        return a.label if (da > db) == p["far"] else b.label
    if kind == "count_room":
        return number_word(view.counts.get(p["label"], 0))
    if kind == "exists_room":
        return "yes" if view.counts.get(p["label"], 0) else "no"
    if kind in ("prior_color", "prior_function"):
        if view.counts.get(p["label"], 0) == 0:
            raise Unanswerable(f"no {p['label']} in the scene")
        if p.get("direction"):
            objs = [view.objs[_unique_in(view, p["label"], p["direction"])]]
        else:
            objs = [o for o in view.objs if o.label == p["label"]]
        if kind == "prior_function":
            return p["label"]
        colors = {o.attributes.get("color") for o in objs}
        if len(colors) != 1 or None in colors:
            raise Unanswerable(f"the objects labelled {p['label']} do not share one recorded "
                              "colour")
        return colors.pop()
    if kind == "prior_situation":
        if p["form"] == "anchor_near":
            return "yes"
        if facing is None:
            raise Unanswerable("the agent faces no object from this pose")
        label = view.scene.object(facing).label
        if p["form"] == "facing_what":
            return label
        return "yes" if label == p["label"] else "no"
    raise Unanswerable(f"unknown question kind {kind!r}")


# kinds whose answer changes when the agent turns in place

# Real-3DQA's question categories for the synthetic kinds
CATEGORY = {
    "nearest_in_direction": "object", "turn_nearest": "object", "navigate": "navigation",
    "count_direction": "number", "count_room": "number", "exists_direction": "visibility",
    "exists_room": "object", "can_reach": "navigation", "relation_direction": "spatial relation",
    "closer": "spatial relation", "farther": "spatial relation", "attribute_color": "color",
    "attribute_shape": "shape", "attribute_state": "state", "prior_color": "color",
    "prior_function": "object", "prior_situation": "reasoning",
}
