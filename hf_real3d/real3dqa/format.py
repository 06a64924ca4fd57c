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

import numpy as np

from hf_real3d._io import FormatError, check_link, read_json, write_json
from hf_real3d.geometry import PoseError, wrap_degrees, yaws_from_quaternions
from hf_real3d.schema import record_row
from hf_real3d.spatial import CATEGORY
from hf_real3d.sqa3d import SQA3D_BIBTEX, check_item, question_type

__all__ = ["CITATION", "CORRECTED_MARK", "REAL3DQA_BIBTEX", "RELEASE_VIEWPOINTS", "question_row",
           "DEBIASED_FILE", "RELEASE_HEADERS_FILE", "ReleaseData", "file_question_id",
           "release_item",
           "write_release", "release_headers", "plain_text", "read_release", "read_rotation_files",
           "rotation_files", "resolve_base_ids", "same_text", "suffixed_ids", "debiased_items",
           "output_headers"]

# the paper's entry: every card of a benchmark it defines cites it first
REAL3DQA_BIBTEX = """@inproceedings{ma2026real3dqa,
  title={Do 3D Large Language Models Really Understand 3D Spatial Relationships?},
  author={Ma, Xianzheng and others},
  booktitle={ICLR},
  year={2026}
}
"""
CITATION = REAL3DQA_BIBTEX + SQA3D_BIBTEX + """
@inproceedings{dai2017scannet,
  title={ScanNet: Richly-annotated 3D Reconstructions of Indoor Scenes},
  author={Dai, Angela and Chang, Angel X. and Savva, Manolis and Halber, Maciej and
          Funkhouser, Thomas and Nie{\\ss}ner, Matthias},
  booktitle={CVPR},
  year={2017}
}"""

RELEASE_VIEWPOINTS = (0, 90, 180, 270)
#: the key a corrected set's file headers carry in ``info`` (``hf-real3d correct-rotations``:
#: what it was derived from), which ``evaluate`` reads to say the set is not the paper's
CORRECTED_MARK = "hf_real3d_corrected"
DEBIASED_FILE = "de-biased_testset_with_question_type.json"
#: what import-real3dqa keeps of the release files besides their questions (info, license...)
RELEASE_HEADERS_FILE = "release_headers.json"
_REQUIRED = ("scene_id", "situation", "question", "question_id", "answers", "rotation",
             "position")


@dataclass
class ReleaseData:
    """Rows of the de-biased set and of the rotation files, plus the validation report."""

    debiased: list[dict[str, Any]]
    rotations: list[dict[str, Any]]
    report: dict[str, Any] = field(default_factory=dict)


def _load_items(path: Path, required: tuple[str, ...] = _REQUIRED,
                licenses: dict[str, Any] | None = None) -> list[dict]:
    """A release file's items, each checked by the SQA3D validator
    (:func:`hf_real3d.sqa3d.check_item`)."""
    data = read_json(path)
    if not isinstance(data, dict) or not isinstance(data.get("questions"), list):
        raise FormatError(f"{path}: expected an object with a 'questions' list")
    if licenses is not None:
        licenses[path.name] = data.get("license")
    items = data["questions"]
    for i, it in enumerate(items):
        check_item(it, path, i, required, what="question")
    return items


def _row(it: dict) -> dict[str, Any]:
    answers = it["answers"]
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
    }


def _rows(items: list[dict], path: Path) -> tuple[list[dict[str, Any]], np.ndarray]:
    """Flat rows of one file and the yaw of each (checked in one vectorised pass)."""
    rows = [_row(it) for it in items]
    quats = np.array([[r["rotation"][k] for k in ("_x", "_y", "_z", "_w")] for r in rows],
                     dtype=float).reshape(-1, 4)
    try:
        yaws = yaws_from_quaternions(quats, [f"question_id {r['source_question_id']}"
                                             for r in rows])
    except PoseError as err:
        raise FormatError(f"{path.name}: {err}") from None
    return rows, yaws


def plain_text(text: str) -> str:
    """``text`` lower-cased with its white space collapsed."""
    return " ".join(str(text).split()).lower()


def same_text(a: str, b: str) -> bool:
    """Equal up to case and white space (the release differs in both)."""
    return plain_text(a) == plain_text(b)


