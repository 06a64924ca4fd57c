"""``hf-real3d demo``: the Real-3DQA paper's story end to end on the embedded benchmark.

Orchestration only: generate (a dataset folder) -> train SceneLM (SFT) and its blind twin
from it -> predict -> filter into a synthetic Real-3DQA -> rotate (4 viewpoints) ->
evaluate -> 3DR-FT (paper, with the blind model as its explicit stage 1, and official) ->
evaluate again -> input ablations, attention to 3D, right-to-wrong flips -> a small
synthetic 3DSRBench with baselines. Each seed returns a :class:`SeedResult`; the run is a
:class:`DemoResults` saved as ``results.json``, from which :mod:`hf_real3d.report` renders
``report.md`` and the plots. ``--seeds N`` repeats the pipeline (mean +- std).
"""

from __future__ import annotations

import dataclasses
import json
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from hf_real3d._fields import help_field
from hf_real3d.analysis import ARM_CONTROLS, accuracy_by, flips
from hf_real3d.hub import load_local
from hf_real3d.modeling import SceneLM, attention_to_3d, predict_rows
from hf_real3d.real3dqa import build_real3dqa, load_references, score_predictions
from hf_real3d.real3dqa.draw import draw_question
from hf_real3d.real_scanqa import build_real_scanqa, score_real_scanqa
from hf_real3d.report import write_demo_report
from hf_real3d.scanqa import read_scanqa
from hf_real3d.srbench import baselines, build_srbench, expand, load_rows
from hf_real3d.synth import SynthConfig, build_benchmark
from hf_real3d.synth.srbench_gen import SRBenchConfig, generate_srbench
from hf_real3d.training import ReweightedConfig
from hf_real3d.training.data import load_scene_bank, load_split
from hf_real3d.training.diagnostics import token_weights, weight_summary
from hf_real3d.training.recipe import (
    ScriptArguments,
    ensure_blind_model,
    load_training_data,
    train_model,
)

__all__ = ["DemoConfig", "SeedResult", "DemoResults", "run_seed", "run_demo", "MODELS",
           "results_summary"]

# every scored model; the filter's pair builds the filtered set and is scored too (marked)
MODELS = ("filter_full", "filter_blind", "sft", "blind", "3drft_paper", "3drft_official",
          "sft_more", "3drft_paper_grad", "3drft_from_blind", "sft_from_blind", "sft_no3d")
ROLES = {"filter_full": "filter's full model (builds the filtered set)",
         "filter_blind": "filter's blind model (builds the filtered set)",
         "sft": "control: SFT not used by the filter", "blind": "3DR-FT's blind reference",
         "3drft_paper": "3DR-FT, paper variant", "3drft_official": "3DR-FT, official variant",
         "sft_more": "the control trained as long as 3DR-FT, without reweighting",
         "3drft_paper_grad": "3DR-FT, paper weights with gradient through the text-only "
                             "pass (Appendix E's reading), fine-tuning the control",
         "3drft_from_blind": "3DR-FT (paper) starting from the blind model's weights (§4.2)",
         "sft_from_blind": "SFT starting from the blind model's weights (3drft_from_blind's "
                           "control)",
         "sft_no3d": "the control without its 3D input"}
