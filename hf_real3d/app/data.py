"""The explorer's data: what it loads from the folders it is given, once, before the server
starts (questions and their viewpoints, scored predictions, leaderboards, 3DSRBench items)."""

from __future__ import annotations

import csv
import json
import os
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from hf_real3d._io import atomic_path
from hf_real3d.hub import load_frame, load_local
from hf_real3d.real3dqa.evaluate import score_predictions
from hf_real3d.real3dqa.predictions import read_model_prediction_columns
from hf_real3d.real3dqa.references import reference_columns
from hf_real3d.schema import scene_from_row
from hf_real3d.sources import DatasetFolder, resolve
from hf_real3d.specs import check_unique_names
from hf_real3d.srbench.predictions import load_srbench_predictions

__all__ = ["ExplorerInputError", "QuestionData", "load_questions", "scene_of", "cached",
           "ModelAnswers", "load_predictions_for", "Leaderboard", "load_leaderboard",
           "export_csv", "filtered_ids", "SRBenchData", "load_srbench", "srbench_items",
           "ExplorerData", "RULES", "SUBSETS", "PRUNED", "CHECK_SUBSETS", "MAX_POINTS"]

RULES = {"refined EM": "em_refined", "EM": "em", "LEO's rule (official)": "leo"}


SUBSETS = ("all", "de-biased", "filtered out")


PRUNED = "kept by bias pruning"  # the real3dqa_tst config of hf-real3d stress-test --prune
# the rotation_checks config of hf-real3d check-rotations
CHECK_SUBSETS = ("flagged by rotation checks", "passes rotation checks")


MAX_POINTS = 6000  # points drawn in the 3D view (a random subset of the scene's)


class ExplorerInputError(ValueError):
    """A folder or file given to the explorer that it cannot show."""


@dataclass
class QuestionData:
    """A Real-3DQA folder, indexed for browsing."""

    folder: str
    table: pd.DataFrame  # one row per question: question_id, scene_id, question_type,
    # question, subset ("de-biased" | "filtered out" | "all only"), reason
    viewpoints: dict[int, list[dict[str, Any]]]  # question_id -> rows by rotation_deg
    scene_rows: dict[str, dict[str, Any]]  # scene_id -> its `scenes` row (decoded lazily)
    note: str = ""  # why there is no 3D view, when there is none
    cache: dict[Any, Any] = field(default_factory=dict, repr=False)  # scenes, pictures

    @property
    def has_scenes(self) -> bool:
        return bool(self.scene_rows)


def _configs(folder: Path, what: str) -> list[str]:
    if not folder.is_dir():
        raise ExplorerInputError(f"{folder}: no such folder; give {what}")
    try:
        return resolve(folder, DatasetFolder, what="the folder to explore").configs()
    except (FileNotFoundError, ValueError) as err:
        raise ExplorerInputError(f"{err}; give {what}") from None


_QA_WHAT = ("a folder written by `hf-real3d build-real3dqa`, `import-real3dqa` or `synth`")


