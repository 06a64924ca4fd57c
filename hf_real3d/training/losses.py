"""Pure loss functions of 3D-reweighted fine-tuning (3DR-FT). No state, no I/O.

Alignment: ``logits`` (B, T, V) and ``labels`` (B, T) follow the causal-LM convention;
position ``t`` of the logits predicts ``labels[:, t + 1]``. Per-token arrays below are
(B, T - 1), aligned with ``labels[:, 1:]``.

* ``paper`` (eq. 1-2 of the paper): ``w_j = log p_phi(y_j | y<j, x_text) /
  log p_theta(y_j | y<j, x_text)`` with ``p_phi`` the blind fine-tuned model and ``p_theta``
  the current model without its 3D input; loss ``sum_j w_j * -log p_theta(y_j | ..., x_3D)``.
  A token the blind model already predicts well (``log p_phi ~ 0``) gets weight ~0; one the
  current model guesses from text alone (``log p_theta ~ 0``) but the blind model does not
  gets a large weight. The denominator is kept at most ``-eps`` and weights may be clipped;
  weights carry no gradient.
* ``official`` (Real-3DQA code): per sample, ``loss_full / max(loss_text_only, eps)`` with
  the text-only loss computed without gradient.

Four more token weightings push the other way (:func:`cal_weights`, :func:`prior_weights`,
:func:`excess_weights`, :func:`paper_normalised_weights`; the registry of modes,
:mod:`hf_real3d.training.modes`, names them); each weight is
detached and rescaled to mean 1 over the micro-batch's answer tokens, so that equal weights
give SFT's loss exactly and only the redistribution differs from SFT:

* ``cal`` (CAL): the policy's own gain from its 3D input, ``log p_theta(y_j | x_3D) -
  log p_theta(y_j | x_text)``, clamped to ``[cal_min, cal_max]`` (CAL's 1 and 5); so the
  loss is ``sum_j w_j CE_j / sum_j w_j`` on one micro-batch.
* ``prior`` (PRIOR): the blind reference's surprise ``-log p_blind(y_j)`` (at most 20
  nats), rescaled to mean 1 and then capped at ``prior_cap`` (5): a token the blind model
  rules out cannot take the whole batch's loss; where the cap binds the mean falls below 1.
* ``excess`` (Rho-1): the ``excess_ratio`` share of tokens with the largest excess loss
  ``CE_theta - CE_blind`` (ties: the earlier token) get weight 1, the others 0: the loss is
  the mean over the selected tokens.
* ``paper_normalised``: the ``paper`` weights rescaled to mean 1, which keeps their
  redistribution and drops their change of step size.

Non-finite inputs (``nan_policy``): a blind log-prob of ``-inf`` (the blind model rules the
token out: the most 3D-dependent token there is) gets the largest weight, ``clip``; a
text-only log-prob of ``-inf`` gives weight 0 (the limit of the ratio); a NaN
anywhere, or ``-inf`` with no clip, raises :class:`NonFiniteLossError` by default
(``nan_policy="raise"``); ``nan_policy="zero"`` gives such tokens or samples weight 0.
"""

from __future__ import annotations

import torch

from hf_real3d.errors import InputError

__all__ = ["token_logprobs", "paper_weights", "paper_loss", "official_loss", "per_sample_nll",
           "paper_loss_from_logprobs", "official_loss_from_logprobs", "NonFiniteLossError",
           "NAN_POLICIES", "mean_one", "weighted_loss_from_logprobs", "cal_weights",
           "prior_weights", "excess_weights", "paper_normalised_weights", "PRIOR_MAX_SURPRISE",
           "viewpoint_dro_weights", "mean_nll"]

PRIOR_MAX_SURPRISE = 20.0  # nats: a blind log-prob below -20 (or -inf) counts as -20

NAN_POLICIES = ("raise", "zero")


class NonFiniteLossError(ValueError):
    """A 3DR-FT loss input is NaN or infinite where no finite weight follows from it."""


def _check_policy(nan_policy: str) -> None:
    if nan_policy not in NAN_POLICIES:
        raise InputError(f"Expected nan_policy in {NAN_POLICIES} but got {nan_policy!r}")


