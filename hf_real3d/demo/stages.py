"""The demo's stages, in the order one seed runs them.

1. :func:`make_data`: the embedded benchmark of this seed (a dataset folder) and its
   training data.
2. :func:`first_models`: the filter's own (full, blind) pair (seed + 1000) and the control
   SFT and blind reference (``seed``), trained side by side.
   :func:`filter_pair`: the filter's pair predicts the test split; Real-3DQA is built from
   their answers (filtered set + rotations).
3. :func:`scored_models`: the 3DR-FT arms and their equal-training controls, fine-tuning
   the control; like the control and the blind reference, trained apart with ``seed`` and
   never used by the filter.
4. :func:`score_models`: every model on the original and filtered sets, the rotations, the
   scene-dependent and counter-prior questions, Real-ScanQA and the counter-prior rooms.
5. :func:`diagnose`: accuracy by question kind, the 3DR-FT weights, input ablations,
   attention to 3D tokens, text-only accuracy and right-to-wrong flips.
6. :func:`bias_pruning`: the test-set stress test and iterative bias pruning
   (:mod:`hf_real3d.debias`) on the filtered set, and each scored model on what pruning
   keeps: does the gap between 3D and blind grow there?
7. :func:`srbench_study`: the synthetic 3DSRBench with its baselines (and, asked for, a
   trained VLM per seed).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from hf_real3d.demo.flips import accuracy_by, flips, original_correct
from hf_real3d.hub import load_frame, load_local
from hf_real3d.modeling import SceneLM, attention_to_3d, predict_rows
from hf_real3d.real3dqa import build_real3dqa, load_references, score_predictions
from hf_real3d.real3dqa.runs import BuildRun
from hf_real3d.real_scanqa import build_real_scanqa, score_real_scanqa
from hf_real3d.scanqa import read_scanqa
from hf_real3d.srbench import baselines, build_srbench, expand, load_rows
from hf_real3d.synth import build_benchmark
from hf_real3d.synth.srbench_gen import SRBenchConfig, generate_srbench
from hf_real3d.training import ReweightedConfig
from hf_real3d.training.args import ScriptArguments
from hf_real3d.training.data import TrainingData, load_scene_bank, load_split
from hf_real3d.training.diagnostics import token_weights, weight_summary
from hf_real3d.training.recipe import load_training_data

from .config import (
    ARM_CONTROLS,
    COUNTER_PRIOR_SEED_OFFSET,
    FAMILY_ARMS,
    FILTER_SEED_OFFSET,
    ROLES,
    ROTATION_ARMS,
    DemoConfig,
    log,
)
from .pool import TrainingJob, TrainingPool

__all__ = ["SeedRun", "FilteredSet", "Scores", "Diagnosis", "make_data", "first_models",
           "filter_pair", "rotation_jobs", "viewpoint_study", "scored_models", "score_models",
           "diagnose", "bias_pruning", "srbench_study", "PRUNING_MODELS"]

# the models scored on the pruned set: the control, its text-only twins, the equal-training
# control and the paper's arm
PRUNING_MODELS = ("sft", "blind", "sft_no3d", "sft_more", "3drft_paper")


# --- 1. data --------------------------------------------------------------------------------


@dataclass
class SeedRun:
    """One seed's folders, training data and test questions; it makes the training
    arguments of every model so that all of them differ only where the demo says."""

    cfg: DemoConfig
    seed: int
    root: Path
    data_dir: Path
    script_args: ScriptArguments
    data: TrainingData
    rows: list[dict[str, Any]]  # the test split's questions
    pool: TrainingPool  # trains the seed's models (--jobs)

    def training_args(self, name: str, reweighting: str, *, seed: int | None = None,
                      epochs: float | None = None, lr: float | None = None
                      ) -> ReweightedConfig:
        cfg = self.cfg
        return ReweightedConfig(
            output_dir=str(self.root / "models" / name), reweighting=reweighting,
            num_train_epochs=cfg.epochs if epochs is None else epochs,
            per_device_train_batch_size=cfg.batch_size,
            learning_rate=cfg.learning_rate if lr is None else lr,
            lr_scheduler_type="cosine", warmup_steps=0.05, logging_steps=50,
            save_strategy="no", eval_strategy="no",
            seed=self.seed if seed is None else seed, use_cpu=True,
            disable_tqdm=not cfg.progress, dataloader_num_workers=0, report_to="none")

    def job(self, name: str, reweighting: str, *, blind: bool = False,
            script_args: ScriptArguments | None = None, seed: int | None = None,
            epochs: float | None = None, lr: float | None = None, **overrides) -> TrainingJob:
        """One model to train (or fine-tune, as ``script_args`` says) into
        ``models/<name>`` by its recipe: ``blind_ft`` (``blind``), ``sft`` (no reweighting)
        or ``3drft``; ``overrides`` set further training arguments."""
        targs = self.training_args(name, reweighting, seed=seed, epochs=epochs, lr=lr)
        for k, v in overrides.items():
            setattr(targs, k, v)
        recipe = "blind_ft" if blind else "sft" if reweighting == "none" else "3drft"
        return TrainingJob(name, recipe, script_args or self.script_args, targs,
                           cost=targs.num_train_epochs * (1.0 if blind else 1.6))

    def train(self, *jobs: TrainingJob) -> dict[str, SceneLM]:
        """Train independent ``jobs`` side by side (``--jobs``); ``{name: SceneLM}``."""
        return self.pool.train(jobs, self.data, self.script_args)

    def steps(self, epochs: float) -> int:
        """Optimizer steps of ``epochs`` over the (unaugmented) training split: what the
        rotation arms train for, so that each matches its control's compute."""
        per_epoch = math.ceil(len(self.data.train) / self.cfg.batch_size)
        return math.ceil(epochs * per_epoch)

    def predict(self, model, rows: list[dict[str, Any]], ablation: str = "none",
                bank=None) -> pd.DataFrame:
        return pd.DataFrame(predict_rows(model, self.data.tokenizer, bank or self.data.bank,
                                         rows, ablation=ablation, progress=False))


