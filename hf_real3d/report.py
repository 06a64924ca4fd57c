"""Markdown tables and matplotlib plots for evaluation results."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from matplotlib.figure import Figure
from matplotlib.patches import Polygon

from hf_real3d._io import atomic_path, write_json

__all__ = ["markdown_table", "results_table", "plot_pk", "plot_radar", "plot_topdown",
           "write_report", "fmt", "srbench_table", "srbench_viewpoint_table"]


def fmt(v: Any, digits: int = 1) -> str:
    if v is None or (isinstance(v, float) and np.isnan(v)):
        return "-"
    if isinstance(v, float):
        return f"{v:.{digits}f}"
    return str(v)


def markdown_table(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(fmt(c) for c in r) + " |" for r in rows]
    return "\n".join(lines)


def results_table(results: Sequence[dict[str, Any]]) -> str:
    """One row per model: EM/EM_R on the original and de-biased sets, P_1..P_n, VRS."""
    n = max((len(r.get("rotation", {}).get("viewpoints", [])) for r in results), default=0)
    header = ["Model", "EM (orig)", "EM_R (orig)", "EM (de-biased)", "EM_R (de-biased)"]
    header += [f"P_{k}" for k in range(1, n + 1)] + (["VRS"] if n else [])
    rows = []
    for r in results:
        o, d, rot = r.get("original", {}), r.get("debiased", {}), r.get("rotation", {})
        row = [r["model"], o.get("em"), o.get("em_refined"), d.get("em"), d.get("em_refined")]
        if n:
            row += [rot.get(f"p_at_least_{k}") for k in range(1, n + 1)] + [rot.get("vrs")]
        rows.append(row)
    return markdown_table(header, rows)


def _save(fig, path: str | os.PathLike) -> None:
    with atomic_path(path) as tmp:
        fig.savefig(tmp, format="png", dpi=110, bbox_inches="tight")


def plot_pk(results: Sequence[dict[str, Any]], path: str | os.PathLike) -> bool:
    """P_k against k, one line per model. Returns False when no model has rotations."""
    with_rot = [r for r in results if "rotation" in r]
    if not with_rot:
        return False
    fig = Figure(figsize=(5, 3.6))
    ax = fig.subplots()
    for r in with_rot:
        rot = r["rotation"]
        ks = np.arange(1, len(rot["viewpoints"]) + 1)
        ax.plot(ks, [rot[f"p_at_least_{k}"] for k in ks], marker="o",
                label=f"{r['model']} (VRS {rot['vrs']:.1f})")
    ax.set_xlabel("k (correct in at least k viewpoints)")
    ax.set_ylabel("P_k (%)")
    ax.set_xticks(ks)
    ax.set_ylim(0, 100)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    ax.set_title("Viewpoint rotation: P_k")
    _save(fig, path)
    return True


def plot_radar(results: Sequence[dict[str, Any]], path: str | os.PathLike,
               subset: str = "debiased") -> bool:
    """Per-type refined EM on a radar chart, one polygon per model."""
    rs = [r for r in results if r.get(subset, {}).get("per_type")]
    if not rs:
        rs, subset = [r for r in results if r.get("original", {}).get("per_type")], "original"
    if not rs:
        return False
    types = sorted({t for r in rs for t in r[subset]["per_type"]})
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
    ax.set_xticklabels(types, fontsize=8)
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


def load_metrics(path: str | os.PathLike) -> list[dict[str, Any]]:
    return json.loads(Path(path).read_text())


def plot_topdown(scene, panels: Sequence[dict[str, Any]], path: str | os.PathLike,
                 title: str = "") -> None:
    """Top-down views of ``scene``, one panel per viewpoint.

    Each panel: ``pose`` (:class:`hf_real3d.geometry.Pose`), ``label`` (title line) and
    ``highlight`` (object ids drawn in red, e.g. the answer object). The agent is an arrow
    along its facing direction; dashed lines split its four quadrants (front/right/back/
    left, 45 degrees off its heading).
    """
    n = len(panels)
    fig = Figure(figsize=(4.2 * n, 4.4))
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
    if title:
        fig.suptitle(title, fontsize=9)
    _save(fig, path)


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