def load_questions(folder: str | os.PathLike) -> QuestionData:
    """Index a Real-3DQA dataset folder (configs ``real3dqa``, ``rotations``,
    ``filtered_out``, ``sqa3d``, ``scenes``; whichever it has)."""
    folder = Path(folder)
    configs = _configs(folder, _QA_WHAT)
    if not {"real3dqa", "rotations", "sqa3d"} & set(configs):
        raise ExplorerInputError(f"{folder}: its card lists configs {configs}, none of "
                                 f"real3dqa / rotations / sqa3d; give {_QA_WHAT}")
    keep = ["question_id", "scene_id", "situation", "question", "answers", "position",
            "rotation", "question_type", "rotation_deg"]

    def frame(config: str) -> pd.DataFrame | None:
        if config not in configs:
            return None
        return load_frame(folder, config, columns=[*keep, "reasons", "semantics", "rules"])

    kept, out, base, rot = (frame(c) for c in ("real3dqa", "filtered_out", "sqa3d",
                                               "rotations"))
    tst = frame("real3dqa_tst")
    firsts = [f for f in (kept, out, base) if f is not None]
    if rot is not None:
        firsts.append(rot[rot.rotation_deg == 0])
    first = pd.concat(firsts, ignore_index=True).drop_duplicates("question_id")
    kept_ids = set() if kept is None else set(kept.question_id.tolist())
    reasons = {} if out is None or "reasons" not in out else \
        {int(q): ", ".join(r) for q, r in zip(out.question_id, out.reasons)}
    first = first.assign(
        subset=["de-biased" if q in kept_ids else "filtered out" if q in reasons else
                "all only" for q in first.question_id.tolist()],
        reason=[reasons.get(int(q), "") for q in first.question_id.tolist()],
        pruned_kept=first.question_id.isin(set() if tst is None else
                                           set(tst.question_id.tolist())).to_numpy())
    viewpoints: dict[int, list[dict[str, Any]]] = {}
    sem = dict(zip(base.question_id.tolist(), base.semantics.tolist())) \
        if base is not None and "semantics" in base else {}
    for r in first.to_dict("records"):
        viewpoints[int(r["question_id"])] = [r]
    if rot is not None:
        for r in rot.sort_values("rotation_deg").to_dict("records"):
            q = int(r["question_id"])
            vps = viewpoints.setdefault(q, [])
            if int(r["rotation_deg"]) == 0:
                vps[:1] = [{**(vps[0] if vps else {}), **r}]
            else:
                vps.append(r)
    for q, s in sem.items():
        if q in viewpoints and s:
            viewpoints[q][0]["semantics"] = s
    checks = frame("rotation_checks")
    if checks is not None:
        # the checks shown must have judged these rotations (their verdicts and fingerprint)
        from hf_real3d.real3dqa.checker.folder import read_checks_config
        from hf_real3d.real3dqa.rotation_set import read_rotation_set

        read_checks_config(read_rotation_set(folder))
    status: dict[int, str] = {}
    if checks is not None:  # the rules hf-real3d check-rotations found, per viewpoint
        fired = {(int(q), int(d)): list(r) for q, d, r in
                 zip(checks.question_id, checks.rotation_deg, checks.rules)}
        for q, vps in viewpoints.items():
            for v in vps:
                v["rules"] = fired.get((q, int(v["rotation_deg"])))
            if any(v["rules"] is not None for v in vps):
                status[q] = CHECK_SUBSETS[0] if any(v["rules"] for v in vps) else \
                    CHECK_SUBSETS[1]
    first = first.assign(checks=[status.get(int(q), "") for q in first.question_id.tolist()])
    table = first[["question_id", "scene_id", "question_type", "question", "subset", "pruned_kept",
                   "reason", "checks"]].sort_values("question_id").reset_index(drop=True)
    scene_rows: dict[str, dict[str, Any]] = {}
    note = ""
    if "scenes" in configs:
        ds = load_local(folder, "scenes")
        scene_rows = {sid: {"index": i, "dataset": ds} for i, sid in enumerate(ds["scene_id"])}
    else:
        note = ("No 3D view: this folder has no `scenes` config. The official Real-3DQA "
                "release carries no ScanNet geometry (the scans have their own terms of use), "
                "so an imported release shows the text alone. Build with "
                "`hf-real3d build-real3dqa --scenes ...` to browse the scenes.")
    return QuestionData(str(folder), table, viewpoints, scene_rows, note)


def cached(qd: QuestionData, key: Any, make, limit: int = 64):
    """The value of ``make()`` for ``key`` in the question data's small cache (oldest of ``limit``
    entries dropped)."""
    if key not in qd.cache:
        if len(qd.cache) >= limit:
            qd.cache.pop(next(iter(qd.cache)))
        qd.cache[key] = make()
    return qd.cache[key]


def scene_of(qd: QuestionData, scene_id: str):
    """The :class:`~hf_real3d.scene.Scene` of ``scene_id`` (None without geometry)."""
    entry = qd.scene_rows.get(scene_id)
    if entry is None:
        return None
    return cached(qd, ("scene", scene_id),
                   lambda: scene_from_row(entry["dataset"][entry["index"]]))


