import pytest
import torch
from datasets import Dataset
from helpers.models import PLAIN_3D, tiny_model
from helpers.trainer import trainer_args
from safetensors.torch import load_file

from hf_real3d.modeling import SceneQACollator
from hf_real3d.training import ReweightedConfig, ReweightedTrainer, precompute_blind_logprobs


def _args(tmp_path, **kw):
    return trainer_args(tmp_path, **{"per_device_train_batch_size": 8, "max_steps": 4,
                                     "learning_rate": 5e-3, **kw})


def _setup(tiny, blind_col=False):
    tok, bank = tiny["tokenizer"], tiny["bank"]
    ds = Dataset.from_list(tiny["rows"])
    col = SceneQACollator(tok, bank, max_length=48)
    if blind_col:
        blind = tiny_model(tok, blind=True, seed=1)
        ds = precompute_blind_logprobs(ds, blind, col)
        col.blind_col = "blind_logprobs"
    return tok, ds, col


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["none", "paper", "official"])
def test_training_changes_parameters_and_logs_weights(tiny_training, tmp_path, mode):
    tok, ds, col = _setup(tiny_training, blind_col=mode == "paper")
    model = tiny_model(tok)
    before = {k: v.clone() for k, v in model.state_dict().items()}
    tr = ReweightedTrainer(model=model, args=_args(tmp_path, reweighting=mode), train_dataset=ds,
                           data_collator=col, processing_class=tok)
    tr.train()
    after = model.state_dict()
    changed = [k for k in before if not torch.equal(before[k], after[k])]
    assert any("point_mlp" in k for k in changed) and any("lm." in k for k in changed)
    logs = [h for h in tr.state.log_history if "loss" in h]
    assert len(logs) == 4 and all(torch.isfinite(torch.tensor(h["loss"])) for h in logs)
    if mode != "none":
        assert all("weight_mean" in h and 0 <= h["weight_up_share"] <= 1 for h in logs)


@pytest.mark.slow
def test_live_reference_matches_precomputed_column(tiny_training, tmp_path):
    tok, ds, col = _setup(tiny_training, blind_col=True)
    ref = tiny_model(tok, blind=True, seed=1)  # the same weights the column came from
    losses = []
    for use_ref in (False, True):
        model = tiny_model(tok)
        c = SceneQACollator(tok, tiny_training["bank"], max_length=48,
                            blind_logprob_column=None if use_ref else "blind_logprobs")
        tr = ReweightedTrainer(model=model, args=_args(tmp_path, reweighting="paper", max_steps=2),
                               train_dataset=ds, data_collator=c, processing_class=tok,
                               ref_model=ref if use_ref else None)
        tr.train()
        losses.append([h["loss"] for h in tr.state.log_history if "loss" in h])
    assert losses[0] == pytest.approx(losses[1], abs=1e-5)


@pytest.mark.slow
def test_blind_model_never_sees_3d(tiny_training, tmp_path):
    tok, ds, col = _setup(tiny_training)
    model = tiny_model(tok, blind=True)
    calls = []
    model.point_mlp.register_forward_hook(lambda *a: calls.append(1))
    model.box_mlp.register_forward_hook(lambda *a: calls.append(1))
    tr = ReweightedTrainer(model=model, args=_args(tmp_path, reweighting="none"),
                           train_dataset=ds, data_collator=col, processing_class=tok)
    tr.train()
    assert calls == []
    batch = col(tiny_training["rows"][:4])
    batch.pop("labels")
    a = model(**batch).logits
    batch["object_points"] = torch.randn_like(batch["object_points"])
    assert torch.equal(a, model(**batch).logits)


@pytest.mark.slow
def test_resume_gives_same_weights(tiny_training, tmp_path):
    tok, ds, col = _setup(tiny_training)
    kw = dict(reweighting="official", max_steps=6, save_strategy="steps", save_steps=3)
    full = tiny_model(tok)
    ReweightedTrainer(model=full, args=_args(tmp_path / "a", **kw), train_dataset=ds,
                      data_collator=col, processing_class=tok).train()
    ReweightedTrainer(model=tiny_model(tok), args=_args(tmp_path / "b", **kw), train_dataset=ds,
                      data_collator=col, processing_class=tok).train()
    resumed = tiny_model(tok, seed=123)  # different init: the checkpoint must restore it
    ReweightedTrainer(model=resumed, args=_args(tmp_path / "c", **kw), train_dataset=ds,
                      data_collator=col, processing_class=tok).train(
        resume_from_checkpoint=str(tmp_path / "b/out/checkpoint-3"))
    for k, v in full.state_dict().items():
        torch.testing.assert_close(resumed.state_dict()[k], v, rtol=1e-5, atol=1e-6)
    saved = load_file(str(tmp_path / "a/out/checkpoint-6/model.safetensors"))
    assert torch.equal(saved["point_mlp.0.weight"], full.state_dict()["point_mlp.0.weight"])


