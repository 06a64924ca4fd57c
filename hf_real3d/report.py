"""Markdown tables and matplotlib plots for evaluation results."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch, Polygon

from hf_real3d._io import atomic_path, write_json
from hf_real3d.analysis import (
    SRBENCH_VIEW_CONFIGS,
    findings,
    srbench_study_findings,
    srbench_study_summary,
    three_gains,
)
from hf_real3d.srbench.format import CATEGORIES, GROUPS

__all__ = ["markdown_table", "results_table", "plot_pk", "plot_radar", "plot_topdown",
           "write_report", "fmt", "srbench_table", "srbench_viewpoint_table", "mean_std",
           "render_demo_report", "write_demo_report", "demo_summary_table", "plot_weights",
           "diagnosis_section"]


def fmt(v: Any, digits: int = 1) -> str:
    if v is None or (isinstance(v, float) and np.isnan(v)):
        return "-"
    if isinstance(v, float):
        return f"{v:.{digits}f}"
    return str(v)


def markdown_table(header: Sequence[str], rows: Sequence[Sequence[Any]], *,
                   digits: int = 1) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(fmt(c, digits) for c in r) + " |" for r in rows]
    return "\n".join(lines)


def results_table(results: Sequence[dict[str, Any]]) -> str:
    """One row per model: EM/EM_R on the original and de-biased sets, P_1..P_n, VRS, the
    P_n expected if viewpoints were independent, and consistency (observed / expected P_n)."""
    n = max((len(r.get("rotation", {}).get("viewpoints", [])) for r in results), default=0)
    header = ["Model", "EM (orig)", "EM_R (orig)", "EM (de-biased)", "EM_R (de-biased)"]
    header += [f"P_{k}" for k in range(1, n + 1)] + (
        ["VRS", f"E[P_{n}] (indep.)", "consistency"] if n else [])
    rows = []
    for r in results:
        o, d, rot = r.get("original", {}), r.get("debiased", {}), r.get("rotation", {})
        row = [r["model"], o.get("em"), o.get("em_refined"), d.get("em"), d.get("em_refined")]
        if n:
            ci = rot.get("consistency_ci")
            cons = rot.get("consistency")
            cons = f"{cons:.2f} [{ci[0]:.2f}, {ci[1]:.2f}]" if ci and cons is not None \
                else (f"{cons:.2f}" if cons is not None else None)
            row += [rot.get(f"p_at_least_{k}") for k in range(1, n + 1)] + [
                rot.get("vrs"), rot.get(f"expected_p_at_least_{n}"), cons]
        rows.append(row)
    return markdown_table(header, rows)


def _save(fig, path: str | os.PathLike) -> None:
    with atomic_path(path) as tmp:
        fig.savefig(tmp, format="png", dpi=110, bbox_inches="tight")


def plot_pk(results: Sequence[dict[str, Any]], path: str | os.PathLike) -> bool:
    """P_k against k, one line per model with its 95% bootstrap band, and dashed the P_k
    expected if the viewpoints were answered independently at the model's per-viewpoint
    accuracy. Returns False when no model has rotations."""
    with_rot = [r for r in results if "rotation" in r]
    if not with_rot:
        return False
    fig = Figure(figsize=(5.4, 3.8))
    ax = fig.subplots()
    for i, r in enumerate(with_rot):
        rot = r["rotation"]
        color = f"C{i}"
        ks = np.arange(1, len(rot["viewpoints"]) + 1)
        ax.plot(ks, [rot[f"p_at_least_{k}"] for k in ks], marker="o", color=color,
                label=f"{r['model']} (VRS {rot['vrs']:.1f})")
        if rot.get("p_at_least_ci"):
            lo, hi = np.asarray(rot["p_at_least_ci"]).T
            ax.fill_between(ks, lo, hi, color=color, alpha=0.15, lw=0)
        if f"expected_p_at_least_{ks[-1]}" in rot:
            ax.plot(ks, [rot[f"expected_p_at_least_{k}"] for k in ks], ls="--", lw=1,
                    color=color, alpha=0.8)
    ax.plot([], [], ls="--", color="gray", label="expected if viewpoints independent")
    ax.set_xlabel("k (correct in at least k viewpoints)")
    ax.set_ylabel("P_k (%)")
    ax.set_xticks(ks)
    ax.set_ylim(0, 100)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    ax.set_title("Viewpoint rotation: P_k (band: 95% bootstrap over groups)")
    _save(fig, path)
    return True


def plot_weights(weights: dict[str, Any], path: str | os.PathLike) -> bool:
    """Histograms of 3DR-FT's weights by question kind (a
    :func:`hf_real3d.training.diagnostics.weight_summary`): left the ``paper`` token weights
    (log10, answer content tokens; the last bin holds the clipped ones), right the ``official``
    per-question factors (log10). Each kind's histogram is normalised to its own count.
    Returns False when there is nothing to draw."""
    groups = {k: v for k, v in (weights or {}).get("groups", {}).items() if k != "all"}
    if not groups:
        return False
    fig = Figure(figsize=(9.0, 3.4))
    axes = fig.subplots(1, 2)
    for (edges_key, hist_key, ax, title) in (
            ("paper_log10_edges", "paper_log10_hist", axes[0],
             f"paper: token weight (log10; clipped at {weights.get('clip')})"),
            ("official_log10_edges", "official_log10_hist", axes[1],
             "official: per-question factor (log10)")):
        edges = np.asarray(weights[edges_key])
        centers, width = (edges[1:] + edges[:-1]) / 2, np.diff(edges)
        for i, (name, g) in enumerate(groups.items()):
            h = np.asarray(g[hist_key], float)
            n = h.sum()
            count = g["tokens"] if hist_key == "paper_log10_hist" else g["questions"]
            if n:
                ax.step(centers, h / n, where="mid", color=f"C{i}", label=f"{name} (n={count})")
        if hist_key == "paper_log10_hist":
            ax.axvline(0.0, color="gray", ls=":", lw=1)  # weight 1: as in SFT
        ax.set_title(title, fontsize=9)
        ax.set_ylabel("share")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
        ax.set_xlim(edges[0] - width[0] / 2, edges[-1])
    _save(fig, path)
    return True


def _kind_cell(results: Any, model: str, subset: str, kind: str) -> str:
    vals = [s.by_kind.get(model, {}).get(subset, {}).get(kind, {}).get("em_refined")
            for s in results.seeds]
    return mean_std(vals)


def diagnosis_section(results: Any) -> list[str]:
    """Report lines: what 3DR-FT's weights lean on (the control's weights on the train split
    by prior kind, ``weights.png``) and which question kinds moved (refined EM by prior kind
    and by question type, against the control). Empty when the results predate them."""
    seeds = results.seeds
    if not seeds or not getattr(seeds[0], "by_kind", None):
        return []
    md = ["", "## Diagnosis: what 3DR-FT's weights lean on, and which questions moved", ""]
    w = [s.weights for s in seeds if s.weights]
    if w:
        kinds = [k for k in w[0]["groups"]]

        def col(key: str, scale: float = 1.0) -> dict[str, str]:
            return {k: mean_std([None if x["groups"].get(k, {}).get(key) is None
                                 else x["groups"][k][key] * scale for x in w]) for k in kinds}

        rows = {"tokens": {k: mean_std([x["groups"].get(k, {}).get("tokens") for x in w], 0)
                           for k in kinds}, "paper mean weight": col("paper_mean"),
                "tokens weighted > 1 (%)": col("up_share", 100),
                "tokens at the clip (%)": col("clipped_share", 100),
                "share of tokens = SFT's loss share (%)": col("token_share", 100),
                "share of paper loss weight (%)": col("paper_loss_share", 100),
                "official mean factor": col("official_mean"),
                "share of official loss weight (%)": col("official_loss_share", 100)}
        md += ["Weights 3DR-FT gives the trained control (`sft`, against `blind`) on the train "
               "split, before fine-tuning, by prior kind of the question (answer content "
               "tokens; the end-of-answer token keeps weight 1). `paper`: blind log-prob / "
               "the control's text-only log-prob; `official`: 1 / the control's text-only "
               "answer loss. A kind whose share of the loss weight exceeds its share of tokens "
               "is emphasised relative to SFT.", "",
               "| | " + " | ".join(kinds) + " |", "|---" * (len(kinds) + 1) + "|"]
        md += [f"| {name} | " + " | ".join(v[k] for k in kinds) + " |"
               for name, v in rows.items()]

        def share(x: dict, k: str, unit: str) -> float | None:
            n = x["groups"].get(k, {}).get(unit)
            return n / x["groups"]["all"][unit] if n else None

        def emphasis(key: str, unit: str) -> str:  # loss-weight share over its unit share
            parts = []
            for k in kinds[1:]:
                r = [x["groups"][k][key] / share(x, k, unit) for x in w
                     if x["groups"].get(k, {}).get(key) is not None and share(x, k, unit)]
                parts.append(f"{k} x{mean_std(r, 2)}")
            return ", ".join(parts)

        md += ["", "Emphasis against SFT (share of the loss weight / share of answer tokens, "
               "for `official` of questions; 1 = as SFT): `paper` "
               + emphasis("paper_loss_share", "tokens") + "; `official` "
               + emphasis("official_loss_share", "questions") + ". The paper weight is a "
               "ratio of two surprises, so it is near 1 where the control's text-only pass is "
               "as surprised as the blind model, and large only where the control guesses from "
               "text what the blind model does not.", "",
               "![3DR-FT weights by question kind](weights.png)", ""]
    names = [n for n in ("sft", "sft_more", "3drft_paper", "3drft_official", "blind")
             if n in seeds[0].by_kind]
    for subset, title in (("original", "original test set"), ("filtered", "filtered set")):
        kinds = sorted({k for s in seeds for k in s.by_kind[names[0]].get(subset, {})})
        if not kinds:
            continue
        n = {k: mean_std([s.by_kind[names[0]][subset].get(k, {}).get("n") for s in seeds], 0)
             for k in kinds}
        md += [f"Refined EM by prior kind, {title} (n per seed in the header):", "",
               "| Model | " + " | ".join(f"{k} (n {n[k]})" for k in kinds) + " |",
               "|---" * (len(kinds) + 1) + "|"]
        md += [f"| {m} | " + " | ".join(_kind_cell(results, m, subset, k) for k in kinds)
               + " |" for m in names]
        md.append("")
    types = sorted({k for s in seeds for k in s.by_kind[names[0]].get("filtered_by_type", {})})
    movers = [m for m in ("sft_more", "3drft_paper", "3drft_official") if m in names]
    if types and movers:
        md += ["Change against the control by question type, filtered set (refined EM points, "
               "mean ± std over seeds of the per-seed difference):", "",
               "| Type | n | sft | " + " | ".join(f"{m} − sft" for m in movers) + " |",
               "|---" * (len(movers) + 3) + "|"]
        def em(s, m, t):
            return s.by_kind[m]["filtered_by_type"].get(t, {}).get("em_refined")

        for t in types:
            diffs = [mean_std([None if em(s, m, t) is None or em(s, "sft", t) is None
                               else em(s, m, t) - em(s, "sft", t) for s in seeds])
                     for m in movers]
            nn = mean_std([s.by_kind["sft"]["filtered_by_type"].get(t, {}).get("n")
                           for s in seeds], 0)
            md.append(f"| {t} | {nn} | {mean_std([em(s, 'sft', t) for s in seeds])} | "
                      + " | ".join(diffs) + " |")
    return md


def radar_types(results: Sequence[dict[str, Any]], subset: str = "debiased", min_n: int = 20
                ) -> tuple[list[dict[str, Any]], str, dict[str, int], list[str]]:
    """(models with per-type scores, the subset used, n per type, the types with at least
    ``min_n`` questions): what :func:`plot_radar` draws (nothing with fewer than 3 types)."""
    rs = [r for r in results if r.get(subset, {}).get("per_type")]
    if not rs:
        rs, subset = [r for r in results if r.get("original", {}).get("per_type")], "original"
    n_of = {t: max(r[subset]["per_type"][t].get("n", 0) for r in rs
                   if t in r[subset]["per_type"])
            for r0 in rs for t in r0[subset]["per_type"]}
    return rs, subset, n_of, sorted(t for t, n in n_of.items() if n >= min_n)


def plot_radar(results: Sequence[dict[str, Any]], path: str | os.PathLike,
               subset: str = "debiased", min_n: int = 20) -> bool:
    """Per-type refined EM on a radar chart, one polygon per model; types with fewer than
    ``min_n`` questions are left out and each label shows its n."""
    rs, subset, n_of, types = radar_types(results, subset, min_n)
    if len(types) < 3:
        return False
    ang = np.linspace(0, 2 * np.pi, len(types), endpoint=False)
    fig = Figure(figsize=(5.5, 5.5))
    ax = fig.add_subplot(projection="polar")
    for r in rs:
        vals = [r[subset]["per_type"].get(t, {}).get("em_refined", 0.0) for t in types]
        ax.plot(np.r_[ang, ang[:1]], vals + vals[:1], label=r["model"])
        ax.fill(np.r_[ang, ang[:1]], vals + vals[:1], alpha=0.1)
    ax.set_xticks(ang)
    ax.set_xticklabels([f"{t}\n(n={n_of[t]})" for t in types], fontsize=7)
    ax.set_ylim(0, 100)
    ax.set_title(f"Refined EM per question type ({subset})")
    ax.legend(fontsize=7, loc="upper right", bbox_to_anchor=(1.3, 1.1))
    _save(fig, path)
    return True


def write_report(results: Sequence[dict[str, Any]], out: str | os.PathLike,
                 notes: Sequence[str] = ()) -> dict[str, str]:
    """``metrics.json``, ``report.md``, ``pk.png`` and ``radar.png`` under ``out``."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    write_json(out / "metrics.json", list(results), indent=2)
    files = {"metrics": str(out / "metrics.json")}
    md = ["# Evaluation report", "", results_table(results), ""]
    if plot_pk(results, out / "pk.png"):
        files["pk"] = str(out / "pk.png")
        md += ["![P_k per model](pk.png)", ""]
    if plot_radar(results, out / "radar.png"):
        files["radar"] = str(out / "radar.png")
        md += ["![Refined EM per question type](radar.png)", ""]
    for r in results:
        md += [f"- **Warning** ({r['model']}): {w}." for w in r.get("warnings", [])]
        md += [f"- {r['model']}: {n}." for n in r.get("notices", [])]
        rot = r.get("rotation")
        if rot and rot.get("incomplete_groups"):
            md.append(f"- {r['model']}: {rot['incomplete_groups']} incomplete rotation group(s) "
                      f"left out of P_k/VRS ({', '.join(rot['incomplete_ids'])}); "
                      f"{rot['groups']} complete groups scored.")
        if rot and "vrs_ci" in rot:
            lo, hi = rot["vrs_ci"]
            md.append(f"- {r['model']}: VRS 95% bootstrap interval over groups "
                      f"[{lo:.1f}, {hi:.1f}].")
    md += [f"- {n}" for n in notes]
    with atomic_path(out / "report.md") as tmp:
        tmp.write_text("\n".join(md) + "\n", encoding="utf-8")
    files["report"] = str(out / "report.md")
    return files