# the rotated files' id scheme: id x 100 + a two-digit viewpoint suffix
SUFFIX_DEG = {1: 90, 2: 180, 3: 270}


def suffixed_ids(qids: np.ndarray, base_ids: np.ndarray) -> tuple[np.ndarray, np.ndarray,
                                                                   np.ndarray]:
    """For integer ids: (mask, base id, suffix), the mask marking ids that are not base ids
    themselves but ``base * 100 + suffix`` of one (the release's ``rotation_90`` /
    ``rotation_270`` ids). The one place this rule lives."""
    qids = np.asarray(qids, dtype=np.int64)
    base_ids = np.asarray(base_ids, dtype=np.int64)
    head, tail = qids // 100, qids % 100
    return (~np.isin(qids, base_ids)) & np.isin(head, base_ids), head, tail


def resolve_base_ids(ids: list[int], base_ids: set[int], file_name: str) -> tuple[list[int], str]:
    """Map a file's ids to base ids: plain, or ``id * 100 + suffix``. Returns the scheme."""
    if all(i in base_ids for i in ids):
        return list(ids), "plain"
    arr = np.asarray(ids, dtype=np.int64)
    sfx, head, tail = suffixed_ids(arr, np.fromiter(base_ids, np.int64, len(base_ids)))
    plain = np.isin(arr, list(base_ids))
    if not (sfx | plain).all():
        bad = int(arr[~(sfx | plain)][0])
        raise FormatError(
            f"{file_name}: question_id {bad} matches no rotation_0 id, neither plainly nor "
            "as id x 100 + a two-digit viewpoint suffix")
    out = np.where(sfx, head, arr).tolist()
    return out, "x100+" + "/".join(f"{s:02d}" for s in sorted(set(tail[sfx].tolist())))


def _check_suffixes(ids: list[int], bases: list[int], k: int, file_name: str) -> None:
    """A suffixed id's two digits name its viewpoint (01: 90, 02: 180, 03: 270): a file of
    viewpoint k holding another viewpoint's items is refused."""
    for i, b in zip(ids, bases):
        if i == b:
            continue
        deg = SUFFIX_DEG.get(i - b * 100)
        if deg is not None and deg != k:
            raise FormatError(
                f"{file_name}: question_id {i} ends in {i - b * 100:02d}, the suffix of "
                f"viewpoint {deg}, but the file holds viewpoint {k}; put each viewpoint's items "
                f"in its own rotation_{{k}}.json (this one looks like rotation_{deg}.json)")


VIEW_SUFFIX = {90: 1, 270: 3}  # the release's ids: 0 and 180 keep the base id


def file_question_id(qid: Any, deg: int) -> int:
    """The id a viewpoint's item carries in the release's files: the base id at 0 and 180
    degrees, ``id * 100 + 01 / 03`` at 90 / 270 (the inverse of :func:`resolve_base_ids`)."""
    return int(qid) * 100 + VIEW_SUFFIX[deg] if deg in VIEW_SUFFIX else int(qid)


def release_item(row: dict[str, Any], deg: int, *, situation: str | None = None,
                 answers: list[str] | None = None,
                 question_type: str | None = None) -> dict[str, Any]:
    """A row (one question at one viewpoint, ``question_id`` its base id) as an item of the
    release's files, in their field order; ``situation`` / ``answers`` replace the row's (a
    correction), ``question_type`` adds the de-biased file's category."""
    answers = list(row["answers"]) if answers is None else list(answers)
    item = {"scene_id": row["scene_id"],
            "situation": row["situation"] if situation is None else situation,
            "alternative_situation": [str(s) for s in row.get("alternative_situation") or []],
            "question": row["question"], "question_id": file_question_id(row["question_id"], deg),
            "answers": [{"answer": a, "answer_confidence": "yes", "answer_id": i + 1}
                        for i, a in enumerate(answers)],
            "rotation": {k: float(row["rotation"][k]) for k in ("_x", "_y", "_z", "_w")},
            "position": {k: float(row["position"][k]) for k in "xyz"}}
    if question_type is not None:
        item["question_type"] = str(question_type)
    return item


