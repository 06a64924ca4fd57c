"""Is a rotated item consistent with its turn? Named rules over its texts and answers, and,
given the scene, over its geometry (Real-3DQA App. D.2); and the verdict they give.

A rotated item says where things are after the agent turned in place. The English reader
(:mod:`hf_real3d.real3dqa.mentions`) reads each text into objects with an egocentric bearing;
the one turn rule (:func:`hf_real3d.geometry.bearing_after_turn`) says where the turn sends
each. The release's quarter-turn texts follow the quaternions' sense and the opposite sense
about equally, so each quarter-turn item is read under both **senses**: ``quaternion`` (the
turn its pose makes, or viewpoint k turned k degrees clockwise where the pose was left
unturned) and ``opposite``. An item whose situation and answer agree on one rigid turn of the
right size passes in that sense; one whose situation follows one sense and whose answer the
other is a defect.

Rules over the text (:data:`TEXT_RULES`) and the answers (:data:`ANSWER_RULES`); with the
scene, :data:`SCENE_RULES`. Each hit is a defect, or says the text cannot decide
(``needs_scene``: objects of one name, a left-or-right answer near an axis, an answer that
rests on where unnamed things are). :func:`verdict_for` gives each item its
:class:`Verdict`: ``pass``, ``defect`` or ``needs_scene``, with the sense it follows. The
scene rules live in :mod:`hf_real3d.real3dqa.scene_checks`; the English they read and write,
in :mod:`hf_real3d.real3dqa.mentions` and :mod:`hf_real3d.real3dqa.asks`. Everything here is
pure: :mod:`hf_real3d.real3dqa.check_rotations` reads the files and writes the outputs.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from hf_real3d.geometry import angle_gap, bearing_after_turn, wrap_degrees
from hf_real3d.real3dqa.asks import (
    answer_direction,
    answer_names,
    question_kind,
    same_answer,
    turned_answer,
)
from hf_real3d.real3dqa.mentions import (
    ALWAYS_SEVERAL,
    GENERIC,
    Mention,
    Reading,
    bearing_name,
    placed_once,
    plain_words,
    read,
)
from hf_real3d.scene import STRUCTURAL_LABELS

__all__ = [
    "ANSWER_RULES",
    "RULES",
    "SCENE_RULES",
    "SENSES",
    "TEXT_RULES",
    "VERDICTS",
    "Hit",
    "TurnedItem",
    "Verdict",
    "check_text",
    "turn_of",
    "verdict_for",
]

TEXT_RULES: dict[str, str] = {
    "empty_text": "the turned item's situation or answers are empty",
    "text_not_turned": "the situation at a turned viewpoint is viewpoint 0's (up to case, "
                       "spaces, punctuation and contractions)",
    "duplicate_view": "the situation is another turned viewpoint's of the group, or one of "
                      "viewpoint 0's alternative situations (a view of viewpoint 0)",
    "same_object_faced": "the situation at a turned viewpoint faces the object viewpoint 0 "
                         "faces",
    "mirror": "the same object faced with an object moved to the other side (left and right "
              "swapped): a mirror image, not a turn",
    "direction_wrong": "an object named with a direction at viewpoint 0 and at the turn is "
                       "where no turn of this size sends it, in either sense",
    "sense_mismatch": "the situation follows one sense of the quarter turn and the answer the "
                      "other",
    "allocentric_changed": "a relation to a named thing changed side (\"left of the bed\" -> "
                           "\"right of the bed\"); a turn moves nothing in the room, but the "
                           "text's left may be the viewer's (needs the scene)",
}
ANSWER_RULES: dict[str, str] = {
    "answer_direction": "the answer is a direction and is not viewpoint 0's answer turned (in "
                        "the sense the situation follows)",
    "answer_invariant": "the question does not depend on the agent's heading and the answer "
                        "changed",
    "answer_from_situation": "the question asks what is in a direction, the turned situation "
                             "names an object there, and the answer is another",
}
SCENE_RULES: dict[str, str] = {
    "quadrant_situation": "an object the turned situation names with a direction has no "
                          "instance in that direction from the turned pose",
    "quadrant_answer": "the question asks about a direction and the answer names an object "
                       "with no instance in that direction from the turned pose",
    "answer_geometry": "the scene answers the question unambiguously from the turned pose, "
                       "and that answer is not among the item's answers",
}
RULES: dict[str, str] = {**TEXT_RULES, **ANSWER_RULES, **SCENE_RULES}
VERDICTS = ("pass", "defect", "needs_scene")
#: the sense a quarter-turn item follows: its quaternions', the opposite, both (a half turn,
#: or nothing tells them apart), or none (no rigid turn)
SENSES = ("quaternion", "opposite", "either", "none")


@dataclass(frozen=True)
class Hit:
    """A rule an item breaks, with the phrases that triggered it. ``needs_scene``: the text
    cannot settle it (the rule fired on an object of which there may be several, or on a
    question the text does not answer)."""

    rule: str
    phrases: tuple[str, ...]
    detail: str = ""
    needs_scene: bool = False
    repair: tuple[str, ...] | None = None  # proposed answers, where the fix is mechanical

    def to_dict(self) -> dict[str, Any]:
        out = {"rule": self.rule, "phrases": list(self.phrases), "detail": self.detail,
               "needs_scene": self.needs_scene}
        if self.repair is not None:
            out["repair"] = list(self.repair)
        return out


@dataclass
class TurnedItem:
    """One turned viewpoint of a question, with what it is checked against."""

    situation_0: str
    situation: str
    question: str
    answers_0: Sequence[str]
    answers: Sequence[str]
    turn: float  # clockwise degrees, in the quaternion sense
    alternatives_0: Sequence[str] = ()  # viewpoint 0's alternative situations
    siblings: Mapping[int, str] = field(default_factory=dict)  # other turned viewpoints' situations
    question_0: str = ""


@dataclass
class Verdict:
    """An item's verdict, the sense its texts follow, and the hits behind it."""

    verdict: str  # one of VERDICTS
    sense: str  # one of SENSES
    hits: list[Hit]
    why: str = ""  # for needs_scene without a hit: what the text leaves open

    @property
    def rules(self) -> list[str]:
        return [h.rule for h in self.hits]