def make_data(cfg: DemoConfig, seed: int, pool: TrainingPool | None = None) -> SeedRun:
    """Generate this seed's embedded benchmark under ``<out>/seed<seed>/synth`` and load its
    training data and test questions; ``pool`` trains its models (default: one here)."""
    root = Path(cfg.out) / f"seed{seed}"
    data_dir = root / "synth"
    log(f"seed {seed}: generating the synthetic SQA3D-style benchmark (a dataset folder)")
    build_benchmark(data_dir, cfg.synth_config(seed), progress=cfg.progress)
    sargs = ScriptArguments(dataset_name=str(data_dir), **cfg.settings())
    data = load_training_data(sargs)
    rows = list(load_split(str(data_dir), "sqa3d", "test"))
    (root / "predictions").mkdir(parents=True, exist_ok=True)
    return SeedRun(cfg, seed, root, data_dir, sargs, data, rows, pool or TrainingPool(1))


# --- 2. the filter's pair and the filtered set ----------------------------------------------


@dataclass
class FilteredSet:
    """Real-3DQA built by the filter's pair: its references, rotated rows and summary."""

    refs: pd.DataFrame
    rotation_rows: list[dict[str, Any]]
    summary: BuildRun
    folder: Path

    @property
    def kept(self) -> set[int]:
        return {int(q) for q in self.refs.loc[self.refs.in_debiased, "question_id"]}

    @property
    def original_refs(self) -> pd.DataFrame:
        return self.refs[self.refs.rotation_deg == 0]


def first_models(run: SeedRun) -> dict[str, SceneLM]:
    """Train the models nothing else depends on, side by side: the filter's (full, blind)
    pair (seed + 1000, ``filter_epochs``) and the scored control ``sft`` and blind reference
    ``blind`` (``seed``, ``epochs``). Returns them by name."""
    fseed, fe = run.seed + FILTER_SEED_OFFSET, run.cfg.filter_epochs
    log("the filter's pair (seed + 1000) and the scored control and blind reference (not "
        "used by the filter)")
    return run.train(run.job("filter_full", "none", seed=fseed, epochs=fe),
                     run.job("filter_blind", "none", seed=fseed, epochs=fe, blind=True),
                     run.job("sft", "none"), run.job("blind", "none", blind=True))


