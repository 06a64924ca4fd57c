"""``ReweightedConfig`` and ``ReweightedTrainer``: 3DR-FT as a transformers ``Trainer``.

One loss core (:meth:`ReweightingMixin.reweighted_loss`) serves every route
(:mod:`hf_real3d.training.routes`): a Hugging Face model (SceneLM, a causal LM, a VLM taking
3D as images), a plain module through a :class:`~hf_real3d.training.routes.ModuleRoute`,
and trl's fused head (:class:`~hf_real3d.training.sft.ReweightedSFTTrainer`). The blind
reference comes from a precomputed column, a frozen blind model (``ref_model``), or, for
``official``, the policy itself without 3D.
"""

from __future__ import annotations

import collections
import dataclasses
import glob
import os
import sys
import textwrap
from dataclasses import dataclass, field
from typing import Any

import torch
from safetensors.torch import load_file
from transformers import Trainer, TrainingArguments

from hf_real3d.errors import InputError
from hf_real3d.modeling.settings import check_counts
from hf_real3d.training.blind import BlindColumnCollator, precompute_blind_logprobs
from hf_real3d.training.losses import NAN_POLICIES
from hf_real3d.training.modes import MODES, LossInputs, help_text, mode
from hf_real3d.training.routes import (
    AUX_LOSS_MODES,
    TEXT_ONLY_MODES,
    HFModelRoute,
    TokenScores,
    align_scores,
    unwrap_model,
)
from hf_real3d.training.sampling import ViewpointGroupSampler, WithGroupIds

__all__ = ["ReweightedConfig", "ReweightedTrainer", "ReweightingArguments", "ReweightingMixin"]


