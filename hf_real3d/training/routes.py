"""Routes: how a model gives 3DR-FT its per-token log-probs, with and without its 3D input.

The trainers keep one loss core (:mod:`hf_real3d.training.losses`); a *route* is the small
adapter at the edge that turns ``(model, batch)`` into :class:`TokenScores`:

* :class:`HFModelRoute`: any ``transformers`` model called with keyword inputs (SceneLM,
  causal LMs, VLMs such as LLaVA or Qwen2-VL taking 3D as images). The model is called
  without ``labels`` and the log-probs come from its logits. The text-only pass is
  ``text_only_mode``: ``"drop"`` the 3D inputs, feed them ``"zeroed"``, or
  ``"blind_batch"``: a second batch the collator built without the 3D placeholders, under
  keys prefixed ``text_only_`` (``text_only_input_ids``, ``text_only_attention_mask``,
  ``text_only_labels``, ...); ``"auto"`` (the default) picks per batch: ``blind_batch``
  when the collator built one, ``zeroed`` (blank images) when ``input_ids`` hold a VLM's
  image placeholders, else ``drop`` (SceneLM, a text model). :attr:`HFModelRoute.picked`
  says which it took.
* :class:`FusedHeadRoute`: the same, through trl's fused LM head (``fused_lm_head=True``
  returns the label log-probs without building the logits); used by
  :class:`~hf_real3d.training.ReweightedSFTTrainer`.
* :class:`ModuleRoute`: a plain ``nn.Module`` with a dict argument and its own loss (LEO,
  Chat-Scene, the official pseudocode) through a function
  ``fn(model, batch, text_only) -> (log-probs (B, L), mask (B, L))``; or, for
  ``reweighting="official"`` only, ``per_sample=True`` and
  ``fn(model, batch, text_only) -> per-sample loss (B,)``.

Token positions: a route returns log-probs on its own positions. The passes of one batch
(full, text-only, a reference model, a precomputed column) are matched by the order of the
scored tokens within each row (:func:`align_scores`), so a text-only batch may be shorter
than the full one (no image placeholders) as long as it scores the same answer tokens.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import torch

from hf_real3d.errors import InputError
from hf_real3d.modeling.scene_lm import causal_lm_loss
from hf_real3d.training.losses import token_logprobs

__all__ = ["TokenScores", "HFModelRoute", "FusedHeadRoute", "ModuleRoute", "align_scores",
           "unwrap_model", "TEXT_ONLY_PREFIX", "VISUAL_INPUT_NAMES", "TEXT_ONLY_MODES",
           "AUX_LOSS_MODES", "TextOnlyInputError"]

TEXT_ONLY_PREFIX = "text_only_"
TEXT_ONLY_MODES = ("auto", "drop", "zeroed", "blind_batch")
AUX_LOSS_MODES = ("auto", "from_model_loss", "none")
# keyword inputs that carry images or video in transformers' VLMs (3D as frames / BEV)
VISUAL_INPUT_NAMES = ("pixel_values", "pixel_values_videos", "image_grid_thw", "video_grid_thw",
                      "image_sizes", "pixel_attention_mask", "image_attention_mask",
                      "second_per_grid_ts")
# config attributes naming a VLM's image / video placeholder token
_PLACEHOLDER_ATTRS = ("image_token_id", "image_token_index", "video_token_id",
                      "video_token_index")


class TextOnlyInputError(ValueError):
    """A text-only pass that cannot run as configured (placeholders left, no text-only batch)."""


@dataclass
class TokenScores:
    """Per-token log-probs of one pass over a batch.

    ``logp`` (B, L): log-prob of each scored token (0 where ``mask`` is False), with
    gradient on the full pass; ``mask`` (B, L) bool; ``tokens`` (B, L): the scored token ids
    (-100 where masked, None for a per-sample route); ``aux_loss``: a scalar the model adds
    to its language-model loss (MoE router loss, auxiliary heads), kept as is;
    ``per_token``: False when each row is one per-sample loss (``logp = -loss``);
    ``outputs``: the model's raw output."""

    logp: torch.Tensor
    mask: torch.Tensor
    tokens: torch.Tensor | None = None
    aux_loss: torch.Tensor | None = None
    per_token: bool = True
    outputs: Any = None


