"""The demo's ``report.md``: its tables, findings, the weights diagnosis, the 3DSRBench
sections and plots, rendered from a :class:`~hf_real3d.demo.results.DemoResults` (a pure
function of the results); and the README's tables, rendered from ``results.json``."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from matplotlib.figure import Figure

from hf_real3d._io import atomic_path, save_png
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
from hf_real3d.tables import markdown_table
from hf_real3d.training.modes import family

from .config import FAMILY_ARMS
from .findings import (
    findings,
    per_seed_values,
    pruning_findings,
    pruning_gaps,
    srbench_study_findings,
    three_gains,
    verdict,
)
from .results import results_summary
from .stages import PRUNING_MODELS
from .viewpoint import rotation_record, rotation_section

__all__ = ["render_demo_report", "write_demo_report", "diagnosis_section", "plot_weights",
           "pruning_section", "pruning_table", "gains_table", "srbench_model_section"]



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
        shown = [m for m in family() if f"{m}_loss_share" in w[0]["groups"].get("all", {})]
        rows.update({f"share of {m} loss weight (%)": col(f"{m}_loss_share", 100)
                     for m in shown})
        md += ["Weights 3DR-FT gives the trained control (`sft`, against `blind`) on the train "
               "split, before fine-tuning, by prior kind of the question (answer content "
               "tokens; the end-of-answer token keeps weight 1). `paper`: blind log-prob / "
               "the control's text-only log-prob; `official`: 1 / the control's text-only "
               "answer loss. A kind whose share of the loss weight exceeds its share of tokens "
               "is emphasised relative to SFT.", "",
               markdown_table(["", *kinds], [[name, *(v[k] for k in kinds)]
                                             for name, v in rows.items()])]

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
               + emphasis("official_loss_share", "questions")
               + "".join(f"; `{m}` " + emphasis(f"{m}_loss_share", "tokens") for m in shown)
               + ". The paper weight is a "
               "ratio of two surprises, so it is near 1 where the control's text-only pass is "
               "as surprised as the blind model, and large only where the control guesses from "
               "text what the blind model does not.", "",
               "![3DR-FT weights by question kind](weights.png)", ""]
    names = [n for n in ("sft", "sft_more", "3drft_paper", "3drft_official", *FAMILY_ARMS,
                         "blind") if n in seeds[0].by_kind]
    for subset, title in (("original", "original test set"), ("filtered", "filtered set")):
        kinds = sorted({k for s in seeds for k in s.by_kind[names[0]].get(subset, {})})
        if not kinds:
            continue
        n = {k: mean_std([s.by_kind[names[0]][subset].get(k, {}).get("n") for s in seeds], 0)
             for k in kinds}
        md += [f"Refined EM by prior kind, {title} (n per seed in the header):", "",
               markdown_table(["Model", *(f"{k} (n {n[k]})" for k in kinds)],
                              [[m, *(_kind_cell(results, m, subset, k) for k in kinds)]
                               for m in names]), ""]
    types = sorted({k for s in seeds for k in s.by_kind[names[0]].get("filtered_by_type", {})})
    movers = [m for m in ("sft_more", "3drft_paper", "3drft_official", *FAMILY_ARMS)
              if m in seeds[0].by_kind]
    if types and movers:
        md += ["Change against the control by question type, filtered set (refined EM points, "
               "mean ± std over seeds of the per-seed difference):", ""]

        def em(s, m, t):
            return s.by_kind[m]["filtered_by_type"].get(t, {}).get("em_refined")

        rows = []
        for t in types:
            diffs = [mean_std([None if em(s, m, t) is None or em(s, "sft", t) is None
                               else em(s, m, t) - em(s, "sft", t) for s in seeds])
                     for m in movers]
            nn = mean_std([s.by_kind["sft"]["filtered_by_type"].get(t, {}).get("n")
                           for s in seeds], 0)
            rows.append([t, nn, mean_std([em(s, "sft", t) for s in seeds]), *diffs])
        md.append(markdown_table(["Type", "n", "sft", *(f"{m} − sft" for m in movers)], rows))
    return md


def pruning_table(pruning: Sequence[dict[str, Any]]) -> str:
    """The scored models' refined EM on each seed's filtered set and on what bias pruning
    keeps (mean ± std over the seeds that pruned); the README's copy."""
    seeds = [p for p in pruning if p]
    rows = []
    for m in PRUNING_MODELS:
        f = [p["em_refined"][m]["filtered"] for p in seeds]
        k = [p["em_refined"][m]["pruned"] for p in seeds]
        rows.append([m, mean_std(f), mean_std(k),
                     seed_stats([None if b is None else b - a for a, b in zip(f, k)]).text(
                         sign=True)])
    return markdown_table(["Model", "filtered", "pruned", "pruned − filtered"], rows)


