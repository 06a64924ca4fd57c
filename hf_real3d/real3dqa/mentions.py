"""The English reader of situations, questions and answers: where a text puts things
relative to the agent.

One reader serves the rotation step, the rewrite step and the checker, so that they agree on
what a text says. It reads

* **egocentric mentions** (:class:`Mention`): an object and its bearing clockwise from the
  agent's front (``in front of me`` 0, ``on my right`` 90, ``behind me`` 180, ``on my left``
  270, ``at my N o'clock`` 30 N, ``facing X`` 0, ``with my back to X`` 180);
* **allocentric relations** (:class:`Relation`), which describe the room and do not move
  when the agent turns: ``to the left of the door``, ``on the left side of the room``, ``the
  left end of the couch``, ``in front of the desk``;
* **answers that are directions** (:func:`answer_direction`): ``left``, ``turn right``,
  ``forward``, ``behind me``, ``3 o'clock``;
* **what a question asks** (:func:`question_kind`): a direction (``which way should I go``),
  a side (``left or right``), what is in a direction (``what is on my left?``), or nothing
  that depends on the agent's heading (:data:`HEADING_FREE`: counts in the room, colour,
  material, shape, state, reach, which is nearer, what is on or in a named object, relations
  between named objects).

Where the reader cannot tell, it says so (:attr:`Reading.unresolved`, ``several``) instead of
guessing: the checker then leaves the item to the scene.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field

from hf_real3d.spatial import singular

__all__ = [
    "ALWAYS_SEVERAL",
    "heading_cue",
    "GENERIC",
    "HEADING_FREE",
    "HOUR_WORDS",
    "Mention",
    "Reading",
    "Relation",
    "answer_direction",
    "bearing_name",
    "normal_text",
    "question_kind",
    "read",
    "mentions",
    "tokens",
]

#: clock hours as words, 12 o'clock first
HOUR_WORDS = ("twelve", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine",
              "ten", "eleven")
_HOURS = {w: i for i, w in enumerate(HOUR_WORDS)}
#: names a room holds several things of, whatever a text says: which one a text means is
#: not for the text to settle
ALWAYS_SEVERAL = frozenset({"wall", "floor", "ceiling", "ground", "window", "corner", "room",
                            "side", "area", "way", "place", "spot", "thing", "object", "item",
                            "stuff", "something", "anything", "everything", "nothing"})

_CONTRACTIONS = {"i'm": "i am", "there's": "there is", "it's": "it is", "that's": "that is",
                 "i've": "i have", "i'd": "i would", "can't": "can not", "don't": "do not",
                 "isn't": "is not", "aren't": "are not"}
_CONTRACTION_RE = re.compile(r"\b(?:" + "|".join(_CONTRACTIONS) + r")\b")
_CLOCK = re.compile(r"o\s*['`]?\s*clock|o'\s*clock|oclock|o-clock")


@functools.lru_cache(maxsize=65536)
def normal_text(text: str) -> str:
    """``text`` lower-cased, with curly quotes, contractions ("I'm"), "o'clock" spellings and
    white space made uniform: what two texts are compared by."""
    low = str(text).lower().replace("\u2019", "'").replace("\u2018", "'")
    low = _CONTRACTION_RE.sub(lambda m: _CONTRACTIONS[m.group(0)], low)
    low = _CLOCK.sub("o'clock", low)
    low = re.sub(r"\bin\s*front\b", "in front", low.replace("infront", "in front"))
    return " ".join(low.split())


@functools.lru_cache(maxsize=65536)
def plain_words(text: str) -> str:
    """:func:`normal_text` without punctuation: "the same situation, up to case, spaces and
    punctuation" compares these."""
    return " ".join(re.findall(r"[a-z0-9]+", normal_text(text)))


_TOKEN_RE = re.compile(r"[a-z0-9]+(?:['-][a-z0-9]+)*|[,.;:!?()]")


def tokens(text: str) -> list[tuple[str, int, int]]:
    """(word, start, end) of each word and punctuation mark of a :func:`normal_text`."""
    return [(m.group(0), m.start(), m.end()) for m in _TOKEN_RE.finditer(text)]


_DETERMINERS = frozenset(
    "a an the some another two three four five six seven eight nine ten several many few "
    "couple pair this that these those my its their both other each every all".split())
_PLURAL_DETERMINERS = frozenset(
    "two three four five six seven eight nine ten several many few couple pair these those "
    "both each every all some".split())
