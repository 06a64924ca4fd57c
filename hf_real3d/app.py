"""``hf-real3d explore``: a local Gradio app to browse a benchmark before trusting a number.

Tabs:

- **Questions** (a Real-3DQA folder: built, imported or synthetic): filter by question type,
  scene and subset; one question's viewpoints side by side (situation, question, answers and
  each model's answer, right or wrong under the chosen matching rule, with the right-to-wrong
  flips); an interactive 3D view of the scene and the top-down picture of ``hf-real3d draw``
  when the folder has the ``scenes`` config.
- **Models**: each model's P_k curve with the curve expected if its viewpoints were
  independent.
- **Leaderboard**: ``metrics.json`` folders of ``hf-real3d evaluate`` and
  ``evaluate-3dsrbench`` in sortable tables, each row linking to its report, exported as CSV or
  as a Markdown table.
- **3DSRBench**: an item, its mirrored image, the options in every circular order, the right
  letters and each model's answers.

The app reads only the folders it is given. It binds to 127.0.0.1 unless another host or a
share link is asked for. Gradio may serve only the reports of the given results folders (its
``allowed_paths``) and its own cache, and it writes only under the system temporary folder.
``build_app(...)`` returns the ``gr.Blocks``, so a Space can serve the same app.
"""

from __future__ import annotations

import csv
import html
import io
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
from PIL import Image

from hf_real3d._io import atomic_path
from hf_real3d.geometry import Pose
from hf_real3d.hub import card_configs, load_local, scene_from_row
from hf_real3d.predictions import (
    check_unique_names,
    load_srbench_predictions,
    read_model_prediction_columns,
)
from hf_real3d.real3dqa.evaluate import reference_columns, score_predictions
from hf_real3d.report import topdown_figure
from hf_real3d.srbench.rules import DEFAULT_RULE, rule_hits

__all__ = ["build_app", "launch", "launch_kwargs", "load_questions", "load_predictions_for",
           "load_leaderboard", "load_srbench", "ExplorerData", "RULES", "question_html"]

RULES = {"refined EM": "em_refined", "EM": "em", "LEO's rule (official)": "leo"}
SUBSETS = ("all", "de-biased", "filtered out")
PRUNED = "kept by bias pruning"  # the real3dqa_tst config of hf-real3d stress-test --prune
MAX_POINTS = 6000  # points drawn in the 3D view (a random subset of the scene's)
_APP_HINT = "pip install 'hf_real3d[app]' (Gradio); `make install` installs it"


class ExplorerInputError(ValueError):
    """A folder or file given to the explorer that it cannot show."""


def _gradio():
    # Gradio is the optional [app] extra: imported when an app is built
    try:
        import gradio as gr  # noqa: I001 - the [app] extra
    except ImportError:
        raise ImportError(f"hf-real3d explore needs Gradio: {_APP_HINT}") from None
    return gr


# --- questions ---------------------------------------------------------------------------

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
        configs = card_configs(folder)
    except FileNotFoundError:
        raise ExplorerInputError(f"{folder}: not a dataset folder (no README.md card); give "
                                 f"{what}") from None
    return configs


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
        ds = load_local(folder, config)
        cols = [c for c in [*keep, "reasons", "semantics"] if c in ds.column_names]
        return ds.select_columns(cols).to_pandas()

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
    table = first[["question_id", "scene_id", "question_type", "question", "subset", "pruned_kept",
                   "reason"]].sort_values("question_id").reset_index(drop=True)
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


def _cached(qd: QuestionData, key: Any, make, limit: int = 64):
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
    return _cached(qd, ("scene", scene_id),
                   lambda: scene_from_row(entry["dataset"][entry["index"]]))


# --- predictions ---------------------------------------------------------------------------

@dataclass
class ModelAnswers:
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


# --- one question ------------------------------------------------------------------------

def _answers_text(a: Any) -> str:
    return " / ".join(str(x) for x in a) if isinstance(a, (list, tuple, np.ndarray)) else str(a)


