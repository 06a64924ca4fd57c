"""The checker's answer rules: is a turned item's answer the one its turn gives? A direction
answer turned (in each sense), a heading-free answer kept, what the turned situation puts in
an asked direction, a thing asked for in a direction that the turn moved, and the same
question asked at viewpoint 0's pose of the direction the turn brings (the other SQA3D
questions at the pose). :func:`check_answer` says, for each sense of the turn, whether the
answer is supported or contradicted; :func:`hf_real3d.real3dqa.checker.text.verdict_for` weighs it
with the situation rules.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from hf_real3d.answers import normalize_answer
from hf_real3d.english.asks import (
    answer_direction,
    answer_names,
    answer_thing,
    asked_at_pose,
    named_object_question,
    question_kind,
    said_at_pose,
    same_answer,
    thing_asked_at,
    turned_answer,
)
from hf_real3d.english.mentions import GENERIC, Reading, bearing_name, normal_text
from hf_real3d.english.turn import turn_text
from hf_real3d.geometry import angle_gap, bearing_after_turn
from hf_real3d.real3dqa.checker.rules import Hit, TurnedItem

__all__ = ["AnswerFindings", "check_answer", "direction_hit", "pose_said"]


def pose_said(qid: Any, question: str, answers: Sequence[str]) -> str:
    """How a verdict names a question asked at the pose that it rests on."""
    return f"question {qid} at this pose: {question!r} -> {answers[0] if answers else ''!r}"


@dataclass
class AnswerFindings:
    """What the answer rules say under each sense: ``supports`` / ``contradicts`` / None,
    plus hits that need no sense."""

    by_sense: dict[float, str | None]
    hits: list[Hit] = field(default_factory=list)
    free: bool = False  # the answer is confirmed whatever the sense
    evidence: dict[float, list[str]] = field(default_factory=dict)  # pose questions, by sense
    against: dict[float, Hit] = field(default_factory=dict)  # why a sense is contradicted


def _pose_answer(item: TurnedItem, turns: Sequence[float], out: AnswerFindings) -> None:
    """The same question asked at viewpoint 0's pose of the direction the turn brings to the
    asked one ("what is behind me?" at a half turn: "what is in front of me?" at the pose)
    gives the answer, in each sense."""
    for t in turns:
        same = asked_at_pose(item.question or item.question_0, t, item.pose_questions)
        if same is None:
            continue
        qid, q, a = same
        said = pose_said(qid, q, a)
        if same_answer(a, item.answers):
            out.by_sense[t] = "supports"
            out.evidence[t] = [said]
        else:
            out.by_sense[t] = "contradicts"
            out.against[t] = Hit("answer_pose", (said, ", ".join(item.answers)),
                                 f"asked at viewpoint 0's pose of the direction a {t:g}-degree "
                                 f"turn brings, the same question is answered {a[0]!r}; the "
                                 f"turned answer is {', '.join(item.answers)!r}",
                                 repair=tuple(a[:1]))


def _asked_there_alike(item: TurnedItem, turns: Sequence[float]) -> bool:
    """Whether the same question, asked at viewpoint 0's pose of the direction each turn
    brings, is answered with viewpoint 0's answer too ("the first object I run into on my
    left?" and "... on my right?" both "armchair"): then a kept answer is no defect."""
    got = [asked_at_pose(item.question or item.question_0, t, item.pose_questions)
           for t in turns]
    return all(g is not None and same_answer(g[2], item.answers_0) for g in got)


def _kept_answer(item: TurnedItem, turns: Sequence[float], many: set[str],
                 out: AnswerFindings) -> None:
    """A question asking which thing is in a direction, answered at the turn with viewpoint
    0's thing: the turn moved that thing out of the asked direction."""
    at = thing_asked_at(item.question or item.question_0)
    thing = answer_thing(item.answers_0[0]) if item.answers_0 else None
    if at is None or thing is None or not same_answer(item.answers_0, item.answers) or \
            _of_one(item, many) or _asked_there_alike(item, turns):
        return
    hit = Hit("answer_kept", (item.question, ", ".join(item.answers)),
              f"viewpoint 0 answers {item.answers_0[0]!r} {at[2]}; after a {turns[0]:g}-degree "
              f"turn it is elsewhere, and the turned answer is {', '.join(item.answers)!r}",
              needs_scene=thing[-1] in many or normalize_answer(item.answers_0[0]).split()[-1]
              != thing[-1])  # "pictures": there are several
    if hit.needs_scene:
        out.hits.append(hit)
        return
    for t in turns:
        out.by_sense[t] = "contradicts"
        out.against[t] = hit


# a question asking what is beside a thing, or which of two is nearer: its answer need not
# stand in the asked direction
_BESIDE = re.compile(r"\b(?:closer|nearer|next\s+to|beside|near|by\s+the|between\s+the\s+\w+"
                     r"(?:\s+\w+)?\s+and|(?:left|right)\s+(?:side\s+)?of\s+the|(?:behind|"
                     r"in\s+front\s+of)\s+the)\b")