def write_release(folder: str | os.PathLike, rotations: dict[int, list[dict[str, Any]]],
                  debiased: list[dict[str, Any]], headers: dict[str, dict[str, Any]]) -> None:
    """Write a release folder's files (into a folder the caller commits atomically): each
    ``rotation_{k}.json`` and the de-biased file, each with its own header (``info``,
    ``license``, ...: ``headers`` by file name) above its ``questions``."""
    folder = Path(folder)
    for k, items in sorted(rotations.items()):
        name = f"rotation_{k}.json"
        write_json(folder / name, {**headers.get(name, {}), "questions": items}, indent=2)
    write_json(folder / DEBIASED_FILE, {**headers.get(DEBIASED_FILE, {}), "questions": debiased},
               indent=2)


def release_headers(folder: str | os.PathLike) -> dict[str, dict[str, Any]]:
    """What each of a release folder's files holds besides its ``questions`` (``info``,
    ``license``, ``data_type``, ...), by file name."""
    folder = Path(folder)
    out = {}
    for path in [*rotation_files(folder).values(), folder / DEBIASED_FILE]:
        if path.is_file():
            data = read_json(path)
            if isinstance(data, dict):
                out[path.name] = {k: v for k, v in data.items() if k != "questions"}
    return out


def rotation_files(folder: str | os.PathLike) -> dict[int, Path]:
    """The ``rotation_{k}.json`` files of a folder by viewpoint ``k`` (degrees)."""
    found = {}
    for path in Path(folder).glob("rotation_*.json"):
        tail = path.stem.removeprefix("rotation_")
        if tail.isdigit():
            found[int(tail)] = path
    return dict(sorted(found.items()))


def read_rotation_files(folder: str | os.PathLike, *,
                        debiased_types: dict[int, str] | None = None,
                        licenses: dict[str, Any] | None = None,
                        ) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Rows of a folder's ``rotation_{k}.json`` files (SQA3D-style items, the release's
    format; ``rotation_0.json`` required), grouped on the base id, each with its ``quality``
    flags; and the ``files`` / ``rotations`` parts of the validation report.

    Every viewpoint of a group must put the agent in the same scene at the same position as
    viewpoint 0 (a rotation turns the agent in place): an item that does not is an error
    naming its file and id."""
    folder = Path(folder)
    rot_paths = rotation_files(folder)
    if 0 not in rot_paths:
        raise FileNotFoundError(f"{folder}: no rotation_0.json (the unturned viewpoint every "
                                "rotation set needs)")
    debiased_types = debiased_types or {}
    report: dict[str, Any] = {"files": {}}
    per_view: dict[int, dict[int, dict]] = {}
    yaw_of: dict[int, dict[int, float]] = {}
    base0: set[int] | None = None
    for k, path in rot_paths.items():
        items = _load_items(path, licenses=licenses)
        rows, yaws = _rows(items, path)
        ids = [r["source_question_id"] for r in rows]
        if len(set(ids)) != len(ids):
            dup = next(i for i, c in collections.Counter(ids).items() if c > 1)
            raise FormatError(f"{path.name}: duplicate question_id {dup}")
        if base0 is None:
            base0 = set(ids)
        bases, scheme = resolve_base_ids(ids, base0, path.name)
        _check_suffixes(ids, bases, k, path.name)
        for r, b in zip(rows, bases):
            r["question_id"] = b
            r["rotation_deg"] = k
        per_view[k] = {r["question_id"]: r for r in rows}
        yaw_of[k] = dict(zip(bases, yaws.tolist()))
        report["files"][path.name] = {"items": len(rows), "id_scheme": scheme}

    assert base0 is not None
    views = tuple(rot_paths)
    all_ids = sorted(set().union(*[set(v) for v in per_view.values()]))
    incomplete = {q: [k for k in views if q not in per_view[k]] for q in all_ids}
    incomplete = {q: m for q, m in incomplete.items() if m}
    flags = collections.Counter()
    rows_out = []
    for q in all_ids:
        r0 = per_view[0][q]
        for k in views:
            r = per_view[k].get(q)
            if r is None:
                continue
            _check_in_place(r, r0, rot_paths[k].name)
            quality = ["incomplete_group"] if q in incomplete else []
            if k:
                quality += _turn_flags(r, r0, k, yaw_of[0][q] - yaw_of[k][q])
            for fl in quality:
                flags[(k, fl)] += 1
            row = dict(r)
            row["question_type"] = debiased_types.get(q, "")
            row["in_debiased"] = q in debiased_types
            row["quality"] = quality
            rows_out.append(row)
    report["rotations"] = {
        "groups": len(all_ids),
        "complete_groups": len(all_ids) - len(incomplete),
        "incomplete_groups": {str(q): {"missing_viewpoints": m} for q, m in incomplete.items()},
        "groups_in_debiased": sum(q in debiased_types for q in all_ids),
        "quaternion_not_turned": {str(k): flags[(k, "quaternion_not_turned")]
                                  for k in views[1:]},
        "flags": {f"rotation_{k}:{fl}": n for (k, fl), n in sorted(flags.items())},
    }
    return rows_out, report


def _turn_flags(r: dict[str, Any], r0: dict[str, Any], k: int, turn: float) -> list[str]:
    """The quality flags of viewpoint ``k``'s item against viewpoint 0's (``turn``: the
    yaw difference, radians)."""
    out = []
    if abs(wrap_degrees(wrap_degrees(math.degrees(turn)) - k)) > 1.0:
        out.append("quaternion_not_turned")
    if r["question"] != r0["question"]:
        out.append("question_edited")
    if same_text(r["situation"], r0["situation"]) and \
            sorted(r["answers"]) != sorted(r0["answers"]):
        out.append("situation_unchanged_answer_changed")
    return out


def _check_in_place(r: dict[str, Any], r0: dict[str, Any], file_name: str) -> None:
    """A turned viewpoint keeps viewpoint 0's scene and position."""
    p, p0 = r["position"], r0["position"]
    if r["scene_id"] == r0["scene_id"] and all(abs(p[c] - p0[c]) <= 1e-3 for c in "xyz"):
        return
    raise FormatError(
        f"{file_name}: question_id {r['source_question_id']} puts the agent in "
        f"{r['scene_id']} at ({p['x']:.3f}, {p['y']:.3f}) but its viewpoint 0 is in "
        f"{r0['scene_id']} at ({p0['x']:.3f}, {p0['y']:.3f}); the viewpoints of a rotation "
        "group turn the agent in place: fix the item's scene_id/position or drop it")