def question_html(qd: QuestionData, qid: int, models: Sequence[ModelAnswers] = (),
                  rule: str = "em_refined") -> str:
    """One question: a column per viewpoint (situation, question, answers, each model's
    answer marked right or wrong, and a flip mark where it was right at 0 degrees)."""
    vps = qd.viewpoints.get(int(qid))
    if not vps:
        return f"<p>question_id {qid} is not in {html.escape(qd.folder)}</p>"
    e = html.escape
    first = qd.table[qd.table.question_id == int(qid)].iloc[0]
    head = "".join(f"<th data-deg='{int(v['rotation_deg'])}'>{int(v['rotation_deg'])}&deg;"
                   "</th>" for v in vps)

    def row(label: str, cells: list[str], cls: str) -> str:
        tds = "".join(f"<td class='{cls}' data-deg='{int(v['rotation_deg'])}'>{c}</td>"
                      for v, c in zip(vps, cells))
        return f"<tr><th>{label}</th>{tds}</tr>"

    rows = [row("situation", [e(str(v.get("situation", ""))) for v in vps], "vp-situation"),
            row("question", [e(str(v.get("question", ""))) for v in vps], "vp-question"),
            row("answers", [f"<b>{e(_answers_text(v.get('answers', [])))}</b>" for v in vps],
                "vp-answer")]
    summary = []
    for m in models:
        cells, flips = [], 0
        right0 = (m.answers.get((int(qid), 0)) or {}).get(rule)
        for v in vps:
            a = m.answers.get((int(qid), int(v["rotation_deg"])))
            if a is None:
                cells.append("<span class='missing'>(no prediction)</span>")
                continue
            ok = a[rule]
            flip = bool(right0) and not ok and int(v["rotation_deg"]) != 0
            flips += flip
            mark = ("<span class='right'>&#10003;</span>" if ok
                    else "<span class='wrong'>&#10007;</span>")
            cells.append(f"{e(a['prediction'])} {mark}"
                         + (" <span class='flip' title='right at 0&deg;, wrong here'>"
                            "flip</span>" if flip else ""))
        rows.append(row(e(m.name), cells, "vp-model"))
        summary.append(f"{e(m.name)}: {flips} right-to-wrong flip(s)")
    reason = f" &middot; filtered out by {e(first['reason'])}" if first["reason"] else ""
    meta = (f"<p class='qmeta'>question_id <b>{int(qid)}</b> &middot; scene "
            f"{e(str(first['scene_id']))} &middot; {e(str(first['question_type']))} &middot; "
            f"{e(str(first['subset']))}{reason}</p>")
    flips_line = f"<p class='flips'>{'; '.join(summary)}</p>" if summary else ""
    return (f"{meta}<table class='viewpoints'><tr><th></th>{head}</tr>{''.join(rows)}</table>"
            f"{flips_line}")


def _answer_objects(scene, vp: dict[str, Any]) -> set[int]:
    answer = _answers_text(vp.get("answers", [""])).split(" / ")[0]
    labels = {o.label for o in scene.non_structural()}
    if answer in labels:
        return {o.object_id for o in scene.by_label(answer)}
    try:
        return set(json.loads(vp.get("semantics") or "{}").get("objects", []))
    except (TypeError, ValueError):
        return set()


def _poses(qd: QuestionData, qid: int, scene):
    vps = qd.viewpoints[int(qid)]
    pose0 = Pose.from_sqa3d(vps[0]["position"], vps[0]["rotation"], scene.origin,
                            item=f"question_id {qid}")
    return [(v, pose0.turned(int(v["rotation_deg"]))) for v in vps]


