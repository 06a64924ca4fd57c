"""Situated agents and SQA3D-style questions whose answers come from scene geometry.

Every question records how it was made in ``extra["synth"]``::

    {"kind": "navigate", "guessable": false, "objects": [12], "direction": "left",
     "anchor": 3, "facing": 7}

* ``guessable`` questions follow a *language prior* a text-only model can learn: the
  colour of a category that is always that colour (whiteboards are white), the object a
  function describes ("the thing on the wall that lets natural light into the room" is a
  window), or an answer already stated in the situation text. The generator still checks
  each against the scene (the object exists, the direction said is true).
* all other questions need the scene: which object is nearest on my left, which way to go,
  counts and existence in a direction, colours of freely coloured objects, distances.
  Their answers are balanced where the template allows (yes/no 50/50).

Direction words follow :mod:`hf_real3d.geometry`; objects within ``margin_deg`` of a bin
boundary are never used for direction-dependent answers, and distance comparisons need a
gap of at least ``min_gap`` metres.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from hf_real3d.geometry import DIRECTION_PHRASES, DIRECTIONS_4, Pose, yaw_from_facing
from hf_real3d.scene import Scene, SceneObject
from hf_real3d.synth.catalog import CATALOG

__all__ = [
    "Situation",
    "QuestionSpec",
    "View",
    "plural",
    "number_word",
    "describe_situation",
    "sample_situation",
    "generate_questions",
    "GUESSABLE_KINDS",
    "SCENE_KINDS",
    "DIRECTION_DEPENDENT_KINDS",
]

_NUMBER_WORDS = ("zero one two three four five six seven eight nine ten eleven twelve thirteen "
                 "fourteen fifteen sixteen seventeen eighteen nineteen twenty").split()
_NAV_WORDS = {"front": "forward", "back": "backward", "left": "left", "right": "right"}


def number_word(n: int) -> str:
    return _NUMBER_WORDS[n] if 0 <= n < len(_NUMBER_WORDS) else str(n)


def plural(label: str) -> str:
    if label.endswith("shelf"):
        return label[:-1] + "ves"
    if label.endswith(("s", "x", "ch", "sh")):
        return label + "es"
    return label + "s"


@dataclass
class QuestionSpec:
    kind: str
    question: str
    answer: str
    guessable: bool
    objects: list[int] = field(default_factory=list)
    direction: str | None = None
    params: dict = field(default_factory=dict)  # what the answer is computed from


@dataclass
class Situation:
    pose: Pose
    text: str
    alternatives: list[str]
    anchor: int
    facing: int | None


class View:
    """Everything about the scene's non-structural objects as seen from one pose."""

    def __init__(self, scene: Scene, pose: Pose, margin_deg: float = 15.0):
        self.scene, self.pose, self.margin_deg = scene, pose, margin_deg
        self.objs: list[SceneObject] = scene.non_structural()
        ego = scene.egocentric(pose, self.objs, 4)
        self.angle, self.bin = ego["angle"], ego["bin"]
        self.margin, self.dist = ego["margin"], ego["distance"]
        self.clear = (self.margin >= margin_deg) & (self.dist >= 0.4)
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


# --- situations -------------------------------------------------------------------------


def describe_situation(
    scene: Scene, pose: Pose, anchor: SceneObject, rng: np.random.Generator | None = None,
    *, template: int | None = None,
) -> tuple[str, list[str], int | None]:
    """Situation text for ``pose`` next to ``anchor``, derived from the geometry.

    Returns ``(text, alternatives, facing_object_id)``. The faced object is the most
    central object within 25 degrees of straight ahead; the anchor's side comes from its
    egocentric bin.
    """
    view = View(scene, pose, margin_deg=0.0)
    ahead = [(abs(a), i) for i, (a, d) in enumerate(zip(view.angle, view.dist))
             if abs(a) <= 25 and d >= 0.6 and view.objs[i].label != anchor.label]
    facing = view.objs[min(ahead)[1]] if ahead else None
    a_side = view.direction(view.index(anchor))
    a_phrase = DIRECTION_PHRASES[a_side]
    face = f"the {facing.label}" if facing else "the wall"
    templates = [
        f"I am standing by the {anchor.label} {a_phrase} facing {face}.",
        f"The {anchor.label} is {a_phrase} and I am facing {face}.",
        f"I am next to the {anchor.label}, which is {a_phrase}, looking at {face}.",
    ]
    k = template if template is not None else int(rng.integers(len(templates))) if rng else 0
    text = templates[k % len(templates)]
    alts = [t for j, t in enumerate(templates) if j != k % len(templates)]
    return text, alts, facing.object_id if facing else None


