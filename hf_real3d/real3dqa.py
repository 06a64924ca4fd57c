"""The official Real-3DQA release: reading, validating and turning it into flat rows.

Release files (``de-biased_testset_with_question_type.json``, ``rotation_{0,90,180,270}.json``)
are SQA3D-style ``{"questions": [...]}`` files whose items merge question and annotation
fields. Their quirks, all reported rather than silently fixed:

* ids: ``rotation_0``/``rotation_180`` keep SQA3D ids, ``rotation_90``/``rotation_270`` use
  ``id * 100 + 01 / 03``. Rows are grouped on the **base id** (``question_id`` column);
  the id as written in the file stays in ``source_question_id``.
* one group lacks its 180-degree member (``incomplete_group`` flag);
* quaternions: a viewpoint ``k`` should have ``yaw_0 - k``; ``rotation_180`` keeps
  ``rotation_0``'s quaternions (``quaternion_not_turned``);
* question texts edited between viewpoints (``question_edited``);
* items that keep the original situation word for word but change the answer
  (``situation_unchanged_answer_changed``): self-contradictory unless the question
  itself changed.
"""

from __future__ import annotations

import collections
import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hf_real3d._io import FormatError, read_json
from hf_real3d.geometry import PoseError, wrap_degrees, yaw_from_quaternion
from hf_real3d.scene import check_scene_id
from hf_real3d.sqa3d import question_type

__all__ = [
    "RELEASE_VIEWPOINTS",
    "DEBIASED_FILE",
    "ReleaseData",
    "read_release",
    "resolve_base_ids",
]

RELEASE_VIEWPOINTS = (0, 90, 180, 270)
DEBIASED_FILE = "de-biased_testset_with_question_type.json"
_REQUIRED = ("scene_id", "situation", "question", "question_id", "answers", "rotation",
             "position")


@dataclass
class ReleaseData:
    """Rows of the de-biased set and of the rotation files, plus the validation report."""

    debiased: list[dict[str, Any]]
    rotations: list[dict[str, Any]]
    report: dict[str, Any] = field(default_factory=dict)


def _load_items(path: Path) -> list[dict]:
    data = read_json(path)
    if not isinstance(data, dict) or not isinstance(data.get("questions"), list):
        raise FormatError(f"{path}: expected an object with a 'questions' list")
    items = data["questions"]
    for i, it in enumerate(items):
        if not isinstance(it, dict):
            raise FormatError(f"{path}: questions[{i}] is not an object")
        missing = [k for k in _REQUIRED if k not in it]
        if missing:
            raise FormatError(
                f"{path.name}: question_id {it.get('question_id', '?')} lacks {missing}")
        check_scene_id(it["scene_id"])
    return items


def _row(it: dict, path: Path) -> dict[str, Any]:
    answers = it["answers"]
    if not isinstance(answers, list) or not all(isinstance(a, dict) and "answer" in a
                                                for a in answers):
        raise FormatError(f"{path.name}: question_id {it['question_id']}: answers must be "
                          "a list of {'answer': ...}")
    try:
        yaw = yaw_from_quaternion(it["rotation"], item=f"question_id {it['question_id']}")
    except PoseError as err:
        raise FormatError(f"{path.name}: {err}") from None
    return {
        "source_question_id": int(it["question_id"]),
        "scene_id": it["scene_id"],
        "situation": str(it["situation"]),
        "alternative_situation": [str(s) for s in it.get("alternative_situation", [])],
        "question": str(it["question"]),
        "answers": [str(a["answer"]) for a in answers],
        "position": {k: float(it["position"][k]) for k in "xyz"},
        "rotation": {k: float(it["rotation"][k]) for k in ("_x", "_y", "_z", "_w")},
        "sqa3d_type": question_type(str(it["question"])),
        "_yaw": yaw,
    }


def _same_text(a: str, b: str) -> bool:
    """Equal up to case and white space (the release differs in both)."""
    return " ".join(a.split()).lower() == " ".join(b.split()).lower()


