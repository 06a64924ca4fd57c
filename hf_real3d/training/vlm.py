"""Batches for Hugging Face VLMs that take 3D as images (GPT4Scene-style frames + BEV).

:class:`VLMCollator` turns rows ``{images, prompt, answer}`` into the keyword inputs of any
``transformers`` image-text-to-text model through its processor (LLaVA, Qwen2-VL, ...):
the processor encodes the prompt with its images, the answer's tokens and the end token
follow, and ``labels`` cover the answer only. With ``text_only_batch=True`` it also builds
the text-only batch (the same prompt and answer, no images and no image placeholders) under
keys prefixed ``text_only_``, which :class:`~hf_real3d.training.routes.HFModelRoute` reads
with ``text_only_mode="blind_batch"``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import torch

from hf_real3d.errors import InputError
from hf_real3d.training.routes import TEXT_ONLY_PREFIX

__all__ = ["VLMCollator"]


class VLMCollator:
    """Rows -> VLM training batches (right-padded; vision tensors concatenated on dim 0, as
    processors batch them).

    Args:
        processor: the model's processor (tokenizer + image processor).
        image_column / prompt_column / answer_column: row keys (images: a list of PIL
            images or arrays, possibly empty).
        text_only_batch: also build the ``text_only_*`` batch without images.
        max_length: cut prompts from the left so prompt + answer fit (None: no cut; image
            placeholders are never cut: a row whose images alone exceed it is an error).
        for_generation: prompts only, left-padded, no labels.
    """

    def __init__(self, processor: Any, *, image_column: str = "images",
                 prompt_column: str = "prompt", answer_column: str = "answer",
                 text_only_batch: bool = False, max_length: int | None = None,
                 for_generation: bool = False):
        self.processor = processor
        self.tok = getattr(processor, "tokenizer", processor)
        self.image_column, self.prompt_column = image_column, prompt_column
        self.answer_column = answer_column
        self.text_only_batch = text_only_batch
        self.max_length = max_length
        self.for_generation = for_generation

    def prompt_text(self, prompt: str, n_images: int) -> str:
        """The prompt as the model's chat template writes it (image entries first)."""
        content = [{"type": "image"}] * n_images + [{"type": "text", "text": prompt}]
        template = getattr(self.processor, "chat_template", None)
        if template:
            return self.processor.apply_chat_template(
                [{"role": "user", "content": content}], tokenize=False,
                add_generation_prompt=True)
        token = getattr(self.processor, "image_token", None)
        if n_images and token is None:
            raise InputError(f"{type(self.processor).__name__} has neither a chat template nor "
                             "an image_token; set processor.chat_template")
        return " ".join([token] * n_images + [prompt])

    def _row(self, row: Mapping[str, Any], with_images: bool, where: str) -> dict[str, Any]:
        images = list(row.get(self.image_column) or []) if with_images else []
        text = self.prompt_text(str(row[self.prompt_column]), len(images))
        kw = {"images": images} if images else {}
        enc = self.processor(text=[text], return_tensors="pt", **kw)
        ids = enc["input_ids"][0].tolist()
        answer: list[int] = []
        if not self.for_generation:
            ans = row.get(self.answer_column)
            if ans is None or (isinstance(ans, list) and not ans):
                raise InputError(f"{where}: no {self.answer_column!r} to train on")
            ans = ans[0] if isinstance(ans, list) else ans
            answer = self.tok(str(ans), add_special_tokens=False)["input_ids"] + \
                [self.tok.eos_token_id]
        n = len(ids)
        per_token = {k: v[0].tolist() for k, v in enc.items()
                     if k not in ("input_ids", "attention_mask") and torch.is_tensor(v)
                     and v.dim() == 2 and v.shape == (1, n)}
        vision = {k: v for k, v in enc.items()
                  if k not in per_token and k not in ("input_ids", "attention_mask")}
        if self.max_length is not None and n + len(answer) > self.max_length:
            raise InputError(f"{where}: prompt ({n} tokens with its image placeholders) and "
                             f"answer ({len(answer)}) exceed max_length {self.max_length}; "
                             "raise max_length or use fewer / smaller images")
        return {"ids": ids + answer, "labels": [-100] * n + answer,
                "per_token": {k: v + [0] * len(answer) for k, v in per_token.items()},
                "vision": vision}

    def _batch(self, enc: Sequence[dict[str, Any]]) -> dict[str, torch.Tensor]:
        width = max(len(e["ids"]) for e in enc)
        pad = self.tok.pad_token_id if self.tok.pad_token_id is not None else 0
        left = self.for_generation

        def padded(seq: list[int], value: int) -> list[int]:
            fill = [value] * (width - len(seq))
            return fill + seq if left else seq + fill

        out = {"input_ids": torch.tensor([padded(e["ids"], pad) for e in enc]),
               "attention_mask": torch.tensor([padded([1] * len(e["ids"]), 0) for e in enc])}
        if not self.for_generation:
            out["labels"] = torch.tensor([padded(e["labels"], -100) for e in enc])
        for k in enc[0]["per_token"]:
            out[k] = torch.tensor([padded(e["per_token"][k], 0) for e in enc])
        keys = {k for e in enc for k in e["vision"]}
        for k in sorted(keys):
            parts = [e["vision"][k] for e in enc if k in e["vision"]]
            out[k] = torch.cat(parts, 0)
        return out

    def __call__(self, rows: Sequence[Mapping[str, Any]]) -> dict[str, torch.Tensor]:
        where = [f"row {i}" + (f" (question_id {r['question_id']})" if "question_id" in r
                               else "") for i, r in enumerate(rows)]
        batch = self._batch([self._row(r, True, w) for r, w in zip(rows, where)])
        if self.text_only_batch and not self.for_generation:
            text = self._batch([self._row(r, False, w) for r, w in zip(rows, where)])
            batch.update({TEXT_ONLY_PREFIX + k: v for k, v in text.items()})
        return batch