def unwrap_model(model: Any) -> Any:
    """The model under DDP / FSDP / DeepSpeed wrappers and a PEFT wrapper (for attribute
    look-ups only; the wrapped one is what is called)."""
    seen = 0
    while seen < 8:
        seen += 1
        if hasattr(model, "module") and isinstance(model.module, torch.nn.Module):
            model = model.module
        elif hasattr(model, "get_base_model") and callable(model.get_base_model):
            model = model.get_base_model()
        else:
            break
    return model


def align_scores(logp: torch.Tensor, mask: torch.Tensor, target_mask: torch.Tensor, *,
                 what: str) -> torch.Tensor:
    """Place ``logp`` (scored on ``mask``) on the positions of ``target_mask``, token by
    token in row order. Rows must score as many tokens on both sides."""
    if mask.shape == target_mask.shape and torch.equal(mask, target_mask):
        return logp
    n_src, n_dst = mask.sum(1), target_mask.sum(1)
    if n_src.shape != n_dst.shape or not torch.equal(n_src.cpu(), n_dst.cpu()):
        bad = int((n_src != n_dst).nonzero()[0]) if n_src.shape == n_dst.shape else 0
        raise TextOnlyInputError(
            f"{what}: batch row {bad} scores {int(n_src[bad])} answer tokens but the full pass "
            f"scores {int(n_dst[bad])}; both passes must label the same answer tokens (check "
            "the collator's text_only_labels, or recompute the blind log-prob column with "
            "this tokenizer)")
    out = torch.zeros(target_mask.shape, dtype=logp.dtype, device=logp.device)
    out[target_mask] = logp[mask.to(logp.device)]
    return out


def _placeholder_ids(model: Any) -> dict[str, int]:
    cfg = getattr(unwrap_model(model), "config", None)
    out: dict[str, int] = {}
    for c in (cfg, getattr(cfg, "text_config", None)):
        for a in _PLACEHOLDER_ATTRS:
            v = getattr(c, a, None) if c is not None else None
            if isinstance(v, int) and v >= 0:
                out.setdefault(a, v)
    return out


def _placeholders_in(model: Any, ids: Any) -> list[tuple[str, int, int]]:
    """(config attribute, token id, count) of each image / video placeholder ``ids`` holds."""
    if not torch.is_tensor(ids):
        return []
    found = ((a, tid, int(ids.eq(tid).sum())) for a, tid in _placeholder_ids(model).items())
    return [f for f in found if f[2]]


def _router_loss(model: Any, outputs: Any) -> torch.Tensor | None:
    """A MoE model's router loss as its own forward adds it: ``router_aux_loss_coef`` (of
    the config or its text config; 1 when absent) x ``outputs.aux_loss``."""
    if getattr(outputs, "aux_loss", None) is None:
        return None
    cfg = getattr(unwrap_model(model), "config", None)
    coef = getattr(cfg, "router_aux_loss_coef", None)
    if coef is None and cfg is not None and hasattr(cfg, "get_text_config"):
        coef = getattr(cfg.get_text_config(), "router_aux_loss_coef", None)
    return outputs.aux_loss * (1.0 if coef is None else coef)


