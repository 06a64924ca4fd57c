"""A rotation set checked: the one door every caller goes through (``check-rotations``,
``rotate`` before it writes its rows, ``review-init``, ``evaluate --exclude-flagged``).

:func:`check_set` gives every rotated item of a :class:`~hf_real3d.real3dqa.rotation_set.
RotationSet` a verdict (the rules of :mod:`.text`, :mod:`.answers` and, with scenes,
:mod:`.scene`), with the options of :class:`CheckOptions` (validated here, for every caller)
and SQA3D's texts as evidence (:mod:`.evidence`). It returns a :class:`CheckResult` (each
:class:`ItemCheck` carries the texts it judged) and stores nothing: :mod:`.outputs` writes the
check folder and a dataset folder's configs; :mod:`.run` is the command.
"""

from __future__ import annotations

import collections
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from tqdm.auto import tqdm

from hf_real3d._io import FormatError, plain_value
from hf_real3d.errors import InputError
from hf_real3d.geometry import MARGIN_DEG, Pose, PoseError, yaws_from_quaternions
from hf_real3d.real3dqa.checker.evidence import PoseEvidence
from hf_real3d.real3dqa.checker.rules import (
    ANSWER_RULES,
    SCENE_RULES,
    SENSES,
    TEXT_RULES,
    VERDICTS,
    Hit,
    TurnedItem,
    Verdict,
)
from hf_real3d.real3dqa.checker.scene import SceneCheck, check_scene, several_named
from hf_real3d.real3dqa.checker.text import turn_of, verdict_for
from hf_real3d.real3dqa.rotation_set import RotationSet
from hf_real3d.scene import Scene

__all__ = ["CheckOptions", "CheckResult", "ItemCheck", "check_set"]


@dataclass(frozen=True)
class CheckOptions:
    """How a set is checked, validated once for every caller (the command, ``rotate``,
    ``evaluate --exclude-flagged``). ``margin_deg``: degrees by which an object may lie
    outside the direction a text gives it and still pass the scene rules, in [0, 45)."""

    margin_deg: float = MARGIN_DEG

    def __post_init__(self):
        if not (isinstance(self.margin_deg, int | float) and 0 <= self.margin_deg < 45):
            raise InputError(f"margin {self.margin_deg!r}: expected degrees in [0, 45) (the "
                             f"default is {MARGIN_DEG})")


@dataclass
class ItemCheck:
    """One rotated item, its verdict and the rules behind it."""

    question_id: Any
    rotation_deg: int
    turn: float
    turn_source: str  # "quaternion" or "convention"
    verdict: Verdict
    source_question_id: Any = None
    #: the texts checked: situation_0, question_0, answers_0 (viewpoint 0's), situation,
    #: question, answers (the turned item's)
    texts: dict[str, Any] = field(default_factory=dict)

    @property
    def hits(self) -> list[Hit]:
        return self.verdict.hits

    def to_dict(self) -> dict[str, Any]:
        out = {"question_id": plain_value(self.question_id), "rotation_deg": self.rotation_deg}
        if self.source_question_id is not None and self.source_question_id != self.question_id:
            out["source_question_id"] = plain_value(self.source_question_id)
        out.update({"verdict": self.verdict.verdict, "sense": self.verdict.sense,
                    "turn": self.turn, "turn_source": self.turn_source,
                    "rules": [h.rule for h in self.hits],
                    "hits": [h.to_dict() for h in self.hits]})
        if self.verdict.why:
            out["why"] = self.verdict.why
        if self.verdict.evidence:
            out["evidence"] = list(self.verdict.evidence)
        return out


_ORDER = {"pass": 0, "needs_scene": 1, "defect": 2}