# a phrase with these names one of several ("another chair", "the other chair")
_OTHER_WORDS = frozenset("another other second third".split())
# words that end a noun phrase read outwards from a direction or a verb
_STOPS = frozenset(
    "with while having have has had there i am is are was were be been being and or but so as "
    "by beside near next of on in at to from into onto under over above below behind between "
    "against toward towards facing looking standing sitting lying laying leaning holding where "
    "when which who whom that me my it them you we he she they also then than if not no just "
    "right left front back ahead directly closest nearest furthest farthest further farther "
    "far close within around across along through up down out off about after before past "
    "like for during without inside outside beneath underneath beyond whilst side reach "
    "hand foot located placed positioned situated could will would should see saw notice "
    "find found get got put set keep kept want wanted need needed trying try going go walking "
    "walk using use used do did does currently now still what which how whose why".split()) \
    | frozenset(",.;:!?()")
#: heads that name no particular object ("what is the object on my left?")
GENERIC = frozenset("object objects thing things item items furniture stuff appliance one "
                    "ones".split())
# what may stand between a noun phrase and the direction it is given ("a chair is on ...")
_LINKS = frozenset("is are was were sits sit sitting stands stand standing lies lie lying "
                   "located placed positioned situated directly right just immediately "
                   "straight which that who all also out up over there here nearby "
                   "far slightly somewhat close".split())
_PRONOUNS = frozenset("it them this that these those one ones something everything anything "
                      "nothing someone me myself you".split())
_PART_OF = frozenset("end side foot edge corner middle center centre top bottom front back "
                     "part half surface".split())
_LOCATIVE = frozenset("on in at by near beside under inside atop onto into above below "
                      "underneath beneath against".split())
# adverbials that sit between an object and its direction and are not objects themselves
_ADVERBIALS = re.compile(r"\b(?:within\s+(?:arm'?s?\s+|my\s+)?reach|in\s+reach|close\s+by|"
                         r"next\s+to\s+me|beside\s+me|near\s+me|nearby|on\s+the\s+floor|"
                         r"on\s+the\s+ground|against\s+the\s+wall|on\s+the\s+wall)\b")

_SIDE_WORDS = r"(?:immediate|direct|far|very|extreme|exact)"
_HOUR = r"(?P<hour>1[0-2]|[1-9]|" + "|".join(HOUR_WORDS) + r")"
# a left/right phrase that goes on to name what it is the side of is allocentric
_OF_OTHER = (r"(?!\s+(?:(?:hand\s+)?side\s+|hand\s+|end\s+|corner\s+|part\s+|half\s+|edge\s+)?"
             r"of\s+(?!me\b|myself\b))")
_NOT_PART = r"(?!\s*-?\s*(?:hand\b(?!\s*side)|foot|arm|leg|shoulder|knee|elbow|ear|eye|wall|" \
            r"corner|end|half|edge|part\b))"
# (pattern, clockwise bearing or None for a clock hour, the phrase's width in degrees)
_EGO_PATTERNS: tuple[tuple[str, float | None, float], ...] = (
    (r"(?:(?:right|directly|just|straight|immediately)\s+)?in\s+front\s+of\s+me\b|"
     r"ahead\s+of\s+me\b|(?:to|on|at|in)\s+my\s+front\b|(?:straight|directly|right|just)\s+ahead\b|"
     r"in\s+front(?!\s+of\b)", 0.0, 90.0),
    (r"(?:(?:right|directly|just|immediately)\s+)?behind\s+me\b|(?:to|at|in)\s+my\s+"
     r"(?:back|rear|backside)(?:\s+side)?\b(?!\s+(?:pocket|of))|in\s+back\s+of\s+me\b|"
     r"to\s+the\s+(?:rear|back)\b(?=\s*(?:[,.;:!?]|$|and\b))", 180.0, 90.0),
    (rf"(?:(?:on|to|at|towards?|by|in)\s+)?(?:my|the)\s+(?:{_SIDE_WORDS}\s+)?left"
     rf"(?:\s*-?\s*hand\s*-?\s*side|\s*-?\s*side)?(?:\s+of\s+me\b)?{_OF_OTHER}{_NOT_PART}|"
     rf"\bleft\s+of\s+me\b", 270.0, 90.0),
    (rf"(?:(?:on|to|at|towards?|by|in)\s+)?(?:my|the)\s+(?:{_SIDE_WORDS}\s+)?right"
     rf"(?:\s*-?\s*hand\s*-?\s*side|\s*-?\s*side)?(?:\s+of\s+me\b)?{_OF_OTHER}{_NOT_PART}|"
     rf"\bright\s+of\s+me\b", 90.0, 90.0),
    (rf"(?:(?:in|at|on|to|towards?)\s+)?(?:my\s+|the\s+)?{_HOUR}\s*o'clock"
     r"(?:\s+(?:direction|position))?", None, 30.0),
)
_EGO_RE = re.compile("|".join(f"(?P<d{i}>{p})" for i, (p, _, _) in enumerate(_EGO_PATTERNS)))
# both sides at once: which side an object is on is not said
_BOTH_SIDES = re.compile(r"\b(?:left\s+and\s+(?:my\s+|the\s+)?right|right\s+and\s+(?:my\s+|the\s+)?"
                         r"left|both\s+sides|either\s+side|each\s+side|all\s+around)\b")
