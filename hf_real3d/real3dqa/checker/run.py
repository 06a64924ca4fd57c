"""``hf-real3d check-rotations``: a verdict for every rotated item of a rotation set.

Reads a rotation set (:func:`hf_real3d.real3dqa.rotation_set.read_rotation_set`): the
official release folder, any folder of ``rotation_{k}.json`` files in its format, or a
dataset folder this library built or imported (its ``rotations`` config). Applies the rules
of :mod:`hf_real3d.real3dqa.checker.text` (the text and answer rules always; the scene rules with
ScanNet-format scenes, or with the folder's own ``scenes`` config). With SQA3D's test files
(``sqa3d``, or an ``sqa3d`` folder beside the release, as ``../shared/real`` holds them), the
other questions asked at each item's pose are evidence of where things are there
(:func:`pose_questions`). It writes:

* ``OUT/verdicts.jsonl``: one line per rotated item (verdict, sense, rules, texts): the
  contract;
* ``OUT/check.json``: counts per verdict, rule and sense, the ceiling on P_k and VRS, and
  the ``fingerprint`` of the rotation set judged (:meth:`RotationSet.fingerprint`, as a
  review folder keeps it): every reader of these outputs compares it with the set it is
  given;
* ``OUT/repairs.jsonl``: proposed fixes of the mechanical defects;
* ``OUT/flags.jsonl``: the items with a rule; ``OUT/report.md``: the tables, with examples;
* for a dataset folder, the configs ``rotation_checks`` (one row per rotated item: its
  verdict, rules and the set's fingerprint) and ``rotations_checked`` (the rotation groups
  with no defect), which ``hf-real3d evaluate --exclude-flagged``, the lmms-eval tasks and
  the explorer read.

:mod:`hf_real3d.real3dqa.checker.folder` reads these outputs back.
"""

from __future__ import annotations

import collections
import json
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from tqdm.auto import tqdm

from hf_real3d._io import FormatError, atomic_dir, plain_value, write_json
from hf_real3d.english.mentions import normal_text, singular, tokens
from hf_real3d.geometry import MARGIN_DEG, Pose, PoseError, yaws_from_quaternions
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
from hf_real3d.real3dqa.rotation_set import RotationSet, read_rotation_set
from hf_real3d.scene import Scene
from hf_real3d.sources import SQA3DFolder, resolve
from hf_real3d.sqa3d import SQA3DRecord, read_split
from hf_real3d.tables import markdown_table

__all__ = ["ItemCheck", "CheckResult", "PoseEvidence", "check_set", "check_rows",
           "names_several", "pose_questions", "pose_questions_for", "scene_several",
           "sqa3d_beside", "check_rotations", "flagged_groups", "repairs", "report_section",
           "CHECKS_CONFIG", "CHECKED_CONFIG"]

CHECKS_CONFIG = "rotation_checks"
CHECKED_CONFIG = "rotations_checked"
@dataclass
class ItemCheck:
    """One rotated item, its verdict and the rules behind it."""

    question_id: Any
    rotation_deg: int
    turn: float
    turn_source: str  # "quaternion" or "convention"
    verdict: Verdict
    source_question_id: Any = None

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


def _yaw_table(rows: list[dict[str, Any]], where: Callable[[dict], str]) -> np.ndarray:
    quats = np.asarray([[float(r["rotation"][k]) for k in ("_x", "_y", "_z", "_w")]
                        for r in rows], dtype=float).reshape(-1, 4)
    try:
        return yaws_from_quaternions(quats, [where(r) for r in rows])
    except PoseError as err:
        raise FormatError(str(err)) from None


PoseQuestions = dict[Any, list[tuple[Any, str, list[str]]]]


def pose_questions(records: Iterable[SQA3DRecord]) -> PoseQuestions:
    """For each question, the other questions asked at its pose (the same scene, position and
    rotation): SQA3D asks about five at each (719 poses for the 3,519 test questions)."""
    by: dict[tuple, list[SQA3DRecord]] = {}
    for r in records:
        key = (r.scene_id, *(round(r.position[k], 4) for k in "xyz"),
               *(round(r.rotation[k], 4) for k in ("_x", "_y", "_z", "_w")))
        by.setdefault(key, []).append(r)
    return {r.question_id: [(s.question_id, s.question, list(s.answers)) for s in group
                            if s.question_id != r.question_id]
            for group in by.values() for r in group}