@dataclass
class ReweightingArguments:
    """The 3DR-FT fields shared by :class:`ReweightedConfig` (transformers) and
    :class:`~hf_real3d.training.sft.ReweightedSFTConfig` (trl)."""

    reweighting: str = field(default="paper", metadata={
        "help": "The reweighting mode (hf_real3d.training.modes): " + help_text(),
        "choices": list(MODES)})
    cal_min: float = field(default=1.0, metadata={
        "help": "'cal': lower clamp of the gain from the 3D input (CAL's 1)."})
    cal_max: float = field(default=5.0, metadata={
        "help": "'cal': upper clamp of the gain from the 3D input (CAL's 5)."})
    prior_cap: float = field(default=5.0, metadata={
        "help": "'prior': the largest weight a token gets after the rescaling to mean 1."})
    excess_ratio: float = field(default=0.6, metadata={
        "help": "'excess': the share of a batch's answer tokens trained on (Rho-1's 60 percent)."})
    weight_clip: float | None = field(default=10.0, metadata={
        "help": "Upper bound of the 'paper' token weights (None: no clipping)."})
    epsilon: float = field(default=1e-4, metadata={
        "help": "Floor of the denominators (|text-only log-prob| or text-only loss)."})
    weight_grad: bool = field(default=False, metadata={
        "help": "'paper' only: let the gradient flow through the weights' denominator (the "
                "policy's text-only log-prob), the reading under which the paper's Appendix E "
                "blind term has zero derivative. Default: weights carry no gradient."})
    blind_logprob_column: str = field(default="blind_logprobs", metadata={
        "help": "Dataset column with the blind model's log-probs of the answer tokens "
                "(precomputed once with precompute_blind_logprobs, or by the trainer from "
                "ref_model when precompute_blind is set)."})
    precompute_blind: bool = field(default=False, metadata={
        "help": "With ref_model: compute its log-probs once into blind_logprob_column when the "
                "trainer starts (as trl's precompute_ref_log_probs), then drop the model."})
    scene_input_names: list[str] | None = field(default=None, metadata={
        "help": "Model keyword arguments that carry the 3D input. Default: the model's own "
                "(SceneLM) or the image/video inputs of transformers VLMs in the batch."})
    text_only_mode: str = field(default="auto", metadata={
        "help": "How the text-only pass removes 3D: 'drop' the inputs, feed them 'zeroed', "
                "'blind_batch' (a text_only_* batch the collator built without placeholders), "
                "or 'auto': per batch, blind_batch when the collator built one, zeroed (blank "
                "images) when input_ids hold a VLM's image placeholders, else drop; the log "
                "and the model card say which ran."})
    aux_loss: str = field(default="auto", metadata={
        "help": "Auxiliary losses the model returns: 'auto' (outputs.aux_loss x "
                "router_aux_loss_coef), 'from_model_loss' (the model's loss minus its "
                "cross-entropy), or 'none'."})
    reweight_eos: bool = field(default=False, metadata={
        "help": "Apply the 'paper' weight to the end-of-answer token too. The blind model "
                "predicts it almost surely, so its weight goes to ~0 and the model can stop "
                "learning where the answer ends (answers run on: EM falls while refined EM, "
                "a substring match, holds); by default it keeps weight 1."})
    nan_policy: str = field(default="raise", metadata={
        "help": "Non-finite loss inputs: 'raise' a NonFiniteLossError naming the batch row and "
                "token (default), or 'zero' (give such tokens/samples weight 0). A blind "
                "log-prob of -inf always gets the largest weight, weight_clip."})
    viewpoint_temperature: float = field(default=1.0, metadata={
        "help": "'viewpoint_dro': the softmax temperature over a question's viewpoints' "
                "losses (large: equal weights, SFT's loss; small: the worst viewpoint alone)."})
    viewpoint_group_column: str = field(default="viewpoint_group", metadata={
        "help": "'viewpoint_dro': the dataset column holding each row's question (its "
                "viewpoints share it); batches keep a question's viewpoints together."})
    init_from_blind: str | None = field(default=None, metadata={
        "help": "Start from the blind fine-tuned model's weights (a saved model folder), as "
                "the paper's text suggests."})

    def _check_reweighting(self) -> None:
        # the trainer's counts (the TrainingArguments this mixin joins): a zero would train
        # nothing, or by epochs when steps were asked for, or reach a division
        check_counts(self, per_device_train_batch_size=1, per_device_eval_batch_size=1,
                     gradient_accumulation_steps=1, dataloader_num_workers=0, warmup_steps=0,
                     seed=0)
        if self.max_steps == 0 or self.max_steps < -1:
            raise InputError(f"`max_steps` {self.max_steps}: expected a positive number of "
                             "steps, or -1 to train for `num_train_epochs`")
        if self.max_steps < 0 and not self.num_train_epochs > 0:
            raise InputError(f"`num_train_epochs` {self.num_train_epochs}: expected more than 0 "
                             "(or a positive `max_steps`)")
        if not self.learning_rate > 0:
            raise InputError(f"`learning_rate` {self.learning_rate}: expected more than 0 (the "
                             "weights would not move)")
        mode(self.reweighting)  # a ValueError naming the registered modes
        if self.text_only_mode not in TEXT_ONLY_MODES:
            raise InputError(f"Expected text_only_mode in {TEXT_ONLY_MODES} but got "
                             f"{self.text_only_mode!r}")
        if self.nan_policy not in NAN_POLICIES:
            raise InputError(f"Expected nan_policy in {NAN_POLICIES} but got {self.nan_policy!r}")
        if self.aux_loss not in AUX_LOSS_MODES:
            raise InputError(f"Expected aux_loss in {AUX_LOSS_MODES} but got {self.aux_loss!r}")
        if self.weight_clip is not None and not self.weight_clip > 0:
            raise InputError(f"`weight_clip` {self.weight_clip}: expected more than 0 (or None: "
                             "no clipping)")
        if self.epsilon <= 0:
            raise InputError(f"Expected epsilon > 0 but got {self.epsilon}")
        if self.weight_grad and self.reweighting != "paper":
            raise InputError("weight_grad applies to reweighting='paper' only")
        if not self.cal_min <= self.cal_max:
            raise InputError(f"Expected cal_min <= cal_max but got {self.cal_min}, {self.cal_max}")
        if not 0 < self.excess_ratio <= 1:
            raise InputError(f"Expected 0 < excess_ratio <= 1 but got {self.excess_ratio}")
        if not self.viewpoint_temperature > 0:
            raise InputError(f"Expected viewpoint_temperature > 0 but got "
                             f"{self.viewpoint_temperature}")
        if self.prior_cap < 1:
            raise InputError(f"Expected prior_cap >= 1 (weights have mean 1) but got "
                             f"{self.prior_cap}")