def scene_figure(qd: QuestionData, qid: int, deg: int = 0, *, max_points: int = MAX_POINTS):
    """A plotly 3D figure: the point cloud (a random subset), the answer objects of the
    viewpoint ``deg`` in red, the agent's position and heading. None without geometry."""
    # plotly comes with the [app] extra: imported when a figure is drawn
    import plotly.graph_objects as go

    vps = qd.viewpoints.get(int(qid))
    scene = scene_of(qd, str(vps[0]["scene_id"])) if vps else None
    if scene is None:
        return None
    poses = dict((int(v["rotation_deg"]), (v, p)) for v, p in _poses(qd, qid, scene))
    vp, pose = poses.get(int(deg), poses[min(poses)])
    hl = _answer_objects(scene, vp)
    pts, cols, marked = [], [], []
    for o in scene.objects:
        if o.points is None or not len(o.points):
            continue
        pts.append(o.points[:, :3])
        cols.append(o.points[:, 3:6])
        marked.append(np.full(len(o.points), o.object_id in hl))
    p, c, m = np.concatenate(pts), np.concatenate(cols), np.concatenate(marked)
    rng = np.random.default_rng(0)
    if len(p) > max_points:
        idx = np.sort(rng.choice(len(p), max_points, replace=False))
        p, c, m = p[idx], c[idx], m[idx]
    c = np.clip(c if c.max() > 1.0 else c * 255, 0, 255).astype(int)
    colors = np.array([f"rgb({r},{g},{b})" for r, g, b in c.tolist()], dtype=object)
    pos, f = pose.position, pose.facing
    z = float(pos[2]) + 1.0  # eye height above the floor
    tip = [pos[0] + 0.8 * f[0], pos[1] + 0.8 * f[1]]
    traces = [{"type": "scatter3d", "x": p[~m, 0], "y": p[~m, 1], "z": p[~m, 2],
               "mode": "markers", "marker": {"size": 1.6, "color": colors[~m]},
               "name": "scene", "hoverinfo": "skip"}]
    if m.any():
        traces.append({"type": "scatter3d", "x": p[m, 0], "y": p[m, 1], "z": p[m, 2],
                       "mode": "markers", "marker": {"size": 2.5, "color": "#d62728"},
                       "name": f"answer: {_answers_text(vp.get('answers', []))}"})
    traces += [{"type": "scatter3d", "x": [pos[0], tip[0]], "y": [pos[1], tip[1]],
                "z": [z, z], "mode": "lines+markers", "line": {"color": "#2ca02c", "width": 8},
                "marker": {"size": [6, 2], "color": "#2ca02c"},
                "name": f"agent at {int(vp['rotation_deg'])} deg"},
               {"type": "cone", "x": [tip[0]], "y": [tip[1]], "z": [z], "u": [f[0]],
                "v": [f[1]], "w": [0.0], "sizemode": "absolute", "sizeref": 0.35,
                "showscale": False, "colorscale": [[0, "#2ca02c"], [1, "#2ca02c"]],
                "name": "heading"}]
    layout = {"margin": {"l": 0, "r": 0, "t": 24, "b": 0}, "height": 420,
              "scene": {"aspectmode": "data", "xaxis": {"visible": False},
                        "yaxis": {"visible": False}, "zaxis": {"visible": False}},
              "legend": {"orientation": "h", "y": 0.02},
              "title": {"text": f"{vps[0]['scene_id']}: viewpoint {int(vp['rotation_deg'])} deg",
                        "font": {"size": 12}}}
    # the traces are built here from checked arrays: plotly's per-point validation of
    # thousands of colours would cost ~0.3 s per question
    fig = go.Figure({"data": traces, "layout": layout}, _validate=False)
    return fig


def _topdown_png(qd: QuestionData, qid: int) -> bytes | None:
    vps = qd.viewpoints[int(qid)]
    scene = scene_of(qd, str(vps[0]["scene_id"]))
    if scene is None:
        return None
    panels = [{"pose": pose, "highlight": _answer_objects(scene, v),
               "label": f"{int(v['rotation_deg'])} deg: {_answers_text(v.get('answers', []))}"}
              for v, pose in _poses(qd, qid, scene)]
    fig = topdown_figure(scene, panels, f"{qid}: {vps[0]['question']}", panel_width=2.6)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=60, bbox_inches="tight")
    return buf.getvalue()


