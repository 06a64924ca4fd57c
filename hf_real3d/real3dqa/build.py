"""Building Real-3DQA dataset folders: from the official release, or from SQA3D-format
data + ScanNet scenes + prediction files (filter, then rotate)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pandas as pd

from hf_real3d._io import FormatError, read_json
from hf_real3d.hub import ConfigData, push_folder, write_dataset_folder
from hf_real3d.real3dqa.checker.evidence import TEXTS_CONFIG, sqa3d_beside, sqa3d_texts
from hf_real3d.real3dqa.filtering import FilterResult, filter_questions
from hf_real3d.real3dqa.format import (
    CITATION,
    RELEASE_HEADERS_FILE,
    question_row,
    read_release,
    release_headers,
)
from hf_real3d.real3dqa.judge import judge_card_lines, refuse_failed_judges
from hf_real3d.real3dqa.predictions import load_predictions
from hf_real3d.real3dqa.rotation import RotationResult, rotate_records, viewpoint_angles
from hf_real3d.real3dqa.runs import BuildRun, ImportRun
from hf_real3d.scene import read_scannet, scannet_paths
from hf_real3d.schema import fill_rows, question_features, scene_features, scene_rows
from hf_real3d.sqa3d import read_split
from hf_real3d.tables import markdown_table

__all__ = ["import_release", "build_real3dqa"]

_CC = {"creativecommons.org/licenses/by/4.0": "cc-by-4.0",
       "creativecommons.org/licenses/by-sa/4.0": "cc-by-sa-4.0"}


def release_license(licenses: dict[str, Any]) -> tuple[str, str]:
    """(card license id, note) from the release files' own ``license`` fields."""
    seen = {f"{v.get('name')} <{v.get('url')}>" if isinstance(v, dict) else json.dumps(v)
            for v in licenses.values()}
    ids = {next((i for u, i in _CC.items() if u in str(v.get("url", ""))), "other")
           if isinstance(v, dict) else "other" for v in licenses.values()}
    lic = ids.pop() if len(ids) == 1 else "other"
    said = "; ".join(sorted(seen))
    note = (f"The release files state their own license in their `license` field ({said}); "
            f"this card declares `{lic}` accordingly. The repository that distributes the "
            "files is marked CC BY-SA 4.0. The SQA3D questions are Apache-2.0 (SQA3D "
            "repository); the ScanNet scenes they refer to are under the ScanNet Terms of Use "
            "and are not included. Source: the Real-3DQA repository (Ma et al., ICLR 2026).")
    return lic, note
def _sqa3d_config(release_dir: str | os.PathLike, sqa3d: str | os.PathLike | None,
                  scene_ids: set[str]) -> tuple[list[ConfigData], str | None]:
    """The ``sqa3d`` config of an import (SQA3D's test questions of the release's scenes, from
    ``sqa3d`` or an ``sqa3d`` folder beside the release: the texts ``check-rotations`` reads as
    evidence, so that the import is checked as the release is), and where they came from."""
    where = Path(sqa3d) if sqa3d is not None else sqa3d_beside(release_dir)
    if where is None:
        return [], None
    recs = [r for r in sqa3d_texts(where) if r.scene_id in scene_ids]
    base_f = question_features()
    return [ConfigData(TEXTS_CONFIG, {"test": fill_rows([question_row(r) for r in recs],
                                                         base_f)},
                       base_f, "SQA3D's test questions of the release's scenes (Apache-2.0, "
                       "from the SQA3D repository): what hf-real3d check-rotations reads as "
                       "evidence at each pose")], str(where)


