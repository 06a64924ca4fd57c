"""``hf-real3d correct-rotations``: a corrected Real-3DQA rotation set a lab can score on.

Every turned item of a rotation set (the official release, or its import) is

* **kept as released** where ``check-rotations`` calls it ``pass`` in the quaternions' sense
  (:func:`_as_released` names the exceptions);
* else **derived** from viewpoint 0 by the item's turn (its quaternions' sense, as the checker
  reads it; :func:`derive_item`): the situation is viewpoint 0's (or the alternative that
  places the most things) with every egocentric phrase turned
  (:func:`hf_real3d.english.turn.turn_text`); the answer is viewpoint 0's where the question
  does not depend on the heading or asks about a thing an egocentric phrase points at,
  viewpoint 0's direction answer turned, or the thing viewpoint 0's texts at the same pose
  place alone in the direction the turn brings; the question is the released one, its phrases
  that point at a thing turned with the situation (:func:`_question`);
* **dropped**, with the reason, where no such derivation exists (a text that pins no heading
  after the turn, an answer the texts do not settle).

With scenes (``scenes``: ScanNet-format folders, or a dataset folder's own), a question whose
meaning the geometry route knows is derived from the scene as ``rotate`` derives it
(:func:`hf_real3d.real3dqa.rotation.rotate_record`). The whole set is then checked again
through the checker's one door, with the same evidence: a derived item the checker calls a
``defect`` is dropped. A group is kept whole (every turned viewpoint kept or derived, and no
``defect``) or not at all; viewpoint 0 as released.

The output is a release folder (``rotation_{0,90,180,270}.json`` in the release's id scheme,
the whole de-biased file), so ``import-real3dqa``, ``load_dataset``, ``evaluate`` and
``lmms-tasks`` read it unchanged, with ``corrections.jsonl`` (one row per turned item of the
input: ``source`` ``release`` / ``derived`` / ``dropped``, the rule and the evidence, the
reason for a drop), ``correction.json`` (the summary) and a card (``README.md``). Scores on it
are not the paper's Real-3DQA figures: its files' headers say so, and ``evaluate`` repeats it.
"""

from __future__ import annotations

import collections
import json
import os
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from tqdm.auto import tqdm

from hf_real3d._io import atomic_dir, check_out, write_json
from hf_real3d.answers import normalize_answer
from hf_real3d.english.asks import (
    asked_at_pose,
    named_object_question,
    no_heading_word,
    question_kind,
    said_at_pose,
    thing_asked_at,
    turned_answer,
)
from hf_real3d.english.mentions import GENERIC, Mention, directions_in, normal_text, read
from hf_real3d.english.turn import by_the_body, turn_text
from hf_real3d.errors import InputError
from hf_real3d.geometry import angle_gap
from hf_real3d.real3dqa.checker.check import CheckResult, check_set
from hf_real3d.real3dqa.checker.evidence import PoseEvidence, find_evidence
from hf_real3d.real3dqa.format import (
    CORRECTED_MARK,
    RELEASE_VIEWPOINTS,
    debiased_items,
    output_headers,
    release_item,
    write_release,
)
from hf_real3d.real3dqa.rotation import rotate_record
from hf_real3d.real3dqa.rotation_set import RotationSet, read_rotation_set
from hf_real3d.schema import record_from_row
from hf_real3d.spatial import Unanswerable
from hf_real3d.tables import markdown_table

__all__ = ["CorrectSummary", "Derived", "correct_rotations", "derive_answer",
           "derive_item"]

#: the validity of the release's corrected set, read blind (issue 62; the project's
#: tests/data/corrected_sample_6, sample 8: two readers on their own with the release
#: samples' reading rules, disagreements adjudicated; ``python bench/rotation_sample.py
#: validity --sample 8``): (valid, decided, defect, drawn, Wilson 95% interval of the valid
#: share) per stratum
VALIDITY = {"derived": (119, 119, 0, 120, (96.9, 100.0)),
            "kept as released": (29, 30, 1, 30, (83.3, 99.4))}
_IS_THERE = re.compile(r"^\s*(?:is|are)\s+there\b")
# "what is on the wall next to the wardrobe?" answered "right"; "what side is the handle on the
# door to my left?": no direction from the agent is asked, so the answer does not turn
_NOT_A_DIRECTION_ASKED = re.compile(r"^\s*what\s+(?:is|are)\b|\b(?:what|which)\s+side\b.*\bon\s+"
                                    r"the\s+(?!room\b|left\b|right\b)\w+")