def _compatible(a: Mention, b: Mention) -> bool:
    """Whether two mentions may name one object: one head, and no two different modifiers
    ("office chair" and "chair" may; "coffee table" and "dining table" do not)."""
    return a.head == b.head and (a.modifier is None or b.modifier is None
                                 or a.modifier == b.modifier)


def _pairs(m0: Sequence[Mention], mk: Sequence[Mention]) -> list[tuple[Mention, Mention]]:
    """(viewpoint 0's mention, the turned one) of each object both place, where viewpoint 0
    places it in one direction."""
    out = []
    for b in placed_once(mk):
        cands = [a for a in m0 if _compatible(a, b)]
        if cands and all(angle_gap(c.bearing, cands[0].bearing) < 1e-6 for c in cands):
            out.append((cands[0], b))
    return out


def _several(readings: Sequence[Reading], extra: Iterable[str] = ()) -> set[str]:
    """Heads of which there may be several: rooms hold several of them, a text names several
    or "another", or one text names them as one and another as several."""
    out = set(ALWAYS_SEVERAL) | set(STRUCTURAL_LABELS) | set(GENERIC) | set(extra)
    numbers: dict[str, set[str]] = {}
    for r in readings:
        out |= r.several
        for m in r.mentions:
            numbers.setdefault(m.head, set()).add(m.number)
    return out | {h for h, n in numbers.items() if "other" in n or n >= {"", "plural"}}


@dataclass
class _Side:
    """What the situation says under one sense: the heads the turn sends where the text puts
    them, and those it does not (certain, and of names there may be several of)."""

    agree: list[str] = field(default_factory=list)
    wrong: list[tuple[Mention, Mention, float]] = field(default_factory=list)
    unsure: list[tuple[Mention, Mention, float]] = field(default_factory=list)


def _directions(pairs: Sequence[tuple[Mention, Mention]], turn: float,
                several: set[str]) -> _Side:
    side = _Side()
    for a, b in pairs:
        expected = bearing_after_turn(a.bearing, turn)
        if angle_gap(b.bearing, expected) < max(a.width, b.width) / 2:
            side.agree.append(b.head)
        elif b.head in several:
            side.unsure.append((a, b, expected))
        else:
            side.wrong.append((a, b, expected))
    return side