@dataclass
class ModelAnswers:
    """One model's answers on the explorer's dataset: per (question, viewpoint) the prediction and
    its correctness, and its metrics under each rule."""
    name: str
    answers: dict[tuple[int, int], dict[str, Any]]  # (qid, deg) -> prediction + correctness
    metrics: dict[str, dict[str, Any]]  # rule key -> score_predictions() metrics


def load_predictions_for(qd: QuestionData, specs: Sequence[str]) -> list[ModelAnswers]:
    """Each ``NAME=FILE[,FILE...]`` (as ``hf-real3d evaluate`` takes it), scored against the
    folder under every rule."""
    check_unique_names(list(specs))
    if not specs:
        return []
    refs = reference_columns(qd.folder)
    models = []
    for spec in specs:
        preds = read_model_prediction_columns(spec)
        plain = score_predictions(refs, preds, allow_missing=True)
        leo = score_predictions(refs, preds, allow_missing=True, leo_compatible=True)
        answers = {}
        for a, b in zip(plain.rows.itertuples(index=False), leo.rows.itertuples(index=False)):
            pred = a.prediction if isinstance(a.prediction, str) else " / ".join(a.prediction)
            answers[(int(a.question_id), int(a.rotation_deg))] = {
                "prediction": pred, "em": bool(a.em), "em_refined": bool(a.em_refined),
                "leo": bool(b.em_refined)}
        models.append(ModelAnswers(plain.name, answers,
                                   {"em": plain.metrics, "em_refined": plain.metrics,
                                    "leo": leo.metrics}))
    return models


def _num(v: Any) -> float | None:
    return None if v is None or (isinstance(v, float) and v != v) else round(float(v), 1)


def _ci(v: Any) -> str:
    return f"[{v[0]:.1f}, {v[1]:.1f}]" if isinstance(v, (list, tuple)) and len(v) == 2 else ""


@dataclass
class Leaderboard:
    """The leaderboard tables of the results folders (Real-3DQA and 3DSRBench) and the report files
    the app may serve."""
    real3dqa: pd.DataFrame
    srbench: pd.DataFrame
    reports: list[str] = field(default_factory=list)  # report files the app may serve


def _report(folder: Path) -> str | None:
    """The run's report file, which the app may serve (None when the folder has none)."""
    rep = folder / "report.md"
    return str(rep.resolve()) if rep.is_file() else None


