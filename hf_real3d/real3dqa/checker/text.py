"""Is a rotated item consistent with its turn? Named rules over its texts and answers, and,
given the scene, over its geometry (Real-3DQA App. D.2); and the verdict they give.

A rotated item says where things are after the agent turned in place. The English reader
(:mod:`hf_real3d.english.mentions`) reads each text into objects with an egocentric bearing;
the one turn rule (:func:`hf_real3d.geometry.bearing_after_turn`) says where the turn sends
each. The release's quarter-turn texts follow the quaternions' sense and the opposite sense
about equally, so each quarter-turn item is read under both **senses**: ``quaternion`` (the
turn its pose makes, or viewpoint k turned k degrees clockwise where the pose was left
unturned) and ``opposite``. An item whose situation and answer agree on one rigid turn of the
right size passes in that sense; one whose situation follows one sense and whose answer the
other is a defect.

The rules over the situation live here, those over the answers in
:mod:`hf_real3d.real3dqa.checker.answers`, those over the scene in
:mod:`hf_real3d.real3dqa.checker.scene`; their names and meanings, with the hit, item and
verdict types, in :mod:`hf_real3d.real3dqa.checker.rules` (:data:`RULES`: all of them).
Each hit is a defect, or says the
text cannot decide (``needs_scene``: objects of one name, a left-or-right answer near an
axis, an answer that rests on where unnamed things are). :func:`verdict_for` gives each
item its :class:`~hf_real3d.real3dqa.checker.rules.Verdict`: ``pass``, ``defect`` or
``needs_scene``, with the sense it follows. The English the rules read and write is in
:mod:`hf_real3d.english.mentions` and :mod:`hf_real3d.english.asks`. Everything here is
pure: :mod:`hf_real3d.real3dqa.checker.check` runs them over a set.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np

from hf_real3d.english.asks import said_at_pose
from hf_real3d.english.mentions import (
    ALWAYS_SEVERAL,
    GENERIC,
    Mention,
    Reading,
    bearing_name,
    normal_text,
    plain_words,
    read,
)
from hf_real3d.geometry import angle_gap, bearing_after_turn, wrap_degrees
from hf_real3d.real3dqa.checker.answers import (
    AnswerFindings,
    check_answer,
    direction_hit,
    pose_said,
)
from hf_real3d.real3dqa.checker.rules import (
    ANSWER_RULES,
    SCENE_RULES,
    TEXT_RULES,
    Hit,
    TurnedItem,
    Verdict,
)
from hf_real3d.scene import STRUCTURAL_LABELS

__all__ = ["RULES", "check_text", "placed_once", "turn_of", "verdict_for"]

RULES: dict[str, str] = {**TEXT_RULES, **ANSWER_RULES, **SCENE_RULES}


def placed_once(found: list[Mention]) -> list[Mention]:
    """One mention per object a text places once: a head placed in two directions is left
    out, unless modifiers tell its mentions apart."""
    by: dict[str, list[Mention]] = {}
    for m in found:
        by.setdefault(m.head, []).append(m)
    out = []
    for ms in by.values():
        if all(angle_gap(ms[0].bearing, x.bearing) < 1e-6 for x in ms):
            out.append(next((m for m in ms if m.modifier), ms[0]))
            continue
        mods: dict[str | None, list[Mention]] = {}
        for m in ms:
            mods.setdefault(m.modifier, []).append(m)
        if None in mods:
            continue
        out += [g[0] for g in mods.values()
                if all(angle_gap(g[0].bearing, x.bearing) < 1e-6 for x in g)]
    return out


def _compatible(a: Mention, b: Mention) -> bool:
    """Whether two mentions may name one object: one head, and no two different modifiers
    ("office chair" and "chair" may; "coffee table" and "dining table" do not)."""
    return a.head == b.head and (a.modifier is None or b.modifier is None
                                 or a.modifier == b.modifier)


def _pairs(m0: Sequence[Mention], mk: Sequence[Mention]
           ) -> list[tuple[list[Mention], Mention]]:
    """(viewpoint 0's mentions, the turned one) of each object both place: one direction
    where viewpoint 0 places it in one, several where its texts place it in several."""
    out = []
    for b in placed_once(mk):
        cands = [a for a in m0 if _compatible(a, b)]
        if cands:
            one = all(angle_gap(c.bearing, cands[0].bearing) < 1e-6 for c in cands)
            out.append((cands[:1] if one else cands, b))
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

    agree: list[Mention] = field(default_factory=list)  # viewpoint 0's mentions
    wrong: list[tuple[Mention, Mention, float]] = field(default_factory=list)
    unsure: list[tuple[Mention, Mention, float]] = field(default_factory=list)


def _directions(pairs: Sequence[tuple[list[Mention], Mention]], turn: float,
                several: set[str]) -> _Side:
    """Each object's turned direction against where the turn sends viewpoint 0's: agreeing,
    certainly elsewhere, or elsewhere where there may be several of it (or viewpoint 0's
    texts place it in several directions, none of which the turn sends there)."""
    side = _Side()
    for cands, b in pairs:
        turned = [(a, bearing_after_turn(a.bearing, turn)) for a in cands]
        fits = [a for a, e in turned if angle_gap(b.bearing, e) < max(a.width, b.width) / 2]
        if fits:
            side.agree += fits if len(cands) == 1 else []
        elif b.head in several or not _one_place(cands):
            side.unsure.append((*turned[0][:1], b, turned[0][1]))
        else:
            side.wrong.append((cands[0], b, turned[0][1]))
    return side


def _one_place(cands: Sequence[Mention]) -> bool:
    """Whether viewpoint 0's texts place an object in one direction: once, or several times
    in overlapping directions ("to my right", "at my 2 o'clock")."""
    return all(angle_gap(a.bearing, b.bearing) < (a.width + b.width) / 2
               for i, a in enumerate(cands) for b in cands[i + 1:])


def _moved(a: Mention, b: Mention, expected: float) -> str:
    width = max(a.width, b.width)
    how = "did not move" if angle_gap(a.bearing, b.bearing) < width / 2 else \
        f"expected {bearing_name(expected, width)}"
    return (f"the {' '.join(b.words)}: {bearing_name(a.bearing, a.width)} -> "
            f"{bearing_name(b.bearing, b.width)} ({how})")


def _kept_faced(r0: Sequence[Reading], rk: Reading
                ) -> tuple[list[tuple[Mention, Mention]], bool]:
    """(viewpoint 0's, the turned) mentions of an object faced at both, and whether viewpoint
    0 certainly faces that one (no text of it places one of that name elsewhere)."""
    all0 = [m for r in r0 for m in r.mentions]
    kept = [(a, b) for b in rk.mentions if b.facing for a in all0
            if a.facing and _compatible(a, b)][:1]
    sure = bool(kept) and not any(_compatible(kept[0][0], x)
                                  and angle_gap(kept[0][0].bearing, x.bearing) > 1e-6
                                  for x in all0)
    return kept, sure


def _faced_hit(kept: Sequence[tuple[Mention, Mention]], sure: bool, turn: float,
               many: set[str]) -> Hit:
    return Hit("same_object_faced", tuple(p for a, b in kept for p in (a.phrase, b.phrase)),
               f"still facing the {' '.join(kept[0][1].words)} after a {turn:g}-degree turn"
               + ("" if sure else " (viewpoint 0's texts place one of that name elsewhere too)"),
               needs_scene=not sure or all(b.head in many for _, b in kept))


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
    # round 5: a swapped relation is a defect (the reading rules: allocentric phrases do not
    # move), except front and behind of the agent itself ("I am standing in front of the
    # desk"), which some texts mean as the desk in front of me: the scene's to say
    return Hit("allocentric_changed", tuple(p for a, b in moved for p in (a.phrase, b.phrase)),
               "; ".join(f"{a.side} of the {a.anchor} -> {b.side} of the {b.anchor}"
                         for a, b in moved) + " (a turn in place moves nothing in the room)",
               needs_scene=not all({a.side, b.side} == {"left", "right"}
                                   or not (a.agent or b.agent) for a, b in moved))


# round 5 (issue 55): facing, looking at, watching or reading a thing, in one clause with
# "behind me": one pose cannot do both ("I am facing the desk behind me")
_FACES_BEHIND = re.compile(
    r"\b(?:(?:fac(?:e|es|ing)|look(?:s|ing)?\s+(?:at|out|into)|star(?:e|es|ing)\s+at|"
    r"watch(?:es|ing)?|read(?:s|ing)?|typ(?:e|es|ing)|programm(?:e|es|ing))\b(?!\s+away)"
    r"(?:(?![,.;!?]|\b(?:and|while|with|but|then|before|after|so)\b)[^,.;!?]){0,40}?|"
    # acting on the thing itself: its object follows, with no other verb or tool between
    r"(?:eras(?:e|es|ing)|wip(?:e|es|ing)|filing|writ(?:e|es|ing)\s+on|draw(?:s|ing)?\s+on|"
    r"paint(?:s|ing)?|(?:picture|photo)\s+of)\b"
    r"(?:(?![,.;!?]|\b(?:and|while|with|but|then|before|after|so|using|off|from|to)\b)"
    r"[^,.;!?]){0,40}?)\bbehind\s+me\b")
_NOT_NOW = re.compile(r"\b(?:back|backside|finished|done|after|was|were|had|been)\s+(?:\w+\s+)?$")


def _faces_behind(item: TurnedItem) -> Hit | None:
    """Round 5: the turned situation has the agent face, look at, watch, read, write or draw
    on, wipe, erase, file into or take a picture of something it puts behind the agent in the
    same clause ("facing the desk behind me"), where viewpoint 0's texts never speak so. "My
    back facing the wall behind me", "facing away from ..." and past actions ("finished
    looking at ...") do not count."""

    def said(text: str) -> str | None:
        low = normal_text(text)
        m = next((m for m in _FACES_BEHIND.finditer(low)
                  if not _NOT_NOW.search(low[:m.start()])), None)
        # the text's own words where normalising kept its length
        return None if m is None else text[m.start():m.end()] if len(text) == len(low) \
            else m.group(0)

    phrase = said(item.situation)
    if phrase is None or any(said(t) for t in (item.situation_0, *item.alternatives_0)):
        return None
    return Hit("faces_behind", (phrase,), f"{phrase!r}: the agent cannot face what is behind it")


def _place(r0: Sequence[Reading], rk: Reading) -> Hit | None:
    """The agent at another part of a thing viewpoint 0's texts place it at."""
    before: dict[str, set[str]] = {}
    phrase: dict[str, str] = {}
    for r in r0:
        for anchor, part, said in r.places:
            before.setdefault(anchor, set()).add(part)
            phrase.setdefault(anchor, said)
    moved = [(phrase[a], said, before[a], part) for a, part, said in rk.places
             if a in before and part not in before[a]]
    if not moved:
        return None
    # round 5: the opposite part ("the left side" -> "the right side", "the foot" -> "the
    # head") is another place; two names of parts may be one place (needs the scene)
    return Hit("place_changed", tuple(p for pair in moved for p in pair[:2]),
               "; ".join(f"{a!r} -> {b!r}" for a, b, _, _ in moved)
               + " (a turn in place does not move the agent)",
               needs_scene=not all(any(_opposite_part(x, part) for x in parts)
                                   for _, _, parts, part in moved))


_OPPOSITE_WORDS = {"left": "right", "right": "left", "leftmost": "rightmost",
                   "rightmost": "leftmost", "head": "foot", "foot": "head", "front": "back",
                   "back": "front", "near": "far", "far": "near"}


def _opposite_part(a: str, b: str) -> bool:
    """Whether two parts of a thing are opposite ones ("left side", "right side")."""
    wa, wb = a.split(), b.split()
    return len(wa) == len(wb) and bool(wa) and _OPPOSITE_WORDS.get(wa[0]) == wb[0] \
        and wa[1:] == wb[1:]


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
    kept, sure = _kept_faced(r0, rk)
    if kept:
        hits.append(_faced_hit(kept, sure, turn, many))
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


def _copy_hits(item: TurnedItem, turn: float) -> list[Hit]:
    """A situation copied from viewpoint 0, or shared with another view of the group."""
    same = plain_words(item.situation)
    if same == plain_words(item.situation_0):
        return [Hit("text_not_turned", (item.situation,),
                    f"a {turn:g}-degree turn left the text as it was")]
    dup = [f"viewpoint 0's alternative situation {i + 1}"
           for i, a in enumerate(item.alternatives_0) if plain_words(a) == same]
    return [Hit("duplicate_view", (item.situation,), "the same text as " + " and ".join(dup))] \
        if dup else []


def _fits(rd: _Reading, turns: Sequence[float]) -> str | None:
    """Whether the turned situation's directions follow a turn of ``turns`` (its senses):
    ``"fits"`` (some sense puts something where the text does, and nothing elsewhere),
    ``"wrong"`` (every sense puts something elsewhere), or None (the text cannot tell)."""
    pairs = _situation_pairs(rd.r0, rd.rk, [])
    sides = [_directions(pairs, t, rd.many) for t in turns]
    if any(x.agree and not x.wrong and not x.unsure for x in sides):
        return "fits"
    return "wrong" if all(x.wrong for x in sides) else None


def _shared_hit(item: TurnedItem, turns: Sequence[float], rd: _Reading) -> Hit | None:
    """Another turned viewpoint with the same situation: the copy is the one whose turn the
    text does not follow. Only the copy is a defect; where the turn cannot tell which, both
    need the scene (the duplicate named in the hit)."""
    same = plain_words(item.situation)
    views = [k for k, s in sorted(item.siblings.items()) if plain_words(s) == same]
    if not views:
        return None
    mine = _fits(rd, turns)  # each viewpoint's turn in either sense
    theirs = [_fits(rd, [k % 360] if k % 180 == 0 else [k % 360, -k % 360]) for k in views]
    said = "the same text as " + " and ".join(f"viewpoint {k}'s situation" for k in views)
    if mine == "fits" and "fits" not in theirs:
        return None  # the text follows this viewpoint's turn: the other is the copy
    if mine == "wrong" or (mine is None and "fits" in theirs):
        # round 5: a text that follows the other viewpoint's turn and not clearly this one's
        # is the copy too
        return Hit("duplicate_view", (item.situation,), said + "; it does not follow this "
                   "viewpoint's turn" + ("" if mine == "wrong" else " (it follows the other's)")
                   + ": this is the copy")
    return Hit("duplicate_view", (item.situation,), said + "; the texts cannot tell which "
               "viewpoint it belongs to", needs_scene=True)


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
    r0.append(Reading(mentions=[m for qid, q, a in item.pose_questions
                                for m in said_at_pose(q, tuple(a), pose_said(qid, q, a))]))
    rk = read(item.situation)
    many = _several([*r0, rk], several)
    kept, sure = ([], False) if copied else _kept_faced(r0, rk)
    hits = [_faced_hit(kept, sure, turns[0], many)] if kept else []
    pairs = [] if copied else _situation_pairs(r0, rk, kept)
    sides = {t: _directions(pairs, t, many) for t in turns}
    for found in ([] if copied else [_allocentric(r0, rk), _place(r0, rk),
                                     _faces_behind(item)]):
        if found is not None:
            hits.append(found)
    flipped = [] if copied else _vertical(r0, rk)
    if flipped:
        hits.append(Hit("direction_wrong", tuple(p for a, b in flipped for p in (a[2], b[2])),
                        "; ".join(f"the {b[0]}: {a[1]} -> {b[1]}" for a, b in flipped)
                        + " (a turn moves nothing up or down)",
                        needs_scene=all(b[0] in many for _, b in flipped)))
    return _Reading(r0, rk, many, kept, sides), hits


def _sense_names(turns: Sequence[float]) -> dict[float, str]:
    return {turns[0]: "quaternion"} | ({turns[1]: "opposite"} if len(turns) > 1 else {})


def _no_sense_hits(item: TurnedItem, turns: Sequence[float], rd: _Reading, answer: AnswerFindings,
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
        out.append(next(iter(answer.against.values())) if answer.against
                   else direction_hit(item, turns, sit_ok))
    elif sit_ok and set(sit_ok) != set(ans_ok) and not any(
            h.rule == "direction_wrong" for h in [*hits, *out]):
        names = _sense_names(turns)
        out.append(Hit("sense_mismatch", (item.situation, ", ".join(item.answers)),
                       f"the situation follows the {names[sit_ok[0]]} sense, the answer "
                       f"{', '.join(item.answers)!r} the {names[ans_ok[0]]} sense"))
    return out


def _sense(turns: Sequence[float], viable: Sequence[float], rd: _Reading,
           answer: AnswerFindings) -> str:
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
    shared = None if hits else _shared_hit(item, turns, rd)
    hits += [shared] if shared is not None else []
    hits += more
    answer = check_answer(item, turns, rd.r0, rd.rk, rd.many)
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
    torn = [b for cands, b in _situation_pairs(rd.r0, rd.rk, rd.kept)
            if b.head not in rd.many and not _one_place(cands)]
    if torn:
        return Verdict("needs_scene", sense, hits, f"viewpoint 0's texts place the "
                       f"{' '.join(torn[0].words)} in directions that disagree")
    if not any(rd.sides[t].agree for t in viable):
        # round 5: an answer confirmed by a situation that confirms nothing of the turn
        return Verdict("needs_scene", sense, hits, "the turned situation places nothing that "
                       "viewpoint 0's texts place too, so nothing in it confirms the turn")
    return Verdict("pass", sense, hits, evidence=_evidence(item, viable, rd, answer))


def _evidence(item: TurnedItem, viable: Sequence[float], rd: _Reading,
              answer: AnswerFindings) -> tuple[str, ...]:
    """The questions at the pose that support the item in the senses it may follow."""
    pose = {pose_said(*x) for x in item.pose_questions}
    said = [a.phrase for t in viable for a in rd.sides[t].agree]
    said += [p for t in viable for p in answer.evidence.get(t, ())]
    return tuple(dict.fromkeys(p for p in said if p in pose))


def turn_of(yaw0: float, yaw: float, nominal: int, atol: float = 1.0) -> tuple[float, str]:
    """The clockwise turn (degrees) from viewpoint 0's yaw to a viewpoint's yaw (radians),
    and where it comes from: ``quaternion`` when the item's quaternions turned, else the
    dataset's ``convention`` (a viewpoint ``k`` turned ``k`` degrees clockwise)."""
    turn = float(wrap_degrees(np.degrees(yaw0 - yaw)))
    if abs(turn) <= atol:
        return float(nominal % 360), "convention"
    return float(round(turn) % 360), "quaternion"


# ---- the scene -------------------------------------------------------------------------