def _bad(what: str, values: torch.Tensor, mask: torch.Tensor) -> NonFiniteLossError:
    idx = (~torch.isfinite(values) & mask).nonzero()[0].tolist()
    return NonFiniteLossError(
        f"{what} is {values[tuple(idx)].item()} at batch row {idx[0]}, answer token {idx[1:]}; "
        "check the model's logits and the blind log-prob column, or pass nan_policy='zero' "
        "to give such tokens weight 0")


def token_logprobs(logits: torch.Tensor, labels: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Log-probability of each label token (0 where ignored) and the mask, (B, T - 1)."""
    shift_labels = labels[:, 1:]
    mask = shift_labels.ne(-100)
    logp = torch.log_softmax(logits[:, :-1].float(), dim=-1)
    safe = shift_labels.masked_fill(~mask, 0)
    out = logp.gather(-1, safe.unsqueeze(-1)).squeeze(-1)
    return out.masked_fill(~mask, 0.0), mask


def paper_weights(blind_logp: torch.Tensor, text_logp: torch.Tensor, mask: torch.Tensor, *,
                  eps: float = 1e-4, clip: float | None = None,
                  nan_policy: str = "raise") -> torch.Tensor:
    """``w = log p_blind / log p_text_only`` per token, detached, 0 where masked.

    ``-inf`` blind log-probs get the largest weight (``clip``); see the module docstring
    for NaN and for ``-inf`` without a clip.
    """
    _check_policy(nan_policy)
    num = blind_logp.detach().float().clamp(max=0.0)
    den = text_logp.detach().float().clamp(max=-eps)
    if nan_policy == "raise":
        for what, v in (("blind log-prob", num), ("text-only log-prob", den)):
            if (torch.isnan(v) & mask).any():
                raise _bad(what, v, mask)
        if clip is None and (torch.isneginf(num) & mask).any():
            raise NonFiniteLossError(
                "a blind log-prob is -inf (the blind model rules the token out), so its "
                "weight is unbounded; set a weight clip (weight_clip) to give it the largest "
                "weight")
    w = num / den
    # a text-only log-prob of -inf: any finite blind log-prob over it is 0 (also -inf over it)
    w = torch.where(torch.isneginf(den), torch.zeros_like(w), w)
    if clip is not None:
        w = w.clamp(max=clip)
        w = torch.where(torch.isneginf(num) & ~torch.isneginf(den), torch.full_like(w, clip), w)
    if nan_policy == "raise" and (~torch.isfinite(w) & mask).any():
        raise _bad("token weight (blind / text-only log-prob)", w, mask)
    return torch.nan_to_num(w, nan=0.0, posinf=clip or 0.0, neginf=0.0).masked_fill(~mask, 0.0)


def paper_loss(logits: torch.Tensor, labels: torch.Tensor, blind_logp: torch.Tensor,
               text_logp: torch.Tensor, num_items_in_batch: torch.Tensor | int | None = None,
               *, eps: float = 1e-4, clip: float | None = None,
               fixed_weight_mask: torch.Tensor | None = None, nan_policy: str = "raise"
               ) -> tuple[torch.Tensor, torch.Tensor]:
    """(loss, weights): ``sum_j w_j * CE_j / num_items`` over answer tokens.

    ``fixed_weight_mask`` (B, T - 1): tokens that keep weight 1 (e.g. end-of-answer).
    """
    logp, mask = token_logprobs(logits, labels)
    return paper_loss_from_logprobs(logp, mask, blind_logp, text_logp, num_items_in_batch,
                                    eps=eps, clip=clip, fixed_weight_mask=fixed_weight_mask,
                                    nan_policy=nan_policy)


def paper_loss_from_logprobs(logp: torch.Tensor, mask: torch.Tensor, blind_logp: torch.Tensor,
                             text_logp: torch.Tensor,
                             num_items_in_batch: torch.Tensor | int | None = None, *,
                             eps: float = 1e-4, clip: float | None = None,
                             fixed_weight_mask: torch.Tensor | None = None,
                             nan_policy: str = "raise", weight_grad: bool = False
                             ) -> tuple[torch.Tensor, torch.Tensor]:
    """:func:`paper_loss` from the full model's per-token log-probs ``logp`` (with gradient)
    and their ``mask``, all (B, L) on the same token positions: the core every route shares
    (logits, trl's fused head, a module adapter).

    ``weight_grad=True`` lets the gradient flow through the weights' denominator
    (``text_logp`` must then carry it): the reading under which Appendix E's blind term
    ``w_j * log s_j = log p_blind`` is constant in the parameters.
    """
    if nan_policy == "raise" and (torch.isnan(logp) & mask).any():
        raise _bad("the full model's log-prob (NaN logits?)", logp, mask)
    if weight_grad:
        w = _paper_weights_with_grad(blind_logp, text_logp, mask, eps=eps, clip=clip)
    else:
        w = paper_weights(blind_logp, text_logp, mask, eps=eps, clip=clip,
                          nan_policy=nan_policy)
    if fixed_weight_mask is not None:
        w = torch.where(fixed_weight_mask & mask, torch.ones_like(w), w)
    return weighted_loss_from_logprobs(logp, mask, w, num_items_in_batch), w


def _paper_weights_with_grad(blind_logp: torch.Tensor, text_logp: torch.Tensor,
                             mask: torch.Tensor, *, eps: float, clip: float | None
                             ) -> torch.Tensor:
    """Paper weights whose denominator keeps its gradient (non-finite values give 0)."""
    num = blind_logp.detach().float().clamp(max=0.0)
    den = text_logp.float().clamp(max=-eps)
    w = num / den
    if clip is not None:
        w = w.clamp(max=clip)
    ok = torch.isfinite(w) & mask
    return torch.where(ok, w, torch.zeros_like(w))


def per_sample_nll(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """Mean negative log-likelihood over each sample's answer tokens, (B,)."""
    return mean_nll(*token_logprobs(logits, labels))


def mean_nll(logp: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Mean negative log-prob over each row's ``mask`` tokens, (B,) (0 for a row without
    any); keeps ``logp``'s gradient."""
    return -(logp.masked_fill(~mask, 0.0).sum(1)) / mask.sum(1).clamp_min(1)


def official_loss(logits: torch.Tensor, text_logits: torch.Tensor, labels: torch.Tensor,
                  num_sequences: torch.Tensor | int | None = None, *, eps: float = 1e-4,
                  nan_policy: str = "raise") -> tuple[torch.Tensor, torch.Tensor]:
    """(loss, per-sample factors ``1 / max(text-only loss, eps)``); loss summed over samples
    and divided by ``num_sequences`` (the accumulated global batch) or the local batch size.

    A NaN full or text-only loss raises :class:`NonFiniteLossError` (``nan_policy="zero"``:
    that sample gets factor 0); an infinite text-only loss gives factor 0."""
    logp, mask = token_logprobs(logits, labels)
    with torch.no_grad():
        text_logp, _ = token_logprobs(text_logits, labels)
    return official_loss_from_logprobs(logp, mask, text_logp, num_sequences, eps=eps,
                                       nan_policy=nan_policy)


def official_loss_from_logprobs(logp: torch.Tensor, mask: torch.Tensor, text_logp: torch.Tensor,
                                num_sequences: torch.Tensor | int | None = None, *,
                                eps: float = 1e-4, nan_policy: str = "raise"
                                ) -> tuple[torch.Tensor, torch.Tensor]:
    """:func:`official_loss` from per-token log-probs (B, L) of the full pass (with gradient)
    and of the text-only pass, on the same positions ``mask``. A route that only has a
    per-sample loss gives it as one "token" per sample: ``logp = -loss[:, None]``."""
    _check_policy(nan_policy)
    full = mean_nll(logp, mask)
    has = mask.any(1)
    with torch.no_grad():
        text = mean_nll(text_logp.detach().float(), mask)
        if nan_policy == "raise":
            for what, v in (("the full model's answer loss", full.detach()),
                            ("the text-only answer loss", text)):
                if (torch.isnan(v) & has).any():
                    row = int((torch.isnan(v) & has).nonzero()[0])
                    raise NonFiniteLossError(
                        f"{what} is NaN at batch row {row}; check the model's logits, or pass "
                        "nan_policy='zero' to give such samples weight 0")
        bad = torch.isnan(full.detach()) | torch.isnan(text)
        factor = torch.where(bad, torch.zeros_like(text), 1.0 / text.clamp_min(eps))
    full = torch.where(bad, torch.zeros_like(full), full)
    denom = num_sequences if num_sequences is not None else has.sum().clamp_min(1)
    return (full * factor * has).sum() / denom, factor


def mean_one(w: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """``w`` rescaled so that its mean over ``mask`` is 1 (all ones where it sums to 0).

    >>> mean_one(torch.tensor([[1.0, 3.0, 9.0]]), torch.tensor([[True, True, False]]))
    tensor([[0.5000, 1.5000, 0.0000]])
    """
    w = w.masked_fill(~mask, 0.0)
    total = w.sum()
    n = mask.sum()
    if total <= 0:
        return mask.float()
    return w * (n / total)


def _check_finite_inputs(nan_policy: str, mask: torch.Tensor, **inputs) -> None:
    _check_policy(nan_policy)
    if nan_policy == "raise":
        for what, v in inputs.items():
            if v is not None and (torch.isnan(v) & mask).any():
                raise _bad(what, v, mask)


def cal_weights(logp: torch.Tensor, mask: torch.Tensor, *, text_logp: torch.Tensor,
                cal_min: float = 1.0, cal_max: float = 5.0, nan_policy: str = "raise"
                ) -> torch.Tensor:
    """``cal``: the policy's gain from its 3D input, ``logp - text_logp``, clamped to
    ``[cal_min, cal_max]`` and rescaled to mean 1 over ``mask`` (detached).

    >>> m = torch.ones(1, 4, dtype=torch.bool)
    >>> full = torch.tensor([[-0.1, -0.1, -2.0, -0.5]])
    >>> cal_weights(full, m, text_logp=torch.tensor([[-3.0, -0.2, -2.0, -6.5]]))
    tensor([[1.1717, 0.4040, 0.4040, 2.0202]])
    """
    full = logp.detach().float()
    _check_finite_inputs(nan_policy, mask, **{"the full model's log-prob": full,
                                              "text-only log-prob": text_logp})
    gain = full - text_logp.detach().float()
    gain = torch.nan_to_num(gain, nan=cal_min, posinf=cal_max, neginf=cal_min)
    return mean_one(gain.clamp(cal_min, cal_max), mask)


def prior_weights(logp: torch.Tensor, mask: torch.Tensor, *, blind_logp: torch.Tensor,
                  eps: float = 1e-4, prior_cap: float = 5.0, nan_policy: str = "raise"
                  ) -> torch.Tensor:
    """``prior``: the blind reference's surprise ``-blind_logp`` (at most
    :data:`PRIOR_MAX_SURPRISE` nats; ``-inf`` counts as that), rescaled to mean 1 over
    ``mask`` and then capped at ``prior_cap`` (detached).

    >>> m = torch.ones(1, 3, dtype=torch.bool)
    >>> prior_weights(torch.zeros(1, 3), m, blind_logp=torch.tensor([[-1.0, -2.0, -3.0]]))
    tensor([[0.5000, 1.0000, 1.5000]])
    """
    _check_finite_inputs(nan_policy, mask, **{"the full model's log-prob": logp.detach(),
                                              "blind log-prob": blind_logp})
    blind = blind_logp.detach().float().clamp(max=0.0)
    surprise = torch.nan_to_num(-blind, nan=0.0, posinf=PRIOR_MAX_SURPRISE)
    surprise = surprise.clamp(eps, PRIOR_MAX_SURPRISE)
    return mean_one(surprise, mask).clamp(max=prior_cap).masked_fill(~mask, 0.0)


def excess_weights(logp: torch.Tensor, mask: torch.Tensor, *, blind_logp: torch.Tensor,
                   excess_ratio: float = 0.6, nan_policy: str = "raise"
                   ) -> torch.Tensor:
    """``excess`` (Rho-1): the ``excess_ratio`` share of ``mask``'s tokens with the largest
    excess loss ``CE_policy - CE_blind = blind_logp - logp`` get weight 1, the others 0
    (ties: the earlier token), rescaled to mean 1 (detached).

    >>> m = torch.ones(1, 4, dtype=torch.bool)
    >>> full = torch.tensor([[-0.1, -0.1, -2.0, -0.5]])
    >>> blind = torch.tensor([[-0.05, -2.0, -0.1, -0.5]])  # excess 0.05, -1.9, 1.9, 0
    >>> excess_weights(full, m, blind_logp=blind, excess_ratio=0.5)
    tensor([[2., 0., 2., 0.]])
    """
    full = logp.detach().float()
    _check_finite_inputs(nan_policy, mask, **{"the full model's log-prob": full,
                                              "blind log-prob": blind_logp})
    if not 0 < excess_ratio <= 1:
        raise InputError(f"Expected 0 < excess_ratio <= 1 but got {excess_ratio}")
    blind = blind_logp.detach().float().clamp(max=0.0)
    excess = torch.nan_to_num(blind - full, nan=-1e9, posinf=1e9, neginf=-1e9)
    flat_mask = mask.flatten()
    n = int(flat_mask.sum())
    k = max(1, int(round(excess_ratio * n))) if n else 0
    scores = excess.flatten().masked_fill(~flat_mask, float("-inf"))
    order = torch.sort(-scores, stable=True).indices  # ties: the earlier token
    pick = torch.zeros_like(flat_mask)
    pick[order[:k]] = True
    return mean_one(pick.view_as(mask).float(), mask)


def paper_normalised_weights(logp: torch.Tensor, mask: torch.Tensor, *,
                             blind_logp: torch.Tensor, text_logp: torch.Tensor,
                             eps: float = 1e-4, clip: float | None = None,
                             nan_policy: str = "raise") -> torch.Tensor:
    """``paper_normalised``: :func:`paper_weights` rescaled to mean 1 over ``mask``, which
    keeps their redistribution and drops their change of step size (detached).

    >>> m = torch.ones(1, 2, dtype=torch.bool)
    >>> paper_normalised_weights(torch.zeros(1, 2), m, blind_logp=torch.tensor([[-1.0, -3.0]]),
    ...                          text_logp=torch.tensor([[-2.0, -2.0]]))
    tensor([[0.5000, 1.5000]])
    """
    _check_finite_inputs(nan_policy, mask, **{"the full model's log-prob": logp.detach(),
                                              "text-only log-prob": text_logp,
                                              "blind log-prob": blind_logp})
    w = paper_weights(blind_logp, text_logp, mask, eps=eps, clip=clip, nan_policy=nan_policy)
    return mean_one(w, mask)


def weighted_loss_from_logprobs(logp: torch.Tensor, mask: torch.Tensor, w: torch.Tensor,
                                num_items_in_batch: torch.Tensor | int | None = None
                                ) -> torch.Tensor:
    """``sum_j w_j * -log p_j / num_items`` over answer tokens (the local count without
    ``num_items_in_batch``), the sum every token weighting shares: SFT's loss when every
    weight is 1. ``w`` keeps whatever gradient it carries (``paper`` with ``weight_grad``)."""
    denom = num_items_in_batch if num_items_in_batch is not None else mask.sum().clamp_min(1)
    return (w * -logp.masked_fill(~mask, 0.0)).sum() / denom


def viewpoint_dro_weights(sample_loss: torch.Tensor, groups: torch.Tensor, *,
                          temperature: float = 1.0) -> torch.Tensor:
    """Per-sample weights favouring, within each group (a question's viewpoints), the
    viewpoint of highest loss: ``n_g * softmax(loss / temperature)`` over the group's
    members, detached, so each group's weights have mean 1 (and so the batch's). Equal
    losses, a group of one, or ``temperature -> inf`` give weight 1: SFT's loss.

    >>> loss = torch.tensor([1.0, 1.0, 2.0, 0.5])
    >>> viewpoint_dro_weights(loss, torch.tensor([0, 0, 1, 1]), temperature=1.0)
    tensor([1.0000, 1.0000, 1.6351, 0.3649])
    """
    if not temperature > 0:
        raise InputError(f"Expected viewpoint temperature > 0 but got {temperature}")
    loss = sample_loss.detach().float()
    if loss.shape != groups.shape or loss.dim() != 1:
        raise InputError(f"Expected one loss and one group id per sample but got shapes "
                         f"{tuple(loss.shape)} and {tuple(groups.shape)}")
    _, codes = torch.unique(groups, return_inverse=True)
    n = int(codes.max()) + 1 if len(codes) else 0
    z = loss / temperature
    codes = codes.to(z.device)
    top = z.new_full((n,), float("-inf")).scatter_reduce(0, codes, z, "amax")
    e = torch.exp(z - top[codes])
    total = z.new_zeros(n).index_add_(0, codes, e)
    size = z.new_zeros(n).index_add_(0, codes, torch.ones_like(z))
    return (e / total[codes] * size[codes]).detach()