def plot_topdown(scene, panels: Sequence[dict[str, Any]], path: str | os.PathLike,
                 title: str = "") -> None:
    """Write :func:`topdown_figure` of ``scene`` to ``path`` (PNG)."""
    _save(topdown_figure(scene, panels, title), path)


def topdown_figure(scene, panels: Sequence[dict[str, Any]], title: str = "", *,
                   panel_width: float = 4.2) -> Figure:
    """Top-down views of ``scene``, one panel per viewpoint (a matplotlib Figure).

    Each panel: ``pose`` (:class:`hf_real3d.geometry.Pose`), ``label`` (title line) and
    ``highlight`` (object ids drawn in red, e.g. the answer object). The agent is an arrow
    along its facing direction; dashed lines split its four quadrants (front/right/back/
    left, 45 degrees off its heading).
    """
    n = len(panels)
    fig = Figure(figsize=(panel_width * n, panel_width * 1.05))
    axes = fig.subplots(1, n, squeeze=False)
    lo, hi = scene.mesh_bounds()
    for ax, panel in zip(axes[0], panels):
        pose, hl = panel["pose"], set(panel.get("highlight", ()))
        for o in scene.objects:
            if o.label == "floor":
                continue
            color = "#d62728" if o.object_id in hl else ("#bbbbbb" if o.is_structural
                                                          else "#1f77b4")
            ax.add_patch(Polygon(o.footprint_corners(), closed=True, alpha=0.45, color=color))
            if not o.is_structural:
                ax.text(o.center[0], o.center[1], o.label, fontsize=6, ha="center",
                        va="center")
        p, f = pose.position[:2], pose.facing[:2]
        reach = float(np.linalg.norm(hi[:2] - lo[:2]))
        for deg in (45, 135, 225, 315):
            a = np.radians(deg)
            d = np.array([f[0] * np.cos(a) - f[1] * np.sin(a), f[0] * np.sin(a) + f[1] * np.cos(a)])
            ax.plot([p[0], p[0] + d[0] * reach], [p[1], p[1] + d[1] * reach], "k--", lw=0.6,
                    alpha=0.5)
        ax.annotate("", xy=p + f * 0.7, xytext=p,
                    arrowprops={"arrowstyle": "-|>", "color": "#2ca02c", "lw": 2})
        ax.plot(*p, "o", color="#2ca02c")
        ax.set_xlim(lo[0] - 0.2, hi[0] + 0.2)
        ax.set_ylim(lo[1] - 0.2, hi[1] + 0.2)
        ax.set_aspect("equal")
        ax.set_title(panel.get("label", ""), fontsize=8)
        ax.tick_params(labelsize=6)
    legend = [Patch(color="#d62728", alpha=0.45, label="answer object(s) of this view"),
              Patch(color="#1f77b4", alpha=0.45, label="other objects"),
              Patch(color="#bbbbbb", alpha=0.45, label="walls, doors, windows"),
              Line2D([], [], color="#2ca02c", marker="o", lw=2, label="agent (facing)"),
              Line2D([], [], color="k", ls="--", lw=0.6, label="quadrant borders")]
    fig.legend(handles=legend, loc="lower center", ncol=len(legend), fontsize=7,
               frameon=False)
    if title:
        fig.suptitle(title, fontsize=9)
    return fig