class HFModelRoute:
    """A ``transformers`` model called with keyword inputs; log-probs from its logits.

    Args:
        text_only_mode: ``"drop"``, ``"zeroed"`` or ``"blind_batch"`` (module docstring).
        scene_input_names: the keyword inputs that carry 3D. Default: the model's own
            ``scene_input_names`` attribute (SceneLM) or the image / video inputs of
            transformers' VLMs present in the batch (:data:`VISUAL_INPUT_NAMES`).
        aux_loss: ``"auto"``: add ``outputs.aux_loss`` (MoE routers) scaled by the config's
            ``router_aux_loss_coef``; ``"from_model_loss"``: call the model *with* labels and
            keep ``outputs.loss`` minus the standard token-mean cross-entropy of its logits
            (a model whose ``forward`` adds auxiliary terms to its loss, as Ross3D does);
            ``"none"``.
    """

    def __init__(self, text_only_mode: str = "auto", scene_input_names: Sequence[str] | None = None,
                 aux_loss: str = "auto"):
        if text_only_mode not in TEXT_ONLY_MODES:
            raise InputError(f"Expected text_only_mode in {TEXT_ONLY_MODES} but got "
                             f"{text_only_mode!r}")
        if aux_loss not in AUX_LOSS_MODES:
            raise InputError(f"Expected aux_loss in {AUX_LOSS_MODES} but got {aux_loss!r}")
        self.text_only_mode = text_only_mode
        self.scene_input_names = None if scene_input_names is None else tuple(scene_input_names)
        self.aux_loss = aux_loss
        self.picked: dict[str, str] = {}  # text-only mode taken -> why (auto), as it ran

    def resolve(self, model: Any, inputs: Mapping[str, Any]) -> str:
        """The text-only mode this batch gets (``text_only_mode``, or what ``auto`` picks)."""
        if self.text_only_mode != "auto":
            return self.text_only_mode
        if TEXT_ONLY_PREFIX + "input_ids" in inputs:
            mode, why = "blind_batch", "the collator built a text-only batch"
        elif hasattr(unwrap_model(model), "text_only_inputs"):
            mode, why = "drop", "the model drops its own 3D inputs"
        elif self.scene_names(model, inputs) and _placeholders_in(model, inputs.get("input_ids")):
            mode, why = "zeroed", "input_ids hold image placeholders: blank images"
        else:
            mode, why = "drop", "no image placeholders in input_ids"
        self.picked.setdefault(mode, why)
        return mode

    # --- inputs -----------------------------------------------------------------------------
    def scene_names(self, model: Any, inputs: Mapping[str, Any]) -> tuple[str, ...]:
        if self.scene_input_names is not None:
            return self.scene_input_names
        own = getattr(unwrap_model(model), "scene_input_names", None)
        if own is not None:
            return tuple(own)
        return tuple(k for k in VISUAL_INPUT_NAMES if k in inputs)

    def full_inputs(self, inputs: Mapping[str, Any]) -> tuple[dict[str, Any], torch.Tensor]:
        base = {k: v for k, v in inputs.items() if not k.startswith(TEXT_ONLY_PREFIX)}
        if "labels" not in base:
            raise InputError("the batch has no 'labels': 3DR-FT scores the labelled answer "
                             "tokens (-100 elsewhere)")
        labels = base.pop("labels")
        return base, labels

    def text_only_inputs(self, model: Any, inputs: Mapping[str, Any]
                         ) -> tuple[dict[str, Any], torch.Tensor]:
        """The inputs and labels of the text-only pass."""
        mode = self.resolve(model, inputs)
        if mode == "blind_batch":
            own = {k[len(TEXT_ONLY_PREFIX):]: v for k, v in inputs.items()
                   if k.startswith(TEXT_ONLY_PREFIX)}
            if "input_ids" not in own or "labels" not in own:
                raise TextOnlyInputError(
                    "text_only_mode='blind_batch' but the batch has no text_only_input_ids / "
                    "text_only_labels; build them in the collator (VLMCollator(..., "
                    "text_only_batch=True)) or use text_only_mode='zeroed'")
            labels = own.pop("labels")
            return own, labels
        base, labels = self.full_inputs(inputs)
        core = unwrap_model(model)
        if hasattr(core, "text_only_inputs"):  # a model that knows its own 3D inputs
            return core.text_only_inputs(base, mode), labels
        names = set(self.scene_names(model, base))
        if mode == "drop":
            out = {k: v for k, v in base.items() if k not in names}
            left = _placeholders_in(model, out.get("input_ids")) if names else []
            if left:
                attr, tid, n = left[0]
                raise TextOnlyInputError(
                    f"text-only pass: input_ids still hold {n} placeholder tokens "
                    f"({attr}={tid}) after dropping {sorted(names & set(base))}, and "
                    f"{type(core).__name__} cannot run them without their images; use "
                    "text_only_mode='zeroed' (blank the images) or 'blind_batch' (the "
                    "collator builds a batch without placeholders)")
            return out, labels
        return {k: torch.zeros_like(v) if k in names and torch.is_tensor(v)
                and v.is_floating_point() else v for k, v in base.items()}, labels

    # --- passes -----------------------------------------------------------------------------
    def _aux(self, model: Any, outputs: Any, logits: torch.Tensor, labels: torch.Tensor
             ) -> torch.Tensor | None:
        if self.aux_loss == "from_model_loss":
            if getattr(outputs, "loss", None) is None:
                raise InputError("aux_loss='from_model_loss' but the model returned no loss")
            return outputs.loss - causal_lm_loss(logits, labels)
        return _router_loss(model, outputs) if self.aux_loss == "auto" else None

    def _forward(self, model: Any, inputs: dict[str, Any], labels: torch.Tensor, *,
                 with_aux: bool) -> TokenScores:
        if with_aux and self.aux_loss == "from_model_loss":
            outputs = model(**inputs, labels=labels)
        else:
            outputs = model(**inputs)
        logits = outputs.logits
        if logits.shape[1] != labels.shape[1]:
            raise TextOnlyInputError(
                f"the model returned logits for {logits.shape[1]} positions but labels have "
                f"{labels.shape[1]}; a model that adds 3D tokens to the sequence must return "
                "logits for the text positions only (or use a ModuleRoute)")
        logp, mask = token_logprobs(logits, labels)
        aux = self._aux(model, outputs, logits, labels) if with_aux else None
        tokens = labels[:, 1:].masked_fill(~mask, -100)
        return TokenScores(logp, mask, tokens, aux, True, outputs)

    def __call__(self, model: Any, inputs: Mapping[str, Any], *, text_only: bool = False
                 ) -> TokenScores:
        if text_only:
            kw, labels = self.text_only_inputs(model, inputs)
            return self._forward(model, kw, labels, with_aux=False)
        kw, labels = self.full_inputs(inputs)
        return self._forward(model, kw, labels, with_aux=True)


