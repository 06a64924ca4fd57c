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
* **words**: a text made uniform (:func:`normal_text`), singular and plural nouns.

Its other half, :mod:`hf_real3d.english.asks`, reads questions and answers.

Where the reader cannot tell, it says so (:attr:`Reading.unresolved`, ``several``) instead of
guessing: the checker then leaves the item to the scene.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field

from hf_real3d.geometry import direction_names

__all__ = ["ALWAYS_SEVERAL", "heading_cue", "GENERIC", "HOUR_PATTERN", "HOUR_WORDS", "Mention",
           "Reading", "Relation", "bearing_name", "directions_in", "hour_bearing", "normal_text",
           "plural", "read", "mentions", "singular", "tokens"]

#: clock hours as words, 12 o'clock first
HOUR_WORDS = ("twelve", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine",
              "ten", "eleven")
_HOURS = {w: i for i, w in enumerate(HOUR_WORDS)}
#: a clock hour, as digits or a word (group ``hour``)
HOUR_PATTERN = r"(?P<hour>1[0-2]|[1-9]|" + "|".join(HOUR_WORDS) + r")"


def hour_bearing(hour: str) -> float:
    """The clockwise bearing of a clock hour ("3" or "three" -> 90)."""
    return (_HOURS[hour] if hour in _HOURS else int(hour)) % 12 * 30.0


def plural(label: str) -> str:
    """The plural of an object label ("shelf" -> "shelves", "box" -> "boxes")."""
    if label.endswith("shelf"):
        return label[:-1] + "ves"
    if label.endswith(("s", "x", "ch", "sh")):
        return label + "es"
    return label + "s"


def singular(word: str) -> str:
    """The singular of a plural object word (the inverse of :func:`plural`)."""
    if word.endswith("shelves"):
        return word[:-3] + "f"
    for suf in ("ches", "shes", "xes", "ses"):
        if word.endswith(suf):
            return word[:-2]
    return word[:-1] if word.endswith("s") else word

#: names a room holds several things of, whatever a text says: which one a text means is
#: not for the text to settle
ALWAYS_SEVERAL = frozenset({"wall", "floor", "ceiling", "ground", "window", "corner", "room",
                            "side", "area", "way", "place", "spot", "thing", "object", "item",
                            "stuff", "something", "anything", "everything", "nothing"})

CONTRACTIONS = {"i'm": "i am", "there's": "there is", "it's": "it is", "that's": "that is",
                 "i've": "i have", "i'd": "i would", "can't": "can not", "don't": "do not",
                 "isn't": "is not", "aren't": "are not"}
_CONTRACTION_RE = re.compile(r"\b(?:" + "|".join(CONTRACTIONS) + r")\b")
CLOCK_RE = re.compile(r"o\s*['`]?\s*clock|o'\s*clock|oclock|o-clock")