# allocentric: a side of, or the front of, something that is not the agent
_ALLO_RE = re.compile(
    r"\b(?P<side>left|right)(?:\s*-?\s*hand)?(?:\s+(?:side|end|corner|part|half|edge))?\s+of\s+"
    r"(?!me\b|myself\b)|\b(?:in\s+front|behind|in\s+back)\s+of\s+(?!me\b|myself\b)|"
    r"\bbehind\s+(?=(?:the|a|an|my|this|that|some)\b)|"
    r"\bthe\s+(?P<side2>left|right)\s+(?:side|end|corner|part|half|edge|wall)\b(?!\s+of\b)")
_FACING_RE = re.compile(
    r"\b(?P<verb>facing\s+away\s+from|(?:with\s+)?my\s+back(?:side)?\s+(?:is\s+|turned\s+)?"
    r"(?:to|towards?|facing|against|at)|(?:with\s+)?(?:my\s+)?backside\s+(?:is\s+)?"
    r"(?:to|towards?|facing|against|at)?|"
    r"facing(?:\s+(?:directly|straight|right|towards?))*|looking(?:\s+(?:directly|straight|"
    r"right))?\s+(?:at|towards?|out(?:\s+of)?|into)|staring(?:\s+(?:directly|straight))?\s+at|"
    r"watching|(?<=i\s)face|turned\s+towards?)\s+")
# "standing in front of the sink": the sink is in front of the agent
_IN_FRONT_OF_IT = re.compile(r"\b(?:i\s+am\s+|am\s+|i\s+)?(?:standing|sitting|kneeling|"
                             r"working|squatting|crouching|stood|sat|waiting)\s+"
                             r"(?:(?:right|directly|just|immediately)\s+)?in\s+front\s+of\s+"
                             r"(?!me\b)")
_AFTER_DIRECTION = re.compile(r"^\s*(?:side\s+)?(?:,\s*)?(?:there\s+(?:is|are|was|were|sits|"
                              r"stands)|is|are|was|were|sits|stands|lies|i\s+(?:can\s+)?see|"
                              r"i\s+saw|i\s+have|i\s+notice|you\s+(?:can\s+)?see|lay|hangs|"
                              r"i\s+could\s+see)\s+")
# "the bed closest to the window", "the leftmost chair": one of several
_SUPERLATIVE = re.compile(r"closest|nearest|farthest|furthest|closer|farther|further|"
                          r"(?:left|right)-?most")
_ORDINAL = re.compile(r"(?:left|right|front|back)-?most|middle|first|second|last")
_VERTICAL_RE = re.compile(r"\b(above|over|below|beneath|under|underneath)\s+me\b")
_CLAUSE_START = frozenset(",.;:!? and while but so where".split())


@dataclass(frozen=True)
class Mention:
    """An object a text places relative to the agent: its bearing clockwise from the front."""

    head: str  # the head noun, singular: what identifies the object across texts
    words: tuple[str, ...]  # the noun phrase, each word singular (matched to scene labels)
    bearing: float
    width: float  # 90 for front/right/behind/left, 30 for a clock hour
    phrase: str  # the text that said it
    facing: bool = False  # said as "facing X" (the agent faces it)
    number: str = ""  # "" one thing, "plural" ("two chairs"), "other" ("another chair")

    @property
    def modifier(self) -> str | None:
        """The word before the head ("office" in "office chair"), which tells two objects
        of one name apart."""
        return self.words[-2] if len(self.words) > 1 else None


@dataclass(frozen=True)
class Relation:
    """An allocentric phrase: something placed relative to something else, or a side of the
    room. It does not move when the agent turns."""

    side: str  # "left", "right", "front" or "behind"
    anchor: str | None  # the head noun it is the side of ("door"), or None
    phrase: str


@dataclass
class Reading:
    """What a text says relative to the agent."""

    mentions: list[Mention] = field(default_factory=list)
    relations: list[Relation] = field(default_factory=list)
    unresolved: list[str] = field(default_factory=list)  # direction phrases with no object
    several: set[str] = field(default_factory=set)  # heads the text names several ones of
    # objects placed above or below the agent ("above me was my bed"): no turn moves them
    vertical: list[tuple[str, str, str]] = field(default_factory=list)  # (head, up/down, phrase)