def sqa3d_beside(dataset: str | os.PathLike) -> Path | None:
    """An ``sqa3d`` folder with SQA3D's test files beside ``dataset`` (the layout of
    ``../shared/real``: ``real3dqa/`` and ``sqa3d/``), or None."""
    near = Path(dataset).resolve().parent / "sqa3d"
    if not near.is_dir():
        return None
    try:
        found = resolve(near, SQA3DFolder)
    except (OSError, ValueError):
        return None
    return near if "test" in found.splits() else None


@dataclass
class PoseEvidence:
    """What SQA3D's own texts say beside a rotated item: the other questions at its pose, and
    the names its scene's texts name several of (round 5)."""

    questions: PoseQuestions
    several: dict[Any, frozenset[str]]  # by question id


# "another chair", "two chairs", "both beds": several
_MANY_WORDS = frozenset("another other second third both two three four five six seven eight "
                        "nine ten several many multiple some all".split())


def names_several(texts: Iterable[str]) -> frozenset[str]:
    """The heads any of ``texts`` names as several: a plural ("the chairs"), or after
    "another", "two", "both", "several" and the like. Read over every SQA3D text of a scene,
    it tells which names the scene holds more than one of; where it errs, it errs towards
    several."""
    out: set[str] = set()
    for text in texts:
        words = [t[0] for t in tokens(normal_text(text))]
        for i, w in enumerate(words):
            sing = singular(w)
            if sing != w or (i and words[i - 1] in _MANY_WORDS):
                out.add(sing)
    return frozenset(out)


def scene_several(records: Iterable[SQA3DRecord]) -> dict[Any, frozenset[str]]:
    """For each question, the names that any SQA3D text of its scene (about 50: situations,
    alternatives, questions and answers) names as several (:func:`names_several`)."""
    texts: dict[str, list[str]] = {}
    ids: dict[str, list[Any]] = {}
    for r in records:
        texts.setdefault(r.scene_id, []).extend([r.situation, *r.alternative_situation,
                                                 r.question, *r.answers])
        ids.setdefault(r.scene_id, []).append(r.question_id)
    out = {}
    for sid, qs in ids.items():
        names = names_several(texts[sid])
        out.update({q: names for q in qs})
    return out


def pose_questions_for(dataset: str | os.PathLike, sqa3d: str | os.PathLike | None = None
                       ) -> tuple[PoseEvidence | None, Path | None]:
    """The other questions at each pose and the names each scene holds several of, read from
    SQA3D's test files in ``sqa3d`` (by default, :func:`sqa3d_beside` ``dataset``), and the
    folder read; (None, None) without them."""
    folder = Path(sqa3d) if sqa3d is not None else sqa3d_beside(dataset)
    if folder is None:
        return None, None
    split = resolve(folder, SQA3DFolder, what="`sqa3d`").check_split("test")
    records = read_split(folder, split, validate_poses=False)
    return PoseEvidence(pose_questions(records), scene_several(records)), folder


def check_set(rs: RotationSet, *, margin_deg: float = MARGIN_DEG, progress: bool = False,
              at_pose: PoseEvidence | PoseQuestions | None = None) -> CheckResult:
    """A verdict for every rotated item of ``rs`` (text and answer rules always, scene rules
    when ``rs.scenes`` is set; ``at_pose``: :func:`pose_questions`, the evidence of the other
    questions at each item's pose)."""

    def where(r: dict) -> str:
        file = rs.files.get(int(r["rotation_deg"]))
        qid = r.get("source_question_id", r["question_id"])
        return f"{file + ': ' if file else ''}question_id {qid} at viewpoint {r['rotation_deg']}"

    if isinstance(at_pose, PoseEvidence):
        at_pose, several_by = at_pose.questions, at_pose.several
    else:
        several_by = None
    yaws = _yaw_table(rs.rows, where)
    yaw = {(r["question_id"], int(r["rotation_deg"])): y for r, y in zip(rs.rows, yaws)}
    groups = rs.groups()
    views = sorted({int(r["rotation_deg"]) for r in rs.rows})
    complete = {q for q, g in groups.items() if len(g) == len(views)}
    scene_cache: dict[str, Scene] = {}
    several_cache: dict[str, frozenset[str]] = {}
    unmatched: collections.Counter = collections.Counter()
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
            scene = None
            several: frozenset[str] = frozenset()
            if rs.scenes is not None:
                sid = r["scene_id"]
                if sid not in scene_cache:
                    scene_cache[sid] = rs.scenes(sid)
                    several_cache[sid] = several_named(scene_cache[sid])
                scene, several = scene_cache[sid], several_cache[sid]
            scene_hits: list[Hit] = []
            confirms = False
            if scene is not None:
                pose0 = Pose.from_sqa3d(r0["position"], r0["rotation"], scene.origin,
                                        item=where(r0))
                sc = SceneCheck(r["situation"], r["question"], list(r["answers"]),
                                pose0.turned(turn), r.get("semantics") or None, margin_deg)
                found = check_scene(sc, scene)
                scene_hits, confirms = found.hits, found.confirmed
                unmatched.update(found.unmatched)
            item = TurnedItem(
                r0["situation"], r["situation"], r["question"], list(r0["answers"]),
                list(r["answers"]), turn, list(r0.get("alternative_situation") or []),
                {j: x["situation"] for j, x in g.items() if j not in (0, k)}, r0["question"],
                (at_pose or {}).get(q, []),
                None if several_by is None else several_by.get(q, frozenset()))
            verdict = verdict_for(item, several=several, scene_hits=scene_hits,
                            scene_confirms=confirms)
            items.append(ItemCheck(q, k, turn, source, verdict, r.get("source_question_id")))
    return CheckResult(items, len(groups), complete, rs.scenes is not None, unmatched,
                       rs.fingerprint())