def filter_pair(run: SeedRun, models: dict[str, SceneLM]
                ) -> tuple[dict[str, pd.DataFrame], FilteredSet]:
    """The filter's pair (``models["filter_full"]``, ``models["filter_blind"]``) predicts the
    test split; the filtered set and its rotations are built from their answers. Returns
    their test-split predictions and the filtered set."""
    log("the filter's pair predicts the test split; filtering and rotating")
    orig = {name: run.predict(models[name], run.rows) for name in ("filter_full",
                                                                    "filter_blind")}
    folder = run.root / "real3dqa"
    summary = build_real3dqa(run.data_dir / "sqa3d", run.data_dir / "scans", folder,
                             pairs=[("filter", orig["filter_full"], orig["filter_blind"])],
                             progress=False)
    filtered = FilteredSet(load_references(folder), list(load_local(folder, "rotations")),
                           summary, folder)
    return orig, filtered


# --- 3. the scored models -------------------------------------------------------------------


def scored_models(run: SeedRun, models: dict[str, SceneLM]) -> str:
    """Train the 3DR-FT arms into ``models`` beside the trained ``sft`` and ``blind`` (the
    filter never sees them): ``3drft_paper`` and its equal-training control ``sft_more``, and
    the ``--arms`` (:meth:`DemoConfig.optional_arms`). Returns the blind reference's
    folder."""
    cfg, sargs = run.cfg, run.script_args
    arms = cfg.optional_arms()
    log("the 3DR-FT arms and their controls (not used by the filter): " + ", ".join(
        m for m in cfg.models() if m not in ("filter_full", "filter_blind", "sft", "blind",
                                             "sft_no3d")))
    # the blind reference first_models trained, as it is: 3DR-FT's arms fine-tune the
    # control (or start from the blind weights), so their own settings differ from its
    blind_path = str(run.root / "models" / "blind")
    sargs = dataclasses.replace(sargs, check_blind_model=False)
    jobs = []
    if cfg.drft_from_sft:  # fine-tune the trained control; sft_more: the same, unweighted
        start = dataclasses.replace(sargs, model_name_or_path=str(run.root / "models" / "sft"),
                                    blind_model_path=blind_path)
        fine = {"epochs": cfg.drft_epochs, "lr": cfg.drft_learning_rate}
        for name, reweighting in (("3drft_paper", "paper"), ("3drft_official", "official"),
                                  ("sft_more", "none")):
            if name in cfg.models():
                jobs.append(run.job(name, reweighting, script_args=start, **fine))
        if "3drft_paper_grad" in arms:
            jobs.append(run.job("3drft_paper_grad", "paper", script_args=start,
                                weight_grad=True, **fine))
        for name in cfg.family_arms():  # the reweighting family, fine-tuning the control
            jobs.append(run.job(name, FAMILY_ARMS[name], script_args=start, **fine))
    else:
        if cfg.family_arms():
            raise ValueError("`arms`: the reweighting family fine-tunes the trained control; "
                             "it needs `drft_from_sft` true")
        with_blind = dataclasses.replace(sargs, blind_model_path=blind_path)
        for name, reweighting in (("3drft_paper", "paper"), ("3drft_official", "official")):
            if name in cfg.models():
                jobs.append(run.job(name, reweighting, script_args=with_blind))
    if "3drft_from_blind" in arms:
        # §4.2 read literally: 3DR-FT starts from the blind fine-tuned model; its control is
        # the same start trained without reweighting (same data, epochs and learning rate)
        from_blind = dataclasses.replace(sargs, blind_model_path=blind_path)
        for name, reweighting in (("3drft_from_blind", "paper"), ("sft_from_blind", "none")):
            jobs.append(run.job(name, reweighting, script_args=from_blind,
                                init_from_blind=blind_path))
    jobs += rotation_jobs(run, first=True)
    models.update(run.train(*jobs))
    models.update(run.train(*rotation_jobs(run, first=False, blind_path=blind_path)))
    if not cfg.drft_from_sft:
        models["sft_more"] = models["sft"]  # no extra training to match
        if "3drft_paper_grad" in arms:
            models["3drft_paper_grad"] = models["3drft_paper"]
    return blind_path