def _moved(a: Mention, b: Mention, expected: float) -> str:
    width = max(a.width, b.width)
    how = "did not move" if angle_gap(a.bearing, b.bearing) < width / 2 else \
        f"expected {bearing_name(expected, width)}"
    return (f"the {' '.join(b.words)}: {bearing_name(a.bearing, a.width)} -> "
            f"{bearing_name(b.bearing, b.width)} ({how})")


def _kept_faced(r0: Sequence[Reading], rk: Reading) -> list[tuple[Mention, Mention]]:
    """(viewpoint 0's, the turned) mentions of an object faced at both."""
    all0 = [m for r in r0 for m in r.mentions]
    faced0 = [a for a in all0 if a.facing and not any(
        _compatible(a, x) and angle_gap(a.bearing, x.bearing) > 1e-6 for x in all0)]
    return [(a, b) for b in rk.mentions if b.facing for a in faced0 if _compatible(a, b)][:1]


def _faced_hit(kept: Sequence[tuple[Mention, Mention]], turn: float, many: set[str]) -> Hit:
    return Hit("same_object_faced", tuple(p for a, b in kept for p in (a.phrase, b.phrase)),
               f"still facing the {' '.join(kept[0][1].words)} after a {turn:g}-degree turn",
               needs_scene=all(b.head in many for _, b in kept))


def _situation_pairs(r0: Sequence[Reading], rk: Reading,
                     kept: Sequence[tuple[Mention, Mention]]) -> list[tuple[Mention, Mention]]:
    faced = {b.head for _, b in kept}
    return _pairs([m for r in r0 for m in r.mentions if m.head not in faced],
                  [m for m in rk.mentions if m.head not in faced])


def _vertical(r0: Sequence[Reading], rk: Reading) -> list[tuple[tuple, tuple]]:
    """Objects viewpoint 0 puts above (below) the agent that the turned text puts below
    (above)."""
    before = {h: v for r in r0 for v in r.vertical for h in [v[0]]}
    return [(before[v[0]], v) for v in rk.vertical if v[0] in before and before[v[0]][1] != v[1]]


def _allocentric(r0: Sequence[Reading], rk: Reading) -> Hit | None:
    """A relation to a named thing that changed side ("to the left of the bed" -> "to the
    right of the bed"): a turn in place moves no furniture, but which side a text calls left
    may be the viewer's, so the scene decides."""
    opposite = {"left": "right", "right": "left", "front": "behind", "behind": "front"}
    before = {(r.anchor, r.side): r for x in r0 for r in x.relations if r.anchor}
    after = {(r.anchor, r.side): r for r in rk.relations if r.anchor}
    moved = [(before[(a, opposite[s])], r) for (a, s), r in after.items()
             if (a, opposite[s]) in before and (a, s) not in before
             and (a, opposite[s]) not in after]
    if not moved:
        return None
    return Hit("allocentric_changed", tuple(p for a, b in moved for p in (a.phrase, b.phrase)),
               "; ".join(f"{a.side} of the {a.anchor} -> {b.side} of the {b.anchor}"
                         for a, b in moved) + " (a turn in place moves nothing in the room)",
               needs_scene=True)


def check_text(original: str, rotated: str, turn: float, *,
               several: frozenset[str] = frozenset(),
               alternatives: Sequence[str] = ()) -> list[Hit]:
    """The situation rules an item at a turn of ``turn`` degrees clockwise breaks in that
    sense, given the situation at viewpoint 0 (``original``, with its ``alternatives``) and
    at the turned viewpoint (``rotated``). ``several``: names the scene holds more than one
    object of; a rule that fires only on them is a ``needs_scene`` hit."""
    if float(turn) % 360 == 0:
        return []
    if plain_words(original) == plain_words(rotated):
        return [Hit("text_not_turned", (rotated,), f"a {turn:g}-degree turn left the text as "
                                                    "it was")]
    r0 = [read(t) for t in (original, *alternatives)]
    rk = read(rotated)
    many = _several([*r0, rk], several)
    hits = []
    kept = _kept_faced(r0, rk)
    if kept:
        hits.append(_faced_hit(kept, turn, many))
    side = _directions(_situation_pairs(r0, rk, kept), turn, many)
    for wrong, unsure in ((side.wrong, False), (side.unsure, True)):
        if wrong:
            hits.append(Hit("direction_wrong", tuple(p for a, b, _ in wrong
                                                     for p in (a.phrase, b.phrase)),
                            "; ".join(_moved(a, b, e) for a, b, e in wrong), needs_scene=unsure))
    swapped = [(a, b) for a, b, _ in side.wrong + side.unsure
               if angle_gap(b.bearing, -a.bearing) < 45 and angle_gap(a.bearing, b.bearing) >= 45]
    if kept and swapped:
        hits.append(Hit("mirror", tuple(p for a, b in swapped for p in (a.phrase, b.phrase)),
                        f"facing the {' '.join(kept[0][1].words)} with "
                        + ", ".join(f"the {' '.join(b.words)} moved "
                                    f"{bearing_name(a.bearing, a.width)} -> "
                                    f"{bearing_name(b.bearing, b.width)}" for a, b in swapped),
                        needs_scene=all(h.needs_scene for h in hits)))
    return hits


