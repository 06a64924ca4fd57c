"""A situation said again after the agent turns in place: the English floor's writer, the
inverse of what :mod:`.mentions` reads.

:func:`turn_text` turns every egocentric phrase of a text by the one turn rule
(:func:`hf_real3d.geometry.bearing_after_turn`): ``on my left`` / ``to my right`` / ``in
front of me`` / ``behind me`` and their variants move to the direction the turn sends them,
clock hours move ``turn / 30`` hours back, and what the agent faces (``facing X``, ``looking
at X``, ``watching X``, ``standing in front of X``), has its back to (``with my back to X``)
or works on as the faced thing (``writing on the whiteboard``, ``washing dishes at the
sink``) is placed where the turn sends it (``with the desk on my left``). Allocentric phrases
(``to the left of the door``, ``the left side of the room``) do not move. Where a phrase
cannot be turned with certainty (both sides at once, a thing faced by something that is not
the agent, a thing placed by a part of the body: :func:`by_the_body`) or nothing in the
turned text pins the heading, it returns None: no text is guessed. A question (``question``)
turns alike, but need not pin a heading.
"""

from __future__ import annotations

import re

from hf_real3d.english.mentions import (
    ADVERBIALS,
    BOTH_SIDES,
    CLOCK_RE,
    CONTRACTIONS,
    EGO_RE,
    FACING_RE,
    HOUR_WORDS,
    IN_FRONT_OF_IT,
    STOPS,
    agent_faces,
    blank_out,
    ego_bearing,
    first_token_at,
    normal_text,
    np_forward,
    read,
    tokens,
)
from hf_real3d.geometry import bearing_after_turn

__all__ = ["by_the_body", "turn_text", "where_phrase"]

_CONTRACTION_ANY = re.compile(r"\b(?:" + "|".join(CONTRACTIONS) + r")\b", re.IGNORECASE)
# an action on the thing the agent faces, when no phrase says what it faces: the thing is in
# front ("I am writing on the whiteboard": the whiteboard is in front of me)
_ACTS_ON_FACED = re.compile(
    r"\b(?:i\s+am\s+|i\s+)?(?:writing|drawing|typing|erasing|wiping|cleaning)\s+(?:on|at)\s+|"
    r"\b(?:i\s+am\s+|i\s+)?(?:washing\s+(?:\w+\s+){0,2}?(?:at|in)|cooking\s+(?:\w+\s+){0,2}?"
    r"(?:on|at)|working\s+(?:at|on)|reading)\s+(?=the\s+)")
# what may follow "to my left" ("to my left is a desk", "on the right, a door"); another word
# makes "left" an adjective ("the left cushion")
_GOES_ON = frozenset(", . ; : ! ? ) and or is are was were there i you a an the my some two "
                     "with while where which that sits sit stands stand lies lie hangs hang "
                     "side hand but so stood sat of from".split())
# what a question may ask right after a side ("is the door to my right open or closed?")
_ASKED_STATES = frozenset("open closed round square rectangular messy tidy neat made empty full "
                          "clean dirty on off".split())
# "an armchair, with another one on my left": the other one of what the text names, placed
_ANOTHER_ONE = re.compile(r"\b(?:another|the\s+other)\s+one\s+(?:(?:is|was)\s+)?(?:on|to|at|in|"
                          r"behind)\b")
_HELD = frozenset("book paper magazine newspaper phone letter note card document menu".split())
# a thing placed by a part of the body that turns with the agent ("a box by my left foot", "the
# handle in my right hand", "a radiator far away on my back"): no phrase says where it is after
# the turn, so such a text is not turned (nor one lying on its back: it faces up; nor "the back
# is against the wall": the agent's back, or a thing's?; nor "standing ahead of the mat": the
# agent's ahead, or the mat's?)
_BY_THE_BODY = re.compile(
    r"\bmy\s+(?:left|right)\s*-?\s*(?:foot|feet|hand|hands|arm|arms|shoulder|shoulders|leg|legs|"
    r"knee|knees|elbow|elbows|hip|ear|ears|eye|eyes|cheek|thigh)\b|"
    r"\bon\s+my\s+back\b|\bthe\s+back\s+(?:is\s+)?(?:against|to|towards?|facing)\b|"
    r"\bahead\s+of\s+(?!me\b|myself\b)")


def by_the_body(text: str) -> bool:
    """Whether ``text`` places a thing by a part of the body that turns with the agent ("the
    handle in my right hand", "a radiator on my back"): no turn of it says where that is."""
    return bool(_BY_THE_BODY.search(normal_text(text)))


