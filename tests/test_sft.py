"""3DR-FT on trl's SFTTrainer: conversational VLM data with images and prompt / completion
text data, completion-only loss, trl's own metrics, and reweighting='none' = SFTTrainer."""

import copy

import numpy as np
import pytest
import torch
from datasets import Dataset
from helpers.tiny_vlm import build_tiny_llava
from helpers.trainer import WORDS, sft_args, text_setup
from PIL import Image
from trl import SFTConfig, SFTTrainer

from hf_real3d.training.sft import ReweightedSFTConfig, ReweightedSFTTrainer

CHAT = ("{% for m in messages %}{% for c in m['content'] %}{% if c['type'] == 'image' %}<image> "
        "{% else %}{{ c['text'] }} {% endif %}{% endfor %}{% if m['role'] == 'assistant' %}</s> "
        "{% endif %}{% endfor %}{% if add_generation_prompt %}answer {% endif %}")


def _vlm_rows(n=4):
    rng = np.random.default_rng(0)
    return [{"prompt": [{"role": "user", "content": [
                {"type": "image"}, {"type": "text", "text": "which is left of the a"}]}],
             "completion": [{"role": "assistant",
                             "content": [{"type": "text", "text": WORDS[i % 6]}]}],
             "images": [Image.fromarray(rng.integers(0, 255, (32, 32, 3), dtype=np.uint8))]}
            for i in range(n)]


def _llava():
    model, proc = build_tiny_llava()
    proc.chat_template = CHAT
    return model, proc


@pytest.mark.slow
def test_none_and_equal_weights_reproduce_sfttrainer(tmp_path):
    """One SGD step of plain SFTTrainer, of reweighting='none', and of 'paper' with a blind
    reference equal to the policy (every weight 1: the fused-head route and the loss core
    give SFT's loss) end at the same weights, on a conversational VLM dataset with images."""
    finals, losses = {}, {}
    for name in ("sft", "none", "paper_equal"):
        model, proc = _llava()
        ds = Dataset.from_list(_vlm_rows())
        if name == "sft":
            tr = SFTTrainer(model=model, args=SFTConfig(**sft_args(tmp_path)), train_dataset=ds,
                            processing_class=proc)
        else:
            args = ReweightedSFTConfig(**sft_args(tmp_path), text_only_mode="zeroed",
                                       reweighting="none" if name == "none" else "paper")
            tr = ReweightedSFTTrainer(model=model, args=args, train_dataset=ds,
                                      processing_class=proc,
                                      ref_model=copy.deepcopy(model) if name != "none" else None)
        tr.train()
        finals[name] = {k: v.clone() for k, v in model.state_dict().items()}
        losses[name] = tr.state.log_history[0]["loss"]
    assert losses["none"] == pytest.approx(losses["sft"], rel=1e-6)
    assert losses["paper_equal"] == pytest.approx(losses["sft"], rel=1e-5)
    start = _llava()[0].state_dict()
    assert any(not torch.equal(finals["sft"][k], start[k]) for k in start)
    for other in ("none", "paper_equal"):
        for k in finals["sft"]:
            assert torch.allclose(finals["sft"][k], finals[other][k], atol=1e-6), (other, k)


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["paper", "official"])
def test_prompt_completion_reweighted_logs_trl_metrics(mode, tmp_path):
    tok, policy, blind, ds = text_setup()
    before = {k: v.clone() for k, v in policy.state_dict().items()}
    args = ReweightedSFTConfig(**{**sft_args(tmp_path), "max_steps": 2,
                                  "per_device_train_batch_size": 4}, reweighting=mode)
    tr = ReweightedSFTTrainer(model=policy, args=args, train_dataset=ds, processing_class=tok,
                              ref_model=blind if mode == "paper" else None)
    assert tr.args.completion_only_loss in (None, True)
    tr.train()
    logs = [h for h in tr.state.log_history if "loss" in h]
    assert len(logs) == 2
    for h in logs:
        assert "entropy" in h and 0 <= h["mean_token_accuracy"] <= 1
        assert abs(h["weight_mean"] - 1) > 1e-3
    assert any(not torch.equal(before[k], v) for k, v in policy.state_dict().items())


@pytest.mark.slow
def test_precomputed_column_equals_live_reference(tmp_path):
    tok, policy, blind, ds = text_setup()
    losses = []
    for pre in (False, True):
        model = copy.deepcopy(policy)
        args = ReweightedSFTConfig(**sft_args(tmp_path), reweighting="paper",
                                   precompute_blind=pre)
        tr = ReweightedSFTTrainer(model=model, args=args, train_dataset=ds,
                                  processing_class=tok, ref_model=copy.deepcopy(blind))
        assert (tr.ref_model is None) == pre
        tr.train()
        losses.append(tr.state.log_history[0]["loss"])
    # the column was computed in other batches (other padding) than training's shuffled ones:
    # equal up to float32 noise, which the blind / text-only ratio amplifies a little
    assert losses[0] == pytest.approx(losses[1], rel=1e-4)


def test_blind_batch_is_refused_for_trl_collators(tmp_path):
    with pytest.raises(ValueError, match="blind_batch"):
        ReweightedSFTConfig(**sft_args(tmp_path), text_only_mode="blind_batch")


QWEN_CHAT = ("{% for m in messages %}{% for c in m['content'] %}{% if c['type'] == 'image' %}"
             "<|vision_start|><|image_pad|><|vision_end|> {% else %}{{ c['text'] }} {% endif %}"
             "{% endfor %}{% if m['role'] == 'assistant' %}</s> {% endif %}{% endfor %}"
             "{% if add_generation_prompt %}answer {% endif %}")


def _qwen_rows(n=4):
    rng = np.random.default_rng(0)
    return [{**r, "images": [Image.fromarray(rng.integers(0, 255, (56, 56, 3),
                                                          dtype=np.uint8))]}
            for r in _vlm_rows(n)]


@pytest.mark.parametrize("mode,lora", [("paper", False), ("official", False),
                                       ("official", True), ("cal", False)])
@pytest.mark.slow
def test_default_text_only_pass_fits_a_vlm_batch(mode, lora, tmp_path, capsys):
    """A tiny Qwen2-VL on a conversational image dataset with the default text_only_mode
    ('auto'): the batch holds image placeholders, so the text-only pass blanks the images
    (it used to stop at the first step: "input_ids still hold 16 placeholder tokens"); the
    log and the model card say which pass ran."""
    from helpers.tiny_vlm import build_tiny_qwen2vl

    model, proc = build_tiny_qwen2vl()
    proc.chat_template = QWEN_CHAT
    kw = {}
    if lora:
        from peft import LoraConfig

        kw["peft_config"] = LoraConfig(r=4, lora_alpha=8, target_modules=["q_proj", "v_proj"])
    args = ReweightedSFTConfig(**sft_args(tmp_path), reweighting=mode)
    assert args.text_only_mode == "auto"
    tr = ReweightedSFTTrainer(model=model, args=args, train_dataset=Dataset.from_list(
        _qwen_rows()), processing_class=proc,
        ref_model=copy.deepcopy(model) if mode == "paper" else None, **kw)
    tr.train()
    assert all(np.isfinite(h["loss"]) for h in tr.state.log_history if "loss" in h)
    assert "zeroed" in tr.text_only_picked and "placeholders" in tr.text_only_picked["zeroed"]
    assert "text-only pass: zeroed" in capsys.readouterr().err
    tr.create_model_card()
    card = (tmp_path / "out" / "README.md").read_text()
    assert "text-only pass (text_only_mode=`auto`): zeroed" in card
