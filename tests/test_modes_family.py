"""The modality-reweighting family (cal, prior, excess, paper_normalised): each against a
hand computation, each giving SFT's loss when its weights are equal, each on every route
(SceneLM, a transformers VLM with its processor, a LEO-like module, trl's SFTTrainer)."""

import copy
import math

import pytest
import torch
from datasets import Dataset
from helpers.models import tiny_model
from helpers.tiny_vlm import build_tiny_llava
from helpers.trainer import module_route_trains, sft_args, text_setup, trainer_args, vlm_rows

from hf_real3d.modeling import SceneQACollator
from hf_real3d.training import (
    HFModelRoute,
    ReweightedTrainer,
    precompute_blind_logprobs,
)
from hf_real3d.training.blind import BlindColumnCollator
from hf_real3d.training.losses import mean_one, weighted_loss_from_logprobs
from hf_real3d.training.modes import family, family_weights
from hf_real3d.training.vlm import VLMCollator

# settings under which each weighting gives every token the same weight
EQUAL = {"cal": dict(cal_min=1.0, cal_max=1.0), "prior": dict(constant_blind=True),
         "excess": dict(excess_ratio=1.0), "paper_normalised": dict(blind_is_policy=True)}


# --- hand computations ----------------------------------------------------------------------

M = torch.tensor([[True, True, True, False], [True, True, False, False]])
FULL = torch.tensor([[-0.2, -1.0, -3.0, 0.0], [-0.5, -2.0, 0.0, 0.0]])
TEXT = torch.tensor([[-2.7, -1.5, -3.0, 0.0], [-4.5, -2.1, 0.0, 0.0]])
BLIND = torch.tensor([[-0.1, -4.0, -2.0, 0.0], [-6.0, -0.5, 0.0, 0.0]])


def _ce_mean(w):
    return float((w * -FULL * M).sum() / M.sum())


def test_cal_by_hand():
    gain = [2.5, 0.5, 0.0, 4.0, 0.1]  # full - text on the five answer tokens
    clamped = [min(max(g, 1.0), 5.0) for g in gain]  # [2.5, 1, 1, 4, 1]
    want = [c * 5 / sum(clamped) for c in clamped]
    w = family_weights("cal", FULL, M, text_logp=TEXT)
    assert w[M].tolist() == pytest.approx(want)
    # CAL's loss: sum w CE / sum w over the batch
    ce = [0.2, 1.0, 3.0, 0.5, 2.0]
    cal = sum(c * e for c, e in zip(clamped, ce)) / sum(clamped)
    assert float(weighted_loss_from_logprobs(FULL, M, w)) == pytest.approx(cal)


def test_prior_by_hand():
    surprise = [0.1, 4.0, 2.0, 6.0, 0.5]
    mean = sum(surprise) / 5
    want = [min(s / mean, 5.0) for s in surprise]
    w = family_weights("prior", FULL, M, blind_logp=BLIND)
    assert w[M].tolist() == pytest.approx(want)
    capped = family_weights("prior", FULL, M, blind_logp=BLIND, prior_cap=2.0)
    assert capped[M].max() == pytest.approx(2.0)
    # a token the blind model rules out counts as 20 nats, not an infinite weight
    ruled_out = BLIND.clone()
    ruled_out[0, 0] = -math.inf
    assert torch.isfinite(family_weights("prior", FULL, M, blind_logp=ruled_out)).all()


def test_excess_by_hand():
    # excess loss CE_policy - CE_blind = log p_blind - log p_policy
    excess = [0.1, -3.0, 1.0, -5.5, 1.5]
    k = round(0.6 * 5)  # 3 tokens: 1.5, 1.0, 0.1
    order = sorted(range(5), key=lambda i: -excess[i])[:k]
    want = [5 / k if i in order else 0.0 for i in range(5)]
    w = family_weights("excess", FULL, M, blind_logp=BLIND)
    assert w[M].tolist() == pytest.approx(want)
    ce = [0.2, 1.0, 3.0, 0.5, 2.0]
    rho1 = sum(ce[i] for i in order) / k  # the mean over the selected tokens
    assert float(weighted_loss_from_logprobs(FULL, M, w)) == pytest.approx(rho1)