# what is by, past or over one thing an egocentric phrase points at ("what is covering the window
# to my left?"); not "to the left of the table", which reads the side from the agent's view
_AROUND_POINTED = re.compile(
    r"^\s*what(?:\s+object|\s+thing)?\s+(?:is|are)\s+(?:right\s+|directly\s+|just\s+)?"
    r"(?P<rel>next\s+to|beside|near|past|beyond|behind|covering)\s+the\s+(?P<np>[a-z]+"
    r"(?:\s+[a-z]+)?)\s+(?:that\s+is\s+)?(?:to|on|at|in|behind|by)\b[^?]*\?*\s*$")
_BY_A_THING = re.compile(r"\b(?:of|to|beside|near|past|beyond|behind|covering|above|below|"
                         r"under|over|on|in|by)\s+the\s+(?!floor\b|ground\b|room\b)")
_ON_A_SURFACE = re.compile(r"\b(?:on|against|above|below|under)\s+the\s+(?:wall|floor|ground|"
                           r"ceiling)\b")


@dataclass(frozen=True)
class Derived:
    """A turned item derived from viewpoint 0, or why it is not: ``situation``, ``answers``
    and ``question`` (None when dropped), the ``rule`` the answer follows, its ``evidence``,
    and ``reason``."""

    situation: str | None
    answers: list[str] | None
    rule: str = ""
    evidence: tuple[str, ...] = ()
    reason: str = ""
    alternatives: tuple[str, ...] = ()
    question: str | None = None


def _texts_at_pose(r0: dict[str, Any], at_pose: Sequence[tuple[Any, str, Sequence[str]]]
                   ) -> list[Mention]:
    """Where viewpoint 0's texts put things: its situation and alternatives, its own question
    and answer, and the other questions SQA3D asks at its pose."""
    out = [m for s in [r0["situation"], *(r0.get("alternative_situation") or [])]
           for m in read(s).mentions]
    out += said_at_pose(r0["question"], tuple(r0["answers"][:1]), "viewpoint 0's question")
    for qid, q, a in at_pose:
        out += said_at_pose(q, tuple(a[:1]), f"question {qid} at this pose: {q!r} -> {a[0]!r}")
    return out


def _thing_at(turn: float, placed: list[Mention], what: tuple
              ) -> tuple[list[str] | None, str, tuple[str, ...]]:
    """What is in the asked direction after the turn: the one thing viewpoint 0's texts place
    alone where the turn brings the asked direction, and nowhere else."""
    bearing, width, _ = what
    before = (bearing + turn) % 360  # where the turn brings the asked direction from
    there = [m for m in placed if m.head not in GENERIC
             and angle_gap(m.bearing, before) < max(width, m.width) / 2]
    heads = {m.head for m in there}
    if len(heads) != 1 or there[0].number:
        return None, ("viewpoint 0's texts place nothing where the turn brings the asked "
                      "direction" if not heads else "viewpoint 0's texts place several things "
                      "where the turn brings the asked direction"), ()
    elsewhere = [m for m in placed if m.head in heads and angle_gap(m.bearing, before)
                 >= max(width, m.width) / 2]
    if elsewhere:
        return None, "viewpoint 0's texts place the thing in more than one direction", ()
    return [" ".join(there[0].words)], "placed_at_pose", tuple(m.phrase for m in there)


def _pose_question(question: str, turn: float,
                   at_pose: Sequence[tuple[Any, str, Sequence[str]]]
                   ) -> tuple[list[str], str, tuple[str, ...]] | None:
    """The answer of the same question asked at viewpoint 0's pose of the direction the turn
    brings to the asked one."""
    same = asked_at_pose(question, turn, at_pose)
    if same is None:
        return None
    qid, q, a = same
    return [a[0]], "pose_question", (f"question {qid} at this pose: {q!r} -> {a[0]!r}",)