def resolve_base_ids(ids: list[int], base_ids: set[int], file_name: str) -> tuple[list[int], str]:
    """Map a file's ids to base ids: plain, or ``id * 100 + suffix``. Returns the scheme."""
    if all(i in base_ids for i in ids):
        return list(ids), "plain"
    out, suffixes = [], set()
    for i in ids:
        if i in base_ids:
            out.append(i)
        elif i // 100 in base_ids:
            out.append(i // 100)
            suffixes.add(i % 100)
        else:
            raise FormatError(
                f"{file_name}: question_id {i} matches no rotation_0 id, neither plainly nor "
                "as id x 100 + a two-digit viewpoint suffix")
    return out, "x100+" + "/".join(f"{s:02d}" for s in sorted(suffixes))


def read_release(folder: str | os.PathLike) -> ReleaseData:
    """Read and validate the release folder; see the module docstring for the checks."""
    folder = Path(folder)
    rot_paths = {k: folder / f"rotation_{k}.json" for k in RELEASE_VIEWPOINTS}
    missing = [p.name for p in [folder / DEBIASED_FILE, *rot_paths.values()] if not p.is_file()]
    if missing:
        raise FileNotFoundError(f"{folder}: missing release file(s) {missing}")
    report: dict[str, Any] = {"files": {}}

    deb_items = _load_items(folder / DEBIASED_FILE)
    debiased = []
    seen: set[int] = set()
    for it in deb_items:
        r = _row(it, folder / DEBIASED_FILE)
        qid = r["source_question_id"]
        if qid in seen:
            raise FormatError(f"{DEBIASED_FILE}: duplicate question_id {qid}")
        seen.add(qid)
        r["question_id"] = qid
        r["question_type"] = str(it.get("question_type", ""))
        r.pop("_yaw")
        debiased.append(r)
    deb_types = {r["question_id"]: r["question_type"] for r in debiased}
    report["debiased"] = {
        "questions": len(debiased),
        "question_types": dict(collections.Counter(r["question_type"] for r in debiased)
                               .most_common()),
    }

    per_view: dict[int, dict[int, dict]] = {}
    base0: set[int] | None = None
    for k, path in rot_paths.items():
        items = _load_items(path)
        rows = [_row(it, path) for it in items]
        ids = [r["source_question_id"] for r in rows]
        if len(set(ids)) != len(ids):
            dup = next(i for i, c in collections.Counter(ids).items() if c > 1)
            raise FormatError(f"{path.name}: duplicate question_id {dup}")
        if base0 is None:
            base0 = set(ids)
        bases, scheme = resolve_base_ids(ids, base0, path.name)
        for r, b in zip(rows, bases):
            r["question_id"] = b
            r["rotation_deg"] = k
        per_view[k] = {r["question_id"]: r for r in rows}
        report["files"][path.name] = {"items": len(rows), "id_scheme": scheme}

    assert base0 is not None
    all_ids = sorted(set().union(*[set(v) for v in per_view.values()]))
    extra = sorted(set(all_ids) - base0)
    if extra:
        raise FormatError(f"rotation files hold id {extra[0]} that rotation_0.json lacks; "
                          "the rotation files must describe the same questions")
    incomplete = {q: [k for k in RELEASE_VIEWPOINTS if q not in per_view[k]] for q in all_ids}
    incomplete = {q: m for q, m in incomplete.items() if m}
    flags = collections.Counter()
    not_turned = collections.Counter()
    rows_out = []
    for q in all_ids:
        r0 = per_view[0][q]
        for k in RELEASE_VIEWPOINTS:
            r = per_view[k].get(q)
            if r is None:
                continue
            quality = []
            if q in incomplete:
                quality.append("incomplete_group")
            if k:
                turn = wrap_degrees(math.degrees(r0["_yaw"] - r["_yaw"]))
                if abs(wrap_degrees(turn - k)) > 1.0:
                    quality.append("quaternion_not_turned")
                    not_turned[k] += 1
                if r["question"] != r0["question"]:
                    quality.append("question_edited")
                if _same_text(r["situation"], r0["situation"]) and \
                        sorted(r["answers"]) != sorted(r0["answers"]):
                    quality.append("situation_unchanged_answer_changed")
            for fl in quality:
                flags[(k, fl)] += 1
            row = {key: v for key, v in r.items() if key != "_yaw"}
            row["question_type"] = deb_types.get(q, "")
            row["in_debiased"] = q in deb_types
            row["quality"] = quality
            rows_out.append(row)
    report["rotations"] = {
        "groups": len(all_ids),
        "complete_groups": len(all_ids) - len(incomplete),
        "incomplete_groups": {str(q): {"missing_viewpoints": m} for q, m in incomplete.items()},
        "groups_in_debiased": sum(q in deb_types for q in all_ids),
        "quaternion_not_turned": {str(k): not_turned[k] for k in RELEASE_VIEWPOINTS[1:]},
        "flags": {f"rotation_{k}:{fl}": n for (k, fl), n in sorted(flags.items())},
    }
    return ReleaseData(debiased, rows_out, report)


# --- building datasets ------------------------------------------------------------------

CITATION = """@inproceedings{ma2026real3dqa,
  title={Do 3D Large Language Models Really Understand 3D Spatial Relationships?},
  author={Ma, Xianzheng and others},
  booktitle={ICLR},
  year={2026}
}"""
_EXTRA_COLUMNS = {
    "kind": "string", "guessable": "bool", "quality": ["string"], "reasons": ["string"],
    "dependency": "float64", "source_question_id": "int64", "in_debiased": "bool",
}


def _features(*names: str):
    import datasets

    from hf_real3d.hub import question_features

    def feat(spec):
        return datasets.Sequence(datasets.Value(spec[0])) if isinstance(spec, list) \
            else datasets.Value(spec)

    return question_features({n: feat(_EXTRA_COLUMNS[n]) for n in names})


def _fill(rows: list[dict], features) -> list[dict]:
    out = []
    for r in rows:
        row = {}
        for c in features:
            v = r.get(c)
            if v is None:
                v = [] if c in ("alternative_situation", "quality", "reasons") else \
                    ("" if c in ("question_type", "sqa3d_type", "kind", "situation") else v)
            row[c] = v
        out.append(row)
    return out


def import_release(release_dir: str | os.PathLike, out: str | os.PathLike) -> dict[str, Any]:
    """The official release as a dataset folder: configs ``real3dqa`` (default: the
    de-biased set) and ``rotations`` (all viewpoints, grouped on the base id, with a
    ``quality`` column). Returns the validation report."""
    from hf_real3d.hub import ConfigData, write_dataset_folder

    data = read_release(release_dir)
    deb_f = _features("source_question_id", "quality")
    rot_f = _features("source_question_id", "quality", "in_debiased")
    deb_rows = [dict(r, rotation_deg=0, quality=[]) for r in data.debiased]
    rep = data.report
    schemes = ", ".join(f"{k}: {v['id_scheme']}" for k, v in rep["files"].items())
    flags = "\n".join(f"| `{k}` | {v} |" for k, v in rep["rotations"]["flags"].items())
    section = (
        "## What the importer found\n\n"
        f"- {rep['rotations']['groups']} rotation groups, {rep['rotations']['complete_groups']} "
        f"complete; incomplete: {rep['rotations']['incomplete_groups']} (kept, flagged "
        "`incomplete_group`; score VRS with `incomplete=\"drop\"`).\n"
        f"- id schemes: {schemes}; "
        "rows are grouped on the base id (`question_id`), the id in the file is "
        "`source_question_id`.\n"
        f"- quaternions not turned by the viewpoint angle: {rep['rotations']['quaternion_not_turned']}.\n\n"  # noqa: E501
        "| flag | rows |\n|---|---|\n" + flags)
    write_dataset_folder(
        out,
        [ConfigData("real3dqa", {"test": _fill(deb_rows, deb_f)}, deb_f,
                    "the de-biased SQA3D test set with Real-3DQA question types", default=True),
         ConfigData("rotations", {"test": _fill(data.rotations, rot_f)}, rot_f,
                    "each question from 4 viewpoints (0/90/180/270), grouped on question_id")],
        pretty_name="Real-3DQA",
        summary=("Real-3DQA: SQA3D test questions that a text-only model cannot answer, and "
                 "viewpoint-rotated variants scored with the Viewpoint Rotation Score. Imported "
                 "from the official release by hf_real3d; quirks are flagged, not fixed."),
        license="cc-by-sa-4.0", citation=CITATION, extra_sections=[section])
    return rep


def _record_row(rec, **extra) -> dict[str, Any]:
    from hf_real3d.synth.questions import CATEGORY

    meta = rec.extra.get("synth") or {}
    return {
        "question_id": rec.question_id, "scene_id": rec.scene_id, "situation": rec.situation,
        "alternative_situation": list(rec.alternative_situation), "question": rec.question,
        "answers": list(rec.answers), "position": dict(rec.position),
        "rotation": dict(rec.rotation),
        "question_type": CATEGORY.get(meta.get("kind", ""), ""), "sqa3d_type": rec.qtype,
        "rotation_deg": 0, "kind": meta.get("kind", ""), "guessable": meta.get("guessable"),
        **extra,
    }


def build_real3dqa(
    sqa3d_dir: str | os.PathLike,
    scenes_dir: str | os.PathLike,
    out: str | os.PathLike,
    *,
    pairs: list[tuple[str, Any, Any]],
    judges: list[tuple[str, Any]] = (),
    split: str = "test",
    n_viewpoints: int = 4,
    push_to_hub: str | None = None,
    progress: bool = True,
) -> dict[str, Any]:
    """SQA3D-format data + ScanNet scenes + prediction files -> a Real-3DQA dataset folder.

    ``pairs``: (name, full predictions, blind predictions); ``judges``: (name,
    predictions); predictions are paths or tables (question_id, prediction[, log_prob]).
    Configs: ``sqa3d``, ``real3dqa`` (default), ``rotations``, ``filtered_out``, ``scenes``.
    """
    import pandas as pd

    from hf_real3d.evaluation import load_predictions
    from hf_real3d.filtering import filter_questions
    from hf_real3d.hub import ConfigData, push_folder, scene_features, scene_rows
    from hf_real3d.rotation import rotate_records, viewpoint_angles
    from hf_real3d.scene import read_scannet, scannet_paths
    from hf_real3d.sqa3d import read_split

    viewpoint_angles(n_viewpoints)  # fail early on a bad angle
    records = read_split(sqa3d_dir, split)
    scene_ids = sorted({r.scene_id for r in records})
    for sid in scene_ids:  # every referenced scene must exist before anything is written
        if not scannet_paths(scenes_dir, sid)["ply"].is_file():
            raise FileNotFoundError(f"scene {sid!r} is referenced by the questions but absent "
                                    f"from {scenes_dir}")

    def table(p):
        return p if isinstance(p, pd.DataFrame) else load_predictions(p)

    refs = pd.DataFrame({"question_id": [r.question_id for r in records],
                         "answers": [r.answers for r in records]})
    result = filter_questions(refs, [(n, table(f), table(b)) for n, f, b in pairs],
                              [(n, table(j)) for n, j in judges])
    info = result.table.set_index("question_id")
    kept_ids = set(result.kept_ids)
    kept = [r for r in records if r.question_id in kept_ids]
    scenes = {sid: read_scannet(scenes_dir, sid) for sid in scene_ids}
    rot = rotate_records(kept, scenes, n_viewpoints=n_viewpoints, progress=progress)
    by_id = {r.question_id: r for r in records}

    base_f = _features("kind", "guessable")
    real_f = _features("kind", "guessable", "dependency")
    rot_f = _features("kind", "guessable")
    out_f = _features("kind", "guessable", "reasons", "dependency")
    dep = info.dependency.to_dict()
    sqa_rows = [_record_row(r) for r in records]
    real_rows = [_record_row(r, dependency=_nan_none(dep[r.question_id])) for r in kept]
    rot_rows = []
    for row in rot.rows:
        base = _record_row(by_id[row["question_id"]])
        base.update({k: row[k] for k in ("situation", "answers", "position", "rotation",
                                         "rotation_deg")})
        base["alternative_situation"] = [] if row["rotation_deg"] else base["alternative_situation"]
        rot_rows.append(base)
    removed_rows = [_record_row(by_id[q], reasons=list(info.reasons[q]),
                                dependency=_nan_none(dep[q]))
                    for q in result.removed.question_id]
    stats_md = result.stats_markdown()
    rstats = rot.stats()
    section = ("## How it was built\n\n"
               f"Filtering (a question is removed when a (full, blind) pair answers it both "
               f"with and without 3D, or a text-only judge answers it):\n\n{stats_md}\n\n"
               f"Rotation ({n_viewpoints} viewpoints, answers recomputed from scene geometry): "
               f"{rstats['kept']} questions kept, {rstats['excluded']} excluded; reasons: "
               f"{rstats['reasons']}.")
    from hf_real3d.hub import write_dataset_folder

    write_dataset_folder(
        out,
        [ConfigData("sqa3d", {split: _fill(sqa_rows, base_f)}, base_f, "all input questions"),
         ConfigData("real3dqa", {split: _fill(real_rows, real_f)}, real_f,
                    "questions no blind model or judge answers", default=True),
         ConfigData("rotations", {split: _fill(rot_rows, rot_f)}, rot_f,
                    f"kept questions from {n_viewpoints} viewpoints, grouped on question_id"),
         ConfigData("filtered_out", {split: _fill(removed_rows, out_f)}, out_f,
                    "removed questions with the filters that removed them"),
         ConfigData("scenes", {split: scene_rows(scenes.values())}, scene_features(),
                    "objects and Nx6 point clouds (xyz + rgb in [0, 1])", rows_per_shard=20)],
        pretty_name="Real-3DQA (built with hf_real3d)",
        summary=("De-biased, viewpoint-rotated situated 3D QA built from SQA3D-format data by "
                 "blind-vs-full filtering and geometry-verified rotation."),
        license="cc-by-sa-4.0", citation=CITATION, extra_sections=[section])
    summary = {"questions": len(records), "kept": len(kept), "removed": len(removed_rows),
               "filter_stats": result.stats(), "rotation": rstats,
               "rotation_rows": len(rot_rows)}
    if push_to_hub:
        summary["url"] = push_folder(out, push_to_hub)
    return summary


def _nan_none(v: float) -> float | None:
    return None if v is None or v != v else float(v)