def flagged_groups(items: Iterable[dict[str, Any]], verdicts: tuple[str, ...] = ("defect",)
                   ) -> set[Any]:
    """Group ids with an item of one of ``verdicts``, from ``rotation_checks`` rows or
    verdicts.jsonl lines."""
    return {r["question_id"] for r in items if r.get("verdict") in verdicts}


def _texts(rs: RotationSet) -> Callable[[ItemCheck], dict[str, Any]]:
    groups = rs.groups()

    def texts(it: ItemCheck) -> dict[str, Any]:
        g = groups[it.question_id]
        r0, r = g[0], g[it.rotation_deg]
        return {"situation_0": r0["situation"], "question_0": r0["question"],
                "answers_0": list(r0["answers"]), "situation": r["situation"],
                "question": r["question"], "answers": list(r["answers"])}

    return texts


def repairs(result: CheckResult, rs: RotationSet) -> list[dict[str, Any]]:
    """Proposed fixes of the mechanical defects, never applied here: a direction answer
    turned as the situation (or, failing that, the quaternions) says; a heading-free answer
    restored to viewpoint 0's; a copied or duplicated situation marked for rewriting."""
    texts = _texts(rs)
    out = []
    for it in result.items:
        if it.verdict.verdict != "defect":
            continue
        rules = {h.rule for h in it.hits if not h.needs_scene}
        t = texts(it)
        base = {"question_id": plain_value(it.question_id), "rotation_deg": it.rotation_deg}
        if rules & {"text_not_turned", "duplicate_view"}:
            rule = "text_not_turned" if "text_not_turned" in rules else "duplicate_view"
            out.append({**base, "rule": rule, "field": "situation", "action": "rewrite",
                        "from": t["situation"], "to": None,
                        "why": "the situation does not describe the turned view; write one "
                               "that does"})
        if rules & {"text_not_turned", "duplicate_view", "direction_wrong",
                     "same_object_faced"}:
            continue  # the situation itself is wrong: no answer follows from it
        for h in it.hits:
            if h.repair and not h.needs_scene:  # never a repair that empties the answers
                out.append({**base, "rule": h.rule, "field": "answers", "action": "replace",
                            "from": t["answers"], "to": list(h.repair), "why": h.detail})
    return out


def _examples(result: CheckResult, rs: RotationSet, per_rule: int = 3) -> dict[str, list]:
    texts = _texts(rs)
    out: dict[str, list] = {}
    for it in result.items:
        for h in it.hits:
            ex = out.setdefault(h.rule, [])
            if len(ex) < per_rule:
                ex.append({"question_id": plain_value(it.question_id),
                           "rotation_deg": it.rotation_deg, "verdict": it.verdict.verdict,
                           **texts(it), "detail": h.detail})
    return out


