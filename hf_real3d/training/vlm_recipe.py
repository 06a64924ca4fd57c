"""What the 3drft_vlm recipe (:mod:`hf_real3d.recipes.threedrft_vlm`) uses: 3DR-FT of a
Hugging Face VLM on a built dataset's rendered views (the recipe spells the flow out: data,
model, reference, trainer, save).

The questions (config ``sqa3d``) are joined with the ``views`` config on ``question_id`` and
``rotation_deg`` (rendered first, with one log line, when the folder lacks it), so a VLM
trains on the same questions as SceneLM: images ``[BEV, egocentric frame]``, prompt =
situation + question, answer = the first accepted answer. The model is a local VLM folder
(``model_name_or_path``, with its processor) or a small LLaVA built from config with a
word-level tokenizer trained on the data.

With ``rotation_augment`` each training question is also asked from its turned viewpoints
(:func:`~hf_real3d.training.augment.rotation_augment`), and the egocentric frame of a
turned viewpoint is rendered from the turned pose: the frames follow the turn, the BEV
stays the room's.
"""

from __future__ import annotations

from pathlib import Path

import datasets
import torch
from transformers import (
    AutoModelForImageTextToText,
    AutoProcessor,
    CLIPImageProcessor,
    CLIPVisionConfig,
    LlamaConfig,
    LlavaConfig,
    LlavaForConditionalGeneration,
    LlavaProcessor,
)

from hf_real3d.errors import InputError
from hf_real3d.hub import card_configs
from hf_real3d.modeling import train_tokenizer
from hf_real3d.sources import SceneRows
from hf_real3d.training.args import VLMScriptArguments
from hf_real3d.training.augment import rotation_augment
from hf_real3d.training.data import load_split
from hf_real3d.training.modes import mode
from hf_real3d.training.recipe import log
from hf_real3d.training.trainer import ReweightedConfig
from hf_real3d.views import add_views_config, view_rows

__all__ = ["vlm_rows", "build_small_llava", "small_llava", "load_vlm", "blind_vlm",
           "announce_vlm"]


def vlm_rows(dataset_name: str, config: str, split: str, *, limit: int | None = None,
             augment: str | None = None, rotation_viewpoints: int = 4
             ) -> datasets.Dataset:
    """Questions joined with their rendered views: ``images, prompt, answer``. With
    ``augment`` (``"all"`` or ``"one"``) the questions are turned first and the rows carry
    ``viewpoint_group`` and ``rotation_deg``: a turned viewpoint's frame is rendered from
    its turned pose, at the size of the views config; the test split's rooms are
    refused."""
    qs = load_split(dataset_name, config, split)
    if limit is not None:
        qs = qs.select(range(min(limit, len(qs))))
    scenes = None
    if augment:
        scenes = SceneRows(load_split(dataset_name, "scenes", split), dataset_name)
        try:  # the test split's rooms are never augmented, whatever split trains
            held = set(load_split(dataset_name, config, "test")["scene_id"])
        except ValueError:  # no test split
            held = set()
        qs = rotation_augment(qs, scenes, choose=augment,
                              viewpoints=rotation_viewpoints, exclude_scenes=held)
    if Path(dataset_name).is_dir() and "views" not in card_configs(dataset_name):
        log(f"dataset: {dataset_name} has no views config: rendering it "
             "(hf-real3d render-views)")
        add_views_config(dataset_name)
    views = load_split(dataset_name, "views", split)
    index = {(q, int(r)): i for i, (q, r) in enumerate(zip(views["question_id"],
                                                          views["rotation_deg"]))}
    rot = qs["rotation_deg"] if "rotation_deg" in qs.column_names else [0] * len(qs)
    picks, missing = {}, []
    for i, (qid, r) in enumerate(zip(qs["question_id"], rot)):
        k = index.get((str(qid), int(r or 0)))
        if k is None:
            missing.append(i)
        else:
            picks[i] = k
    if missing and scenes is None:
        raise InputError(f"{dataset_name}: question_id {qs['question_id'][missing[0]]} (and "
                         f"{len(missing) - 1} more) has no rendered view; rerun hf-real3d "
                         "render-views")
    imgs: list = [None] * len(qs)
    if picks:
        for i, im in zip(picks, views.select(list(picks.values()))["images"]):
            imgs[i] = im
    if missing:  # turned viewpoints of the augmentation: rendered from their turned pose
        size = imgs[next(iter(picks))][0].size[0] if picks else 128
        for i, r in zip(missing, view_rows(qs.select(missing), scenes, size=size)):
            imgs[i] = r["images"]
    out = {"question_id": [str(q) for q in qs["question_id"]], "images": imgs,
           "prompt": [f"{s} {q}" for s, q in zip(qs["situation"], qs["question"])],
           "answer": [a[0] for a in qs["answers"]]}
    if "viewpoint_group" in qs.column_names:
        out["viewpoint_group"] = qs["viewpoint_group"]
        out["rotation_deg"] = [int(r) for r in qs["rotation_deg"]]
    return datasets.Dataset.from_dict(out)


