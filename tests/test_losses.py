import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from hf_real3d.training.losses import (
    NonFiniteLossError,
    official_loss,
    paper_loss,
    paper_weights,
    per_sample_nll,
    token_logprobs,
)


def _logits(probs):
    """(B, T, V) logits whose softmax is ``probs`` at each position."""
    return torch.log(torch.tensor(probs, dtype=torch.float32))


def test_token_logprobs_closed_form():
    # position 0 predicts label 1 (token 1, p=0.75); position 1 predicts label 2 (ignored)
    logits = _logits([[[0.25, 0.75], [0.5, 0.5], [0.9, 0.1]]])
    labels = torch.tensor([[-100, 1, -100]])
    lp, mask = token_logprobs(logits, labels)
    assert mask.tolist() == [[True, False]]
    assert lp[0, 0].item() == pytest.approx(math.log(0.75))
    assert lp[0, 1].item() == 0.0


def test_paper_loss_closed_form():
    logits = _logits([[[0.5, 0.5], [0.2, 0.8], [0.5, 0.5]]]).requires_grad_()
    labels = torch.tensor([[-100, 0, 1]])
    blind = torch.log(torch.tensor([[0.5, 0.9]]))
    text = torch.log(torch.tensor([[0.25, 0.3]]))
    loss, w = paper_loss(logits, labels, blind, text)
    w_expect = [math.log(0.5) / math.log(0.25), math.log(0.9) / math.log(0.3)]
    assert w[0].tolist() == pytest.approx(w_expect)
    ce = [-math.log(0.5), -math.log(0.8)]
    assert loss.item() == pytest.approx((w_expect[0] * ce[0] + w_expect[1] * ce[1]) / 2)
    assert not w.requires_grad
    loss.backward()
    assert logits.grad is not None
    # num_items_in_batch from the whole accumulated batch replaces the local count
    loss4, _ = paper_loss(logits, labels, blind, text, num_items_in_batch=4)
    assert loss4.item() == pytest.approx(loss.item() / 2)


def test_paper_weights_edges():
    mask = torch.tensor([[True, True, True]])
    blind = torch.tensor([[0.0, -2.0, -2.0]])  # blind certain -> weight 0
    text = torch.tensor([[-1.0, 0.0, -1e-9]])  # text-only certain -> denominator floored
    w = paper_weights(blind, text, mask, eps=1e-4, clip=10.0)
    assert w.tolist() == [[0.0, 10.0, 10.0]]
    assert paper_weights(blind, text, mask, eps=1e-4, clip=None)[0, 1].item() == \
        pytest.approx(2.0 / 1e-4)


def test_official_loss_closed_form():
    # position 0 predicts the single answer token (label at position 1)
    full = _logits([[[0.2, 0.8], [0.5, 0.5]], [[0.6, 0.4], [0.5, 0.5]]]).requires_grad_()
    text = _logits([[[0.5, 0.5], [0.5, 0.5]], [[0.9, 0.1], [0.5, 0.5]]])
    labels = torch.tensor([[-100, 1], [-100, 0]])
    loss, factor = official_loss(full, text, labels)
    expect = (-math.log(0.8) / -math.log(0.5) + -math.log(0.6) / -math.log(0.9)) / 2
    assert loss.item() == pytest.approx(expect, rel=1e-5)
    assert per_sample_nll(full, labels).tolist() == pytest.approx([-math.log(0.8),
                                                                   -math.log(0.6)])
    loss.backward()
    assert not factor.requires_grad


logp = st.one_of(st.just(0.0), st.just(-1e-30), st.floats(-1e4, 0.0, allow_nan=False))


@settings(max_examples=80, deadline=None)
@given(st.lists(st.tuples(logp, logp), min_size=1, max_size=6),
       st.sampled_from([None, 1.0, 10.0]))
def test_losses_finite_for_any_logprobs(pairs, clip):
    n = len(pairs)
    blind = torch.tensor([[b for b, _ in pairs]])
    text = torch.tensor([[t for _, t in pairs]])
    logits = torch.randn(1, n + 1, 5) * 30
    labels = torch.cat([torch.tensor([[-100]]), torch.randint(0, 5, (1, n))], 1)
    loss, w = paper_loss(logits, labels, blind, text, eps=1e-4, clip=clip)
    assert torch.isfinite(loss) and torch.isfinite(w).all() and (w >= 0).all()
    extreme = torch.full((1, n + 1, 5), -1e4)
    extreme[..., 0] = 1e4  # p -> 1 for token 0, p -> 0 for the others
    loss2, f = official_loss(extreme, extreme, labels)
    assert torch.isfinite(loss2) and torch.isfinite(f).all()