def report_section(summary: dict[str, Any], examples: dict[str, list]) -> str:
    """Markdown: the verdicts (items and groups), the rules (an item may break several), the
    senses per viewpoint, and up to three examples of each rule."""
    v, gv = summary["verdicts"], summary["group_verdicts"]
    lines = [f"{summary['items']} rotated items in {summary['groups']} groups checked"
             + (" (text, answer and scene rules)" if summary["scenes"] else
                " (text and answer rules; give --scenes for the scene rules)") + ".", "",
             markdown_table(["verdict", "items", "groups"],
                            [[f"`{k}`", v[k], gv[k]] for k in VERDICTS]), "",
             "A group's verdict is its worst item's (`defect`, then `needs_scene`, then "
             "`pass`). `needs_scene`: the text alone cannot decide (objects of one name, a "
             "choice of two sides after a quarter turn, an answer that rests on where unnamed "
             "things are).", "",
             f"{summary['items_with_a_rule']} items break at least one rule, "
             f"{summary['items_with_several_rules']} of them more than one, so the rule counts "
             "below overlap and sum to more than the items. "
             f"{summary['items_decided_by_pose_questions']} verdicts rest on the other "
             "questions asked at the item's pose (named in `evidence` or the hit).", "",
             markdown_table(["rule", "items", "as defect", "as needs_scene", "groups",
                             "what it means"],
                            [[f"`{r}`", c["items"], c["as_defect"], c["as_needs_scene"],
                              c["groups"], summary["rule_text"].get(r, "")]
                             for r, c in summary["rules"].items()]), "",
             "The sense each turned item's texts follow (a quarter turn's may follow its "
             "quaternions or the opposite turn; `either`: a half turn, or nothing tells them "
             "apart; `none`: no rigid turn):", "",
             markdown_table(["viewpoint", *SENSES],
                            [[k, *(c[s] for s in SENSES)] for k, c in summary["senses"].items()])]
    turns = ", ".join(f"{n} from the {s}" for s, n in summary["turn_source"].items())
    lines += ["", f"The turn of each item: {turns} (a viewpoint k turned k degrees clockwise, "
              "where the item's quaternions were left unturned)."]
    c = summary["ceiling"]
    ks = [f"P_{k}" for k in range(1, c["viewpoints"] + 1)]
    lines += ["", "## The ceiling these verdicts put on P_k and VRS", "",
              "An item whose gold answer contradicts its turn scores a model that follows the "
              "turn exactly as wrong. The best such a model can reach, over the "
              f"{c['groups']} complete groups (viewpoint 0 counted right):", "",
              markdown_table(["`needs_scene` items counted", *ks, "VRS"],
                             [["right", *c["needs_scene_right"]["p"],
                               c["needs_scene_right"]["vrs"]],
                              ["wrong", *c["needs_scene_wrong"]["p"],
                               c["needs_scene_wrong"]["vrs"]]])]
    for rule, ex in examples.items():
        lines += ["", f"### `{rule}`", ""]
        for e in ex:
            lines += [f"- {e['question_id']} at {e['rotation_deg']} ({e['verdict']}): "
                      f"\"{e['situation_0']}\" (answer {', '.join(e['answers_0'])}) -> "
                      f"\"{e['situation']}\" (answer {', '.join(e['answers'])}). "
                      f"{e['detail']}."]
    return "\n".join(lines)


def _config_rows(result: CheckResult) -> list[dict[str, Any]]:
    return [{"question_id": int(it.question_id), "rotation_deg": int(it.rotation_deg),
             "verdict": it.verdict.verdict, "sense": it.verdict.sense,
             "flagged": it.verdict.verdict == "defect", "rules": [h.rule for h in it.hits],
             "details": [h.detail for h in it.hits], "turn_deg": float(it.turn),
             "turn_source": it.turn_source, "set_fingerprint": result.fingerprint}
            for it in result.items]


def _check_configs(result: CheckResult, summary: dict[str, Any], rotations: Any,
                   features: Any, split: str) -> list[Any]:
    """The ``rotation_checks`` and ``rotations_checked`` configs of the dataset folder whose
    ``rotations`` (a Dataset, or its rows) were checked."""
    # datasets only to write a dataset folder's configs
    import datasets

    from hf_real3d.hub import ConfigData  # hub imports datasets too

    feats = datasets.Features({
        "question_id": datasets.Value("int64"), "rotation_deg": datasets.Value("int32"),
        "verdict": datasets.Value("string"), "sense": datasets.Value("string"),
        "flagged": datasets.Value("bool"), "rules": datasets.Sequence(datasets.Value("string")),
        "details": datasets.Sequence(datasets.Value("string")),
        "turn_deg": datasets.Value("float64"), "turn_source": datasets.Value("string"),
        "set_fingerprint": datasets.Value("string")})
    v, gv = summary["verdicts"], summary["group_verdicts"]
    note = (f"{v['defect']} defect, {v['needs_scene']} needs_scene, {v['pass']} pass of "
            f"{summary['items']} rotated items")
    bad = result.ids_with("defect")  # what --exclude-flagged leaves out
    keep = [r for r in rotations if r["question_id"] not in bad] if isinstance(rotations, list) \
        else rotations.filter(lambda q: q not in bad, input_columns="question_id")
    return [ConfigData(CHECKS_CONFIG, {split: _config_rows(result)}, feats,
                       "hf-real3d check-rotations: each rotated item's verdict and the rules it "
                       f"breaks ({note})"),
            ConfigData(CHECKED_CONFIG, {split: keep}, features,
                       "the rotation groups in which hf-real3d check-rotations finds no defect "
                       f"({summary['groups'] - gv['defect']} of {summary['groups']} groups)")]


