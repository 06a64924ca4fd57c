"""The stress test's language-model diagnostic (``--diagnostic lm``): a causal LM
fine-tuned per fold on the training folds' ``text -> answer`` pairs, through the library's
own trainer (:class:`~hf_real3d.training.ReweightedTrainer`, ``reweighting="none"``).

The model: a local causal-LM checkpoint (``lm_path``: any ``AutoModelForCausalLM`` folder
with its tokenizer, or a saved SceneLM, whose language model and tokenizer are taken: its
blind model, say), fresh from that checkpoint at every fold; or, with no path, a small
Llama built from config over a word-level tokenizer of the training folds.

Each held-out item is scored over a closed candidate set: its options (multiple choice),
else the ``max_candidates`` most frequent answers of the training folds. A candidate's
score is the summed log-probability of its tokens after the prompt; the softmax over the
candidates gives the probability of each, so s(x) is the held-out probability of the right
answer (0 when it is not a candidate) and the prediction is the most probable candidate.
"""

from __future__ import annotations

import json
import math
import tempfile
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from hf_real3d._io import model_folder

__all__ = ["LMDiagnostic", "PROMPT"]

PROMPT = "{text} answer:"


@dataclass
class LMDiagnostic:
    """Settings of the ``lm`` diagnostic (defaults: a 2-layer Llama of width 64, 4 epochs
    and at least ``min_steps`` optimizer steps per fold: fewer do not teach a small model even
    to copy an answer written in the question)."""

    lm_path: str | None = None
    epochs: float = 4.0
    min_steps: int = 300
    learning_rate: float = 3e-3
    batch_size: int = 32
    hidden_size: int = 64
    num_layers: int = 2
    max_candidates: int = 50
    max_length: int = 96
    seed: int = 0

    def check(self) -> None:
        """Refuse a missing checkpoint before any work."""
        if self.lm_path is not None:  # a causal LM or a saved SceneLM, with its weights
            model_folder(self.lm_path, "lm_path")

    # --- model ------------------------------------------------------------------------------
    def _load(self, corpus: Sequence[str]):
        # transformers' model stack: only when this diagnostic runs
        from transformers import AutoModelForCausalLM, AutoTokenizer, set_seed

        set_seed(self.seed)
        if self.lm_path is None:
            # the library's word-level tokenizer and SceneLM's small Llama, from config
            from hf_real3d.modeling import train_tokenizer
            from hf_real3d.modeling.scene_lm import text_config_for
            from hf_real3d.modeling.settings import SceneModelArguments

            tok = train_tokenizer(corpus, vocab_size=4000)
            cfg = text_config_for(len(tok), SceneModelArguments(
                hidden_size=self.hidden_size, num_layers=self.num_layers), tok)
            return AutoModelForCausalLM.from_config(cfg), tok
        self.check()
        path = Path(self.lm_path)
        model_type = json.loads((path / "config.json").read_text()).get("model_type")
        tok = AutoTokenizer.from_pretrained(path)
        if model_type == "scene_lm":
            # a saved SceneLM: its language model (the text pathway) and its tokenizer
            from hf_real3d.modeling import SceneLM

            model = SceneLM.from_pretrained(path).lm
        else:
            model = AutoModelForCausalLM.from_pretrained(path)
        if tok.pad_token_id is None:
            tok.pad_token = tok.eos_token
        return model, tok

    # --- data ---------------------------------------------------------------------------------
    def _encoder(self, tok):
        """``encode(text, answer) -> (token ids of prompt + answer (+ end of sequence), the
        prompt's length)``, tokenizing each distinct prompt and answer once."""
        ids: dict[str, list[int]] = {}

        def tokens(s: str) -> list[int]:
            if s not in ids:
                ids[s] = tok(s, add_special_tokens=False)["input_ids"]
            return ids[s]

        eos = [tok.eos_token_id] if tok.eos_token_id is not None else []
        bos = [tok.bos_token_id] if tok.bos_token_id is not None else []

        def encode(text: str, answer: str) -> tuple[list[int], int]:
            ans = tokens(" " + answer)
            keep = self.max_length - len(ans) - len(eos) - len(bos)
            prompt = bos + tokens(PROMPT.format(text=text))[-max(1, keep):]
            return prompt + ans + eos, len(prompt)

        return encode

    def _batch(self, tok, encoded: Sequence[tuple[list[int], int]]) -> dict[str, torch.Tensor]:
        width = max(len(ids) for ids, _ in encoded)
        pad = tok.pad_token_id if tok.pad_token_id is not None else 0
        ids = torch.full((len(encoded), width), pad, dtype=torch.long)
        mask = torch.zeros((len(encoded), width), dtype=torch.long)
        labels = torch.full((len(encoded), width), -100, dtype=torch.long)
        for r, (seq, n_prompt) in enumerate(encoded):
            ids[r, :len(seq)] = torch.tensor(seq)
            mask[r, :len(seq)] = 1
            labels[r, n_prompt:len(seq)] = torch.tensor(seq[n_prompt:])
        return {"input_ids": ids, "attention_mask": mask, "labels": labels}

    # --- one fold -------------------------------------------------------------------------------
    def fit_predict(self, train_text: Sequence[str], train_labels: Sequence[str],
                    test_text: Sequence[str], test_options: Sequence[Sequence[str]] | None
                    ) -> tuple[list[np.ndarray], list[list[str]]]:
        """Fine-tune on the training folds, then per held-out item (probabilities, their
        candidates)."""
        # the library's trainer: only when this diagnostic runs
        from datasets import Dataset

        # likewise: the trainer pulls in torch and transformers
        from hf_real3d.training import ReweightedConfig, ReweightedTrainer
        from hf_real3d.training.losses import token_logprobs

        model, tok = self._load([*train_text, *train_labels])
        encode = self._encoder(tok)
        encoded = [encode(t, a) for t, a in zip(train_text, train_labels)]
        ds = Dataset.from_dict({"seq": [e[0] for e in encoded],
                                "n_prompt": [e[1] for e in encoded]})

        def collate(rows):
            return self._batch(tok, [(r["seq"], r["n_prompt"]) for r in rows])

        with tempfile.TemporaryDirectory(prefix="hf_real3d_tst_lm_") as out:
            args = ReweightedConfig(
                output_dir=out, reweighting="none",
                max_steps=max(self.min_steps,
                              math.ceil(self.epochs * len(ds) / self.batch_size)),
                per_device_train_batch_size=self.batch_size, learning_rate=self.learning_rate,
                lr_scheduler_type="cosine", warmup_steps=0.05, logging_steps=1000,
                save_strategy="no", eval_strategy="no", seed=self.seed, use_cpu=True,
                disable_tqdm=True, dataloader_num_workers=0, report_to="none",
                remove_unused_columns=False)
            trainer = ReweightedTrainer(model=model, args=args, train_dataset=ds,
                                        data_collator=collate, processing_class=tok)
            trainer.train()
        model.eval()
        common = [a for a, _ in Counter(train_labels).most_common(self.max_candidates)]
        cands = [list(test_options[i]) if test_options is not None else common
                 for i in range(len(test_text))]
        pairs = [(i, c) for i in range(len(test_text)) for c in cands[i]]
        scores = np.zeros(len(pairs))
        chunk = 256
        with torch.no_grad():
            for s in range(0, len(pairs), chunk):
                part = pairs[s:s + chunk]
                batch = self._batch(tok, [encode(test_text[i], c) for i, c in part])
                logits = model(input_ids=batch["input_ids"],
                               attention_mask=batch["attention_mask"]).logits
                logp, _ = token_logprobs(logits, batch["labels"])  # 0 off the answer
                scores[s:s + len(part)] = logp.sum(-1).numpy()
        out, k = [], 0
        for i in range(len(test_text)):
            row = scores[k:k + len(cands[i])]
            k += len(cands[i])
            p = np.exp(row - row.max()) if len(row) else row
            out.append(p / p.sum() if len(row) else p)
        return out, cands