def srbench_table(results: dict[str, dict[str, Any]], metric: str = "circular") -> str:
    """Rows = models and baselines; columns = overall and the 4 groups (``metric``)."""
    header = ["Model", "Overall", "Height", "Location", "Orientation", "Multi-Object"]
    rows = []
    for name, r in results.items():
        m = r.get(metric, {})
        rows.append([name, m.get("overall")] + [m.get("per_group", {}).get(g)
                                                for g in ("height", "location", "orientation",
                                                          "multi_object")])
    return markdown_table(header, rows)


def srbench_viewpoint_table(common: dict[str, dict], uncommon: dict[str, dict],
                            metric: str = "circular") -> str:
    """Common vs uncommon viewpoints per model: overall and per group, with the drop."""
    header = ["Model", "Viewpoint", "Overall", "Height", "Location", "Orientation",
              "Multi-Object"]
    rows = []
    for name in common:
        for view, res in (("common", common[name]), ("uncommon", uncommon.get(name, {}))):
            m = res.get(metric, {})
            rows.append([name, view, m.get("overall")] + [
                m.get("per_group", {}).get(g) for g in ("height", "location", "orientation",
                                                        "multi_object")])
    return markdown_table(header, rows)


# --- the demo's report, rendered from its results object ------------------------------------