def rotation_jobs(run: SeedRun, *, first: bool, blind_path: str | None = None
                  ) -> list[TrainingJob]:
    """The viewpoint-consistency arms (:data:`ROTATION_ARMS`) this run trains, each matched
    in optimizer steps to its control on the same rooms: ``first``, the arms trained from
    scratch on the rotation-augmented train split for the control's steps (``sft_rot``,
    ``sft_rot_dro`` with the viewpoint objective, ``sft_rot_transfer`` augmented on
    ``transfer_kinds`` only); then the arms fine-tuning the trained ``sft_rot`` for
    ``sft_more``'s steps on the augmented split (``sft_rot_more`` without reweighting,
    ``3drft_rot`` with 3DR-FT's paper weights, read from ``blind_path``)."""
    cfg = run.cfg
    arms = cfg.rotation_arms()
    aug = dataclasses.replace(run.script_args, rotation_augment="all", check_blind_model=False)
    jobs = []
    if first:
        scratch = {"max_steps": run.steps(cfg.epochs)}
        if "sft_rot" in arms:
            jobs.append(run.job("sft_rot", "none", script_args=aug, **scratch))
        if "sft_rot_dro" in arms:
            jobs.append(run.job("sft_rot_dro", "viewpoint_dro", script_args=aug,
                                viewpoint_temperature=cfg.viewpoint_temperature, **scratch))
        if "sft_rot_transfer" in arms:
            jobs.append(run.job("sft_rot_transfer", "none", script_args=dataclasses.replace(
                aug, rotation_kinds=",".join(cfg.transfer_kind_list())), **scratch))
        return jobs
    start = dataclasses.replace(aug, model_name_or_path=str(run.root / "models" / "sft_rot"),
                                blind_model_path=blind_path)
    fine = {"epochs": cfg.drft_epochs, "lr": cfg.drft_learning_rate,
            "max_steps": run.steps(cfg.drft_epochs)}
    for name, reweighting in (("sft_rot_more", "none"), ("3drft_rot", "paper")):
        if name in arms:
            jobs.append(run.job(name, reweighting, script_args=start, **fine))
    return jobs


# --- 4. scoring -----------------------------------------------------------------------------


@dataclass
class Scores:
    """Every model's metrics (one ``score_predictions`` dict each, with the demo's subsets
    added) and its predictions on the test split and the rotations."""

    metrics: list[dict[str, Any]]
    predictions: dict[str, pd.DataFrame]


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


def real_scanqa(run: SeedRun, models: dict[str, SceneLM]
                ) -> tuple[list[dict[str, Any]], dict[str, pd.DataFrame]]:
    """Real-ScanQA of this seed: the ScanQA-format test questions filtered by the filter's
    own (full, blind) pair, as Real-3DQA is. Returns the questions as model inputs and the
    ``scanqa`` / ``real_scanqa`` reference tables."""
    if not list((run.data_dir / "scanqa").glob("*.json")):
        return [], {}
    sq_rows = _scanqa_source_rows(run.data_dir, run.rows)
    ids = [r["scanqa_id"] for r in sq_rows]
    full = run.predict(models["filter_full"], sq_rows).assign(question_id=ids)
    blind = run.predict(models["filter_blind"], sq_rows).assign(question_id=ids)
    build_real_scanqa(next((run.data_dir / "scanqa").glob("*.json")),
                      run.root / "real_scanqa", pairs=[("filter", full, blind)])
    sets = {}
    for config in ("scanqa", "real_scanqa"):
        df = load_frame(run.root / "real_scanqa", config)
        df["answers"] = [list(a) for a in df.answers]
        df.attrs["has_answers"] = True
        sets[config] = df
    return sq_rows, sets


def counter_prior_rooms(run: SeedRun) -> tuple[list, Any]:
    """The separate counter-prior evaluation subset: other rooms (seed + 2000) made with the
    same generator settings, every question counter-prior (the prior points to another
    answer); its rows and a scene bank for them. The training mix and the other subsets stay
    as they are."""
    cfg = run.cfg
    if cfg.counter_prior_scenes <= 0:
        return [], None
    folder = run.root / "counter_prior"
    base = cfg.synth_config(run.seed + COUNTER_PRIOR_SEED_OFFSET)
    build_benchmark(folder, dataclasses.replace(
        base, guessable_fraction=0.0, counter_prior_fraction=1.0,
        scenes={"train": 0, "val": 0, "test": cfg.counter_prior_scenes}), progress=False)
    rows = [r for r in load_split(str(folder), "sqa3d", "test")
            if r["prior_kind"] == "counter_prior"]
    bank = load_scene_bank(str(folder), max_objects=run.data.bank.max_objects,
                           points_per_object=run.data.bank.points_per_object)
    bank.tokenize_labels(run.data.tokenizer)
    return rows, bank


