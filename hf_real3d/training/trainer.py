"""``ReweightedConfig`` and ``ReweightedTrainer``: 3DR-FT as a transformers ``Trainer``."""

from __future__ import annotations

import collections
import glob
import os
from dataclasses import dataclass, field
from typing import Any

import torch
from safetensors.torch import load_file
from transformers import Trainer, TrainingArguments

from hf_real3d.modeling.scene_lm import SCENE_INPUT_NAMES, causal_lm_loss
from hf_real3d.training.losses import NAN_POLICIES, official_loss, paper_loss, token_logprobs

__all__ = ["ReweightedConfig", "ReweightedTrainer", "REWEIGHTING"]

REWEIGHTING = ("none", "paper", "official")


@dataclass
class ReweightedConfig(TrainingArguments):
    """Training arguments for 3DR-FT.

    Differs from ``TrainingArguments`` by the fields below, and by
    ``remove_unused_columns=False`` (the collator reads raw QA rows).
    """

    reweighting: str = field(default="paper", metadata={
        "help": "'none' (plain SFT), 'paper' (token weights = blind log-prob / current "
                "text-only log-prob) or 'official' (per-sample full loss / own text-only loss)."})
    weight_clip: float | None = field(default=10.0, metadata={
        "help": "Upper bound of the 'paper' token weights (None: no clipping)."})
    epsilon: float = field(default=1e-4, metadata={
        "help": "Floor of the denominators (|text-only log-prob| or text-only loss)."})
    blind_logprob_column: str = field(default="blind_logprobs", metadata={
        "help": "Dataset column with the blind model's log-probs of the answer tokens "
                "(precomputed once with precompute_blind_logprobs)."})
    scene_input_names: list[str] = field(
        default_factory=lambda: list(SCENE_INPUT_NAMES),
        metadata={"help": "Model keyword arguments that carry the 3D input; the text-only "
                          "pass removes them."})
    text_only_mode: str = field(default="drop", metadata={
        "help": "How the text-only pass removes 3D: 'drop' the inputs or feed them 'zeroed' "
                "(the names SceneLMConfig.blind_mode uses)."})
    reweight_eos: bool = field(default=False, metadata={
        "help": "Apply the 'paper' weight to the end-of-answer token too. The blind model "
                "predicts it almost surely, so its weight goes to ~0 and the model never "
                "learns to stop (measured: EM 0 with refined EM 35 on the demo); by default "
                "it keeps weight 1."})
    nan_policy: str = field(default="raise", metadata={
        "help": "Non-finite loss inputs: 'raise' a NonFiniteLossError naming the batch row and "
                "token (default), or 'zero' (give such tokens/samples weight 0). A blind "
                "log-prob of -inf always gets the largest weight, weight_clip."})
    init_from_blind: str | None = field(default=None, metadata={
        "help": "Start from the blind fine-tuned model's weights (a saved model folder), as "
                "the paper's text suggests."})
    remove_unused_columns: bool = field(default=False, metadata={
        "help": "Kept False: the collator needs the raw rows."})

    def __post_init__(self):
        if self.reweighting not in REWEIGHTING:
            raise ValueError(f"Expected reweighting in {REWEIGHTING} but got {self.reweighting!r}")
        if self.text_only_mode not in ("drop", "zeroed"):
            raise ValueError(f"Expected text_only_mode 'drop' or 'zeroed' but got "
                             f"{self.text_only_mode!r}")
        if self.nan_policy not in NAN_POLICIES:
            raise ValueError(f"Expected nan_policy in {NAN_POLICIES} but got {self.nan_policy!r}")
        if self.epsilon <= 0:
            raise ValueError(f"Expected epsilon > 0 but got {self.epsilon}")
        super().__post_init__()