def mean_std(values: Sequence[float | None], digits: int = 1) -> str:
    """``mean`` for one value, ``mean ± std`` for several, ``-`` for none."""
    v = np.asarray([x for x in values if x is not None], float)
    if not len(v):
        return "-"
    return f"{v.mean():.{digits}f}" if len(v) == 1 else \
        f"{v.mean():.{digits}f} ± {v.std():.{digits}f}"


def _metric(results: Any, model: str, *path: str) -> list[float | None]:
    vals = []
    for seed in results.seeds:
        cur: Any = next(r for r in seed.metrics if r["model"] == model)
        for k in path:
            cur = cur.get(k) if isinstance(cur, dict) else None
        vals.append(cur)
    return vals


def render_demo_report(results: Any) -> str:
    """``report.md`` of :func:`hf_real3d.demo.run_demo` from its
    :class:`~hf_real3d.demo.DemoResults` (a pure function of the results)."""
    cfg, seeds = results.config, results.seeds
    if not seeds:  # --skip_real3dqa: the 3DSRBench part alone
        md = ["# hf_real3d demo: 3DSRBench on the embedded renders", ""]
        md += _srbench_section(results.srbench)
        md += ["", f"Wall time: {results.wall_time_s:.0f} s."]
        return "\n".join(md) + "\n"
    names = [r["model"] for r in seeds[0].metrics]

    def agg(*path: str) -> dict[str, str]:
        return {n: mean_std(_metric(results, n, *path)) for n in names}

    md = ["# hf_real3d demo: the Real-3DQA findings on the embedded benchmark", "",
          f"{cfg['seeds']} seed(s), mean ± std over seeds where more than one. Model: SceneLM "
          f"(Llama, hidden {cfg['hidden_size']}, {cfg['num_layers']} layers, word-level "
          f"vocabulary; 3D input read through the question reader: object labels, egocentric "
          f"direction and colour words) trained {cfg['epochs']:g} epochs (the filter's pair "
          f"{cfg.get('filter_epochs', cfg['epochs']):g}) with batch {cfg['batch_size']} on "
          f"{cfg['train_scenes'] * cfg['questions_per_scene']} synthetic questions "
          f"({cfg['guessable_fraction']:.0%} follow a language prior).", ""]
    roles = {r["model"]: r.get("role", "") for r in seeds[0].metrics}
    md += ["Models: " + "; ".join(f"`{n}` = {roles[n]}" for n in names if roles.get(n)) + ". "
           "Every claim below is measured on models the filter did not use.", ""]
    em_o, emr_o = agg("original", "em"), agg("original", "em_refined")
    em_d, emr_d = agg("debiased", "em"), agg("debiased", "em_refined")
    emr_s = agg("scene_dependent", "em_refined")
    md += ["## Table 2: original vs filtered (synthetic Real-3DQA)", "",
           "| Model | EM (orig) | EM_R (orig) | EM (filtered) | EM_R (filtered) | "
           "EM_R (scene-dependent) |", "|---|---|---|---|---|---|"]
    md += [f"| {n} | {em_o[n]} | {emr_o[n]} | {em_d[n]} | {emr_d[n]} | {emr_s[n]} |"
           for n in names]
    ks = [agg("rotation", f"p_at_least_{k}") for k in range(1, 5)]
    vrs = agg("rotation", "vrs")
    exp4, cons = agg("rotation", "expected_p_at_least_4"), agg("rotation", "consistency")
    md += ["", "## Table 3: viewpoint rotation (P_k, VRS)", "",
           "E[P_4]: P_4 expected if the four viewpoints were answered independently at the "
           "model's per-viewpoint accuracy; consistency = P_4 / E[P_4] (1: independent; "
           "mean of P_k = accuracy over the rotated rows).", "",
           "| Model | P_1 | P_2 | P_3 | P_4 | VRS | E[P_4] | consistency |",
           "|---|---|---|---|---|---|---|---|"]
    md += [f"| {n} | " + " | ".join(k[n] for k in ks) + f" | {vrs[n]} | {exp4[n]} | "
           f"{cons[n]} |" for n in names]
    md += ["", "## Table 4: SFT vs blind vs 3DR-FT on the filtered set", "",
           "| Model | EM_R (filtered) | VRS |", "|---|---|---|"]
    md += [f"| {n} | {emr_d[n]} | {vrs[n]} |" for n in names]
    if any("real_scanqa" in m for m in seeds[0].metrics):
        sq, rsq = agg("scanqa", "em_refined"), agg("real_scanqa", "em_refined")
        ns = [mean_std([next(m for m in s.metrics if m["model"] == names[0])[c]["n"]
                        for s in seeds], 0) for c in ("scanqa", "real_scanqa")]
        md += ["", "## Table 4 (Real-ScanQA): refined EM on ScanQA-format questions", "",
               "The test split's room-level questions in ScanQA's format (no situation; "
               f"{ns[0]} per seed), filtered by the filter's own pair into Real-ScanQA "
               f"({ns[1]} per seed). ScanQA has no agent pose: no rotation.", "",
               "| Model | ScanQA | Real-ScanQA |", "|---|---|---|"]
        md += [f"| {n} | {sq[n]} | {rsq[n]} |" for n in names]
    md += ["", "## Table 6: input ablations (SFT, refined EM on the filtered set)", "",
           "| Input | EM_R |", "|---|---|"]
    md += [f"| {ab} | {mean_std([s.ablations[ab] for s in seeds])} |"
           for ab in seeds[0].ablations]
    md += ["", "## Figure 5: attention from answer tokens to 3D tokens", "",
           "| Model | mean attention on 3D tokens | spread over resamples |", "|---|---|---|"]
    for n in seeds[0].attention:
        md.append(f"| {n} | {mean_std([s.attention[n]['mean'] * 100 for s in seeds])} % | "
                  f"{mean_std([s.attention[n]['std_over_resamples'] * 100 for s in seeds])} % |")
    md += ["", "## Figure 6: questions that flip under 3DR-FT (vs SFT)", "",
           "| Model | right→wrong | of which filtered out | wrong→right | of which kept |",
           "|---|---|---|---|---|"]
    for n in seeds[0].flips:
        md.append(f"| {n} | " + " | ".join(
            mean_std([s.flips[n][k] for s in seeds]) for k in (
                "right_to_wrong", "right_to_wrong_filtered_out", "wrong_to_right",
                "wrong_to_right_kept")) + " |")
    if "sft_more" in names:
        md += ["", "## 3DR-FT: the gain three ways", "",
               "Refined EM, mean ± seed std of the per-seed difference. The paper compares "
               "3DR-FT with an SFT that was one of the filter's models; its filtered set holds "
               "the questions that SFT got wrong, so part of that gain is selection. The "
               "held-out control did not build the data; equal training is the same start, "
               "data, epochs and learning rate without reweighting. The counter-prior subset "
               f"is separate rooms ({cfg.get('counter_prior_scenes', 0)} per seed, every "
               "question counter-prior; n per seed in results.json).", "",
               gains_table([s.metrics for s in seeds]), ""]
        to = {n: mean_std([s.text_only.get(n) for s in seeds]) for n in seeds[0].text_only}
        if to:
            md += ["Refined EM on the filtered set with the 3D input removed (what each model "
                   "still answers from text alone):", "",
                   "| Model | EM_R without 3D |", "|---|---|"]
            md += [f"| {n} | {v} |" for n, v in to.items()]
    md += ["", "## Findings (measured)", ""]
    md += [f"- ({f.key}) {f.statement} ({'holds' if f.holds else 'does NOT hold'})."
           for f in findings([s.metrics for s in seeds])]
    md += diagnosis_section(results)
    md += ["", "![P_k per model](pk.png)", ""]
    if len(radar_types(seeds[0].metrics)[3]) >= 3:
        md += ["![refined EM per type](radar.png)", ""]
    else:
        md += ["(No radar chart: fewer than three question types have 20 questions.)", ""]
    md += ["![a question from four viewpoints](topdown.png)", ""]
    md += _srbench_section(results.srbench)
    md += ["", f"Wall time: {results.wall_time_s:.0f} s."]
    return "\n".join(md) + "\n"