def _rows_refs(rows: list[dict[str, Any]]) -> pd.DataFrame:
    """A reference table (original view) of question rows."""
    return pd.DataFrame({"question_id": [int(r["question_id"]) for r in rows],
                         "rotation_deg": 0, "answers": [list(r["answers"]) for r in rows],
                         "question_type": [str(r.get("sqa3d_type", "other")) for r in rows],
                         "in_debiased": False, "in_rotation": False})


def score_models(run: SeedRun, models: dict[str, SceneLM], orig: dict[str, pd.DataFrame],
                 filtered: FilteredSet) -> Scores:
    """Score every model of the run (``cfg.models()``; ``sft_no3d``: the control without its
    3D input)
    on the filtered set's references, the scene-dependent and counter-prior questions of
    the test split, Real-ScanQA and the counter-prior rooms. Writes each model's predictions
    to ``predictions/<model>.jsonl``."""
    rows, refs = run.rows, filtered.refs
    cp_rows, cp_bank = counter_prior_rooms(run)
    sq_rows, sq_sets = real_scanqa(run, models)
    scene_ids = {int(r["question_id"]) for r in rows if not r["guessable"]}
    counter_ids = {int(r["question_id"]) for r in rows if r["prior_kind"] == "counter_prior"}
    scene_refs = filtered.original_refs[filtered.original_refs.question_id.isin(scene_ids)
                                        ].assign(in_debiased=False, in_rotation=False)

    def original_subset(o: pd.DataFrame, ids: set[int], name: str) -> dict[str, Any]:
        return score_predictions(scene_refs[scene_refs.question_id.isin(ids)],
                                 o[o.question_id.isin(ids)], name=name,
                                 allow_missing=True).metrics["original"]

    metrics, per_model = [], {}
    for name in run.cfg.models():
        log(f"evaluating {name}")
        model, ablation = (models["sft"], "no_3d") if name == "sft_no3d" else \
            (models[name], "none")
        o = orig.get(name) if ablation == "none" else None
        o = run.predict(model, rows, ablation) if o is None else o
        rot = run.predict(model, filtered.rotation_rows, ablation)
        both = pd.concat([o, rot[rot.rotation_deg != 0]], ignore_index=True)
        both.to_json(run.root / "predictions" / f"{name}.jsonl", orient="records", lines=True)
        per_model[name] = both
        m = score_predictions(refs, both, name=name, allow_missing=True).metrics
        m["role"] = ROLES[name]
        m["scene_dependent"] = original_subset(o, scene_ids, name)
        if counter_ids:  # the language prior points to another answer here
            m["counter_prior"] = original_subset(o, counter_ids, name)
        if sq_rows:  # Real-ScanQA: the room-level test questions, filtered by the filter's pair
            sq = run.predict(model, sq_rows, ablation).assign(
                question_id=[r["scanqa_id"] for r in sq_rows])
            for config, sq_refs in sq_sets.items():
                sc = score_real_scanqa(sq_refs,
                                       sq[sq.question_id.isin(set(sq_refs.question_id))],
                                       name=name, captions=False)
                m[config] = {k: sc[k] for k in ("em", "em_refined", "n")}
        if cp_rows:  # the separate counter-prior evaluation rooms
            cp = run.predict(model, cp_rows, ablation, bank=cp_bank)
            m["counter_prior_eval"] = score_predictions(
                _rows_refs(cp_rows), cp, name=name, allow_missing=True).metrics["original"]
        metrics.append(m)
    return Scores(metrics, per_model)


# --- 5. diagnosis ---------------------------------------------------------------------------


@dataclass
class Diagnosis:
    """Why the scores are what they are (each field documented on :class:`SeedResult`)."""

    by_kind: dict[str, Any]
    weights: dict[str, Any]
    ablations: dict[str, float]
    attention: dict[str, dict[str, float]]
    text_only: dict[str, float]
    flips: dict[str, dict[str, int]] = field(default_factory=dict)