def sample_situation(scene: Scene, rng: np.random.Generator, tries: int = 30) -> Situation | None:
    """Stand next to a floor object, turn towards another object, describe it."""
    floor_objs = [o for o in scene.non_structural()
                  if o.label in CATALOG and CATALOG[o.label].placement in ("wall", "free")]
    others = scene.non_structural()
    if not floor_objs or len(others) < 3:
        return None
    room = scene.extras.get("room_size")
    lo_xy = np.array([0.25, 0.25])
    hi_xy = np.array(room[:2]) - 0.25 if room else np.array([np.inf, np.inf])
    for _ in range(tries):
        anchor = floor_objs[int(rng.integers(len(floor_objs)))]
        side = int(rng.integers(4))  # local +x (front), +y, -y, -x
        dist = float(rng.uniform(0.3, 0.7))
        local = [(anchor.size[0] / 2 + dist, 0), (0, anchor.size[1] / 2 + dist),
                 (0, -anchor.size[1] / 2 - dist), (-anchor.size[0] / 2 - dist, 0)][side]
        c, s = math.cos(anchor.yaw), math.sin(anchor.yaw)
        xy = anchor.center[:2] + np.array([c * local[0] - s * local[1],
                                           s * local[0] + c * local[1]])
        if (xy < lo_xy).any() or (xy > hi_xy).any():
            continue
        if any(_inside(o, xy, 0.15) for o in others if o.bottom < 1.0):
            continue
        target = others[int(rng.integers(len(others)))]
        if target is anchor and rng.random() < 0.7:
            continue
        to = target.center[:2] - xy
        if np.linalg.norm(to) < 0.8:
            continue
        yaw = yaw_from_facing([to[0], to[1], 0.0]) + math.radians(rng.uniform(-10, 10))
        pose = Pose(np.array([xy[0], xy[1], scene.origin[2]]), yaw)
        view = View(scene, pose)
        if not view.clear[view.index(anchor)] and anchor is not target:
            continue
        text, alts, facing = describe_situation(scene, pose, anchor, rng)
        return Situation(pose, text, alts, anchor.object_id, facing)
    return None


def _inside(obj: SceneObject, xy: np.ndarray, pad: float) -> bool:
    c, s = math.cos(obj.yaw), math.sin(obj.yaw)
    d = xy - obj.center[:2]
    lx, ly = c * d[0] + s * d[1], -s * d[0] + c * d[1]
    return abs(lx) <= obj.size[0] / 2 + pad and abs(ly) <= obj.size[1] / 2 + pad


# --- question kinds ---------------------------------------------------------------------
# Each takes (view, situation, rng) and returns a QuestionSpec or None when the
# situation cannot support that kind unambiguously.

QFn = Callable[[View, Situation, np.random.Generator], "QuestionSpec | None"]


def _pick(rng: np.random.Generator, items: list):
    return items[int(rng.integers(len(items)))] if items else None


def _unique_clear(view: View) -> list[int]:
    return [i for i, o in enumerate(view.objs)
            if view.counts[o.label] == 1 and view.clear[i]]


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
    if len(idx) > 1 and view.dist[idx[1]] - view.dist[best] < 0.3 and \
            view.labels[idx[1]] != view.labels[best]:
        raise Unanswerable(f"two objects {DIRECTION_PHRASES[d]} are almost equally near")
    # an object near the bin boundary and nearer than the answer makes it ambiguous
    if any(view.margin[i] < view.margin_deg and view.dist[i] < view.dist[best]
           for i in range(len(view.objs)) if i != best):
        raise Unanswerable("a nearer object sits on a direction boundary")
    return best


def q_nearest_in_direction(view: View, sit: Situation, rng) -> QuestionSpec | None:
    d = DIRECTIONS_4[int(rng.integers(4))]
    try:
        best = nearest_in(view, d)
    except Unanswerable:
        return None
    q = _pick(rng, ["What is the closest object {p}?", "What is the nearest thing {p}?",
                    "Which object is closest to me {p}?"]).format(p=DIRECTION_PHRASES[d])
    return QuestionSpec("nearest_in_direction", q, view.objs[best].label, False,
                        [view.objs[best].object_id], d, {"direction": d})


