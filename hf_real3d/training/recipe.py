"""What the recipes share: arguments, data from built datasets, model building, training
(SFT, blind, 3DR-FT) with a model card, and the explicit blind-model stage of 3DR-FT.

Every recipe (``recipes/*.py``) and the demo call these functions, so a model trained by
the demo and one trained with ``accelerate launch recipes/3drft.py`` go through the same
code. Data always comes from ``datasets`` (``--dataset_name``: a folder built by
``hf-real3d synth`` / ``build-real3dqa``, or a Hub id).
"""

from __future__ import annotations

import dataclasses
import gc
import json
import logging
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
import yaml
from transformers import HfArgumentParser, set_seed

from hf_real3d._argparse import check_values
from hf_real3d._io import atomic_path, write_json
from hf_real3d._yaml import read_yaml
from hf_real3d.modeling import (
    SceneLM,
    SceneLMConfig,
    SceneQACollator,
    collator_for,
)
from hf_real3d.modeling.settings import SceneModelArguments
from hf_real3d.tables import markdown_table
from hf_real3d.training.blind import precompute_blind_logprobs
from hf_real3d.training.data import (
    TrainingData,
    build_tokenizer,
    data_fingerprint,
    load_scene_bank,
    load_split,
    tokenize_dataset,
)
from hf_real3d.training.modes import mode
from hf_real3d.training.trainer import ReweightedConfig, ReweightedTrainer

__all__ = ["ScriptArguments", "load_training_data", "build_model", "train_model",
           "train_3drft", "ensure_blind_model", "training_signature",
           "StaleModelError", "make_parser", "parse_recipe_args", "check_config", "run_recipe",
           "recipe_defaults",
           "TRAINING_INFO", "write_model_card", "end_distributed", "ensure_dataset",
           "DEFAULT_DATASET"]

logger = logging.getLogger("hf_real3d.training")
TRAINING_INFO = "hf_real3d_training.json"  # written beside every trained model


@dataclass
class ScriptArguments(SceneModelArguments):
    """Recipe arguments beyond the training ones (as trl's ``ScriptArguments``); SceneLM's
    own settings come from :class:`~hf_real3d.modeling.settings.SceneModelArguments`."""

    dataset_name: str = field(default="data/synth", metadata={
        "help": "Dataset: a folder built by `hf-real3d synth` or `hf-real3d build-real3dqa`, "
                "or a Hub dataset id. Build the default with `hf-real3d synth --out data/synth`."})
    dataset_config: str = field(default="sqa3d", metadata={
        "help": "Config holding the questions."})
    dataset_train_split: str = field(default="train", metadata={"help": "Training split."})
    dataset_test_split: str | None = field(default=None, metadata={
        "help": "Evaluation split, e.g. 'val' (default: no evaluation set)."})
    scenes_config: str = field(default="scenes", metadata={
        "help": "Config holding the scenes (objects and point clouds)."})
    dataset_num_proc: int | None = field(default=None, metadata={
        "help": "Processes for Dataset.map (tokenization)."})
    tokenizer_path: str | None = field(default=None, metadata={
        "help": "Tokenizer folder to load; default: train a word-level tokenizer on the "
                "training split (deterministic, saved with the model)."})
    model_name_or_path: str | None = field(default=None, metadata={
        "help": "Start from this saved SceneLM (else build from config)."})
    lm_path: str | None = field(default=None, metadata={
        "help": "Local causal-LM checkpoint to use as the language model (Qwen, Llama, ...)."})
    blind: bool = field(default=False, metadata={"help": "Train the text-only (blind) model."})
    blind_model_path: str | None = field(default=None, metadata={
        "help": "Blind fine-tuned model for reweighting='paper'. When absent (or stale and not "
                "named here) 3drft.py trains it first into <output_dir>/blind."})
    live_reference: bool = field(default=False, metadata={
        "help": "Run the blind model live as a frozen reference instead of precomputing."})
    max_train_questions: int | None = field(default=None, metadata={
        "help": "Use only the first N training questions."})


class StaleModelError(ValueError):
    """A saved model was trained with other settings than the ones asked for."""


def _log(msg: str) -> None:
    logger.info(msg)
    print(f"[hf_real3d] {msg}", file=sys.stderr, flush=True)


# --- data and model -------------------------------------------------------------------------


DEFAULT_DATASET = ScriptArguments.dataset_name  # the embedded benchmark's default folder


