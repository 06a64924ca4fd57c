"""Is a rotated item consistent with its turn? Named rules over its text and, given the
scene, over its geometry (Real-3DQA App. D.2).

A rotated item says where things are after the agent turned ``turn`` degrees clockwise in
place. Its text is read into *mentions*: an object and its egocentric bearing, clockwise
from the front (``in front of me`` 0, ``on my right`` 90, ``behind me`` 180, ``on my left``
270, ``in my N o'clock direction`` 30 N, ``facing X`` 0, ``with my back to X`` 180).
Comparing the mentions of viewpoint 0 with those of the turned viewpoint, through the one
turn rule of :func:`hf_real3d.geometry.bearing_after_turn`, gives the text rules:

* ``text_not_turned``: the situation is viewpoint 0's word for word (case and spaces aside);
  the other text rules are not applied to it.
* ``same_object_faced``: the turned situation faces the object viewpoint 0 faces.
* ``mirror``: the same object faced, with an object moved from one side to the other
  (left and right swapped): a mirror image, which no turn produces.
* ``direction_wrong``: an object named with a direction at both viewpoints is not where the
  turn sends it (it did not move, or moved the wrong way).

With the scene (its objects' bounding-box centres) and the turned pose:

* ``quadrant_situation``: an object the turned situation names with a direction has no
  instance in that direction from the turned pose.
* ``quadrant_answer``: the question asks about a direction ("what is on my left?") and the
  answer names an object with no instance there.
* ``answer_geometry``: the question's meaning is known (a synthetic question's recorded
  semantics, or a real question that matches a directional template) and the scene gives
  an unambiguous answer from the turned pose that is not among the item's answers (a
  question about what the agent faces is answered from the object the turned situation
  faces).

Objects are matched by name (the head noun, singular). Without the scene, a text that names
another object of the same name (a second chair) reads as the same object; with the scene,
names the scene holds several objects of are left to the scene rules (walls, floors and
ceilings always are: "facing the wall" may name another wall). Walls, floors and ceilings,
whose box centres say nothing of their direction, are left out of the scene rules. A text naming one
object in two
directions is ambiguous and that object is left out. A direction is "where it should be"
within half its phrase's width (45 degrees for front/right/behind/left, 15 for a clock
hour); in the scene rules an object within ``margin_deg`` of that range still passes.
Everything here is pure: :mod:`hf_real3d.real3dqa.check_run` reads the files and writes
the outputs.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from hf_real3d.answers import normalize_answer
from hf_real3d.geometry import Pose, bearing_after_turn, wrap_degrees
from hf_real3d.real3dqa.format import same_text
from hf_real3d.scene import STRUCTURAL_LABELS, Scene
from hf_real3d.spatial import Unanswerable, View, answer_from_geometry, parse_question, singular

__all__ = [
    "HOUR_WORDS",
    "RULES",
    "several_named",
    "TEXT_RULES",
    "SCENE_RULES",
    "Mention",
    "Hit",
    "mentions",
    "check_text",
    "check_scene",
    "turn_of",
]

TEXT_RULES: dict[str, str] = {
    "text_not_turned": "the situation at a turned viewpoint is viewpoint 0's, word for word",
    "same_object_faced": "the situation at a turned viewpoint faces the object viewpoint 0 "
                         "faces",
    "mirror": "the same object faced with an object moved to the other side (left and right "
              "swapped): a mirror image, not a turn",
    "direction_wrong": "an object named with a direction at both viewpoints is not where the "
                       "turn sends it (it did not move, or moved the wrong way)",
}
SCENE_RULES: dict[str, str] = {
    "quadrant_situation": "an object the turned situation names with a direction has no "
                          "instance in that direction from the turned pose",
    "quadrant_answer": "the question asks about a direction and the answer names an object "
                       "with no instance in that direction from the turned pose",
    "answer_geometry": "the scene answers the question unambiguously from the turned pose, "
                       "and that answer is not among the item's answers",
}
RULES: dict[str, str] = {**TEXT_RULES, **SCENE_RULES}

#: clock hours as words, 12 o'clock first
HOUR_WORDS = ("twelve", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine",
              "ten", "eleven")
_HOURS = {w: i for i, w in enumerate(HOUR_WORDS)}
_SIDE = r"(?:immediate\s+|direct\s+|far\s+)?"
_NOT_OF = r"(?!\s+of\s+(?!me\b))"  # "to the left of the door" is not egocentric
# (pattern, clockwise bearing or None for a clock hour, the phrase's width in degrees)
_DIRECTION_PATTERNS: tuple[tuple[str, float | None, float], ...] = (
    (r"in\s+front\s+of\s+me|ahead\s+of\s+me|(?:to|on|at|in)\s+my\s+front|straight\s+ahead|"
     r"directly\s+ahead", 0.0, 90.0),
    (r"behind\s+me|(?:to|on|at|in)\s+my\s+(?:back|rear)(?:\s+side)?", 180.0, 90.0),
    (rf"(?:on|to|at)\s+(?:my|the)\s+{_SIDE}left(?:[-\s]hand)?(?:\s+side)?(?:\s+of\s+me)?{_NOT_OF}",
     270.0, 90.0),
    (rf"(?:on|to|at)\s+(?:my|the)\s+{_SIDE}right(?:[-\s]hand)?(?:\s+side)?(?:\s+of\s+me)?"
     rf"{_NOT_OF}", 90.0, 90.0),
    (r"(?:(?:in|at|on|to|towards?)\s+)?(?:my\s+)?(?P<hour>1[0-2]|[1-9]|" + "|".join(_HOURS)
     + r")\s*o'?\s?clock(?:\s+direction)?", None, 30.0),
)
_DIRECTION_RE = re.compile("|".join(f"(?P<d{i}>{p})" for i, (p, _, _) in
                                    enumerate(_DIRECTION_PATTERNS)))
_FACING_RE = re.compile(r"\b(?P<verb>facing\s+away\s+from|(?:with\s+)?my\s+back\s+(?:is\s+)?"
                        r"(?:to|towards?|facing|against)|facing(?:\s+towards?)?|"
                        r"looking\s+(?:at|towards?)|staring\s+at|(?:i\s+)?face)\s+")
_TOKEN_RE = re.compile(r"[a-z0-9]+(?:['-][a-z0-9]+)*|[,.;:!?()]")
_DETERMINERS = frozenset(
    "a an the some another two three four five six several many few couple pair this that "
    "these those my its their both other".split())
# words that end a noun phrase read outwards from a direction or a verb
_STOPS = frozenset(
    "with while having have has had there i am is are was were be and or but so as by beside "
    "near next of on in at to from into onto under over above below behind between against "
    "toward towards facing looking standing sitting lying leaning holding where when which "
    "who whom that me my it them you we he she they "
    "also then than if not no just right left front back ahead directly closest nearest "
    "furthest farthest further farther far close within around across along through up down "
    "out off about after before past like for during without inside outside beneath "
    "underneath beyond while whilst".split()) | frozenset(",.;:!?()")
# what may stand between a noun phrase and the direction it is given ("a chair is on ...")
_LINKS = frozenset("is are was were sits sit stands stand lies lie located placed positioned "
                   "situated directly right just immediately straight which that who on all "
                   "also".split())
_PRONOUNS = frozenset("it them this that these those one ones".split())
_PART_OF = frozenset("end side foot edge corner middle center centre top bottom front back "
                     "part".split())
_AFTER_DIRECTION = re.compile(r"^\s*(?:side\s+)?(?:,\s*)?(?:there\s+(?:is|are)|there's|is|are|"
                              r"sits|stands|lies|i\s+(?:can\s+)?see|i\s+have)\s+")


@dataclass(frozen=True)
class Mention:
    """An object named in a text with an egocentric bearing (clockwise degrees)."""

    head: str  # the head noun, singular: what identifies the object across texts
    words: tuple[str, ...]  # the noun phrase, each word singular (matched to scene labels)
    bearing: float
    width: float  # 90 for front/right/behind/left, 30 for a clock hour
    phrase: str  # the text that said it
    facing: bool = False  # said as "facing X"


@dataclass(frozen=True)
class Hit:
    """A rule an item breaks, with the phrases that triggered it."""

    rule: str
    phrases: tuple[str, ...]
    detail: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"rule": self.rule, "phrases": list(self.phrases), "detail": self.detail}


def _tokens(text: str) -> list[tuple[str, int, int]]:
    return [(m.group(0), m.start(), m.end()) for m in _TOKEN_RE.finditer(text)]


def _phrase(words: list[str]) -> tuple[str, ...] | None:
    """A noun phrase's words, singular, or None when it is empty or a pronoun."""
    words = [w for w in words if w not in _DETERMINERS and not w.isdigit()]
    if not words or words[-1] in _PRONOUNS:
        return None
    return tuple(singular(w) for w in words[-3:])


