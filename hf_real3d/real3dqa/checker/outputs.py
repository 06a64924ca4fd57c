"""The checker's outputs, written by its callers (the checker itself stores nothing): the
check folder (:func:`write_check_folder`: ``check.json``, ``verdicts.jsonl``, ``flags.jsonl``,
``repairs.jsonl``, ``report.md``) and a dataset folder's ``rotation_checks`` and
``rotations_checked`` configs (:func:`check_configs`), which ``hf-real3d evaluate
--exclude-flagged``, the lmms-eval tasks and the explorer read.

* ``verdicts.jsonl``: one line per rotated item (verdict, sense, rules, texts): the contract;
* ``check.json``: counts per verdict, rule and sense, the ceiling on P_k and VRS, the options,
  where SQA3D's texts came from, and the ``fingerprint`` of the rotation set judged
  (:meth:`RotationSet.fingerprint`): every reader of these outputs compares it with the set it
  is given (:mod:`.folder`);
* ``repairs.jsonl``: proposed fixes of the mechanical defects;
* ``flags.jsonl``: the items with a rule; ``report.md``: the tables, with examples.
"""

from __future__ import annotations

import collections
import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from hf_real3d._io import atomic_dir, plain_value, write_json
from hf_real3d.real3dqa.checker.check import CheckOptions, CheckResult
from hf_real3d.real3dqa.checker.rules import SENSES, VERDICTS
from hf_real3d.real3dqa.rotation_set import RotationSet
from hf_real3d.tables import markdown_table

__all__ = ["CHECKED_CONFIG", "CHECKS_CONFIG", "add_check_configs", "check_configs",
           "flagged_groups", "repairs", "report_section", "write_check_folder"]

CHECKS_CONFIG = "rotation_checks"
CHECKED_CONFIG = "rotations_checked"


def flagged_groups(items: Iterable[dict[str, Any]], verdicts: tuple[str, ...] = ("defect",)
                   ) -> set[Any]:
    """Group ids with an item of one of ``verdicts``, from ``rotation_checks`` rows or
    verdicts.jsonl lines."""
    return {r["question_id"] for r in items if r.get("verdict") in verdicts}


def repairs(result: CheckResult) -> list[dict[str, Any]]:
    """Proposed fixes of the mechanical defects, never applied here: a direction answer
    turned as the situation (or, failing that, the quaternions) says; a heading-free answer
    restored to viewpoint 0's; a copied or duplicated situation marked for rewriting."""
    out = []
    for it in result.items:
        if it.verdict.verdict != "defect":
            continue
        rules = {h.rule for h in it.hits if not h.needs_scene}
        t = it.texts
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


def _examples(result: CheckResult, per_rule: int = 3) -> dict[str, list]:
    out: dict[str, list] = {}
    for it in result.items:
        for h in it.hits:
            ex = out.setdefault(h.rule, [])
            if len(ex) < per_rule:
                ex.append({"question_id": plain_value(it.question_id),
                           "rotation_deg": it.rotation_deg, "verdict": it.verdict.verdict,
                           **it.texts, "detail": h.detail})
    return out


def report_section(summary: dict[str, Any], examples: dict[str, list]) -> str:
    """Markdown: the verdicts (items and groups), the rules (an item may break several), the
    senses per viewpoint, and up to three examples of each rule."""
    v, gv = summary["verdicts"], summary["group_verdicts"]
    lines = [f"{summary['items']} rotated items in {summary['groups']} groups checked"
             + (" (text, answer and scene rules)" if summary["scenes"] else
                " (text and answer rules; give --scenes for the scene rules)") + ".", "",
             *([f"**{summary['evidence_missing']}.**", ""]
               if summary.get("evidence_missing") else []),
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


def check_configs(result: CheckResult, summary: dict[str, Any], rotations: Any,
                   features: Any, split: str) -> list[Any]:
    """The ``rotation_checks`` and ``rotations_checked`` configs of the dataset folder whose
    ``rotations`` (a Dataset, or its rows; ``features``: their columns) were checked: what
    a caller stores (``check-rotations`` adds them to the folder, ``rotate`` writes them with
    its own)."""
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


def add_check_configs(rs: RotationSet, result: CheckResult, summary: dict[str, Any]) -> None:
    """Add the ``rotation_checks`` and ``rotations_checked`` configs to the dataset folder
    ``rs`` was read from (its ``rotations`` config, as read once: ``rs.table``)."""
    from hf_real3d.hub import add_config  # hub brings datasets

    for config in check_configs(result, summary, rs.table, rs.table.features, rs.split):
        add_config(rs.path, config)


def write_check_folder(result: CheckResult, out: str | os.PathLike, *, dataset: str,
                       source: str, scenes_from: str = "", missing: str | None = None
                       ) -> dict[str, Any]:
    """The check folder ``out`` of ``result`` (check.json, verdicts.jsonl, flags.jsonl,
    repairs.jsonl, report.md), written atomically; returns its summary (``source``: the
    set's kind; ``missing``: the line a check without SQA3D's texts says)."""
    summary = {"dataset": dataset, "fingerprint": result.fingerprint, "source": source,
               "scenes_from": scenes_from or None, "pose_questions_from": result.evidence,
               "margin_deg": (result.options or CheckOptions()).margin_deg,
               **({"evidence_missing": missing} if missing else {}), **result.summary()}
    proposed = repairs(result)
    summary["repairs"] = dict(collections.Counter(r["rule"] for r in proposed))
    examples = _examples(result)
    summary["examples"] = examples
    with atomic_dir(Path(out)) as tmp:
        write_json(tmp / "check.json", summary, indent=2)
        with open(tmp / "verdicts.jsonl", "w", encoding="utf-8") as f:
            for it in result.items:
                f.write(json.dumps({**it.to_dict(), **it.texts}, ensure_ascii=False) + "\n")
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


