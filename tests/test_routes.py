"""3DR-FT on the routes 3D-LLMs take: transformers VLMs (tiny LLaVA and Qwen2-VL built from
configs, their processors as processing_class), MoE / auxiliary losses, a LEO-like module
with its own loss, LoRA, gradient accumulation and checkpointing."""

import copy

import pytest
import torch
from datasets import Dataset
from helpers.tiny_vlm import build_tiny_llava, build_tiny_qwen2vl
from helpers.trainer import (
    LeoBatches,
    LeoLike,
    leo_batch,
    leo_text_only,
    module_route_trains,
    trainer_args,
    vlm_rows,
)

from hf_real3d.training import (
    HFModelRoute,
    ModuleRoute,
    ReweightedTrainer,
    TextOnlyInputError,
    precompute_blind_logprobs,
)
from hf_real3d.training.blind import BlindColumnCollator
from hf_real3d.training.vlm import VLMCollator

BUILDERS = {"llava": build_tiny_llava, "qwen2vl": build_tiny_qwen2vl}


def _first_loss(trainer, batch):
    trainer.model.train()
    return float(trainer.compute_loss(trainer.model, batch, num_items_in_batch=None).detach())


@pytest.mark.slow
@pytest.mark.parametrize("family", ["llava", "qwen2vl"])
def test_vlm_trains_with_its_processor(family, tmp_path):
    """The processor is the processing_class (as every transformers / trl example passes
    it); official 3DR-FT (policy with images zeroed) changes the vision and language
    weights, and the logged weights are the per-sample factors 1 / text-only loss."""
    model, proc = BUILDERS[family]()
    ds = Dataset.from_list(vlm_rows())
    before = {k: v.clone() for k, v in model.state_dict().items()}
    tr = ReweightedTrainer(model=model, args=trainer_args(tmp_path, reweighting="official",
                                                   text_only_mode="zeroed"),
                           train_dataset=ds, data_collator=VLMCollator(proc),
                           processing_class=proc)
    tr.train()
    changed = [k for k in before if not torch.equal(before[k], model.state_dict()[k])]
    assert any("vision" in k or "visual" in k for k in changed)
    assert any("lm_head" in k or "language_model" in k for k in changed)
    logs = [h for h in tr.state.log_history if "loss" in h]
    assert len(logs) == 2 and all(h["weight_mean"] > 0 for h in logs)


@pytest.mark.parametrize("family", ["llava", "qwen2vl"])
def test_text_only_pass_per_mode(family):
    """zeroed: the same sequence with blank images; blind_batch: the prompt without image
    placeholders, the same answer tokens; drop: an error naming the placeholders."""
    model, proc = BUILDERS[family]()
    model.eval()
    rows = vlm_rows(3)
    batch = VLMCollator(proc, text_only_batch=True)(rows)
    full = HFModelRoute("zeroed")(model, batch)
    zeroed = HFModelRoute("zeroed")(model, batch, text_only=True)
    assert torch.equal(full.mask, zeroed.mask) and not torch.allclose(full.logp, zeroed.logp)
    blind = HFModelRoute("blind_batch")(model, batch, text_only=True)
    assert blind.mask.shape[1] < full.mask.shape[1]  # no placeholders
    assert torch.equal(blind.mask.sum(1), full.mask.sum(1))
    # equals the model run on text-only prompts built by hand
    text = VLMCollator(proc)([{**r, "images": []} for r in rows])
    ref = HFModelRoute("zeroed")(model, text)
    assert torch.allclose(ref.logp, blind.logp, atol=1e-6)
    with pytest.raises(TextOnlyInputError, match="placeholder tokens .*zeroed.*blind_batch"):
        HFModelRoute("drop")(model, batch, text_only=True)


