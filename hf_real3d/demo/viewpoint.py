"""The viewpoint-consistency arms in the demo's report: each rotation arm against its
equal-compute control (same optimizer steps, same rooms), the goal, the transfer test and
the viewpoint objective's weights per viewpoint.

Every function reads ``results.json``'s summary (:func:`hf_real3d.demo.results.
results_summary`: per seed ``{model: {subset: {metric: value}}}``, P_k and VRS under
``filtered``) and, for the transfer test and the weights, the per-seed record of
:func:`rotation_record` (``tests/data/demo_rotation.json`` keeps the study's).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from hf_real3d.stats import mean_std, seed_stats
from hf_real3d.tables import markdown_table

from .config import ROTATION_CONTROLS
from .findings import Finding, verdict

__all__ = ["GOAL", "rotation_record", "rotation_gains", "rotation_findings",
           "rotation_table", "transfer_table", "viewpoint_weights_table", "rotation_section"]

# the goal for a rotation arm, against its equal-compute control: VRS at least +10,
# P_4 / P_1 at least 0.85, refined EM on the filtered set at least +3 over sft_more; each
# beyond twice the seed std
GOAL = {"vrs": 10.0, "p4_over_p1": 0.85, "filtered_vs_sft_more": 3.0}


def rotation_record(seeds: Sequence[Any]) -> dict[str, Any]:
    """The per-seed parts of a run the rotation tables need beyond the summary (each
    seed's :attr:`~hf_real3d.demo.results.SeedResult.rotation`)."""
    return {"seeds": [{"seed": s.seed, **(s.rotation or {})} for s in seeds]}


def _values(summary: dict[str, Any], model: str, sub: str, key: str) -> list[float | None]:
    out = []
    for table in summary["per_seed"]:
        v = table.get(model, {}).get(sub, {}).get(key)
        out.append(None if v is None else float(v))
    return out


def _diff(a: list[float | None], b: list[float | None]) -> list[float | None]:
    return [None if x is None or y is None else x - y for x, y in zip(a, b)]


def rotation_gains(summary: dict[str, Any]) -> dict[str, dict[str, list[float | None]]]:
    """Per rotation arm of the run and per seed: VRS, P_4, refined EM (filtered, counter-
    prior rooms, original) against its control; P_4 / P_1 and P_4 - E[P_4] (the P_4 its
    per-viewpoint accuracy predicts for independent viewpoints) of the arm itself; refined
    EM on the filtered set against ``sft_more``; and the arm minus the blind reference on
    scene-dependent questions."""
    names = set(summary["per_seed"][0]) if summary["per_seed"] else set()
    out = {}
    for arm, control in ROTATION_CONTROLS.items():
        if arm not in names or control not in names:
            continue

        def v(model: str, sub: str, key: str) -> list[float | None]:
            return _values(summary, model, sub, key)

        p1, p4 = v(arm, "filtered", "p_at_least_1"), v(arm, "filtered", "p_at_least_4")
        out[arm] = {
            "control": control,
            "vrs": _diff(v(arm, "filtered", "vrs"), v(control, "filtered", "vrs")),
            "p4": _diff(p4, v(control, "filtered", "p_at_least_4")),
            "p4_over_p1": [None if a is None or not b else a / b for a, b in zip(p4, p1)],
            "p4_over_expected": _diff(p4, v(arm, "filtered", "expected_p_at_least_4")),
            "filtered": _diff(v(arm, "filtered", "em_refined"),
                              v(control, "filtered", "em_refined")),
            "filtered_vs_sft_more": _diff(v(arm, "filtered", "em_refined"),
                                          v("sft_more", "filtered", "em_refined"))
            if "sft_more" in names else [None] * len(p1),
            "counter_prior_rooms": _diff(v(arm, "counter_prior_eval", "em_refined"),
                                         v(control, "counter_prior_eval", "em_refined")),
            "original": _diff(v(arm, "original", "em_refined"),
                              v(control, "original", "em_refined")),
            "scene_minus_blind": _diff(v(arm, "scene_dependent", "em_refined"),
                                       v("blind", "scene_dependent", "em_refined")),
        }
    return out


def rotation_findings(summary: dict[str, Any]) -> list[Finding]:
    """The goal per rotation arm (:data:`GOAL`), each part beyond twice the seed std."""
    out = []
    for arm, g in rotation_gains(summary).items():
        vrs, ratio, em = (seed_stats(g[k]) for k in ("vrs", "p4_over_p1",
                                                      "filtered_vs_sft_more"))
        holds = vrs.holds(GOAL["vrs"]) and ratio.holds(GOAL["p4_over_p1"]) and \
            em.holds(GOAL["filtered_vs_sft_more"])
        out.append(Finding(
            f"rotation:{arm}", f"`{arm}` against its equal-compute control `{g['control']}`: "
            f"VRS {vrs.text(sign=True)} (target >= +{GOAL['vrs']:g}), P_4/P_1 "
            f"{ratio.text(2)} (target >= {GOAL['p4_over_p1']}), filtered EM_R against "
            f"`sft_more` {em.text(sign=True)} (target >= +{GOAL['filtered_vs_sft_more']:g}); "
            "each beyond twice the seed std", holds))
    return out


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
                     *(mean_std(_diff(cell("sft_rot_transfer", part, key),
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