@dataclass
class CheckResult:
    """Every rotated item's check, the number of groups, the ids of the complete groups, whether the
    scene rules ran, and the object names no scene carried."""
    items: list[ItemCheck]  # every rotated item
    groups: int
    complete: set[Any]  # ids of the groups with every viewpoint
    scenes: bool  # the scene rules ran
    unmatched: collections.Counter = field(default_factory=collections.Counter)  # names no
    # scene object carries
    fingerprint: str = ""  # the judged set's RotationSet.fingerprint()
    options: CheckOptions | None = None  # the options it ran with
    evidence: str | None = None  # where SQA3D's texts were read (None: not read)

    def ids_with(self, *verdicts: str) -> set[Any]:
        """Group ids with an item of one of ``verdicts``."""
        return {it.question_id for it in self.items if it.verdict.verdict in verdicts}

    def group_verdicts(self) -> dict[Any, str]:
        """Each group's verdict: its worst item's (defect, then needs_scene, then pass)."""
        out: dict[Any, str] = {}
        for it in self.items:
            v = it.verdict.verdict
            if _ORDER[v] >= _ORDER.get(out.get(it.question_id, "pass"), 0):
                out[it.question_id] = v
        return out

    def ceiling(self) -> dict[str, Any]:
        """The best P_k and VRS a model that follows every turn exactly can reach here: an
        item whose text contradicts its turn scores such a model wrong. Over the complete
        groups; viewpoint 0 counts as right; ``needs_scene`` counted right and counted
        wrong."""
        views = 1 + len({it.rotation_deg for it in self.items})
        out: dict[str, Any] = {"groups": len(self.complete), "viewpoints": views}
        for name, ok in (("needs_scene_right", ("pass", "needs_scene")),
                         ("needs_scene_wrong", ("pass",))):
            right = collections.Counter({q: 1 for q in self.complete})
            for it in self.items:
                if it.question_id in self.complete and it.verdict.verdict in ok:
                    right[it.question_id] += 1
            n = max(len(self.complete), 1)
            p = [round(100 * sum(c >= k for c in right.values()) / n, 2)
                 for k in range(1, views + 1)]
            out[name] = {"p": p, "vrs": round(sum(p) / len(p), 2)}
        return out

    def summary(self) -> dict[str, Any]:
        rules = {**TEXT_RULES, **ANSWER_RULES, **(SCENE_RULES if self.scenes else {})}
        per_rule = {r: {"items": 0, "as_defect": 0, "as_needs_scene": 0, "groups": set()}
                    for r in rules}
        for it in self.items:
            for h in it.hits:
                c = per_rule.setdefault(h.rule, {"items": 0, "as_defect": 0,
                                                 "as_needs_scene": 0, "groups": set()})
                c["items"] += 1
                c["as_needs_scene" if h.needs_scene else "as_defect"] += 1
                c["groups"].add(it.question_id)
        groups = self.group_verdicts()
        senses: dict[str, collections.Counter] = {}
        for it in self.items:
            senses.setdefault(str(it.rotation_deg), collections.Counter())[it.verdict.sense] += 1
        verdicts = collections.Counter(it.verdict.verdict for it in self.items)
        return {
            "items": len(self.items),
            "groups": self.groups,
            "complete_groups": len(self.complete),
            "verdicts": {v: verdicts.get(v, 0) for v in VERDICTS},
            "group_verdicts": {v: sum(g == v for g in groups.values()) for v in VERDICTS},
            "complete_group_verdicts": {v: sum(g == v for q, g in groups.items()
                                               if q in self.complete) for v in VERDICTS},
            "rules": {r: {**{k: c[k] for k in ("items", "as_defect", "as_needs_scene")},
                          "groups": len(c["groups"])} for r, c in per_rule.items()},
            "items_with_a_rule": sum(bool(it.hits) for it in self.items),
            "items_with_several_rules": sum(len({h.rule for h in it.hits}) > 1
                                            for it in self.items),
            # decided by the other questions asked at the item's pose: supported by them, or
            # a defect one of them shows (named in the hit's phrases)
            "items_decided_by_pose_questions": sum(
                bool(it.verdict.evidence) or any(
                    not h.needs_scene and any(" at this pose: " in p for p in h.phrases)
                    for h in it.hits) for it in self.items),
            "senses": {k: {s: c.get(s, 0) for s in SENSES} for k, c in sorted(senses.items())},
            "turn_source": dict(collections.Counter(it.turn_source for it in self.items)),
            "ceiling": self.ceiling(),
            "scenes": self.scenes,
            "rule_text": rules,
            "unmatched_names": dict(self.unmatched.most_common(20)),
        }


def _where(rs: RotationSet, r: dict) -> str:
    file = rs.files.get(int(r["rotation_deg"]))
    qid = r.get("source_question_id", r["question_id"])
    return f"{file + ': ' if file else ''}question_id {qid} at viewpoint {r['rotation_deg']}"


