"""The registry of reweighting modes: every ``reweighting=`` value is one :class:`Mode`.

An entry holds the mode's name, what it reads (the blind reference's log-probs, the policy's
own text-only pass), a one-line description, the model card's wording, the demo arm that
trains it (if any) and its loss. The trainer's dispatch, the config's ``choices`` and help
text, the model card and the demo's roles are all read from here, so adding a mode means
adding one :func:`register` call and its test.

>>> from hf_real3d.training.modes import MODES, mode
>>> list(MODES)
['none', 'paper', 'official', 'cal', 'prior', 'excess', 'paper_normalised', 'viewpoint_dro']
>>> mode("prior").needs_blind, mode("prior").needs_text_only
(True, False)
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
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

__all__ = ["Mode", "LossInputs", "MODES", "register", "mode", "family_weights", "FAMILY",
           "NEEDS_BLIND", "NEEDS_TEXT_ONLY", "REWEIGHTING", "help_text", "check_groups"]


@dataclass
class LossInputs:
    """What a mode's loss reads for one micro-batch, all on the full pass's token positions.

    ``logp`` (with gradient) and ``mask``: the full pass; ``text_logp``: the policy without
    its 3D input (when the mode needs it); ``blind_logp``: the blind reference's (when the
    mode needs it); ``num_items_in_batch``: the answer tokens over the accumulated global
    batch (None: the local count); ``num_sequences``: the sequences over the same batch;
    ``fixed_weight_mask``: tokens that keep weight 1 (the end-of-answer token)."""

    logp: torch.Tensor
    mask: torch.Tensor
    text_logp: torch.Tensor | None = None
    blind_logp: torch.Tensor | None = None
    num_items_in_batch: torch.Tensor | int | None = None
    num_sequences: torch.Tensor | int | None = None
    fixed_weight_mask: torch.Tensor | None = None
    groups: torch.Tensor | None = None


LossFn = Callable[[LossInputs, Any], "tuple[torch.Tensor, torch.Tensor | None]"]
WeightFn = Callable[..., torch.Tensor]


@dataclass(frozen=True)
class Mode:
    """One reweighting mode.

    ``token_level``: the loss needs per-token log-probs (a route giving one loss per sample
    serves only the modes without it). ``loss(inputs, args)`` returns the micro-batch loss
    and the weights of its answer tokens (or samples) for the logs, or None. ``weights`` is
    set for the family's modes, whose detached token weights have mean 1 and enter SFT's
    sum unchanged otherwise.
    ``needs_groups``: the batch must hold each question's viewpoints together, with their
    group ids. ``demo_arm``/``demo_role``: the demo's arm that fine-tunes the control with
    this mode."""

    name: str
    summary: str
    card: str
    needs_blind: bool
    needs_text_only: bool
    loss: LossFn
    token_level: bool = True
    weights: WeightFn | None = None
    uses_clip: bool = False
    needs_groups: bool = False
    demo_arm: str | None = None
    demo_role: str | None = None


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


def family_weights(name: str, logp: torch.Tensor, mask: torch.Tensor, *,
                   text_logp: torch.Tensor | None = None,
                   blind_logp: torch.Tensor | None = None, eps: float = 1e-4,
                   clip: float | None = None, cal_min: float = 1.0, cal_max: float = 5.0,
                   prior_cap: float = 5.0, excess_ratio: float = 0.6,
                   nan_policy: str = "raise") -> torch.Tensor:
    """Detached token weights of the family mode ``name``, mean 1 over ``mask``.

    ``logp``: the full pass's log-probs; ``text_logp``: the policy without its 3D input
    (``cal``, ``paper_normalised``); ``blind_logp``: the blind reference's (``prior``,
    ``excess``, ``paper_normalised``). See :mod:`hf_real3d.training.losses` for each rule.

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
        raise InputError(f"Expected a weighting in {FAMILY} but got {name!r}")
    if entry.needs_text_only and text_logp is None:
        raise InputError(f"reweighting={name!r} needs the policy's text-only log-probs")
    if entry.needs_blind and blind_logp is None:
        raise InputError(f"reweighting={name!r} needs the blind reference's log-probs")
    return entry.weights(logp, mask, text_logp=text_logp, blind_logp=blind_logp, eps=eps,
                         clip=clip, cal_min=cal_min, cal_max=cal_max, prior_cap=prior_cap,
                         excess_ratio=excess_ratio, nan_policy=nan_policy)


# --- the modes ------------------------------------------------------------------------------

def _sft_loss(x: LossInputs, args) -> tuple[torch.Tensor, None]:
    return weighted_loss_from_logprobs(x.logp, x.mask, 1.0, x.num_items_in_batch), None


def _paper_loss(x: LossInputs, args) -> tuple[torch.Tensor, torch.Tensor]:
    loss, w = paper_loss_from_logprobs(
        x.logp, x.mask, x.blind_logp, x.text_logp, x.num_items_in_batch, eps=args.epsilon,
        clip=args.weight_clip, fixed_weight_mask=x.fixed_weight_mask,
        nan_policy=args.nan_policy, weight_grad=args.weight_grad)
    return loss, w[x.mask].detach()


def _official_loss(x: LossInputs, args) -> tuple[torch.Tensor, torch.Tensor]:
    return official_loss_from_logprobs(x.logp, x.mask, x.text_logp, x.num_sequences,
                                       eps=args.epsilon, nan_policy=args.nan_policy)


