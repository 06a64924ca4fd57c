"""The demo report's sections beyond the paper's tables: the bias pruning, the viewpoint-
consistency arms (each rotation arm against its equal-compute control, the goal, the
transfer test and the viewpoint objective's weights per viewpoint) and the diagnosis of
3DR-FT's weights; each a list of Markdown lines, a pure function of the results.

The rotation tables read ``results.json``'s summary (:func:`hf_real3d.demo.results.
results_summary`: per seed ``{model: {subset: {metric: value}}}``, P_k and VRS under
``filtered``) and, for the transfer test and the weights, the per-seed record of
:func:`rotation_record` (``tests/data/demo_rotation.json`` keeps the study's).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from hf_real3d.stats import mean_std, seed_stats
from hf_real3d.tables import markdown_table
from hf_real3d.training.modes import family

from .config import FAMILY_ARMS
from .findings import (
    pruning_gaps,
    rotation_findings,
    rotation_gains,
    seed_diff,
    verdict,
)
from .stages import PRUNING_MODELS

__all__ = ["diagnosis_section", "pruning_table", "pruning_section", "rotation_record",
           "rotation_table", "transfer_table", "viewpoint_weights_table", "rotation_section"]


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
        md += _weights_lines(w)
    return md + _moved_lines(results)


def _weights_lines(w: list[dict[str, Any]]) -> list[str]:
    """The weights table by prior kind and the emphasis against SFT, over the seeds' weights."""
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
    md = ["Weights 3DR-FT gives the trained control (`sft`, against `blind`) on the train "
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

    return md + ["", "Emphasis against SFT (share of the loss weight / share of answer tokens, "
                 "for `official` of questions; 1 = as SFT): `paper` "
                 + emphasis("paper_loss_share", "tokens") + "; `official` "
                 + emphasis("official_loss_share", "questions")
                 + "".join(f"; `{m}` " + emphasis(f"{m}_loss_share", "tokens") for m in shown)
                 + ". The paper weight is a "
                 "ratio of two surprises, so it is near 1 where the control's text-only pass is "
                 "as surprised as the blind model, and large only where the control guesses "
                 "from text what the blind model does not.", "",
                 "![3DR-FT weights by question kind](weights.png)", ""]


def _moved_lines(results: Any) -> list[str]:
    """Refined EM by prior kind per subset, and the change against the control by question
    type on the filtered set."""
    seeds, md = results.seeds, []
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


def rotation_record(seeds: Sequence[Any]) -> dict[str, Any]:
    """The per-seed parts of a run the rotation tables need beyond the summary (each
    seed's :attr:`~hf_real3d.demo.results.SeedResult.rotation`)."""
    return {"seeds": [{"seed": s.seed, **(s.rotation or {})} for s in seeds]}


def rotation_table(summary: dict[str, Any], record: dict[str, Any] | None = None) -> str:
    """One row per rotation arm: against its control (VRS, P_4, refined EM on the filtered
    set, the counter-prior rooms and the original set), its P_4 / P_1 and P_4 over the
    independence baseline, filtered EM_R against ``sft_more``, scene-dependent EM_R minus
    the blind reference's, the share of the weight the viewpoint objective gives each
    question's worst viewpoint (``sft_rot_dro``, at its control's state) and the goal."""
    n = len(summary["seeds"])
    goals = {f.key.split(":", 1)[1]: f for f in rotation_findings(summary)}
    top = [((s.get("weights") or {}).get("sft_rot") or {}).get("top_share")
           for s in (record or {}).get("seeds", [])]
    rows = []
    for arm, g in rotation_gains(summary).items():
        rows.append([arm, g["control"],
                     *(mean_std(g[k], sign=True) for k in ("vrs", "p4", "filtered",
                                                           "counter_prior_rooms", "original")),
                     mean_std(g["p4_over_p1"], 2), mean_std(g["p4_over_expected"], sign=True),
                     mean_std(g["filtered_vs_sft_more"], sign=True),
                     mean_std(g["scene_minus_blind"], sign=True),
                     mean_std(top, 2) if arm == "sft_rot_dro" else "-",
                     verdict(goals[arm].holds, n)])
    return markdown_table(["arm", "control", "VRS vs control", "P_4 vs control",
                           "EM_R filtered vs control", "counter-prior rooms vs control",
                           "original vs control", "P_4/P_1", "P_4 - E[P_4]",
                           "EM_R filtered vs sft_more", "scene-dep. - blind",
                           "worst viewpoint's weight share", "goal"], rows)


def transfer_table(record: dict[str, Any]) -> str:
    """VRS and P_4 on the filtered set's questions whose answer changes with the turn, of
    the kinds ``sft_rot_transfer`` saw turned and of the others, per model (mean ± seed
    std); the last row is ``sft_rot_transfer`` minus ``sft`` per seed."""
    seeds = record.get("seeds", [])
    if not seeds or "transfer" not in seeds[0]:
        return ""
    models = list(seeds[0]["transfer"])

    def cell(model: str, part: str, key: str) -> list[float | None]:
        return [s["transfer"].get(model, {}).get(part, {}).get(key) for s in seeds]

    rows = [[m, *(mean_std(cell(m, part, key)) for part in ("seen", "unseen")
                  for key in ("vrs", "p_at_least_4"))] for m in models]
    if "sft_rot_transfer" in models and "sft" in models:
        rows.append(["sft_rot_transfer - sft",
                     *(mean_std(seed_diff(cell("sft_rot_transfer", part, key),
                                      cell("sft", part, key)), sign=True)
                       for part in ("seen", "unseen") for key in ("vrs", "p_at_least_4"))])
    groups = [s["transfer"].get("sft", {}).get(p, {}).get("groups") for s in seeds
              for p in ("seen", "unseen")]
    head = ["model", "VRS (seen kinds)", "P_4 (seen kinds)", "VRS (unseen kinds)",
            "P_4 (unseen kinds)"]
    return (markdown_table(head, rows) + f"\n\nQuestions per seed (seen, unseen): "
            f"{', '.join(str(g) for g in groups)}.")


def viewpoint_weights_table(record: dict[str, Any]) -> str:
    """Per viewpoint, the share of the viewpoint objective's weight (SFT gives each
    viewpoint its share of rows) and the mean loss, at the state of ``sft_rot`` and of
    ``sft_rot_dro`` on the augmented train split (mean ± seed std)."""
    seeds = record.get("seeds", [])
    states = [m for m in ("sft_rot", "sft_rot_dro")
              if seeds and m in (seeds[0].get("weights") or {})]
    rows = []
    for m in states:
        views = list(seeds[0]["weights"][m]["viewpoints"])
        for k in views:
            def get(key: str, m: str = m, k: str = k) -> list[float | None]:
                return [s["weights"][m]["viewpoints"].get(k, {}).get(key) for s in seeds]
            rows.append([m, f"{k}°", mean_std(get("row_share"), 3),
                         mean_std(get("weight_share"), 3), mean_std(get("mean_loss"), 3)])
    if not rows:
        return ""
    return markdown_table(["model state", "viewpoint", "row share (SFT's weight share)",
                           "weight share (viewpoint_dro)", "mean answer loss"], rows)


def rotation_section(summary: dict[str, Any], record: dict[str, Any]) -> list[str]:
    """The report's section on the rotation arms (empty when none ran)."""
    if not rotation_gains(summary):
        return []
    n = len(summary["seeds"])
    md = ["", "## Viewpoint consistency: rotation-augmented training", "",
          "Each arm against its equal-compute control: the same optimizer steps on the same "
          "rooms (the augmented split holds each question from its 4 viewpoints, so an "
          "augmented arm sees each row fewer times). Scored on the held-out test rooms' "
          "filtered set. Goal: VRS at least +10 over the control, P_4/P_1 at least 0.85, "
          "filtered EM_R at least +3 over `sft_more`, each beyond twice the seed std.", "",
          rotation_table(summary, record), ""]
    md += [f"- ({f.key}) {f.statement} ({verdict(f.holds, n)})."
           for f in rotation_findings(summary)]
    transfer = transfer_table(record)
    if transfer:
        kinds = record["seeds"][0].get("kinds", {})
        md += ["", "**Transfer across question kinds** (`sft_rot_transfer` sees turned only "
               f"{', '.join(kinds.get('seen', []))}; the questions counted are those whose "
               "answer changes with the turn):", "", transfer]
    weights = viewpoint_weights_table(record)
    if weights:
        md += ["", "**The viewpoint objective's weights per viewpoint** (on the augmented "
               "train split):", "", weights]
    return md
