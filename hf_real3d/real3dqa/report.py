"""Markdown tables and matplotlib plots for evaluation results."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from matplotlib.figure import Figure

from hf_real3d._io import atomic_path, write_json
from hf_real3d.tables import markdown_table, save_png

__all__ = ["results_table", "plot_pk", "plot_radar", "radar_types", "write_report"]


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
    save_png(fig, path)
    return True


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
    save_png(fig, path)
    return True


LEGEND = (
    "Legend: **EM** = the normalised answer equals a reference; **EM_R** (refined EM) = "
    "equal, or one contains the other with spaces removed; **orig** = every question at 0 "
    "degrees, **de-biased** = those the filter kept; **P_k** = % of rotation groups (one "
    "question from each viewpoint) with at least k viewpoints right (refined EM); **VRS** = "
    "the mean of P_k; **E[P_4] (indep.)** = the P_4 expected if the viewpoints were answered "
    "independently at the model's accuracy on each; **consistency** = P_4 / E[P_4] (1: no "
    "more consistent than independent answers), with a bootstrap interval over groups.")


def write_report(results: Sequence[dict[str, Any]], out: str | os.PathLike,
                 notes: Sequence[str] = ()) -> dict[str, str]:
    """``metrics.json``, ``report.md``, ``pk.png`` and ``radar.png`` under ``out``."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    write_json(out / "metrics.json", list(results), indent=2)
    files = {"metrics": str(out / "metrics.json")}
    md = ["# Evaluation report", "", results_table(results), "", LEGEND, ""]
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
        if rot and "answer_changes" in rot:
            ch = rot["answer_changes"]
            md.append(f"- {r['model']}: on the {ch['groups']} of {rot['groups']} groups whose "
                      f"answer changes with the turn, VRS {ch['vrs']:.1f} (the others have one "
                      "answer at every viewpoint: a model that ignores the turn is consistent "
                      "on them).")
    md += [f"- {n}" for n in notes]
    with atomic_path(out / "report.md") as tmp:
        tmp.write_text("\n".join(md) + "\n", encoding="utf-8")
    files["report"] = str(out / "report.md")
    return files