def topdown_image(qd: QuestionData, qid: int):
    """The top-down panels of ``hf-real3d draw`` for ``qid`` as a PIL image (None without
    geometry)."""
    png = _cached(qd, ("topdown", int(qid)), lambda: _topdown_png(qd, int(qid)))
    return None if png is None else Image.open(io.BytesIO(png))


def pk_figure(models: Sequence[ModelAnswers], rule: str = "em_refined"):
    """P_1..P_n per model, with the curve expected if its viewpoints were independent."""
    # plotly comes with the [app] extra: imported when a figure is drawn
    import plotly.graph_objects as go

    fig = go.Figure()
    palette = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b"]
    for i, m in enumerate(models):
        rot = m.metrics[rule].get("rotation") or {}
        ks = sorted(int(k[11:]) for k in rot if k.startswith("p_at_least_") and k[11:].isdigit())
        if not ks:
            continue
        color = palette[i % len(palette)]
        fig.add_trace(go.Scatter(x=ks, y=[rot[f"p_at_least_{k}"] for k in ks],
                                 mode="lines+markers", name=f"{m.name} (VRS "
                                 f"{rot.get('vrs', float('nan')):.1f})",
                                 line={"color": color}))
        exp = [rot.get(f"expected_p_at_least_{k}") for k in ks]
        if all(v is not None for v in exp):
            fig.add_trace(go.Scatter(x=ks, y=exp, mode="lines", name=f"{m.name}: independent",
                                     line={"color": color, "dash": "dash"}))
    fig.update_layout(xaxis_title="k (right in at least k viewpoints)", yaxis_title="P_k (%)",
                      xaxis_dtick=1,
                      yaxis_range=[0, 100], height=380, margin={"t": 30},
                      title={"text": "P_k; dashed: expected if the viewpoints were independent",
                             "font": {"size": 12}})
    return fig


# --- leaderboard ---------------------------------------------------------------------------

def _num(v: Any) -> float | None:
    return None if v is None or (isinstance(v, float) and v != v) else round(float(v), 1)


def _ci(v: Any) -> str:
    return f"[{v[0]:.1f}, {v[1]:.1f}]" if isinstance(v, (list, tuple)) and len(v) == 2 else ""


@dataclass
class Leaderboard:
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


def markdown_table(df: pd.DataFrame) -> str:
    """A Markdown table of a leaderboard (no report links), ready for a paper."""
    df = df.drop(columns=[c for c in ("report",) if c in df])
    head = "| " + " | ".join(df.columns) + " |"
    sep = "|" + "|".join("---" if i < 2 else "---:" for i in range(len(df.columns))) + "|"

    def cell(v: Any) -> str:
        return "" if v is None or (isinstance(v, float) and v != v) else \
            f"{v:.1f}" if isinstance(v, float) else str(v)

    return "\n".join([head, sep, *("| " + " | ".join(cell(v) for v in r) + " |"
                                    for r in df.itertuples(index=False))])


def export_csv(df: pd.DataFrame, name: str) -> str:
    """Write the leaderboard as CSV under the system temporary folder; returns the path."""
    folder = Path(tempfile.mkdtemp(prefix="hf_real3d_explore_"))
    path = folder / f"{name}.csv"
    with atomic_path(path) as tmp:
        df.drop(columns=["report"], errors="ignore").to_csv(tmp, index=False,
                                                            quoting=csv.QUOTE_MINIMAL)
    return str(path)


# --- 3DSRBench -------------------------------------------------------------------------

@dataclass
class SRBenchData:
    folder: str
    configs: dict[str, Any]  # config -> datasets.Dataset (images decoded per row)
    meta: dict[str, pd.DataFrame]  # config -> rows without images
    predictions: list[tuple[str, dict[tuple[str | None, str], str]]]


_SR_WHAT = "a folder written by `hf-real3d build-3dsrbench`"


def load_srbench(folder: str | os.PathLike, specs: Sequence[str] = ()) -> SRBenchData:
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
    m = sr.meta[config]
    return m[(m["shift"].astype(int) == 0) & ~m["flipped"].astype(bool)]["qid"].tolist()


