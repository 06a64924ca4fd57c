"""The steps the recipes spell out: the training data of a built dataset, the model, 3DR-FT's
blind-model stage (:func:`blind_stage`: reuse the saved blind model, refuse a stale one, or
say it must be trained), the blind reference's log-probs, the announcement, the saved model
with its training signature and card. The flow itself (data, model, trainer, train, save) is
written out once, in each recipe's ``main`` (:mod:`hf_real3d.recipes`); the demo and the tests
train by calling those ``main`` functions. Data always comes from ``datasets``
(``--dataset_name``: a folder built by ``hf-real3d synth`` / ``build-real3dqa``, or a Hub
id); the recipes build the default folder (``data/synth``) when it is absent.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import sys
from pathlib import Path
from typing import Any, NamedTuple

from hf_real3d._io import readable_as_written, write_json
from hf_real3d.errors import InputError
from hf_real3d.modeling import (
    SceneLM,
    SceneLMConfig,
    SceneQACollator,
)
from hf_real3d.modeling.settings import SceneModelArguments
from hf_real3d.training.args import ScriptArguments
from hf_real3d.training.augment import rotation_augment
from hf_real3d.training.blind import precompute_blind_logprobs
from hf_real3d.training.card import write_model_card
from hf_real3d.training.data import (
    TrainingData,
    build_tokenizer,
    data_fingerprint,
    load_scene_bank,
    load_split,
    tokenize_dataset,
)
from hf_real3d.training.inputs import has_tokenizer
from hf_real3d.training.modes import MODES, mode
from hf_real3d.training.trainer import ReweightedConfig, ReweightedTrainer

__all__ = ["load_training_data", "build_model", "reference_data", "announce", "save_trained",
           "training_signature", "check_augment_args", "TRAINING_INFO", "StaleModelError",
           "BlindStage", "blind_stage", "log"]

logger = logging.getLogger("hf_real3d.training")
TRAINING_INFO = "hf_real3d_training.json"  # written beside every trained model


def log(msg: str) -> None:
    """One line of a training's story, to the log and to stderr."""
    logger.info(msg)
    print(f"[hf_real3d] {msg}", file=sys.stderr, flush=True)


# --- data and model -------------------------------------------------------------------------


def load_training_data(args: ScriptArguments, *, tokenizer=None) -> TrainingData:
    """Question splits and scenes from ``args.dataset_name``, tokenized for training;
    ``tokenizer``: the one to use (default: :func:`build_tokenizer`'s, from
    ``args.tokenizer_path`` or trained on the training split)."""
    check_augment_args(args)
    train = load_split(args.dataset_name, args.dataset_config, args.dataset_train_split)
    if args.max_train_questions is not None:
        train = train.select(range(min(args.max_train_questions, len(train))))
    ev = load_split(args.dataset_name, args.dataset_config, args.dataset_test_split) \
        if args.dataset_test_split else None
    augment = None
    if args.rotation_augment:
        n_questions = len(train)
        train = _augment(args, train, ev)
        augment = {"choose": args.rotation_augment, "viewpoints": args.rotation_viewpoints,
                   "questions": n_questions, "rows": len(train),
                   "from": args.rotation_set or "geometry",
                   **({"kinds": _kinds(args)} if args.rotation_kinds else {})}
    bank = load_scene_bank(args.dataset_name, args.scenes_config, max_objects=args.max_objects,
                           points_per_object=args.points_per_object)
    missing = sorted({s for ds in (train, ev) if ds is not None for s in ds["scene_id"]}
                     - set(bank.points))
    if missing:
        raise InputError(f"{args.dataset_name}: questions refer to scene {missing[0]!r} (and "
                         f"{len(missing) - 1} more) absent from config {args.scenes_config!r}")
    if tokenizer is None:  # a saved model's own tokenizer, unless another is named
        start = args.model_name_or_path
        tokenizer = build_tokenizer(train, args.tokenizer_path or (
            start if start and has_tokenizer(start) else None))
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
    if augment:
        source["rotation_augment"] = augment
    return TrainingData(train, ev, bank, tokenizer, fp, source)


def _kinds(args: ScriptArguments) -> list[str]:
    return [k.strip() for k in (args.rotation_kinds or "").split(",") if k.strip()]


def check_augment_args(args: ScriptArguments) -> None:
    """Refuse the rotation options that would do nothing or something else than meant,
    before any data is read."""
    if not args.rotation_augment:
        given = [f"`{k}`" for k in ("rotation_set", "rotation_kinds")
                 if getattr(args, k) is not None]
        if given:
            raise InputError(f"{', '.join(given)} without `rotation_augment`: nothing would be "
                             "augmented; set `rotation_augment` to all (or one)")
        return
    if args.rotation_kinds is not None and not _kinds(args):
        raise InputError("`rotation_kinds` is empty; name the kinds to turn, comma-separated")


