"""``hf-real3d evaluate``, ``evaluate-real-scanqa`` and ``evaluate-3dsrbench``: scoring."""

from __future__ import annotations

import sys
from dataclasses import dataclass, field

from hf_real3d._fields import help_field
from hf_real3d._runtime import no_gc


@dataclass
class EvaluateOptions:
    """Prediction files (NAME=FILE[,FILE...] per model): JSONL rows {"question_id",
    "prediction", "rotation_deg"?, "log_prob"?}, one row per (question_id, rotation_deg),
    rotation_deg being the degrees the agent turned clockwise (0 when absent); or the
    official Real-3DQA files (JSON lists of {question_id, response_pred, response_gt}, the
    viewpoint read from the file name, e.g. rotation_90.json, or from a 01/02/03 id
    suffix). Which rows give which figure: EM and refined EM over the 0-degree rows of all
    questions (original) and of the de-biased ones (debiased); P_k and VRS over rotation
    groups with every viewpoint. --reproduce_official reproduces the published numbers."""
    dataset: str = help_field("References: a Real-3DQA release folder, a dataset folder built by "
                         "this library, or an SQA3D folder.")
    predictions: list[str] = help_field(
        "One entry per model, NAME=FILE[,FILE...]: JSONL rows {question_id, prediction, "
        "rotation_deg?, log_prob?} or the official per-viewpoint files (response_pred).")
    out: str = help_field("Folder for metrics.json, report.md, pk.png and radar.png.")
    reproduce_official: bool = field(default=False, metadata={
        "help": "Reproduce the official Real-3DQA / LEO numbers exactly (their matching rule: "
                "an empty prediction is refined-correct, the first substring hit decides). "
                "Alias: --leo_compatible.",
        "aliases": ["--leo_compatible", "--leo-compatible"]})
    allow_missing: bool = help_field("Count missing predictions as wrong; without it a figure "
                                "whose rows are not all predicted is not computed (a note "
                                "says which).", default=False)
    pruned: bool = help_field("Score on the questions iterative bias pruning kept (configs "
                              "real3dqa_tst and rotations_tst of hf-real3d stress-test --prune) "
                              "in place of real3dqa and rotations.", default=False)
    exclude_flagged: bool = help_field("Leave out of P_k and VRS the rotation groups in which "
                                       "hf-real3d check-rotations finds a defect (a folder's "
                                       "rotation_checks config; a release folder is checked on "
                                       "the fly by the text rules).", default=False)
    exclude_needs_scene: bool = help_field("Also leave out of P_k and VRS the groups with an "
                                           "item whose text alone cannot decide (verdict "
                                           "needs_scene), besides those --exclude-flagged "
                                           "leaves out.", default=False)


def cmd_evaluate(o: EvaluateOptions) -> None:
    # each command imports its own library modules: a command pays only for what it uses
    from hf_real3d.real3dqa import evaluate as r3_eval

    # a one-shot command that builds millions of acyclic objects (parsed prediction rows):
    # the cyclic collector would rescan them again and again
    with no_gc(freeze=True):
        report = r3_eval.evaluate_files(o.dataset, o.predictions, o.out,
                                        leo_compatible=o.reproduce_official,
                                        allow_missing=o.allow_missing, pruned=o.pruned,
                                        exclude_flagged=o.exclude_flagged,
                                        exclude_needs_scene=o.exclude_needs_scene)
    print(report.table)
    for r in report.results:
        for w in r.get("warnings", []):
            print(f"hf-real3d evaluate: warning: {r['model']}: {w}", file=sys.stderr)
        for n in r.get("notices", []):
            print(f"hf-real3d evaluate: note: {r['model']}: {n}", file=sys.stderr)
    print("wrote " + ", ".join(report.files.values()))