def _srbench_section(sr: dict[str, Any] | None) -> list[str]:
    if sr is None:
        return []
    if sr["results"] is None:
        return ["", "## 3DSRBench", "", f"No balanced question survived in {sr['scenes']} "
                "scene(s); raise --srbench-scenes."]
    res = sr["results"]
    cats = sr["stats"]["categories"]
    title = ("## 3DSRBench (synthetic): baselines, then a trained VLM" if sr.get("models")
             else "## 3DSRBench (synthetic; baselines only — bring your VLM with "
             "`hf-real3d evaluate-3dsrbench --model NAME=PATH`)")
    md = ["", title, "",
          f"Questions per viewpoint kind: {sr['stats']['questions_per_kind']} "
          f"({len(cats)} of 12 types: " + ", ".join(f"{c} {n}" for c, n in sorted(cats.items()))
          + "). The text-only prior answers each type's most frequent answer text on other "
          "scenes (seed 1); random / random++ are exact expectations.", ""]
    for metric, title in (("circular", "CircularEval"), ("flip", "FlipEval"),
                          ("flip_circular", "FlipEval + CircularEval")):
        md += [f"### {title} (common viewpoints)", "", srbench_table(res["synthetic_common"],
                                                                     metric), ""]
    md += ["### Common vs uncommon, CircularEval (Table 4 shape)", "",
           srbench_viewpoint_table(res["synthetic_common"], res["synthetic_uncommon"])]
    if sr.get("models"):
        md += srbench_model_section(sr["models"])
    else:
        md += ["", "These baselines score the same on common and uncommon renders by "
               "construction. `hf-real3d demo --srbench_model` trains a small VLM on "
               "common-viewpoint renders (and one on mixed cameras) and measures the paper's "
               "common → uncommon gap on it, with a blank-image control."]
    return md