def test_three_blind_sources_agree_with_equal_weights(tmp_path):
    """A blind reference equal to the policy's own text-only pass gives every paper weight 1:
    the column, the frozen model and the trainer's own precomputation then all give the SFT
    loss, on a LLaVA with its processor."""
    model, proc = build_tiny_llava()
    rows = vlm_rows(4)
    coll = VLMCollator(proc)
    args = dict(text_only_mode="zeroed", weight_clip=None)
    ds = Dataset.from_list(rows)
    col_ds = precompute_blind_logprobs(ds, copy.deepcopy(model), coll,
                                       route=HFModelRoute("zeroed"), batch_size=2)
    assert len(col_ds[0]["blind_logprobs"]) == 2  # answer word + end token
    batch_col = BlindColumnCollator(coll)(list(col_ds))
    losses = {}
    for name, kw in {"sft": dict(reweighting="none"),
                     "column": dict(reweighting="paper"),
                     "ref_model": dict(reweighting="paper"),
                     "precompute": dict(reweighting="paper", precompute_blind=True)}.items():
        ref = copy.deepcopy(model) if name in ("ref_model", "precompute") else None
        tr = ReweightedTrainer(model=model, args=trainer_args(tmp_path, **args, **kw),
                               train_dataset=col_ds if name == "column" else ds,
                               data_collator=BlindColumnCollator(coll), processing_class=proc,
                               ref_model=ref)
        b = batch_col if name == "column" else coll(rows)
        if name == "precompute":
            assert "blind_logprobs" in tr.train_dataset.column_names and tr.ref_model is None
            b = tr.data_collator(list(tr.train_dataset))
        losses[name] = _first_loss(tr, b)
    assert losses["sft"] > 0
    for name in ("column", "ref_model", "precompute"):
        assert losses[name] == pytest.approx(losses["sft"], rel=1e-6), name


@pytest.mark.slow
def test_paper_weights_from_a_different_blind_model(tmp_path):
    """A blind model other than the policy gives weights != 1, and its frozen copy never
    changes during training."""
    model, proc = build_tiny_qwen2vl(seed=0)
    blind, _ = build_tiny_qwen2vl(seed=1)
    before = {k: v.clone() for k, v in blind.state_dict().items()}
    tr = ReweightedTrainer(model=model, args=trainer_args(tmp_path, reweighting="paper",
                                                   text_only_mode="zeroed"),
                           train_dataset=Dataset.from_list(vlm_rows()),
                           data_collator=VLMCollator(proc), processing_class=proc,
                           ref_model=blind)
    tr.train()
    assert all(torch.equal(before[k], v) for k, v in blind.state_dict().items())
    assert all(not p.requires_grad for p in blind.parameters())
    logs = [h for h in tr.state.log_history if "loss" in h]
    assert all(abs(h["weight_mean"] - 1) > 1e-3 for h in logs)


# --- auxiliary losses -----------------------------------------------------------------------


def _tiny_text_batch(vocab=40, seed=0):
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(4, vocab, (3, 10), generator=g)
    labels = ids.clone()
    labels[:, :6] = -100
    return {"input_ids": ids, "attention_mask": torch.ones_like(ids), "labels": labels}


def test_moe_router_loss_is_kept(tmp_path):
    """A MoE model's router loss is added as the model adds it (coef x aux_loss): with no
    reweighting the loss equals the model's own loss."""
    from transformers import MixtralConfig, MixtralForCausalLM

    torch.manual_seed(0)
    model = MixtralForCausalLM(MixtralConfig(
        vocab_size=40, hidden_size=16, intermediate_size=32, num_hidden_layers=1,
        num_attention_heads=2, num_key_value_heads=2, num_local_experts=4,
        num_experts_per_tok=2, output_router_logits=True, router_aux_loss_coef=0.5))
    batch = _tiny_text_batch()
    tr = ReweightedTrainer(model=model, args=trainer_args(tmp_path, reweighting="none"),
                           train_dataset=Dataset.from_list([{"x": 0}]))
    own = model(**batch)
    assert own.aux_loss is not None and float(own.aux_loss) > 0
    assert _first_loss(tr, batch) == pytest.approx(float(own.loss), rel=1e-6)
    no_aux = ReweightedTrainer(model=model, args=trainer_args(tmp_path, reweighting="none",
                                                       aux_loss="none"),
                               train_dataset=Dataset.from_list([{"x": 0}]))
    assert _first_loss(no_aux, batch) == pytest.approx(float(own.loss) - 0.5 * float(
        own.aux_loss), rel=1e-5)