def _before(toks: list[tuple[str, int, int]], end: int) -> list[tuple[str, ...]]:
    """Noun phrases ending just before token ``end`` ("a mini fridge and a trash can")."""
    i = end - 1
    coordinate = True
    while i >= 0 and toks[i][0] in _LINKS:
        if toks[i][0] in ("is", "sits", "stands", "lies"):
            coordinate = False  # a singular verb: one subject
        i -= 1
    out = []
    while i >= 0 and len(out) < 3:
        words = []
        while i >= 0 and toks[i][0] not in _STOPS and toks[i][0] not in _DETERMINERS:
            words.insert(0, toks[i][0])
            i -= 1
        while i >= 0 and toks[i][0] in _DETERMINERS:
            i -= 1
        np_ = _phrase(words)
        if np_ is None:
            break
        out.append(np_)
        if not (coordinate and i >= 1 and toks[i][0] in ("and", ",")
                and toks[i - 1][0] not in _STOPS):
            break
        i -= 1
    return out


def _after(toks: list[tuple[str, int, int]], start: int) -> tuple[str, ...] | None:
    """The noun phrase starting at token ``start`` ("the end of the bed" is the bed)."""
    i = start
    while i < len(toks) and toks[i][0] in _DETERMINERS | {"towards", "toward", "directly"}:
        i += 1
    words = []
    while i < len(toks) and toks[i][0] not in _STOPS and toks[i][0] not in _DETERMINERS:
        words.append(toks[i][0])
        i += 1
    if words and words[-1] in _PART_OF and i < len(toks) and toks[i][0] == "of":
        return _after(toks, i + 1)
    return _phrase(words)