def _cell(values: Sequence[float | None]) -> str:
    return mean_std(list(values)) if values and all(v is not None for v in values) else "-"


def srbench_model_section(seeds: Sequence[dict[str, Any]]) -> list[str]:
    """The trained-VLM study of ``hf-real3d demo --srbench_model`` (mean ± std over seeds)."""
    summ = srbench_study_summary(list(seeds))
    met = summ["metrics"]
    n = {c: mean_std(v, 0) for c, v in summ["n"].items()}
    first = seeds[0]
    md = ["", "## 3DSRBench: a VLM trained on the renders, common vs uncommon viewpoints", "",
          f"{len(seeds)} seed(s). Small LLaVA (CLIP vision tower + Llama, from configs) trained "
          f"on {first['train_scenes']} rendered training scenes per seed (generator seed 300 + "
          f"seed; the test set is seed 0): `vlm_common` on common-viewpoint renders only "
          f"({first['train_items']['common']} items with every option order and the "
          f"mirrored image), `vlm_mixed` on the same questions each from the common or the "
          f"uncommon camera at random ({first['train_items']['mixed']} items). Both answer "
          "through `evaluate-3dsrbench --model`. `vlm_common (blank images)` is the common "
          f"model given a grey image. Test questions per viewpoint kind: "
          f"{n[SRBENCH_VIEW_CONFIGS[0]]} (common), {n[SRBENCH_VIEW_CONFIGS[1]]} (uncommon). "
          f"Time per seed: {mean_std([s['time_s'] for s in seeds], 0)} s. "
          f"Target: the option's {first.get('answer', 'letter')}, "
          f"{first.get('epochs', '?')} epochs. Training loss per token (first → last "
          "logged): " + "; ".join(
              f"vlm_{mix} " + ", ".join(f"{v[0]:.2f} → {v[1]:.2f}"
                                        for v in (s["train_loss"][mix] for s in seeds) if v)
              for mix in ("common", "mixed") if all(s.get("train_loss", {}).get(mix)
                                                    for s in seeds)) + ".", "",
          srbench_study_table(seeds)]
    md += ["", "CircularEval per group (common / uncommon):", "",
           "| Model | " + " | ".join(GROUPS) + " |", "|---|" + "---|" * len(GROUPS)]
    for m in summ["models"]:
        md.append(f"| {m} | " + " | ".join(
            f"{_cell(met[m][SRBENCH_VIEW_CONFIGS[0]][f'circular/{g}'])} / "
            f"{_cell(met[m][SRBENCH_VIEW_CONFIGS[1]][f'circular/{g}'])}" for g in GROUPS) + " |")
    md += ["", "Per type, CircularEval and FlipEval of `vlm_common` (common / uncommon), "
           "hardest first on uncommon renders:", "",
           "| Type | group | Circular | Flip |", "|---|---|---|---|"]
    vc = met.get("vlm_common", {})
    cats = [c for c in CATEGORIES if vc and all(
        v is not None for v in vc[SRBENCH_VIEW_CONFIGS[1]][f"circular/{c}"])]
    cats.sort(key=lambda c: float(np.mean(vc[SRBENCH_VIEW_CONFIGS[1]][f"circular/{c}"])))
    for c in cats:
        md.append(f"| {c} | {CATEGORIES[c]} | "
                  + " | ".join(f"{_cell(vc[SRBENCH_VIEW_CONFIGS[0]][f'{k}/{c}'])} / "
                               f"{_cell(vc[SRBENCH_VIEW_CONFIGS[1]][f'{k}/{c}'])}"
                               for k in ("circular", "flip")) + " |")
    md += ["", "Findings (measured, on these models; a difference holds when it exceeds twice "
           "its seed std):", ""]
    md += [f"- {text} ({'holds' if ok else 'does NOT hold'})."
           for text, ok in srbench_study_findings(summ)]
    md += ["", "![common vs uncommon per model](srbench_gap.png)"]
    return md