def diagnose(run: SeedRun, models: dict[str, SceneLM], filtered: FilteredSet,
             scores: Scores, blind_path: str) -> Diagnosis:
    """Accuracy by prior kind and question type, the 3DR-FT weights the control gets on the
    train split, the control's input ablations, attention to 3D tokens, each model's
    accuracy without its 3D input, and right-to-wrong flips against the control."""
    log("input ablations, attention to 3D, flips")
    refs, rows, kept, per_model = filtered.refs, run.rows, filtered.kept, scores.predictions
    prior_kind = {int(r["question_id"]): str(r["prior_kind"]) for r in rows}
    qtype = {int(r["question_id"]): str(r["kind"]) for r in rows}
    by_kind = {name: {"original": accuracy_by(refs, per_model[name], prior_kind),
                      "filtered": accuracy_by(refs, per_model[name], prior_kind, keep=kept),
                      "filtered_by_type": accuracy_by(refs, per_model[name], qtype, keep=kept)}
               for name in run.cfg.models()}
    log("3DR-FT weights of the control on the train split (the diagnosis)")
    clip = run.training_args("3drft_paper", "paper").weight_clip
    tw = token_weights(models["sft"], SceneLM.from_pretrained(blind_path), run.data.tokenizer,
                       run.data.bank, list(load_split(str(run.data_dir), "sqa3d", "train")),
                       clip=clip, family=tuple(FAMILY_ARMS[a] for a in run.cfg.family_arms()))
    kept_rows = [r for r in rows if r["question_id"] in kept]

    def filtered_em(model, ablation: str, name: str) -> float:
        return score_predictions(filtered.original_refs, run.predict(model, kept_rows, ablation),
                                 name=name, allow_missing=True).metrics["debiased"]["em_refined"]

    abl = {ab: filtered_em(models["sft"], ab, ab)
           for ab in ("none", "no_3d", "shuffle_3d", "no_situation", "no_question")}
    att = {name: attention_to_3d(models[name], run.data.tokenizer, run.data.bank, kept_rows)
           for name in ("sft", "3drft_paper", "3drft_official", *run.cfg.family_arms())
           if name in models}
    text_only = {name: filtered_em(models[name], "no_3d", name)
                 for name in ("sft", "sft_more", *ARM_CONTROLS, "sft_from_blind")
                 if name in models}
    return Diagnosis(
        by_kind=by_kind, weights=weight_summary(tw, clip=clip), ablations=abl, attention=att,
        text_only=text_only,
        flips=flips(refs, per_model, kept, base="sft",
                    others=tuple(m for m in run.cfg.models()
                                 if m in ARM_CONTROLS or m in ("sft_more", "sft_from_blind"))))


# --- 5b. viewpoint consistency -------------------------------------------------------------

_ROTATION_KEYS = ("p_at_least_1", "p_at_least_2", "p_at_least_3", "p_at_least_4", "vrs",
                  "expected_p_at_least_4", "groups")


def viewpoint_study(run: SeedRun, models: dict[str, SceneLM], filtered: FilteredSet,
                    scores: Scores) -> dict[str, Any]:
    """What the rotation arms need beyond the common scores (``{}`` when none ran):
    ``transfer``, P_k and VRS on the filtered set's rotated questions whose answer changes
    with the turn, of the kinds ``sft_rot_transfer`` saw turned (``seen``) and of the other
    kinds (``unseen``), per model; ``weights``, the viewpoint objective's weights per viewpoint
    (:func:`~hf_real3d.training.diagnostics.viewpoint_summary`) at the state of ``sft_rot``
    (its control) and of ``sft_rot_dro``, on the augmented train split."""
    arms = run.cfg.rotation_arms()
    if not arms:
        return {}
    # the augmentation and the viewpoint diagnosis only when a rotation arm ran
    from hf_real3d.training.augment import rotation_augment
    from hf_real3d.training.diagnostics import viewpoint_summary, viewpoint_weights

    log("viewpoint consistency: transfer across question kinds, the viewpoint weights")
    kind = {int(r["question_id"]): str(r["kind"]) for r in run.rows}
    refs = filtered.refs
    turned = refs[refs.in_rotation]
    # the questions whose answer changes with the turn: consistency there is not a copy
    answers = turned.groupby("question_id").answers.agg(
        lambda a: len({tuple(sorted(x)) for x in a}))
    moving = {int(q) for q, n in answers.items() if n > 1}
    seen_kinds = set(run.cfg.transfer_kind_list())
    split = {"seen": {q for q in moving if kind.get(q) in seen_kinds},
             "unseen": {q for q in moving if kind.get(q) not in seen_kinds}}
    transfer: dict[str, Any] = {}
    for name in ("sft", "sft_more", *ROTATION_ARMS):
        if name not in scores.predictions:
            continue
        preds = scores.predictions[name]
        transfer[name] = {}
        for part, ids in split.items():
            if not ids:
                continue
            rot = score_predictions(refs[refs.question_id.isin(ids)],
                                    preds[preds.question_id.isin(ids)], name=name,
                                    allow_missing=True).metrics["rotation"]
            transfer[name][part] = {k: rot[k] for k in _ROTATION_KEYS}
    train = rotation_augment(load_split(str(run.data_dir), "sqa3d", "train"),
                             load_split(str(run.data_dir), "scenes", "train"), choose="all")
    rows = train.to_list()
    weights = {name: viewpoint_summary(viewpoint_weights(
                   models[name], run.data.tokenizer, run.data.bank, rows,
                   temperature=run.cfg.viewpoint_temperature))
               for name in ("sft_rot", "sft_rot_dro") if name in models}
    return {"kinds": {"seen": sorted(seen_kinds),
                      "unseen": sorted({kind[q] for q in split["unseen"]})},
            "transfer": transfer, "weights": weights, "train_rows": len(rows),
            "train_questions": len(set(train["viewpoint_group"]))}


