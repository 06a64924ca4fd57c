"""The registry of reweighting modes: every ``reweighting=`` value is one :class:`Mode`.

An entry holds the mode's name, what it reads (the blind reference's log-probs, the policy's
own text-only pass), a one-line description, the model card's wording, its hyperparameters
(the config fields it reads) and its loss. The trainer's dispatch, the config's ``choices``
and help text and the model card are all read from here, so adding a mode means adding one
:func:`register` call and its test.

>>> from hf_real3d.training.modes import MODES, mode
>>> list(MODES)
['none', 'paper', 'official', 'cal', 'prior', 'excess', 'paper_normalised', 'viewpoint_dro']
>>> mode("prior").needs_blind, mode("prior").needs_text_only
(True, False)
>>> mode("prior").params  # config field: the keyword its loss takes it as
{'epsilon': 'eps', 'prior_cap': 'prior_cap', 'nan_policy': 'nan_policy'}
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch

from hf_real3d.errors import InputError
from hf_real3d.training.losses import (
    cal_weights,
    excess_weights,
    mean_nll,
    official_loss_from_logprobs,
    paper_loss_from_logprobs,
    paper_normalised_weights,
    prior_weights,
    viewpoint_dro_weights,
    weighted_loss_from_logprobs,
)

__all__ = ["Mode", "LossInputs", "MODES", "register", "mode", "family", "family_weights",
           "help_text", "check_groups"]


@dataclass
class LossInputs:
    """What a mode's loss reads for one micro-batch, all on the full pass's token positions.

    ``logp`` (with gradient) and ``mask``: the full pass; ``text_logp``: the policy without
    its 3D input (when the mode needs it); ``blind_logp``: the blind reference's (when the
    mode needs it); ``num_items_in_batch``: the answer tokens over the accumulated global
    batch (None: the local count); ``num_sequences``: the sequences over the same batch;
    ``eos_mask``: the end-of-answer tokens (``paper`` keeps them at weight 1 unless
    ``reweight_eos``); ``groups``: each sequence's viewpoint group (``viewpoint_dro``)."""

    logp: torch.Tensor
    mask: torch.Tensor
    text_logp: torch.Tensor | None = None
    blind_logp: torch.Tensor | None = None
    num_items_in_batch: torch.Tensor | int | None = None
    num_sequences: torch.Tensor | int | None = None
    eos_mask: torch.Tensor | None = None
    groups: torch.Tensor | None = None


# a mode's loss: ``loss(inputs, **settings)``, ``settings`` being its declared hyperparameters
LossFn = Callable[..., "tuple[torch.Tensor, torch.Tensor | None]"]
WeightFn = Callable[..., torch.Tensor]


@dataclass(frozen=True)
class Mode:
    """One reweighting mode.

    ``params``: the mode's hyperparameters, each config field it reads
    (:class:`~hf_real3d.training.trainer.ReweightingArguments`) and the keyword its loss
    and weights take it as; :meth:`settings` reads them from a config. ``loss(inputs,
    **settings)`` returns the micro-batch loss and the weights of its answer tokens (or
    samples) for the logs, or None. ``token_level``: the loss needs per-token log-probs (a
    route giving one loss per sample serves only the modes without it). ``weights`` is set
    for the family's modes, whose detached token weights have mean 1 and enter SFT's sum
    unchanged otherwise. ``needs_groups``: the batch must hold each question's viewpoints
    together, with their group ids."""

    name: str
    summary: str
    card: str
    needs_blind: bool
    needs_text_only: bool
    loss: LossFn
    params: dict[str, str] = field(default_factory=dict, hash=False)
    token_level: bool = True
    weights: WeightFn | None = None
    needs_groups: bool = False

    def settings(self, args: Any) -> dict[str, Any]:
        """The mode's hyperparameters read from ``args`` (a ``ReweightingArguments``), by the
        keyword its loss takes each as."""
        return {kw: getattr(args, name) for name, kw in self.params.items()}


MODES: dict[str, Mode] = {}


def register(entry: Mode) -> Mode:
    """Add ``entry`` to :data:`MODES` (a name may be registered once)."""
    if entry.name in MODES:
        raise InputError(f"reweighting mode {entry.name!r} is already registered")
    MODES[entry.name] = entry
    return entry


def mode(name: str) -> Mode:
    """The registered mode ``name``; a ValueError naming the choices otherwise."""
    if name not in MODES:
        raise InputError(f"Expected reweighting in {tuple(MODES)} but got {name!r}")
    return MODES[name]