@dataclass
class ReweightedConfig(TrainingArguments, ReweightingArguments):
    """Training arguments for 3DR-FT.

    Differs from ``TrainingArguments`` by the fields of :class:`ReweightingArguments`, and
    by ``remove_unused_columns=False`` (the collators read raw rows).
    """

    remove_unused_columns: bool = field(default=False, metadata={
        "help": "Kept False: the collator needs the raw rows."})

    def __post_init__(self):
        self._check_reweighting()
        super().__post_init__()


def _fields_doc(cls: type) -> str:
    """One entry per field of ``cls``: name, default and its help text (what ``help()``
    shows before the inherited ``TrainingArguments``)."""
    lines = []
    for f in dataclasses.fields(cls):
        default = f.default if f.default is not dataclasses.MISSING else "(required)"
        text = " ".join(str(f.metadata.get("help", "")).split())
        lines += [f"    {f.name} (default {default!r}):",
                  *textwrap.wrap(text, 84, initial_indent="        ",
                                 subsequent_indent="        ")]
    return "\n".join(lines)


ReweightedConfig.__doc__ += ("\n    Parameters that control the reweighting (3DR-FT and its "
                             "family):\n\n" + _fields_doc(ReweightingArguments) + "\n")


def _tokenizer_of(processing_class: Any) -> Any:
    """The tokenizer inside a processor (LLaVA, Qwen2-VL), or the tokenizer itself."""
    return getattr(processing_class, "tokenizer", processing_class)