def _family_loss(name: str) -> LossFn:
    def loss(x: LossInputs, args) -> tuple[torch.Tensor, torch.Tensor]:
        w = family_weights(name, x.logp, x.mask, text_logp=x.text_logp,
                           blind_logp=x.blind_logp, eps=args.epsilon, clip=args.weight_clip,
                           cal_min=args.cal_min, cal_max=args.cal_max,
                           prior_cap=args.prior_cap, excess_ratio=args.excess_ratio,
                           nan_policy=args.nan_policy)
        return weighted_loss_from_logprobs(x.logp, x.mask, w, x.num_items_in_batch), w[x.mask]
    return loss


register(Mode(
    "none", summary="plain SFT", card="plain SFT (no reweighting)",
    needs_blind=False, needs_text_only=False, loss=_sft_loss, token_level=False))
register(Mode(
    "paper", summary="token weights = blind log-prob / current text-only log-prob",
    card="3DR-FT, paper variant (token weight = blind log-prob / own text-only log-prob)",
    needs_blind=True, needs_text_only=True, loss=_paper_loss, uses_clip=True))
register(Mode(
    "official", summary="per-sample full loss / own text-only loss",
    card="3DR-FT, official-code variant (per-sample full loss / own text-only loss)",
    needs_blind=False, needs_text_only=True, loss=_official_loss, token_level=False))
register(Mode(
    "cal", summary="weights of mean 1 per batch: the policy's gain from its 3D input, "
                   "clamped to [cal_min, cal_max]",
    card="CAL-style reweighting (token weight = own gain from the 3D input, clamped, mean 1 "
         "per batch)",
    needs_blind=False, needs_text_only=True, loss=_family_loss("cal"), weights=cal_weights,
    demo_arm="cal_ft",
    demo_role="CAL-style: the control fine-tuned with weights = its own gain from the 3D "
              "input, clamped to [1, 5]"))
register(Mode(
    "prior", summary="weights of mean 1 per batch: the blind reference's surprise, capped at "
                     "prior_cap",
    card="PRIOR-style reweighting (token weight = the blind model's surprise, mean 1 per "
         "batch, capped)",
    needs_blind=True, needs_text_only=False, loss=_family_loss("prior"), weights=prior_weights,
    demo_arm="prior_ft",
    demo_role="PRIOR-style: the control fine-tuned with weights = the blind reference's "
              "surprise, capped"))
register(Mode(
    "excess", summary="Rho-1: the excess_ratio share of tokens of highest loss over the blind "
                      "reference's",
    card="Rho-1-style selection (the tokens of highest excess loss over the blind model)",
    needs_blind=True, needs_text_only=False, loss=_family_loss("excess"),
    weights=excess_weights, demo_arm="excess_ft",
    demo_role="Rho-1-style: the control fine-tuned on the 60% of tokens of highest excess "
              "loss over the blind reference"))
register(Mode(
    "paper_normalised", summary="the paper weights rescaled to mean 1 per batch",
    card="3DR-FT paper weights rescaled to mean 1 per batch",
    needs_blind=True, needs_text_only=True, loss=_family_loss("paper_normalised"),
    weights=paper_normalised_weights, uses_clip=True, demo_arm="3drft_paper_normalised",
    demo_role="3DR-FT paper weights rescaled to mean 1 per batch"))

def check_groups(name: str, groups: Any, column: str) -> torch.Tensor:
    """The batch's viewpoint group ids, refused when the batch carries none."""
    if groups is None:
        raise InputError(f"reweighting={name!r} needs viewpoint groups in the batch: give the "
                         f"dataset a {column!r} column (one id per question, shared by its "
                         "viewpoints; rotation_augment writes it) and train with the trainer's "
                         "group-aware sampler, which keeps a question's viewpoints in one batch")
    return torch.as_tensor(groups)


def _viewpoint_dro_loss(x: LossInputs, args) -> tuple[torch.Tensor, torch.Tensor]:
    groups = check_groups("viewpoint_dro", x.groups, args.viewpoint_group_column)
    w = viewpoint_dro_weights(mean_nll(x.logp.detach().float(), x.mask), groups,
                              temperature=args.viewpoint_temperature)
    tok = w[:, None].to(x.logp.dtype) * x.mask
    return weighted_loss_from_logprobs(x.logp, x.mask, tok, x.num_items_in_batch), w


register(Mode(
    "viewpoint_dro", summary="per question, weights favouring its viewpoint of highest loss: "
                             "a softmax over its viewpoints' losses at viewpoint_temperature, "
                             "mean 1 per question",
    card="viewpoint-robust training (per question, the viewpoint of highest loss weighted "
         "up: softmax over its viewpoints' losses, mean 1 per question)",
    needs_blind=False, needs_text_only=False, loss=_viewpoint_dro_loss, needs_groups=True))

# derived views, kept for readers of the older names
REWEIGHTING = tuple(MODES)
FAMILY = tuple(m.name for m in MODES.values() if m.weights is not None)
NEEDS_BLIND = tuple(m.name for m in MODES.values() if m.needs_blind)
NEEDS_TEXT_ONLY = tuple(m.name for m in MODES.values() if m.needs_text_only)
