"""The explorer's pictures and HTML: one question's viewpoints, the 3D scene, the top-down
panels, P_k curves, leaderboard tables and a 3DSRBench item."""

from __future__ import annotations

import html
import io
import json
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
from PIL import Image

from hf_real3d.geometry import Pose
from hf_real3d.real3dqa.draw import topdown_figure
from hf_real3d.srbench.rules import DEFAULT_RULE, rule_hits
from hf_real3d.tables import markdown_table

from .data import MAX_POINTS, ModelAnswers, QuestionData, SRBenchData, cached, scene_of

__all__ = ["question_html", "scene_figure", "topdown_image", "pk_figure",
           "leaderboard_markdown", "leaderboard_html", "srbench_item", "answers_text"]


def answers_text(a: Any) -> str:
    """Answers as one text, ``a / b``."""
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
            row("answers", [f"<b>{e(answers_text(v.get('answers', [])))}</b>" for v in vps],
                "vp-answer")]
    if any("rules" in v for v in vps):  # hf-real3d check-rotations ran on the folder
        rows.append(row("rotation checks", [
            "" if int(v["rotation_deg"]) == 0 else
            "<span class='right'>passes</span>" if v.get("rules") is not None and
            not len(v["rules"]) else
            " ".join(f"<span class='wrong'>{e(r)}</span>" for r in v["rules"])
            if v.get("rules") is not None else "(not checked)" for v in vps], "vp-checks"))
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
    answer = answers_text(vp.get("answers", [""])).split(" / ")[0]
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
                       "name": f"answer: {answers_text(vp.get('answers', []))}"})
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
               "label": f"{int(v['rotation_deg'])} deg: {answers_text(v.get('answers', []))}"}
              for v, pose in _poses(qd, qid, scene)]
    fig = topdown_figure(scene, panels, f"{qid}: {vps[0]['question']}", panel_width=2.6)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=60, bbox_inches="tight")
    return buf.getvalue()


def topdown_image(qd: QuestionData, qid: int):
    """The top-down panels of ``hf-real3d draw`` for ``qid`` as a PIL image (None without
    geometry)."""
    png = cached(qd, ("topdown", int(qid)), lambda: _topdown_png(qd, int(qid)))
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


def leaderboard_markdown(df: pd.DataFrame) -> str:
    """A Markdown table of a leaderboard (no report links, empty cells where a figure is
    missing, figures right-aligned), ready for a paper."""
    df = df.drop(columns=[c for c in ("report",) if c in df])
    return markdown_table(list(df.columns), list(df.itertuples(index=False)), missing="",
                          right=range(2, len(df.columns)))


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