def import_release(release_dir: str | os.PathLike, out: str | os.PathLike, *,
                   push_to_hub: str | None = None,
                   sqa3d: str | os.PathLike | None = None) -> ImportRun:
    """The official release as a dataset folder: configs ``real3dqa`` (default: the
    de-biased set), ``rotations`` (all viewpoints, grouped on the base id, with a
    ``quality`` column) and, with SQA3D's test files (``sqa3d``, or an ``sqa3d`` folder beside
    the release), ``sqa3d``: their questions of the release's scenes, so that checking the
    import gives the release's verdicts. Returns the validation report, where SQA3D's texts
    came from (``sqa3d``, or None) and the URL when pushed."""
    data = read_release(release_dir)
    texts, rep_sqa3d = _sqa3d_config(release_dir, sqa3d,
                                     {r["scene_id"] for r in data.rotations})
    lic, note = release_license(data.report["licenses"])
    deb_f = question_features("source_question_id", "quality")
    rot_f = question_features("source_question_id", "quality", "in_debiased", "source")
    deb_rows = [dict(r, rotation_deg=0, quality=[]) for r in data.debiased]
    rep = data.report
    review, item_sources = _review_section(release_dir)
    source = "reviewed" if review else "release"
    schemes = ", ".join(f"{k}: {v['id_scheme']}" for k, v in rep["files"].items())
    flags = markdown_table(["flag", "rows"], [[f"`{k}`", v]
                                              for k, v in rep["rotations"]["flags"].items()])
    section = (
        "## What the importer found\n\n"
        f"- {rep['rotations']['groups']} rotation groups, {rep['rotations']['complete_groups']} "
        f"complete; incomplete: {rep['rotations']['incomplete_groups']} (kept, flagged "
        "`incomplete_group`; score VRS with `incomplete=\"drop\"`).\n"
        f"- id schemes: {schemes}; "
        "rows are grouped on the base id (`question_id`), the id in the file is "
        "`source_question_id`.\n"
        f"- quaternions not turned by the viewpoint angle: {rep['rotations']['quaternion_not_turned']}.\n\n"  # noqa: E501
        + flags)
    write_dataset_folder(
        out,
        [ConfigData("real3dqa", {"test": fill_rows(deb_rows, deb_f)}, deb_f,
                    "the de-biased SQA3D test set with Real-3DQA question types", default=True),
         ConfigData("rotations", {"test": fill_rows([
             dict(r, source=item_sources.get((r["question_id"], r["rotation_deg"]), source))
             for r in data.rotations], rot_f)}, rot_f,
                    "each question from 4 viewpoints (0/90/180/270), grouped on question_id"),
         *texts],
        pretty_name="Real-3DQA" + (" (reviewed rotations)" if review else ""),
        summary=("Real-3DQA: SQA3D test questions that a text-only model cannot answer, and "
                 "viewpoint-rotated variants scored with the Viewpoint Rotation Score. "
                 + ("Rotations reviewed with hf_real3d (see Review below), read in the "
                    "release's format; not the official release." if review else
                    "Imported from the official release by hf_real3d; quirks are flagged, "
                    "not fixed.")),
        license=lic, license_note=note, citation=CITATION,
        extra_sections=[section] + ([review] if review else []),
        extra_json={RELEASE_HEADERS_FILE: release_headers(release_dir)})
    return ImportRun(rep, push_folder(out, push_to_hub) if push_to_hub else None, rep_sqa3d)


def _review_section(release_dir: str | os.PathLike) -> tuple[str, dict[tuple[int, int], str]]:
    """The card section of a release exported by ``hf-real3d export-rotations`` (its
    ``review.json``): the review's figures with their n beside the paper's, and how many
    items carry repairs no one reviewed; and each item's ``source`` where it is not
    ``reviewed``. Empty for other releases."""
    path = Path(release_dir) / "review.json"
    if not path.is_file():
        return "", {}
    r = read_json(path)
    try:
        st, paper = r["stats"], r["stats"]["paper"]
        if "kappa" in st and isinstance(st["kappa"], dict):
            k, c = st["kappa"], st["self_consistency"]
            kappa, ci, n_k, pairs = k["kappa"], k.get("ci"), k["items"], k["pairs"]
            consist, n_c = c["value"], c["repeats"]
        else:  # an export written before pooled figures
            kappa, ci, n_k, pairs = st["kappa_mean"], None, "?", len(st.get("pairs", {}))
            consist, n_c = st["self_consistency_mean"], "?"
        interval = f" (95% CI {ci[0]:.1f} to {ci[1]:.1f})" if ci else ""
        rows = [[f"Cohen's kappa (pooled over {pairs} pair(s) of annotators, each weighted by "
                 "the items both judged)", "n/a" if kappa is None else f"{kappa:.1f}%{interval}",
                 f"n = {n_k} item pairs (an item judged by both annotators of a pair)",
                 f"{paper['kappa']:g}%"],
                ["self-consistency (items shown twice, unannounced)",
                 "n/a" if consist is None else f"{consist:.1f}%", f"n = {n_c} items",
                 f"{paper['self_consistency']:g}%"]]
        sources = {(int(q), int(k)): str(s) for q, k, s in r.get("item_sources", [])}
        repaired = int(r.get("repaired", 0))
        lines = ["## Review", "",
                 f"Rotations reviewed by {len(st['annotators'])} annotator(s) with hf_real3d "
                 f"(`hf-real3d explore --review`); {r['exported']} of {r['groups']} groups kept "
                 f"({r['rule']}; items: {r['items']}).", "",
                 markdown_table(["figure", "this review", "n", "the paper's expert review"],
                                rows)]
        if repaired:
            lines += ["", f"**{repaired} turned items carry repairs proposed by "
                      "`hf-real3d check-rotations` and applied without review** (`source` = "
                      "`repaired`). Scores on this dataset are not the paper's Real-3DQA "
                      "figures and must not be reported as such."]
        return "\n".join(lines), sources
    except (KeyError, TypeError, ValueError) as err:
        raise FormatError(f"{path}: not the review.json that hf-real3d export-rotations writes "
                          f"(missing or bad {err}); remove it or export again") from None