# ---- answers ---------------------------------------------------------------------------

@dataclass
class _Answer:
    """What the answer rules say under each sense: ``supports`` / ``contradicts`` / None,
    plus hits that need no sense."""

    by_sense: dict[float, str | None]
    hits: list[Hit] = field(default_factory=list)
    free: bool = False  # the answer is confirmed whatever the sense


def _check_answer(item: TurnedItem, turns: Sequence[float], r0: list[Reading],
                  rk: Reading) -> _Answer:
    kind, what = question_kind(item.question or item.question_0, tuple(item.answers_0))
    out = _Answer({t: None for t in turns})
    if kind == "heading_free":
        if same_answer(item.answers_0, item.answers):
            out.free = True
        else:
            out.hits.append(Hit("answer_invariant", (item.question, ", ".join(item.answers)),
                                f"{what.replace('_', ' ')}: the turn cannot change the answer "
                                f"{', '.join(item.answers_0)!r} -> {', '.join(item.answers)!r}",
                                repair=tuple(item.answers_0)))
        return out
    if kind == "direction":
        before = next((d for a in item.answers_0 if (d := answer_direction(a))), None)
        if before is None:
            return out
        after = [d for a in item.answers if (d := answer_direction(a))]
        if not after:
            out.hits.append(Hit("answer_direction", (item.question, ", ".join(item.answers)),
                                f"viewpoint 0 answers a direction ({item.answers_0[0]!r}); the "
                                f"turned answer {', '.join(item.answers)!r} is none",
                                needs_scene=True))
            return out
        near_axis = False
        for t in turns:
            expected = bearing_after_turn(before[0], t)
            ok = any(angle_gap(b, expected) < max(w, before[1]) / 2 for b, w in after)
            if ok:
                out.by_sense[t] = "supports"
            elif what and before[1] >= 90 and t % 180 != 0 and all(
                    angle_gap(b, before[0]) < 1 or angle_gap(b, before[0] + 180) < 1
                    for b, _ in after):
                # two opposite directions to choose from, after a quarter turn: what was on
                # one of them is now near the axis between them
                near_axis = True
            else:
                out.by_sense[t] = "contradicts"
        if near_axis and not any(v == "supports" for v in out.by_sense.values()):
            out.hits.append(Hit("answer_direction", (item.question, ", ".join(item.answers)),
                                "a choice of two opposite directions after a quarter turn: "
                                "what was on one of them is now near the axis between them",
                                needs_scene=True))
        return out
    if kind == "at":
        bearing, width, phrase = what
        there = {m.head for m in rk.mentions
                 if angle_gap(m.bearing, bearing) < max(width, m.width) / 2
                 and m.head not in GENERIC}
        if there:
            if answer_names(item.answers, there):
                out.free = True
            else:
                out.hits.append(Hit("answer_from_situation", (phrase, ", ".join(item.answers)),
                                    f"the turned situation puts the "
                                    f"{', '.join(sorted(there))} {phrase}; the answer is "
                                    f"{', '.join(item.answers)!r}", needs_scene=True))
            return out
        for t in turns:  # what viewpoint 0 places where the turn brings the asked direction
            brought = {m.head for r in r0 for m in r.mentions if m.head not in GENERIC and
                       angle_gap(bearing_after_turn(m.bearing, t), bearing)
                       < max(width, m.width) / 2}
            if brought and answer_names(item.answers, brought):
                out.by_sense[t] = "supports"
    return out