# --- 6. bias pruning of the filtered set ----------------------------------------------------


def bias_pruning(run: SeedRun, filtered: FilteredSet, scores: Scores, *, folds: int = 5
                 ) -> dict[str, Any]:
    """TsT (random forest, grouped by scene) and IBP on this seed's filtered set, then the
    refined EM of :data:`PRUNING_MODELS` on the filtered set and on the items pruning keeps.
    ``{}`` when the set has fewer than 2 scenes."""
    # scikit-learn's diagnostic only when this stage runs
    from hf_real3d.debias import PruneConfig, load_items, prune

    items = load_items(filtered.folder, config="real3dqa")
    folds = min(folds, len(set(items.groups)))
    if folds < 2:
        return {}
    log(f"stress test and bias pruning of the filtered set ({len(items)} questions)")
    # the study's recorded setting: the diagnostic also reads each question's type
    keep, rounds, last = prune(items, PruneConfig(diagnostic="rf", folds=folds, seed=run.seed,
                                                  type_as_feature=True))
    all_ids = [int(q) for q in items.ids]
    kept_ids = [all_ids[i] for i in keep]
    em = {}
    for name in PRUNING_MODELS:
        _, ok_all = original_correct(filtered.refs, scores.predictions[name], all_ids)
        _, ok_kept = original_correct(filtered.refs, scores.predictions[name], kept_ids)
        em[name] = {"filtered": float(ok_all.mean() * 100),
                    "pruned": float(ok_kept.mean() * 100) if len(kept_ids) else None}
    return {"n": len(items), "folds": folds, "solvability": rounds[0]["solvability"],
            "majority": rounds[0]["majority"], "kept": len(keep), "rounds": len(rounds) - 1,
            "final_solvability": last.solvability, "final_majority": last.majority,
            "stop": rounds[-1].get("stop", ""), "em_refined": em}


# --- 7. the synthetic 3DSRBench -------------------------------------------------------------


def srbench_study(cfg: DemoConfig, out: Path) -> dict[str, Any] | None:
    """The synthetic 3DSRBench (renders, seed 0) with its baselines; with
    ``cfg.srbench_model`` also a small VLM trained per seed on other renders."""
    if cfg.srbench_scenes <= 0:
        return None
    log("synthetic 3DSRBench (renders)")
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
        from hf_real3d.demo.srbench_study import TRAIN_SEED_OFFSET, run_study_seed
        from hf_real3d.demo.srbench_vlm import SRBenchVLMConfig

        sr["models"] = []
        for seed in cfg.seed_list():
            log(f"3DSRBench VLM, seed {seed}: rendering {cfg.srbench_train_scenes} training "
                f"scenes (generator seed {TRAIN_SEED_OFFSET + seed}; the test set is seed 0)")
            train = generate_srbench(SRBenchConfig(seed=TRAIN_SEED_OFFSET + seed,
                                                   scenes=cfg.srbench_train_scenes, **sizes),
                                     progress=False)
            vlm = SRBenchVLMConfig(seed=seed, epochs=cfg.srbench_vlm_epochs,
                                   progress=cfg.progress)
            sr["models"].append(run_study_seed(
                train, folder, out / "3dsrbench_vlm" / f"seed{seed}", vlm,
                train_scenes=cfg.srbench_train_scenes, prior_rows=prior, log=log))
    return sr