def test_paper_normalised_by_hand():
    paper = [0.1 / 2.7, 4.0 / 1.5, 2.0 / 3.0, 6.0 / 4.5, 0.5 / 2.1]
    want = [p * 5 / sum(paper) for p in paper]
    w = family_weights("paper_normalised", FULL, M, text_logp=TEXT, blind_logp=BLIND)
    assert w[M].tolist() == pytest.approx(want)


@pytest.mark.parametrize("mode", family())
def test_equal_weights_give_the_sft_loss(mode):
    kw = dict(EQUAL[mode])
    text, blind = TEXT, BLIND
    if kw.pop("constant_blind", False):
        blind = torch.full_like(BLIND, -1.3)
    if kw.pop("blind_is_policy", False):
        blind = text
    w = family_weights(mode, FULL, M, text_logp=text, blind_logp=blind, **kw)
    assert w[M].tolist() == pytest.approx([1.0] * 5)
    assert float(weighted_loss_from_logprobs(FULL, M, w)) == pytest.approx(_ce_mean(1.0))
    assert float(weighted_loss_from_logprobs(FULL, M, w, 10)) == \
        pytest.approx(float((-FULL * M).sum() / 10))  # the global token count, as SFT


def test_weights_carry_no_gradient_and_have_mean_one():
    full = FULL.clone().requires_grad_()
    for mode in family():
        w = family_weights(mode, full, M, text_logp=TEXT, blind_logp=BLIND)
        assert not w.requires_grad
        if mode != "prior":  # the cap may lower prior's mean
            assert float(w[M].mean()) == pytest.approx(1.0)
    assert mean_one(torch.zeros(1, 2), torch.ones(1, 2, dtype=torch.bool)).tolist() == \
        [[1.0, 1.0]]


def test_bad_settings_are_refused(tmp_path):
    with pytest.raises(ValueError, match="excess_ratio"):
        trainer_args(tmp_path, reweighting="excess", excess_ratio=0.0)
    with pytest.raises(ValueError, match="cal_min <= cal_max"):
        trainer_args(tmp_path, reweighting="cal", cal_min=3.0, cal_max=1.0)
    with pytest.raises(ValueError, match="prior_cap"):
        trainer_args(tmp_path, reweighting="prior", prior_cap=0.5)
    with pytest.raises(ValueError, match="needs the blind"):
        family_weights("prior", FULL, M)
    # each mode takes its own settings only: another is named, not swallowed
    with pytest.raises(ValueError, match=r"'cal' takes the settings \['cal_max', 'cal_min', "
                                         r"'nan_policy'\] but got 'prior_cap'"):
        family_weights("cal", FULL, M, text_logp=TEXT, prior_cap=2.0)


# --- every route ----------------------------------------------------------------------------


def _first_loss(trainer, batch):
    trainer.model.train()
    return float(trainer.compute_loss(trainer.model, batch, num_items_in_batch=None).detach())


@pytest.mark.slow
@pytest.mark.parametrize("mode", family())
def test_scenelm_route(mode, tiny_training, tmp_path):
    """SceneLM: each weighting trains (parameters change, weights logged) and, with equal
    weights, its first loss equals SFT's."""
    tok, bank = tiny_training["tokenizer"], tiny_training["bank"]
    ds = Dataset.from_list(tiny_training["rows"])
    col = SceneQACollator(tok, bank, max_length=48)
    kw = dict(EQUAL[mode])
    constant = kw.pop("constant_blind", False)
    same = kw.pop("blind_is_policy", False)
    model = tiny_model(tok)
    blind = copy.deepcopy(model) if same else tiny_model(tok, blind=True, seed=1)
    ds = precompute_blind_logprobs(ds, blind, col, text_only_mode="drop")
    if constant:
        ds = ds.map(lambda r: {"blind_logprobs": [-1.3] * len(r["blind_logprobs"])})
    col.blind_col = "blind_logprobs"
    batch = col(list(ds.select(range(8))))
    sft = ReweightedTrainer(model=model, args=trainer_args(tmp_path, reweighting="none"),
                            train_dataset=ds, data_collator=col, processing_class=tok)
    want = _first_loss(sft, {k: v for k, v in batch.items() if not k.startswith("blind_")})
    equal = ReweightedTrainer(model=model, args=trainer_args(tmp_path, reweighting=mode, **kw),
                              train_dataset=ds, data_collator=col, processing_class=tok)
    assert _first_loss(equal, batch) == pytest.approx(want, rel=1e-5)
    before = {k: v.clone() for k, v in model.state_dict().items()}
    tr = ReweightedTrainer(model=model, args=trainer_args(tmp_path, reweighting=mode),
                           train_dataset=ds, data_collator=col, processing_class=tok)
    tr.train()
    assert any(not torch.equal(before[k], model.state_dict()[k]) for k in before)
    logs = [h for h in tr.state.log_history if "loss" in h]
    assert logs and all("weight_mean" in h for h in logs)


