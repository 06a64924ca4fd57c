"""The recipes' arguments: :class:`ScriptArguments` (data and model, as trl's; SceneLM's
recipes) and :class:`VLMScriptArguments` (the 3drft_vlm recipe's), each beside
:class:`~hf_real3d.training.trainer.ReweightedConfig`, read by trl's ``TrlParser``: the
recipe's own YAML config, then ``--config x.yaml`` (its ``env:`` mapping set as trl sets it),
then flags. trl reads the YAML as ``yaml.safe_load`` does, so the file is first read here
strictly (a key set twice, a value of another type, an unknown key: one line naming the file)
before any argument object exists; a second ``--config``, a flag given twice and another
recipe's config are refused."""

from __future__ import annotations

import dataclasses
import difflib
import os
import sys
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import msgspec
import yaml
from trl import TrlParser

from hf_real3d.errors import FormatError, InputError
from hf_real3d.modeling.settings import SceneModelArguments, check_counts
from hf_real3d.training.augment import AUGMENT_CHOICES
from hf_real3d.training.trainer import ReweightedConfig

__all__ = ["ScriptArguments", "VLMScriptArguments", "RecipeParser", "make_parser",
           "check_values", "parse_recipe_args", "DEFAULT_DATASET"]


@dataclass
class ScriptArguments(SceneModelArguments):
    """Recipe arguments beyond the training ones (as trl's ``ScriptArguments``); SceneLM's
    own settings come from :class:`~hf_real3d.modeling.settings.SceneModelArguments`."""

    RECIPES: ClassVar[str] = "the sft, blind_ft and 3drft recipes"

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

    def __post_init__(self) -> None:
        super().__post_init__()
        check_counts(self, max_train_questions=1, dataset_num_proc=1, rotation_viewpoints=2)


@dataclass
class VLMScriptArguments:
    """The 3drft_vlm recipe's arguments beyond the training ones."""

    RECIPES: ClassVar[str] = "the 3drft_vlm recipe"

    dataset_name: str = field(default="data/synth", metadata={
        "help": "Dataset folder with the scenes config (hf-real3d synth); its views config is "
                "rendered when absent."})
    dataset_config: str = field(default="sqa3d", metadata={"help": "Config of the questions."})
    dataset_train_split: str = field(default="train", metadata={"help": "Training split."})
    model_name_or_path: str | None = field(default=None, metadata={
        "help": "Local VLM folder (model + processor); default: a small LLaVA from config."})
    blind_model_path: str | None = field(default=None, metadata={
        "help": "Frozen blind VLM folder for reweighting='paper'."})
    hidden_size: int = field(default=64, metadata={"help": "Width of the built LLaVA."})
    num_layers: int = field(default=2, metadata={"help": "Layers of the built LLaVA."})
    image_size: int = field(default=64, metadata={"help": "Side of the views given to it."})
    max_train_questions: int | None = field(default=None, metadata={
        "help": "Use only the first N training questions."})
    rotation_augment: str | None = field(default=None, metadata={
        "help": "Also train on each question from its turned viewpoints ('all', or 'one' "
                "seeded), rewritten from the scenes' geometry; the egocentric frame of a "
                "turned viewpoint is rendered from the turned pose. Default: none.",
        "choices": list(AUGMENT_CHOICES)})
    rotation_viewpoints: int = field(default=4, metadata={
        "help": "With rotation_augment: viewpoints per question."})

    def __post_init__(self) -> None:
        check_counts(self, hidden_size=1, num_layers=1, image_size=8, max_train_questions=1,
                     rotation_viewpoints=2)


DEFAULT_DATASET = ScriptArguments.dataset_name  # the embedded benchmark's default folder
SCRIPT_CLASSES = (ScriptArguments, VLMScriptArguments)  # one per kind of recipe


class RecipeParser(TrlParser):
    """trl's parser of a recipe's dataclasses (``--config FILE.yaml``, then flags over it),
    whose mistakes are one line: argparse's own errors (a value of another type, a choice
    outside the list) raise :class:`InputError` instead of printing the usage."""

    def __init__(self, classes: tuple = (ScriptArguments, ReweightedConfig)) -> None:
        super().__init__(classes)
        self.add_argument("--config", default=None,
                          help="YAML file of arguments (one file; flags override it)")

    def error(self, message: str):
        raise InputError(message)


def make_parser(classes: tuple = (ScriptArguments, ReweightedConfig)) -> RecipeParser:
    """The recipes' parser (as trl's scripts' ``make_parser``)."""
    return RecipeParser(classes)