def srbench_item(sr: SRBenchData, config: str, qid: str) -> tuple[Any, Any, str]:
    """(image, mirrored image or None, HTML: the options in every circular order of the
    original and the mirrored item, the right letters and each model's answers)."""
    e = html.escape
    m = sr.meta[config]
    base = m[m.qid == qid]
    if base.empty:
        return None, None, f"<p>{e(qid)} is not in {e(config)}</p>"
    b = base.iloc[0]
    group = m[m.flip_group == b.flip_group].sort_values(["flipped", "shift"])
    image = sr.configs[config][int(b["index"])]["image"]
    flipped = group[group.flipped.astype(bool) & (group["shift"].astype(int) == 0)]
    mirror = sr.configs[config][int(flipped.iloc[0]["index"])]["image"] \
        if len(flipped) else None
    head = "".join(f"<th>{e(n)}</th>" for n, _ in sr.predictions)
    rows = []
    for r in group.itertuples(index=False):
        opts = r.options if isinstance(r.options, (list, np.ndarray)) else json.loads(r.options)
        opts = [str(o) for o in opts]
        listing = "<br>".join(f"{chr(65 + i)}. {e(o)}" for i, o in enumerate(opts))
        cells = []
        for _, table in sr.predictions:
            p = table.get((config, r.qid), table.get((None, r.qid)))
            if p is None:
                cells.append("<td class='missing'>(none)</td>")
                continue
            ok = bool(rule_hits(DEFAULT_RULE, [p], [r.answer], [opts])[0][0])
            mark = "<span class='right'>&#10003;</span>" if ok else \
                "<span class='wrong'>&#10007;</span>"
            cells.append(f"<td class='sr-model'>{e(p)} {mark}</td>")
        rows.append(f"<tr><td>{'mirrored' if r.flipped else 'original'}, order {int(r.shift)}"
                    f"</td><td>{listing}</td><td class='sr-answer'><b>{e(r.answer)}</b></td>"
                    f"{''.join(cells)}</tr>")
    text = (f"<p class='qmeta'>{e(qid)} &middot; {e(str(b.category))} ({e(str(b.group))})"
            f"</p><p><b>{e(str(b.question))}</b></p>"
            "<table class='viewpoints'><tr><th>item</th><th>options</th><th>right</th>"
            f"{head}</tr>{''.join(rows)}</table>"
            "<p>CircularEval: every order of the options must be right; FlipEval: the "
            "original and the mirrored image must both be right.</p>")
    return image, mirror, text


# --- the app -----------------------------------------------------------------------------

@dataclass
class ExplorerData:
    """Everything the app shows, loaded once (before the server starts)."""

    questions: QuestionData | None = None
    models: list[ModelAnswers] = field(default_factory=list)
    leaderboard: Leaderboard | None = None
    srbench: SRBenchData | None = None
    load_s: float = 0.0

    @classmethod
    def load(cls, dataset: str | None = None, predictions: Sequence[str] = (),
             results: Sequence[str] = (), srbench: str | None = None,
             srbench_predictions: Sequence[str] = ()) -> ExplorerData:
        t0 = time.perf_counter()
        if predictions and not dataset:
            raise ExplorerInputError("--predictions needs --dataset (the references they are "
                                     "scored against)")
        if srbench_predictions and not srbench:
            raise ExplorerInputError("--srbench_predictions needs --srbench")
        qd = load_questions(dataset) if dataset else None
        models = load_predictions_for(qd, predictions) if qd else []
        lb = load_leaderboard(results) if results else None
        sr = load_srbench(srbench, srbench_predictions) if srbench else None
        if qd is None and lb is None and sr is None:
            raise ExplorerInputError("nothing to explore: give --dataset, --results and/or "
                                     "--srbench")
        return cls(qd, models, lb, sr, time.perf_counter() - t0)

    def allowed_paths(self) -> list[str]:
        """The only files Gradio may serve besides its own cache: the results' reports."""
        return list(self.leaderboard.reports) if self.leaderboard else []