def _bearing(m: re.Match) -> tuple[float, float]:
    """(clockwise bearing, width) of a direction phrase :data:`_DIRECTION_RE` matched."""
    k = int(next(g for g, v in m.groupdict().items() if v and g.startswith("d"))[1:])
    _, bearing, width = _DIRECTION_PATTERNS[k]
    if bearing is None:
        hour = m.group("hour")
        bearing = (_HOURS[hour] if hour in _HOURS else int(hour)) % 12 * 30.0
    return float(bearing), width


def _first_token_at(toks: list[tuple[str, int, int]], pos: int) -> int:
    return next((i for i, t in enumerate(toks) if t[1] >= pos), len(toks))


def mentions(text: str) -> list[Mention]:
    """Every object ``text`` names with an egocentric direction, in order of appearance."""
    low = text.lower().replace("\u2019", "'")
    toks = _tokens(low)
    out: list[Mention] = []
    for m in _FACING_RE.finditer(low):
        verb = m.group("verb")
        np_ = _after(toks, _first_token_at(toks, m.end()))
        if np_ is None:
            continue
        behind = verb.startswith(("facing away", "with my back", "my back"))
        out.append(Mention(np_[-1], np_, 180.0 if behind else 0.0, 90.0,
                           low[m.start():m.end()].strip() + " " + " ".join(np_),
                           facing=not behind))
    for m in _DIRECTION_RE.finditer(low):
        bearing, width = _bearing(m)
        first = _first_token_at(toks, m.start())
        phrases = _before(toks, first)
        if not phrases:  # "on my right is a box", "to my left there are two chairs"
            rest = _AFTER_DIRECTION.match(low[m.end():])
            if rest:
                after = _after(toks, _first_token_at(toks, m.end() + rest.end()))
                phrases = [after] if after else []
        for np_ in phrases:
            out.append(Mention(np_[-1], np_, bearing, width,
                               f"{' '.join(np_)} {low[m.start():m.end()].strip()}"))
    return out