_ING_NOUNS = frozenset("ceiling painting drawing building clothing railing ring string "
                       "bedding wedding sing king lighting heating".split())
_UNCOUNTED = frozenset("news series species glasses pants scissors clothes dishes stairs "
                       "blinds drawers shorts jeans".split())


@functools.lru_cache(maxsize=65536)
def _singular(word: str) -> str:
    return word if word in _UNCOUNTED or word.endswith(("ss", "us", "is")) else singular(word)


def _phrase(words: list[str]) -> tuple[tuple[str, ...], str] | None:
    """A noun phrase's words (singular) and its number: ``""`` (one), ``"plural"`` or
    ``"other"`` (one of several: "another chair"); None when it is empty or a pronoun."""
    kept = [w for w in words if w not in _DETERMINERS and not w.isdigit() and w not in _HOURS
            and w not in _OTHER_WORDS]
    if not kept or kept[-1] in _PRONOUNS:
        return None
    number = "other" if any(w in _OTHER_WORDS for w in words) else ""
    if not number and (any(w.isdigit() and int(w) > 1 for w in words)
                       or any(w in _PLURAL_DETERMINERS for w in words)):
        number = "plural"
    head = kept[-1]
    sing = _singular(head)
    if sing != head:
        number = number or "plural"
    return (*(_singular(w) for w in kept[-3:-1]), sing), number


def _np_back(toks: list[tuple[str, int, int]], i: int) -> tuple[tuple[str, ...], str, int] | None:
    """The noun phrase ending at token ``i`` (inclusive): (words, number, index before it)."""
    words = []
    while i >= 0 and toks[i][0] not in _STOPS and toks[i][0] not in _DETERMINERS:
        words.insert(0, toks[i][0])
        i -= 1
    dets = []
    while i >= 0 and toks[i][0] in _DETERMINERS:
        dets.insert(0, toks[i][0])
        i -= 1
    if words and words[-1].endswith("ing") and words[-1] not in _ING_NOUNS:
        return None  # "the room turning on the lamp": a verb ends it, not a noun
    got = _phrase(dets + words)
    if got is None:
        return None
    return got[0], got[1], i


def _np_forward(toks: list[tuple[str, int, int]],
                i: int) -> tuple[tuple[str, ...], str, int] | None:
    """The noun phrase starting at token ``i`` ("the end of the bed" is the bed): (words,
    number, index after it)."""
    words = []
    while i < len(toks) and toks[i][0] in _DETERMINERS | {"towards", "toward", "directly"}:
        words.append(toks[i][0])
        i += 1
    start = len(words)
    while i < len(toks) and toks[i][0] not in _STOPS and toks[i][0] not in _DETERMINERS and \
            not (len(words) > start and toks[i][0].endswith("ing")
                 and toks[i][0] not in _ING_NOUNS):
        words.append(toks[i][0])
        i += 1
    body = words[start:]
    if body and body[-1] in _PART_OF and i < len(toks) and toks[i][0] == "of":
        return _np_forward(toks, i + 1)
    if not body and i < len(toks) and toks[i][0] in ("side", "front", "back", "end") and \
            i + 1 < len(toks) and toks[i + 1][0] == "of":
        return _np_forward(toks, i + 2)
    got = _phrase(words)
    if got is None:
        return None
    return got[0], got[1], i


def _before(toks: list[tuple[str, int, int]], end: int) -> list[tuple[tuple[str, ...], str]]:
    """Noun phrases a direction starting at token ``end`` is given to: the one just before it,
    what it is coordinated with ("a mini fridge and a trash can on my right"), and what it
    carries ("my backpack on the floor to my right": the backpack)."""
    i = end - 1
    singular_verb = False
    while i >= 0 and (toks[i][0] in _LINKS or toks[i][0] == "," and i + 1 < end
                      and toks[i + 1][0] in ("which", "that", "who")):
        if toks[i][0] in ("is", "was", "sits", "stands", "lies"):
            singular_verb = True  # one subject
        i -= 1
    out: list[tuple[tuple[str, ...], str]] = []
    got = _np_back(toks, i)
    if got is None:
        return out
    words, plural, i = got
    out.append((words, plural))
    # coordination: "X and Y on my right", "X, Y and Z behind me"
    while not singular_verb and i >= 1 and toks[i][0] in ("and", ",") and len(out) < 4:
        nxt = _np_back(toks, i - 1)
        if nxt is None or toks[i - 1][0] in _STOPS or (
                nxt[2] >= 0 and toks[nxt[2]][0] in _LOCATIVE | {"of", "from", "to"}):
            break
        words, plural, i = nxt
        out.append((words, plural))
    # carrying: "X on/in/by Y <direction>" places X there too
    if len(out) == 1 and i >= 1 and toks[i][0] in _LOCATIVE:
        j = i - 1
        carrier = _np_back(toks, j) if toks[j][0] not in _STOPS else None
        if carrier is not None and carrier[2] >= 0 and toks[carrier[2] + 1][0] in _DETERMINERS:
            before = toks[carrier[2]][0]
            # "sitting on the chair to my left": the agent sits, nothing is carried
            if before not in ("am", "i", "sitting", "standing", "lying", "leaning", "kneeling"):
                out.append((carrier[0], carrier[1]))
    return out