def test_trainer_refuses_bad_inputs(tiny_training, tmp_path):
    tok, ds, col = _setup(tiny_training)
    model = tiny_model(tok)
    with pytest.raises(ValueError, match="needs the blind model's log-probs"):
        ReweightedTrainer(model=model, args=_args(tmp_path, reweighting="paper"),
                          train_dataset=ds, data_collator=col, processing_class=tok)
    with pytest.raises(ValueError, match="ref_model is the policy itself"):
        ReweightedTrainer(model=model, args=_args(tmp_path, reweighting="paper"),
                          train_dataset=ds, data_collator=col, processing_class=tok,
                          ref_model=model)
    with pytest.raises(ValueError, match="Expected reweighting"):
        _args(tmp_path, reweighting="magic")
    small = tiny_model(tok)
    small.lm.resize_token_embeddings(len(tok) - 5)
    with pytest.raises(ValueError, match=f"tokenizer has {len(tok)} tokens but the model"):
        ReweightedTrainer(model=small, args=_args(tmp_path, reweighting="none"),
                          train_dataset=ds, data_collator=col, processing_class=tok)
    rows = [dict(r, blind_logprobs=[-1.0]) for r in tiny_training["rows"][:3]]
    bad = SceneQACollator(tok, tiny_training["bank"], blind_logprob_column="blind_logprobs")
    with pytest.raises(ValueError, match="has 1 log-probs but the row has"):
        bad(rows)


def test_object_labels_and_direction_features(tiny_training):
    """Optional 3D inputs: label word embeddings on object tokens, egocentric direction
    features on boxes; both change the model's output and train."""
    from transformers import LlamaConfig

    from hf_real3d.modeling import SceneInputs, SceneLM, SceneLMConfig

    tok, bank, rows = tiny_training["tokenizer"], tiny_training["bank"], tiny_training["rows"]
    bank.tokenize_labels(tok)
    text = LlamaConfig(vocab_size=len(tok), hidden_size=32, intermediate_size=64,
                       num_hidden_layers=1, num_attention_heads=2, num_key_value_heads=2,
                       max_position_embeddings=128, tie_word_embeddings=True)
    torch.manual_seed(0)
    model = SceneLM(SceneLMConfig(text_config=text, max_objects=8, points_per_object=4,
                                  encoder_hidden=16, **{**PLAIN_3D, "object_labels": True,
                                                        "direction_features": True}))
    coll = SceneQACollator(tok, bank,
                           inputs=SceneInputs(object_labels=True, direction_features=True))
    batch = coll(rows[:4])
    assert batch["object_labels"].shape[:2] == (4, 8) and batch["object_boxes"].shape[-1] == 13
    labels_ok = batch["object_labels"][batch["object_mask"].bool()]
    assert (labels_ok[:, 0] >= 0).all()  # every real object has a label token
    out = model(**batch).logits
    no_labels = model(**{k: v for k, v in batch.items() if k != "object_labels"}).logits
    assert not torch.allclose(out, no_labels)
    model(**batch).loss.backward()
    assert model.box_mlp[0].weight.grad is not None


def test_direction_words(tiny_training):
    """Each object token can carry the word embedding of its egocentric direction, the
    same token the questions use ("left" ...), computed from the pose."""
    import numpy as np
    from transformers import LlamaConfig

    from hf_real3d.geometry import direction_bin
    from hf_real3d.modeling import SceneInputs, SceneLM, SceneLMConfig
    from hf_real3d.modeling.data import DIRECTION_WORDS

    tok, bank, rows = tiny_training["tokenizer"], tiny_training["bank"], tiny_training["rows"]
    coll = SceneQACollator(tok, bank, inputs=SceneInputs(direction_words=True))
    batch = coll(rows[:4])
    dirs, mask, boxes = batch["object_directions"], batch["object_mask"].bool(), \
        batch["object_boxes"].numpy()
    assert (dirs[~mask] == -1).all()
    ids = {tok.convert_tokens_to_ids(w): i for i, w in enumerate(DIRECTION_WORDS)}
    want = direction_bin(np.degrees(np.arctan2(boxes[..., 1], boxes[..., 0])), 4)
    got = np.vectorize(lambda t: ids.get(int(t), -1))(dirs.numpy())
    assert (got[mask.numpy()] == want[mask.numpy()]).all()
    text = LlamaConfig(vocab_size=len(tok), hidden_size=32, intermediate_size=64,
                       num_hidden_layers=1, num_attention_heads=2, num_key_value_heads=2,
                       max_position_embeddings=128, tie_word_embeddings=True)
    torch.manual_seed(0)
    model = SceneLM(SceneLMConfig(text_config=text, max_objects=8, points_per_object=4,
                                  encoder_hidden=16, **{**PLAIN_3D, "direction_words": True}))
    out = model(**batch).logits
    assert not torch.allclose(out, model(**{k: v for k, v in batch.items()
                                            if k != "object_directions"}).logits)


def test_reweighted_config_help_explains_its_fields_first():
    import dataclasses
    import pydoc

    from hf_real3d.training import ReweightingArguments

    doc = ReweightedConfig.__doc__
    for f in dataclasses.fields(ReweightingArguments):
        assert f"    {f.name} (default " in doc, f.name
    # before TrainingArguments' own text in help()
    text = pydoc.render_doc(ReweightedConfig, renderer=pydoc.plaintext)
    assert text.index("excess_ratio (default") < text.index("Method resolution order")