COUNTER_PRIOR_SEED_OFFSET = 2000  # the counter-prior evaluation rooms
FILTER_SEED_OFFSET = 1000  # the filter's pair: other initial weights and data order
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
class DemoConfig:
    """Sizes and settings of the demo (its defaults are the README's figures)."""

    out: str = help_field("Output folder (report.md, results.json, plots, seed*/).",
                          default="outputs/demo")
    seeds: int = help_field("Repeat with seeds 0..N-1 and report mean ± std.", default=1)
    train_scenes: int = help_field("Synthetic rooms in the train split.", default=60)
    val_scenes: int = help_field("Synthetic rooms in the val split.", default=6)
    test_scenes: int = help_field("Synthetic rooms in the test split.", default=20)
    questions_per_scene: int = help_field("Questions per room (every split).", default=60)
    guessable_fraction: float = help_field("Share of questions that follow a language prior.",
                                           default=0.5)
    counter_prior_rate: float = help_field(
        "Share of usual-colour objects given another colour (counter-prior questions).",
        default=0.3)
    counter_prior_fraction: float = help_field("Share of questions that are counter-prior.",
                                               default=0.1)
    epochs: float = help_field("Training epochs of the scored models.", default=12.0)
    drft_from_sft: bool = help_field(
        "3DR-FT fine-tunes the trained control SFT (as the paper fine-tunes a trained 3D-LLM) "
        "for drft_epochs; `sft_more` gets the same extra epochs without reweighting. False: "
        "3DR-FT trains from scratch for `epochs`.", default=True)
    drft_epochs: float = help_field("3DR-FT epochs when it fine-tunes the control.",
                                    default=2.0)
    drft_learning_rate: float = help_field("3DR-FT peak learning rate when it fine-tunes the "
                                           "control.", default=3e-4)
    filter_epochs: float = help_field(
        "Training epochs of the filter's own (full, blind) pair (a smaller pair than the "
        "scored models: the filter needs only its blind model's answers).", default=4.0)
    batch_size: int = help_field("Training batch size.", default=16)
    learning_rate: float = help_field("Peak learning rate (cosine schedule).", default=1e-3)
    hidden_size: int = help_field("SceneLM language model width.", default=128)
    num_layers: int = help_field("SceneLM language model layers.", default=2)
    srbench_scenes: int = help_field("Rendered scenes of the synthetic 3DSRBench (0: skip).",
                                     default=10)
    srbench_views: int = help_field("Camera pairs (common + uncommon) per 3DSRBench scene.",
                                    default=3)
    srbench_questions_per_scene: int = help_field("3DSRBench questions tried per scene.",
                                                  default=18)
    counter_prior_scenes: int = help_field(
        "Rooms of the separate counter-prior evaluation subset (other rooms, seed + 2000, the "
        "same generator settings, every question counter-prior: ~20 per room).", default=20)
    srbench_model: bool = help_field(
        "Also train a small VLM on synthetic 3DSRBench renders per seed (common viewpoints "
        "only, and common + uncommon mixed) and score it, with a blank-image control, on the "
        "demo's 3DSRBench (the paper's viewpoint finding; several minutes per seed).",
        default=False)
    skip_real3dqa: bool = help_field(
        "Skip the Real-3DQA part (with --srbench_model: the 3DSRBench study alone).",
        default=False)
    srbench_train_scenes: int = help_field(
        "Rendered training scenes of the 3DSRBench VLM (generator seed 300 + seed; the test "
        "set is seed 0).", default=40)
    srbench_vlm_epochs: float = help_field("Training epochs of the 3DSRBench VLM.",
                                           default=20.0)
    progress: bool = help_field("Show progress bars.", default=True)

    def synth_config(self, seed: int) -> SynthConfig:
        return SynthConfig(
            seed=seed, guessable_fraction=self.guessable_fraction,
            counter_prior_rate=self.counter_prior_rate,
            counter_prior_fraction=self.counter_prior_fraction,
            scenes={"train": self.train_scenes, "val": self.val_scenes,
                    "test": self.test_scenes},
            questions_per_scene={s: self.questions_per_scene for s in ("train", "val", "test")})


@dataclass
class SeedResult:
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


@dataclass
class DemoResults:
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


def _log(msg: str) -> None:
    print(f"[demo {time.strftime('%H:%M:%S')}] {msg}", flush=True)