class _UniqueKeyLoader(yaml.SafeLoader):
    """PyYAML's safe loader, for which a key set twice in one mapping is an error."""

    def construct_mapping(self, node, deep=False):
        seen: dict[Any, int] = {}
        for key_node, _ in node.value:
            key, line = self.construct_object(key_node, deep=deep), key_node.start_mark.line + 1
            if key in seen:
                raise FormatError(f"{self.name}: line {line}: key {key!r} is set twice (first "
                                  f"at line {seen[key]}); keep one")
            seen[key] = line
        return super().construct_mapping(node, deep=deep)


def _read_mapping(path: str | os.PathLike) -> dict[str, Any]:
    """A YAML file of arguments read strictly (a byte-order mark allowed): a key set twice or
    malformed YAML is a :class:`FormatError` naming the file and line."""
    if not Path(path).is_file():
        raise FileNotFoundError(f"{path}: no such file")
    loader = _UniqueKeyLoader(Path(path).read_text(encoding="utf-8-sig"))
    loader.name = str(path)
    try:
        loaded = loader.get_single_data()
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        at = f"line {mark.line + 1}, column {mark.column + 1}: " if mark is not None else ""
        raise FormatError(f"{path}: malformed YAML: {at}"
                          f"{getattr(err, 'problem', None) or err}") from None
    finally:
        loader.dispose()
    if loaded is not None and not isinstance(loaded, dict):
        raise InputError(f"{path}: expected a mapping of argument names to values")
    return loaded or {}


def check_values(cfg: dict[str, Any], classes: tuple, path: str = "config") -> None:
    """A mapping of argument values (a YAML file's) for the fields of ``classes``: an unknown
    key is refused naming the nearest valid one, a value of another type than the field's
    (checked exactly, as msgspec's strict conversion does: 6.5 is no int, [0.1] no float,
    "3" no number) naming the field and the value."""
    hints = {f.name: typing.get_type_hints(c)[f.name] for c in classes
             for f in dataclasses.fields(c) if f.init}
    for key, value in cfg.items():
        if key not in hints:
            near = difflib.get_close_matches(str(key), list(hints), n=1)
            raise ValueError(f"{path}: unknown argument {key!r}"
                             + (f"; did you mean {near[0]!r}?" if near else ""))
        tp = hints[key]
        try:
            msgspec.convert(value, tp, strict=True)
        except msgspec.ValidationError:
            name = getattr(tp, "__name__", None) or str(tp).replace("typing.", "")
            raise TypeError(f"{path}: {key}: expected {name} but got {value!r} "
                            f"({type(value).__name__})") from None
        except TypeError:  # a union msgspec does not take (an Enum or str): its values are str
            if str in typing.get_args(tp) and not isinstance(value, str):
                raise TypeError(f"{path}: {key}: expected str but got {value!r} "
                                f"({type(value).__name__})") from None


def _config_path(argv: list[str]) -> str | None:
    """The one ``--config`` of ``argv`` (``--config=X`` rewritten in place as trl reads it);
    none, two, or one without its file are refused."""
    for i, a in enumerate(argv):
        if a.startswith("--config="):
            argv[i:i + 1] = ["--config", a.split("=", 1)[1]]
    at = [i for i, a in enumerate(argv) if a == "--config"]
    if len(at) > 1:
        files = ", ".join(argv[i + 1] if i + 1 < len(argv) else "?" for i in at)
        raise InputError(f"--config given {len(at)} times ({files}): a recipe reads one YAML "
                         "file; merge them into one, or set the other file's values as flags")
    if not at:
        return None
    path = argv[at[0] + 1] if at[0] + 1 < len(argv) else ""
    if not path or path.startswith("--"):
        raise InputError("--config needs a YAML file: --config FILE.yaml")
    return path


def _no_flag_twice(argv: list[str]) -> None:
    """A flag given twice is refused (argparse would keep the last silently)."""
    seen: dict[str, str] = {}
    for a in argv:
        if not a.startswith("--") or a == "--config":
            continue
        name = a[2:].split("=", 1)[0].replace("-", "_")
        name = name[3:] if name.startswith("no_") else name
        if name in seen:
            raise InputError(f"--{name} is given twice ({seen[name]} and {a}); keep one")
        seen[name] = a


def _check_env(env: Any, path: str) -> None:
    """trl's ``env:`` form: a mapping of variable names to plain values."""
    if not isinstance(env, dict) or not all(
            isinstance(k, str) and isinstance(v, str | int | float | bool) for k, v in env.items()):
        raise InputError(f"{path}: env: expected a mapping of environment variable names to "
                         "values (trl's form: `env:` then `NAME: value` lines)")