def read_release(folder: str | os.PathLike) -> ReleaseData:
    """Read and validate the release folder; see the module docstring for the checks."""
    folder = Path(folder)
    rot_paths = {k: folder / f"rotation_{k}.json" for k in RELEASE_VIEWPOINTS}
    for p in [folder / DEBIASED_FILE, *rot_paths.values()]:
        check_link(p)
    missing = [p.name for p in [folder / DEBIASED_FILE, *rot_paths.values()] if not p.is_file()]
    if missing:
        raise FileNotFoundError(f"{folder}: missing release file(s) {missing}")
    licenses: dict[str, Any] = {}
    report: dict[str, Any] = {"licenses": licenses}  # each file's own `license` field
    deb_items = _load_items(folder / DEBIASED_FILE, (*_REQUIRED, "question_type"), licenses)
    debiased = []
    seen: set[int] = set()
    deb_rows, _ = _rows(deb_items, folder / DEBIASED_FILE)
    for it, r in zip(deb_items, deb_rows):
        qid = r["source_question_id"]
        if qid in seen:
            raise FormatError(f"{DEBIASED_FILE}: duplicate question_id {qid}")
        seen.add(qid)
        r["question_id"] = qid
        r["question_type"] = str(it.get("question_type", ""))
        debiased.append(r)
    deb_types = {r["question_id"]: r["question_type"] for r in debiased}
    report["debiased"] = {
        "questions": len(debiased),
        "question_types": dict(collections.Counter(r["question_type"] for r in debiased)
                               .most_common()),
    }
    extra = sorted(int(k.removeprefix("rotation_")) for k in
                   (p.stem for p in rotation_files(folder).values())
                   if int(k.removeprefix("rotation_")) not in RELEASE_VIEWPOINTS)
    if extra:
        raise FormatError(f"{folder}: rotation files for viewpoints {extra} beside the "
                          f"release's {list(RELEASE_VIEWPOINTS)}; move them out")
    rows_out, rot_report = read_rotation_files(folder, debiased_types=deb_types,
                                               licenses=licenses)
    report["files"] = rot_report["files"]
    report["rotations"] = rot_report["rotations"]
    return ReleaseData(debiased, rows_out, report)