def q_navigate(view: View, sit: Situation, rng) -> QuestionSpec | None:
    i = _pick(rng, [i for i in _unique_clear(view) if view.objs[i].object_id != sit.anchor])
    if i is None:
        return None
    d = view.direction(i)
    q = _pick(rng, ["Which direction should I go if I want to reach the {x}?",
                    "Which way should I walk to get to the {x}?",
                    "Which direction do I need to go to reach the {x}?"]).format(
        x=view.objs[i].label)
    return QuestionSpec("navigate", q, _NAV_WORDS[d], False, [view.objs[i].object_id], d,
                        {"object": view.objs[i].object_id})


def q_count_direction(view: View, sit: Situation, rng) -> QuestionSpec | None:
    labels = [lab for lab, c in view.counts.items() if view.label_clear(lab)]
    lab = _pick(rng, sorted(labels))
    if lab is None:
        return None
    d = DIRECTIONS_4[int(rng.integers(4))]
    m = (view.labels == lab) & (view.bin == DIRECTIONS_4.index(d))
    q = f"How many {plural(lab)} are {DIRECTION_PHRASES[d]}?"
    ids = [view.objs[i].object_id for i in np.flatnonzero(m)]
    return QuestionSpec("count_direction", q, number_word(int(m.sum())), False, ids, d,
                        {"label": lab, "direction": d})


def q_exists_direction(view: View, sit: Situation, rng) -> QuestionSpec | None:
    d = DIRECTIONS_4[int(rng.integers(4))]
    b = DIRECTIONS_4.index(d)
    want_yes = rng.random() < 0.5
    labels = [lab for lab in sorted(view.counts) if view.label_clear(lab)
              and (((view.labels == lab) & (view.bin == b)).any() == want_yes)]
    lab = _pick(rng, labels)
    if lab is None:
        return None
    ids = [view.objs[i].object_id for i in np.flatnonzero((view.labels == lab) &
                                                          (view.bin == b))]
    if rng.random() < 0.3:
        q = f"Are there any {plural(lab)} {DIRECTION_PHRASES[d]}?"
    else:
        q = f"Is there a {lab} {DIRECTION_PHRASES[d]}?"
    return QuestionSpec("exists_direction", q, "yes" if want_yes else "no", False, ids, d,
                        {"label": lab, "direction": d})


def q_turn_nearest(view: View, sit: Situation, rng) -> QuestionSpec | None:
    spec = q_nearest_in_direction(view, sit, rng)
    if spec is None or spec.direction == "front":
        return None
    turn = {"left": "left", "right": "right", "back": "around"}[spec.direction]
    q = f"If I turn {turn}, what will be the closest thing in front of me?"
    return QuestionSpec("turn_nearest", q, spec.answer, False, spec.objects, spec.direction,
                        spec.params)


def q_can_reach(view: View, sit: Situation, rng) -> QuestionSpec | None:
    want_yes = rng.random() < 0.5
    front = DIRECTIONS_4.index("front")
    i = _pick(rng, [i for i in _unique_clear(view) if (view.bin[i] == front) == want_yes])
    if i is None:
        return None
    q = f"Can I reach the {view.objs[i].label} by walking straight ahead?"
    return QuestionSpec("can_reach", q, "yes" if want_yes else "no", False,
                        [view.objs[i].object_id], view.direction(i),
                        {"object": view.objs[i].object_id})


def q_relation_direction(view: View, sit: Situation, rng) -> QuestionSpec | None:
    i = _pick(rng, _unique_clear(view))
    if i is None:
        return None
    true_d = view.direction(i)
    d = true_d if rng.random() < 0.5 else _pick(rng, [x for x in DIRECTIONS_4 if x != true_d])
    q = f"Is the {view.objs[i].label} {DIRECTION_PHRASES[d]}?"
    return QuestionSpec("relation_direction", q, "yes" if d == true_d else "no", False,
                        [view.objs[i].object_id], d,
                        {"object": view.objs[i].object_id, "direction": d})