def _augment(args: ScriptArguments, train, ev):
    """The training split with its turned viewpoints (:func:`rotation_augment`), from the
    rotation set or the scenes' geometry; the rooms and ids evaluated on are refused."""
    rooms, ids = _held_out(args, ev)
    scenes = None
    if not args.rotation_set:
        try:
            scenes = load_split(args.dataset_name, args.scenes_config, args.dataset_train_split)
        except (ValueError, FileNotFoundError) as err:
            raise InputError(
                f"`rotation_augment`: {args.dataset_name} has no {args.scenes_config!r} config "
                f"for its {args.dataset_train_split!r} split (the rooms' geometry the turns are "
                f"rewritten from: {err}); give `rotation_set` (a release folder or what "
                "hf-real3d rotate / export-rotations write) or a dataset with scenes") from None
    return rotation_augment(
        train, scenes, rotations=args.rotation_set, choose=args.rotation_augment,
        viewpoints=args.rotation_viewpoints, exclude_scenes=rooms, exclude_ids=ids,
        kinds=_kinds(args) or None, kind_column=args.rotation_kind_column)


def _held_out(args: ScriptArguments, ev) -> tuple[set[str], set[int]]:
    """The rooms and question ids of the splits a model trained on ``args`` is evaluated
    on: the evaluation split (``ev``, already loaded) and ``test`` (when the dataset has
    one)."""
    splits = [ev] if ev is not None else []
    for split in {"test"} - {args.dataset_test_split}:
        try:
            splits.append(load_split(args.dataset_name, args.dataset_config, split))
        except ValueError:  # the dataset has no such split (datasets: "Unknown split")
            continue
    return ({s for ds in splits for s in ds["scene_id"]},
            {int(q) for ds in splits for q in ds["question_id"]})


def build_model(args: ScriptArguments, tokenizer, *, blind: bool | None = None) -> SceneLM:
    """The SceneLM to train: a saved one (``model_name_or_path``), one around a local causal LM
    (``lm_path``), or one built from config; ``blind`` sets whether it reads the scene."""
    if args.model_name_or_path:
        model = SceneLM.from_pretrained(args.model_name_or_path)
        rows = model.get_input_embeddings().num_embeddings
        if len(tokenizer) != rows:
            raise InputError(f"`model_name_or_path` {args.model_name_or_path}: its embedding has "
                             f"{rows} rows but the tokenizer {len(tokenizer)} tokens; give the "
                             "tokenizer it was trained with (`tokenizer_path`)")
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


def _training_keys() -> tuple[str, ...]:
    """The training settings a signature records: the common ones, then every registered
    mode's own hyperparameters (the same keys whatever the mode, so that signatures of two
    modes compare key by key)."""
    own = [k for m in MODES.values() for k in m.params if k not in _TRAIN_KEYS]
    return (*_TRAIN_KEYS, *dict.fromkeys(own))


def training_signature(script_args: ScriptArguments, training_args: ReweightedConfig,
                       data: TrainingData, *, blind: bool) -> dict[str, Any]:
    """What determines a trained model: its architecture, the data it saw (fingerprint) and
    the training settings (hence its step count)."""
    return {
        "model": {**{k: getattr(script_args, k) for k in _MODEL_KEYS}, "blind": bool(blind)},
        "data": {"fingerprint": data.fingerprint, "train_rows": len(data.train)},
        "training": {k: getattr(training_args, k) for k in _training_keys()},
    }


def _signature_diff(want: dict, have: dict) -> list[str]:
    out = []
    for part in want:
        for k, v in want[part].items():
            got = have.get(part, {}).get(k, "<absent>")
            if got != v:
                out.append(f"{part}.{k}: saved {got!r}, asked {v!r}")
    return out


class StaleModelError(InputError):
    """A saved model was trained with other settings than the ones asked for."""


class BlindStage(NamedTuple):
    """Stage 1 of 3DR-FT: the blind model's run (the blind_ft recipe's arguments) and whether
    it must be trained now (False: the saved one is used)."""

    script_args: ScriptArguments
    training_args: ReweightedConfig
    train: bool


