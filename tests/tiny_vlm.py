"""A tiny random-weight image-text-to-text model (LLaVA layout: CLIP vision tower + Llama),
built from configs with a word-level tokenizer, so the VLM path runs with no download."""

from pathlib import Path

import torch
from tokenizers import Tokenizer, models, pre_tokenizers, trainers
from transformers import (
    CLIPImageProcessor,
    CLIPVisionConfig,
    LlamaConfig,
    LlavaConfig,
    LlavaForConditionalGeneration,
    LlavaProcessor,
    PreTrainedTokenizerFast,
)

WORDS = ("question options answer with the option's letter from given choices directly "
         "a b c d yes no left right which is on of in front behind higher closer").split()
CHAT = ("{% for m in messages %}{% for c in m['content'] %}{% if c['type'] == 'image' %}"
        "<image> {% else %}{{ c['text'] }} {% endif %}{% endfor %}{% endfor %}answer")


def save_tiny_vlm(folder: Path, seed: int = 0) -> Path:
    tok = Tokenizer(models.WordLevel(unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.train_from_iterator([" ".join(WORDS)], trainers.WordLevelTrainer(
        special_tokens=["<pad>", "<unk>", "<s>", "</s>", "<image>"]))
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="<pad>", unk_token="<unk>",
                                   bos_token="<s>", eos_token="</s>")
    fast.add_special_tokens({"additional_special_tokens": ["<image>"]})
    fast.chat_template = CHAT
    vision = CLIPVisionConfig(hidden_size=32, intermediate_size=64, num_hidden_layers=1,
                              num_attention_heads=2, image_size=32, patch_size=16)
    text = LlamaConfig(vocab_size=len(fast), hidden_size=32, intermediate_size=64,
                       num_hidden_layers=1, num_attention_heads=2, num_key_value_heads=2,
                       max_position_embeddings=256, pad_token_id=0, bos_token_id=2,
                       eos_token_id=3)
    cfg = LlavaConfig(vision_config=vision, text_config=text,
                      image_token_index=fast.convert_tokens_to_ids("<image>"),
                      vision_feature_layer=-1)
    torch.manual_seed(seed)
    model = LlavaForConditionalGeneration(cfg)
    proc = LlavaProcessor(
        image_processor=CLIPImageProcessor(size={"shortest_edge": 32},
                                           crop_size={"height": 32, "width": 32}),
        tokenizer=fast, patch_size=16, vision_feature_select_strategy="full",
        chat_template=CHAT, num_additional_image_tokens=0)
    model.save_pretrained(folder)
    proc.save_pretrained(folder)
    return folder