def build_small_llava(train: datasets.Dataset, hidden: int, layers: int, image_size: int):
    """A LLaVA (CLIP vision tower + Llama) from config, with a word-level tokenizer trained
    on the prompts and answers, and its processor."""
    return small_llava(list(train["prompt"]) + list(train["answer"]), hidden=hidden,
                       layers=layers, image_size=image_size)


def small_llava(texts: list[str], *, hidden: int, layers: int, image_size: int,
                patch: int | None = None, vision_layers: int = 1,
                chat_template: str | None = None, seed: int = 0):
    """(LlavaForConditionalGeneration, LlavaProcessor) from configs: a CLIP vision tower of
    ``vision_layers`` on ``image_size`` px (patches of ``patch`` px, default a quarter side,
    at least 8), a Llama of ``layers`` and width ``hidden``, a word-level tokenizer trained on
    ``texts`` with an ``<image>`` token; ``chat_template`` set on both tokenizer and
    processor (what the image-text-to-text pipeline needs)."""
    tok = train_tokenizer(texts)
    tok.add_special_tokens({"additional_special_tokens": ["<image>"]})
    if chat_template:
        tok.chat_template = chat_template
    patch = patch or max(8, image_size // 4)
    vision = CLIPVisionConfig(hidden_size=hidden, intermediate_size=2 * hidden,
                              num_hidden_layers=vision_layers, num_attention_heads=2,
                              image_size=image_size, patch_size=patch)
    text = LlamaConfig(vocab_size=len(tok), hidden_size=hidden, intermediate_size=2 * hidden,
                       num_hidden_layers=layers, num_attention_heads=2, num_key_value_heads=2,
                       max_position_embeddings=512, pad_token_id=tok.pad_token_id,
                       bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id)
    cfg = LlavaConfig(vision_config=vision, text_config=text,
                      image_token_index=tok.convert_tokens_to_ids("<image>"),
                      vision_feature_layer=-1)
    torch.manual_seed(seed)
    model = LlavaForConditionalGeneration(cfg)
    proc = LlavaProcessor(
        image_processor=CLIPImageProcessor(size={"shortest_edge": image_size},
                                           crop_size={"height": image_size,
                                                      "width": image_size}),
        tokenizer=tok, patch_size=patch, vision_feature_select_strategy="full",
        num_additional_image_tokens=0, chat_template=chat_template)
    proc.image_token = "<image>"
    return model, proc


def load_vlm(path: str) -> tuple[torch.nn.Module, object]:
    """A local VLM folder: ``(model, processor)``."""
    return (AutoModelForImageTextToText.from_pretrained(path),
            AutoProcessor.from_pretrained(path))


def blind_vlm(script_args: VLMScriptArguments, training_args: ReweightedConfig):
    """The frozen blind VLM the mode reads (``blind_model_path``, checked by
    :func:`~hf_real3d.training.inputs.check_recipe_inputs`), or None for a mode that reads
    none."""
    if not mode(training_args.reweighting).needs_blind:
        return None
    return AutoModelForImageTextToText.from_pretrained(script_args.blind_model_path)


def announce_vlm(script_args: VLMScriptArguments, training_args: ReweightedConfig,
                 n_train: int) -> None:
    """Log the training about to start: the reweighting, the text-only pass, the data."""
    log(f"3DR-FT (VLM, reweighting={training_args.reweighting}, text-only pass "
         f"{training_args.text_only_mode}) on {script_args.dataset_name} "
         f"[{script_args.dataset_train_split}: {n_train} questions with views]")
