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

What a question means and how its answer follows from the scene graph live in
:mod:`hf_real3d.spatial` (shared with real-data rotation); this module only *samples*
situations and questions.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from hf_real3d.english.mentions import plural
from hf_real3d.geometry import (
    CLEARLY_NEARER,
    DIRECTION_PHRASES,
    DIRECTION_WORDS,
    DIRECTIONS_4,
    MARGIN_DEG,
    Pose,
    yaw_from_facing,
)
from hf_real3d.scene import Scene, SceneObject
from hf_real3d.spatial import (
    Unanswerable,
    View,
    describe_situation,
    nearest_in,
    number_word,
)
from hf_real3d.synth.catalog import CATALOG

__all__ = ["Situation", "QuestionSpec", "sample_situation", "generate_questions", "GUESSABLE_KINDS",
           "COUNTER_PRIOR_KINDS", "SCENE_KINDS"]


@dataclass
class QuestionSpec:
    """A generated question: its kind, text, answer, whether a language prior gives it, the objects
    and direction it concerns, and how it was made."""
    kind: str
    question: str
    answer: str
    guessable: bool
    objects: list[int] = field(default_factory=list)
    direction: str | None = None
    params: dict = field(default_factory=dict)  # what the answer is computed from
    # how the language prior relates to the answer: "prior" (the prior gives it), "scene"
    # (no prior decides it), "counter_prior" (the prior points to another answer)
    prior_kind: str = ""

    def __post_init__(self) -> None:
        if not self.prior_kind:
            self.prior_kind = "prior" if self.guessable else "scene"


@dataclass
class Situation:
    """Where the agent stands and faces, how its situation reads, other wordings, and the objects it
    is anchored to and faces."""
    pose: Pose
    text: str
    alternatives: list[str]
    anchor: int
    facing: int | None


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


def q_nearest_in_direction(view: View, sit: Situation, rng) -> QuestionSpec | None:
    """"What is the closest object to my left?": the nearest object in one direction."""
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
    """"Which direction should I go to reach the X?": the direction of a unique object."""
    i = _pick(rng, [i for i in _unique_clear(view) if view.objs[i].object_id != sit.anchor])
    if i is None:
        return None
    d = view.direction(i)
    q = _pick(rng, ["Which direction should I go if I want to reach the {x}?",
                    "Which way should I walk to get to the {x}?",
                    "Which direction do I need to go to reach the {x}?"]).format(
        x=view.objs[i].label)
    return QuestionSpec("navigate", q, DIRECTION_WORDS["go"][d], False, [view.objs[i].object_id], d,
                        {"object": view.objs[i].object_id})


def q_count_direction(view: View, sit: Situation, rng) -> QuestionSpec | None:
    """"How many Xs are to my right?": a count in one direction."""
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
    """"Is there an X behind me?": yes or no, balanced."""
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
    """"If I turn left, what will be the closest thing in front of me?"."""
    spec = q_nearest_in_direction(view, sit, rng)
    if spec is None or spec.direction == "front":
        return None
    turn = {"left": "left", "right": "right", "back": "around"}[spec.direction]
    q = f"If I turn {turn}, what will be the closest thing in front of me?"
    return QuestionSpec("turn_nearest", q, spec.answer, False, spec.objects, spec.direction,
                        spec.params)


def q_can_reach(view: View, sit: Situation, rng) -> QuestionSpec | None:
    """"Can I reach the X by walking straight ahead?": yes when it is in front."""
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
    """"Is the X to my left?": the true direction or another, balanced."""
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
    """"What colour is the X on my left?": an attribute of an object singled out by its
    direction."""
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
    """"Which is closer to me, the X or the Y?": two unique objects at clearly different
    distances."""
    uniq = [i for i, o in enumerate(view.objs) if view.counts[o.label] == 1]
    if len(uniq) < 2:
        return None
    for _ in range(6):
        i, j = rng.choice(uniq, size=2, replace=False)
        if abs(view.dist[i] - view.dist[j]) >= CLEARLY_NEARER:
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
    """"How many Xs are in the room?": no viewpoint needed."""
    lab = _pick(rng, sorted(view.counts))
    if lab is None:
        return None
    q = f"How many {plural(lab)} are there in the room?"
    ids = [o.object_id for o in view.objs if o.label == lab]
    return QuestionSpec("count_room", q, number_word(view.counts[lab]), False, ids, None,
                        {"label": lab})