def q_attribute(view: View, sit: Situation, rng) -> QuestionSpec | None:
    cands = []
    for i, o in enumerate(view.objs):
        if not view.clear[i]:
            continue
        same_dir = (view.labels == o.label) & (view.bin == view.bin[i])
        if same_dir.sum() != 1:
            continue
        cat = CATALOG[o.label]
        if cat.prior_color is None and len(cat.colors) > 1:
            cands.append((i, "color"))
        if "shape" in o.attributes and len(cat.shapes) > 1:
            cands.append((i, "shape"))
        if "state" in o.attributes and len(cat.states) == 2:
            cands.append((i, "state"))
    got = _pick(rng, cands)
    if got is None:
        return None
    i, attr = got
    o, p = view.objs[i], DIRECTION_PHRASES[view.direction(i)]
    if attr == "color":
        q = f"What color is the {o.label} {p}?"
    elif attr == "shape":
        q = f"What shape is the {o.label} {p}?"
    else:
        a, b = CATALOG[o.label].states
        q = f"Is the {o.label} {p} {a} or {b}?"
    return QuestionSpec(f"attribute_{attr}", q, o.attributes[attr], False, [o.object_id],
                        view.direction(i),
                        {"label": o.label, "direction": view.direction(i), "attr": attr})


def q_closer(view: View, sit: Situation, rng) -> QuestionSpec | None:
    uniq = [i for i, o in enumerate(view.objs) if view.counts[o.label] == 1]
    if len(uniq) < 2:
        return None
    for _ in range(6):
        i, j = rng.choice(uniq, size=2, replace=False)
        if abs(view.dist[i] - view.dist[j]) >= 0.5:
            break
    else:
        return None
    far = rng.random() < 0.35
    ans = i if (view.dist[i] > view.dist[j]) == far else j
    word = "farther from" if far else "closer to"
    q = f"Which is {word} me, the {view.objs[i].label} or the {view.objs[j].label}?"
    pair = [int(view.objs[i].object_id), int(view.objs[j].object_id)]
    return QuestionSpec("farther" if far else "closer", q, view.objs[ans].label, False, pair,
                        None, {"objects": pair, "far": bool(far)})


def q_count_room(view: View, sit: Situation, rng) -> QuestionSpec | None:
    lab = _pick(rng, sorted(view.counts))
    if lab is None:
        return None
    q = f"How many {plural(lab)} are there in the room?"
    ids = [o.object_id for o in view.objs if o.label == lab]
    return QuestionSpec("count_room", q, number_word(view.counts[lab]), False, ids, None,
                        {"label": lab})


def q_exists_room(view: View, sit: Situation, rng) -> QuestionSpec | None:
    if rng.random() < 0.5:
        lab = _pick(rng, sorted(view.counts))
        ans = "yes"
    else:
        lab = _pick(rng, sorted(set(CATALOG) - set(view.counts)))
        ans = "no"
    if lab is None:
        return None
    ids = [o.object_id for o in view.objs if o.label == lab]
    return QuestionSpec("exists_room", f"Is there a {lab} in this room?", ans, False, ids, None,
                        {"label": lab})


# guessable kinds: the answer follows from the text alone, and the scene agrees


def q_prior_color(view: View, sit: Situation, rng) -> QuestionSpec | None:
    labs = sorted(lab for lab in view.counts if CATALOG[lab].prior_color)
    lab = _pick(rng, labs)
    if lab is None:
        return None
    i = int(np.flatnonzero(view.labels == lab)[0])
    p = ""
    if view.counts[lab] == 1 and view.clear[i] and rng.random() < 0.5:
        p = " " + DIRECTION_PHRASES[view.direction(i)]
    ids = [o.object_id for o in view.objs if o.label == lab]
    d = view.direction(i) if p else None
    return QuestionSpec("prior_color", f"What color is the {lab}{p}?", CATALOG[lab].prior_color,
                        True, ids, d, {"label": lab, "direction": d})


def q_prior_function(view: View, sit: Situation, rng) -> QuestionSpec | None:
    labs = sorted(lab for lab in view.counts if CATALOG[lab].function and view.counts[lab] == 1)
    lab = _pick(rng, labs)
    if lab is None:
        return None
    i = int(np.flatnonzero(view.labels == lab)[0])
    fn = CATALOG[lab].function
    if view.clear[i] and rng.random() < 0.6:
        d = view.direction(i)
        q = f"What is {fn}, {DIRECTION_PHRASES[d]}?"
    else:
        d, q = None, f"What is {fn}?"
    return QuestionSpec("prior_function", q, lab, True, [view.objs[i].object_id], d,
                        {"label": lab, "direction": d})