def _after(toks: list[tuple[str, int, int]], start: int) -> list[tuple[tuple[str, ...], str]]:
    """Noun phrases starting at token ``start`` ("to my left is a desk and a chair")."""
    out = []
    got = _np_forward(toks, start)
    while got is not None and len(out) < 4:
        words, plural, i = got
        out.append((words, plural))
        if i < len(toks) and toks[i][0] in ("and", ",") and i + 1 < len(toks) and \
                toks[i + 1][0] in _DETERMINERS:
            got = _np_forward(toks, i + 1)
        else:
            break
    return out


def _bearing(m: re.Match) -> tuple[float, float]:
    """(clockwise bearing, width) of a direction phrase :data:`_EGO_RE` matched."""
    k = int(next(g for g, v in m.groupdict().items() if v and g.startswith("d"))[1:])
    _, bearing, width = _EGO_PATTERNS[k]
    if bearing is None:
        hour = m.group("hour")
        bearing = (_HOURS[hour] if hour in _HOURS else int(hour)) % 12 * 30.0
    return float(bearing), width


def _first_token_at(toks: list[tuple[str, int, int]], pos: int) -> int:
    return next((i for i, t in enumerate(toks) if t[1] >= pos), len(toks))


def _agent_faces(toks: list[tuple[str, int, int]], at: int) -> bool:
    """Whether "facing" at token ``at`` is said of the agent, not of an object ("a chair facing
    the table is on my left")."""
    i = at - 1
    if i < 0 or toks[i][0] in _STOPS or toks[i][0] in ("currently", "now", "still"):
        return True
    got = _np_back(toks, i)
    if got is None:
        return True
    before = toks[got[2]][0] if got[2] >= 0 else ""
    # "sitting on a chair facing the desk": the agent, on the chair, faces the desk
    return before in _LOCATIVE


def _blank(text: str, pattern: re.Pattern) -> str:
    """``text`` with each match of ``pattern`` replaced by spaces (offsets kept)."""
    return pattern.sub(lambda m: " " * (m.end() - m.start()), text)


