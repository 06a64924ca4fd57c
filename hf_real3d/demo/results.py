"""What a demo run returns: one :class:`SeedResult` per seed, the run's
:class:`DemoResults` (saved as ``results.json``) and its summary over seeds."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from hf_real3d.stats import seed_stats

__all__ = ["SeedResult", "DemoResults", "results_summary", "SUBSETS", "FILTERED_ROTATION"]

SUBSETS = {"original": ("original", ("em", "em_refined", "n")),
           "filtered": ("debiased", ("em", "em_refined", "n")),
           "scene_dependent": ("scene_dependent", ("em", "em_refined", "n")),
           "counter_prior": ("counter_prior", ("em", "em_refined", "n")),
           "counter_prior_eval": ("counter_prior_eval", ("em", "em_refined", "n")),
           "scanqa": ("scanqa", ("em", "em_refined", "n")),
           "real_scanqa": ("real_scanqa", ("em", "em_refined", "n"))}
FILTERED_ROTATION = ("p_at_least_1", "p_at_least_2", "p_at_least_3", "p_at_least_4", "vrs",
                     "expected_p_at_least_4")


@dataclass
class SeedResult:
    """What one seed of the demo measured: every model's metrics, the input ablations, attention to
    3D tokens, flips, the build summary and diagnostics."""
    seed: int
    metrics: list[dict[str, Any]]  # one score_predictions() metrics dict per model
    ablations: dict[str, float]  # SFT refined EM on the filtered set, per input ablation
    attention: dict[str, dict[str, float]]  # attention from answer tokens to 3D tokens
    flips: dict[str, dict[str, int]]  # right<->wrong against SFT
    build: dict[str, Any]  # build_real3dqa() summary
    example_question_id: int  # the question drawn in topdown.png
    root: str  # this seed's folder
    # refined EM per model, {"original"|"filtered": {prior_kind: {n, em_refined}},
    # "filtered_by_type": {question type: {n, em_refined}}}: which question kinds moved
    by_kind: dict[str, dict[str, dict[str, dict[str, float]]]] = field(default_factory=dict)
    # weight_summary() of the 3DR-FT weights of the control on the train split, by prior_kind
    weights: dict[str, Any] = field(default_factory=dict)
    # refined EM on the filtered set with the 3D input removed, per model (how much each
    # still answers from text alone: 3drft_paper_grad may learn to spoil it)
    text_only: dict[str, float] = field(default_factory=dict)
    # the stress test and iterative bias pruning of the filtered set, and the refined EM of
    # the scored models on what pruning keeps (hf_real3d.demo.stages.bias_pruning)
    pruning: dict[str, Any] = field(default_factory=dict)
    # the rotation arms' transfer test and viewpoint weights
    # (hf_real3d.demo.stages.viewpoint_study; {} when no rotation arm ran)
    rotation: dict[str, Any] = field(default_factory=dict)


@dataclass
class DemoResults:
    """A whole demo run: its settings, every seed's :class:`SeedResult`, the 3DSRBench study and the
    wall time; saved as ``results.json``."""
    config: dict[str, Any]
    seeds: list[SeedResult]
    srbench: dict[str, Any] | None = None  # baselines per config + generation stats
    # (+ "models": one record per seed of the trained-VLM study, with --srbench_model)
    wall_time_s: float = 0.0

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> DemoResults:
        """From ``results.json`` (its ``details``) or from ``asdict`` of a DemoResults."""
        data = data.get("details", data)
        return cls(data["config"], [SeedResult(**s) for s in data["seeds"]],
                   data.get("srbench"), data.get("wall_time_s", 0.0))


def results_summary(results: DemoResults) -> dict[str, Any]:
    """``{"seeds", "mean", "std", "per_seed"}``: per seed ``{MODEL: {SUBSET: {METRIC:
    value}}}`` for every model of :data:`MODELS`, subsets ``original``, ``filtered`` (with
    P_k, VRS and the P_4 expected under independence) and ``scene_dependent`` (questions a
    text-only model cannot answer from priors); mean and std over seeds."""
    if not results.seeds:  # --skip_real3dqa
        return {"seeds": [], "mean": {}, "std": {}, "per_seed": []}
    per_seed = []
    for s in results.seeds:
        table: dict[str, dict[str, dict[str, float]]] = {}
        for m in s.metrics:
            row = {sub: {k: m[src][k] for k in keys}
                   for sub, (src, keys) in SUBSETS.items() if src in m}
            if "rotation" in m and "filtered" in row:
                row["filtered"].update({k: m["rotation"][k] for k in FILTERED_ROTATION})
            table[m["model"]] = row
        per_seed.append(table)

    def agg(what: str) -> dict:
        return {model: {sub: {k: getattr(seed_stats([t[model][sub][k] for t in per_seed]), what)
                              for k in per_seed[0][model][sub]}
                        for sub in per_seed[0][model]
                        if all(sub in t[model] for t in per_seed)}
                for model in per_seed[0]}

    return {"seeds": [s.seed for s in results.seeds], "mean": agg("mean"),
            "std": agg("std"), "per_seed": per_seed}
