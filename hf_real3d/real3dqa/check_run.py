"""``hf-real3d check-rotations``: every rotated item of a rotation set against its turn.

Reads a rotation set (:func:`read_rotation_set`): the official release folder, any folder of
``rotation_{k}.json`` files in its format, or a dataset folder this library built or imported
(its ``rotations`` config). Applies the rules of :mod:`hf_real3d.real3dqa.checks` (the text
rules always; the scene rules with ScanNet-format scenes, or with the folder's own
``scenes`` config) and writes:

* ``OUT/check.json``: ``{"items", "flagged", "per_rule", "groups", "groups_flagged", ...}``;
* ``OUT/flags.jsonl``: one line per flagged item (id, viewpoint, each rule with the phrases
  that triggered it);
* ``OUT/report.md``: the counts by rule, with examples;
* for a dataset folder, the configs ``rotation_checks`` (one row per rotated item: its rules)
  and ``rotations_checked`` (the rotation groups no rule flags), which
  ``hf-real3d evaluate --exclude-flagged``, the lmms-eval tasks and the explorer read.
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

from hf_real3d._io import FormatError, atomic_dir, write_json
from hf_real3d.geometry import Pose, PoseError, yaws_from_quaternions
from hf_real3d.real3dqa.checks import (
    SCENE_RULES,
    TEXT_RULES,
    Hit,
    SceneCheck,
    check_scene,
    check_text,
    several_named,
    turn_of,
)
from hf_real3d.real3dqa.format import DEBIASED_FILE, read_release, read_rotation_files
from hf_real3d.scene import Scene, read_scannet, scannet_paths
from hf_real3d.tables import markdown_table

__all__ = ["RotationSet", "read_rotation_set", "ItemCheck", "CheckResult", "check_set",
           "check_rotations", "flagged_groups", "report_section", "CHECKS_CONFIG",
           "CHECKED_CONFIG"]

CHECKS_CONFIG = "rotation_checks"
CHECKED_CONFIG = "rotations_checked"
_ROW_KEYS = ("question_id", "rotation_deg", "scene_id", "situation", "question", "answers",
             "position", "rotation")


@dataclass
class RotationSet:
    """The rows of a rotation set (one per question and viewpoint, ``question_id`` the
    group's base id) and where they came from."""

    source: str  # "release", "files" or "folder"
    path: Path
    rows: list[dict[str, Any]]
    scenes: Callable[[str], Scene] | None = None  # scene_id -> Scene, when geometry is known
    scenes_from: str = ""  # where the scenes come from, for the report
    files: dict[int, str] = field(default_factory=dict)  # viewpoint -> file, for messages

    def groups(self) -> dict[Any, dict[int, dict[str, Any]]]:
        out: dict[Any, dict[int, dict[str, Any]]] = {}
        for r in self.rows:
            out.setdefault(r["question_id"], {})[int(r["rotation_deg"])] = r
        return out


def _folder_scenes(folder: Path) -> Callable[[str], Scene] | None:
    # datasets (through hub) only for dataset folders: checking release files does not pay
    # for importing it
    from hf_real3d.hub import card_configs, load_local
    from hf_real3d.schema import scene_from_row

    if "scenes" not in card_configs(folder):
        return None
    ds = load_local(folder, "scenes")
    index = {sid: i for i, sid in enumerate(ds["scene_id"])}

    def get(scene_id: str) -> Scene:
        if scene_id not in index:
            raise KeyError(f"{folder}: scene {scene_id!r} is not in the scenes config")
        return scene_from_row(ds[index[scene_id]])

    return get


def _scannet_scenes(root: Path) -> Callable[[str], Scene]:
    if not root.is_dir():
        raise FileNotFoundError(f"{root}: no such folder of ScanNet-format scenes (--scenes)")

    def get(scene_id: str) -> Scene:
        if not scannet_paths(root, scene_id)["ply"].is_file():
            raise KeyError(f"{root}: scene {scene_id!r} is referenced by the rotation set but "
                           "absent; give the folder that holds it, or check without --scenes")
        return read_scannet(root, scene_id)

    return get


def read_rotation_set(dataset: str | os.PathLike,
                      scenes: str | os.PathLike | None = None) -> RotationSet:
    """A rotation set from ``dataset``: a release folder (``rotation_0.json`` + the de-biased
    file), a folder of ``rotation_{k}.json`` files, or a dataset folder with a ``rotations``
    config. ``scenes``: a folder of ScanNet-format scenes; without it a dataset folder's
    ``scenes`` config gives the geometry when it has one."""
    path = Path(dataset)
    if (path / "rotation_0.json").is_file():
        if (path / DEBIASED_FILE).is_file():
            rows, source = read_release(path).rotations, "release"
        else:
            rows, source = read_rotation_files(path)[0], "files"
        files = {int(r["rotation_deg"]): f"rotation_{int(r['rotation_deg'])}.json"
                 for r in rows}
        rs = RotationSet(source, path, rows, files=files)
    elif (path / "README.md").is_file():
        # datasets (through hub) only for dataset folders
        from hf_real3d.hub import card_configs, load_frame

        configs = card_configs(path)
        if "rotations" not in configs:
            raise FileNotFoundError(f"{path}: the card lists configs {configs}, no `rotations`; "
                                    "build it with hf-real3d build-real3dqa, import-real3dqa or "
                                    "rotate first")
        rows = load_frame(path, "rotations", columns=(*_ROW_KEYS, "semantics",
                                                      "source_question_id")).to_dict("records")
        for r in rows:
            r["answers"] = list(r["answers"])
        rs = RotationSet("folder", path, rows, files={})
        if scenes is None:
            rs.scenes = _folder_scenes(path)
            rs.scenes_from = "the folder's scenes config" if rs.scenes else ""
    elif path.is_dir():
        raise FileNotFoundError(f"{path}: neither a folder of rotation_{{0,90,...}}.json files "
                                "(the Real-3DQA release format) nor a dataset folder "
                                "(README.md card with a rotations config)")
    else:
        raise FileNotFoundError(f"{path}: no such folder (--dataset takes a release folder, a "
                                "folder of rotation_{k}.json files or a dataset folder)")
    if scenes is not None:
        rs.scenes = _scannet_scenes(Path(scenes))
        rs.scenes_from = str(scenes)
    if not any(int(r["rotation_deg"]) == 0 for r in rs.rows):
        raise FormatError(f"{path}: no row at viewpoint 0: a rotation set needs each "
                          "question's unturned viewpoint to check the others against")
    return rs


@dataclass
class ItemCheck:
    """One rotated item and the rules it breaks."""

    question_id: Any
    rotation_deg: int
    turn: float
    turn_source: str  # "quaternion" or "convention"
    hits: list[Hit]
    source_question_id: Any = None
    # direction_wrong also under a turn the other way round: wrong whichever sense the
    # text's author took for the turn
    either_sense: bool = False

    def to_dict(self) -> dict[str, Any]:
        out = {"question_id": _plain(self.question_id), "rotation_deg": self.rotation_deg}
        if self.source_question_id is not None and self.source_question_id != self.question_id:
            out["source_question_id"] = _plain(self.source_question_id)
        out.update({"turn": self.turn, "turn_source": self.turn_source,
                    "rules": [h.rule for h in self.hits],
                    "hits": [h.to_dict() for h in self.hits]})
        return out


def _plain(v: Any) -> Any:
    return v.item() if isinstance(v, np.generic) else v


@dataclass
class CheckResult:
    """Every rotated item's check, the number of groups, the ids of the complete groups, whether the
    scene rules ran, and the object names no scene carried."""
    items: list[ItemCheck]  # every rotated item, flagged or not
    groups: int
    complete: set[Any]  # ids of the groups with every viewpoint
    scenes: bool  # the scene rules ran
    unmatched: collections.Counter = field(default_factory=collections.Counter)  # names no
    # scene object carries

    def flagged_ids(self) -> set[Any]:
        return {it.question_id for it in self.items if it.hits}

    def summary(self) -> dict[str, Any]:
        per_rule = collections.Counter(h.rule for it in self.items for h in it.hits)
        groups_per_rule = {r: len({it.question_id for it in self.items
                                   if any(h.rule == r for h in it.hits)}) for r in per_rule}
        flagged = self.flagged_ids()
        rules = {**TEXT_RULES, **(SCENE_RULES if self.scenes else {})}
        return {
            "items": len(self.items),
            "flagged": sum(bool(it.hits) for it in self.items),
            "per_rule": {r: per_rule.get(r, 0) for r in rules},
            "groups_per_rule": {r: groups_per_rule.get(r, 0) for r in rules},
            "direction_wrong_either_sense": sum(it.either_sense for it in self.items),
            "groups": self.groups,
            "groups_flagged": len(flagged),
            "groups_passing": self.groups - len(flagged),
            "complete_groups": len(self.complete),
            "complete_groups_passing": len(self.complete - flagged),
            "turn_source": dict(collections.Counter(it.turn_source for it in self.items)),
            "scenes": self.scenes,
            "rules": rules,
            "unmatched_names": dict(self.unmatched.most_common(20)),
        }


def _yaw_table(rows: list[dict[str, Any]], where: Callable[[dict], str]) -> np.ndarray:
    quats = np.asarray([[float(r["rotation"][k]) for k in ("_x", "_y", "_z", "_w")]
                        for r in rows], dtype=float).reshape(-1, 4)
    try:
        return yaws_from_quaternions(quats, [where(r) for r in rows])
    except PoseError as err:
        raise FormatError(str(err)) from None


def check_set(rs: RotationSet, *, margin_deg: float = 15.0,
              progress: bool = False) -> CheckResult:
    """Apply the rules to every rotated item of ``rs`` (text rules always, scene rules when
    ``rs.scenes`` is set)."""

    def where(r: dict) -> str:
        file = rs.files.get(int(r["rotation_deg"]))
        qid = r.get("source_question_id", r["question_id"])
        return f"{file + ': ' if file else ''}question_id {qid} at viewpoint {r['rotation_deg']}"

    yaws = _yaw_table(rs.rows, where)
    yaw = {(r["question_id"], int(r["rotation_deg"])): y for r, y in zip(rs.rows, yaws)}
    groups = rs.groups()
    views = sorted({int(r["rotation_deg"]) for r in rs.rows})
    complete = {q for q, g in groups.items() if len(g) == len(views)}
    scene_cache: dict[str, Scene] = {}
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
            scene = several = None
            if rs.scenes is not None:
                sid = r["scene_id"]
                if sid not in scene_cache:
                    scene_cache[sid] = rs.scenes(sid)
                scene = scene_cache[sid]
                several = several_named(scene)
            hits = check_text(r0["situation"], r["situation"], turn,
                              several=several or frozenset())
            if scene is not None:
                pose0 = Pose.from_sqa3d(r0["position"], r0["rotation"], scene.origin,
                                        item=where(r0))
                pose = pose0.turned(turn)
                item = SceneCheck(r["situation"], r["question"], list(r["answers"]), pose,
                                  r.get("semantics") or None, margin_deg)
                hits += check_scene(item, scene)
                unmatched.update(item.unmatched)
            either = any(h.rule == "direction_wrong" for h in hits) and any(
                h.rule == "direction_wrong"
                for h in check_text(r0["situation"], r["situation"], (-turn) % 360,
                                    several=several or frozenset()))
            items.append(ItemCheck(q, k, turn, source, hits, r.get("source_question_id"),
                                   either))
    return CheckResult(items, len(groups), complete, rs.scenes is not None, unmatched)


def flagged_groups(items: Iterable[dict[str, Any]]) -> set[Any]:
    """Group ids with a flagged item, from ``rotation_checks`` rows or flags.jsonl lines."""
    return {r["question_id"] for r in items if r.get("rules")}


def _examples(result: CheckResult, rs: RotationSet, per_rule: int = 3) -> dict[str, list]:
    groups = rs.groups()
    out: dict[str, list] = {}
    for it in result.items:
        for h in it.hits:
            ex = out.setdefault(h.rule, [])
            if len(ex) < per_rule:
                g = groups[it.question_id]
                ex.append({"question_id": _plain(it.question_id),
                           "rotation_deg": it.rotation_deg,
                           "situation_0": g[0]["situation"],
                           "situation": g[it.rotation_deg]["situation"],
                           "answers_0": list(g[0]["answers"]),
                           "answers": list(g[it.rotation_deg]["answers"]),
                           "detail": h.detail})
    return out


def report_section(summary: dict[str, Any], examples: dict[str, list]) -> str:
    """Markdown: the counts by rule and up to three examples of each."""
    lines = [f"{summary['items']} rotated items in {summary['groups']} groups checked"
             + (" (text and scene rules)" if summary["scenes"] else " (text rules; give "
                "--scenes for the scene rules)") + f": {summary['flagged']} items flagged, in "
             f"{summary['groups_flagged']} groups; {summary['groups_passing']} groups pass "
             f"({summary['complete_groups_passing']} of the {summary['complete_groups']} "
             "complete ones).", "",
             markdown_table(["rule", "items", "groups", "what it means"],
                            [[f"`{r}`", summary["per_rule"][r], summary["groups_per_rule"][r],
                              d] for r, d in summary["rules"].items()])]
    turns = ", ".join(f"{n} from the {s}" for s, n in summary["turn_source"].items())
    lines += ["", f"The turn of each item: {turns} (a viewpoint k turned k degrees clockwise, "
              "where the item's quaternions were left unturned). Of the "
              f"{summary['per_rule']['direction_wrong']} `direction_wrong` items, "
              f"{summary['direction_wrong_either_sense']} are wrong whichever way round the "
              "turn is read."]
    for rule, ex in examples.items():
        lines += ["", f"### `{rule}`", ""]
        for e in ex:
            lines += [f"- {e['question_id']} at {e['rotation_deg']}: \"{e['situation_0']}\" "
                      f"(answer {', '.join(e['answers_0'])}) -> \"{e['situation']}\" (answer "
                      f"{', '.join(e['answers'])}). {e['detail']}."]
    return "\n".join(lines)


def _config_rows(result: CheckResult) -> list[dict[str, Any]]:
    return [{"question_id": int(it.question_id), "rotation_deg": int(it.rotation_deg),
             "flagged": bool(it.hits), "rules": [h.rule for h in it.hits],
             "details": [h.detail for h in it.hits], "turn_deg": float(it.turn),
             "turn_source": it.turn_source} for it in result.items]


def _add_configs(folder: Path, result: CheckResult, summary: dict[str, Any]) -> None:
    # datasets only to write a dataset folder's configs
    import datasets

    from hf_real3d.hub import ConfigData, add_config, load_local  # hub imports datasets too

    feats = datasets.Features({
        "question_id": datasets.Value("int64"), "rotation_deg": datasets.Value("int32"),
        "flagged": datasets.Value("bool"), "rules": datasets.Sequence(datasets.Value("string")),
        "details": datasets.Sequence(datasets.Value("string")),
        "turn_deg": datasets.Value("float64"), "turn_source": datasets.Value("string")})
    note = (f"{summary['flagged']} of {summary['items']} rotated items flagged, "
            f"{summary['groups_flagged']} of {summary['groups']} groups")
    add_config(folder, ConfigData(CHECKS_CONFIG, {"test": _config_rows(result)}, feats,
                                  "hf-real3d check-rotations: the rules each rotated item "
                                  f"breaks ({note})"))
    rot = load_local(folder, "rotations")
    bad = result.flagged_ids()
    keep = rot.filter(lambda q: q not in bad, input_columns="question_id")
    add_config(folder, ConfigData(CHECKED_CONFIG, {"test": keep}, rot.features,
                                  "the rotation groups hf-real3d check-rotations flags nothing "
                                  f"in ({summary['groups_passing']} of {summary['groups']})"))


def check_rotations(dataset: str | os.PathLike, out: str | os.PathLike, *,
                    scenes: str | os.PathLike | None = None, margin_deg: float = 15.0,
                    write_configs: bool = True, progress: bool = True) -> dict[str, Any]:
    """``hf-real3d check-rotations``: check, write ``OUT`` (atomically) and, for a dataset
    folder, its ``rotation_checks`` and ``rotations_checked`` configs. Returns the summary
    written to ``check.json``."""
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise FileExistsError(f"{out}: exists and is not a folder; give another --out")
    rs = read_rotation_set(dataset, scenes)
    result = check_set(rs, margin_deg=margin_deg, progress=progress)
    summary = {"dataset": str(dataset), "source": rs.source,
               "scenes_from": rs.scenes_from or None, **result.summary()}
    examples = _examples(result, rs)
    summary["examples"] = examples
    with atomic_dir(out) as tmp:
        write_json(tmp / "check.json", summary, indent=2)
        with open(tmp / "flags.jsonl", "w", encoding="utf-8") as f:
            for it in result.items:
                if it.hits:
                    f.write(json.dumps(it.to_dict()) + "\n")
        (tmp / "report.md").write_text("# Rotation checks\n\n" + report_section(summary, examples)
                                       + "\n", encoding="utf-8")
    if write_configs and rs.source == "folder":
        _add_configs(rs.path, result, summary)
        summary["configs"] = [CHECKS_CONFIG, CHECKED_CONFIG]
    return summary