def _there(question: str, turn: float, placed: list[Mention]
           ) -> tuple[list[str], str, tuple[str, ...]] | None:
    """"Is there a TV on my right?": yes where viewpoint 0's texts put the one TV they name
    where the turn brings the asked direction (a TV they put elsewhere says nothing: there
    may be another)."""
    if not _IS_THERE.match(question.lower()):
        return None
    asked = said_at_pose(question, ("yes",), question)
    if len(asked) != 1 or asked[0].number or " any " in question.lower():
        return None
    x = asked[0]
    before = (x.bearing + turn) % 360
    there = [m for m in placed if m.head == x.head and not m.number
             and angle_gap(m.bearing, before) < max(x.width, m.width) / 2]
    return (["yes"], "there_placed", tuple(m.phrase for m in there)) if there else None


def derive_answer(question: str, r0: dict[str, Any], turn: float,
                  at_pose: Sequence[tuple[Any, str, Sequence[str]]] = (),
                  several: frozenset[str] | None = None
                  ) -> tuple[list[str] | None, str, tuple[str, ...]]:
    """The answer to ``question`` after a turn of ``turn`` degrees clockwise from viewpoint 0
    (``r0``), with the rule and the evidence; (None, why, ()) where the texts do not settle
    it. ``at_pose``: the other questions at the pose; ``several``: the names the scene's SQA3D
    texts give as several (None: not read)."""
    answers0 = [str(a) for a in r0["answers"]]
    kind, what = question_kind(question, tuple(answers0))
    if kind == "heading_free":
        return answers0, "heading_free", ()
    got = named_object_question(question)
    if kind != "direction" and got is not None and several is not None:
        many = several | read(r0["situation"]).several | read(question).several
        if not set(got[1]) & many:
            return answers0, "of_one_object", (
                f"{' and '.join(got[1])}: no SQA3D text of the scene names several",)
    if kind != "direction" and got is not None:  # the question's phrase turns with the agent
        # (:func:`_question`), so it points at the same one of several from the turned view
        return answers0, "of_pointed_object", (
            f"the {' and the '.join(got[1])} the question points at, its phrase turned",)
    near = _AROUND_POINTED.match(normal_text(question))
    if near and len(directions_in(question)) == 1:  # "what is past the toilet on my right?":
        # what stands by, past or over the thing pointed at does not follow the heading
        return answers0, "of_pointed_object", (
            f"what is {near.group('rel')} the {near.group('np')} the question points at, its "
            "phrase turned",)
    if kind == "direction" and _NOT_A_DIRECTION_ASKED.search(question.lower()):
        return None, ("a direction answer to a question that asks a thing, or a side of a "
                      "thing, not a direction from the agent"), ()
    if kind == "direction":
        turned = [turned_answer(a, turn) for a in answers0]
        if all(turned):
            return [str(a) for a in dict.fromkeys(turned)], "direction_turned", ()
        return None, "viewpoint 0's answer is not a direction the reader turns", ()
    asked = _pose_question(question, turn, at_pose)
    if asked is not None:
        return asked
    if no_heading_word(question, answers0):
        return answers0, "no_heading_word", ()
    if _ON_A_SURFACE.search(question.lower()):  # "what is on the wall in front of me?"
        return None, ("the texts place things in a direction, not on the surface asked about "
                      "there (the wall, the floor)"), ()
    placed = _texts_at_pose(r0, at_pose)
    if kind == "at":
        return _thing_at(turn, placed, what)
    at = thing_asked_at(question)  # "what object is directly behind me?"; not "what is on the
    # shelf behind me?" (a named object is asked of), nor "what is to the left of the table in
    # front of me?" (a thing by another: not in the asked direction itself)
    if at is not None and got is None and not _BY_A_THING.search(question.lower()):
        return _thing_at(turn, placed, at)
    there = _there(question, turn, placed)
    if there is not None:
        return there
    return None, "the answer depends on the heading in a way the texts do not settle", ()


def _situation(r0: dict[str, Any], turn: float) -> tuple[str | None, tuple[str, ...]]:
    """Viewpoint 0's situation turned (or, where it does not turn, the alternative that places
    the most things), and the alternatives that turn too."""
    texts = [r0["situation"], *(r0.get("alternative_situation") or [])]
    turned = [(t, turn_text(t, turn)) for t in texts]
    ok = [(i == 0, len(read(t).mentions), -i, new) for i, (t, new) in enumerate(turned) if new]
    if not ok:
        return None, ()
    best = max(ok)[3]
    return best, tuple(new for _, new in turned[1:] if new and new != best)