class ReweightingMixin:
    """The 3DR-FT loss core and its set-up, shared by the transformers and trl trainers."""

    args: Any

    # --- set-up -----------------------------------------------------------------------
    @staticmethod
    def _check_model_inputs(model: Any, args: Any, ref_model: Any, processing_class: Any,
                            peft_config: Any) -> Any:
        """Checks made before the parent ``__init__``; returns the model (a PeftModel when
        ``peft_config`` is given)."""
        if ref_model is not None and ref_model is model:
            raise InputError("ref_model is the policy itself; pass a separate frozen copy of "
                             "the blind model (e.g. SceneLM.from_pretrained(blind_path))")
        tok = _tokenizer_of(processing_class)
        emb = getattr(unwrap_model(model), "get_input_embeddings", None)
        if tok is not None and callable(emb) and hasattr(tok, "__len__"):
            n_emb = emb().num_embeddings
            if len(tok) > n_emb:
                raise InputError(f"tokenizer has {len(tok)} tokens but the model's embedding has "
                                 f"{n_emb} rows; resize the embeddings or use the model's "
                                 "tokenizer")
        if args.init_from_blind:
            ReweightingMixin._load_blind_weights(model, args.init_from_blind)
        if peft_config is not None:
            # peft only when a LoRA config is given
            from peft import PeftModel, get_peft_model

            if isinstance(model, PeftModel):
                raise InputError("model is already a PeftModel and a peft_config was passed too; "
                                 "merge the adapter first (model.merge_and_unload()) or pass one "
                                 "of the two")
            model = get_peft_model(model, peft_config)
        return model

    def _setup_reweighting(self, ref_model: Any, route: Any) -> None:
        args = self.args
        self.route = route if route is not None else HFModelRoute(
            text_only_mode=args.text_only_mode, scene_input_names=args.scene_input_names,
            aux_loss=args.aux_loss)
        self.ref_model = None
        if ref_model is not None:
            ref_model.eval()
            for p in ref_model.parameters():
                p.requires_grad_(False)
            if args.precompute_blind and mode(args.reweighting).needs_blind:
                self._precompute_column(ref_model)
                ref_model = None
            else:
                self.ref_model = self._prepare_reference(ref_model)
        if mode(args.reweighting).needs_blind and self.ref_model is None:
            cols = getattr(self.train_dataset, "column_names", None) or []
            if args.blind_logprob_column not in cols:
                raise InputError(
                    f"reweighting={args.reweighting!r} needs the blind model's log-probs: add "
                    f"the column "
                    f"{args.blind_logprob_column!r} with precompute_blind_logprobs, or pass "
                    "ref_model (a frozen blind model)")
        self._stats: dict[str, list[float]] = collections.defaultdict(list)
        self._num_sequences: torch.Tensor | None = None
        self.text_only_picked: dict[str, str] = {}

    def _prepare_reference(self, ref_model: Any) -> Any:
        """As trl prepares reference models: DeepSpeed / FSDP through trl's helpers, else the
        accelerator in evaluation mode (no DDP wrapper, no gradients)."""
        if getattr(self, "is_deepspeed_enabled", False):
            # trl's helper imports deepspeed, present only on DeepSpeed runs
            from trl.models.utils import prepare_deepspeed

            return prepare_deepspeed(ref_model, self.accelerator)
        if getattr(self, "is_fsdp_enabled", False):
            # the same helper family as prepare_deepspeed, for FSDP runs only
            from trl.models.utils import prepare_fsdp

            return prepare_fsdp(ref_model, self.accelerator)
        return self.accelerator.prepare_model(ref_model, evaluation_mode=True)

    def _precompute_column(self, ref_model: Any) -> None:
        col = self.args.blind_logprob_column
        collate = self.data_collator
        self.train_dataset = precompute_blind_logprobs(
            self.train_dataset, ref_model, collate, column=col, route=self.route,
            batch_size=max(1, self.args.per_device_train_batch_size))
        if self.eval_dataset is not None and hasattr(self.eval_dataset, "map"):
            self.eval_dataset = precompute_blind_logprobs(
                self.eval_dataset, ref_model, collate, column=col, route=self.route,
                batch_size=max(1, self.args.per_device_eval_batch_size))
        if getattr(collate, "blind_col", "absent") is None:
            collate.blind_col = col  # SceneQACollator packs the column itself
        elif not hasattr(collate, "blind_col"):
            self.data_collator = BlindColumnCollator(collate, col)

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
            raise InputError(f"init_from_blind: {path} does not match the model "
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

    # --- loss -------------------------------------------------------------------------
    def _eos_id(self) -> int | None:
        tok = _tokenizer_of(getattr(self, "processing_class", None))
        return getattr(tok, "eos_token_id", None)

    def reweighted_loss(self, model, inputs, num_items_in_batch=None
                        ) -> tuple[torch.Tensor, TokenScores]:
        """The 3DR-FT loss of one micro-batch (before the data-parallel rescaling) and the
        full pass's scores."""
        args = self.args
        inputs = dict(inputs)
        col = args.blind_logprob_column
        blind_col = inputs.pop(col, None)
        blind_col_mask = inputs.pop(f"{col}_mask", None)
        groups = inputs.pop(args.viewpoint_group_column, None)
        route = self.route
        full = route(model, inputs, text_only=False)
        entry = mode(args.reweighting)
        if entry.token_level and not full.per_token:
            raise InputError(f"reweighting={entry.name!r} needs token log-probs; this route "
                             "gives a per-sample loss (use reweighting='official', or a "
                             "ModuleRoute returning (log-probs, mask))")
        mask = full.mask
        text_logp = blind_logp = None
        if entry.needs_text_only:
            with torch.set_grad_enabled(args.weight_grad and model.training):
                text = route(model, inputs, text_only=True)
            self._note_text_only(route)
            text_logp = align_scores(text.logp, text.mask, mask, what="text-only pass")
            self._stats["text_only_logprob"].append(float(text_logp.detach()[mask].mean())
                                                    if mask.any() else 0.0)
        if entry.needs_blind:
            blind_logp = self._blind_logprobs(route, inputs, mask, blind_col, blind_col_mask)
        eos = self._eos_id()
        eos_mask = full.tokens.eq(eos) if eos is not None and full.tokens is not None else None
        global_seqs = num_items_in_batch is not None and model.training
        loss, wv = entry.loss(LossInputs(
            full.logp, mask, text_logp=text_logp, blind_logp=blind_logp,
            num_items_in_batch=num_items_in_batch if full.per_token else None,
            num_sequences=self._num_sequences if global_seqs else None,
            eos_mask=eos_mask, groups=groups), **entry.settings(args))
        if wv is not None and len(wv):
            self._stats["weight_mean"].append(float(wv.mean()))
            self._stats["weight_up_share"].append(float((wv > 1).float().mean()))
            self._stats["weight_down_share"].append(float((wv < 1).float().mean()))
        if args.average_tokens_across_devices and num_items_in_batch is not None \
                and model.training:
            loss = loss * self.accelerator.num_processes  # DDP averages gradients
        if full.aux_loss is not None:
            # a per-micro-batch mean: with num_items_in_batch the Trainer leaves gradient
            # accumulation to the loss (as trl's SFTTrainer does for the MoE loss)
            steps = self.current_gradient_accumulation_steps \
                if num_items_in_batch is not None and model.training else 1
            loss = loss + full.aux_loss / steps
            self._stats["aux_loss"].append(float(full.aux_loss.detach()))
        return loss, full

    def _note_text_only(self, route) -> None:
        """Say once which text-only pass ran (what text_only_mode='auto' picked)."""
        for picked, why in getattr(route, "picked", {}).items():
            if picked not in self.text_only_picked:
                self.text_only_picked[picked] = why
                if self.is_world_process_zero():
                    print(f"[hf_real3d] text-only pass: {picked} (text_only_mode="
                          f"{self.args.text_only_mode!r}: {why})", file=sys.stderr, flush=True)

    def text_only_note(self) -> str:
        """The model card's line on the text-only pass ('' before any ran)."""
        if not self.text_only_picked:
            return ""
        return "; ".join(f"{m} ({why})" for m, why in self.text_only_picked.items())

    def create_model_card(self, *args, **kwargs):
        """transformers' card, plus which text-only pass 3DR-FT ran."""
        out = super().create_model_card(*args, **kwargs)
        card = os.path.join(self.args.output_dir, "README.md")
        note = self.text_only_note()
        if note and self.is_world_process_zero() and os.path.isfile(card):
            with open(card, "a", encoding="utf-8") as f:
                f.write(f"\n## 3DR-FT\n\n- reweighting: `{self.args.reweighting}`\n"
                        f"- text-only pass (text_only_mode=`{self.args.text_only_mode}`): "
                        f"{note}\n")
        return out

    def _blind_logprobs(self, route, inputs, mask, blind_col, blind_col_mask) -> torch.Tensor:
        """The blind reference's log-probs of the answer tokens: the precomputed column, or
        a no-grad text-only pass of ``ref_model``."""
        col = self.args.blind_logprob_column
        if blind_col is not None:
            if blind_col_mask is None:
                raise InputError(f"batch has {col!r} without {col + '_mask'!r}; collate "
                                 "the column with BlindColumnCollator")
            return align_scores(blind_col.to(mask.device),
                                blind_col_mask.to(mask.device).bool(), mask,
                                what=f"column {col!r}")
        if self.ref_model is not None:
            with torch.no_grad():
                ref = route(self.ref_model, inputs, text_only=True)
            return align_scores(ref.logp, ref.mask, mask, what="reference model")
        raise InputError(f"batch lacks {col!r} and no ref_model was given")

    def _merge_stats(self, logs: dict[str, float]) -> None:
        if self._stats and "loss" in logs:
            for k, v in self._stats.items():
                logs[k] = round(sum(v) / len(v), 6)
            self._stats.clear()


class ReweightedTrainer(ReweightingMixin, Trainer):
    """A ``Trainer`` whose ``compute_loss`` is the 3DR-FT loss, for any route.

    Args (beyond ``Trainer``'s):
        ref_model: a frozen blind model for ``reweighting="paper"`` (run under ``no_grad``,
            prepared for DeepSpeed / FSDP as trl prepares reference models; never the policy).
        route: how the model gives its log-probs (:mod:`hf_real3d.training.routes`); default
            ``HFModelRoute(args.text_only_mode, args.scene_input_names, args.aux_loss)``.
        peft_config: a ``peft`` config; the model becomes a ``PeftModel`` and only the adapter
            trains (the text-only pass runs with the adapter on).

    ``processing_class`` may be a tokenizer or a processor (LLaVA, Qwen2-VL).
    """

    def __init__(self, model=None, args: ReweightedConfig | None = None, ref_model=None,
                 route=None, peft_config=None, **kwargs):
        if args is None or not isinstance(args, ReweightedConfig):
            raise TypeError("Expected args to be a ReweightedConfig")
        model = self._check_model_inputs(model, args, ref_model, kwargs.get("processing_class"),
                                         peft_config)
        self._check_groups(args, kwargs.get("train_dataset"))
        super().__init__(model=model, args=args, **kwargs)
        self._setup_reweighting(ref_model, route)
        if mode(args.reweighting).needs_groups:  # any collator: the batch gets the group ids
            self.data_collator = WithGroupIds(self.data_collator, args.viewpoint_group_column)

    @staticmethod
    def _check_groups(args: ReweightedConfig, train_dataset) -> None:
        """A mode comparing a question's viewpoints needs their group column in the training
        set: refused here, before any training, naming the fix."""
        col = args.viewpoint_group_column
        cols = getattr(train_dataset, "column_names", None)
        if mode(args.reweighting).needs_groups and cols is not None and col not in cols:
            raise InputError(
                f"reweighting={args.reweighting!r} needs a {col!r} column in the training set "
                "(one id per question, shared by its viewpoints) and it has none; augment the "
                "split with its turned viewpoints (`rotation_augment` all, or "
                "hf_real3d.training.augment.rotation_augment) or set viewpoint_group_column")

    def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
        loss, full = self.reweighted_loss(model, inputs, num_items_in_batch)
        return (loss, full.outputs) if return_outputs else loss

    def _set_signature_columns_if_needed(self):
        super()._set_signature_columns_if_needed()
        col = self.args.viewpoint_group_column
        if mode(self.args.reweighting).needs_groups and col not in self._signature_columns:
            self._signature_columns = [*self._signature_columns, col]

    def _get_train_sampler(self, train_dataset=None):
        """The group-aware sampler for the modes that compare a question's viewpoints."""
        if not mode(self.args.reweighting).needs_groups:
            return super()._get_train_sampler(train_dataset)
        dataset = train_dataset if train_dataset is not None else self.train_dataset
        col = self.args.viewpoint_group_column
        cols = getattr(dataset, "column_names", None) or []
        if col not in cols:
            raise InputError(f"reweighting={self.args.reweighting!r} needs a {col!r} column in "
                             "the training set (one id per question, shared by its viewpoints)")
        return ViewpointGroupSampler(dataset[col], self.args.per_device_train_batch_size,
                                     seed=self.args.seed, column=col)

    def log(self, logs: dict[str, float], start_time: float | None = None) -> None:
        self._merge_stats(logs)
        super().log(logs, start_time)
