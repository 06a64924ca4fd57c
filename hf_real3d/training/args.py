"""The recipes' arguments: :class:`ScriptArguments` (data and model, as trl's) beside
:class:`~hf_real3d.training.trainer.ReweightedConfig`, read from ``--config x.yaml`` plus
flags, with the YAML checked strictly before any argument object exists."""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from typing import Any

from transformers import HfArgumentParser

from hf_real3d._argparse import check_values
from hf_real3d._yaml import read_yaml
from hf_real3d.errors import InputError
from hf_real3d.modeling.settings import SceneModelArguments
from hf_real3d.training.trainer import ReweightedConfig

__all__ = ["ScriptArguments", "make_parser", "recipe_defaults", "check_config",
           "parse_recipe_args", "DEFAULT_DATASET"]


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
        "help": "Blind fine-tuned model for the modes that read one (reweighting='paper', "
                "'prior', 'excess', 'paper_normalised'). When absent (or stale and not named "
                "here) 3drft.py trains it first (blind_ft.py's flow) into <output_dir>/blind."})
    check_blind_model: bool = field(default=True, metadata={
        "help": "Use a blind model found at blind_model_path only when it was trained with "
                "this run's architecture, data and settings (its hf_real3d_training.json); a "
                "stale one named here is an error. False: use it as it is, e.g. one trained "
                "from scratch for a run that fine-tunes a trained model (the demo's 3DR-FT "
                "arms)."})
    live_reference: bool = field(default=False, metadata={
        "help": "Run the blind model live as a frozen reference instead of precomputing."})
    max_train_questions: int | None = field(default=None, metadata={
        "help": "Use only the first N training questions."})
    rotation_augment: str | None = field(default=None, metadata={
        "help": "Also train on each question from its turned viewpoints, rewritten from the "
                "scene's geometry: 'all' of them, or 'one' per question (seeded); the rows of "
                "a question share a viewpoint_group (what reweighting='viewpoint_dro' reads). "
                "Default: no augmentation.", "choices": ["all", "one"]})
    rotation_viewpoints: int = field(default=4, metadata={
        "help": "With rotation_augment: viewpoints per question (the agent turned by 360/N "
                "degrees each time)."})
    rotation_set: str | None = field(default=None, metadata={
        "help": "With rotation_augment: take the turned viewpoints from this rotation set (a "
                "release folder, a folder of rotation_{k}.json files, or a dataset folder "
                "with a rotations config, as rotate / export-rotations write) instead of "
                "rewriting them from the scenes' geometry. Matched on question_id; a set "
                "sharing ids with the evaluation split is refused."})
    rotation_kinds: str | None = field(default=None, metadata={
        "help": "With rotation_augment: turn only the questions whose rotation_kind_column is "
                "one of these (comma-separated); the rest keep their row alone (a transfer "
                "test: consistency measured on kinds never seen turned)."})
    rotation_kind_column: str = field(default="kind", metadata={
        "help": "The column rotation_kinds reads."})


DEFAULT_DATASET = ScriptArguments.dataset_name  # the embedded benchmark's default folder


def make_parser(classes: tuple = (ScriptArguments, ReweightedConfig)) -> HfArgumentParser:
    """An ``HfArgumentParser`` over ``classes`` with the recipes' ``--config`` option."""
    parser = HfArgumentParser(classes)
    parser.add_argument("--config", default=None, help="YAML file of arguments")
    return parser


def recipe_defaults(config: str | os.PathLike) -> dict[str, Any]:
    """A recipe's defaults: the settings of its YAML config (what the README measured), so
    that the recipe run without arguments trains as documented and ``--help`` shows them."""
    loaded = read_yaml(config) or {}
    if not isinstance(loaded, dict):
        raise InputError(f"{config}: expected a mapping of argument names to values")
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

    ``fixed``: the values ``recipe`` stands for (the sft recipe: ``reweighting:
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
            raise InputError(f"{path}: expected a mapping of argument names to values")
        cfg.update(loaded)
    check_config(cfg, path, classes)
    parser.set_defaults(**cfg)
    parsed = parser.parse_args_into_dataclasses(args=argv, return_remaining_strings=True)
    script_args, train_args, rest = parsed[0], parsed[1], parsed[-1]
    if rest:
        raise InputError(f"unknown command-line argument(s): {rest}")
    for key, want in (fixed or {}).items():
        got = getattr(script_args, key, getattr(train_args, key, want))
        if got != want:
            flags = {a.split("=", 1)[0].replace("-", "_") for a in argv if a.startswith("--")}
            where = f"--{key}" if f"__{key}" in flags else path
            raise InputError(f"{where}: {key}={got!r}, but {recipe} trains with {key}={want!r}"
                             + (f"; use {instead}" if instead else "")
                             + f" (or leave {key} out)")
    return script_args, train_args