def _answer_placed(item: TurnedItem, turns: Sequence[float], r0: list[Reading], rk: Reading,
                   many: set[str], out: AnswerFindings) -> None:
    """Round 3: a question asking which thing is in a direction, whose answer names a thing
    (of which there is one) that the texts place: the turned situation where it stands, or
    viewpoint 0's texts and the questions at its pose where the turn sends it. In the asked
    direction it supports the answer (where the question asks just the direction), clearly
    elsewhere (a quarter turn or more away) everywhere it is placed, it contradicts it."""
    question = item.question or item.question_0
    at = thing_asked_at(question)
    thing = answer_thing(item.answers[0]) if item.answers else None
    if at is None or thing is None or thing[-1] in many or _BESIDE.search(question.lower()):
        return
    bearing, width, phrase = at
    # round 5: "what is on top of the shelf behind me?": the thing placed behind me need not
    # be on the shelf, so placing it there supports nothing; placing it elsewhere still
    # contradicts
    on_object = question_kind(question)[0] != "at"
    here = [(m, m.bearing) for m in rk.mentions if m.head == thing[-1]]
    for t in turns:
        placed = here + [(m, bearing_after_turn(m.bearing, t)) for r in r0
                         for m in r.mentions if m.head == thing[-1]]
        if not placed:
            continue
        fits = [m for m, b in placed if angle_gap(b, bearing) < max(width, m.width) / 2]
        if fits and not on_object:
            out.by_sense[t] = "supports"
            out.evidence[t] = [m.phrase for m in fits]
        elif all(angle_gap(b, bearing) >= 90 - 1e-6 for _, b in placed):
            out.by_sense[t] = "contradicts"
            out.against[t] = Hit(
                "answer_placed", (placed[0][0].phrase, ", ".join(item.answers)),
                f"the question asks what is {phrase}; after a {t:g}-degree turn the texts put "
                f"the {' '.join(thing)} {bearing_name(placed[0][1], placed[0][0].width)}")


_IS_THERE = re.compile(r"^\s*(?:is|are)\s+there\b")


def _there_answer(item: TurnedItem, turns: Sequence[float], r0: list[Reading], rk: Reading,
                  many: set[str], out: AnswerFindings) -> None:
    """Round 3: "is there a TV to my right?" answered yes or no, where the texts put the TV
    there after the turn (the turned situation, or viewpoint 0's texts, its own question and
    answer, and the questions at its pose, turned): a "yes" is supported, a "no"
    contradicted. A TV they put elsewhere says nothing: "a TV" may be one of several (the
    synthetic rooms' recall test found a "no" passed so)."""
    said = normalize_answer(item.answers[0]).split()[:1] if item.answers else []
    question = item.question or item.question_0
    if said not in (["yes"], ["no"]) or not _IS_THERE.match(question.lower()):
        return
    asked = said_at_pose(question, ("yes",), question)
    if len(asked) != 1 or asked[0].head in many or asked[0].number or " any " in question:
        return  # "any pictures": there may be several
    x = asked[0]
    before = [m for r in r0 for m in r.mentions]
    before += said_at_pose(item.question_0 or question, tuple(item.answers_0[:1]), "viewpoint 0")
    for t in turns:
        placed = [(m, m.bearing) for m in rk.mentions if m.head == x.head]
        placed += [(m, bearing_after_turn(m.bearing, t)) for m in before if m.head == x.head]
        there = [m for m, b in placed if angle_gap(b, x.bearing) < max(x.width, m.width) / 2]
        if there and said == ["yes"]:
            out.by_sense[t] = "supports"
            out.evidence[t] = [m.phrase for m in there]
        elif there:
            out.by_sense[t] = "contradicts"
            out.against[t] = Hit("answer_there", (there[0].phrase, item.answers[0]),
                                 f"after a {t:g}-degree turn the texts put the "
                                 f"{' '.join(x.words)} where the question asks; the answer "
                                 f"is {item.answers[0]!r}")


def _at_answer(item: TurnedItem, turns: Sequence[float], what: tuple, r0: list[Reading],
               rk: Reading, many: set[str], out: AnswerFindings) -> None:
    """What is in an egocentric direction: the object the turned situation puts there, or
    the one viewpoint 0's texts put where the turn brings the asked direction."""
    bearing, width, phrase = what
    there = {m.head for m in rk.mentions
             if angle_gap(m.bearing, bearing) < max(width, m.width) / 2
             and m.head not in GENERIC}
    if there:
        named = {h for h in there if answer_names(item.answers, [h])}
        if named:
            # a wall, a window, or a name the texts give several of: which one is meant
            # is the scene's to say
            out.free = not named <= many
        else:
            out.hits.append(Hit("answer_from_situation", (phrase, ", ".join(item.answers)),
                                f"the turned situation puts the "
                                f"{', '.join(sorted(there))} {phrase}; the answer is "
                                f"{', '.join(item.answers)!r}", needs_scene=True))
        return
    for t in turns:  # what viewpoint 0 places where the turn brings the asked direction
        brought = [m for r in r0 for m in r.mentions if m.head not in GENERIC and
                   angle_gap(bearing_after_turn(m.bearing, t), bearing)
                   < max(width, m.width) / 2]
        said = [m for m in brought if answer_names(item.answers, [m.head])]
        if said:
            out.by_sense[t] = "supports"
            out.evidence[t] = [m.phrase for m in said]