def test_auxiliary_terms_inside_the_model_loss_are_kept(tmp_path):
    """A model whose forward adds its own auxiliary term to the LM loss (as Ross3D does):
    aux_loss='from_model_loss' keeps it, and only it, beside the reweighted CE."""
    from transformers import LlamaConfig, LlamaForCausalLM

    class WithAux(LlamaForCausalLM):
        def forward(self, labels=None, **kw):
            out = super().forward(labels=labels, **kw)
            if labels is not None:
                out.loss = out.loss + 0.1 * self.model.embed_tokens.weight.pow(2).mean()
            return out

    torch.manual_seed(0)
    model = WithAux(LlamaConfig(vocab_size=40, hidden_size=16, intermediate_size=32,
                                num_hidden_layers=1, num_attention_heads=2,
                                num_key_value_heads=2))
    batch = _tiny_text_batch()
    tr = ReweightedTrainer(model=model, args=trainer_args(tmp_path, reweighting="none",
                                                   aux_loss="from_model_loss"),
                           train_dataset=Dataset.from_list([{"x": 0}]))
    loss = tr.compute_loss(model, batch)
    assert float(loss) == pytest.approx(float(model(**batch).loss), rel=1e-6)
    loss.backward()
    g = model.model.embed_tokens.weight.grad.clone()
    model.zero_grad()
    model(**batch).loss.backward()
    assert torch.allclose(g, model.model.embed_tokens.weight.grad, atol=1e-6)


# --- a LEO-like module: one dict argument, its own loss --------------------------------------


def leo_per_sample(model, batch, text_only):
    return model(leo_text_only(batch) if text_only else batch)["loss"]


def _unbatch(batch):
    return batch  # each dataset item is already a batch


def test_module_route_official_equals_the_pseudocode(tmp_path):
    """official through ModuleRoute(per_sample=True) equals the official pseudocode's
    mean(loss_full / loss_blind.clamp_min(1e-4)), loss_blind with the 3D features zeroed
    and no gradient, to 1e-6 (value and gradient)."""
    model = LeoLike()
    data = leo_batch()
    tr = ReweightedTrainer(model=model, args=trainer_args(tmp_path, reweighting="official"),
                           route=ModuleRoute(leo_per_sample, per_sample=True),
                           train_dataset=LeoBatches(2), data_collator=lambda x: x[0])
    ours = tr.compute_loss(model, data)
    ours.backward()
    g_ours = model.projector[0].weight.grad.clone()
    model.zero_grad()
    loss_full = model(data)["loss"]
    with torch.no_grad():
        loss_blind = model(leo_text_only(data))["loss"]
    ref = (loss_full / loss_blind.clamp_min(1e-4)).mean()
    ref.backward()
    assert float(ours) == pytest.approx(float(ref), abs=1e-6)
    assert torch.allclose(g_ours, model.projector[0].weight.grad, atol=1e-6)
    with pytest.raises(ValueError, match="paper.*token log-probs"):
        ReweightedTrainer(model=model, args=trainer_args(tmp_path, reweighting="paper"),
                          route=ModuleRoute(leo_per_sample, per_sample=True),
                          ref_model=LeoLike(seed=1), train_dataset=LeoBatches(2),
                          data_collator=lambda x: x[0]).compute_loss(model, data)


@pytest.mark.slow
def test_module_route_paper_trains_and_saves(tmp_path):
    """paper through a token-level ModuleRoute with a frozen blind LEO: the projector and the
    LM change, the blind copy does not, and the plain module is saved."""
    tr = module_route_trains("paper", tmp_path)
    tr.save_model(str(tmp_path / "saved"))
    assert (tmp_path / "saved" / "model.safetensors").is_file()


# --- LoRA ----------------------------------------------------------------------------------


