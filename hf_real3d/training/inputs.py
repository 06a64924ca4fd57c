"""What a recipe reads, checked before any data is loaded or anything is written
(:func:`check_recipe_inputs`): the saved models it starts from (a folder of the right
architecture with its weights: transformers would otherwise build fresh weights for another
architecture's folder and train them), its tokenizer, its checkpoint, and an ``output_dir``
that is no file, no input, inside none and holding none. :func:`saved_model` also serves
``hf-real3d predict``."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from transformers.models.auto.modeling_auto import (
    MODEL_FOR_CAUSAL_LM_MAPPING_NAMES,
    MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES,
)

from hf_real3d._io import check_out, model_folder
from hf_real3d.errors import InputError
from hf_real3d.training.modes import mode

__all__ = ["saved_model", "check_recipe_inputs", "has_tokenizer"]

# a kind of model -> (what it is, in words; the model types that are one)
KINDS = {
    "scene_lm": ("a SceneLM saved by the sft, blind_ft or 3drft recipe", {"scene_lm"}),
    "causal_lm": ("a causal language model (AutoModelForCausalLM: Llama, Qwen2, ...)",
                  set(MODEL_FOR_CAUSAL_LM_MAPPING_NAMES)),
    "vlm": ("a vision-language model (AutoModelForImageTextToText: LLaVA, Qwen2-VL, ...)",
            set(MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES)),
}


def saved_model(path: str | os.PathLike, option: str, kind: str, *,
                tokenizer: bool = False) -> dict[str, Any]:
    """The config of the saved model folder ``path`` (given as ``option``), which must hold
    a model of ``kind`` (a key of :data:`KINDS`) with its weights (and its tokenizer)."""
    cfg = model_folder(path, option)
    what, types = KINDS[kind]
    got = cfg.get("model_type")
    if got not in types:
        other = next((w for k, (w, t) in KINDS.items() if k != kind and got in t), None)
        raise InputError(f"`{option}` {path}: holds {other or f'a {got!r} model'}, not {what}; "
                         "give a folder of that kind (transformers would start it from fresh "
                         "weights)")
    if tokenizer and not has_tokenizer(path):
        raise InputError(f"`{option}` {path}: no tokenizer (tokenizer.json) beside the model; "
                         "save the tokenizer it was trained with into the folder")
    return cfg


def has_tokenizer(path: str | os.PathLike) -> bool:
    """Whether the folder ``path`` holds a saved tokenizer."""
    return any((Path(path) / n).is_file() for n in ("tokenizer.json", "tokenizer_config.json"))


def check_recipe_inputs(script_args: Any, training_args: Any, *, kind: str = "scene_lm") -> None:
    """The models, tokenizer, checkpoint and output folder of a recipe's run (``kind``: the
    model it trains), checked before its data is read."""
    s, t = script_args, training_args
    if s.model_name_or_path:
        saved_model(s.model_name_or_path, "model_name_or_path", kind)
    if getattr(s, "lm_path", None):
        saved_model(s.lm_path, "lm_path", "causal_lm")
    if getattr(s, "tokenizer_path", None) and not has_tokenizer(s.tokenizer_path):
        raise InputError(f"`tokenizer_path` {s.tokenizer_path}: no tokenizer there "
                         "(tokenizer.json); give a folder saved by save_pretrained, or leave "
                         "it out to train one on the training split")
    blind = Path(s.blind_model_path) if s.blind_model_path else None
    if kind == "vlm" and not blind and mode(t.reweighting).needs_blind:
        raise InputError(f"reweighting={t.reweighting!r} needs `blind_model_path` (a blind VLM "
                         "folder); or use reweighting='official' or 'cal'")
    if blind and (kind == "vlm" or (blind / "config.json").is_file()):
        saved_model(blind, "blind_model_path", kind)
    elif blind and blind.exists() and (not blind.is_dir() or any(blind.iterdir())):
        raise InputError(f"`blind_model_path` {blind}: neither a saved model nor a new folder to "
                         "train the blind model into; give one of the two")
    if t.init_from_blind:
        saved_model(t.init_from_blind, "init_from_blind", kind)
    ckpt = t.resume_from_checkpoint
    if isinstance(ckpt, str) and not Path(ckpt, "trainer_state.json").is_file():
        raise InputError(f"`resume_from_checkpoint` {ckpt}: not a checkpoint folder (no "
                         "trainer_state.json); give an <output_dir>/checkpoint-N folder")
    _check_output_dir(s, t)


def _check_output_dir(s: Any, t: Any) -> None:
    out = Path(t.output_dir)
    if out.exists() and not out.is_dir():
        raise InputError(f"`output_dir` {t.output_dir}: a file; give a folder")
    inputs = {k: getattr(s, k, None) for k in ("dataset_name", "model_name_or_path", "lm_path",
                                                "tokenizer_path", "rotation_set")}
    inputs["init_from_blind"] = t.init_from_blind
    check_out(out, name="output_dir", prefix="--",
              **{k: v for k, v in inputs.items() if v and Path(v).exists()})
    blind = s.blind_model_path
    if blind and not getattr(s, "blind", False) and Path(blind).resolve() == out.resolve():
        raise InputError(f"`output_dir` {t.output_dir} is `blind_model_path`: the model trained "
                         "would replace the blind reference it reads; give output_dir a place "
                         "of its own")