def _add_configs(folder: Path, result: CheckResult, summary: dict[str, Any],
                 split: str = "test") -> None:
    # the dataset folder's configs (hub, datasets) only for a dataset folder
    from hf_real3d.hub import add_config, load_local

    rot = load_local(folder, "rotations", split)
    for config in _check_configs(result, summary, rot, rot.features, split):
        add_config(folder, config)


def check_rows(rows: list[dict[str, Any]], out: str | os.PathLike, *, dataset: str,
               features: Any, scenes: Callable[[str], Scene] | None = None,
               split: str = "test", progress: bool = True) -> tuple[dict[str, Any], list[Any]]:
    """:func:`check_rotations` of the ``rotations`` rows of the dataset folder ``dataset``,
    held in memory (``hf-real3d rotate``'s, checked before they are written, never read back;
    ``features``: their columns; ``scenes``: scene_id -> Scene): writes the check folder
    ``out`` and returns its summary and the folder's ``rotation_checks`` and
    ``rotations_checked`` configs."""
    rs = RotationSet("folder", Path(dataset), rows, scenes,
                     "the folder's scenes config" if scenes else "", split=split)
    result = check_set(rs, progress=progress)
    summary = _write_checks(rs, result, Path(out), dataset)
    return summary, _check_configs(result, summary, rows, features, split)


def check_rotations(dataset: str | os.PathLike, out: str | os.PathLike, *,
                    scenes: str | os.PathLike | None = None, margin_deg: float = MARGIN_DEG,
                    write_configs: bool = True, progress: bool = True,
                    sqa3d: str | os.PathLike | None = None,
                    pose_evidence: bool = True) -> dict[str, Any]:
    """``hf-real3d check-rotations``: a verdict per rotated item, written (atomically) to
    ``OUT``; for a dataset folder also its ``rotation_checks`` and ``rotations_checked``
    configs. ``sqa3d``: SQA3D's folder, whose other questions at each pose are evidence
    (default: an ``sqa3d`` folder beside ``dataset`` when it holds the test files;
    ``pose_evidence=False``: none). Returns the summary written to ``check.json``."""
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise FileExistsError(f"{out}: exists and is not a folder; give another `out`")
    rs = read_rotation_set(dataset, scenes)
    at_pose, folder = pose_questions_for(dataset, sqa3d) if pose_evidence else (None, None)
    result = check_set(rs, margin_deg=margin_deg, progress=progress, at_pose=at_pose)
    summary = _write_checks(rs, result, out, str(dataset), folder)
    if write_configs and rs.source == "folder":
        _add_configs(rs.path, result, summary, rs.split)
        summary["configs"] = [CHECKS_CONFIG, CHECKED_CONFIG]
    return summary


def _write_checks(rs: RotationSet, result: CheckResult, out: Path, dataset: str,
                  pose_from: Path | None = None) -> dict[str, Any]:
    """The check folder ``out`` of ``rs``'s checks (``pose_from``: the SQA3D folder whose
    questions at each pose were evidence), written atomically; returns its summary."""
    summary = {"dataset": dataset, "fingerprint": result.fingerprint, "source": rs.source,
               "scenes_from": rs.scenes_from or None,
               "pose_questions_from": str(pose_from) if pose_from is not None else None,
               **result.summary()}
    proposed = repairs(result, rs)
    summary["repairs"] = dict(collections.Counter(r["rule"] for r in proposed))
    examples = _examples(result, rs)
    summary["examples"] = examples
    texts = _texts(rs)
    with atomic_dir(out) as tmp:
        write_json(tmp / "check.json", summary, indent=2)
        with open(tmp / "verdicts.jsonl", "w", encoding="utf-8") as f:
            for it in result.items:
                f.write(json.dumps({**it.to_dict(), **texts(it)}, ensure_ascii=False) + "\n")
        with open(tmp / "flags.jsonl", "w", encoding="utf-8") as f:
            for it in result.items:
                if it.hits:
                    f.write(json.dumps(it.to_dict(), ensure_ascii=False) + "\n")
        with open(tmp / "repairs.jsonl", "w", encoding="utf-8") as f:
            for r in proposed:
                f.write(json.dumps(r, ensure_ascii=False) + "\n")
        (tmp / "report.md").write_text("# Rotation checks\n\n" + report_section(summary, examples)
                                       + "\n", encoding="utf-8")
    return summary