@functools.lru_cache(maxsize=65536)
def read(text: str) -> Reading:
    """Every object ``text`` places relative to the agent, in order of appearance, the
    allocentric phrases it holds and the direction phrases it leaves without an object.
    (Cached: the reading returned is shared, and must not be changed.)"""
    low = normal_text(text)
    out = Reading()
    scan = _blank(low, _ADVERBIALS)
    toks = tokens(scan)
    for m in _ALLO_RE.finditer(low):
        said = low[m.start():m.end()].strip()
        side = m.group("side") or m.group("side2") or (
            "front" if said.startswith("in front") else "behind")
        anchor = _np_forward(toks, _first_token_at(toks, m.end()))
        if m.group("side2"):
            anchor = None
        out.relations.append(Relation(side, anchor[0][-1] if anchor else None, said))
    heads: dict[str, set[str]] = {}
    both = [(m.start(), m.end()) for m in _BOTH_SIDES.finditer(scan)]

    def add(found: list[tuple[tuple[str, ...], str]], bearing: float, width: float,
            phrase: str, facing: bool = False, verb_first: bool = False) -> None:
        for words, number in found:
            out.mentions.append(Mention(words[-1], words, bearing, width,
                                        f"{phrase} {' '.join(words)}" if verb_first else
                                        f"{' '.join(words)} {phrase}", facing, number))

    for m in _FACING_RE.finditer(scan):
        verb = m.group("verb")
        at = _first_token_at(toks, m.start())
        if verb.startswith(("facing", "looking", "staring", "watching", "face", "turned")) and \
                not _agent_faces(toks, at):
            continue
        got = _np_forward(toks, _first_token_at(toks, m.end()))
        if got is None:
            continue
        behind = "away" in verb or "back" in verb
        add([(got[0], got[1])], 180.0 if behind else 0.0, 90.0,
            scan[m.start():m.end()].strip(), facing=not behind, verb_first=True)
    for m in _IN_FRONT_OF_IT.finditer(scan):
        got = _np_forward(toks, _first_token_at(toks, m.end()))
        if got is not None:
            add([(got[0], got[1])], 0.0, 90.0, scan[m.start():m.end()].strip(), facing=True,
                verb_first=True)
    for m in _EGO_RE.finditer(scan):
        phrase = scan[m.start():m.end()].strip()
        if any(s <= m.start() < e or m.start() <= s < m.end() for s, e in both):
            out.unresolved.append(phrase)  # "on my left and right"
            continue
        if re.search(r"\b(?:lying|laying|lie|lay)\s+on\s+$", scan[:m.start()]):
            continue  # "lying on my back" says how, not where
        bearing, width = _bearing(m)
        first = _first_token_at(toks, m.start())
        rest = _AFTER_DIRECTION.match(scan[m.end():])
        opens = first == 0 or toks[first - 1][0] in _CLAUSE_START
        found: list[tuple[tuple[str, ...], str]] = []
        if rest and opens:  # "and to my left was a desk"
            found = _after(toks, _first_token_at(toks, m.end() + rest.end()))
        if not found:
            found = _before(toks, first)
        if not found and rest:  # "on my right is a box", "to my left there are two chairs"
            found = _after(toks, _first_token_at(toks, m.end() + rest.end()))
        if not found:
            out.unresolved.append(phrase)
            continue
        add(found, bearing, width, phrase)
    for m in _VERTICAL_RE.finditer(scan):
        first = _first_token_at(toks, m.start())
        rest = _AFTER_DIRECTION.match(scan[m.end():])
        opens = first == 0 or toks[first - 1][0] in _CLAUSE_START
        found = _after(toks, _first_token_at(toks, m.end() + rest.end())) if rest and opens \
            else _before(toks, first)
        way = "up" if m.group(1) in ("above", "over", "overhead") else "down"
        out.vertical += [(w[-1], way, scan[m.start():m.end()]) for w, _ in found]
    # a text naming a thing as one and as several, or as "another": there are several of it
    words = [t[0] for t in toks]
    for i, w in enumerate(words):
        sing = _singular(w)
        # "the bed closest to the window": there are other beds
        if i + 1 < len(words) and _SUPERLATIVE.fullmatch(words[i + 1]):
            heads.setdefault(sing, set()).add("other")
        if _ORDINAL.fullmatch(w) and i + 1 < len(words):
            heads.setdefault(_singular(words[i + 1]), set()).add("other")
        if sing != w:
            heads.setdefault(sing, set()).add("plural")
        else:
            heads.setdefault(w, set()).add("other" if i and words[i - 1] in _OTHER_WORDS
                                           else "")
    out.several = {h for h, n in heads.items() if "other" in n or n >= {"", "plural"}}
    return out


def mentions(text: str) -> list[Mention]:
    """Every object ``text`` places relative to the agent (:func:`read`'s mentions)."""
    return read(text).mentions


def bearing_name(bearing: float, width: float = 90.0) -> str:
    """A bearing's name: ``front`` / ``right`` / ``behind`` / ``left``, or a clock hour."""
    if width >= 90:
        return {0: "front", 90: "right", 180: "behind", 270: "left"}.get(
            int(round(bearing)) % 360, f"{bearing:g} deg")
    hour = int(round(bearing / 30)) % 12
    return f"{12 if hour == 0 else hour} o'clock"


_ANSWER_DIRECTIONS: tuple[tuple[str, float], ...] = (
    (r"(?:go\s+|walk\s+|move\s+|look\s+|turn\s+|keep\s+)?(?:straight(?:\s+ahead)?|forwards?|"
     r"ahead|front|in\s+front(?:\s+of\s+me)?|to\s+(?:my|the)\s+front|my\s+front|"
     r"north)", 0.0),
    (r"(?:go\s+|walk\s+|move\s+|look\s+|turn\s+)?(?:backwards?|back|behind(?:\s+me)?|rear|"
     r"(?:turn\s+)?around|turn\s+back|to\s+(?:my|the)\s+(?:back|rear)|my\s+back|south)", 180.0),
    (r"(?:go\s+|walk\s+|move\s+|look\s+|turn\s+|to\s+|on\s+)?(?:(?:my|the)\s+)?left(?:\s*-?\s*hand)?"
     r"(?:\s+side)?(?:\s+of\s+me)?", 270.0),
    (r"(?:go\s+|walk\s+|move\s+|look\s+|turn\s+|to\s+|on\s+)?(?:(?:my|the)\s+)?right(?:\s*-?\s*hand)?"
     r"(?:\s+side)?(?:\s+of\s+me)?", 90.0),
)
_ANSWER_RE = [(re.compile(rf"^(?:{p})$"), b) for p, b in _ANSWER_DIRECTIONS]
_ANSWER_CLOCK = re.compile(rf"^(?:at\s+|my\s+|at\s+my\s+)?{_HOUR}\s*(?:o'clock)?(?:\s+direction)?$")