def q_exists_room(view: View, sit: Situation, rng) -> QuestionSpec | None:
    """"Is there an X in the room?": yes or no, balanced."""
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


def _color_question(view: View, rng, usual: bool) -> QuestionSpec | None:
    """"What color is the <label>?" about a usual-colour category whose instances here all
    have one colour: the usual one (a prior question) or another (counter-prior). Both use
    the same template and wording, so text alone cannot tell them apart."""
    labs = []
    for lab in sorted(view.counts):
        colors = {o.attributes.get("color") for o in view.objs if o.label == lab}
        if CATALOG[lab].prior_color and len(colors) == 1 and \
                (colors == {CATALOG[lab].prior_color}) == usual:
            labs.append(lab)
    lab = _pick(rng, labs)
    if lab is None:
        return None
    i = int(np.flatnonzero(view.labels == lab)[0])
    color = str(view.objs[i].attributes.get("color"))
    p = ""
    if view.counts[lab] == 1 and view.clear[i] and rng.random() < 0.5:
        p = " " + DIRECTION_PHRASES[view.direction(i)]
    ids = [o.object_id for o in view.objs if o.label == lab]
    d = view.direction(i) if p else None
    return QuestionSpec("prior_color", f"What color is the {lab}{p}?", color, usual, ids, d,
                        {"label": lab, "direction": d},
                        prior_kind="prior" if usual else "counter_prior")


def q_prior_color(view: View, sit: Situation, rng) -> QuestionSpec | None:
    """"What colour is the X?" for an object of its category's usual colour (the prior answers
    it)."""
    return _color_question(view, rng, usual=True)


def q_counter_color(view: View, sit: Situation, rng) -> QuestionSpec | None:
    """The colour of an object whose category usually has another colour (template
    ``prior_color``, ``prior_kind`` ``counter_prior``)."""
    return _color_question(view, rng, usual=False)


def q_prior_function(view: View, sit: Situation, rng) -> QuestionSpec | None:
    """"What can I do with the X?": its category's function (the prior answers it)."""
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
    """Questions the situation's text answers ("Am I facing the X?"): the prior answers them."""
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
COUNTER_PRIOR_KINDS: dict[str, tuple[QFn, float]] = {"counter_color": (q_counter_color, 1.0)}
GUESSABLE_KINDS: dict[str, tuple[QFn, float]] = {
    "prior_color": (q_prior_color, 1.0),
    "prior_function": (q_prior_function, 1.5),
    "prior_situation": (q_prior_situation, 1.0),
}


def generate_questions(scene: Scene, sit: Situation, rng: np.random.Generator, n: int,
                       guessable_fraction: float, margin_deg: float = MARGIN_DEG,
                       counter_prior_fraction: float = 0.0) -> list[QuestionSpec]:
    """Up to ``n`` distinct questions for one situation; each slot is guessable with
    probability ``guessable_fraction``, counter-prior with ``counter_prior_fraction`` (when
    the room has such an object), else scene-dependent."""
    view = View(scene, sit.pose, margin_deg)
    out: list[QuestionSpec] = []
    seen: set[str] = set()
    for _ in range(3 * n):
        if len(out) >= n:
            break
        u = rng.random()
        pool = GUESSABLE_KINDS if u < guessable_fraction else COUNTER_PRIOR_KINDS \
            if u < guessable_fraction + counter_prior_fraction else SCENE_KINDS
        names = list(pool)
        w = np.array([pool[k][1] for k in names])
        fn = pool[names[int(rng.choice(len(names), p=w / w.sum()))]][0]
        spec = fn(view, sit, rng)
        if spec is None or spec.question in seen:
            continue
        seen.add(spec.question)
        out.append(spec)
    return out