@dataclass
class EvaluateRealScanQAOptions:
    """Scores predictions on Real-ScanQA: EM / refined EM and ScanQA's captioning metrics
    (no rotation: ScanQA has no agent pose)."""
    dataset: str = help_field("Folder built by build-real-scanqa (or a ScanQA JSON file).")
    predictions: list[str] = help_field("One entry per model, NAME=FILE[,FILE...].")
    out: str = help_field("Folder for metrics.json and report.md.")
    reproduce_official: bool = help_field("LEO's matching rule, to reproduce published "
                                          "numbers.", default=False)
    no_captions: bool = help_field("Skip the captioning metrics (they need Java).",
                                   default=False)


def cmd_evaluate_real_scanqa(o: EvaluateRealScanQAOptions) -> None:
    # each command imports its own library modules: a command pays only for what it uses
    from hf_real3d.real_scanqa import evaluate_real_scanqa

    res = evaluate_real_scanqa(o.dataset, o.predictions, o.out,
                               leo_compatible=o.reproduce_official, captions=not o.no_captions)
    for r in res:
        print(r["model"], {c: round(r[c]["em_refined"], 1) for c in r if c != "model"})
    print(f"wrote {o.out}/metrics.json, {o.out}/report.md")


@dataclass
class Evaluate3DSRBenchOptions:
    """Scores 3DSRBench answers: vanilla, CircularEval, FlipEval and flip+circular accuracy per
    category, beside chance, always-A and a text-only baseline computed on the scored set."""
    out: str = help_field("Folder for metrics.json and report.md.")
    dataset: str | None = help_field(
        "Folder built by build-3dsrbench. Without it, each --predictions file is scored on "
        "the items it carries (VLMEvalKit's prediction or result table, lmms-eval's samples).",
        default=None)
    rule: str = help_field(
        "Whose scorer the figures reproduce: vlmevalkit (VLMEvalKit's exact matching and its "
        "four settings; the default), authors (the 3DSRBench authors' results script, the "
        "paper's tables, on VLMEvalKit's hits), lmms_eval (lmms-eval's 3dsrbench tasks). A "
        "VLMEvalKit result table's hit column (vlmevalkit, authors) and lmms-eval's sample "
        "scores (lmms_eval) are taken as given.", default="vlmevalkit",
        choices=("vlmevalkit", "authors", "lmms_eval"))
    configs: list[str] = help_field("Configs to score.",
                               default_factory=lambda: ["synthetic_common", "synthetic_uncommon"])
    predictions: list[str] = help_field(
        "One entry per model, NAME=FILE[,FILE...]: JSONL rows {config?, qid, prediction}, a "
        "VLMEvalKit table (.xlsx/.tsv/.csv) or lmms-eval --log_samples JSONL.",
        default_factory=list)
    model: list[str] = help_field("Local image-text-to-text model folders, NAME=PATH.",
                             default_factory=list)
    text_only: str = help_field(
        "The text-only baseline: the stress test's diagnostic (rf, logreg, lm) trained by "
        "grouped k-fold on the scored set's own questions, each answered by the model that "
        "did not see its fold; 'none' for no such row.", default="rf",
        choices=("rf", "logreg", "lm", "none"))
    text_only_folds: int = help_field("Folds of the text-only baseline.", default=5)
    seed: int = help_field("Seed of the text-only baseline's folds and diagnostic.", default=0)


def cmd_evaluate_3dsrbench(o: Evaluate3DSRBenchOptions) -> None:
    if o.text_only != "none" and o.text_only_folds < 2:
        raise ValueError(f"--text_only_folds {o.text_only_folds}: expected at least 2 (the "
                         "text-only baseline answers each fold with a model of the others)")
    # each command imports its own library modules: a command pays only for what it uses
    from hf_real3d.debias.baseline import text_only_answers
    from hf_real3d.srbench import evaluate as srb_eval

    def text_only(rows):
        try:
            return text_only_answers(rows, diagnostic=o.text_only, folds=o.text_only_folds,
                                     seed=o.seed)
        except ValueError as err:
            raise ValueError(f"{err} (--text_only_folds)") from None

    md = srb_eval.evaluate_dataset(
        o.dataset, o.out, configs=o.configs, predictions=o.predictions, models=o.model,
        rule=o.rule, text_only=None if o.text_only == "none" else text_only,
        text_only_name=f"text-only (stress test, {o.text_only})")
    print(md)