def build_real3dqa(
    sqa3d_dir: str | os.PathLike,
    scenes_dir: str | os.PathLike,
    out: str | os.PathLike,
    *,
    pairs: list[tuple[str, Any, Any]],
    judges: list[tuple[str, Any]] = (),
    split: str = "test",
    n_viewpoints: int = 4,
    license: str = "other",
    progress: bool = True,
    allow_judge_failures: bool = False,
) -> BuildRun:
    """SQA3D-format data + ScanNet scenes + prediction files -> a Real-3DQA dataset folder
    (publish it with :func:`hf_real3d.hub.push_folder`, as ``--push_to_hub`` does).

    ``license``: the card's license identifier, which depends on the data you build from
    (default ``other``: SQA3D is Apache-2.0, ScanNet scenes follow the ScanNet Terms of Use).

    ``pairs``: (name, full predictions, blind predictions); ``judges``: (name,
    predictions); predictions are paths or tables (question_id, prediction[, log_prob]).
    Configs: ``sqa3d``, ``real3dqa`` (default), ``rotations``, ``filtered_out``, ``scenes``;
    the question configs keep a synthetic question's ``semantics``, so that ``rotate`` turns
    from geometry what this build turned. A judge file (``hf-real3d judge``) in which more than
    a tenth of the questions failed is refused unless ``allow_judge_failures``.

    The steps: check the inputs (viewpoints, judges, every referenced scene), filter, read
    the kept questions' scenes and rotate them, write the configs and the card.
    """
    viewpoint_angles(n_viewpoints)  # fail early on a bad angle
    refuse_failed_judges(judges, allow=allow_judge_failures)
    records = read_split(sqa3d_dir, split)
    scene_ids = sorted({r.scene_id for r in records})
    _check_scenes(scene_ids, scenes_dir)
    result = _filtered(records, pairs, judges)
    kept_ids = set(result.kept_ids)
    kept = [r for r in records if r.question_id in kept_ids]
    scenes = {sid: read_scannet(scenes_dir, sid) for sid in scene_ids}
    rot = rotate_records(kept, scenes, n_viewpoints=n_viewpoints, progress=progress)
    rstats = rot.stats()
    configs = _question_configs(records, kept, result, rot, split, n_viewpoints)
    configs.append(ConfigData("scenes", {split: scene_rows(scenes.values())}, scene_features(),
                              "objects and Nx6 point clouds (xyz + rgb in [0, 1])",
                              rows_per_shard=20))
    write_dataset_folder(
        out, configs,
        pretty_name="Real-3DQA (built with hf_real3d)",
        summary=("De-biased, viewpoint-rotated situated 3D QA built from SQA3D-format data by "
                 "blind-vs-full filtering and geometry-verified rotation."),
        license=license, citation=CITATION,
        extra_sections=[_how_it_was_built(result, judges, rstats, n_viewpoints)],
        license_note=("Built by the user with hf_real3d from SQA3D-format questions (SQA3D "
                      "itself is Apache-2.0) and ScanNet-format scenes (the ScanNet Terms of "
                      "Use apply to real ScanNet scans); set the license with --license."))
    return BuildRun(len(records), len(kept), len(result.removed), result.stats(), rstats,
                    len(rot.rows))