def ensure_dataset(name: str) -> str:
    """The dataset folder to train on. The default (``data/synth``) is built here when it is
    absent (``hf-real3d synth --out data/synth``, in a subprocess); the log says which. Any
    other name is left to :func:`load_split`, whose error names it."""
    if name != DEFAULT_DATASET:
        return name
    if (Path(name) / "README.md").is_file():
        _log(f"dataset: {name} (the embedded default benchmark, found)")
        return name
    # only the first run on a fresh checkout builds the data
    import subprocess

    _log(f"dataset: {name} not found: building the embedded default benchmark "
         f"(hf-real3d synth --out {name})")
    cmd = [sys.executable, "-c", "import sys; from hf_real3d.cli import main; "
           "sys.exit(main(sys.argv[1:]))", "synth", "--out", name]
    done = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if done.returncode != 0:
        raise FileNotFoundError(f"dataset {name}: building the default benchmark failed: "
                                f"{done.stderr.strip().splitlines()[-1:]}")
    return name


def load_training_data(args: ScriptArguments, *, tokenizer=None) -> TrainingData:
    """Question splits and scenes from ``args.dataset_name``, tokenized for training (the
    default dataset is built first when absent: :func:`ensure_dataset`)."""
    ensure_dataset(args.dataset_name)
    train = load_split(args.dataset_name, args.dataset_config, args.dataset_train_split)
    if args.max_train_questions is not None:
        train = train.select(range(min(args.max_train_questions, len(train))))
    ev = load_split(args.dataset_name, args.dataset_config, args.dataset_test_split) \
        if args.dataset_test_split else None
    bank = load_scene_bank(args.dataset_name, args.scenes_config, max_objects=args.max_objects,
                           points_per_object=args.points_per_object)
    missing = sorted({s for ds in (train, ev) if ds is not None for s in ds["scene_id"]}
                     - set(bank.points))
    if missing:
        raise ValueError(f"{args.dataset_name}: questions refer to scene {missing[0]!r} (and "
                         f"{len(missing) - 1} more) absent from config {args.scenes_config!r}")
    if tokenizer is None:
        tokenizer = build_tokenizer(train, args.tokenizer_path)
    bank.tokenize_labels(tokenizer)
    fp = data_fingerprint(train, bank)
    collator = SceneQACollator(tokenizer, bank, max_length=args.max_length)
    train = tokenize_dataset(train, collator, num_proc=args.dataset_num_proc, fingerprint=fp)
    if ev is not None:
        ev = tokenize_dataset(ev, collator, num_proc=args.dataset_num_proc,
                              fingerprint=data_fingerprint(ev, bank))
    source = {"dataset_name": args.dataset_name, "config": args.dataset_config,
              "train_split": args.dataset_train_split, "train_rows": len(train),
              "test_split": args.dataset_test_split or None, "fingerprint": fp}
    return TrainingData(train, ev, bank, tokenizer, fp, source)


def build_model(args: ScriptArguments, tokenizer, *, blind: bool | None = None) -> SceneLM:
    if args.model_name_or_path:
        model = SceneLM.from_pretrained(args.model_name_or_path)
        if blind is not None:
            model.config.blind = blind
        return model
    return SceneLM(SceneLMConfig.from_settings(args, tokenizer, lm_path=args.lm_path,
                                               blind=args.blind if blind is None else blind))


_MODEL_KEYS = ("model_name_or_path", "lm_path", *SceneModelArguments.names())
_TRAIN_KEYS = ("num_train_epochs", "max_steps", "per_device_train_batch_size",
               "gradient_accumulation_steps", "learning_rate", "lr_scheduler_type",
               "warmup_steps", "weight_decay", "seed", "reweighting", "weight_clip", "epsilon",
               "reweight_eos", "text_only_mode", "init_from_blind", "weight_grad", "cal_min",
               "cal_max", "prior_cap", "excess_ratio")


def training_signature(script_args: ScriptArguments, training_args: ReweightedConfig,
                       data: TrainingData, *, blind: bool) -> dict[str, Any]:
    """What determines a trained model: its architecture, the data it saw (fingerprint) and
    the training settings (hence its step count)."""
    return {
        "model": {**{k: getattr(script_args, k) for k in _MODEL_KEYS}, "blind": bool(blind)},
        "data": {"fingerprint": data.fingerprint, "train_rows": len(data.train)},
        "training": {k: getattr(training_args, k) for k in _TRAIN_KEYS},
    }


def _signature_diff(want: dict, have: dict) -> list[str]:
    out = []
    for part in want:
        for k, v in want[part].items():
            got = have.get(part, {}).get(k, "<absent>")
            if got != v:
                out.append(f"{part}.{k}: saved {got!r}, asked {v!r}")
    return out


# --- training -------------------------------------------------------------------------------