@pytest.mark.slow
@pytest.mark.parametrize("mode", family())
def test_vlm_route(mode, tmp_path):
    """A LLaVA with its processor (images zeroed for the text-only pass, the blind column
    precomputed from a frozen copy): equal weights give SFT's loss, and it trains."""
    model, proc = build_tiny_llava()
    rows = vlm_rows(4)
    coll = VLMCollator(proc)
    ds = precompute_blind_logprobs(Dataset.from_list(rows), copy.deepcopy(model), coll,
                                   route=HFModelRoute("zeroed"), batch_size=2)
    kw = dict(EQUAL[mode])
    if kw.pop("constant_blind", False):
        ds = ds.map(lambda r: {"blind_logprobs": [-1.3] * len(r["blind_logprobs"])})
    kw.pop("blind_is_policy", False)  # the column came from a copy of the policy
    b = BlindColumnCollator(coll)(list(ds))
    sft = ReweightedTrainer(model=model, args=trainer_args(tmp_path, reweighting="none",
                                                    text_only_mode="zeroed"),
                            train_dataset=ds, data_collator=BlindColumnCollator(coll),
                            processing_class=proc)
    want = _first_loss(sft, coll(rows))
    tr = ReweightedTrainer(model=model, args=trainer_args(tmp_path, reweighting=mode,
                                                   text_only_mode="zeroed", **kw),
                           train_dataset=ds, data_collator=BlindColumnCollator(coll),
                           processing_class=proc)
    assert _first_loss(tr, b) == pytest.approx(want, rel=1e-5)
    tr.train()
    assert all(math.isfinite(h["loss"]) for h in tr.state.log_history if "loss" in h)


@pytest.mark.slow
@pytest.mark.parametrize("mode", family())
def test_module_route(mode, tmp_path):
    """A LEO-like module through a token-level ModuleRoute with a frozen blind copy: the
    projector and the LM train."""
    module_route_trains(mode, tmp_path)


@pytest.mark.slow
@pytest.mark.parametrize("mode", family())
def test_trl_route(mode, tmp_path):
    """trl's SFTTrainer (prompt / completion text, the fused-head route): with equal weights
    one SGD step ends where `paper` with equal weights (a blind copy of the policy) ends, to
    1e-7, and its loss is SFTTrainer's to 1e-4. (On this text data the fused-head route's loss
    and SFTTrainer's own differ by 2e-5 relative, for `paper` as for every weighting.)"""
    from trl import SFTConfig, SFTTrainer

    from hf_real3d.training.sft import ReweightedSFTConfig, ReweightedSFTTrainer

    tok, policy, _, ds = text_setup()
    start = copy.deepcopy(policy.state_dict())
    sft = SFTTrainer(model=policy, args=SFTConfig(**sft_args(tmp_path)), train_dataset=ds,
                     processing_class=tok)
    sft.train()
    ends, losses = {}, {}
    for name in ("paper", mode):
        policy.load_state_dict(start)
        blind = copy.deepcopy(policy)
        kw = {"weight_clip": None} if name == "paper" else dict(EQUAL[mode])
        if kw.pop("constant_blind", False):  # every token the same blind log-prob
            with torch.no_grad():
                blind.lm_head.weight.zero_()
        kw.pop("blind_is_policy", False)
        args = ReweightedSFTConfig(**sft_args(tmp_path), reweighting=name, **kw)
        tr = ReweightedSFTTrainer(model=policy, args=args, train_dataset=ds,
                                  processing_class=tok, ref_model=blind)
        tr.train()
        ends[name] = {k: v.clone() for k, v in policy.state_dict().items()}
        losses[name] = tr.state.log_history[0]["loss"]
    assert losses[mode] == pytest.approx(losses["paper"], rel=1e-7)
    assert losses[mode] == pytest.approx(sft.state.log_history[0]["loss"], rel=1e-4)
    for k in ends[mode]:
        assert torch.allclose(ends[mode][k], ends["paper"][k], atol=1e-7), k