def derive_item(r0: dict[str, Any], r: dict[str, Any], turn: float,
                evidence: PoseEvidence | None = None) -> Derived:
    """The turned item ``r`` derived from viewpoint 0 (``r0``) by a turn of ``turn`` degrees
    clockwise, from the texts alone (see the module docstring)."""
    situation, alternatives = _situation(r0, turn)
    if situation is None:
        return Derived(None, None, reason="viewpoint 0's texts pin no heading the turn can "
                                          "move (no egocentric phrase turns with certainty)")
    q = r0["question_id"]
    answers, rule, more = derive_answer(
        r["question"], r0, turn, evidence.questions.get(q, []) if evidence else [],
        evidence.several.get(q, frozenset()) if evidence else None)
    if answers is None:
        return Derived(None, None, reason=rule)
    question = _question(r0, r, turn, rule)
    if question is None:
        return Derived(None, None, reason="the question's egocentric phrase does not turn "
                                          "with certainty")
    return Derived(situation, answers, rule, more, alternatives=alternatives,
                   question=question)


# the rules whose question asks of the direction its egocentric phrase gives, as seen after
# the turn ("what is on my left?"): that phrase stays
_ASKS_THE_DIRECTION = frozenset({"placed_at_pose", "pose_question", "there_placed"})
_SIDE_WORD = re.compile(r"\b(?:left|right|front|behind|ahead|back)\b")


def _question(r0: dict[str, Any], r: dict[str, Any], turn: float, rule: str) -> str | None:
    """The question at the turn: as released, except that an egocentric phrase pointing at
    a thing ("what color is the shelf to my left?", "which way to the fan on my left?")
    turns with the situation ("... the shelf behind me?"), so that it points at the same
    thing from the turned view; a phrase that is what is asked ("what is on my left?") stays.
    None where it cannot be turned with certainty, or where a direction question has a side
    word the reader does not turn ("the one which is right or the one on the left"). A
    question the release already edited in its directions is turned from viewpoint 0's."""
    asked = r["question"]
    if rule in _ASKS_THE_DIRECTION or not directions_in(asked):
        return asked
    if [d[:2] for d in directions_in(asked)] != [d[:2] for d in directions_in(r0["question"])]:
        asked = r0["question"]
    if rule == "direction_turned" and len(_SIDE_WORD.findall(normal_text(asked))) > sum(
            len(_SIDE_WORD.findall(d[2])) for d in directions_in(asked)):
        return None
    return turn_text(asked, turn, question=True)


def _as_released(r0: dict[str, Any], r: dict[str, Any]) -> bool:
    """Whether an item the checker passes (in the quaternions' sense) is kept as released. Not
    where its question keeps viewpoint 0's egocentric phrases word for word (read from the
    turned view they point elsewhere), its situation places a thing by a part of the body, or
    a heading-free question's answer is not viewpoint 0's word for word (the checker forgives
    spelling: "threen"): such an item is derived instead."""
    if directions_in(r["question"]) and normal_text(r["question"]) == normal_text(r0["question"]):
        return False
    if by_the_body(r["situation"]):
        return False
    free = question_kind(r["question"], tuple(map(str, r0["answers"])))[0] == "heading_free"
    return not free or [normalize_answer(str(a)) for a in r["answers"]] == \
        [normalize_answer(str(a)) for a in r0["answers"]]


def _by_geometry(r0: dict[str, Any], scene_of: Callable[[str], Any] | None,
                 views: list[int]) -> dict[int, dict[str, Any]] | None:
    """Every viewpoint of the question from the scene (``rotate``'s geometry route), or None
    where there is no scene or the geometry does not know the question's meaning."""
    if scene_of is None:
        return None
    try:
        scene = scene_of(r0["scene_id"])
        rows = rotate_record(record_from_row(r0), scene, views)
    except (KeyError, Unanswerable, ValueError):
        return None
    return {int(x["rotation_deg"]): x for x in rows}


@dataclass
class _Plan:
    """Each turned item's fate: (row or None, a corrections.jsonl line)."""

    rows: dict[tuple[Any, int], dict[str, Any]] = field(default_factory=dict)
    lines: dict[tuple[Any, int], dict[str, Any]] = field(default_factory=dict)

    def keep(self, key: tuple[Any, int], row: dict[str, Any], line: dict[str, Any]) -> None:
        self.rows[key], self.lines[key] = row, line

    def drop(self, key: tuple[Any, int], line: dict[str, Any], reason: str) -> None:
        self.rows.pop(key, None)
        self.lines[key] = {**line, "source": "dropped", "reason": reason}