def _copy_hits(item: TurnedItem, turn: float) -> list[Hit]:
    """A situation copied from viewpoint 0, or shared with another view of the group."""
    same = plain_words(item.situation)
    if same == plain_words(item.situation_0):
        return [Hit("text_not_turned", (item.situation,),
                    f"a {turn:g}-degree turn left the text as it was")]
    dup = [f"viewpoint 0's alternative situation {i + 1}"
           for i, a in enumerate(item.alternatives_0) if plain_words(a) == same]
    dup += [f"viewpoint {k}'s situation" for k, s in sorted(item.siblings.items())
            if plain_words(s) == same]
    return [Hit("duplicate_view", (item.situation,), "the same text as " + " and ".join(dup))] \
        if dup else []


@dataclass
class _Reading:
    """What an item's situations say under each sense: the readings, the names there may be
    several of, the object kept faced, and each sense's directions."""

    r0: list[Reading]
    rk: Reading
    many: set[str]
    kept: list[tuple[Mention, Mention]]
    sides: dict[float, _Side]


def _read_item(item: TurnedItem, turns: Sequence[float], several: frozenset[str],
               copied: bool) -> tuple[_Reading, list[Hit]]:
    """The item's situations read (a copy of viewpoint 0 is taken as a copy, not read for
    directions), and the hits that need no sense."""
    r0 = [read(t) for t in (item.situation_0, *item.alternatives_0)]
    rk = read(item.situation)
    many = _several([*r0, rk], several)
    kept = [] if copied else _kept_faced(r0, rk)
    hits = [_faced_hit(kept, turns[0], many)] if kept else []
    pairs = [] if copied else _situation_pairs(r0, rk, kept)
    sides = {t: _directions(pairs, t, many) for t in turns}
    moved = None if copied else _allocentric(r0, rk)
    if moved is not None:
        hits.append(moved)
    flipped = [] if copied else _vertical(r0, rk)
    if flipped:
        hits.append(Hit("direction_wrong", tuple(p for a, b in flipped for p in (a[2], b[2])),
                        "; ".join(f"the {b[0]}: {a[1]} -> {b[1]}" for a, b in flipped)
                        + " (a turn moves nothing up or down)",
                        needs_scene=all(b[0] in many for _, b in flipped)))
    return _Reading(r0, rk, many, kept, sides), hits


def _sense_names(turns: Sequence[float]) -> dict[float, str]:
    return {turns[0]: "quaternion"} | ({turns[1]: "opposite"} if len(turns) > 1 else {})


def _no_sense_hits(item: TurnedItem, turns: Sequence[float], rd: _Reading, answer: _Answer,
                   hits: Sequence[Hit]) -> list[Hit]:
    """Why no sense fits: the situation wrong in every sense, the answer wrong in every
    sense, or the two following different senses."""
    out = []
    sides = rd.sides
    sit_ok = [t for t in turns if not sides[t].wrong]
    ans_ok = [t for t in turns if answer.by_sense[t] != "contradicts"]
    if not sit_ok:
        wrong = sides[turns[0]].wrong
        both = " in either sense" if len(turns) > 1 else ""
        out.append(Hit("direction_wrong", tuple(p for a, b, _ in wrong
                                                for p in (a.phrase, b.phrase)),
                       "; ".join(_moved(a, b, e) for a, b, e in wrong)
                       + f" (no {turns[0]:g}-degree turn{both} puts it there)"))
        swapped = [(a, b) for a, b, _ in wrong
                   if angle_gap(b.bearing, -a.bearing) < 45
                   and angle_gap(a.bearing, b.bearing) >= 45]
        if rd.kept and swapped:
            out.append(Hit("mirror", tuple(p for a, b in swapped for p in (a.phrase, b.phrase)),
                           "the same object faced with sides swapped"))
    if not ans_ok:
        out.append(_direction_hit(item, turns, sit_ok))
    elif sit_ok and set(sit_ok) != set(ans_ok) and not any(
            h.rule == "direction_wrong" for h in [*hits, *out]):
        names = _sense_names(turns)
        out.append(Hit("sense_mismatch", (item.situation, ", ".join(item.answers)),
                       f"the situation follows the {names[sit_ok[0]]} sense, the answer "
                       f"{', '.join(item.answers)!r} the {names[ans_ok[0]]} sense"))
    return out


