"""Inference with a trained SceneLM: greedy answers with log-probs (optionally with an
input ablation) and the attention-to-3D diagnostic."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from tqdm.auto import tqdm

from hf_real3d.modeling.data import SceneBank, collator_for
from hf_real3d.modeling.scene_lm import SceneLM

__all__ = ["predict_rows", "attention_to_3d"]


@torch.no_grad()
def predict_rows(model: SceneLM, tokenizer, bank: SceneBank, rows: list[dict], *,
                 ablation: str = "none", batch_size: int = 64, max_new_tokens: int = 6,
                 max_length: int = 64, progress: bool = True) -> list[dict[str, Any]]:
    """Greedy answers (and their log-probs) for QA rows, with an optional input ablation."""
    model.eval()
    collator = collator_for(model, tokenizer, bank, max_length=max_length, for_generation=True,
                            ablation=ablation)
    out = []
    for start in tqdm(range(0, len(rows), batch_size), desc=f"predict ({ablation})",
                      disable=not progress):
        chunk = rows[start:start + batch_size]
        batch = collator(chunk)
        toks, logp = model.generate_answers(
            batch.pop("input_ids"), batch.pop("attention_mask"), tokenizer.eos_token_id,
            tokenizer.pad_token_id, max_new_tokens=max_new_tokens, **batch)
        for r, t, lp in zip(chunk, toks, logp.tolist()):
            out.append({"question_id": int(r["question_id"]),
                        "rotation_deg": int(r.get("rotation_deg", 0)),
                        "prediction": tokenizer.decode(t, skip_special_tokens=True).strip(),
                        "log_prob": float(lp)})
    return out


@torch.no_grad()
def attention_to_3d(model: SceneLM, tokenizer, bank: SceneBank, rows: list[dict], *,
                    batch_size: int = 64, n_resamples: int = 200, seed: int = 0,
                    max_length: int = 64) -> dict[str, float]:
    """Mean attention mass from answer tokens to the 3D tokens (all layers and heads),
    with its spread over bootstrap resamples of the examples."""
    model.eval()
    impl = model.lm.config._attn_implementation
    model.lm.set_attn_implementation("eager")
    collator = collator_for(model, tokenizer, bank, max_length=max_length)
    per_example = []
    try:
        for start in range(0, len(rows), batch_size):
            batch = collator(rows[start:start + batch_size])
            labels = batch.pop("labels")
            out = model(**batch, output_attentions=True)
            n = out.n_prefix
            att = torch.stack(out.attentions).mean(dim=(0, 2))  # (B, S, S)
            # answer tokens are predicted at the position before each label token
            qpos = labels[:, 1:].ne(-100)
            to3d = att[:, n:-1, :n].sum(-1)  # (B, T-1): mass on 3D tokens per text query
            for i in range(len(labels)):
                per_example.append(float(to3d[i][qpos[i]].mean()))
    finally:
        model.lm.set_attn_implementation(impl)
    v = np.asarray(per_example)
    rng = np.random.default_rng(seed)
    boots = v[rng.integers(0, len(v), size=(n_resamples, len(v)))].mean(1)
    return {"mean": float(v.mean()), "std_over_resamples": float(boots.std()),
            "n": int(len(v))}
