"""The checker's vocabulary: the rules by name with what each means (:data:`TEXT_RULES`,
:data:`ANSWER_RULES`, :data:`SCENE_RULES`), a rule's :class:`Hit` on an item, a
:class:`TurnedItem` and the :class:`Verdict` :func:`hf_real3d.real3dqa.checker.text.verdict_for`
gives it. The rules themselves live in :mod:`hf_real3d.real3dqa.checker.text` (situations),
:mod:`hf_real3d.real3dqa.checker.answers` (answers) and :mod:`hf_real3d.real3dqa.checker.scene`
(the scene).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = ["ANSWER_RULES", "SCENE_RULES", "SENSES", "TEXT_RULES", "VERDICTS", "Hit",
           "TurnedItem", "Verdict"]

TEXT_RULES: dict[str, str] = {
    "empty_text": "the turned item's situation or answers are empty",
    "text_not_turned": "the situation at a turned viewpoint is viewpoint 0's (up to case, "
                       "spaces, punctuation and contractions)",
    "duplicate_view": "the situation is one of viewpoint 0's alternative situations (a view "
                      "of viewpoint 0), or another turned viewpoint's of the group: a defect "
                      "at the viewpoint whose turn the text does not follow, needs the scene "
                      "where the texts cannot tell which",
    "same_object_faced": "the situation at a turned viewpoint faces the object viewpoint 0 "
                         "faces",
    "mirror": "the same object faced with an object moved to the other side (left and right "
              "swapped): a mirror image, not a turn",
    "direction_wrong": "an object named with a direction at viewpoint 0 and at the turn is "
                       "where no turn of this size sends it, in either sense",
    "sense_mismatch": "the situation follows one sense of the quarter turn and the answer the "
                      "other",
    "place_changed": "the agent is at another part of a named thing (\"at the foot of the bed\" "
                     "-> \"at the head of the bed\"): a turn in place does not move the agent; "
                     "the opposite part is a defect, another part may name one place (needs the "
                     "scene)",
    "faces_behind": "the turned situation has the agent face, look at, watch, read, write on or "
                    "wipe a thing it puts behind the agent in the same clause (\"facing the desk "
                    "behind me\"): no pose does both (round 5)",
    "allocentric_changed": "a relation to a named thing changed side (\"left of the bed\" -> "
                           "\"right of the bed\", \"the chair in front of the fireplace\" -> "
                           "\"behind the fireplace\"): a turn moves nothing in the room; the agent "
                           "moved from in front of a thing to behind it needs the scene (some "
                           "texts mean the thing in front of me)",
}
ANSWER_RULES: dict[str, str] = {
    "answer_direction": "the answer is a direction and is not viewpoint 0's answer turned (in "
                        "the sense the situation follows)",
    "answer_invariant": "the question does not depend on the agent's heading (or is viewpoint "
                        "0's said from the turned view, its egocentric phrases turned) and the "
                        "answer changed",
    "answer_from_situation": "the question asks what is in a direction, the turned situation "
                             "names an object there, and the answer is another",
    "answer_kept": "the question asks which thing is in a direction, and the turned answer names "
                   "the thing viewpoint 0's answer names there: a turn moves it elsewhere "
                   "(needs the scene where there may be several of it)",
    "answer_pose": "the same question, asked at viewpoint 0's pose of the direction the turn "
                   "brings (another SQA3D question at that pose), has another answer",
    "answer_placed": "the question asks which thing is in a direction, and the texts place the "
                     "answer's thing (one of its name) clearly elsewhere after the turn: the "
                     "turned situation, or viewpoint 0's texts and the questions at its pose "
                     "(round 3)",
    "answer_of_object": "the question asks something heading-free (colour, state, what is on "
                        "it, which of two is nearer) of objects it names with \"the\" and points "
                        "at with an egocentric phrase (\"the desk in front of me\"); no SQA3D "
                        "text of the scene names several of them, so the turn cannot change the "
                        "answer (round 5)",
    "answer_there": "the question asks whether a thing is in a direction, the answer is no, and "
                    "the texts put the thing (one of its name) there after the turn (round 3)",
}
SCENE_RULES: dict[str, str] = {
    "quadrant_situation": "an object the turned situation names with a direction has no "
                          "instance in that direction from the turned pose",
    "quadrant_answer": "the question asks about a direction and the answer names an object "
                       "with no instance in that direction from the turned pose",
    "answer_geometry": "the scene answers the question unambiguously from the turned pose, "
                       "and that answer is not among the item's answers",
}
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
    #: the other questions asked at viewpoint 0's pose (SQA3D asks about five at each), as
    #: (question_id, question, answers): evidence of where things are there
    pose_questions: Sequence[tuple[Any, str, Sequence[str]]] = ()
    #: names the SQA3D texts of the item's scene name several of (plurals, "another X"); None
    #: where the scene's texts were not read
    scene_several: frozenset[str] | None = None


@dataclass
class Verdict:
    """An item's verdict, the sense its texts follow, and the hits behind it."""

    verdict: str  # one of VERDICTS
    sense: str  # one of SENSES
    hits: list[Hit]
    why: str = ""  # for needs_scene without a hit: what the text leaves open
    evidence: tuple[str, ...] = ()  # the questions at the pose that decided it

    @property
    def rules(self) -> list[str]:
        return [h.rule for h in self.hits]