def question_row(rec, **extra) -> dict[str, Any]:
    """A Real-3DQA question row of an SQA3D record: :func:`hf_real3d.schema.record_row`
    with the question's category (a synthetic record's kind, read through
    :data:`hf_real3d.spatial.CATEGORY`; empty for a real record)."""
    kind = (rec.extra.get("synth") or {}).get("kind", "")
    return record_row(rec, question_type=CATEGORY.get(kind, ""), **extra)


_LICENSE_URLS = {"cc-by-4.0": "http://creativecommons.org/licenses/by/4.0/",
                 "cc-by-sa-4.0": "http://creativecommons.org/licenses/by-sa/4.0/"}


def output_headers(rs: Any, dataset: Path, made: str) -> tuple[dict[str, dict[str, Any]], str]:
    """Each file's header of a release written from the rotation set ``rs`` read from
    ``dataset`` (the release's own headers, or what ``import-real3dqa`` kept of them; ``made``:
    how, for a set that has none), and the license it states."""
    if rs.source in ("release", "files"):
        heads = release_headers(dataset)
    elif (dataset / RELEASE_HEADERS_FILE).is_file():
        heads = read_json(dataset / RELEASE_HEADERS_FILE)
        if not isinstance(heads, dict) or not all(isinstance(v, dict) for v in heads.values()):
            raise FormatError(f"{dataset / RELEASE_HEADERS_FILE}: not the file names and "
                              "headers import-real3dqa writes; import the release again")
    else:
        heads = {}
    if rs.source == "folder":
        from hf_real3d.hub import card_header  # dataset folders only: datasets

        lic = str(card_header(dataset)[0].get("license") or "other")
    else:
        lic = "other"
    default = {"info": {"description": f"Real-3DQA-format rotations of {dataset.name}, {made}",
                        "contributor": "hf_real3d"},
               "license": {"name": lic, "url": _LICENSE_URLS.get(lic, "")}}
    names = [f"rotation_{k}.json" for k in RELEASE_VIEWPOINTS] + [DEBIASED_FILE]
    out = {n: heads.get(n) or heads.get("rotation_0.json") or default for n in names}
    said = out["rotation_0.json"].get("license")
    return out, (said.get("name") if isinstance(said, dict) else str(said))


def debiased_items(rs: Any, dataset: Path, groups: dict[Any, dict[int, dict]]
                   ) -> tuple[list[dict[str, Any]], str]:
    """The whole de-biased set of the rotation set ``rs`` read from ``dataset`` as release
    items (the release's file, a dataset folder's ``real3dqa`` config, else viewpoint 0 of
    ``groups``), and where it came from."""
    if rs.source == "release":
        rows = read_release(dataset).debiased
        return ([release_item(r, 0, question_type=r.get("question_type") or "")
                 for r in rows], f"{DEBIASED_FILE} of {dataset}")
    if rs.source == "folder":
        from hf_real3d.hub import card_configs, load_frame  # datasets only for folders

        if "real3dqa" in card_configs(dataset):
            df = load_frame(dataset, "real3dqa")
            items = []
            for r in df.to_dict("records"):
                r["answers"] = list(r["answers"])
                r["alternative_situation"] = list(r.get("alternative_situation")
                                                  if r.get("alternative_situation") is not None
                                                  else [])
                items.append(release_item(r, 0, question_type=r.get("question_type") or ""))
            return items, f"the real3dqa config of {dataset}"
    rows0 = [g[0] for _, g in sorted(groups.items(), key=lambda x: str(x[0])) if 0 in g]
    return ([release_item(r, 0, question_type=str(r.get("question_type") or ""))
             for r in rows0],
            f"viewpoint 0 of every rotation group ({dataset} holds no de-biased set)")