def _unambiguous(found: Sequence[Mention]) -> dict[str, Mention]:
    """head -> its mention, leaving out heads named in two directions."""
    by: dict[str, list[Mention]] = {}
    for m in found:
        by.setdefault(m.head, []).append(m)
    return {h: ms[0] for h, ms in by.items()
            if all(_gap(ms[0].bearing, x.bearing) < 1e-6 for x in ms)}


def _gap(a: float, b: float) -> float:
    return abs(float(wrap_degrees(a - b)))


def _name(bearing: float, width: float) -> str:
    if width >= 90:
        return {0: "front", 90: "right", 180: "behind", 270: "left"}.get(int(bearing) % 360,
                                                                           f"{bearing:g} deg")
    hour = int(round(bearing / 30)) % 12
    return f"{12 if hour == 0 else hour} o'clock"


def check_text(original: str, rotated: str, turn: float, *,
               several: frozenset[str] = frozenset()) -> list[Hit]:
    """The text rules an item at a turn of ``turn`` degrees clockwise breaks, given the
    situation at viewpoint 0 (``original``) and at the turned viewpoint (``rotated``).
    ``several``: names (head nouns) the scene holds more than one object of; the text cannot
    tell whether it names the same one, so they are left to the scene rules."""
    if float(turn) % 360 == 0:
        return []
    if same_text(original, rotated):
        return [Hit("text_not_turned", (rotated,), f"a {turn:g}-degree turn left the text as "
                                                    "it was")]
    hits = []
    several = several | STRUCTURAL_LABELS  # a room has several walls
    m0 = [m for m in mentions(original) if m.head not in several]
    mk = [m for m in mentions(rotated) if m.head not in several]
    u0, uk = _unambiguous(m0), _unambiguous(mk)
    faced0 = {m.head: m for m in m0 if m.facing}
    facedk = {m.head: m for m in mk if m.facing}
    kept = sorted(set(faced0) & set(facedk))
    if kept:
        hits.append(Hit("same_object_faced",
                        tuple(p for h in kept for p in (faced0[h].phrase, facedk[h].phrase)),
                        f"still facing the {' '.join(facedk[kept[0]].words)} after a "
                        f"{turn:g}-degree turn"))
    wrong, swapped = [], []
    for head in sorted(set(u0) & set(uk)):
        a, b = u0[head], uk[head]
        expected = bearing_after_turn(a.bearing, turn)
        tolerance = max(a.width, b.width) / 2
        if _gap(b.bearing, expected) < tolerance:
            continue
        how = "did not move" if _gap(a.bearing, b.bearing) < tolerance else \
            f"expected {_name(expected, max(a.width, b.width))}"
        wrong.append((a, b, f"the {' '.join(b.words)}: {_name(a.bearing, a.width)} -> "
                            f"{_name(b.bearing, b.width)} ({how})"))
        if _gap(b.bearing, -a.bearing) < tolerance and _gap(a.bearing, b.bearing) >= tolerance:
            swapped.append((a, b))
    if wrong:
        hits.append(Hit("direction_wrong", tuple(p for a, b, _ in wrong
                                                 for p in (a.phrase, b.phrase)),
                        "; ".join(d for _, _, d in wrong)))
    if kept and swapped:
        hits.append(Hit("mirror", tuple(p for a, b in swapped for p in (a.phrase, b.phrase)),
                        f"facing the {' '.join(facedk[kept[0]].words)} with "
                        + ", ".join(f"the {' '.join(b.words)} moved {_name(a.bearing, a.width)} -> "
                                    f"{_name(b.bearing, b.width)}" for a, b in swapped)))
    return hits