def answer_direction(answer: str) -> tuple[float, float] | None:
    """An answer read as an egocentric direction: (clockwise bearing, width), or None when it
    is not one ("left" -> (270, 90); "turn around" -> (180, 90); "3 o'clock" -> (90, 30)).
    Compass words are not egocentric and are not read."""
    low = re.sub(r"[^a-z0-9' -]", " ", normal_text(answer)).strip()
    low = " ".join(low.split())
    if not low or re.search(r"\b(?:north|south|east|west)\b", low):
        return None
    for pat, bearing in _ANSWER_RE:
        if pat.match(low):
            return bearing, 90.0
    m = _ANSWER_CLOCK.match(low)
    if m and ("o'clock" in low or "direction" in low):
        hour = m.group("hour")
        return (_HOURS[hour] if hour in _HOURS else int(hour)) % 12 * 30.0, 30.0
    return None


#: questions whose answer does not depend on which way the agent faces, by pattern name;
#: a question that also names an egocentric direction, what the agent faces or sees, or a
#: way to go is never heading-free
HEADING_FREE: dict[str, str] = {
    "count_in_room": r"\bhow\s+many\b.*\b(?:in\s+(?:the|this)\s+(?:room|kitchen|bathroom|"
                     r"bedroom|office|space|area)|are\s+there|total|in\s+all|altogether)\b",
    "colour": r"\b(?:what|which)\s+(?:is\s+the\s+)?colou?rs?\b|\bcolou?r\s+of\b",
    "material": r"\bmaterial\b|\bmade\s+(?:of|from|out\s+of)\b|\bwooden\s+or\b|\bglass\s+or\b",
    "shape": r"\bshape\b|\bround\s+or\b|\bsquare\s+or\b|\brectangular\s+or\b",
    "state": r"\b(?:open|opened|closed|shut)\s+or\b|\bor\s+(?:open|opened|closed|shut)\b|"
             r"\b(?:on|off)\s+or\s+(?:on|off)\b|\bmessy\s+or\b|\bor\s+messy\b|\btidy\s+or\b|"
             r"\bempty\s+or\b|\bor\s+empty\b|\bmade\s+or\b|\bturned\s+on\b|\bclean\s+or\b",
    "reach": r"\b(?:can|could)\s+i\s+(?:reach|touch|grab)\b|\bwithin\s+(?:my\s+)?(?:arm'?s?\s+)?"
             r"reach\b|\breachable\b",
    "nearer": r"\bwhich\b.*\b(?:closer|nearer|farther|further)\b|\b(?:closer|nearer|farther|"
              r"further)\b.*\bor\b|\bwhat\s+is\s+(?:the\s+)?(?:closest|nearest|farthest|"
              r"furthest)\s+(?:object|thing|item|furniture)?\s*(?:to\s+me)?\s*\?",
    "on_or_in_named": r"\bwhat\s+(?:is|are|can\s+be|do\s+i\s+see)\s+(?:on|in|inside|under|"
                      r"underneath|beneath|above|on\s+top\s+of|next\s+to|beside|near|by|"
                      r"behind|in\s+front\s+of)\s+"
                      r"(?:the|my|this|that)\b",
    "between_named": r"\b(?:between|on\s+top\s+of|next\s+to|beside|under|above|inside)\s+"
                     r"(?:the|a|my)\s+\w+(?:\s+\w+)?\s+and\s+(?:the|a|my)\b",
    "doing_holding": r"\bwhat\s+am\s+i\s+(?:(?:sitting|standing|lying|leaning)\s+(?:on|in|at|"
                     r"against|inside|under)\b|holding|doing|using|touching|wearing)\b|"
                     r"\bwhat\s+(?:did|do)\s+i\s+(?:put|place|sit)\b",
    "odd_even_in_room": r"\bodd\s+or\s+even\b.*\bin\s+the\s+room\b|"
                        r"\bin\s+the\s+room\b.*\bodd\s+or\s+even\b",
}
_HEADING_FREE_RE = {k: re.compile(v) for k, v in HEADING_FREE.items()}
# what makes a question depend on the heading, whatever else it says
_HEADING_CUES = re.compile(
    r"\b(?:see|seen|visible|view|look|looking|face|facing|faced|turn|turned|turning|go|walk|"
    r"head|move|direction|way|sides?|ahead|left|right|o'clock|north|south|east|west|across|"
    r"opposite|first|run\s+into|straight)\b|\bbehind\b(?!\s+(?:the|a|an|my|this|that|some|"
    r"it|them|him|her)\b)|\bin\s+front\s+of\s*\?")