def train_model(script_args: ScriptArguments, training_args: ReweightedConfig, *,
                data: TrainingData | None = None, blind: bool | None = None,
                stage: str | None = None) -> ReweightedTrainer:
    """Train SFT / blind / 3DR-FT as ``training_args.reweighting`` and ``blind`` say. Saves
    the model, its tokenizer, ``hf_real3d_training.json`` (the training signature) and a
    model card to ``training_args.output_dir``. Returns the trainer."""
    blind = script_args.blind if blind is None else blind
    if data is None:
        with training_args.main_process_first(desc="dataset"):
            data = load_training_data(script_args)
    set_seed(training_args.seed)  # the initial weights depend on the seed alone
    model = build_model(script_args, data.tokenizer, blind=blind)
    collator = collator_for(model, data.tokenizer, data.bank, max_length=script_args.max_length)
    train_ds, eval_ds, ref_model, blind_info = data.train, data.eval, None, None
    if mode(training_args.reweighting).needs_blind and not blind:
        blind_path = script_args.blind_model_path
        if not blind_path or not (Path(blind_path) / "config.json").is_file():
            raise FileNotFoundError(
                f"reweighting={training_args.reweighting!r} needs a blind fine-tuned model at "
                f"{blind_path!r}; train it with recipes/blind_ft.py, let recipes/3drft.py "
                "train it, or set reweighting='official' or 'cal'")
        blind_model = SceneLM.from_pretrained(blind_path)
        blind_info = {"path": str(blind_path), **_read_info(blind_path).get("data", {})}
        if script_args.live_reference:
            ref_model = blind_model
        else:
            train_ds, eval_ds = (
                precompute_blind_logprobs(ds, blind_model, collator,
                                          column=training_args.blind_logprob_column,
                                          text_only_mode=training_args.text_only_mode)
                if ds is not None else None for ds in (train_ds, eval_ds))
            collator.blind_col = training_args.blind_logprob_column
    name = stage or Path(training_args.output_dir).name
    _log(f"{name}: training ({'blind' if blind else 'full'} model, reweighting="
         f"{training_args.reweighting}) on {data.source['dataset_name']} "
         f"[{data.source['train_split']}: {len(train_ds)} questions, fingerprint "
         f"{data.fingerprint}]")
    trainer = ReweightedTrainer(model=model, args=training_args, ref_model=ref_model,
                                train_dataset=train_ds, eval_dataset=eval_ds,
                                data_collator=collator, processing_class=data.tokenizer)
    result = trainer.train(resume_from_checkpoint=training_args.resume_from_checkpoint)
    trainer.save_model(training_args.output_dir)
    if trainer.is_world_process_zero():
        data.tokenizer.save_pretrained(training_args.output_dir)
        evals = [h for h in trainer.state.log_history if "eval_loss" in h]
        info = {**training_signature(script_args, training_args, data, blind=blind),
                "source": data.source, "blind_model": blind_info,
                "text_only_pass": trainer.text_only_note() or None,
                "metrics": {**result.metrics, "global_step": trainer.state.global_step,
                            **(evals[-1] if evals else {})}}
        write_json(Path(training_args.output_dir) / TRAINING_INFO, info, indent=2)
        write_model_card(training_args.output_dir, info)
    return trainer


def _read_info(path: str | os.PathLike) -> dict[str, Any]:
    f = Path(path) / TRAINING_INFO
    return json.loads(f.read_text()) if f.is_file() else {}


def ensure_blind_model(script_args: ScriptArguments, training_args: ReweightedConfig,
                       data: TrainingData) -> str:
    """Stage 1 of 3DR-FT (``paper``): the blind model the config asks for.

    A saved blind model is reused only when its training signature (architecture, data
    fingerprint, training settings) equals the one asked for. A stale model at a path the
    config names raises :class:`StaleModelError`; at the default path
    (``<output_dir>/blind``) it is retrained, and the log says why.
    """
    named = script_args.blind_model_path is not None
    path = script_args.blind_model_path or str(Path(training_args.output_dir) / "blind")
    blind_args = dataclasses.replace(training_args, output_dir=path, reweighting="none",
                                     resume_from_checkpoint=None)
    want = training_signature(script_args, blind_args, data, blind=True)
    if (Path(path) / "config.json").is_file():
        diff = _signature_diff(want, _read_info(path))
        if not diff:
            _log(f"stage 1/2 (blind model): reusing {path} (same architecture, data "
                 f"{data.fingerprint} and training settings)")
            return path
        if named:
            raise StaleModelError(
                f"blind_model_path {path} was trained with other settings than this run asks "
                f"for ({'; '.join(diff[:4])}); remove it, point blind_model_path elsewhere, or "
                "leave blind_model_path unset to train one into <output_dir>/blind")
        _log(f"stage 1/2 (blind model): {path} is stale ({'; '.join(diff[:4])}); retraining")
    _log(f"stage 1/2 (blind model): training into {path}")
    train_model(script_args, blind_args, data=data, blind=True, stage="stage 1/2 blind")
    return path