def test_fixed_weight_mask_keeps_weight_one():
    logits = _logits([[[0.5, 0.5], [0.2, 0.8], [0.5, 0.5]]])
    labels = torch.tensor([[-100, 0, 1]])
    blind = torch.tensor([[0.0, 0.0]])  # blind certain: weight 0 everywhere
    text = torch.tensor([[-1.0, -1.0]])
    loss, w = paper_loss(logits, labels, blind, text)
    assert w.tolist() == [[0.0, 0.0]] and loss.item() == 0.0
    loss, w = paper_loss(logits, labels, blind, text,
                         fixed_weight_mask=torch.tensor([[False, True]]))
    assert w.tolist() == [[0.0, 1.0]]
    assert loss.item() == pytest.approx(-math.log(0.8) / 2)


def test_minus_inf_blind_logprob_gets_the_largest_weight():
    mask = torch.tensor([[True, True, True]])
    blind = torch.tensor([[-float("inf"), -2.0, 0.0]])
    text = torch.tensor([[-1.0, -1.0, -1.0]])
    w = paper_weights(blind, text, mask, clip=10.0)
    assert w.tolist() == [[10.0, 2.0, 0.0]]
    assert w[0, 0] == w.max()  # the most 3D-dependent token, never weight 0
    with pytest.raises(NonFiniteLossError, match="weight_clip"):
        paper_weights(blind, text, mask, clip=None)


def test_nan_inputs_raise_by_default_and_zero_on_request():
    mask = torch.tensor([[True, True]])
    blind = torch.tensor([[float("nan"), -1.0]])
    text = torch.tensor([[-1.0, -1.0]])
    with pytest.raises(NonFiniteLossError, match=r"blind log-prob is nan at batch row 0"):
        paper_weights(blind, text, mask, clip=10.0)
    assert paper_weights(blind, text, mask, clip=10.0, nan_policy="zero").tolist() == \
        [[0.0, 1.0]]
    # a NaN where the mask hides it is not an error
    assert paper_weights(blind, text, torch.tensor([[False, True]]), clip=10.0).tolist() == \
        [[0.0, 1.0]]
    labels = torch.tensor([[-100, 1], [-100, 0]])
    full = _logits([[[0.2, 0.8], [0.5, 0.5]], [[0.6, 0.4], [0.5, 0.5]]])
    nan_text = full.clone()
    nan_text[1] = float("nan")
    with pytest.raises(NonFiniteLossError, match="text-only answer loss is NaN at batch row 1"):
        official_loss(full, nan_text, labels)
    loss, factor = official_loss(full, nan_text, labels, nan_policy="zero")
    assert torch.isfinite(loss) and factor[1].item() == 0.0
    with pytest.raises(ValueError, match="nan_policy"):
        official_loss(full, full, labels, nan_policy="ignore")


special = st.sampled_from([float("nan"), float("inf"), -float("inf"), 0.0, -1.0, -1e-30])


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(special, special), min_size=1, max_size=5), st.booleans())
def test_non_finite_inputs_never_give_a_silent_nan(pairs, raise_policy):
    blind = torch.tensor([[b for b, _ in pairs]])
    text = torch.tensor([[t for _, t in pairs]])
    mask = torch.ones_like(blind, dtype=torch.bool)
    policy = "raise" if raise_policy else "zero"
    try:
        w = paper_weights(blind, text, mask, clip=10.0, nan_policy=policy)
    except NonFiniteLossError:
        assert policy == "raise" and torch.isnan(torch.cat([blind, text])).any()
        return
    assert torch.isfinite(w).all() and (w >= 0).all() and (w <= 10.0).all()
    # -inf blind log-prob (with a finite text-only one) always gets the clip
    for (b, t), wi in zip(pairs, w[0].tolist()):
        if b == -float("inf") and t == t and t != -float("inf"):
            assert wi == 10.0