CSS = """
.viewpoints {border-collapse: collapse; width: 100%; font-size: 0.9em}
.viewpoints th, .viewpoints td {border: 1px solid #ddd; padding: 4px 6px; vertical-align: top}
.viewpoints th {background: #f6f6f6}
.right {color: #2ca02c; font-weight: bold}
.wrong {color: #d62728; font-weight: bold}
.flip {background: #fde2e1; color: #a00; border-radius: 3px; padding: 0 3px; font-size: 0.85em}
.qmeta {color: #555}
.lb-table th {cursor: pointer; user-select: none}
.lb-table th[data-sort=asc]::after {content: " \\25B2"}
.lb-table th[data-sort=desc]::after {content: " \\25BC"}
"""


def _theme():
    gr = _gradio()
    local = ["ui-sans-serif", "system-ui", "sans-serif"]  # no web fonts: works offline
    return gr.themes.Default(font=local, font_mono=["ui-monospace", "monospace"])


def launch_kwargs() -> dict[str, Any]:
    """The theme, CSS and the leaderboard's sorting script the app expects:
    ``app.launch(**launch_kwargs())`` in a Space."""
    return {"theme": _theme(), "css": CSS, "head": HEAD}


def build_app(dataset: str | None = None, predictions: Sequence[str] = (),
              results: Sequence[str] = (), srbench: str | None = None,
              srbench_predictions: Sequence[str] = (), *, data: ExplorerData | None = None):
    """The explorer as a ``gr.Blocks`` (serve it with ``.launch(**launch_kwargs())``, or
    :func:`launch`, which also keeps Gradio's allowed paths to the given reports)."""
    gr = _gradio()
    data = data or ExplorerData.load(dataset, predictions, results, srbench,
                                     srbench_predictions)
    qd, models = data.questions, data.models
    with gr.Blocks(title="hf_real3d explorer", analytics_enabled=False) as app:
        app.explorer_data = data
        gr.Markdown("# hf_real3d explorer")
        if qd is not None:
            _questions_tab(gr, qd, models)
            if models:
                with gr.Tab("Models", elem_id="tab-models"):
                    rule = gr.Radio(list(RULES), value="refined EM", label="matching rule",
                                    elem_id="pk-rule")
                    pk = gr.Plot(pk_figure(models), elem_id="pk-plot", label="P_k")
                    rule.change(lambda r: pk_figure(models, RULES[r]), rule, pk)
        if data.leaderboard is not None:
            _leaderboard_tab(gr, data.leaderboard)
        if data.srbench is not None:
            _srbench_tab(gr, data.srbench)
    return app


def _filtered_ids(qd: QuestionData, qtype: str, scene: str, subset: str) -> list[int]:
    t = qd.table
    mask = np.ones(len(t), bool)
    if qtype != "all":
        mask &= (t.question_type == qtype).to_numpy()
    if scene != "all":
        mask &= (t.scene_id == scene).to_numpy()
    if subset == PRUNED:
        mask &= t.pruned_kept.to_numpy(dtype=bool)
    elif subset != "all":
        mask &= (t.subset == subset).to_numpy()
    return t.question_id[mask].astype(int).tolist()