def run_seed(cfg: DemoConfig, seed: int) -> SeedResult:
    """One seed: the filter's own (full, blind) pair (seed + 1000) builds the filtered set;
    the scored models (SFT control, blind reference, 3DR-FT) are trained apart with
    ``seed`` and never used by the filter."""
    root = Path(cfg.out) / f"seed{seed}"
    data_dir = root / "synth"
    _log(f"seed {seed}: generating the synthetic SQA3D-style benchmark (a dataset folder)")
    build_benchmark(data_dir, cfg.synth_config(seed), progress=cfg.progress)
    sargs = ScriptArguments(dataset_name=str(data_dir), hidden_size=cfg.hidden_size,
                            num_layers=cfg.num_layers)

    def targs(name: str, reweighting: str, model_seed: int = seed, epochs: float = cfg.epochs,
              lr: float = cfg.learning_rate) -> ReweightedConfig:
        return ReweightedConfig(
            output_dir=str(root / "models" / name), reweighting=reweighting,
            num_train_epochs=epochs, per_device_train_batch_size=cfg.batch_size,
            learning_rate=lr, lr_scheduler_type="cosine", warmup_steps=0.05,
            logging_steps=50, save_strategy="no", eval_strategy="no", seed=model_seed,
            use_cpu=True, disable_tqdm=not cfg.progress, dataloader_num_workers=0,
            report_to="none")

    data = load_training_data(sargs)
    rows = list(load_split(str(data_dir), "sqa3d", "test"))
    preds_dir = root / "predictions"
    preds_dir.mkdir(parents=True, exist_ok=True)

    def predict(model, some_rows, ablation: str = "none") -> pd.DataFrame:
        return pd.DataFrame(predict_rows(model, data.tokenizer, data.bank, some_rows,
                                         ablation=ablation, progress=False))

    fseed = seed + FILTER_SEED_OFFSET
    fe = cfg.filter_epochs
    models = {"filter_full": train_model(sargs, targs("filter_full", "none", fseed, fe),
                                         data=data, blind=False).model,
              "filter_blind": train_model(sargs, targs("filter_blind", "none", fseed, fe),
                                          data=data, blind=True).model}
    _log("the filter's pair predicts the test split; filtering and rotating")
    orig = {name: predict(models[name], rows) for name in models}
    r3 = root / "real3dqa"
    summary = build_real3dqa(data_dir / "sqa3d", data_dir / "scans", r3,
                             pairs=[("filter", orig["filter_full"], orig["filter_blind"])],
                             progress=False)
    refs = load_references(r3)
    rot_rows = list(load_local(r3, "rotations"))
    _log("the scored models (not used by the filter)")
    models["sft"] = train_model(sargs, targs("sft", "none"), data=data, blind=False).model
    models["blind"] = train_model(sargs, targs("blind", "none"), data=data, blind=True).model
    blind_path = ensure_blind_model(
        dataclasses.replace(sargs, blind_model_path=str(root / "models" / "blind")),
        targs("3drft_paper", "paper"), data)
    if cfg.drft_from_sft:  # fine-tune the trained control; sft_more: the same, unweighted
        start = dataclasses.replace(sargs, model_name_or_path=str(root / "models" / "sft"),
                                    blind_model_path=blind_path)
        for name, reweighting in (("3drft_paper", "paper"), ("3drft_official", "official"),
                                  ("sft_more", "none")):
            models[name] = train_model(start, targs(name, reweighting, epochs=cfg.drft_epochs,
                                                    lr=cfg.drft_learning_rate),
                                       data=data, blind=False).model
        grad = targs("3drft_paper_grad", "paper", epochs=cfg.drft_epochs,
                     lr=cfg.drft_learning_rate)
        grad.weight_grad = True
        models["3drft_paper_grad"] = train_model(start, grad, data=data, blind=False).model
    else:
        for name, reweighting in (("3drft_paper", "paper"), ("3drft_official", "official")):
            models[name] = train_model(dataclasses.replace(sargs, blind_model_path=blind_path),
                                       targs(name, reweighting), data=data, blind=False).model
        models["sft_more"] = models["sft"]  # no extra training to match
        models["3drft_paper_grad"] = models["3drft_paper"]
    # §4.2 read literally: 3DR-FT starts from the blind fine-tuned model; its control is the
    # same start trained without reweighting (same data, epochs and learning rate)
    from_blind = dataclasses.replace(sargs, blind_model_path=blind_path)
    for name, reweighting in (("3drft_from_blind", "paper"), ("sft_from_blind", "none")):
        t = targs(name, reweighting)
        t.init_from_blind = blind_path
        models[name] = train_model(from_blind, t, data=data, blind=False).model
    cp_rows, cp_bank = _counter_prior_subset(cfg, seed, root, data)
    sq_rows, sq_sets = _real_scanqa(root, data_dir, rows,
                                    lambda name, some: predict(models[name], some))
    scene_ids = {int(r["question_id"]) for r in rows if not r["guessable"]}
    counter_ids = {int(r["question_id"]) for r in rows if r["prior_kind"] == "counter_prior"}
    orig_refs = refs[refs.rotation_deg == 0]
    scene_refs = orig_refs[orig_refs.question_id.isin(scene_ids)].assign(
        in_debiased=False, in_rotation=False)
    metrics, per_model = [], {}
    for name in MODELS:
        _log(f"evaluating {name}")
        model, ablation = (models["sft"], "no_3d") if name == "sft_no3d" else \
            (models[name], "none")
        o = orig.get(name) if ablation == "none" else None
        o = predict(model, rows, ablation) if o is None else o
        rot = predict(model, rot_rows, ablation)
        both = pd.concat([o, rot[rot.rotation_deg != 0]], ignore_index=True)
        both.to_json(preds_dir / f"{name}.jsonl", orient="records", lines=True)
        per_model[name] = both
        m = score_predictions(refs, both, name=name, allow_missing=True).metrics
        m["role"] = ROLES[name]
        m["scene_dependent"] = score_predictions(
            scene_refs, o[o.question_id.isin(scene_ids)], name=name,
            allow_missing=True).metrics["original"]
        if counter_ids:  # the language prior points to another answer here
            m["counter_prior"] = score_predictions(
                scene_refs[scene_refs.question_id.isin(counter_ids)],
                o[o.question_id.isin(counter_ids)], name=name,
                allow_missing=True).metrics["original"]
        if sq_rows:  # Real-ScanQA: the room-level test questions, filtered by the filter's pair
            sq = predict(model, sq_rows, ablation).assign(
                question_id=[r["scanqa_id"] for r in sq_rows])
            for config, sq_refs in sq_sets.items():
                sc = score_real_scanqa(sq_refs,
                                       sq[sq.question_id.isin(set(sq_refs.question_id))],
                                       name=name, captions=False)
                m[config] = {k: sc[k] for k in ("em", "em_refined", "n")}
        if cp_rows:  # the separate counter-prior evaluation rooms
            cp = pd.DataFrame(predict_rows(model, data.tokenizer, cp_bank, cp_rows,
                                           ablation=ablation, progress=False))
            m["counter_prior_eval"] = score_predictions(
                _rows_refs(cp_rows), cp, name=name, allow_missing=True).metrics["original"]
        metrics.append(m)
    _log("input ablations, attention to 3D, flips")
    kept = {int(q) for q in refs.loc[refs.in_debiased, "question_id"]}
    prior_kind = {int(r["question_id"]): str(r["prior_kind"]) for r in rows}
    qtype = {int(r["question_id"]): str(r["kind"]) for r in rows}
    by_kind = {name: {"original": accuracy_by(refs, per_model[name], prior_kind),
                      "filtered": accuracy_by(refs, per_model[name], prior_kind, keep=kept),
                      "filtered_by_type": accuracy_by(refs, per_model[name], qtype, keep=kept)}
               for name in MODELS}
    _log("3DR-FT weights of the control on the train split (the diagnosis)")
    clip = targs("3drft_paper", "paper").weight_clip
    tw = token_weights(models["sft"], SceneLM.from_pretrained(blind_path), data.tokenizer,
                       data.bank, list(load_split(str(data_dir), "sqa3d", "train")), clip=clip)
    kept_rows = [r for r in rows if r["question_id"] in kept]
    abl = {ab: score_predictions(orig_refs, predict(models["sft"], kept_rows, ab), name=ab,
                                 allow_missing=True).metrics["debiased"]["em_refined"]
           for ab in ("none", "no_3d", "shuffle_3d", "no_situation", "no_question")}
    att = {name: attention_to_3d(models[name], data.tokenizer, data.bank, kept_rows)
           for name in ("sft", "3drft_paper", "3drft_official")}
    text_only = {name: score_predictions(orig_refs, predict(models[name], kept_rows, "no_3d"),
                                         name=name, allow_missing=True
                                         ).metrics["debiased"]["em_refined"]
                 for name in ("sft", "sft_more", *ARM_CONTROLS, "sft_from_blind")}
    navigate = [r["question_id"] for r in rot_rows if r["kind"] == "navigate"]
    (root / "summary.json").write_text(json.dumps({"build": summary}, indent=2, default=str))
    return SeedResult(
        seed=seed, metrics=metrics, ablations=abl, attention=att,
        flips=flips(refs, per_model, kept, base="sft",
                    others=("3drft_paper", "3drft_official", "sft_more", "3drft_paper_grad",
                            "3drft_from_blind", "sft_from_blind")),
        build=json.loads(json.dumps(summary, default=str)),
        example_question_id=int(navigate[0] if navigate else rot_rows[0]["question_id"]),
        root=str(root), by_kind=by_kind, weights=weight_summary(tw, clip=clip),
        text_only=text_only)


