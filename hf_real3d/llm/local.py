"""A local causal-LM folder (with its tokenizer, its chat template when it has one) as a
backend: run in this process, ``llm_concurrency`` prompts generated together (left-padded)."""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from hf_real3d._io import model_folder
from hf_real3d.llm.base import Backend, Decoding, LLMError, Prompt, Reply

__all__ = ["LocalBackend"]

LOCAL_BATCH = 8


class LocalBackend(Backend):
    """A causal LM folder run in this process, prompts generated in batches."""

    formats = "a local model: plain prompts"
    batches_prompts = True

    def __init__(self, path: str | os.PathLike, tag: str | None = None):
        super().__init__(tag)
        folder = Path(path)
        try:  # a folder with its config and weights (not git-lfs pointers)
            model_folder(folder, "llm_path")
        except (ValueError, FileNotFoundError) as err:
            raise LLMError(str(err)) from None
        weights = sorted(p for p in folder.iterdir() if p.suffix in (".safetensors", ".bin"))
        self.path = folder
        self.digest = hashlib.sha256(json.dumps(
            [(folder / "config.json").read_text(), [(p.name, p.stat().st_size) for p in weights]]
        ).encode()).hexdigest()[:16]
        self._loaded: tuple[Any, Any] | None = None

    def identity(self) -> dict[str, Any]:
        return {"route": "local", "model": str(self.path.resolve()), "weights": self.digest}

    def describe(self) -> dict[str, Any]:
        return {"model": str(self.path), "route": "local"}

    def default_concurrency(self) -> tuple[int, str]:
        return LOCAL_BATCH, "the default batch of a local model"

    def check(self, say: Callable[[str], None]) -> None:
        self.load()

    def load(self) -> tuple[Any, Any]:
        if self._loaded is None:
            # torch and transformers only for a local model
            from transformers import AutoModelForCausalLM, AutoTokenizer

            try:
                tok = AutoTokenizer.from_pretrained(self.path, local_files_only=True)
                model = AutoModelForCausalLM.from_pretrained(self.path, local_files_only=True)
            except (OSError, ValueError) as err:
                raise LLMError(f"`llm_path` {self.path}: not a causal LM with its tokenizer "
                               f"({str(err).splitlines()[0]})") from None
            model.eval()
            self._loaded = (model, tok)
        return self._loaded

    def _ids(self, tok, prompt: Prompt) -> list[int]:
        if isinstance(prompt, str):
            return list(tok(prompt)["input_ids"])
        if getattr(tok, "chat_template", None):
            out = tok.apply_chat_template(prompt, add_generation_prompt=True, tokenize=True)
            return list(out["input_ids"] if isinstance(out, dict) or hasattr(out, "keys")
                        else out)
        # no chat template: the messages' texts, one after the other
        return list(tok("\n\n".join(m["content"] for m in prompt))["input_ids"])

    def ask_many(self, prompts: Sequence[Prompt], d: Decoding, response_format: dict | None
                 ) -> list[Reply]:
        """One reply per prompt, generated together (plain prompts: no output format)."""
        import torch  # a local model only (loaded by load)

        model, tok = self.load()
        ids = [self._ids(tok, p) for p in prompts]
        pad = next((t for t in (tok.pad_token_id, tok.eos_token_id) if t is not None), 0)
        width = max(map(len, ids))
        inputs = torch.tensor([[pad] * (width - len(x)) + x for x in ids])
        mask = torch.tensor([[0] * (width - len(x)) + [1] * len(x) for x in ids])
        torch.manual_seed(d.seed)
        sample = d.temperature > 0
        with torch.no_grad():
            out = model.generate(input_ids=inputs, attention_mask=mask,
                                 max_new_tokens=d.max_tokens, do_sample=sample, pad_token_id=pad,
                                 **({"temperature": d.temperature} if sample else {}))
        eos = model.generation_config.eos_token_id
        eos = set(eos if isinstance(eos, list) else [] if eos is None else [eos])
        replies = []
        for row, x in zip(out[:, width:].tolist(), ids):
            n = next((i for i, t in enumerate(row) if t in eos), None)
            gen = row if n is None else row[:n + 1]  # the end token counts, as servers count it
            finish = "length" if n is None else "stop"
            replies.append(Reply(tok.decode(gen, skip_special_tokens=True).strip(), finish,
                                 {"prompt_tokens": len(x), "completion_tokens": len(gen)}))
        self._local.count = len(prompts)
        return replies