def _line(key: tuple[Any, int], source: str, rule: str = "", evidence=(), **more) -> dict:
    return {"question_id": int(key[0]), "rotation_deg": int(key[1]), "source": source,
            "rule": rule, "evidence": list(evidence), **more}


def _plan(rs: RotationSet, groups: dict, checked: CheckResult,
          evidence: PoseEvidence | None, progress: bool) -> _Plan:
    """Keep, derive or drop each turned item (before the second check)."""
    views = sorted({int(r["rotation_deg"]) for r in rs.rows})
    plan = _Plan()
    for it in tqdm(checked.items, desc="correcting rotations", unit="item",
                   disable=not progress):
        key = (it.question_id, it.rotation_deg)
        r0, r = groups[it.question_id][0], groups[it.question_id][it.rotation_deg]
        # a kept item follows the quaternions' sense, as the derived ones do: a quarter turn
        # kept in the other sense would say what its derived sibling says
        if it.verdict.verdict == "pass" and it.verdict.sense != "opposite" and \
                _as_released(r0, r):
            plan.keep(key, r, _line(key, "release", "pass", it.verdict.evidence))
            continue
        geo = _by_geometry(r0, rs.scenes, views)
        if geo is not None and it.rotation_deg in geo:
            g = geo[it.rotation_deg]
            plan.keep(key, dict(r, situation=g["situation"], answers=list(g["answers"]),
                                alternative_situation=[]),
                      _line(key, "derived", "geometry", situation=g["situation"],
                            answers=list(g["answers"])))
            continue
        d = derive_item(r0, r, it.turn, evidence)
        line = _line(key, "derived", d.rule, d.evidence, situation=d.situation,
                     answers=d.answers, was=it.verdict.verdict,
                     **({"question": d.question} if d.question not in (None, r["question"])
                        else {}))
        if d.situation is None:
            plan.drop(key, line, d.reason)
        else:
            plan.keep(key, dict(r, situation=d.situation, answers=d.answers,
                                question=d.question,
                                alternative_situation=list(d.alternatives)), line)
    return plan


def _recheck(rs: RotationSet, groups: dict, plan: _Plan, first: CheckResult,
             evidence: PoseEvidence | None) -> set[Any]:
    """Check the corrected set through the checker's one door: a derived item it calls a
    ``defect`` is dropped with the rules; returns the groups kept whole."""
    views = sorted({int(r["rotation_deg"]) for r in rs.rows})
    whole = {q for q in groups if all((q, k) in plan.rows for k in views if k)}
    rows = [groups[q][0] for q in whole] + [plan.rows[(q, k)] for q in whole for k in views
                                            if k]
    again = check_set(RotationSet(rs.source, rs.path, rows, rs.scenes, rs.scenes_from),
                      first.options, evidence=evidence)
    for it in again.items:
        if it.verdict.verdict == "defect":
            key = (it.question_id, it.rotation_deg)
            plan.drop(key, plan.lines[key], "the checker calls the derived item a defect ("
                      + ", ".join(it.verdict.rules) + ")")
            whole.discard(it.question_id)
    return whole


@dataclass
class CorrectSummary:
    """What ``correct-rotations`` wrote: the groups and items kept, by source, the drops by
    reason, the question kinds of the kept groups beside the input's, and where the evidence
    came from. ``lines()`` is what the command prints; ``correction.json`` is its ``asdict``."""

    dataset: str
    out: str
    groups: int
    complete_groups: int
    kept_groups: int
    items: dict[str, int]  # turned items by source: release, derived, dropped
    rules: dict[str, int]  # derived items by the rule their answer follows
    dropped: dict[str, int]  # dropped items by reason
    kinds: dict[str, list[int]]  # question_type -> [groups in the input, groups kept]
    evidence: str | None
    scenes: str | None
    #: groups whose viewpoints all have one answer: [in the input, kept] (a model that ignores
    #: the turn is consistent on them)
    one_answer: list[int] = field(default_factory=lambda: [0, 0])

    def lines(self) -> list[str]:
        i = self.items
        return [f"{self.kept_groups} of {self.groups} rotation groups kept whole "
                f"({self.complete_groups} complete in the input): {i.get('release', 0)} turned "
                f"items kept as released, {i.get('derived', 0)} derived, "
                f"{i.get('dropped', 0)} dropped",
                "  derived answers: " + ", ".join(f"{k} {n}" for k, n in self.rules.items()),
                f"  one answer at every viewpoint: {self.one_answer[1]} of the kept groups "
                f"({self.one_answer[0]} of the input's): a model that ignores the turn is "
                "consistent on them",
                *(f"  dropped: {n} {why}" for why, n in list(self.dropped.items())[:6]),
                f"wrote {self.out}: rotation_{{0,90,180,270}}.json, the de-biased file, "
                "corrections.jsonl, correction.json, README.md (not the paper's set: scores on "
                "it are not the paper's)"]


