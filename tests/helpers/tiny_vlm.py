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


def _tokenizer(special: list[str]) -> PreTrainedTokenizerFast:
    tok = Tokenizer(models.WordLevel(unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.train_from_iterator([" ".join(WORDS)], trainers.WordLevelTrainer(
        special_tokens=["<pad>", "<unk>", "<s>", "</s>", *special]))
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="<pad>", unk_token="<unk>",
                                   bos_token="<s>", eos_token="</s>")
    fast.add_special_tokens({"additional_special_tokens": special})
    return fast


def save_tiny_vlm(folder: Path, seed: int = 0) -> Path:
    model, proc = build_tiny_llava(seed)
    model.save_pretrained(folder)
    proc.save_pretrained(folder)
    return folder


def build_tiny_llava(seed: int = 0, hidden: int = 32, layers: int = 1):
    """(LlavaForConditionalGeneration, LlavaProcessor), random weights, 32x32 images."""
    fast = _tokenizer(["<image>"])
    fast.chat_template = CHAT
    vision = CLIPVisionConfig(hidden_size=32, intermediate_size=64, num_hidden_layers=1,
                              num_attention_heads=2, image_size=32, patch_size=16)
    text = LlamaConfig(vocab_size=len(fast), hidden_size=hidden, intermediate_size=2 * hidden,
                       num_hidden_layers=layers, num_attention_heads=2, num_key_value_heads=2,
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
    return model, proc


QWEN_CHAT = ("{% for m in messages %}{% for c in m['content'] %}{% if c['type'] == 'image' %}"
             "<|vision_start|><|image_pad|><|vision_end|> {% else %}{{ c['text'] }} {% endif %}"
             "{% endfor %}{% endfor %}answer")


def build_tiny_qwen2vl(seed: int = 0):
    """(Qwen2VLForConditionalGeneration, Qwen2VLProcessor), random weights, 56x56 images
    (4 merged patches each). The processor is built with a PIL image processor and no video
    processor: transformers 5.24 type-checks a None video processor against a class that
    needs torchvision (absent here), so that one check is skipped for None arguments."""
    import transformers.processing_utils as pu
    from transformers import Qwen2VLConfig, Qwen2VLForConditionalGeneration, Qwen2VLProcessor
    from transformers.models.qwen2_vl.image_processing_pil_qwen2_vl import (
        Qwen2VLImageProcessorPil,
    )

    special = ["<|vision_start|>", "<|vision_end|>", "<|image_pad|>", "<|video_pad|>"]
    fast = _tokenizer(special)
    ids = {t: fast.convert_tokens_to_ids(t) for t in special}
    cfg = Qwen2VLConfig(
        text_config=dict(vocab_size=len(fast), hidden_size=32, intermediate_size=64,
                         num_hidden_layers=1, num_attention_heads=2, num_key_value_heads=2,
                         max_position_embeddings=256, pad_token_id=0, bos_token_id=2,
                         eos_token_id=3,
                         rope_scaling={"type": "mrope", "mrope_section": [2, 3, 3]}),
        vision_config=dict(depth=1, embed_dim=32, hidden_size=32, num_heads=2, mlp_ratio=2,
                           patch_size=14, spatial_merge_size=2, temporal_patch_size=2,
                           in_chans=3),
        image_token_id=ids["<|image_pad|>"], video_token_id=ids["<|video_pad|>"],
        vision_start_token_id=ids["<|vision_start|>"], vision_end_token_id=ids["<|vision_end|>"])
    torch.manual_seed(seed)
    model = Qwen2VLForConditionalGeneration(cfg)
    image = Qwen2VLImageProcessorPil(min_pixels=56 * 56, max_pixels=56 * 56, patch_size=14,
                                     merge_size=2, temporal_patch_size=2)
    check = pu.ProcessorMixin.check_argument_for_proper_class
    pu.ProcessorMixin.check_argument_for_proper_class = \
        lambda self, name, arg: None if arg is None else check(self, name, arg)
    try:
        proc = Qwen2VLProcessor(image_processor=image, tokenizer=fast, chat_template=QWEN_CHAT)
    finally:
        pu.ProcessorMixin.check_argument_for_proper_class = check
    return model, proc
