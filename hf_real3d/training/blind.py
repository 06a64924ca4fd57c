"""Precompute the blind model's answer-token log-probs once, as a dataset column."""

from __future__ import annotations

import hashlib
from typing import Any

import torch
from datasets.fingerprint import Hasher

from hf_real3d.training.losses import token_logprobs

__all__ = ["precompute_blind_logprobs", "model_digest"]


def model_digest(model: torch.nn.Module) -> str:
    """A short hash of a model's parameters (for dataset fingerprints)."""
    h = hashlib.sha256()
    for name, p in sorted(model.state_dict().items()):
        h.update(name.encode())
        h.update(p.detach().cpu().float().numpy().tobytes())
    return h.hexdigest()[:16]


def precompute_blind_logprobs(dataset, blind_model, collator, *, column: str = "blind_logprobs",
                              batch_size: int = 64, text_only_mode: str = "drop") -> Any:
    """Add ``column``: for each row, the blind model's log-prob of every label token.

    Runs ``datasets.map`` with a fingerprint made of the dataset's fingerprint, the blind
    model's weights and the collator's tokenizer, so a cached result is reused only for the
    same inputs. The blind model sees text only (3D inputs dropped or zeroed).
    """
    blind_model.eval()
    vocab = collator.tok.get_vocab()
    fp = Hasher.hash([dataset._fingerprint, model_digest(blind_model), sorted(vocab.items()),
                      collator.max_length, text_only_mode, column])

    def fn(batch: dict[str, list]) -> dict[str, list]:
        rows = [dict(zip(batch, vals)) for vals in zip(*batch.values())]
        enc = collator(rows)
        labels = enc["labels"]
        inputs = {"input_ids": enc["input_ids"], "attention_mask": enc["attention_mask"]}
        if text_only_mode == "zeroed" and "object_points" in enc:
            inputs.update({"object_points": torch.zeros_like(enc["object_points"]),
                           "object_boxes": torch.zeros_like(enc["object_boxes"]),
                           "object_mask": enc["object_mask"]})
            if "object_labels" in enc:
                inputs["object_labels"] = torch.full_like(enc["object_labels"], -1)
        with torch.no_grad():
            logp, mask = token_logprobs(blind_model(**inputs).logits, labels)
        return {column: [lp[m].tolist() for lp, m in zip(logp, mask)]}

    return dataset.map(fn, batched=True, batch_size=batch_size, new_fingerprint=fp,
                       desc="blind log-probs")