def _cased_normal(text: str) -> str | None:
    """``text`` with :func:`normal_text`'s changes made but its letters' case kept, so that
    its lower case is ``normal_text(text)`` offset for offset; None where it is not."""
    out = str(text).replace("\u2019", "'").replace("\u2018", "'")

    def expand(m: re.Match) -> str:
        full = CONTRACTIONS[m.group(0).lower()]
        return full[0].upper() + full[1:] if m.group(0)[0].isupper() else full

    out = _CONTRACTION_ANY.sub(expand, out)
    out = CLOCK_RE.sub("o'clock", out.replace("O'clock", "o'clock").replace("O'Clock",
                                                                            "o'clock"))
    out = re.sub(r"\b([Ii])n\s*front\b", r"\1n front",
                 re.sub(r"([Ii])nfront", r"\1n front", out))
    out = " ".join(out.split())
    return out if out.lower() == normal_text(text) else None


def where_phrase(bearing: float, prep: str = "on", side: bool = False) -> str:
    """An egocentric phrase for a quarter bearing: ``in front of me``, ``behind me``, or
    ``{prep} my left`` / ``{prep} my right`` (``side``: ``... left side``)."""
    b = int(round(bearing)) % 360
    if b == 0:
        return "in front of me"
    if b == 180:
        return "behind me"
    word = "right" if b == 90 else "left"
    return f"{prep} my {word}{' side' if side else ''}"


def _direction(said: str, bearing: float, width: float, turn: float) -> str | None:
    """The direction phrase ``said`` (at ``bearing``) after the turn, in its own style."""
    after = bearing_after_turn(bearing, turn)
    if width < 90:  # a clock hour: only the hour changes
        hour = int(round(after / 30)) % 12 or 12
        return re.sub(r"\b(1[0-2]|[1-9]|" + "|".join(HOUR_WORDS) + r")\b",
                      lambda m: str(hour) if m.group(0).isdigit() else HOUR_WORDS[hour % 12],
                      said, count=1, flags=re.IGNORECASE)
    if abs(after / 90 - round(after / 90)) > 1e-6:
        return None
    first = said.split()[0].lower()
    prep = first if first in ("on", "to", "at", "towards", "toward", "by", "in") else "on"
    if prep == "in":
        prep = "on"
    return where_phrase(after, prep, side=bool(re.search(r"\bside\b", said.lower())))


def _np_span(toks: list[tuple[str, int, int]], at: int) -> tuple[int, int, str] | None:
    """(start, end, last word) of the noun phrase starting at token ``at``."""
    got = np_forward(toks, at)
    if got is None or got[2] <= at:
        return None
    return toks[at][1], toks[got[2] - 1][2], got[0][-1]


def _ends_phrase(scan: str, end: int) -> bool:
    """Whether the noun phrase read up to ``end`` is whole: the text ends there, or a word or
    mark that may follow a phrase comes next (not "evening" in "my favourite evening show")."""
    after = tokens(scan[end:])[:1]
    return not after or after[0][0] != "of" and (after[0][0] in _GOES_ON
                                                  or after[0][0] in STOPS)


def _placed_by(scan: str, end: int) -> bool:
    """Whether an egocentric phrase follows the noun phrase ending at ``end`` ("facing away
    from the crate directly behind me"): that phrase places it, and is turned itself."""
    m = EGO_RE.search(scan, end)
    return m is not None and not scan[end:m.start()].strip(" ,").replace("directly", "").strip()