def _one_answer(groups: dict, plan: _Plan, kept: set[Any]) -> list[int]:
    """How many groups have one answer at every viewpoint, in the input and kept."""
    def one(rows: Iterable[dict[str, Any]]) -> bool:
        return len({normalize_answer(str(r["answers"][0])) for r in rows if r["answers"]}) == 1

    written = collections.defaultdict(list)
    for (q, _), r in plan.rows.items():
        written[q].append(r)
    return [sum(one(g.values()) for g in groups.values()),
            sum(one([groups[q][0], *written[q]]) for q in kept)]


def _kinds(groups: dict, kept: set[Any]) -> dict[str, list[int]]:
    kind = {q: str(g[0].get("question_type") or "") for q, g in groups.items()}
    if not any(kind.values()):  # a release's rotation files carry no category
        kind = {q: question_kind(g[0]["question"], tuple(g[0]["answers"]))[0]
                for q, g in groups.items()}
    total = collections.Counter(kind.values())
    have = collections.Counter(kind[q] for q in kept)
    return {k: [n, have.get(k, 0)] for k, n in total.most_common()}


def _card(s: CorrectSummary) -> str:
    kinds = markdown_table(["kind", "groups in the input", "groups kept"],
                           [[k or "(none)", n, m] for k, (n, m) in s.kinds.items()])
    validity = markdown_table(
        ["items", "valid of those decided", "defect of those drawn"],
        [[name, f"{v} of {d} ({100 * v / d:.1f}%, 95% CI {lo}-{hi})",
          f"{x} of {n} ({100 * x / n:.1f}%)"]
         for name, (v, d, x, n, (lo, hi)) in VALIDITY.items()])
    return f"""# A corrected Real-3DQA rotation set

Derived by `hf-real3d correct-rotations` from `{s.dataset}`; **not the paper's set, and scores
on it are not the paper's Real-3DQA figures.**

Each turned item is kept as released where `hf-real3d check-rotations` calls it `pass` (and
its question does not keep viewpoint 0's egocentric phrases word for word), else derived from
viewpoint 0 by the item's turn (every egocentric phrase of the situation turned, and of the
question where it points at the thing asked about; a heading-free answer kept, a direction
answer turned, a thing in a direction only where viewpoint 0's texts at the same pose place
it alone there), else dropped with its reason.
Every kept item is checked again by the checker's rules; a group is kept whole or not at all.
`corrections.jsonl` says, for every turned item of the input, its source, rule, evidence and
the reason for a drop.

- Groups kept whole: {s.kept_groups} of {s.groups}; turned items kept as released
  {s.items.get("release", 0)}, derived {s.items.get("derived", 0)}, dropped
  {s.items.get("dropped", 0)}.
- Evidence (SQA3D's texts at each pose): {s.evidence or "none"}; scenes: {s.scenes or "none"}.
- One answer at every viewpoint: {s.one_answer[1]} of the {s.kept_groups} kept groups
  ({s.one_answer[0]} of the input's {s.groups}): what they ask does not follow the turn (a colour,
  what is on a thing the question points at), so a model that ignores the turn is consistent
  on them; the other {s.kept_groups - s.one_answer[1]} have an answer that changes with the
  turn.

## Validity, read blind

Measured on the release's corrected set: 120 derived items and 30 kept as released, drawn with
one seed and shown in one order to two readers who did not know how they were made, labelled
on their own with the reading rules of the release's labelled samples, disagreements
adjudicated:

{validity}

Five earlier samples read the set under earlier rules (derived items defective: 5, 31, 0, 0
and 3 of 120; the 31 were questions that kept viewpoint 0's "the shelf to my left", read as
pointing elsewhere from the turned view); the rules were mended after each, and each later
sample read derived items no earlier one had.

## What the corrected set leaves out: groups by question kind

{kinds}
"""


