"""3DR-FT on trl's ``SFTTrainer``: prompt / completion and conversational datasets (VLM ones
with images too), completion-only loss, its logged entropy and token accuracy.

The per-token log-probs come from trl's fused LM head (``fused_lm_head=True``: no
``(B, T, V)`` logits), through :class:`~hf_real3d.training.routes.FusedHeadRoute`, into the
same loss core as :class:`~hf_real3d.training.ReweightedTrainer`. ``reweighting="none"`` is
SFTTrainer's own ``compute_loss``, untouched.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from trl import SFTConfig, SFTTrainer
from trl.trainer.utils import add_fused_lm_head

from hf_real3d.errors import InputError
from hf_real3d.training.routes import FusedHeadRoute, unwrap_model
from hf_real3d.training.trainer import ReweightingArguments, ReweightingMixin

__all__ = ["ReweightedSFTConfig", "ReweightedSFTTrainer"]


@dataclass
class ReweightedSFTConfig(SFTConfig, ReweightingArguments):
    """``trl.SFTConfig`` plus the 3DR-FT fields of :class:`ReweightingArguments`
    (``reweighting``, ``text_only_mode``, ``blind_logprob_column``, ...). Everything else
    (``completion_only_loss``, ``max_length``, ``packing``, ...) is trl's."""

    def __post_init__(self):
        self._check_reweighting()
        if self.text_only_mode == "blind_batch":
            raise InputError("text_only_mode='blind_batch' needs a collator that builds the "
                             "text_only_* batch (hf_real3d.training.vlm.VLMCollator with "
                             "ReweightedTrainer); trl's collators do not: use 'zeroed' or "
                             "'drop'")
        super().__post_init__()


class ReweightedSFTTrainer(ReweightingMixin, SFTTrainer):
    """``SFTTrainer`` with the 3DR-FT loss.

    Args (beyond ``SFTTrainer``'s): ``ref_model``, a frozen blind model for
    ``reweighting="paper"`` (or ``args.precompute_blind=True`` to turn it into a column once);
    a precomputed ``args.blind_logprob_column`` on the dataset also works. ``peft_config`` is
    trl's own.
    """

    def __init__(self, model=None, args: ReweightedSFTConfig | None = None, ref_model=None,
                 **kwargs):
        if args is None or not isinstance(args, ReweightedSFTConfig):
            raise TypeError("Expected args to be a ReweightedSFTConfig")
        if isinstance(model, str):
            raise TypeError("pass a model object (built or loaded from a local folder); this "
                            "library loads nothing from the Hub at run time")
        model = self._check_model_inputs(model, args, ref_model, kwargs.get("processing_class"),
                                         None)
        super().__init__(model=model, args=args, **kwargs)
        if ref_model is not None:
            add_fused_lm_head(unwrap_model(ref_model), outputs=("log_probs",))
        self._setup_reweighting(ref_model, FusedHeadRoute(
            text_only_mode=args.text_only_mode, scene_input_names=args.scene_input_names,
            aux_loss=args.aux_loss))

    def _set_signature_columns_if_needed(self):
        super()._set_signature_columns_if_needed()
        col = self.args.blind_logprob_column
        if col not in self._signature_columns:
            self._signature_columns = [*self._signature_columns, col]

    def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
        if self.args.reweighting == "none":
            return super().compute_loss(model, inputs, return_outputs, num_items_in_batch)
        mode = "train" if self.model.training else "eval"
        inputs["use_cache"] = False
        if self.aux_loss_enabled:
            inputs["output_router_logits"] = True
        loss, full = self.reweighted_loss(model, inputs, num_items_in_batch)
        out = full.outputs
        gather = self.accelerator.gather_for_metrics
        num_valid = gather(out.label_mask.sum()).sum()
        if out.entropy is not None:
            ent = gather(out.entropy.detach().sum()).sum()
            self._metrics[mode]["entropy"].append(
                (ent / num_valid).item() if num_valid > 0 else 0.0)
        if out.is_top1 is not None:
            right = gather(out.is_top1.sum()).sum()
            self._metrics[mode]["mean_token_accuracy"].append(
                (right / num_valid).item() if num_valid > 0 else 0.0)
        if mode == "train" and "attention_mask" in inputs:
            self._total_train_tokens += int(gather(inputs["attention_mask"].sum()).sum())
            self._metrics[mode]["num_tokens"] = [self._total_train_tokens]
        if return_outputs:
            with torch.no_grad():
                logits_out = model(**{k: v for k, v in inputs.items() if k != "labels"})
            return loss, logits_out
        return loss

    def log(self, logs: dict[str, float], start_time: float | None = None) -> None:
        self._merge_stats(logs)
        super().log(logs, start_time)