def _scanqa_source_rows(data_dir: Path, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The test split's ScanQA-format questions as model inputs: each asked with the first
    situated row it came from (the question is about the room, so the pose does not decide
    its answer), tagged with its ScanQA id."""
    items = read_scanqa(next((data_dir / "scanqa").glob("*.json")))
    first: dict[tuple[str, str], dict[str, Any]] = {}
    for r in rows:
        first.setdefault((r["scene_id"], r["question"]), r)
    return [{**first[(s, q)], "scanqa_id": i}
            for i, s, q in zip(items.question_id, items.scene_id, items.question)]


def _real_scanqa(root: Path, data_dir: Path, rows: list[dict[str, Any]], orig_pred
                 ) -> tuple[list[dict[str, Any]], dict[str, pd.DataFrame]]:
    """Real-ScanQA of this seed: the ScanQA-format test questions filtered by the filter's
    own (full, blind) pair, as Real-3DQA is. Returns the questions as model inputs and the
    ``scanqa`` / ``real_scanqa`` reference tables."""
    if not list((data_dir / "scanqa").glob("*.json")):
        return [], {}
    sq_rows = _scanqa_source_rows(data_dir, rows)
    ids = [r["scanqa_id"] for r in sq_rows]
    full = orig_pred("filter_full", sq_rows).assign(question_id=ids)
    blind = orig_pred("filter_blind", sq_rows).assign(question_id=ids)
    build_real_scanqa(next((data_dir / "scanqa").glob("*.json")), root / "real_scanqa",
                      pairs=[("filter", full, blind)])
    sets = {}
    for config in ("scanqa", "real_scanqa"):
        df = load_local(root / "real_scanqa", config).to_pandas()
        df["answers"] = [list(a) for a in df.answers]
        df.attrs["has_answers"] = True
        sets[config] = df
    return sq_rows, sets


def _counter_prior_subset(cfg: DemoConfig, seed: int, root: Path, data) -> tuple[list, Any]:
    """The separate counter-prior evaluation subset: other rooms (seed + 2000) made with the
    same generator settings, every question counter-prior (the prior points to another
    answer); its rows and a scene bank for them. The training mix and the other subsets stay
    as they are."""
    if cfg.counter_prior_scenes <= 0:
        return [], None
    folder = root / "counter_prior"
    base = cfg.synth_config(seed + COUNTER_PRIOR_SEED_OFFSET)
    build_benchmark(folder, dataclasses.replace(
        base, guessable_fraction=0.0, counter_prior_fraction=1.0,
        scenes={"train": 0, "val": 0, "test": cfg.counter_prior_scenes}), progress=False)
    rows = [r for r in load_split(str(folder), "sqa3d", "test")
            if r["prior_kind"] == "counter_prior"]
    bank = load_scene_bank(str(folder), max_objects=data.bank.max_objects,
                           points_per_object=data.bank.points_per_object)
    bank.tokenize_labels(data.tokenizer)
    return rows, bank


def _rows_refs(rows: list[dict[str, Any]]) -> pd.DataFrame:
    """A reference table (original view) of question rows."""
    return pd.DataFrame({"question_id": [int(r["question_id"]) for r in rows],
                         "rotation_deg": 0, "answers": [list(r["answers"]) for r in rows],
                         "question_type": [str(r.get("sqa3d_type", "other")) for r in rows],
                         "in_debiased": False, "in_rotation": False})


def _srbench(cfg: DemoConfig, out: Path) -> dict[str, Any] | None:
    if cfg.srbench_scenes <= 0:
        return None
    _log("synthetic 3DSRBench (renders)")
    sizes = {"views_per_scene": cfg.srbench_views,
             "questions_per_scene": cfg.srbench_questions_per_scene}
    gen = generate_srbench(SRBenchConfig(seed=0, scenes=cfg.srbench_scenes, **sizes),
                           progress=False)
    if not gen["synthetic_common"]:
        return {"scenes": cfg.srbench_scenes, "stats": gen["stats"], "results": None}
    # the text-only prior learns each type's most frequent answer on other scenes (seed 1)
    prior = expand(generate_srbench(SRBenchConfig(seed=1, scenes=max(3, cfg.srbench_scenes // 3),
                                                  **sizes), progress=False)["synthetic_common"])
    folder = out / "3dsrbench"
    build_srbench(folder, synthetic=gen)
    sr = {"scenes": cfg.srbench_scenes, "stats": gen["stats"],
          "results": {c: baselines(load_rows(folder, c), prior)
                      for c in ("synthetic_common", "synthetic_uncommon")}}
    if cfg.srbench_model:  # the paper's viewpoint finding on a trained VLM, per seed
        # torch and transformers' VLM stack: only when this study is asked for
        from hf_real3d.srbench.study import TRAIN_SEED_OFFSET, run_study_seed

        sr["models"] = []
        for seed in range(cfg.seeds):
            _log(f"3DSRBench VLM, seed {seed}: rendering {cfg.srbench_train_scenes} training "
                 f"scenes (generator seed {TRAIN_SEED_OFFSET + seed}; the test set is seed 0)")
            train = generate_srbench(SRBenchConfig(seed=TRAIN_SEED_OFFSET + seed,
                                                   scenes=cfg.srbench_train_scenes, **sizes),
                                     progress=False)
            sr["models"].append(run_study_seed(
                seed, train, folder, out / "3dsrbench_vlm" / f"seed{seed}",
                train_scenes=cfg.srbench_train_scenes, prior_rows=prior,
                epochs=cfg.srbench_vlm_epochs, progress=cfg.progress, log=_log))
    return sr


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

    def agg(fn) -> dict:
        return {model: {sub: {k: float(fn([t[model][sub][k] for t in per_seed]))
                              for k in per_seed[0][model][sub]}
                        for sub in per_seed[0][model]
                        if all(sub in t[model] for t in per_seed)}
                for model in per_seed[0]}

    return {"seeds": [s.seed for s in results.seeds], "mean": agg(np.mean),
            "std": agg(np.std), "per_seed": per_seed}


def run_demo(cfg: DemoConfig) -> Path:
    """Run every seed, then the synthetic 3DSRBench; write ``results.json``, ``report.md``
    and the plots under ``cfg.out``. Returns the report's path."""
    t0 = time.time()
    out = Path(cfg.out)
    out.mkdir(parents=True, exist_ok=True)
    seeds = [] if cfg.skip_real3dqa else [run_seed(cfg, seed) for seed in range(cfg.seeds)]
    if seeds:
        draw_question(Path(seeds[0].root) / "synth/sqa3d",
                      Path(seeds[0].root) / "synth/scans", seeds[0].example_question_id,
                      out / "topdown.png")
    results = DemoResults(asdict(cfg), seeds, _srbench(cfg, out))
    results.wall_time_s = round(time.time() - t0, 1)
    payload = {**results_summary(results), "details": asdict(results)}
    (out / "results.json").write_text(json.dumps(payload, indent=2, default=str))
    report = write_demo_report(results, out)
    _log(f"wrote {report} ({results.wall_time_s:.0f} s)")
    return report