def help_text() -> str:
    """The ``reweighting`` option's help: every mode with its one-line summary."""
    return "; ".join(f"'{m.name}' ({m.summary})" for m in MODES.values()) + "."


def family() -> tuple[str, ...]:
    """The registered modes whose weights enter SFT's sum (``cal``, ``prior``, ``excess``,
    ``paper_normalised``): their token weights have mean 1 (:func:`family_weights`)."""
    return tuple(m.name for m in MODES.values() if m.weights is not None)


def family_weights(name: str, logp: torch.Tensor, mask: torch.Tensor, *,
                   text_logp: torch.Tensor | None = None,
                   blind_logp: torch.Tensor | None = None, **settings: Any) -> torch.Tensor:
    """Detached token weights of the family mode ``name``, mean 1 over ``mask``.

    ``logp``: the full pass's log-probs; ``text_logp``: the policy without its 3D input
    (``cal``, ``paper_normalised``); ``blind_logp``: the blind reference's (``prior``,
    ``excess``, ``paper_normalised``); the mode is handed the ones it reads. ``settings``:
    some of the mode's own hyperparameters (``Mode.params``' keywords; the rest keep their
    defaults), another is refused. See :mod:`hf_real3d.training.losses` for each rule.

    >>> m = torch.ones(1, 4, dtype=torch.bool)
    >>> full = torch.tensor([[-0.1, -0.1, -2.0, -0.5]])
    >>> text = torch.tensor([[-3.0, -0.2, -2.0, -6.5]])  # gains 2.9, 0.1, 0, 6.0
    >>> family_weights("cal", full, m, text_logp=text)  # clamped: 2.9, 1, 1, 5; mean 1
    tensor([[1.1717, 0.4040, 0.4040, 2.0202]])
    >>> blind = torch.tensor([[-0.05, -2.0, -0.1, -0.5]])  # excess 0.05, -1.9, 1.9, 0
    >>> family_weights("excess", full, m, blind_logp=blind, excess_ratio=0.5)
    tensor([[2., 0., 2., 0.]])
    """
    entry = MODES.get(name)
    if entry is None or entry.weights is None:
        raise InputError(f"Expected a weighting in {family()} but got {name!r}")
    takes = sorted(entry.params.values())
    other = sorted(set(settings) - set(takes))
    if other:
        raise InputError(f"reweighting={name!r} takes the settings {takes} but got {other[0]!r}")
    inputs = {}
    if entry.needs_text_only:
        if text_logp is None:
            raise InputError(f"reweighting={name!r} needs the policy's text-only log-probs")
        inputs["text_logp"] = text_logp
    if entry.needs_blind:
        if blind_logp is None:
            raise InputError(f"reweighting={name!r} needs the blind reference's log-probs")
        inputs["blind_logp"] = blind_logp
    return entry.weights(logp, mask, **inputs, **settings)


# --- the modes ------------------------------------------------------------------------------

def _sft_loss(x: LossInputs) -> tuple[torch.Tensor, None]:
    return weighted_loss_from_logprobs(x.logp, x.mask, 1.0, x.num_items_in_batch), None


def _paper_loss(x: LossInputs, *, eps: float, clip: float | None, weight_grad: bool,
                reweight_eos: bool, nan_policy: str) -> tuple[torch.Tensor, torch.Tensor]:
    loss, w = paper_loss_from_logprobs(
        x.logp, x.mask, x.blind_logp, x.text_logp, x.num_items_in_batch, eps=eps, clip=clip,
        fixed_weight_mask=None if reweight_eos else x.eos_mask, nan_policy=nan_policy,
        weight_grad=weight_grad)
    return loss, w[x.mask].detach()


def _official_loss(x: LossInputs, *, eps: float, nan_policy: str
                   ) -> tuple[torch.Tensor, torch.Tensor]:
    return official_loss_from_logprobs(x.logp, x.mask, x.text_logp, x.num_sequences,
                                       eps=eps, nan_policy=nan_policy)


def _family_loss(name: str) -> LossFn:
    def loss(x: LossInputs, **settings: Any) -> tuple[torch.Tensor, torch.Tensor]:
        w = family_weights(name, x.logp, x.mask, text_logp=x.text_logp,
                           blind_logp=x.blind_logp, **settings)
        return weighted_loss_from_logprobs(x.logp, x.mask, w, x.num_items_in_batch), w[x.mask]
    return loss