@pytest.mark.slow
def test_lora_only_adapters_change_and_are_saved(tmp_path):
    from peft import LoraConfig, get_peft_model

    model, proc = build_tiny_llava()
    base = {k: v.clone() for k, v in model.state_dict().items()}
    cfg = LoraConfig(r=4, lora_alpha=8, target_modules=["q_proj", "v_proj"])
    tr = ReweightedTrainer(model=model, args=trainer_args(tmp_path, reweighting="official",
                                                   text_only_mode="zeroed", max_steps=3),
                           train_dataset=Dataset.from_list(vlm_rows()),
                           data_collator=VLMCollator(proc), processing_class=proc,
                           peft_config=cfg)
    tr.train()
    state = tr.model.state_dict()
    lora = [k for k in state if "lora_" in k]
    assert lora and any(not torch.allclose(state[k], torch.zeros_like(state[k]))
                        for k in lora if "lora_B" in k)  # B starts at 0: it trained
    for k, v in state.items():
        if "lora_" not in k:
            name = k.replace("base_model.model.", "").replace(".base_layer", "")
            assert torch.equal(v, base[name]), k
    out = tmp_path / "adapter"
    tr.save_model(str(out))
    assert (out / "adapter_config.json").is_file()
    assert (out / "adapter_model.safetensors").is_file() and (out / "README.md").is_file()
    with pytest.raises(ValueError, match="already a PeftModel"):
        ReweightedTrainer(model=get_peft_model(build_tiny_llava()[0], cfg),
                          args=trainer_args(tmp_path, reweighting="none"),
                          train_dataset=Dataset.from_list(vlm_rows()), peft_config=cfg)


def test_lora_text_only_pass_runs_with_the_adapter():
    from peft import LoraConfig, get_peft_model

    model, proc = build_tiny_llava()
    peft_model = get_peft_model(model, LoraConfig(r=4, target_modules=["q_proj", "v_proj"],
                                                  init_lora_weights=False))
    batch = VLMCollator(proc)(vlm_rows(2))
    route = HFModelRoute("zeroed")
    with_adapter = route(peft_model, batch, text_only=True).logp
    with peft_model.disable_adapter():
        without = route(peft_model, batch, text_only=True).logp
    assert not torch.allclose(with_adapter, without)


# --- scale: accumulation and checkpointing -----------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["paper", "official"])
def test_accumulation_2x1_equals_batch_2(mode, tmp_path):
    rows = vlm_rows(2)
    finals = []
    for per_device, acc in ((2, 1), (1, 2)):
        model, proc = build_tiny_llava()
        blind, _ = build_tiny_llava(seed=1)
        tr = ReweightedTrainer(
            model=model, args=trainer_args(tmp_path, reweighting=mode, text_only_mode="zeroed",
                                    per_device_train_batch_size=per_device,
                                    gradient_accumulation_steps=acc, max_steps=1,
                                    learning_rate=0.1, lr_scheduler_type="constant",
                                    optim="sgd"),
            train_dataset=Dataset.from_list(rows), data_collator=VLMCollator(proc),
            processing_class=proc, ref_model=blind if mode == "paper" else None)
        tr.train()
        finals.append({k: v.clone() for k, v in model.state_dict().items()})
    for k in finals[0]:
        assert torch.allclose(finals[0][k], finals[1][k], atol=1e-6), k


def test_gradient_checkpointing_gives_the_same_gradients(tmp_path):
    grads = []
    for ckpt in (False, True):
        model, proc = build_tiny_llava()
        tr = ReweightedTrainer(model=model, args=trainer_args(tmp_path, reweighting="official",
                                                       text_only_mode="zeroed",
                                                       activation_checkpointing=ckpt),
                               train_dataset=Dataset.from_list(vlm_rows()),
                               data_collator=VLMCollator(proc), processing_class=proc)
        if ckpt:
            model.activation_checkpointing_enable()
            assert model.is_activation_checkpointing
        model.train()
        tr.compute_loss(model, VLMCollator(proc)(vlm_rows(3))).backward()
        grads.append({n: p.grad.clone() for n, p in model.named_parameters()
                      if p.grad is not None})
    assert grads[0].keys() == grads[1].keys() and len(grads[0]) > 10
    for k in grads[0]:
        assert torch.allclose(grads[0][k], grads[1][k], atol=1e-6), k
