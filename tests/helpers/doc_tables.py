"""The documentation's demo tables, rendered from the recorded results (tests/data): the
tests check that the README and the study quote exactly these. They render what a finished
demo run recorded; no user path needs them, so they live with the tests."""

from typing import Any

from hf_real3d.demo.config import FAMILY_ARMS
from hf_real3d.demo.findings import goal_findings, three_gains, verdict
from hf_real3d.demo.report import gains_table
from hf_real3d.stats import mean_std, seed_stats, summary_text
from hf_real3d.tables import markdown_table

# the weights each arm trains with (its share of the loss per question kind is read from the
# control's weight diagnosis under that mode); the from-blind arm starts elsewhere: none
ARM_MODES = {"3drft_paper": "paper", "3drft_official": "official", "3drft_paper_grad": "paper",
             **FAMILY_ARMS}


def _summary_metrics(summary: dict[str, Any]) -> list[list[dict[str, Any]]]:
    """``results.json``'s ``per_seed`` as per-seed metrics lists (``filtered`` read as the
    metrics' ``debiased``)."""
    names = {"filtered": "debiased"}
    return [[{"model": m, **{names.get(sub, sub): vals for sub, vals in subs.items()}}
             for m, subs in table.items()] for table in summary["per_seed"]]


def summary_gains_table(summary: dict[str, Any]) -> str:
    """:func:`gains_table` from ``results.json``'s ``per_seed`` (the README's copy)."""
    return gains_table(_summary_metrics(summary))


def summary_goal_findings(summary: dict[str, Any]) -> list[str]:
    """The per-arm goal findings from ``results.json``'s summary, each as the report writes
    it (``(goal:ARM) statement (verdict).``): the README's copy."""
    n = len(summary["seeds"])
    return [f"({f.key}) {f.statement} ({verdict(f.holds, n)})."
            for f in goal_findings(_summary_metrics(summary))]


def arms_record(results: Any) -> dict[str, Any]:
    """What :func:`arms_table` needs beyond ``results.json``'s summary, per seed: each
    model's refined EM without its 3D input, its attention to 3D tokens and the control's
    share of the loss per prior kind under each weighting (with SFT's, the token share)."""
    out = []
    for s in results.seeds:
        groups = (s.weights or {}).get("groups", {})
        out.append({"seed": s.seed, "text_only": dict(s.text_only),
                    "attention": {m: a["mean"] for m, a in s.attention.items()},
                    "loss_share": {k: {key[:-len("_loss_share")]: v for key, v in g.items()
                                       if key.endswith("_loss_share")}
                                   | {"sft": g.get("token_share"),
                                      "sft_questions": g.get("questions")}
                                   for k, g in groups.items() if k != "all"}})
    return {"seeds": out}


def arms_table(summary: dict[str, Any], record: dict[str, Any], *,
               kind: str = "counter_prior") -> str:
    """One row per 3DR-FT arm of the summary: against its equal-training control on the
    filtered set, the counter-prior rooms and the original set; its refined EM without 3D
    input; its attention to 3D tokens; how many times SFT's share of the loss its weights
    give the control's ``kind`` answer tokens (questions for ``official``); and the goal's
    verdict (mean ± seed std throughout)."""
    gains = three_gains(_summary_metrics(summary))
    goals = {f.key[len("goal:"):]: f for f in goal_findings(_summary_metrics(summary))}
    seeds = record["seeds"]
    n = len(summary["seeds"])
    rows = []
    for arm, g in gains.items():
        mode = ARM_MODES.get(arm)

        def emphasis(x: dict[str, Any], mode: str | None = mode) -> float | None:
            share = x["loss_share"].get(kind, {})
            if mode is None or share.get(mode) is None:
                return None
            if mode == "official":  # a per-question weight: against the question share
                tot = sum(v.get("sft_questions") or 0 for v in x["loss_share"].values())
                base = share.get("sft_questions", 0) / tot if tot else None
            else:
                base = share.get("sft")
            return share[mode] / base if base else None

        rows.append([arm, g["control"], mode or "-",
                     *(seed_stats(g[k] or []).text(sign=True)
                       for k in ("equal_training", "counter_prior_equal", "original_equal")),
                     mean_std([x["text_only"].get(arm) for x in seeds]),
                     mean_std([None if arm not in x["attention"] else x["attention"][arm] * 100
                               for x in seeds]),
                     mean_std([emphasis(x) for x in seeds], 2),
                     verdict(goals[arm].holds, n)])
    return markdown_table(["arm", "control", "weights", "vs control (filtered)",
                           "vs control (counter-prior rooms)", "vs control (original)",
                           "EM_R without 3D (filtered)", "attention to 3D (%)",
                           f"{kind.replace('_', '-')} loss share (× SFT's)", "goal"], rows)


def _summary_cell(summary: dict[str, Any], model: str, sub: str, key: str) -> str:
    mean = summary["mean"][model].get(sub, {}).get(key)
    std = summary["std"][model].get(sub, {}).get(key)
    return "-" if mean is None else summary_text(mean, std, len(summary["seeds"]))


def summary_scanqa_table(summary: dict[str, Any]) -> str:
    """The README's Real-ScanQA table (Table 4's columns) from ``results.json``: refined EM
    on the ScanQA-format questions and on Real-ScanQA, mean ± std over seeds."""
    return markdown_table(["Model", "ScanQA (EM_R)", "Real-ScanQA (EM_R)"], [
        [model, *(_summary_cell(summary, model, sub, "em_refined")
                  for sub in ("scanqa", "real_scanqa"))]
        for model, subsets in summary["mean"].items() if "real_scanqa" in subsets])


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
    return markdown_table(["Model", *(c for c, _, _ in cols)], [
        [model, *(_summary_cell(summary, model, sub, key) for _, sub, key in cols)]
        for model in summary["mean"]])