def _check_scenes(scene_ids: list[str], scenes_dir: str | os.PathLike) -> None:
    """Every referenced scene must exist before anything is read or written."""
    for sid in scene_ids:
        if not scannet_paths(scenes_dir, sid)["ply"].is_file():
            raise FileNotFoundError(f"scene {sid!r} is referenced by the questions but absent "
                                    f"from {scenes_dir}")


def _filtered(records: list, pairs: list[tuple[str, Any, Any]],
              judges: list[tuple[str, Any]]) -> FilterResult:
    """The filter's verdict on ``records``: which a (full, blind) pair or a judge answers."""

    def table(p):
        return p if isinstance(p, pd.DataFrame) else load_predictions(p)

    refs = pd.DataFrame({"question_id": [r.question_id for r in records],
                         "answers": [r.answers for r in records]})
    return filter_questions(refs, [(n, table(f), table(b)) for n, f, b in pairs],
                            [(n, table(j)) for n, j in judges])


def _question_configs(records: list, kept: list, result: FilterResult, rot: RotationResult,
                      split: str, n_viewpoints: int) -> list[ConfigData]:
    """The configs ``sqa3d`` (every question), ``real3dqa`` (kept), ``rotations`` (kept,
    turned from geometry) and ``filtered_out`` (removed, with the filters that removed
    them)."""
    info = result.table.set_index("question_id")
    dep = info.dependency.to_dict()
    by_id = {r.question_id: r for r in records}
    base_f = question_features("kind", "guessable", "prior_kind", "semantics")
    real_f = question_features("kind", "guessable", "prior_kind", "dependency", "semantics")
    rot_f = question_features("kind", "guessable", "prior_kind", "semantics", "source")
    out_f = question_features("kind", "guessable", "prior_kind", "reasons", "dependency")
    rot_rows = []
    for row in rot.rows:
        base = question_row(by_id[row["question_id"]])
        base.update({k: row[k] for k in ("situation", "answers", "position", "rotation",
                                         "rotation_deg")})
        base["alternative_situation"] = [] if row["rotation_deg"] else base["alternative_situation"]
        base["source"] = "geometry"
        rot_rows.append(base)
    removed = [question_row(by_id[q], reasons=list(info.reasons[q]), dependency=_nan_none(dep[q]))
               for q in result.removed.question_id]
    real = [question_row(r, dependency=_nan_none(dep[r.question_id])) for r in kept]
    return [
        ConfigData("sqa3d", {split: fill_rows([question_row(r) for r in records], base_f)},
                   base_f, "all input questions"),
        ConfigData("real3dqa", {split: fill_rows(real, real_f)}, real_f,
                   "questions no blind model or judge answers", default=True),
        ConfigData("rotations", {split: fill_rows(rot_rows, rot_f)}, rot_f,
                   f"kept questions from {n_viewpoints} viewpoints, grouped on question_id"),
        ConfigData("filtered_out", {split: fill_rows(removed, out_f)}, out_f,
                   "removed questions with the filters that removed them")]


def _how_it_was_built(result: FilterResult, judges: list[tuple[str, Any]],
                      rstats: dict[str, Any], n_viewpoints: int) -> str:
    """The card's section on the filter and the rotation."""
    stats_md = result.stats_markdown()
    judged = judge_card_lines(list(judges), result.removed_by())
    if judged:
        stats_md += "\n\nJudges asked with `hf-real3d judge`:\n\n" + "\n".join(judged)
    return ("## How it was built\n\n"
            f"Filtering (a question is removed when a (full, blind) pair answers it both "
            f"with and without 3D, or a text-only judge answers it):\n\n{stats_md}\n\n"
            f"Rotation ({n_viewpoints} viewpoints, answers recomputed from scene geometry): "
            f"{rstats['kept']} questions kept, {rstats['excluded']} excluded; reasons: "
            f"{rstats['reasons']}.")


def _nan_none(v: float) -> float | None:
    return None if v is None or v != v else float(v)