def turn_of(yaw0: float, yaw: float, nominal: int, atol: float = 1.0) -> tuple[float, str]:
    """The clockwise turn (degrees) from viewpoint 0's yaw to a viewpoint's yaw (radians),
    and where it comes from: ``quaternion`` when the item's quaternions turned, else the
    dataset's ``convention`` (a viewpoint ``k`` turned ``k`` degrees clockwise)."""
    turn = float(wrap_degrees(np.degrees(yaw0 - yaw)))
    if abs(turn) <= atol:
        return float(nominal % 360), "convention"
    return float(round(turn) % 360), "quaternion"


@dataclass
class SceneCheck:
    """What the scene rules need of one turned item."""

    situation: str
    question: str
    answers: Sequence[str]
    pose: Pose
    semantics: Mapping[str, Any] | None = None  # a synthetic question's kind and params
    margin_deg: float = 15.0
    unmatched: list[str] = field(default_factory=list)  # names no scene object carries


def _label_words(scene: Scene) -> dict[str, tuple[str, ...]]:
    return {o.label: tuple(singular(w) for w in o.label.lower().split()) for o in scene.objects}


def _objects_named(scene: Scene, words: tuple[str, ...]) -> list[int]:
    """Indices into ``scene.objects`` whose label is the phrase's tail ("trash can" for
    "blue trash can"), the longest such label winning."""
    labels = _label_words(scene)
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
    far = np.asarray(pose.distance(centers)) >= 0.3
    if not far.any():
        return None
    said = -bearing  # egocentric angles are counter-clockwise
    gaps = np.abs(wrap_degrees(np.asarray(pose.ego_angle(centers[far])) - said))
    return bool((gaps <= width / 2 + margin).any())


def several_named(scene: Scene) -> frozenset[str]:
    """Head nouns that name more than one object of ``scene``."""
    heads = [_label_words(scene)[o.label][-1] for o in scene.objects]
    return frozenset(h for h in set(heads) if heads.count(h) > 1)


def check_scene(item: SceneCheck, scene: Scene) -> list[Hit]:
    """The scene rules a turned item breaks, seen from its turned pose."""
    hits = []
    bad = []
    for m in _unambiguous(mentions(item.situation)).values():
        if m.head in STRUCTURAL_LABELS:  # a wall's box centre says nothing of its direction
            continue
        idx = _objects_named(scene, m.words)
        if not idx:
            item.unmatched.append(" ".join(m.words))
            continue
        if _placed(scene, item.pose, idx, m.bearing, m.width, item.margin_deg) is False:
            bad.append(m)
    if bad:
        hits.append(Hit("quadrant_situation", tuple(m.phrase for m in bad),
                        "; ".join(f"no {m.head} {_name(m.bearing, m.width)} of the turned pose"
                                  for m in bad)))
    asked = [m for m in _question_directions(item.question)]
    if asked:
        bearing, width, phrase = asked[0]
        named = [(a, idx) for a in item.answers
                 if (idx := _objects_named(scene, tuple(singular(w) for w in
                                                        normalize_answer(a).split())))]
        if named and not any(_placed(scene, item.pose, idx, bearing, width, item.margin_deg)
                             is not False for _, idx in named):
            hits.append(Hit("quadrant_answer", (phrase, named[0][0]),
                            f"no {named[0][0]} {_name(bearing, width)} of the turned pose"))
    expected = _geometry_answer(item, scene)
    if expected is not None:
        norm = {normalize_answer(a) for a in item.answers}
        if normalize_answer(expected) not in norm:
            hits.append(Hit("answer_geometry", (item.question, ", ".join(item.answers)),
                            f"the scene gives {expected!r} from the turned pose"))
    return hits


def _question_directions(question: str) -> list[tuple[float, float, str]]:
    """Directions a question asks about with no object named before them ("what is on my
    left?"): (bearing, width, phrase)."""
    low = question.lower()
    toks = _tokens(low)
    out = []
    for m in _DIRECTION_RE.finditer(low):
        if _before(toks, _first_token_at(toks, m.start())):
            continue
        bearing, width = _bearing(m)
        out.append((bearing, width, low[m.start():m.end()]))
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