def load_leaderboard(folders: Sequence[str | os.PathLike]) -> Leaderboard:
    """One row per model of each ``metrics.json`` folder (``hf-real3d evaluate``: a list of
    models; ``evaluate-3dsrbench``: configs of models)."""
    qa, sr, reports = [], [], []
    seen: dict[str, int] = {}
    for f in folders:
        folder = Path(f)
        mfile = folder / "metrics.json"
        if not mfile.is_file():
            raise ExplorerInputError(f"{folder}: not a results folder (no metrics.json); give "
                                     "a folder written by `hf-real3d evaluate` or "
                                     "`evaluate-3dsrbench`")
        try:
            data = json.loads(mfile.read_text(encoding="utf-8-sig"))
        except ValueError as err:
            raise ExplorerInputError(f"{mfile}: not JSON ({err}); rerun the evaluation") \
                from None
        run = folder.name
        seen[run] = seen.get(run, 0) + 1
        if seen[run] > 1:  # two folders of one name: tell them apart
            run = f"{run} ({seen[run]})"
        rep = _report(folder)
        link = f"/gradio_api/file={rep}" if rep else ""  # Gradio's route for allowed files
        if rep:
            reports.append(rep)
        if isinstance(data, list) and all(isinstance(m, dict) and "model" in m for m in data):
            for m in data:
                d, o, r = m.get("debiased") or {}, m.get("original") or {}, \
                    m.get("rotation") or {}
                qa.append({"run": run, "model": m["model"],
                           "EM": _num(d.get("em")), "EM_R": _num(d.get("em_refined")),
                           "EM_R 95% CI": _ci(d.get("em_refined_ci")),
                           "EM_R (original)": _num(o.get("em_refined")),
                           **{f"P_{k}": _num(r.get(f"p_at_least_{k}")) for k in range(1, 5)},
                           "VRS": _num(r.get("vrs")), "VRS 95% CI": _ci(r.get("vrs_ci")),
                           "consistency": _num(r.get("consistency")),
                           "consistency 95% CI": _ci(r.get("consistency_ci")),
                           "report": link})
        elif isinstance(data, dict) and data and all(
                isinstance(v, dict) for k, v in data.items() if k != "rule"):
            rule = data.get("rule", "")
            for config, models in data.items():
                if config == "rule":
                    continue
                for name, s in models.items():
                    if not isinstance(s, dict):
                        continue
                    sr.append({"run": run, "model": name, "config": config, "rule": rule,
                               "CircularEval": _num((s.get("circular") or {}).get("overall")),
                               "FlipEval": _num((s.get("flip") or {}).get("overall")),
                               "Circular+Flip": _num((s.get("flip_circular") or {})
                                                     .get("overall")),
                               "vanilla": _num((s.get("vanilla") or {}).get("overall")),
                               "report": link})
        else:
            raise ExplorerInputError(f"{mfile}: neither `hf-real3d evaluate` (a list of "
                                     "models) nor `evaluate-3dsrbench` (configs of models) "
                                     "output")
    qa_cols = ["run", "model", "EM", "EM_R", "EM_R 95% CI", "EM_R (original)", "P_1", "P_2",
               "P_3", "P_4", "VRS", "VRS 95% CI", "consistency", "consistency 95% CI", "report"]
    sr_cols = ["run", "model", "config", "rule", "CircularEval", "FlipEval", "Circular+Flip",
               "vanilla", "report"]
    return Leaderboard(pd.DataFrame(qa, columns=qa_cols), pd.DataFrame(sr, columns=sr_cols),
                       reports)


def export_csv(df: pd.DataFrame, name: str) -> str:
    """Write the leaderboard as CSV under the system temporary folder; returns the path."""
    folder = Path(tempfile.mkdtemp(prefix="hf_real3d_explore_"))
    path = folder / f"{name}.csv"
    with atomic_path(path) as tmp:
        df.drop(columns=["report"], errors="ignore").to_csv(tmp, index=False,
                                                            quoting=csv.QUOTE_MINIMAL)
    return str(path)


@dataclass
class SRBenchData:
    """A 3DSRBench folder as the explorer shows it: each config's rows (images decoded per row), the
    rows without images, and the models' answers."""
    folder: str
    configs: dict[str, Any]  # config -> datasets.Dataset (images decoded per row)
    meta: dict[str, pd.DataFrame]  # config -> rows without images
    predictions: list[tuple[str, dict[tuple[str | None, str], str]]]


_SR_WHAT = "a folder written by `hf-real3d build-3dsrbench`"


def load_srbench(folder: str | os.PathLike, specs: Sequence[str] = ()) -> SRBenchData:
    """A built 3DSRBench folder and the models' answer files (``NAME=FILE``) for the explorer; an
    :class:`ExplorerInputError` naming the folder when it has no 3DSRBench config."""
    folder = Path(folder)
    configs = [c for c in _configs(folder, _SR_WHAT)
               if c in ("real", "synthetic_common", "synthetic_uncommon")]
    if not configs:
        raise ExplorerInputError(f"{folder}: no real / synthetic_common / synthetic_uncommon "
                                 f"config; give {_SR_WHAT}")
    check_unique_names(list(specs), "--srbench_predictions")
    ds = {c: load_local(folder, c) for c in configs}
    meta = {c: d.remove_columns(["image"]).to_pandas().reset_index() for c, d in ds.items()}
    return SRBenchData(str(folder), ds, meta, [load_srbench_predictions(s) for s in specs])


def srbench_items(sr: SRBenchData, config: str) -> list[str]:
    """The qids of ``config``'s original questions (unshifted, unmirrored), in order: the explorer's
    item list."""
    m = sr.meta[config]
    return m[(m["shift"].astype(int) == 0) & ~m["flipped"].astype(bool)]["qid"].tolist()