class FusedHeadRoute(HFModelRoute):
    """:class:`HFModelRoute` through trl's fused LM head (``add_fused_lm_head``): the label
    log-probs come without the (B, T, V) logits, as SFTTrainer computes its own loss."""

    def _forward(self, model, inputs, labels, *, with_aux):
        outputs = model(**inputs, labels=labels, fused_lm_head=True)
        mask = outputs.label_mask.bool()
        logp = outputs.log_probs.masked_fill(~mask, 0.0)
        aux = _router_loss(model, outputs) if with_aux and self.aux_loss == "auto" else None
        tokens = labels[:, 1:].masked_fill(~mask, -100)
        return TokenScores(logp, mask, tokens, aux, True, outputs)


class ModuleRoute:
    """A plain module (a dict argument, its own tokenisation and loss) through a function.

    ``fn(model, batch, text_only)`` returns ``(logp, mask)`` (B, L): the log-prob of each
    answer token with the 3D input (``text_only=False``, with gradient) or without it
    (``text_only=True``: the model's own text-only convention, e.g. 3D features zeroed).
    With ``per_sample=True`` it returns each sample's loss (B,) instead (LEO's and the
    official pseudocode's ``forward``), which serves ``reweighting="official"`` and
    ``"none"`` but not ``"paper"`` (it needs token log-probs). ``fn`` may also return a
    :class:`TokenScores` (e.g. with an ``aux_loss``).
    """

    def __init__(self, fn: Callable[..., Any], *, per_sample: bool = False):
        self.fn = fn
        self.per_sample = per_sample

    def __call__(self, model: Any, inputs: Mapping[str, Any], *, text_only: bool = False
                 ) -> TokenScores:
        out = self.fn(model, inputs, text_only)
        if isinstance(out, TokenScores):
            return out
        if self.per_sample:
            loss = torch.as_tensor(out)
            if loss.dim() != 1:
                raise InputError(f"ModuleRoute(per_sample=True): expected a per-sample loss of "
                                 f"shape (B,) but got {tuple(loss.shape)}")
            mask = torch.ones(loss.shape[0], 1, dtype=torch.bool, device=loss.device)
            return TokenScores(-loss[:, None], mask, None, None, False, None)
        logp, mask = out
        if logp.shape != mask.shape or logp.dim() != 2:
            raise InputError(f"ModuleRoute: expected (log-probs, mask) of one shape (B, L) but "
                             f"got {tuple(logp.shape)} and {tuple(mask.shape)}")
        mask = mask.bool()
        return TokenScores(logp.masked_fill(~mask, 0.0), mask, None, None, True, None)