def _yaw_table(rs: RotationSet) -> dict[tuple[Any, int], float]:
    """Each row's yaw, by (question_id, viewpoint), read from its quaternion."""
    quats = np.asarray([[float(r["rotation"][k]) for k in ("_x", "_y", "_z", "_w")]
                        for r in rs.rows], dtype=float).reshape(-1, 4)
    try:
        yaws = yaws_from_quaternions(quats, [_where(rs, r) for r in rs.rows])
    except PoseError as err:
        raise FormatError(str(err)) from None
    return {(r["question_id"], int(r["rotation_deg"])): y for r, y in zip(rs.rows, yaws)}


class _Scenes:
    """Each scene read once, with the names it holds several of and the names no object of it
    carries."""

    def __init__(self, rs: RotationSet):
        self.get, self.cache = rs.scenes, {}
        self.unmatched: collections.Counter = collections.Counter()

    def __call__(self, sid: str) -> tuple[Scene | None, frozenset[str]]:
        if self.get is None:
            return None, frozenset()
        if sid not in self.cache:
            scene = self.get(sid)
            self.cache[sid] = scene, several_named(scene)
        return self.cache[sid]

    def hits(self, r0: dict, r: dict, turn: float, scene: Scene, margin: float, where0: str
             ) -> tuple[list[Hit], bool]:
        pose0 = Pose.from_sqa3d(r0["position"], r0["rotation"], scene.origin, item=where0)
        sc = SceneCheck(r["situation"], r["question"], list(r["answers"]), pose0.turned(turn),
                        r.get("semantics") or None, margin)
        found = check_scene(sc, scene)
        self.unmatched.update(found.unmatched)
        return found.hits, found.confirmed


def _texts(r0: dict, r: dict) -> dict[str, Any]:
    return {"situation_0": r0["situation"], "question_0": r0["question"],
            "answers_0": list(r0["answers"]), "situation": r["situation"],
            "question": r["question"], "answers": list(r["answers"])}


def check_set(rs: RotationSet, options: CheckOptions | None = None, *,
              evidence: PoseEvidence | None = None, progress: bool = False) -> CheckResult:
    """A verdict for every rotated item of ``rs`` (text and answer rules always, scene rules
    when ``rs.scenes`` is set), with ``options`` and SQA3D's texts as ``evidence``
    (:func:`~hf_real3d.real3dqa.checker.evidence.find_evidence`; None: not read)."""
    options = options or CheckOptions()
    yaw = _yaw_table(rs)
    groups = rs.groups()
    views = sorted({int(r["rotation_deg"]) for r in rs.rows})
    complete = {q for q, g in groups.items() if len(g) == len(views)}
    scenes = _Scenes(rs)
    questions = evidence.questions if evidence is not None else {}
    items = []
    for q, g in tqdm(groups.items(), desc="checking rotations", unit="group",
                     disable=not progress):
        r0 = g.get(0)
        if r0 is None:
            raise FormatError(f"{rs.path}: question_id {q} has viewpoints {sorted(g)} but not "
                              "0; every group needs its unturned viewpoint")
        for k, r in sorted(g.items()):
            if k == 0:
                continue
            turn, source = turn_of(yaw[(q, 0)], yaw[(q, k)], k)
            scene, several = scenes(r["scene_id"])
            scene_hits, confirms = scenes.hits(r0, r, turn, scene, options.margin_deg,
                                               _where(rs, r0)) \
                if scene is not None else ([], False)
            item = TurnedItem(
                r0["situation"], r["situation"], r["question"], list(r0["answers"]),
                list(r["answers"]), turn, list(r0.get("alternative_situation") or []),
                {j: x["situation"] for j, x in g.items() if j not in (0, k)}, r0["question"],
                questions.get(q, []),
                None if evidence is None else evidence.several.get(q, frozenset()))
            verdict = verdict_for(item, several=several, scene_hits=scene_hits,
                                  scene_confirms=confirms)
            items.append(ItemCheck(q, k, turn, source, verdict, r.get("source_question_id"),
                                   _texts(r0, r)))
    return CheckResult(items, len(groups), complete, rs.scenes is not None, scenes.unmatched,
                       rs.fingerprint(), options,
                       None if evidence is None else evidence.source)