def q_prior_situation(view: View, sit: Situation, rng) -> QuestionSpec | None:
    if sit.facing is not None and rng.random() < 0.6:
        lab = view.scene.object(sit.facing).label
        if rng.random() < 0.3:
            return QuestionSpec("prior_situation", f"Am I facing the {lab}?", "yes", True,
                                [sit.facing], "front", {"form": "facing_yes", "label": lab})
        q = _pick(rng, ["What am I facing?", "What is the object I am looking at?"])
        return QuestionSpec("prior_situation", q, lab, True, [sit.facing], "front",
                            {"form": "facing_what"})
    anchor = view.scene.object(sit.anchor)
    return QuestionSpec("prior_situation", f"Is there a {anchor.label} near me?", "yes", True,
                        [sit.anchor], None, {"form": "anchor_near", "label": anchor.label})


SCENE_KINDS: dict[str, tuple[QFn, float]] = {
    "nearest_in_direction": (q_nearest_in_direction, 1.5),
    "navigate": (q_navigate, 1.5),
    "count_direction": (q_count_direction, 1.0),
    "exists_direction": (q_exists_direction, 1.0),
    "relation_direction": (q_relation_direction, 1.2),
    "turn_nearest": (q_turn_nearest, 1.0),
    "can_reach": (q_can_reach, 1.0),
    "attribute": (q_attribute, 1.2),
    "closer": (q_closer, 0.8),
    "count_room": (q_count_room, 0.6),
    "exists_room": (q_exists_room, 0.6),
}
GUESSABLE_KINDS: dict[str, tuple[QFn, float]] = {
    "prior_color": (q_prior_color, 1.0),
    "prior_function": (q_prior_function, 1.5),
    "prior_situation": (q_prior_situation, 1.0),
}
# kinds whose answer changes when the agent turns in place
DIRECTION_DEPENDENT_KINDS = frozenset({
    "nearest_in_direction", "navigate", "count_direction", "exists_direction", "turn_nearest",
    "can_reach",
    "relation_direction", "attribute_color", "attribute_shape", "attribute_state",
})


def generate_questions(
    scene: Scene,
    sit: Situation,
    rng: np.random.Generator,
    n: int,
    guessable_fraction: float,
    margin_deg: float = 15.0,
) -> list[QuestionSpec]:
    """Up to ``n`` distinct questions for one situation; each slot is guessable with
    probability ``guessable_fraction``."""
    view = View(scene, sit.pose, margin_deg)
    out: list[QuestionSpec] = []
    seen: set[str] = set()
    for _ in range(3 * n):
        if len(out) >= n:
            break
        pool = GUESSABLE_KINDS if rng.random() < guessable_fraction else SCENE_KINDS
        names = list(pool)
        w = np.array([pool[k][1] for k in names])
        fn = pool[names[int(rng.choice(len(names), p=w / w.sum()))]][0]
        spec = fn(view, sit, rng)
        if spec is None or spec.question in seen:
            continue
        seen.add(spec.question)
        out.append(spec)
    return out


# --- answers from geometry (used to verify generated questions and to rotate them) -----


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
        raise Unanswerable(f"{len(m)} {plural(label)} {DIRECTION_PHRASES[d]}, need exactly one")
    if not view.clear[m[0]]:
        raise Unanswerable(f"the {label} {DIRECTION_PHRASES[d]} is near a direction boundary")
    return int(m[0])


def answer_from_geometry(view: View, kind: str, params: dict, facing: int | None = None) -> str:
    """The answer of a question of ``kind`` with ``params`` seen from ``view``'s pose.

    ``facing`` is the object the situation says the agent faces (for ``prior_situation``).
    Raises :class:`Unanswerable` with a reason when geometry cannot decide unambiguously.
    """
    p = params
    if kind in ("nearest_in_direction", "turn_nearest"):
        return view.objs[nearest_in(view, p["direction"])].label
    if kind == "navigate":
        return _NAV_WORDS[view.direction(_clear_object(view, p["object"]))]
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
        if abs(da - db) < 0.5:
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
            _unique_in(view, p["label"], p["direction"])
        return CATALOG[p["label"]].prior_color if kind == "prior_color" else p["label"]
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


# Real-3DQA's question categories for the synthetic kinds
CATEGORY = {
    "nearest_in_direction": "object", "turn_nearest": "object", "navigate": "navigation",
    "count_direction": "number", "count_room": "number", "exists_direction": "visibility",
    "exists_room": "object", "can_reach": "navigation", "relation_direction": "spatial relation",
    "closer": "spatial relation", "farther": "spatial relation", "attribute_color": "color",
    "attribute_shape": "shape", "attribute_state": "state", "prior_color": "color",
    "prior_function": "object", "prior_situation": "reasoning",
}