@dataclass
class ExplorerData:
    """Everything the app shows, loaded once (before the server starts)."""

    questions: QuestionData | None = None
    models: list[ModelAnswers] = field(default_factory=list)
    leaderboard: Leaderboard | None = None
    srbench: SRBenchData | None = None
    load_s: float = 0.0
    review: Any = None  # a hf_real3d.real3dqa.review.ReviewFolder: the Review tab
    review_warning: str = ""  # bad lines in the review folder's files, named

    @classmethod
    def load(cls, dataset: str | None = None, predictions: Sequence[str] = (),
             results: Sequence[str] = (), srbench: str | None = None,
             srbench_predictions: Sequence[str] = (), *, review: str | None = None,
             scenes: str | None = None,
             review_settings: dict[str, Any] | None = None) -> ExplorerData:
        t0 = time.perf_counter()
        if predictions and not dataset:
            raise ExplorerInputError("`predictions` needs `dataset` (the references they are "
                                     "scored against)")
        if srbench_predictions and not srbench:
            raise ExplorerInputError("`srbench_predictions` needs `srbench`")
        if (scenes or any(v is not None for v in (review_settings or {}).values())) \
                and not review:
            raise ExplorerInputError("`scenes` and `review`_* need `review` (the review "
                                     "folder)")
        # a rotation set in release files is reviewed without the Questions tab, which
        # needs a dataset folder
        browse = dataset and not (review and not isinstance(resolve(dataset),
                                                             DatasetFolder))
        qd = load_questions(dataset) if browse else None
        rf, warning = (open_review(review, dataset, scenes, review_settings or {}) if review
                       else (None, ""))
        models = load_predictions_for(qd, predictions) if qd else []
        lb = load_leaderboard(results) if results else None
        sr = load_srbench(srbench, srbench_predictions) if srbench else None
        if qd is None and lb is None and sr is None and rf is None:
            raise ExplorerInputError("nothing to explore: give `dataset`, `results`, `srbench` "
                                     "and/or `review`")
        return cls(qd, models, lb, sr, time.perf_counter() - t0, rf, warning)

    def allowed_paths(self) -> list[str]:
        """The only files Gradio may serve besides its own cache: the results' reports."""
        return list(self.leaderboard.reports) if self.leaderboard else []


def open_review(folder: str, dataset: str | None, scenes: str | None,
                settings: dict[str, Any]):
    """(the review folder, opened or made for ``dataset``; the bad lines its decision files
    hold, named as ``review-stats`` names them, or "")."""
    # the review records and the checker only when reviewing
    from hf_real3d.real3dqa.review import ReviewFolder

    settings = {k: v for k, v in settings.items() if v is not None}
    if (Path(folder) / "review.json").is_file() or dataset is None:
        rf = ReviewFolder.open(folder, dataset, scenes=scenes, **settings)
    else:
        rf = ReviewFolder.create(folder, dataset, scenes=scenes, **settings)
    rf.log.check_writable()  # at start, not at the first click
    bad: list[str] = []
    rf.log.all_decisions(errors=bad)
    warning = ""
    if bad:
        from hf_real3d.real3dqa.review.log import several  # the review's own message

        warning = (f"{several(bad)} (the annotators concerned cannot save until these lines "
                   "are fixed or deleted; hf-real3d review-stats names them too)")
    return rf, warning


def filtered_ids(qd: QuestionData, qtype: str, scene: str, subset: str) -> list[int]:
    """The question ids of ``qd`` that pass the Questions tab's filters (``"all"``: none)."""
    t = qd.table
    mask = np.ones(len(t), bool)
    if qtype != "all":
        mask &= (t.question_type == qtype).to_numpy()
    if scene != "all":
        mask &= (t.scene_id == scene).to_numpy()
    if subset == PRUNED:
        mask &= t.pruned_kept.to_numpy(dtype=bool)
    elif subset in CHECK_SUBSETS:
        mask &= (t.checks == subset).to_numpy()
    elif subset != "all":
        mask &= (t.subset == subset).to_numpy()
    return t.question_id[mask].astype(int).tolist()