def _check_keys(cfg: dict[str, Any], classes: tuple, path: str, recipe: str) -> None:
    """A key that belongs to another kind of recipe names the recipes that take it."""
    names = {f.name for c in classes for f in dataclasses.fields(c)}
    for other in SCRIPT_CLASSES:
        if other in classes:
            continue
        theirs = {f.name for f in dataclasses.fields(other)} - names
        key = next((k for k in cfg if k in theirs), None)
        if key is not None:
            raise InputError(f"{path}: {key!r} is a setting of {other.RECIPES}, not of {recipe}"
                             ": is this another recipe's config? Give this recipe's own, or "
                             "remove the key")
    check_values(cfg, classes, path)


def _other_configs(own: Path | None) -> dict[Path, Any]:
    """The packaged configs of the other recipes (beside ``own``) -> their ``output_dir``."""
    if own is None:
        return {}
    return {p.resolve(): _read_mapping(p).get("output_dir") for p in own.parent.glob("*.yaml")
            if p.resolve() != own.resolve()}


def _not_another_recipes(path: str | None, training_args: Any, own: Path | None,
                         recipe: str) -> None:
    """Refuse another recipe's packaged config, and an ``output_dir`` where another recipe's
    config writes (its model would be overwritten)."""
    others = _other_configs(own)
    if path is not None and Path(path).resolve() in others:
        raise InputError(f"--config {path} is another recipe's packaged config; {recipe} reads "
                         f"{own.name} (give that, or your own file, or run the recipe "
                         f"{Path(path).name} is for)")
    out = Path(getattr(training_args, "output_dir", None) or "").resolve()
    taken = next((p for p, o in others.items() if o and Path(o).resolve() == out), None)
    if taken is not None:
        raise InputError(f"output_dir {training_args.output_dir}: where another recipe's config "
                         f"({taken.name}) writes its model, not {recipe}'s; give output_dir a "
                         "place of its own")


def parse_recipe_args(argv=None, config: str | os.PathLike | None = None,
                      classes: tuple = (ScriptArguments, ReweightedConfig), *,
                      fixed: dict[str, tuple[Any, str]] | None = None,
                      recipe: str = "this recipe"):
    """One object per class of ``classes`` (a recipe's: its script arguments, then
    ``ReweightedConfig``) from the recipe's own YAML ``config`` (its defaults), then
    ``--config x.yaml``, then flags, parsed by trl's ``TrlParser``
    (:class:`RecipeParser`). YAML values are checked strictly first
    (:func:`hf_real3d._argparse.check_values`).

    ``fixed``: the values ``recipe`` stands for, each with the recipe that takes another
    value (the sft recipe: ``reweighting: none``, else the 3drft recipe). They are its
    defaults, and another value given in the file or a flag is an error naming the argument
    and that recipe."""
    argv = list(sys.argv[1:] if argv is None else argv)
    path = _config_path(argv)
    _no_flag_twice(argv)
    own = Path(config) if config is not None else None
    fixed = fixed or {}
    defaults = {**(_read_mapping(own) if own else {}), **{k: v for k, (v, _) in fixed.items()}}
    check_values(defaults, classes, str(own or "config"))
    given = _read_mapping(path) if path else {}
    if "env" in given:
        _check_env(given["env"], path)
    _check_keys({k: v for k, v in given.items() if k != "env"}, classes, path, recipe)
    parser = make_parser(classes)
    parser.set_defaults_with_config(**defaults)
    parsed = parser.parse_args_and_config(argv, return_remaining_strings=True)
    objs, rest = parsed[:len(classes)], parsed[-1]
    if rest:
        near = difflib.get_close_matches(rest[0].split("=")[0].lstrip("-").replace("-", "_"),
                                         [f.name for c in classes for f in dataclasses.fields(c)],
                                         n=1)
        raise InputError(f"unknown command-line argument(s): {rest}"
                         + (f"; did you mean --{near[0]}?" if near else ""))
    for key, (want, instead) in fixed.items():
        got = next((getattr(o, key) for o in objs if hasattr(o, key)), want)
        if got != want:
            flags = {a.split("=", 1)[0].replace("-", "_") for a in argv if a.startswith("--")}
            where = f"--{key}" if f"__{key}" in flags else path
            raise InputError(f"{where}: {key}={got!r}, but {recipe} trains with {key}={want!r}; "
                             f"use {instead} (or leave {key} out)")
    _not_another_recipes(path, objs[-1], own, recipe)
    return objs