def _write(out: Path, rs: RotationSet, groups: dict, plan: _Plan, kept: set[Any],
           summary: CorrectSummary) -> None:
    """The release-format files, corrections.jsonl, correction.json and the card, at once."""
    views = [k for k in RELEASE_VIEWPOINTS if k in {int(r["rotation_deg"]) for r in rs.rows}]
    order = sorted(kept, key=str)
    rotations = {k: [release_item(groups[q][0] if k == 0 else plan.rows[(q, k)], k)
                     for q in order] for k in views}
    debiased, _ = debiased_items(rs, rs.path, groups)
    headers, _ = output_headers(rs, rs.path, "corrected with hf_real3d")
    mark = {"derived_by": "hf-real3d correct-rotations", "from": summary.dataset,
            "note": "a corrected set, not the paper's: scores on it are not the paper's "
                    "Real-3DQA figures"}
    headers = {n: {**h, "info": {
        **(h.get("info") or {}), CORRECTED_MARK: mark,
        "description": f"A corrected rotation set derived by hf-real3d correct-rotations from "
                       f"{Path(summary.dataset).name}, not the official release: "
                       + str((h.get("info") or {}).get("description", ""))}}
        for n, h in headers.items()}
    with atomic_dir(out) as tmp:
        write_release(tmp, rotations, debiased, headers)
        with open(tmp / "corrections.jsonl", "w", encoding="utf-8") as f:
            for key in sorted(plan.lines, key=lambda x: (str(x[0]), x[1])):
                f.write(json.dumps(plan.lines[key], ensure_ascii=False) + "\n")
        write_json(tmp / "correction.json", asdict(summary), indent=2)
        (tmp / "README.md").write_text(_card(summary), encoding="utf-8")


def correct_rotations(dataset: str | os.PathLike, out: str | os.PathLike, *,
                      sqa3d: str | os.PathLike | None = None,
                      scenes: str | os.PathLike | None = None,
                      progress: bool = True) -> CorrectSummary:
    """``hf-real3d correct-rotations``: the corrected set of ``dataset`` (a release folder or
    its import) written to ``out`` (see the module docstring). SQA3D's texts are found as
    ``check-rotations`` finds them (``sqa3d``, the folder's own, beside the release);
    ``scenes``: ScanNet-format scenes for the geometry route. A run that keeps no group is an
    error, and writes nothing."""
    check_out(out, dataset=dataset, sqa3d=sqa3d, scenes=scenes)
    rs = read_rotation_set(dataset, scenes)
    evidence = find_evidence(dataset, sqa3d=sqa3d, folder=rs.source == "folder",
                             split=rs.split)
    first = check_set(rs, evidence=evidence, progress=progress)
    groups = rs.groups()
    plan = _plan(rs, groups, first, evidence, progress)
    kept = _recheck(rs, groups, plan, first, evidence)
    for (q, k), line in plan.lines.items():  # a group not kept whole: its items go too
        if q not in kept and line["source"] != "dropped":
            plan.drop((q, k), line, "another viewpoint of its group was dropped")
    sources = collections.Counter(x["source"] for x in plan.lines.values())
    summary = CorrectSummary(
        str(dataset), str(out), first.groups, len(first.complete), len(kept), dict(sources),
        dict(collections.Counter(x["rule"] for x in plan.lines.values()
                                 if x["source"] == "derived").most_common()),
        dict(collections.Counter(x["reason"] for x in plan.lines.values()
                                 if x["source"] == "dropped").most_common()),
        _kinds(groups, kept), first.evidence, rs.scenes_from or None,
        _one_answer(groups, plan, kept))
    if not kept:
        raise InputError(f"{dataset}: correct-rotations keeps no rotation group whole ("
                         + "; ".join(f"{n} {why}" for why, n in list(summary.dropped.items())[:3])
                         + f"); nothing written to {out}")
    _write(Path(out), rs, groups, plan, kept, summary)
    return summary