def train_3drft(script_args: ScriptArguments, training_args: ReweightedConfig
                ) -> ReweightedTrainer:
    """``recipes/3drft.py``: for the weightings that read the blind reference (``paper``,
    ``prior``, ``excess``, ``paper_normalised``) the blind model first (stage 1, explicit),
    then 3DR-FT (stage 2); ``official``, ``cal`` and ``none`` train directly."""
    with training_args.main_process_first(desc="dataset"):
        data = load_training_data(script_args)
    if mode(training_args.reweighting).needs_blind:
        script_args = dataclasses.replace(
            script_args, blind_model_path=ensure_blind_model(script_args, training_args, data))
        return train_model(script_args, training_args, data=data, blind=False,
                           stage="stage 2/2 3DR-FT")
    return train_model(script_args, training_args, data=data, blind=False)


def write_model_card(output_dir: str | os.PathLike, info: dict[str, Any]) -> None:
    """README.md beside a trained model: base, data, reweighting, metrics."""
    m, src, tr = info["model"], info["source"], info["training"]
    base = (f"`{m['model_name_or_path']}`" if m["model_name_or_path"] else
            f"`{m['lm_path']}` as the language model" if m["lm_path"] else
            f"a Llama built from config (hidden {m['hidden_size']}, {m['num_layers']} layers)")
    variant = mode(tr["reweighting"]).card
    header = {"library_name": "hf_real3d", "tags": ["3d", "scene-lm", "spatial-reasoning"]
              + (["3dr-ft"] if tr["reweighting"] != "none" else [])}
    if not Path(src["dataset_name"]).exists():
        header["datasets"] = [src["dataset_name"]]
    blind = info.get("blind_model")
    metrics = markdown_table(["metric", "value"],
                             [[k, f"{v:.4g}" if isinstance(v, float) else v]
                              for k, v in info["metrics"].items()])
    lines = [
        "---", yaml.safe_dump(header, sort_keys=False).strip(), "---", "",
        f"# {Path(output_dir).name}", "",
        f"SceneLM ({'blind: text only' if m['blind'] else 'full: text + 3D objects'}) "
        "trained with hf_real3d.", "",
        "## Base", "", f"- {base}; {m['max_objects']} object tokens x "
        f"{m['points_per_object']} points; {m['max_length']} text tokens.", "",
        "## Data", "", f"- `{src['dataset_name']}`, config `{src['config']}`, split "
        f"`{src['train_split']}` ({src['train_rows']} questions), fingerprint "
        f"`{src['fingerprint']}`.", "",
        "## Training", "", f"- {variant}.",
        f"- {tr['num_train_epochs']:g} epochs (max_steps {tr['max_steps']}), learning rate "
        f"{tr['learning_rate']:g} ({tr['lr_scheduler_type']}), batch "
        f"{tr['per_device_train_batch_size']} per device x {tr['gradient_accumulation_steps']} "
        f"accumulation, seed {tr['seed']}."]
    if mode(tr["reweighting"]).uses_clip:
        lines.append(f"- weight clip {tr['weight_clip']}, epsilon {tr['epsilon']}, "
                     f"reweight_eos {tr['reweight_eos']}.")
    if info.get("text_only_pass"):
        lines.append(f"- text-only pass (text_only_mode `{tr['text_only_mode']}`): "
                     f"{info['text_only_pass']}.")
    if blind:
        lines.append(f"- blind model: `{blind['path']}` (data fingerprint "
                     f"`{blind.get('fingerprint', '?')}`).")
    lines += ["", "## Metrics", "", metrics, ""]
    lines += ["## How to use", "", "```python", "from hf_real3d.modeling import SceneLM", "",
              f"model = SceneLM.from_pretrained({str(output_dir)!r})  # its tokenizer is "
              "saved beside it", "```", "",
              "Predictions on a built dataset (every viewpoint), then the library's scores:", "",
              "```bash",
              f"python recipes/predict.py --model {output_dir} --dataset_name "
              f"{src['dataset_name']} --out preds",
              "hf-real3d evaluate --dataset REAL3DQA_FOLDER --predictions "
              f"{Path(output_dir).name}=preds/original.jsonl,preds/rotations.jsonl "
              "--out report",
              "```", ""]
    with atomic_path(Path(output_dir) / "README.md") as tmp:
        tmp.write_text("\n".join(lines), encoding="utf-8")