def pruning_section(pruning: Sequence[dict[str, Any]]) -> list[str]:
    """Report lines: the stress test and bias pruning of each seed's filtered set, and the
    scored models' refined EM on the filtered and the pruned set."""
    seeds = [p for p in pruning if p]
    if not seeds:
        return []

    def ms(key: str, digits: int = 1) -> str:
        return mean_std([p[key] for p in seeds], digits)

    gaps = {o: pruning_gaps(seeds, "sft", o) for o in ("blind", "sft_no3d")}
    return ["", "## Bias pruning of the filtered set (TsT + IBP)", "",
            f"`hf-real3d stress-test --prune` on each seed's filtered set (random forest over "
            f"the question and situation words, {seeds[0]['folds']}-fold grouped by scene): "
            f"{ms('n', 0)} questions, TsT solvability {ms('solvability')} against "
            f"{ms('majority')} for the majority answer; pruning keeps {ms('kept', 0)} after "
            f"{ms('rounds', 0)} rounds (solvability {ms('final_solvability')}, majority "
            f"{ms('final_majority')}). Refined EM of the scored models:", "",
            pruning_table(seeds), "",
            "Lead of `sft` over its text-only twins: "
            + "; ".join(f"`{o}` {g['filtered'].text(sign=True)} filtered, "
                        f"{g['pruned'].text(sign=True)} pruned" for o, g in gaps.items())
            + "."]


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
        return {n: mean_std(per_seed_values([s.metrics for s in seeds], n, *path))
                for n in names}

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
           markdown_table(["Model", "EM (orig)", "EM_R (orig)", "EM (filtered)",
                           "EM_R (filtered)", "EM_R (scene-dependent)"],
                          [[n, em_o[n], emr_o[n], em_d[n], emr_d[n], emr_s[n]] for n in names])]
    ks = [agg("rotation", f"p_at_least_{k}") for k in range(1, 5)]
    vrs = agg("rotation", "vrs")
    exp4, cons = agg("rotation", "expected_p_at_least_4"), agg("rotation", "consistency")
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
        sq, rsq = agg("scanqa", "em_refined"), agg("real_scanqa", "em_refined")
        ns = [mean_std([next(m for m in s.metrics if m["model"] == names[0])[c]["n"]
                        for s in seeds], 0) for c in ("scanqa", "real_scanqa")]
        md += ["", "## Table 4 (Real-ScanQA): refined EM on ScanQA-format questions", "",
               "The test split's room-level questions in ScanQA's format (no situation; "
               f"{ns[0]} per seed), filtered by the filter's own pair into Real-ScanQA "
               f"({ns[1]} per seed). ScanQA has no agent pose: no rotation.", "",
               markdown_table(["Model", "ScanQA", "Real-ScanQA"],
                              [[n, sq[n], rsq[n]] for n in names])]
    md += ["", "## Table 6: input ablations (SFT, refined EM on the filtered set)", "",
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
                   markdown_table(["Model", "EM_R without 3D"], list(to.items()))]
    md += ["", "## Findings (measured)", "",
           f"A finding holds when its per-seed difference is beyond twice its seed std over "
           f"at least 2 seeds (and reaches its target); this run has {len(seeds)}.", ""]
    pruning = [getattr(s, "pruning", {}) or {} for s in seeds]
    md += [f"- ({f.key}) {f.statement} ({verdict(f.holds, len(seeds))})."
           for f in [*findings([s.metrics for s in seeds]), *pruning_findings(pruning)]]
    md += pruning_section(pruning)
    md += rotation_section(results_summary(results), rotation_record(seeds))
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