def _faced(cased: str, low: str, scan: str, toks: list[tuple[str, int, int]], turn: float
           ) -> list[tuple[int, int, str]] | None:
    """Edits (start, end, new text) placing what the agent faces or has its back to where the
    turn sends it ("I am facing the desk" -> "I have the desk on my left", "with my back to
    the door" -> "with the door on my right"); None where one cannot be made."""
    edits = []
    for m in FACING_RE.finditer(scan):
        verb = m.group("verb")
        at = first_token_at(toks, m.start())
        # "entering the room facing X", "standing by the door on my left facing X": the agent
        said_of_agent = at >= 1 and (toks[at - 1][0] == "room" or any(
            e.end() >= toks[at - 1][2] - 1 and e.end() <= m.start() for e in
            EGO_RE.finditer(scan, max(0, m.start() - 40), m.start())))
        if verb.startswith(("facing", "looking", "staring", "watching", "face", "turned")) \
                and not agent_faces(toks, at) and not said_of_agent:
            return None  # a thing faces something: not the agent's heading
        np = _np_span(toks, first_token_at(toks, m.end()))
        if np is None or not _ends_phrase(scan, np[1]):
            return None  # "watching my favourite evening show": the faced thing is not read
        where = "" if _placed_by(scan, np[1]) else " " + where_phrase(
            bearing_after_turn(180.0 if "away" in verb or "back" in verb else 0.0, turn))
        thing, start = cased[np[0]:np[1]], m.start()
        subject = re.search(r"\b(?:i\s+am|i)\s+$", low[:start])
        if subject:  # "I am facing the desk" -> "I have the desk on my left"
            edits.append((subject.start(), np[1], f"I have {thing}{where}"))
        elif re.search(r"\b(?:while|before|after|when|then|by)\s+$", low[:start]):
            edits.append((start, np[1], f"having {thing}{where}"))
        elif re.search(r"\band\s+$", low[:start]):
            edits.append((start, np[1], f"have {thing}{where}"))
        elif verb.startswith("my") and re.search(r"(?:^|[,.;:!?]|\band)\s*$", low[:start]):
            edits.append((start, np[1], f"{thing} is{where}" if where else thing))
        else:
            edits.append((start, np[1], f"with {thing}{where}"))
    if edits and IN_FRONT_OF_IT.search(scan):
        return None  # "standing in front of the table and facing the bin": where the table
        # is (ahead, or behind the agent standing at its front) is not settled
    acts = not edits and not any(mm.facing or mm.bearing == 0.0 for mm in read(low).mentions)
    for pattern in (IN_FRONT_OF_IT, *((_ACTS_ON_FACED,) if acts else ())):
        for m in pattern.finditer(scan):
            np = _np_span(toks, first_token_at(toks, m.end()))
            if np is None or np[2] in _HELD:
                continue
            where = "" if _placed_by(scan, np[1]) else " " + where_phrase(
                bearing_after_turn(0.0, turn))
            lead = cased[m.start():m.end()]
            if pattern is IN_FRONT_OF_IT:  # "standing in front of the sink" -> "standing with";
                # "working in front of a monitor" -> "working, with" (not "working with" it)
                posture = re.search(r"(?:standing|sitting|kneeling|squatting|crouching|stood|"
                                    r"sat)\s+(?:(?:right|directly|just|immediately)\s+)?in\s+"
                                    r"front", lead, flags=re.IGNORECASE)
                lead = re.sub(r"\s+(?:(?:right|directly|just|immediately)\s+)?in\s+front\s+of"
                              r"\s+$", " with " if posture else ", with ", lead,
                              flags=re.IGNORECASE)
            edits.append((m.start(), np[1], f"{lead}{cased[np[0]:np[1]]}{where}"))
    return edits


def turn_text(text: str, turn: float, question: bool = False) -> str | None:
    """``text`` (a situation) as the agent says it after turning ``turn`` degrees clockwise
    in place; None where a phrase cannot be turned with certainty, or where the result pins
    no heading (no egocentric phrase) or says what the text said. A ``question`` need not
    pin a heading, and may ask a state after a side ("is the door to my right open?")."""
    cased = _cased_normal(text)
    if cased is None:
        return None
    low = cased.lower()
    scan = blank_out(low, ADVERBIALS)
    if by_the_body(low):
        return None
    if BOTH_SIDES.search(scan) and round(turn) % 180:  # "on either side": a half turn keeps it
        return None
    toks = tokens(scan)
    edits = _faced(cased, low, scan, toks, turn)
    if edits is None:
        return None
    for m in EGO_RE.finditer(scan):
        if any(s <= m.start() < e for s, e, _ in edits):
            continue
        if re.search(r"\b(?:lying|laying|lie|lay)\s+on\s+$", scan[:m.start()]):
            continue
        said = cased[m.start():m.end()].rstrip()
        after = tokens(scan[m.end():])[:1]
        if re.search(r"\b(?:left|right)$", said.lower()) and after and \
                after[0][0] not in _GOES_ON and not (question and after[0][0] in _ASKED_STATES):
            return None  # "the left cushion of the couch": a part of a thing, not a side
        new = _direction(said, *ego_bearing(m), turn)
        if new is None:
            return None
        edits.append((m.start(), m.start() + len(said), new))
    edits.sort()
    if any(a[1] > b[0] for a, b in zip(edits, edits[1:])):
        return None  # two phrases claim the same words
    out = cased
    for start, end, new in reversed(edits):
        if cased[start:start + 1].isupper() and not new[:1].isupper():
            new = new[0].upper() + new[1:]
        out = out[:start] + new + out[end:]
    if not edits or normal_text(out) == normal_text(text) or not (
            question or read(out).mentions or _ANOTHER_ONE.search(normal_text(out))):
        return None
    return out