def blind_stage(script_args: ScriptArguments, training_args: ReweightedConfig,
                data: TrainingData) -> BlindStage:
    """Stage 1 of 3DR-FT, for the modes that read the blind reference: the blind model the
    run asks for, in ``blind_model_path`` or ``<output_dir>/blind``, trained as the blind_ft
    recipe trains (``blind``, ``reweighting='none'``, this run's other settings).

    A saved blind model is reused only when its training signature (architecture, data
    fingerprint, training settings) equals the one asked for, or when the config names it
    with ``check_blind_model`` false. A stale model at a path the config names raises
    :class:`StaleModelError`; at the default path it is to be retrained, and the log says
    why.
    """
    named = script_args.blind_model_path is not None
    path = script_args.blind_model_path or str(Path(training_args.output_dir) / "blind")
    # trained without reweighting: the mode's own weight_grad does not apply to it
    blind_args = dataclasses.replace(training_args, output_dir=path, reweighting="none",
                                     weight_grad=False, resume_from_checkpoint=None)
    run = (dataclasses.replace(script_args, blind=True), blind_args)
    if (Path(path) / "config.json").is_file():
        if named and not script_args.check_blind_model:
            log(f"stage 1/2 (blind model): using {path} as it is (check_blind_model false)")
            return BlindStage(*run, train=False)
        want = training_signature(script_args, blind_args, data, blind=True)
        diff = _signature_diff(want, _read_info(path))
        if not diff:
            log(f"stage 1/2 (blind model): reusing {path} (same architecture, data "
                f"{data.fingerprint} and training settings)")
            return BlindStage(*run, train=False)
        if named:
            raise StaleModelError(
                f"blind_model_path {path} was trained with other settings than this run asks "
                f"for ({'; '.join(diff[:4])}); remove it, point blind_model_path elsewhere, "
                "leave blind_model_path unset to train one into <output_dir>/blind, or set "
                "check_blind_model false to use it as it is")
        log(f"stage 1/2 (blind model): {path} is stale ({'; '.join(diff[:4])}); retraining")
    log(f"stage 1/2 (blind model): training into {path}")
    return BlindStage(*run, train=True)


# --- training -------------------------------------------------------------------------------


def reference_data(script_args: ScriptArguments, training_args: ReweightedConfig,
                   data: TrainingData, collator) -> tuple[Any, Any, Any, dict | None]:
    """``(train, eval, ref_model, blind_info)``: the datasets the trainer gets and, for a
    mode that reads the blind reference, that reference (precomputed into a column, or a
    live frozen model with ``live_reference``); unchanged otherwise."""
    train_ds, eval_ds = data.train, data.eval
    if not mode(training_args.reweighting).needs_blind:
        return train_ds, eval_ds, None, None
    blind_path = script_args.blind_model_path
    if not blind_path or not (Path(blind_path) / "config.json").is_file():
        raise FileNotFoundError(
            f"reweighting={training_args.reweighting!r} needs a blind fine-tuned model at "
            f"{blind_path!r}; train it with the blind_ft recipe, let the 3drft recipe "
            "train it, or set reweighting='official' or 'cal'")
    blind_model = SceneLM.from_pretrained(blind_path)
    blind_info = {"path": str(blind_path), **_read_info(blind_path).get("data", {})}
    if script_args.live_reference:
        return train_ds, eval_ds, blind_model, blind_info
    train_ds, eval_ds = (
        precompute_blind_logprobs(ds, blind_model, collator,
                                  column=training_args.blind_logprob_column,
                                  text_only_mode=training_args.text_only_mode)
        if ds is not None else None for ds in (train_ds, eval_ds))
    collator.blind_col = training_args.blind_logprob_column
    return train_ds, eval_ds, None, blind_info


def announce(name: str, training_args: ReweightedConfig, data: TrainingData, n_train: int, *,
             blind: bool) -> None:
    """Log the training about to start: which model, which reweighting, on what data."""
    log(f"{name}: training ({'blind' if blind else 'full'} model, reweighting="
         f"{training_args.reweighting}) on {data.source['dataset_name']} "
         f"[{data.source['train_split']}: {n_train} questions, fingerprint "
         f"{data.fingerprint}]")


def save_trained(trainer: ReweightedTrainer, result, script_args: ScriptArguments,
                 training_args: ReweightedConfig, data: TrainingData, *, blind: bool,
                 blind_info: dict | None = None) -> None:
    """Save the model, its tokenizer, ``hf_real3d_training.json`` (the training signature
    and metrics) and the model card to ``training_args.output_dir``."""
    trainer.save_model(training_args.output_dir)
    if not trainer.is_world_process_zero():
        return
    data.tokenizer.save_pretrained(training_args.output_dir)
    evals = [h for h in trainer.state.log_history if "eval_loss" in h]
    info = {**training_signature(script_args, training_args, data, blind=blind),
            "source": data.source, "blind_model": blind_info,
            "text_only_pass": trainer.text_only_note() or None,
            "metrics": {**result.metrics, "global_step": trainer.state.global_step,
                        **(evals[-1] if evals else {})}}
    write_json(Path(training_args.output_dir) / TRAINING_INFO, info, indent=2)
    write_model_card(training_args.output_dir, info)
    readable_as_written(training_args.output_dir)  # safetensors writes 0600


def _read_info(path: str | os.PathLike) -> dict[str, Any]:
    f = Path(path) / TRAINING_INFO
    return json.loads(f.read_text()) if f.is_file() else {}