class ReweightedTrainer(Trainer):
    """A ``Trainer`` whose ``compute_loss`` is the 3DR-FT loss.

    Model-agnostic: the 3D inputs are the model keyword arguments named in
    ``args.scene_input_names``; the text-only pass drops (or zeroes) them. For
    ``reweighting="paper"`` the blind model's log-probs come from the dataset column
    ``args.blind_logprob_column`` (cheap) or from ``ref_model``, a frozen blind model run
    under ``no_grad`` and prepared by the accelerator in evaluation mode (never the policy).
    """

    def __init__(self, model=None, args: ReweightedConfig | None = None, ref_model=None,
                 **kwargs):
        if args is None or not isinstance(args, ReweightedConfig):
            raise TypeError("Expected args to be a ReweightedConfig")
        if ref_model is not None and ref_model is model:
            raise ValueError("ref_model is the policy itself; pass a separate frozen copy of "
                             "the blind model (e.g. SceneLM.from_pretrained(blind_path))")
        tok = kwargs.get("processing_class")
        if tok is not None and model is not None:
            n_emb = model.get_input_embeddings().num_embeddings
            if len(tok) > n_emb:
                raise ValueError(f"tokenizer has {len(tok)} tokens but the model's embedding has "
                                 f"{n_emb} rows; resize the embeddings or use the model's "
                                 "tokenizer")
        if args.init_from_blind:
            self._load_blind_weights(model, args.init_from_blind)
        super().__init__(model=model, args=args, **kwargs)
        if args.reweighting == "paper":
            cols = getattr(self.train_dataset, "column_names", None) or []
            if ref_model is None and args.blind_logprob_column not in cols:
                raise ValueError(
                    f"reweighting='paper' needs the blind model's log-probs: add the column "
                    f"{args.blind_logprob_column!r} with precompute_blind_logprobs, or pass "
                    "ref_model (a frozen blind model)")
        self.ref_model = None
        if ref_model is not None:
            ref_model.eval()
            for p in ref_model.parameters():
                p.requires_grad_(False)
            self.ref_model = self.accelerator.prepare_model(ref_model, evaluation_mode=True)
        self._stats: dict[str, list[float]] = collections.defaultdict(list)
        self._num_sequences: torch.Tensor | None = None

    @staticmethod
    def _load_blind_weights(model, path: str) -> None:
        files = sorted(glob.glob(os.path.join(path, "*.safetensors")))
        if not files:
            raise FileNotFoundError(f"init_from_blind: no *.safetensors in {path}")
        state = {}
        for f in files:
            state.update(load_file(f))
        missing, unexpected = model.load_state_dict(state, strict=False)
        if unexpected or [k for k in missing if "lm." in k and "lm_head" not in k]:
            raise ValueError(f"init_from_blind: {path} does not match the model "
                             f"(missing {missing[:3]}, unexpected {unexpected[:3]})")

    # --- batches ----------------------------------------------------------------------
    def get_batch_samples(self, epoch_iterator, num_batches, device):
        batch_samples, num_items = super().get_batch_samples(epoch_iterator, num_batches, device)
        n = sum(int(b["labels"][:, 1:].ne(-100).any(1).sum()) for b in batch_samples
                if "labels" in b)
        n = torch.tensor(n, device=device)
        if self.args.world_size > 1:
            n = self.accelerator.gather(n).sum()
        self._num_sequences = n
        return batch_samples, num_items

    def _text_only(self, inputs: dict[str, Any]) -> dict[str, Any]:
        names = set(self.args.scene_input_names)
        if self.args.text_only_mode == "drop":
            return {k: v for k, v in inputs.items() if k not in names}
        ids = ("object_labels", "object_directions", "object_colors")  # token ids: -1 = none
        return {k: (torch.full_like(v, -1) if k in ids else torch.zeros_like(v))
                if k in names and k != "object_mask" else v for k, v in inputs.items()}

    # --- loss -------------------------------------------------------------------------
    def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
        inputs = dict(inputs)
        labels = inputs.pop("labels")
        blind_col = inputs.pop("blind_logprobs", None)
        outputs = model(**inputs)
        logits = outputs.logits
        mode = self.args.reweighting
        if mode == "none":
            loss = causal_lm_loss(logits, labels, num_items_in_batch)
        else:
            text_inputs = self._text_only(inputs)
            with torch.no_grad():
                text_logits = model(**text_inputs).logits
            if mode == "paper":
                if blind_col is not None:
                    blind_logp = blind_col[:, 1:].to(logits.device)
                elif self.ref_model is not None:
                    with torch.no_grad():
                        blind_logp = token_logprobs(self.ref_model(**text_inputs).logits,
                                                    labels)[0]
                else:
                    raise ValueError(f"batch lacks {self.args.blind_logprob_column!r} and no "
                                     "ref_model was given")
                text_logp, mask = token_logprobs(text_logits, labels)
                fixed = None
                eos = getattr(self.processing_class, "eos_token_id", None)
                if not self.args.reweight_eos and eos is not None:
                    fixed = labels[:, 1:].eq(eos)
                loss, w = paper_loss(logits, labels, blind_logp, text_logp, num_items_in_batch,
                                     eps=self.args.epsilon, clip=self.args.weight_clip,
                                     fixed_weight_mask=fixed, nan_policy=self.args.nan_policy)
                wv = w[mask]
            else:
                global_seqs = num_items_in_batch is not None and model.training
                loss, wv = official_loss(logits, text_logits, labels,
                                         self._num_sequences if global_seqs else None,
                                         eps=self.args.epsilon,
                                         nan_policy=self.args.nan_policy)
            if len(wv):
                self._stats["weight_mean"].append(float(wv.mean()))
                self._stats["weight_up_share"].append(float((wv > 1).float().mean()))
                self._stats["weight_down_share"].append(float((wv < 1).float().mean()))
        if self.args.average_tokens_across_devices and num_items_in_batch is not None \
                and model.training:
            loss = loss * self.accelerator.num_processes  # DDP averages gradients
        return (loss, outputs) if return_outputs else loss

    def log(self, logs: dict[str, float], start_time: float | None = None) -> None:
        if self._stats and "loss" in logs:
            for k, v in self._stats.items():
                logs[k] = round(sum(v) / len(v), 6)
            self._stats.clear()
        super().log(logs, start_time)