def _sense(turns: Sequence[float], viable: Sequence[float], rd: _Reading,
           answer: _Answer) -> str:
    """The sense the texts follow, among the viable ones: one they support."""
    supported = [t for t in viable if rd.sides[t].agree or answer.by_sense[t] == "supports"]
    if len(turns) == 1 or len(supported) != 1 and len(viable) > 1:
        return "either"
    return _sense_names(turns)[supported[0] if supported else viable[0]]


def verdict_for(item: TurnedItem, *, several: frozenset[str] = frozenset(),
                scene_hits: Sequence[Hit] = (), scene_confirms: bool = False) -> Verdict:
    """The verdict on one turned item from its texts (and, given them, the scene rules' hits
    and whether the scene confirms its answer)."""
    turn = float(item.turn) % 360
    if not str(item.situation).strip() or not [a for a in item.answers if str(a).strip()]:
        what = "situation" if not str(item.situation).strip() else "answers"
        return Verdict("defect", "none", [Hit("empty_text", (what,), f"the {what} is empty")])
    turns = [turn] if turn % 180 == 0 else [turn, (-turn) % 360]
    hits = _copy_hits(item, turn)
    rd, more = _read_item(item, turns, several,
                          any(h.rule == "text_not_turned" for h in hits))
    hits += more
    answer = _check_answer(item, turns, rd.r0, rd.rk)
    hits += answer.hits
    # the senses in which neither the situation nor the answer is certainly wrong
    viable = [t for t in turns if not rd.sides[t].wrong and answer.by_sense[t] != "contradicts"]
    if not viable:
        return Verdict("defect", "none", hits + _no_sense_hits(item, turns, rd, answer, hits)
                       + list(scene_hits))
    sense = _sense(turns, viable, rd, answer)
    unsure = rd.sides[viable[0]].unsure
    if unsure:
        hits.append(Hit("direction_wrong", tuple(p for a, b, _ in unsure
                                                 for p in (a.phrase, b.phrase)),
                        "; ".join(_moved(a, b, e) for a, b, e in unsure)
                        + " (there may be several of it)", needs_scene=True))
    hits += list(scene_hits)
    if any(not h.needs_scene for h in hits):
        return Verdict("defect", sense, hits)
    confirmed = answer.free or any(answer.by_sense[t] == "supports" for t in viable) \
        or scene_confirms
    if scene_confirms:
        hits = [h for h in hits if not h.needs_scene]
    if hits:
        return Verdict("needs_scene", sense, hits)
    if not confirmed:
        return Verdict("needs_scene", sense, hits, "the answer rests on where things are that "
                                                   "the texts do not say")
    return Verdict("pass", sense, hits)


def _direction_hit(item: TurnedItem, turns: Sequence[float], sit_ok: Sequence[float]) -> Hit:
    before = next(a for a in item.answers_0 if answer_direction(a))
    expect = {t: turned_answer(before, t) for t in turns}
    if sit_ok and len(sit_ok) < len(turns):
        said = f"expected {expect[sit_ok[0]]!r} in the sense the situation follows"
        repair = expect[sit_ok[0]]
    else:
        said = "expected " + " or ".join(repr(expect[t]) for t in turns)
        repair = expect[turns[0]]  # the quaternions' sense, when nothing says otherwise
    return Hit("answer_direction", (item.question, ", ".join(item.answers)),
               f"{before!r} at viewpoint 0 -> {', '.join(item.answers)!r}; {said}",
               repair=(repair,) if repair else None)


def turn_of(yaw0: float, yaw: float, nominal: int, atol: float = 1.0) -> tuple[float, str]:
    """The clockwise turn (degrees) from viewpoint 0's yaw to a viewpoint's yaw (radians),
    and where it comes from: ``quaternion`` when the item's quaternions turned, else the
    dataset's ``convention`` (a viewpoint ``k`` turned ``k`` degrees clockwise)."""
    turn = float(wrap_degrees(np.degrees(yaw0 - yaw)))
    if abs(turn) <= atol:
        return float(nominal % 360), "convention"
    return float(round(turn) % 360), "quaternion"


# ---- the scene -------------------------------------------------------------------------
