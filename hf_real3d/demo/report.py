"""The demo's ``report.md``: its tables, findings, the sections of :mod:`.sections`, the
3DSRBench sections and plots, rendered from a :class:`~hf_real3d.demo.results.DemoResults` (a pure
function of the results); and the README's tables, rendered from ``results.json``."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from matplotlib.figure import Figure

from hf_real3d._io import atomic_path
from hf_real3d.real3dqa.report import plot_pk, plot_radar, radar_types
from hf_real3d.srbench.format import CATEGORIES, GROUPS
from hf_real3d.srbench.report import (
    SRBENCH_VIEW_CONFIGS,
    plot_srbench_gap,
    srbench_study_summary,
    srbench_study_table,
    srbench_table,
    srbench_viewpoint_table,
    study_cell,
)
from hf_real3d.stats import mean_std, seed_stats
from hf_real3d.tables import markdown_table, save_png

from .findings import (
    findings,
    per_seed_values,
    pruning_findings,
    srbench_study_findings,
    three_gains,
    verdict,
)
from .results import results_summary
from .sections import diagnosis_section, pruning_section, rotation_record, rotation_section

__all__ = ["render_demo_report", "write_demo_report", "plot_weights", "gains_table",
           "srbench_model_section"]


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
    save_png(fig, path)
    return True


def render_demo_report(results: Any) -> str:
    """``report.md`` of :func:`hf_real3d.demo.run_demo` from its
    :class:`~hf_real3d.demo.DemoResults` (a pure function of the results): the run, the
    paper's tables, the model probes, the gains, the findings, the other sections, the
    figures, 3DSRBench."""
    seeds = results.seeds
    if not seeds:  # --skip_real3dqa: the 3DSRBench part alone
        md = ["# hf_real3d demo: 3DSRBench on the embedded renders", ""]
    else:
        names = [r["model"] for r in seeds[0].metrics]
        md = _run_section(results.config, seeds, names)
        md += _paper_tables(seeds, names)
        md += _probe_tables(seeds)
        md += _gains_section(results.config, seeds, names)
        md += _findings_section(seeds)
        md += rotation_section(results_summary(results), rotation_record(seeds))
        md += diagnosis_section(results)
        md += _figures(seeds)
    md += _srbench_section(results.srbench)
    md += ["", f"Wall time: {results.wall_time_s:.0f} s."]
    return "\n".join(md) + "\n"


def _agg(seeds: Sequence[Any], names: Sequence[str], *path: str) -> dict[str, str]:
    """Per model, mean ± seed std of one metric (``path`` into each seed's metrics)."""
    return {n: mean_std(per_seed_values([s.metrics for s in seeds], n, *path)) for n in names}


def _run_section(cfg: dict[str, Any], seeds: Sequence[Any], names: Sequence[str]) -> list[str]:
    """The title, the run's settings and the models' roles."""
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
    return md


def _paper_tables(seeds: Sequence[Any], names: Sequence[str]) -> list[str]:
    """Tables 2, 3 and 4 of the paper (and Table 4 on Real-ScanQA when it was scored)."""
    em_o, emr_o = _agg(seeds, names, "original", "em"), _agg(seeds, names, "original",
                                                              "em_refined")
    em_d, emr_d = _agg(seeds, names, "debiased", "em"), _agg(seeds, names, "debiased",
                                                              "em_refined")
    emr_s = _agg(seeds, names, "scene_dependent", "em_refined")
    md = ["## Table 2: original vs filtered (synthetic Real-3DQA)", "",
          markdown_table(["Model", "EM (orig)", "EM_R (orig)", "EM (filtered)",
                          "EM_R (filtered)", "EM_R (scene-dependent)"],
                         [[n, em_o[n], emr_o[n], em_d[n], emr_d[n], emr_s[n]] for n in names])]
    ks = [_agg(seeds, names, "rotation", f"p_at_least_{k}") for k in range(1, 5)]
    vrs = _agg(seeds, names, "rotation", "vrs")
    exp4 = _agg(seeds, names, "rotation", "expected_p_at_least_4")
    cons = _agg(seeds, names, "rotation", "consistency")
    md += ["", "## Table 3: viewpoint rotation (P_k, VRS)", "",
           "E[P_4]: P_4 expected if the four viewpoints were answered independently at the "
           "model's per-viewpoint accuracy; consistency = P_4 / E[P_4] (1: independent; "
           "mean of P_k = accuracy over the rotated rows).", "",
           markdown_table(["Model", "P_1", "P_2", "P_3", "P_4", "VRS", "E[P_4]", "consistency"],
                          [[n, *(k[n] for k in ks), vrs[n], exp4[n], cons[n]] for n in names])]
    md += ["", "## Table 4: SFT vs blind vs 3DR-FT on the filtered set", "",
           markdown_table(["Model", "EM_R (filtered)", "VRS"],
                          [[n, emr_d[n], vrs[n]] for n in names])]
    if any("real_scanqa" in m for m in seeds[0].metrics):
        sq = _agg(seeds, names, "scanqa", "em_refined")
        rsq = _agg(seeds, names, "real_scanqa", "em_refined")
        ns = [mean_std([next(m for m in s.metrics if m["model"] == names[0])[c]["n"]
                        for s in seeds], 0) for c in ("scanqa", "real_scanqa")]
        md += ["", "## Table 4 (Real-ScanQA): refined EM on ScanQA-format questions", "",
               "The test split's room-level questions in ScanQA's format (no situation; "
               f"{ns[0]} per seed), filtered by the filter's own pair into Real-ScanQA "
               f"({ns[1]} per seed). ScanQA has no agent pose: no rotation.", "",
               markdown_table(["Model", "ScanQA", "Real-ScanQA"],
                              [[n, sq[n], rsq[n]] for n in names])]
    return md


def _probe_tables(seeds: Sequence[Any]) -> list[str]:
    """Table 6 (input ablations), Figure 5 (attention to 3D) and Figure 6 (flips)."""
    md = ["", "## Table 6: input ablations (SFT, refined EM on the filtered set)", "",
          markdown_table(["Input", "EM_R"], [[ab, mean_std([s.ablations[ab] for s in seeds])]
                                             for ab in seeds[0].ablations])]

    def attention(n: str, key: str) -> str:
        return mean_std([s.attention[n][key] * 100 for s in seeds]) + " %"

    md += ["", "## Figure 5: attention from answer tokens to 3D tokens", "",
           markdown_table(["Model", "mean attention on 3D tokens", "spread over resamples"],
                          [[n, attention(n, "mean"), attention(n, "std_over_resamples")]
                           for n in seeds[0].attention])]
    flip_keys = ("right_to_wrong", "right_to_wrong_filtered_out", "wrong_to_right",
                 "wrong_to_right_kept")
    md += ["", "## Figure 6: questions that flip under 3DR-FT (vs SFT)", "",
           markdown_table(["Model", "right→wrong", "of which filtered out", "wrong→right",
                           "of which kept"],
                          [[n, *(mean_std([s.flips[n][k] for s in seeds]) for k in flip_keys)]
                           for n in seeds[0].flips])]
    return md


def _gains_section(cfg: dict[str, Any], seeds: Sequence[Any], names: Sequence[str]
                   ) -> list[str]:
    """3DR-FT's gain three ways and what each model answers without 3D (when the run has
    the equal-training control ``sft_more``)."""
    if "sft_more" not in names:
        return []
    md = ["", "## 3DR-FT: the gain three ways", "",
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
               markdown_table(["Model", "EM_R without 3D"], list(to.items()))]
    return md


def _findings_section(seeds: Sequence[Any]) -> list[str]:
    """The findings with their verdicts, then the pruning section."""
    md = ["", "## Findings (measured)", "",
          f"A finding holds when its per-seed difference is beyond twice its seed std over "
          f"at least 2 seeds (and reaches its target); this run has {len(seeds)}.", ""]
    pruning = [getattr(s, "pruning", {}) or {} for s in seeds]
    md += [f"- ({f.key}) {f.statement} ({verdict(f.holds, len(seeds))})."
           for f in [*findings([s.metrics for s in seeds]), *pruning_findings(pruning)]]
    return md + pruning_section(pruning)


def _figures(seeds: Sequence[Any]) -> list[str]:
    """The figures the report shows (the radar only with three question types of 20)."""
    md = ["", "![P_k per model](pk.png)", ""]
    if len(radar_types(seeds[0].metrics)[3]) >= 3:
        md += ["![refined EM per type](radar.png)", ""]
    else:
        md += ["(No radar chart: fewer than three question types have 20 questions.)", ""]
    return md + ["![a question from four viewpoints](topdown.png)", ""]


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
    def both(per: dict[str, list], key: str) -> str:  # common / uncommon
        return f"{study_cell(per[SRBENCH_VIEW_CONFIGS[0]][key])} / " \
               f"{study_cell(per[SRBENCH_VIEW_CONFIGS[1]][key])}"

    md += ["", "CircularEval per group (common / uncommon):", "",
           markdown_table(["Model", *GROUPS], [[m, *(both(met[m], f"circular/{g}")
                                                     for g in GROUPS)]
                                               for m in summ["models"]])]
    vc = met.get("vlm_common", {})
    cats = [c for c in CATEGORIES if vc and all(
        v is not None for v in vc[SRBENCH_VIEW_CONFIGS[1]][f"circular/{c}"])]
    cats.sort(key=lambda c: seed_stats(vc[SRBENCH_VIEW_CONFIGS[1]][f"circular/{c}"]).mean)
    md += ["", "Per type, CircularEval and FlipEval of `vlm_common` (common / uncommon), "
           "hardest first on uncommon renders:", "",
           markdown_table(["Type", "group", "Circular", "Flip"],
                          [[c, CATEGORIES[c], both(vc, f"circular/{c}"), both(vc, f"flip/{c}")]
                           for c in cats])]
    md += ["", "Findings (measured, on these models; a difference holds when it exceeds twice "
           "its seed std over at least 2 seeds):", ""]
    md += [f"- {text} ({verdict(ok, len(seeds))})."
           for text, ok in srbench_study_findings(summ)]
    md += ["", "![common vs uncommon per model](srbench_gap.png)"]
    return md


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


def gains_table(per_seed_metrics: Sequence[Sequence[dict[str, Any]]]) -> str:
    """Each 3DR-FT arm's refined-EM gain three ways (mean ± seed std of the per-seed
    difference): as the paper measures it (on the filtered set, against the SFT that built
    the filter), against the held-out control, against equal training; then against equal
    training on the counter-prior evaluation subset and on the original set."""
    header = ["3DR-FT arm", "equal-training control",
              "as the paper measures (vs the filter's SFT, filtered)",
              "vs held-out control (filtered)", "vs equal training (filtered)",
              "vs equal training (counter-prior subset)", "vs equal training (original)"]
    keys = ("paper", "held_out", "equal_training", "counter_prior_equal", "original_equal")
    return markdown_table(header, [[arm, g["control"],
                                    *(seed_stats(g[k] or []).text(sign=True) for k in keys)]
                                   for arm, g in three_gains(per_seed_metrics).items()])