def _turned_question(item: TurnedItem, turns: Sequence[float], out: AnswerFindings) -> bool:
    """A question said again from the turned view, its egocentric phrases turned with the agent
    ("what color is the shelf to my left?" -> "... the shelf behind me?" after a right turn):
    it asks of the same things, so the answer is viewpoint 0's; it supports the senses whose
    turn gives the question, contradicts the others, and a changed answer is
    ``answer_invariant``. Whether the question is such a one."""
    if not item.question_0 or normal_text(item.question) == normal_text(item.question_0):
        return False
    said = [t for t in turns if (q := turn_text(item.question_0, t, question=True)) is not None
            and normal_text(q) == normal_text(item.question)]
    if not said:
        return False
    if not same_answer(item.answers_0, item.answers):
        out.hits.append(Hit("answer_invariant", (item.question, ", ".join(item.answers)),
                            "the question is viewpoint 0's said from the turned view, so it asks "
                            f"of the same things: {', '.join(item.answers_0)!r} -> "
                            f"{', '.join(item.answers)!r}", repair=tuple(item.answers_0)))
        return True
    for t in turns:
        out.by_sense[t] = "supports" if t in said else "contradicts"
    out.evidence.update({t: [f"the question turned with the agent: {item.question_0!r}"]
                         for t in said})
    return True


def _of_one(item: TurnedItem, many: set[str]) -> bool:
    """Whether the question asks something heading-free of objects an egocentric phrase
    points at, each of a name no text of the group or the scene names several of ("what is on
    the counter to my left?" of the scene's one counter): the phrase only points at it, so the
    answer is viewpoint 0's after any turn. Not without the scene's SQA3D texts."""
    got = named_object_question(item.question or item.question_0)
    return item.scene_several is not None and got is not None and \
        not set(got[1]) & (many | item.scene_several)


def _of_one_object(item: TurnedItem, many: set[str], out: AnswerFindings) -> bool:
    """Round 5: a heading-free question about objects an egocentric phrase points at ("what
    color is the desk in front of me?"), each of a name no text of the group or the scene
    names several of, whose answer changed (``answer_of_object``). Whether it fired. A kept
    answer is not a defect by ``answer_kept`` either (the phrase names the object). Without
    the scene's SQA3D texts (``item.scene_several`` None) it does not fire."""
    if not _of_one(item, many) or same_answer(item.answers_0, item.answers):
        return False
    got = named_object_question(item.question or item.question_0)
    out.hits.append(Hit("answer_of_object", (item.question, ", ".join(item.answers)),
                        f"{got[0].replace('_', ' ')}: of the {' and the '.join(got[1])}, of "
                        f"which the scene's texts name one, so the turn cannot change the answer "
                        f"{', '.join(item.answers_0)!r} -> {', '.join(item.answers)!r}",
                        repair=tuple(item.answers_0)))
    return True


def check_answer(item: TurnedItem, turns: Sequence[float], r0: list[Reading],
                 rk: Reading, many: set[str]) -> AnswerFindings:
    """What the answer rules say of ``item`` under each of ``turns`` (its senses), given
    viewpoint 0's readings ``r0`` (with what the pose's questions say), the turned reading
    ``rk`` and the names there may be several of."""
    kind, what = question_kind(item.question or item.question_0, tuple(item.answers_0))
    out = AnswerFindings({t: None for t in turns})
    if kind != "direction" and _turned_question(item, turns, out):
        return out
    if kind != "heading_free" and _of_one_object(item, many, out):
        return out
    if kind == "heading_free":
        if same_answer(item.answers_0, item.answers):
            out.free = True
        else:
            out.hits.append(Hit("answer_invariant", (item.question, ", ".join(item.answers)),
                                f"{what.replace('_', ' ')}: the turn cannot change the answer "
                                f"{', '.join(item.answers_0)!r} -> {', '.join(item.answers)!r}",
                                repair=tuple(item.answers_0)))
        return out
    _kept_answer(item, turns, many, out)
    if out.hits or any(out.by_sense.values()):
        return out
    _pose_answer(item, turns, out)
    if any(out.by_sense.values()):
        return out
    _answer_placed(item, turns, r0, rk, many, out)
    _there_answer(item, turns, r0, rk, many, out)
    if any(out.by_sense.values()):
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
        _at_answer(item, turns, what, r0, rk, many, out)
    return out


def direction_hit(item: TurnedItem, turns: Sequence[float], sit_ok: Sequence[float]) -> Hit:
    """The direction answer's hit, with the answer the turn gives as its repair."""
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