_SIDE_OF_OBJECT = re.compile(r"\b(?:which|what)\s+(?:side|end|part)\s+of\s+(?!me\b)")
_ASKS_DIRECTION = re.compile(
    r"\b(?:which|what)\s+(?:direction|way|side)\b|\bwhere\s+(?:should|do|can|would|must|"
    r"will|is|are)\b|\bhow\s+(?:should|do|can|would|must)\s+i\s+(?:turn|move|go)\b|"
    r"\b(?:go|turn|look|walk|head)\s+(?:left|right)\s+or\b|\bto\s+what\s+direction\b|"
    r"\bleft\s+or\s+(?:my\s+|the\s+|to\s+the\s+)?right\b|\bright\s+or\s+(?:my\s+|the\s+|to\s+the\s+)?left\b|"
    r"\bin\s+front\b[^?]*\bor\b[^?]*\bbehind\b|\bbehind\b[^?]*\bor\b[^?]*\bin\s+front\b|"
    r"\bwhich\s+way\b|\bwhat\s+side\b")
_BINARY = re.compile(
    r"\bleft\b.*\bright\b|\bright\b.*\bleft\b|\b(?:which|what)\s+side\b|"
    r"\bin\s+front\b.*\bbehind\b|\bbehind\b.*\bin\s+front\b|\bfront\b.*\bor\b.*\bback\b")


@functools.lru_cache(maxsize=65536)
def question_kind(question: str, answers: tuple[str, ...] = ()) -> tuple[str, object]:
    """What a question asks, for the answer rules:

    * ``("direction", binary)``: a direction to go, turn or look, or where something is
      (``which way should I go``, or any question ``answers`` answer with a direction);
      ``binary`` True when only two opposite directions can be the answer (``is it on my
      left or right?``, ``which side``, ``the room in front of me or the one behind me``);
    * ``("at", (bearing, width, phrase))``: what is in an egocentric direction
      (``what is on my left?``);
    * ``("heading_free", pattern)``: nothing that depends on the heading
      (:data:`HEADING_FREE`);
    * ``("other", None)``: anything else (it depends on the heading, in no way the text
      reader follows).

    A question about a side of an object (``which side of the cabinet``) is allocentric and
    never a direction.
    """
    low = normal_text(question)
    if _SIDE_OF_OBJECT.search(low):
        return "other", None
    blanked = _blank(low, _ADVERBIALS)
    ego = _EGO_RE.search(blanked)
    if not _HEADING_CUES.search(low) and not ego:
        for name, pat in _HEADING_FREE_RE.items():
            if pat.search(low):
                return "heading_free", name
    if _ASKS_DIRECTION.search(low) or any(answer_direction(a) for a in answers):
        return "direction", bool(_BINARY.search(low))
    if re.match(r"^\s*(?:what|which\s+\w+)\s+(?:is|are|was|can\s+i\s+see|do\s+i\s+see)\b|"
                r"^\s*is\s+there\s+(?:anything|something)\b", low):
        reading = read(low)
        asked = list(_EGO_RE.finditer(blanked))
        if len(asked) == 1 and all(m.head in GENERIC for m in reading.mentions):
            bearing, width = _bearing(asked[0])
            return "at", (bearing, width, low[asked[0].start():asked[0].end()].strip())
    return "other", None


# words that tie a situation to the agent's heading, beyond what the English reader places
_HEADING_WORDS = re.compile(
    r"\b(?:(?<!lying )(?<!laying )on\s+my\s+back|at\s+my\s+back|facing|faced|i\s+face|"
    r"faces?\s+(?:the|a|an|towards?)|front|ahead|behind|back\s+to|left|right|o'clock|clock|"
    r"towards?|look(?:s|ed|ing)?\s+(?:at|toward|towards|out)|"
    r"turn(?:s|ed|ing)?\s+(?:to|toward|towards)|straight|north|south|east|west|opposite\s+me)\b")


def heading_cue(situation: str) -> bool:
    """Whether a situation ties the agent's heading to something (an object in front, on a
    side, at a clock hour, faced or turned towards). One that does not (\"I am turning on the
    lamp while standing between two beds\") stays true after any turn, so a turned item with
    it asks for another answer from the same input."""
    reading = read(situation)
    return bool(reading.mentions or reading.unresolved
                or _HEADING_WORDS.search(normal_text(situation)))