def _questions_tab(gr, qd: QuestionData, models: list[ModelAnswers]) -> None:
    t = qd.table
    ids = t.question_id.astype(int).tolist()
    with gr.Tab("Questions", elem_id="tab-questions"):
        gr.Markdown(f"`{qd.folder}`: {len(t)} questions, "
                    f"{sum(len(v) > 1 for v in qd.viewpoints.values())} rotation groups"
                    + (f", {len(models)} model(s)" if models else ""))
        with gr.Row():
            qtype = gr.Dropdown(["all", *sorted(t.question_type.dropna().unique())],
                                value="all", label="question type", elem_id="f-type")
            scene = gr.Dropdown(["all", *sorted(t.scene_id.unique())], value="all",
                                label="scene", elem_id="f-scene")
            subset = gr.Dropdown([s for s in SUBSETS if s == "all" or (t.subset == s).any()]
                                 + ([PRUNED] if t.pruned_kept.any() else []),
                                 value="all", label="subset", elem_id="f-subset")
            rule = gr.Dropdown(list(RULES), value="refined EM", label="matching rule",
                               elem_id="f-rule")
        with gr.Row():
            qid = gr.Dropdown([str(i) for i in ids], value=str(ids[0]) if ids else None,
                              label=f"question ({len(ids)})", elem_id="f-qid",
                              filterable=True)
            deg = gr.Radio(["0", "90", "180", "270"], value="0", label="viewpoint (3D view)",
                           elem_id="f-deg")
        view = gr.HTML(question_html(qd, ids[0], models) if ids else "", elem_id="question")
        if qd.has_scenes:
            plot = gr.Plot(scene_figure(qd, ids[0]) if ids else None, label="3D scene",
                           elem_id="scene3d")
            top = gr.Image(topdown_image(qd, ids[0]) if ids else None,
                           label="top-down (as `hf-real3d draw`)", elem_id="topdown",
                           type="pil", format="png")
        else:
            gr.Markdown(qd.note, elem_id="no-geometry")
            plot = top = None

        def refilter(a, b, c):
            got = _filtered_ids(qd, a, b, c)
            return gr.update(choices=[str(i) for i in got],
                             value=str(got[0]) if got else None,
                             label=f"question ({len(got)})")

        for f in (qtype, scene, subset):
            f.change(refilter, [qtype, scene, subset], qid, queue=False)

        def show(q, r, d):
            if not q:
                return ("<p>no question matches these filters</p>",
                        *((None, None) if qd.has_scenes else ()))
            out = [question_html(qd, int(q), models, RULES[r])]
            if qd.has_scenes:
                out += [scene_figure(qd, int(q), int(d)), topdown_image(qd, int(q))]
            return tuple(out)

        outs = [view, *([plot, top] if qd.has_scenes else [])]
        # light handlers answer directly (no queue): a question shows in ~50 ms, not ~70
        fast = {"queue": False, "show_progress": "hidden"}
        qid.change(show, [qid, rule, deg], outs, **fast)
        rule.change(lambda q, r: question_html(qd, int(q), models, RULES[r]) if q else "",
                    [qid, rule], view, **fast)
        if qd.has_scenes:
            deg.change(lambda q, d: scene_figure(qd, int(q), int(d)) if q else None,
                       [qid, deg], plot, **fast)


def leaderboard_html(df: pd.DataFrame, key: str) -> str:
    """A leaderboard as an HTML table whose headers sort it (ascending, then descending, on
    click: the script in :data:`HEAD`); the report column links to each run's report."""
    e = html.escape
    numeric = [pd.api.types.is_numeric_dtype(df[c]) for c in df.columns]
    head = "".join(f"<th data-type='{'number' if n else 'text'}' title='sort by {e(c)}'>"
                   f"{e(c)}</th>" for c, n in zip(df.columns, numeric))
    body = []
    for r in df.itertuples(index=False):
        cells = []
        for c, v, n in zip(df.columns, r, numeric):
            if c == "report":
                cells.append(f"<td><a href='{e(v)}' target='_blank'>report</a></td>"
                             if v else "<td></td>")
            elif n:
                missing = v is None or v != v
                cells.append(f"<td data-value='{'' if missing else v}'>"
                             f"{'' if missing else f'{v:.1f}'}</td>")
            else:
                cells.append(f"<td>{e(str(v))}</td>")
        body.append(f"<tr>{''.join(cells)}</tr>")
    return (f"<table class='lb-table viewpoints' id='lb-{key}-table'><thead><tr>{head}</tr>"
            f"</thead><tbody>{''.join(body)}</tbody></table>")