# config field -> the keyword the losses and weights take it as
_EPS, _CLIP, _NAN = {"epsilon": "eps"}, {"weight_clip": "clip"}, {"nan_policy": "nan_policy"}

register(Mode(
    "none", summary="plain SFT", card="plain SFT (no reweighting)",
    needs_blind=False, needs_text_only=False, loss=_sft_loss, token_level=False))
register(Mode(
    "paper", summary="token weights = blind log-prob / current text-only log-prob",
    card="3DR-FT, paper variant (token weight = blind log-prob / own text-only log-prob)",
    needs_blind=True, needs_text_only=True, loss=_paper_loss,
    params={**_CLIP, **_EPS, "reweight_eos": "reweight_eos", "weight_grad": "weight_grad",
            **_NAN}))
register(Mode(
    "official", summary="per-sample full loss / own text-only loss",
    card="3DR-FT, official-code variant (per-sample full loss / own text-only loss)",
    needs_blind=False, needs_text_only=True, loss=_official_loss, token_level=False,
    params={**_EPS, **_NAN}))
register(Mode(
    "cal", summary="weights of mean 1 per batch: the policy's gain from its 3D input, "
                   "clamped to [cal_min, cal_max]",
    card="CAL-style reweighting (token weight = own gain from the 3D input, clamped, mean 1 "
         "per batch)",
    needs_blind=False, needs_text_only=True, loss=_family_loss("cal"), weights=cal_weights,
    params={"cal_min": "cal_min", "cal_max": "cal_max", **_NAN}))
register(Mode(
    "prior", summary="weights of mean 1 per batch: the blind reference's surprise, capped at "
                     "prior_cap",
    card="PRIOR-style reweighting (token weight = the blind model's surprise, mean 1 per "
         "batch, capped)",
    needs_blind=True, needs_text_only=False, loss=_family_loss("prior"), weights=prior_weights,
    params={**_EPS, "prior_cap": "prior_cap", **_NAN}))
register(Mode(
    "excess", summary="Rho-1: the excess_ratio share of tokens of highest loss over the blind "
                      "reference's",
    card="Rho-1-style selection (the tokens of highest excess loss over the blind model)",
    needs_blind=True, needs_text_only=False, loss=_family_loss("excess"),
    weights=excess_weights, params={"excess_ratio": "excess_ratio", **_NAN}))
register(Mode(
    "paper_normalised", summary="the paper weights rescaled to mean 1 per batch",
    card="3DR-FT paper weights rescaled to mean 1 per batch",
    needs_blind=True, needs_text_only=True, loss=_family_loss("paper_normalised"),
    weights=paper_normalised_weights, params={**_CLIP, **_EPS, **_NAN}))


def check_groups(name: str, groups: Any, column: str) -> torch.Tensor:
    """The batch's viewpoint group ids, refused when the batch carries none."""
    if groups is None:
        raise InputError(f"reweighting={name!r} needs viewpoint groups in the batch: give the "
                         f"dataset a {column!r} column (one id per question, shared by its "
                         "viewpoints; rotation_augment writes it) and train with the trainer's "
                         "group-aware sampler, which keeps a question's viewpoints in one batch")
    return torch.as_tensor(groups)


def _viewpoint_dro_loss(x: LossInputs, *, temperature: float, group_column: str
                        ) -> tuple[torch.Tensor, torch.Tensor]:
    groups = check_groups("viewpoint_dro", x.groups, group_column)
    w = viewpoint_dro_weights(mean_nll(x.logp.detach().float(), x.mask), groups,
                              temperature=temperature)
    tok = w[:, None].to(x.logp.dtype) * x.mask
    return weighted_loss_from_logprobs(x.logp, x.mask, tok, x.num_items_in_batch), w


register(Mode(
    "viewpoint_dro", summary="per question, weights favouring its viewpoint of highest loss: "
                             "a softmax over its viewpoints' losses at viewpoint_temperature, "
                             "mean 1 per question",
    card="viewpoint-robust training (per question, the viewpoint of highest loss weighted "
         "up: softmax over its viewpoints' losses, mean 1 per question)",
    needs_blind=False, needs_text_only=False, loss=_viewpoint_dro_loss, needs_groups=True,
    params={"viewpoint_temperature": "temperature", "viewpoint_group_column": "group_column"}))