# --- recipe arguments -----------------------------------------------------------------------


def make_parser(classes: tuple = (ScriptArguments, ReweightedConfig)) -> HfArgumentParser:
    parser = HfArgumentParser(classes)
    parser.add_argument("--config", default=None, help="YAML file of arguments")
    return parser


def recipe_defaults(config: str | os.PathLike) -> dict[str, Any]:
    """A recipe's defaults: the settings of its YAML config (what the README measured), so
    that the recipe run without arguments trains as documented and ``--help`` shows them."""
    loaded = read_yaml(config) or {}
    if not isinstance(loaded, dict):
        raise ValueError(f"{config}: expected a mapping of argument names to values")
    return loaded


def check_config(cfg: dict[str, Any], path: str = "config",
                 classes: tuple = (ScriptArguments, ReweightedConfig)) -> None:
    """Reject unknown keys (naming the nearest valid one) and values of the wrong type in a
    recipe's YAML, before anything is created (:func:`hf_real3d._argparse.check_values`)."""
    check_values(cfg, classes, path)


def parse_recipe_args(argv=None, defaults: dict | None = None,
                      classes: tuple = (ScriptArguments, ReweightedConfig), *,
                      fixed: dict | None = None, recipe: str = "this recipe",
                      instead: str = ""):
    """``(ScriptArguments, ReweightedConfig)`` from ``--config x.yaml`` plus flags
    (flags override the file), as trl's recipes do. YAML values are checked strictly
    (:func:`check_config`) before any argument object exists.

    ``fixed``: the values ``recipe`` stands for (``recipes/sft.py``: ``reweighting:
    none``). They are its defaults, and another value given in the file or a flag is an
    error naming the argument and ``instead``, the recipe that takes it."""
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = make_parser(classes)
    cfg: dict = {**(defaults or {}), **(fixed or {})}
    path = "config"
    if "--config" in argv:
        i = argv.index("--config")
        path = argv[i + 1]
        del argv[i:i + 2]
        loaded = read_yaml(path) or {}
        if not isinstance(loaded, dict):
            raise ValueError(f"{path}: expected a mapping of argument names to values")
        cfg.update(loaded)
    check_config(cfg, path, classes)
    parser.set_defaults(**cfg)
    parsed = parser.parse_args_into_dataclasses(args=argv, return_remaining_strings=True)
    script_args, train_args, rest = parsed[0], parsed[1], parsed[-1]
    if rest:
        raise ValueError(f"unknown command-line argument(s): {rest}")
    for key, want in (fixed or {}).items():
        got = getattr(script_args, key, getattr(train_args, key, want))
        if got != want:
            flags = {a.split("=", 1)[0].replace("-", "_") for a in argv if a.startswith("--")}
            where = f"--{key}" if f"__{key}" in flags else path
            raise ValueError(f"{where}: {key}={got!r}, but {recipe} trains with {key}={want!r}"
                             + (f"; use {instead}" if instead else "")
                             + f" (or leave {key} out)")
    return script_args, train_args


def end_distributed() -> None:
    """Tear the process group down before exit (all ranks together): left to interpreter
    shutdown, gloo's threads can abort a finished run ("terminate called without an active
    exception", seen once in a 2-process test run)."""
    if torch.distributed.is_available() and torch.distributed.is_initialized():
        # free the DDP wrappers now: a reducer left to interpreter shutdown destroys the gloo
        # group while holding the GIL, and joins gloo's loop thread, which waits for the GIL
        # to free a finished all-gather's tensor: a deadlock (seen in 1 of ~5 two-process
        # runs; the native stacks of the hung rank show exactly this)
        gc.collect()
        torch.distributed.barrier()
        torch.distributed.destroy_process_group()
        gc.collect()


def run_recipe(main, parse=parse_recipe_args, argv=None) -> None:
    """Run a recipe's ``main`` on parsed arguments; configuration errors end the process
    with one line on stderr and exit code 2 (no traceback)."""
    try:
        script_args, training_args = parse(argv)
    except (ValueError, TypeError) as err:
        print(f"{Path(sys.argv[0]).name}: error: {err}", file=sys.stderr)
        raise SystemExit(2) from None
    try:
        main(script_args, training_args)
    except (StaleModelError, FileNotFoundError) as err:
        print(f"{Path(sys.argv[0]).name}: error: {err}", file=sys.stderr)
        raise SystemExit(2) from None
    end_distributed()