HEAD = """<script>
document.addEventListener('click', (ev) => {
  const th = ev.target.closest('table.lb-table th');
  if (!th) return;
  const table = th.closest('table');
  const idx = Array.from(th.parentNode.children).indexOf(th);
  const asc = th.dataset.sort !== 'asc';
  table.querySelectorAll('th').forEach(h => delete h.dataset.sort);
  th.dataset.sort = asc ? 'asc' : 'desc';
  const num = th.dataset.type === 'number';
  const key = (r) => {
    const c = r.cells[idx];
    if (!num) return c.innerText;
    const v = parseFloat(c.dataset.value);
    return isNaN(v) ? -Infinity : v;
  };
  const body = table.tBodies[0];
  const rows = Array.from(body.rows);
  rows.sort((a, b) => {
    const x = key(a), y = key(b);
    const d = num ? (x < y ? -1 : x > y ? 1 : 0) : String(x).localeCompare(String(y));
    return asc ? d : -d;
  });
  rows.forEach((r) => body.appendChild(r));
});
</script>"""


def _leaderboard_tab(gr, lb: Leaderboard) -> None:
    with gr.Tab("Leaderboard", elem_id="tab-leaderboard"):
        for key, df, title in (("real3dqa", lb.real3dqa, "Real-3DQA (`hf-real3d evaluate`)"),
                               ("srbench", lb.srbench, "3DSRBench (`evaluate-3dsrbench`)")):
            if df.empty:
                continue
            gr.Markdown(f"### {title}\nClick a column header to sort (again: descending).")
            gr.HTML(leaderboard_html(df, key), elem_id=f"lb-{key}")
            with gr.Row():
                btn = gr.Button("Export CSV", elem_id=f"lb-{key}-csv-btn")
                file = gr.File(label="CSV", elem_id=f"lb-{key}-csv")
                btn.click(_exporter(df, f"leaderboard_{key}"), None, file)
            with gr.Accordion("Markdown table", open=False):
                gr.Code(markdown_table(df), language="markdown", elem_id=f"lb-{key}-md")


def _exporter(df: pd.DataFrame, name: str):
    return lambda: export_csv(df, name)


def _srbench_tab(gr, sr: SRBenchData) -> None:
    configs = list(sr.configs)
    first = srbench_items(sr, configs[0])
    with gr.Tab("3DSRBench", elem_id="tab-srbench"):
        with gr.Row():
            config = gr.Dropdown(configs, value=configs[0], label="config", elem_id="sr-config")
            item = gr.Dropdown(first, value=first[0] if first else None,
                               label=f"item ({len(first)})", elem_id="sr-item",
                               filterable=True)
        im0, im1, text = srbench_item(sr, configs[0], first[0]) if first else (None, None, "")
        with gr.Row():
            image = gr.Image(im0, label="image", type="pil", elem_id="sr-image")
            mirror = gr.Image(im1, label="mirrored (FlipEval)", type="pil",
                              elem_id="sr-mirror")
        info = gr.HTML(text, elem_id="sr-item-html")

        def pick_config(c):
            items = srbench_items(sr, c)
            return gr.update(choices=items, value=items[0] if items else None,
                             label=f"item ({len(items)})")

        config.change(pick_config, config, item)
        item.change(lambda c, q: srbench_item(sr, c, q) if q else (None, None, ""),
                    [config, item], [image, mirror, info])


def launch(app, *, host: str = "127.0.0.1", port: int | None = None, share: bool = False,
           allowed_paths: Sequence[str] | None = None, block: bool = True, quiet: bool = False):
    """Serve ``app`` on ``host`` (127.0.0.1 unless asked), with Gradio's allowed paths
    limited to ``allowed_paths`` (default: the reports of the app's results folders)."""
    data = getattr(app, "explorer_data", None)
    paths = list(allowed_paths if allowed_paths is not None
                 else (data.allowed_paths() if data else []))
    os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
    return app.launch(server_name=host, server_port=port, share=share, allowed_paths=paths,
                      prevent_thread_lock=not block, quiet=quiet, ssr_mode=False,
                      footer_links=[], **launch_kwargs())