def srbench_study_table(seeds: Sequence[dict[str, Any]]) -> str:
    """CircularEval, FlipEval and both on common and uncommon renders, and the common −
    uncommon gap, per model of the trained-VLM study (mean ± std over seeds)."""
    summ = srbench_study_summary(list(seeds))
    met, gap = summ["metrics"], summ["gap"]
    lines = ["| Model | Circular (common) | Circular (uncommon) | gap | Flip (common) | "
             "Flip (uncommon) | gap | Both (common) | Both (uncommon) | gap |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for m in summ["models"]:
        cells = []
        for metric in ("circular", "flip", "flip_circular"):
            cells += [_cell(met[m][SRBENCH_VIEW_CONFIGS[0]][metric]),
                      _cell(met[m][SRBENCH_VIEW_CONFIGS[1]][metric]), _cell(gap[m][metric])]
        lines.append(f"| {m} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def plot_srbench_gap(seeds: Sequence[dict[str, Any]], path: str | os.PathLike) -> bool:
    """CircularEval on common vs uncommon renders per model (mean, seed std as error bars)."""
    summ = srbench_study_summary(list(seeds))
    models = summ["models"]
    fig = Figure(figsize=(1.6 + 1.3 * len(models), 3.6))
    ax = fig.subplots()
    x = np.arange(len(models))
    for i, (config, color) in enumerate(zip(SRBENCH_VIEW_CONFIGS, ("#1f77b4", "#ff7f0e"))):
        vals = [[v for v in summ["metrics"][m][config]["circular"] if v is not None]
                for m in models]
        ax.bar(x + (i - 0.5) * 0.38, [np.mean(v) if v else 0 for v in vals], 0.38,
               yerr=[np.std(v) if v else 0 for v in vals], color=color, capsize=3,
               label=config.replace("synthetic_", ""))
    ax.set_xticks(x, [m.replace(" (", "\n(") for m in models], fontsize=7)
    ax.set_ylabel("CircularEval (%)")
    ax.legend(fontsize=7)
    ax.set_title("3DSRBench: common vs uncommon viewpoints", fontsize=9)
    _save(fig, path)
    return True


def write_demo_report(results: Any, out: str | os.PathLike) -> Path:
    """``report.md`` plus ``pk.png`` and ``radar.png`` (first seed) under ``out``."""
    out = Path(out)
    if results.seeds:
        plot_pk(results.seeds[0].metrics, out / "pk.png")
        plot_radar(results.seeds[0].metrics, out / "radar.png")
        plot_weights(results.seeds[0].weights, out / "weights.png")
    if results.srbench and results.srbench.get("models"):
        plot_srbench_gap(results.srbench["models"], out / "srbench_gap.png")
    with atomic_path(out / "report.md") as tmp:
        tmp.write_text(render_demo_report(results), encoding="utf-8")
    return out / "report.md"


def _gain_cell(values: Sequence[float] | None) -> str:
    if not values:
        return "-"
    v = np.asarray(values, float)
    return f"{v.mean():+.1f}" if len(v) == 1 else f"{v.mean():+.1f} ± {v.std():.1f}"


def gains_table(per_seed_metrics: Sequence[Sequence[dict[str, Any]]]) -> str:
    """Each 3DR-FT arm's refined-EM gain three ways (mean ± seed std of the per-seed
    difference): as the paper measures it (on the filtered set, against the SFT that built
    the filter), against the held-out control, against equal training; then against equal
    training on the counter-prior evaluation subset and on the original set."""
    gains = three_gains(per_seed_metrics)
    lines = ["| 3DR-FT arm | equal-training control | as the paper measures (vs the "
             "filter's SFT, filtered) | vs held-out control (filtered) | vs equal training "
             "(filtered) | vs equal training (counter-prior subset) | vs equal training "
             "(original) |", "|---|---|---|---|---|---|---|"]
    for arm, g in gains.items():
        lines.append(f"| {arm} | {g['control']} | " + " | ".join(_gain_cell(g[k]) for k in (
            "paper", "held_out", "equal_training", "counter_prior_equal", "original_equal"))
            + " |")
    return "\n".join(lines)


def summary_gains_table(summary: dict[str, Any]) -> str:
    """:func:`gains_table` from ``results.json``'s ``per_seed`` (the README's copy)."""
    names = {"filtered": "debiased"}
    per_seed = [[{"model": m, **{names.get(sub, sub): vals for sub, vals in subs.items()}}
                 for m, subs in table.items()] for table in summary["per_seed"]]
    return gains_table(per_seed)


def summary_scanqa_table(summary: dict[str, Any]) -> str:
    """The README's Real-ScanQA table (Table 4's columns) from ``results.json``: refined EM
    on the ScanQA-format questions and on Real-ScanQA, mean ± std over seeds."""
    one = len(summary["seeds"]) == 1
    lines = ["| Model | ScanQA (EM_R) | Real-ScanQA (EM_R) |", "|---|---|---|"]
    for model, subsets in summary["mean"].items():
        if "real_scanqa" not in subsets:
            continue
        cells = []
        for sub in ("scanqa", "real_scanqa"):
            mean, std = subsets[sub]["em_refined"], summary["std"][model][sub]["em_refined"]
            cells.append(f"{mean:.1f}" if one else f"{mean:.1f} ± {std:.1f}")
        lines.append(f"| {model} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def demo_summary_table(summary: dict[str, Any]) -> str:
    """The README's table from ``results.json`` (``mean`` and ``std`` over seeds): refined
    EM on the original, filtered, scene-dependent and counter-prior sets (the test split's
    and the separate counter-prior rooms'), P_1, P_4, VRS."""
    cols = [("EM_R (orig)", "original", "em_refined"),
            ("EM_R (filtered)", "filtered", "em_refined"),
            ("EM_R (scene-dep.)", "scene_dependent", "em_refined"),
            ("EM_R (counter-prior)", "counter_prior", "em_refined"),
            ("EM_R (counter-prior rooms)", "counter_prior_eval", "em_refined"),
            ("P_1", "filtered", "p_at_least_1"), ("P_4", "filtered", "p_at_least_4"),
            ("VRS", "filtered", "vrs")]
    lines = ["| Model | " + " | ".join(c for c, _, _ in cols) + " |",
             "|---" * (len(cols) + 1) + "|"]
    one = len(summary["seeds"]) == 1
    for model, subsets in summary["mean"].items():
        cells = []
        for _, sub, key in cols:
            mean = subsets.get(sub, {}).get(key)
            std = summary["std"][model].get(sub, {}).get(key)
            cells.append("-" if mean is None else f"{mean:.1f}" if one
                         else f"{mean:.1f} ± {std:.1f}")
        lines.append(f"| {model} | " + " | ".join(cells) + " |")
    return "\n".join(lines)