@functools.lru_cache(maxsize=65536)
def normal_text(text: str) -> str:
    """``text`` lower-cased, with curly quotes, contractions ("I'm"), "o'clock" spellings and
    white space made uniform: what two texts are compared by."""
    low = str(text).lower().replace("\u2019", "'").replace("\u2018", "'")
    low = _CONTRACTION_RE.sub(lambda m: CONTRACTIONS[m.group(0)], low)
    low = CLOCK_RE.sub("o'clock", low)
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
STOPS = frozenset(
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
# "facing the crib and the curtains are on my left": what the agent faces is not coordinated
_FACED_BY = frozenset("facing face faces looking watching staring toward towards".split())
_LOCATIVE = frozenset("on in at by near beside under inside atop onto into above below "
                      "underneath beneath against".split())
# adverbials that sit between an object and its direction and are not objects themselves
ADVERBIALS = re.compile(r"\b(?:within\s+(?:arm'?s?\s+|my\s+)?reach|in\s+reach|close\s+by|"
                         r"next\s+to\s+me|beside\s+me|near\s+me|nearby|on\s+the\s+floor|"
                         r"on\s+the\s+ground|against\s+the\s+wall|on\s+the\s+wall)\b")

_SIDE_WORDS = r"(?:immediate|direct|far|very|extreme|exact)"
_HOUR = HOUR_PATTERN
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
EGO_RE = re.compile("|".join(f"(?P<d{i}>{p})" for i, (p, _, _) in enumerate(_EGO_PATTERNS)))
# both sides at once: which side an object is on is not said
BOTH_SIDES = re.compile(r"\b(?:left\s+and\s+(?:my\s+|the\s+)?right|right\s+and\s+(?:my\s+|the\s+)?"
                         r"left|both\s+sides|either\s+side|each\s+side|all\s+around|"
                         r"my\s+sides)\b")
# allocentric: a side of, or the front of, something that is not the agent
_ALLO_RE = re.compile(
    r"\b(?P<side>left|right)(?:\s*-?\s*hand)?(?:\s+(?:side|end|corner|part|half|edge))?\s+of\s+"
    r"(?!me\b|myself\b)|\b(?:in\s+front|behind|in\s+back)\s+of\s+(?!me\b|myself\b)|"
    r"\bbehind\s+(?=(?:the|a|an|my|this|that|some)\b)|"
    r"\bthe\s+(?P<side2>left|right)\s+(?:side|end|corner|part|half|edge|wall)\b(?!\s+of\b)")
FACING_RE = re.compile(
    r"\b(?P<verb>facing\s+away\s+from|(?:with\s+)?my\s+back(?:side)?\s+(?:is\s+|turned\s+)?"
    r"(?:to|towards?|facing|against|at)|(?:with\s+)?(?:my\s+)?backside\s+(?:is\s+)?"
    r"(?:to|towards?|facing|against|at)?|"
    r"facing(?:\s+(?:directly|straight|right|towards?))*|looking(?:\s+(?:directly|straight|"
    r"right))?\s+(?:at|towards?|out(?:\s+of)?|into)|staring(?:\s+(?:directly|straight))?\s+at|"
    r"watching|(?<=i\s)face|turned\s+towards?)\s+")
# "standing in front of the sink": the sink is in front of the agent
IN_FRONT_OF_IT = re.compile(r"\b(?:i\s+am\s+|am\s+|i\s+)?(?:standing|sitting|kneeling|"
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
_PLACE_RE = re.compile(
    r"\b(?:at|on|by|in|near)\s+(?:the|a|my)\s+(?P<part>(?:(?:leftmost|rightmost|left|right|"
    r"far|near|other|front|back)(?:\s*-?\s*hand)?\s+)?(?:foot|head|end|side|edge|corner|"
    r"cushion|cousion|seat|arm|middle|center|centre|part))\s+of\s+(?=(?:the|a|an|my)\s)")
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
    #: the agent is placed so ("I am standing in front of the desk"), which some texts mean
    #: egocentrically (the desk in front of me); a thing otherwise ("the chair in front of it")
    agent: bool = False


@dataclass
class Reading:
    """What a text says relative to the agent."""

    mentions: list[Mention] = field(default_factory=list)
    relations: list[Relation] = field(default_factory=list)
    unresolved: list[str] = field(default_factory=list)  # direction phrases with no object
    several: set[str] = field(default_factory=set)  # heads the text names several ones of
    # objects placed above or below the agent ("above me was my bed"): no turn moves them
    vertical: list[tuple[str, str, str]] = field(default_factory=list)  # (head, up/down, phrase)
    # where on a thing the agent is ("at the foot of the bed": (bed, foot, phrase)): no turn
    # in place changes it
    places: list[tuple[str, str, str]] = field(default_factory=list)


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
    while i >= 0 and toks[i][0] not in STOPS and toks[i][0] not in _DETERMINERS:
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


def np_forward(toks: list[tuple[str, int, int]],
                i: int) -> tuple[tuple[str, ...], str, int] | None:
    """The noun phrase starting at token ``i`` ("the end of the bed" is the bed): (words,
    number, index after it)."""
    words = []
    while i < len(toks) and toks[i][0] in _DETERMINERS | {"towards", "toward", "directly"}:
        words.append(toks[i][0])
        i += 1
    start = len(words)
    while i < len(toks) and toks[i][0] not in STOPS and toks[i][0] not in _DETERMINERS and \
            not (len(words) > start and toks[i][0].endswith("ing")
                 and toks[i][0] not in _ING_NOUNS):
        words.append(toks[i][0])
        i += 1
    body = words[start:]
    if body and body[-1] in _PART_OF and i < len(toks) and toks[i][0] == "of":
        return np_forward(toks, i + 1)
    if not body and i < len(toks) and toks[i][0] in ("side", "front", "back", "end") and \
            i + 1 < len(toks) and toks[i + 1][0] == "of":
        return np_forward(toks, i + 2)
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
        if nxt is None or toks[i - 1][0] in STOPS or (
                nxt[2] >= 0 and toks[nxt[2]][0] in _LOCATIVE | _FACED_BY | {"of", "from", "to"}):
            break
        words, plural, i = nxt
        out.append((words, plural))
    # carrying: "X on/in/by Y <direction>" places X there too
    if len(out) == 1 and i >= 1 and toks[i][0] in _LOCATIVE:
        j = i - 1
        carrier = _np_back(toks, j) if toks[j][0] not in STOPS else None
        if carrier is not None and carrier[2] >= 0 and toks[carrier[2] + 1][0] in _DETERMINERS:
            before = toks[carrier[2]][0]
            # "sitting on the chair to my left": the agent sits, nothing is carried
            if before not in ("am", "i", "sitting", "standing", "lying", "leaning", "kneeling"):
                out.append((carrier[0], carrier[1]))
    return out


def _after(toks: list[tuple[str, int, int]], start: int) -> list[tuple[tuple[str, ...], str]]:
    """Noun phrases starting at token ``start`` ("to my left is a desk and a chair")."""
    out = []
    got = np_forward(toks, start)
    while got is not None and len(out) < 4:
        words, plural, i = got
        out.append((words, plural))
        if i < len(toks) and toks[i][0] in ("and", ",") and i + 1 < len(toks) and \
                toks[i + 1][0] in _DETERMINERS:
            got = np_forward(toks, i + 1)
        else:
            break
    return out


def ego_bearing(m: re.Match) -> tuple[float, float]:
    """(clockwise bearing, width) of a direction phrase :data:`EGO_RE` matched."""
    k = int(next(g for g, v in m.groupdict().items() if v and g.startswith("d"))[1:])
    _, bearing, width = _EGO_PATTERNS[k]
    if bearing is None:
        bearing = hour_bearing(m.group("hour"))
    return float(bearing), width


def first_token_at(toks: list[tuple[str, int, int]], pos: int) -> int:
    """The index of the first token starting at or after character ``pos``."""
    return next((i for i, t in enumerate(toks) if t[1] >= pos), len(toks))


def agent_faces(toks: list[tuple[str, int, int]], at: int) -> bool:
    """Whether "facing" at token ``at`` is said of the agent, not of an object ("a chair facing
    the table is on my left")."""
    i = at - 1
    if i < 0 or toks[i][0] in STOPS or toks[i][0] in ("currently", "now", "still"):
        return True
    got = _np_back(toks, i)
    if got is None:
        return True
    before = toks[got[2]][0] if got[2] >= 0 else ""
    if before == "of":  # "at the foot of the bed facing the pillow": a locative just before
        before = next((toks[j][0] for j in range(got[2] - 1, max(got[2] - 5, -1), -1)
                       if toks[j][0] in _LOCATIVE), "")
    # "sitting on a chair facing the desk": the agent, on the chair, faces the desk
    return before in _LOCATIVE


def blank_out(text: str, pattern: re.Pattern) -> str:
    """``text`` with each match of ``pattern`` replaced by spaces (offsets kept)."""
    return pattern.sub(lambda m: " " * (m.end() - m.start()), text)


def _relations(low: str, toks: list[tuple[str, int, int]]) -> list[Relation]:
    out = []
    for m in _ALLO_RE.finditer(low):
        said = low[m.start():m.end()].strip()
        side = m.group("side") or m.group("side2") or (
            "front" if said.startswith("in front") else "behind")
        anchor = np_forward(toks, first_token_at(toks, m.end()))
        if m.group("side2"):
            anchor = None
        out.append(Relation(side, anchor[0][-1] if anchor else None, said,
                            bool(_AGENT_BEFORE.search(low[:m.start()]))))
    return out


# what ends the text before a relation that places the agent itself
_AGENT_BEFORE = re.compile(r"(?:\bi(?:\s+am|\s+was)?|\bme|\bmyself|\b\w+ing|\bseated|\bam|"
                           r"\bwas|\bstand|\bsit|\bkneel)\s*(?:right\s+|just\s+|directly\s+)?$")


def _placed(found: list[tuple[tuple[str, ...], str]], bearing: float, width: float,
            phrase: str, facing: bool = False, verb_first: bool = False) -> list[Mention]:
    return [Mention(words[-1], words, bearing, width,
                    f"{phrase} {' '.join(words)}" if verb_first else
                    f"{' '.join(words)} {phrase}", facing, number)
            for words, number in found]


def _faced(scan: str, toks: list[tuple[str, int, int]]) -> list[Mention]:
    """What the agent faces or has its back to ("facing the desk", "standing in front of the
    sink", "with my back to the door")."""
    out = []
    for m in FACING_RE.finditer(scan):
        verb = m.group("verb")
        at = first_token_at(toks, m.start())
        if verb.startswith(("facing", "looking", "staring", "watching", "face", "turned")) and \
                not agent_faces(toks, at):
            continue
        got = np_forward(toks, first_token_at(toks, m.end()))
        if got is None:
            continue
        behind = "away" in verb or "back" in verb
        out += _placed([(got[0], got[1])], 180.0 if behind else 0.0, 90.0,
                       scan[m.start():m.end()].strip(), facing=not behind, verb_first=True)
    for m in IN_FRONT_OF_IT.finditer(scan):
        got = np_forward(toks, first_token_at(toks, m.end()))
        if got is not None:
            out += _placed([(got[0], got[1])], 0.0, 90.0, scan[m.start():m.end()].strip(),
                           facing=True, verb_first=True)
    return out


def _given(scan: str, toks: list[tuple[str, int, int]], m: re.Match
           ) -> list[tuple[tuple[str, ...], str]]:
    """The noun phrases a direction phrase ``m`` is given to, before or after it."""
    first = first_token_at(toks, m.start())
    rest = _AFTER_DIRECTION.match(scan[m.end():])
    opens = first == 0 or toks[first - 1][0] in _CLAUSE_START
    found: list[tuple[tuple[str, ...], str]] = []
    if rest and opens:  # "and to my left was a desk"
        found = _after(toks, first_token_at(toks, m.end() + rest.end()))
    if not found:
        found = _before(toks, first)
    if not found and rest:  # "on my right is a box", "to my left there are two chairs"
        found = _after(toks, first_token_at(toks, m.end() + rest.end()))
    return found


def _egocentric(scan: str, toks: list[tuple[str, int, int]], out: Reading) -> None:
    """Objects given an egocentric direction, into ``out`` (phrases with none: unresolved)."""
    both = [(m.start(), m.end()) for m in BOTH_SIDES.finditer(scan)]
    for m in EGO_RE.finditer(scan):
        phrase = scan[m.start():m.end()].strip()
        if any(s <= m.start() < e or m.start() <= s < m.end() for s, e in both):
            out.unresolved.append(phrase)  # "on my left and right"
            continue
        if re.search(r"\b(?:lying|laying|lie|lay)\s+on\s+$", scan[:m.start()]):
            continue  # "lying on my back" says how, not where
        found = _given(scan, toks, m)
        if not found:
            out.unresolved.append(phrase)
            continue
        out.mentions += _placed(found, *ego_bearing(m), phrase)
    for m in _VERTICAL_RE.finditer(scan):
        first = first_token_at(toks, m.start())
        rest = _AFTER_DIRECTION.match(scan[m.end():])
        opens = first == 0 or toks[first - 1][0] in _CLAUSE_START
        found = _after(toks, first_token_at(toks, m.end() + rest.end())) if rest and opens \
            else _before(toks, first)
        way = "up" if m.group(1) in ("above", "over", "overhead") else "down"
        out.vertical += [(w[-1], way, scan[m.start():m.end()]) for w, _ in found]


def _several_named(toks: list[tuple[str, int, int]]) -> set[str]:
    """Heads a text names as one and as several, or as "another": there are several."""
    heads: dict[str, set[str]] = {}
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
    return {h for h, n in heads.items() if "other" in n or n >= {"", "plural"}}


def _places(low: str, toks: list[tuple[str, int, int]]) -> list[tuple[str, str, str]]:
    out = []
    for m in _PLACE_RE.finditer(low):
        anchor = np_forward(toks, first_token_at(toks, m.end()))
        if anchor is not None:
            out.append((anchor[0][-1], m.group("part"),
                        f"{m.group(0)}{' '.join(anchor[0])}"))
    return out


@functools.lru_cache(maxsize=65536)
def read(text: str) -> Reading:
    """Every object ``text`` places relative to the agent, in order of appearance, the
    allocentric phrases it holds and the direction phrases it leaves without an object.
    (Cached: the reading returned is shared, and must not be changed.)"""
    low = normal_text(text)
    scan = blank_out(low, ADVERBIALS)
    toks = tokens(scan)
    out = Reading(relations=_relations(low, toks), mentions=_faced(scan, toks),
                  places=_places(low, toks))
    _egocentric(scan, toks, out)
    out.several = _several_named(toks)
    return out


def mentions(text: str) -> list[Mention]:
    """Every object ``text`` places relative to the agent (:func:`read`'s mentions)."""
    return read(text).mentions


def bearing_name(bearing: float, width: float = 90.0) -> str:
    """A bearing's name in geometry's words (:func:`hf_real3d.geometry.direction_names`):
    ``front`` / ``right`` / ``back`` / ``left``, or a clock hour."""
    names = direction_names(4 if width >= 90 else 12)
    step = 360.0 / len(names)
    if width >= 90 and abs(bearing / step - round(bearing / step)) > 1e-6:
        return f"{bearing:g} deg"
    return names[int(round(bearing / step)) % len(names)]


@functools.lru_cache(maxsize=65536)
def directions_in(text: str) -> tuple[tuple[float, float, str], ...]:
    """Each egocentric direction phrase of ``text`` (adverbials like "within reach" aside),
    as (clockwise bearing, width, phrase)."""
    low = normal_text(text)
    return tuple((*ego_bearing(m), low[m.start():m.end()].strip())
                 for m in EGO_RE.finditer(blank_out(low, ADVERBIALS)))


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
